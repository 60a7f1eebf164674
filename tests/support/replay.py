"""Replay a recorded conversation against a fresh daemon and compare what it says.

A transcript is the `--record` format: one JSON line per message,
`{"dir": "in"|"out", "t": seconds, "msg": <message>}`; a frame the daemon could not parse
is recorded with `"msg": null` and its body as `"raw"`, and is replayed byte for byte.

Pacing follows the recording: consecutive `in` lines are written with one `write` (so a
request and its `$/cancelRequest` arrive in one read, as they did), then the engine waits for
exactly as many messages as the recording has `out` lines before the next `in` line.

Values the daemon generates differ from run to run (entry ids, session UUIDs, ISO times,
Unix-ms times of entries, file names built from them). They are compared through a
bijection built while comparing: the first time a recorded value is met it is bound to the
value the replay produced, and from then on it must map to that same value everywhere, and no
other recorded value may map to it. Requests are translated through the same bijection before
they are sent, so an id the client learned from an earlier answer is the replay's id.
The recording's sessions directory appears in transcripts as a placeholder token; the replay
substitutes its own directory in requests and turns it back into the token in answers.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from support.daemon import RawDaemon, frame
from support.timeouts import ANSWER_TIMEOUT, EXIT_TIMEOUT

SESSIONS_DIR_TOKEN: Final = "${SESSIONS_DIR}"
"""Stands for the sessions root in stored transcripts."""
DATA_HOME: Final = ".data"
"""`$XDG_DATA_HOME` of recorded and replayed daemons, below their root: session/trash's trash is
there, its paths shown with the root's token (never the home of whoever runs the tests)."""

STEP_TIMEOUT: Final = ANSWER_TIMEOUT  # each answer; the first (start-up included) gets STARTUP_TIMEOUT
# Each request goes out at least this long after the previous answer, in recording and replay
# alike, so two requests never share a millisecond (entries one request writes still may).
PACE_SECONDS: Final = 0.003
MIN_MS_TIMESTAMP: Final = 10**12  # Unix milliseconds from 2001 on; smaller numbers are data

# Generated tokens, most specific first; a token is only taken whole (not inside a longer word).
TOKEN_PATTERNS: Final[dict[str, str]] = {
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "iso-time": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",
    "file-time": r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z",
    "entry-id": r"[0-9a-f]{8}",
}
_TOKEN_RE: Final = re.compile(
    "|".join(f"(?P<{name.replace('-', '_')}>(?<![0-9A-Za-z]){rx}(?![0-9A-Za-z]))" for name, rx in TOKEN_PATTERNS.items())
)


class ReplayMismatch(AssertionError):
    """The daemon said something other than the recording, or did not say it."""


# --------------------------------------------------------------------------- transcripts


def load_transcript(path: Path) -> list[dict[str, Any]]:
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    for number, line in enumerate(lines, 1):
        if line.get("dir") not in ("in", "out") or "msg" not in line:
            raise ValueError(f"{path}:{number}: not a transcript line: {line!r}")
    return lines


def expected_exit_code(lines: Iterable[dict[str, Any]]) -> int:
    """0 when the recording shut the daemon down successfully, else 1 (LSP's rule)."""
    shutdown_ids: set[Any] = set()
    for line in lines:
        msg = line["msg"]
        if not isinstance(msg, dict):
            continue
        if line["dir"] == "in" and msg.get("method") == "shutdown" and "id" in msg:
            shutdown_ids.add(msg["id"])
        elif line["dir"] == "out" and msg.get("id") in shutdown_ids and "result" in msg:
            return 0
    return 1


@dataclass
class Step:
    """Messages written together, then the number of messages the daemon answers with."""

    sent: list[dict[str, Any]]
    expected: list[tuple[int, Any]]  # (transcript line index, message)


def steps_of(lines: list[dict[str, Any]]) -> list[Step]:
    steps: list[Step] = []
    for index, line in enumerate(lines):
        if line["dir"] == "in":
            if not steps or steps[-1].expected:
                steps.append(Step([], []))
            steps[-1].sent.append(line)
        else:
            if not steps:
                steps.append(Step([], []))
            steps[-1].expected.append((index, line["msg"]))
    return steps


# --------------------------------------------------------------------------- normalisation


@dataclass
class Bijection:
    """Recorded generated values <-> replayed ones, one map per kind of value."""

    forward: dict[tuple[str, Any], Any] = field(default_factory=dict)
    backward: dict[tuple[str, Any], Any] = field(default_factory=dict)

    def bind(self, kind: str, recorded: Any, replayed: Any) -> str | None:
        """Record the pair, or say why it contradicts an earlier one."""
        if kind in CLOCK_KINDS:
            # Entries written by one request may share a millisecond in one run and not in the
            # next, so a clock reading is matched by its form only; the first pairing translates.
            self.forward.setdefault((kind, recorded), replayed)
            self.backward.setdefault((kind, replayed), recorded)
            return None
        known = self.forward.get((kind, recorded), _MISSING)
        if known is not _MISSING:
            if known == replayed:
                return None
            return f"{kind} {recorded!r} was replayed as {known!r} before, here as {replayed!r}"
        owner = self.backward.get((kind, replayed), _MISSING)
        if owner is not _MISSING:
            return f"{kind} {replayed!r} already stands for the recorded {owner!r}, here for {recorded!r}"
        self.forward[(kind, recorded)] = replayed
        self.backward[(kind, replayed)] = recorded
        return None

    def translate(self, kind: str, recorded: Any) -> Any:
        """The replay's value for a recorded one; unseen values (the client's own) stand for themselves."""
        if (kind, recorded) not in self.forward:
            self.bind(kind, recorded, recorded)
        return self.forward.get((kind, recorded), recorded)


_MISSING: Final = object()
CLOCK_KINDS: Final = frozenset({"iso-time", "ms-time"})


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN_RE.finditer(text))


def _kind(match: re.Match[str]) -> str:
    assert match.lastgroup is not None
    return match.lastgroup.replace("_", "-")


def _is_ms_timestamp(key: Any, value: Any) -> bool:
    return key == "timestamp" and type(value) is int and value >= MIN_MS_TIMESTAMP


@dataclass
class Normaliser:
    """Compares recorded and replayed messages; translates recorded requests."""

    placeholder: str
    root: str
    values: Bijection = field(default_factory=Bijection)

    # ----------------------------------------------------------------- requests

    def request(self, value: Any, key: Any = None) -> Any:
        if isinstance(value, dict):
            return {k: self.request(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.request(v) for v in value]
        if isinstance(value, str):
            return self._translate_text(value.replace(self.placeholder, self.root))
        if _is_ms_timestamp(key, value):
            return self.values.translate("ms-time", value)
        return value

    def _translate_text(self, text: str) -> str:
        return _TOKEN_RE.sub(lambda m: self.values.translate(_kind(m), m.group()), text)

    # ----------------------------------------------------------------- answers

    def compare(self, expected: Any, got: Any, path: str = "$", key: Any = None) -> list[str]:
        """Every difference, as `path: problem`; binds generated values on the way."""
        if isinstance(expected, dict) and isinstance(got, dict):
            return self._compare_objects(expected, got, path)
        if isinstance(expected, list) and isinstance(got, list):
            if len(expected) != len(got):
                return [f"{path}: expected {len(expected)} items, got {len(got)}: {_show(expected)} vs {_show(got)}"]
            return [p for i, (e, g) in enumerate(zip(expected, got, strict=True)) for p in self.compare(e, g, f"{path}[{i}]")]
        if isinstance(expected, str) and isinstance(got, str):
            return self._compare_text(expected, got.replace(self.root, self.placeholder), path)
        if _is_ms_timestamp(key, expected) and _is_ms_timestamp(key, got):
            problem = self.values.bind("ms-time", expected, got)
            return [f"{path}: {problem}"] if problem else []
        if type(expected) is not type(got) or expected != got:
            return [f"{path}: expected {_show(expected)}, got {_show(got)}"]
        return []

    def _compare_objects(self, expected: dict[str, Any], got: dict[str, Any], path: str) -> list[str]:
        problems = [f"{path}.{k}: missing (expected {_show(expected[k])})" for k in expected if k not in got]
        problems += [f"{path}.{k}: unexpected (got {_show(got[k])})" for k in got if k not in expected]
        for k in expected:
            if k in got:
                problems += self.compare(expected[k], got[k], f"{path}.{k}", k)
        return problems

    def _compare_text(self, expected: str, got: str, path: str) -> list[str]:
        tokens = _tokens(expected)
        if not tokens:
            return [] if expected == got else [f"{path}: expected {_show(expected)}, got {_show(got)}"]
        # The recorded text with each generated token turned into a pattern for its kind.
        pattern, last = [], 0
        for match in tokens:
            pattern += [re.escape(expected[last : match.start()]), f"({TOKEN_PATTERNS[_kind(match)]})"]
            last = match.end()
        pattern.append(re.escape(expected[last:]))
        found = re.fullmatch("".join(pattern), got)
        if found is None:
            return [f"{path}: expected {_show(expected)}, got {_show(got)}"]
        problems = [self.values.bind(_kind(m), m.group(), found.group(i)) for i, m in enumerate(tokens, 1)]
        return [f"{path}: {p}" for p in problems if p]


def _show(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 300 else text[:300] + "…"


# --------------------------------------------------------------------------- the daemon


class Daemon(RawDaemon):
    """`sessiontree serve` on pipes for a replay: its output is parsed strictly, one frame at a
    time; a badly framed frame is a mismatch, and the end of the output a message of its own."""

    def __init__(self, root: Path) -> None:
        super().__init__("--sessions-dir", str(root), env={"XDG_DATA_HOME": str(root / DATA_HOME)})

    def _output_error(self, exc: Exception, line: bytes) -> Exception:
        return ReplayMismatch(f"badly framed output from the daemon: {line!r} ({exc})")

    def _output_ended(self) -> None:
        self.messages.put(EOFError())

    def write(self, bodies: list[bytes]) -> None:
        self.send(b"".join(frame(body) for body in bodies))

    def next(self, timeout: float | None = STEP_TIMEOUT) -> Any:  # type: ignore[override]
        """The next message, TimeoutError when none came, EOFError when the daemon closed its output."""
        try:
            item = self.messages.get(timeout=self.bound(timeout))
        except queue.Empty:
            return TimeoutError()
        self.started = True
        if isinstance(item, ReplayMismatch):
            raise item
        if isinstance(item, EOFError):
            self.messages.put(item)  # stays at the end for later reads
        return item

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.splitlines()[-40:]

    def finish(self, timeout: float) -> int:
        """Close stdin and wait for the exit code."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise ReplayMismatch(f"the daemon did not exit within {timeout} s") from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# --------------------------------------------------------------------------- replay


@dataclass
class ReplayResult:
    sent: int
    received: list[Any]
    exit_code: int


INITIALIZE: Final = {"jsonrpc": "2.0", "id": "replay-init", "method": "initialize"}
# The handshake announces a client that summarises, as protocol.md's examples of session/compact need.
SUMMARIZING_CLIENT: Final = {"experimental": {"sessiontree": {"summarize": True}}}
SHUTDOWN: Final = {"jsonrpc": "2.0", "id": "replay-shutdown", "method": "shutdown"}


def replay(
    lines: list[dict[str, Any]],
    *,
    placeholder: str = SESSIONS_DIR_TOKEN,
    seed: Path | None = None,
    handshake: bool = False,
    name: str = "transcript",
) -> ReplayResult:
    """Replay `lines` against a fresh daemon; raise ReplayMismatch at the first difference.

    `seed`: files copied into the sessions root first. `handshake`: the transcript holds only
    session methods, so initialize before it and shut down after it (those answers are checked
    for success, not compared).
    """
    with tempfile.TemporaryDirectory(prefix="sessiontree-replay-") as tmp:
        root = Path(os.path.realpath(tmp)) / "sessions"
        if seed is not None:
            shutil.copytree(seed, root, symlinks=True)  # a seed may hold a dangling symlink on purpose
        root.mkdir(exist_ok=True)
        daemon = Daemon(root)
        try:
            return _run(daemon, lines, Normaliser(placeholder, str(root)), handshake, name)
        finally:
            daemon.kill()


def _run(daemon: Daemon, lines: list[dict[str, Any]], norm: Normaliser, handshake: bool, name: str) -> ReplayResult:
    received: list[Any] = []
    sent = 0
    if handshake:
        params = {"processId": os.getpid(), "capabilities": SUMMARIZING_CLIENT}
        _call_plain(daemon, INITIALIZE | {"params": params}, received)
        daemon.write([b'{"jsonrpc":"2.0","method":"initialized","params":{}}'])
    last_answer = time.monotonic()
    out_index = 0
    for step in steps_of(lines):
        if step.sent:
            time.sleep(max(0.0, last_answer + PACE_SECONDS - time.monotonic()))  # a gap on purpose: distinct ms times
            daemon.write([_body(line, norm) for line in step.sent])
            sent += len(step.sent)
        for line_index, expected in step.expected:
            got = daemon.next(STEP_TIMEOUT)
            if isinstance(got, (TimeoutError, EOFError)):
                why = f"no message within {STEP_TIMEOUT:.0f} s" if isinstance(got, TimeoutError) else "the daemon closed its output"
                raise ReplayMismatch(_report(name, line_index, out_index, [f"$: {why}; expected {_show(expected)}"], daemon))
            received.append(got)
            problems = norm.compare(expected, got)
            if problems:
                raise ReplayMismatch(_report(name, line_index, out_index, problems, daemon, got))
            out_index += 1
        last_answer = time.monotonic()
    if handshake:
        _call_plain(daemon, SHUTDOWN, received)
        daemon.write([b'{"jsonrpc":"2.0","method":"exit"}'])
    code = daemon.finish(EXIT_TIMEOUT)
    extra = daemon.next(STEP_TIMEOUT)  # it exited: its output ends (EOFError) unless a message is left
    if not isinstance(extra, (TimeoutError, EOFError)):
        raise ReplayMismatch(f"{name}: the daemon sent a message the recording does not have: {_show(extra)}")
    want = 0 if handshake else expected_exit_code(lines)
    if code != want:
        raise ReplayMismatch(f"{name}: the daemon exited with {code}, the recording implies {want}")
    return ReplayResult(sent, received, code)


def _body(line: dict[str, Any], norm: Normaliser) -> bytes:
    """The bytes to send for a recorded incoming line; an unparseable frame goes as it was."""
    if line["msg"] is None and "raw" in line:
        return line["raw"].encode()
    if line["msg"] is None:
        raise ValueError(f"cannot replay a rejected frame without its raw body: {line!r}")
    message = norm.request(line["msg"])
    if isinstance(message, dict) and message.get("method") == "initialize":
        params = message.get("params")
        if isinstance(params, dict) and type(params.get("processId")) is int:
            params["processId"] = os.getpid()  # the recording's client is gone; ours is alive
    return orjson.dumps(message)


def _call_plain(daemon: Daemon, message: dict[str, Any], received: list[Any]) -> None:
    daemon.write([orjson.dumps(message)])
    got = daemon.next(STEP_TIMEOUT)
    received.append(got)
    if not isinstance(got, dict) or got.get("id") != message["id"] or "result" not in got:
        raise ReplayMismatch(f"{message['method']} failed: {got!r}; stderr:\n" + "\n".join(daemon.stderr_lines))


def _report(name: str, line_index: int, out_index: int, problems: list[str], daemon: Daemon, got: Any = None) -> str:
    head = f"{name}: daemon message {out_index} (transcript line {line_index + 1}) differs:"
    body = "\n".join(f"  {p}" for p in problems)
    full = f"\n  got: {_show(got)}" if got is not None else ""
    tail = "\n  daemon stderr:\n    " + "\n    ".join(daemon.stderr_lines) if daemon.stderr else ""
    return f"{head}\n{body}{full}{tail}"
