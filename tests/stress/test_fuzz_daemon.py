"""Property-based fuzzing of a live daemon: hostile params, and damaged byte streams.

Params: for every method of `protocol.METHODS`, params are generated from its params class —
each field right, of the wrong type, missing, null, huge, in odd unicode, naming unknown or known
entries, paths that climb out of the root (`..`, absolute paths elsewhere, symlinks out), odd
names — plus extra fields and params that are not an object. One daemon serves a whole test.
Every request must get exactly one response within 2 s, a result or an error code that
protocol.md documents for that method (never -32603); the daemon must stay up; and a rejected
request must leave every file under the sessions root (and in a directory beside it) byte for
byte as it was.

Streams: the client side of each recorded transcript in tests/transcripts, framed as it was
sent, has bytes flipped, inserted and deleted. The daemon must write nothing but well-formed
frames holding JSON-RPC responses with documented codes (never -32603), keep answering or exit
(non-zero only with a message on stderr), and never wedge.

`SESSIONTREE_FUZZ_EXAMPLES` and `SESSIONTREE_FUZZ_STREAMS` size the slow variants.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import time
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sessiontree.protocol import METHODS, to_camel
from support.daemon import PROBE_ID, OutputError, RawDaemon, request
from support.replay import SESSIONS_DIR_TOKEN, load_transcript
from support.timeouts import ANSWER_TIMEOUT, EXIT_TIMEOUT

if TYPE_CHECKING:
    from .conftest import StressStats

REPO: Final = Path(__file__).resolve().parents[2]
TRANSCRIPTS: Final = REPO / "tests" / "transcripts"
PARAMS_EXAMPLES: Final = 600
PARAMS_EXAMPLES_SLOW: Final = int(os.environ.get("SESSIONTREE_FUZZ_EXAMPLES", "3000"))
STREAM_EXAMPLES: Final = 40
STREAM_EXAMPLES_SLOW: Final = int(os.environ.get("SESSIONTREE_FUZZ_STREAMS", "300"))
INTERNAL_ERROR: Final = -32603
INVALID_REQUEST: Final = -32600
KNOWN_NOTIFICATIONS: Final = {"window/logMessage", "session/didChange", "session/didClose", "$/progress"}
ROOT_TOKEN, OUTSIDE_TOKEN = "<ROOT>", "<OUTSIDE>"


# --------------------------------------------------------------------------- the contract


def documented_codes() -> tuple[set[int], dict[str, set[int]]]:
    """protocol.md's error table, and each method's *Errors* line."""
    text = (REPO / "protocol.md").read_text(encoding="utf-8")
    errors = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    table = {int(code) for code in re.findall(r"^\| (-32\d{3}) \|", errors, re.MULTILINE)}
    per_method: dict[str, set[int]] = {}
    for section in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        name = section.split("\n", 1)[0].strip()
        found = re.search(r"^\*Errors\*: (.*?)(?:\n\n|\Z)", section.split("\n## ", 1)[0], re.MULTILINE | re.DOTALL)
        if found:
            per_method[name] = {int(code) for code in re.findall(r"-32\d{3}", found.group(1))}
    return table, per_method


def allowed_codes(method: str, params: Any) -> set[int]:
    """The method's documented errors (for one not yet documented, the table's, never -32603);
    params that are not an object, array or null make the whole message invalid (-32600)."""
    codes = METHOD_CODES.get(method, TABLE_CODES - {INTERNAL_ERROR})
    if params is not ABSENT and not isinstance(params, dict | list | None):
        codes = codes | {INVALID_REQUEST}
    return codes


TABLE_CODES, METHOD_CODES = documented_codes()


# --------------------------------------------------------------------------- generated params


@attrs.frozen
class Known:
    """A value known only at run time: the n-th open session, or entry of the base session."""

    kind: str
    index: int


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()

ODD_TEXT: Final = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "\u2028\u2029",
    "\ufeff",
    "\u202eevil",
    "e\u0301",
    "😀",
    "𝄞",
    "中文",
    "\\",
    '"',
    "\n",
    "null",
    "__proto__",
    "constructor",
]
odd_text = st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=40))
huge_text = st.builds(lambda n, c: c * n, st.integers(10_000, 60_000), st.sampled_from(["x", "é", "😀", "\\", "\n"]))
any_text = st.one_of(odd_text, odd_text, huge_text)

json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    odd_text,
)
json_value = st.recursive(
    json_scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3), max_leaves=8
)
wrong_type = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-1, 1),
    st.just([]),
    st.just({}),
    st.lists(json_scalar, max_size=2),
)

entry_id = st.one_of(
    st.builds(Known, st.just("entry"), st.integers(0, 50)),
    st.builds(Known, st.just("entry"), st.integers(0, 50)),
    st.text("0123456789abcdef", min_size=8, max_size=8),
    st.sampled_from(["00000000", "ZZZZZZZZ", "root", "", "../x", "0" * 100]),
    odd_text,
)
known_session = st.builds(Known, st.just("session"), st.integers(0, 1))
session_id = st.one_of(
    known_session,
    known_session,
    known_session,
    known_session,
    st.sampled_from(["no-such-session", "", "FUZZ-A", "fuzz-a ", "../fuzz-a"]),
    odd_text,
)
PATHS: Final = [
    f"{ROOT_TOKEN}/--proj--",
    "not-a-session.jsonl",
    "empty.jsonl",
    "dangling.jsonl",
    "link-out.jsonl",
    "--escape--/outside.jsonl",
    f"{OUTSIDE_TOKEN}/outside.jsonl",
    "../outside/outside.jsonl",
    "--proj--/../../outside/outside.jsonl",
    "--proj--/../not-a-session.jsonl",
    "/etc/passwd",
    "/",
    ".",
    "..",
    "",
    "~",
    "~root/x.jsonl",
    "..\\..\\x.jsonl",
    "%2e%2e/x.jsonl",
    "x" * 300 + ".jsonl",
    "/".join(["d"] * 3000),
    "odd name\n\t.jsonl",
    "ﬁle.jsonl",
    f"{ROOT_TOKEN}/../outside/outside.jsonl",
    f"{ROOT_TOKEN}/",
]
path_value = st.one_of(
    st.builds(Known, st.just("path"), st.integers(0, 1)),
    st.sampled_from(PATHS),
    st.sampled_from(PATHS),
    odd_text,
)
CWDS: Final = [
    "/proj",
    "/other",
    "/escape",
    "/dangling",
    "proj",
    "",
    "/",
    "..",
    "/../../etc",
    "/a/../../..",
    "C:\\Users\\x",
    "\\\\server\\share",
    "/" + "b" * 300,
    "/a\x00b",
    "/ü/中/😀",
    "/with space/and\nnewline",
    f"{OUTSIDE_TOKEN}",
]
cwd_value = st.one_of(st.sampled_from(CWDS), st.sampled_from(CWDS), odd_text)
create_id = st.one_of(
    st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=20).map(lambda s: "f" + s),
    st.sampled_from(["fuzz-a", "fuzz-b", ".hidden", "-dash", "a/b", "..", "a" * 129, "a" * 128]),
    odd_text,
)

ENTRIES: Final[list[dict[str, Any]]] = [
    {"type": "message", "message": {"role": "user", "content": "hi", "timestamp": 1735689600000}},
    {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
    {"type": "thinking_level_change", "thinkingLevel": "high"},
    {"type": "model_change", "provider": "p", "modelId": "m"},
    {"type": "compaction", "summary": "s", "firstKeptEntryId": Known("entry", 0), "tokensBefore": 10},
    {"type": "branch_summary", "fromId": "root", "summary": "s"},
    {"type": "custom", "customType": "x", "data": {"k": [1, 2]}},
    {"type": "custom_message", "customType": "x", "content": "c", "display": True},
    {"type": "label", "targetId": Known("entry", 1), "label": "l"},
    {"type": "session_info", "name": "n"},
]


@st.composite
def entry_value(draw: st.DrawFn) -> Any:
    """A valid entry of one of the nine types, then perhaps broken in one or two places."""
    entry = _restore_known(draw(st.sampled_from(ENTRIES)))
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        key = draw(st.sampled_from([*entry, "id", "parentId", "timestamp", "type", "message", "extra"]))
        how = draw(st.sampled_from(["drop", "wrong", "text", "json", "role"]))
        if how == "drop":
            entry.pop(key, None)
        elif how == "role" and isinstance(entry.get("message"), dict):
            entry["message"]["role"] = draw(st.sampled_from(["branchSummary", "compactionSummary", "", 5, None]))
        else:
            entry[key] = draw({"wrong": wrong_type, "text": any_text, "json": json_value}.get(how, wrong_type))
    return entry


def _restore_known(entry: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a template entry (its Known markers are shared and immutable)."""
    return {k: _restore_known(v) if isinstance(v, dict) else v for k, v in entry.items()}


def right_value(name: str, kind: Any) -> st.SearchStrategy[Any]:
    """A value of the right type for a params field: by its wire name, else by its type."""
    by_name: dict[str, st.SearchStrategy[Any]] = {
        "sessionId": session_id,
        "path": path_value,
        "cwd": cwd_value,
        "id": create_id,
        "parentSession": st.one_of(path_value, odd_text),
        "entry": entry_value(),
        "entries": st.lists(entry_value(), min_size=0, max_size=4),
        "ids": st.lists(entry_id, max_size=4),
        "format": st.sampled_from(["agent", "llm", "", "AGENT", "xml"]),
        "details": json_value,
        "workDoneToken": st.one_of(st.integers(-(2**40), 2**40), odd_text),
    }
    if name in by_name:
        return by_name[name]
    if name.endswith("Id") or name in ("since", "pathTo"):
        return entry_id
    return by_type(kind)


def by_type(kind: Any) -> st.SearchStrategy[Any]:
    """Values of a field's annotated type (optional parts left to the null and absent cases)."""
    options = [arg for arg in typing.get_args(kind) if arg is not type(None)] if _is_union(kind) else [kind]
    strategies = []
    for option in options:
        if attrs.has(option):
            strategies.append(object_of(option))
        elif option is bool:
            strategies.append(st.booleans())
        elif option is int:
            strategies.append(st.one_of(st.integers(-3, 100_000), st.sampled_from([2**31, 2**63, -(2**63), 10**30])))
        elif option is float:
            strategies.append(st.floats(allow_nan=False, allow_infinity=False))
        elif option is str:
            strategies.append(any_text)
        elif typing.get_origin(option) is list:
            strategies.append(st.lists(by_type(typing.get_args(option)[0]), max_size=3))
        else:
            strategies.append(json_value)
    return st.one_of(*strategies) if strategies else json_value


def _is_union(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def field_types(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation this Python cannot evaluate: any JSON for that class
        return {f.name: Any for f in attrs.fields(cls)}


@st.composite
def field_value(draw: st.DrawFn, name: str, kind: Any, required: bool) -> Any:
    # Mostly get past the params checks to the domain's; an optional field is often left out.
    choices = ["right"] * (14 if required else 5) + ["wrong", "null", "json"] + ["absent"] * (1 if required else 6)
    how = draw(st.sampled_from(choices))
    if how == "absent":
        return ABSENT
    if how == "null":
        return None
    if how == "wrong":
        return draw(wrong_type)
    if how == "json":
        return draw(json_value)
    return draw(right_value(name, kind))


@st.composite
def object_of(draw: st.DrawFn, cls: type) -> dict[str, Any]:
    """An object for an attrs class: each field right, wrong, null or absent; maybe extra keys."""
    hints = field_types(cls)
    value: dict[str, Any] = {}
    for attribute in attrs.fields(cls):
        name = to_camel(attribute.name)
        got = draw(field_value(name, hints.get(attribute.name, Any), attribute.default is attrs.NOTHING))
        if got is not ABSENT:
            value[name] = got
    extra_keys = st.sampled_from(["session_id", "SessionId", "extra", "__proto__", "jsonrpc", "leafID"]) | odd_text
    value.update(draw(st.dictionaries(extra_keys, json_value, max_size=2)))
    return value


@st.composite
def params_for(draw: st.DrawFn, method: str) -> Any:
    """Params generated from the method's params class; rarely not an object at all."""
    shape = draw(st.sampled_from(["object"] * 12 + ["absent", "null", "array", "scalar"]))
    if shape != "object":
        return {"absent": ABSENT, "null": None, "array": [{"sessionId": "fuzz-a"}], "scalar": "fuzz-a"}[shape]
    return draw(object_of(METHODS[method].params))


calls = st.sampled_from(sorted(METHODS)).flatmap(lambda m: st.tuples(st.just(m), params_for(m)))


# --------------------------------------------------------------------------- the fuzzed daemon


class FuzzDaemon(RawDaemon):
    """Strict framing as RawDaemon, but bodies parsed by the json module: the daemon may rightly
    echo lone surrogate escapes and big integers back, which orjson refuses."""

    parse = staticmethod(json.loads)

    def _output_error(self, exc: Exception, line: bytes) -> Exception:
        return OutputError(f"{exc}: {line!r}")

    def _output_ended(self) -> None:
        self.messages.put(EndOfOutput("the daemon closed its output"))


class EndOfOutput(Exception):
    """Queued after the daemon's last message."""


@dataclass
class FuzzTarget:
    """One daemon over a sessions root seeded with sessions, non-sessions and symlinks out."""

    root: Path
    outside: Path
    spawn: Callable[..., RawDaemon]
    daemon: RawDaemon | None = None
    paths: list[str] = field(default_factory=list)  # of the base sessions fuzz-a and fuzz-b
    next_id: int = 0
    deaths: int = 0

    SESSIONS: Final = ("fuzz-a", "fuzz-b")

    def start(self) -> None:
        self.daemon = self.spawn("--sessions-dir", str(self.root), cls=FuzzDaemon)
        self.daemon.initialize()

    def ensure_up(self) -> RawDaemon:
        """The daemon, restarted if an earlier case killed it (that case has failed already)."""
        if self.daemon is None or self.daemon.process.poll() is not None:
            if self.daemon is not None:
                self.deaths += 1
                self.daemon.kill()
            self.start()
        assert self.daemon is not None
        return self.daemon

    def call(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        message = request(self.next_id, method)
        if params is not ABSENT:
            message["params"] = params
        daemon = self.ensure_up()
        daemon.send(frame_any(message))
        while True:
            response = daemon.next(ANSWER_TIMEOUT)
            if "method" not in response:
                break
            if "id" in response:  # a request to the client: refuse it, as the Python client does
                refusal = {"code": -32601, "message": "not served by this client"}
                daemon.send_message({"jsonrpc": "2.0", "id": response["id"], "error": refusal})
            else:
                assert response["method"] in KNOWN_NOTIFICATIONS, f"unexpected notification {response}"
        assert response.get("id") == self.next_id, f"answer to another request: {response}"
        return response

    def reopen_base_sessions(self) -> None:
        """Fuzzed closes must not starve later cases of an open session."""
        for session, path in zip(self.SESSIONS, self.paths, strict=True):
            if "error" in self.call("session/info", {"sessionId": session}):
                opened = self.call("session/open", {"path": path})
                if "error" in opened:  # a fuzzed session/trash or session/archive moved it: put it back
                    assert "result" in self.call("session/restore", {"path": path}), path
                    opened = self.call("session/open", {"path": path})
                assert "result" in opened, opened

    def entry_ids(self) -> list[str]:
        tree = self.call("session/tree", {"sessionId": self.SESSIONS[0]})["result"]
        return [node["id"] for node in tree["nodes"]] or ["00000000"]

    def resolve(self, value: Any, entries: list[str]) -> Any:
        if isinstance(value, Known):
            pool = {"session": list(self.SESSIONS), "path": self.paths, "entry": entries}[value.kind]
            return pool[value.index % len(pool)]
        if isinstance(value, str):
            return value.replace(ROOT_TOKEN, str(self.root)).replace(OUTSIDE_TOKEN, str(self.outside))
        if isinstance(value, list):
            return [self.resolve(item, entries) for item in value]
        if isinstance(value, dict):
            return {self.resolve(k, entries): self.resolve(v, entries) for k, v in value.items()}
        return value

    def snapshot(self) -> dict[str, bytes | str]:
        """Every file's bytes (a symlink's target) under the root and beside it."""
        files: dict[str, bytes | str] = {}
        for base in (self.root, self.outside):
            for directory, dirs, names in os.walk(base):
                for name in names + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
                    path = os.path.join(directory, name)
                    files[path] = "-> " + os.readlink(path) if os.path.islink(path) else Path(path).read_bytes()
        return files


def frame_any(message: Any) -> bytes:
    """Frame a message that may hold lone surrogates or integers beyond 64 bits."""
    try:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        body = json.dumps(message).encode("ascii")  # lone surrogates as \\uXXXX escapes
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def seed_root(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "sessions", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    header = {"type": "session", "version": 3, "id": "outside", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/o"}
    (outside / "outside.jsonl").write_text(json.dumps(header) + "\n")
    (root / "not-a-session.jsonl").write_text("hello\n")
    (root / "empty.jsonl").write_bytes(b"")
    (root / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (root / "link-out.jsonl").symlink_to(outside / "outside.jsonl")
    (root / "--escape--").symlink_to(outside, target_is_directory=True)
    (root / "--dangling--").symlink_to(tmp_path / "nowhere")
    return root, outside


@pytest.fixture
def target(tmp_path: Path, spawned: Callable[..., RawDaemon]) -> FuzzTarget:
    root, outside = seed_root(tmp_path)
    fuzz = FuzzTarget(root, outside, spawned)
    fuzz.start()
    for session, cwd in zip(FuzzTarget.SESSIONS, ("/proj", "/other"), strict=True):
        created = fuzz.call("session/create", {"cwd": cwd, "id": session})["result"]
        fuzz.paths.append(created["path"])
    for text in ("one", "two", "three"):
        entry = {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1735689600000}}
        assert "result" in fuzz.call("session/append", {"sessionId": "fuzz-a", "entry": entry})
    return fuzz


# --------------------------------------------------------------------------- params fuzzing


def check_call(fuzz: FuzzTarget, method: str, raw_params: Any, stats: StressStats) -> None:
    daemon = fuzz.ensure_up()
    fuzz.reopen_base_sessions()
    params = fuzz.resolve(raw_params, fuzz.entry_ids())
    before = fuzz.snapshot()
    response = fuzz.call(method, params)
    stats.fuzz_cases += 1
    assert ("result" in response) != ("error" in response), f"not one of result and error: {response}"
    stats.outcomes[str(response["error"]["code"]) if "error" in response else "result"] += 1
    if "error" in response:
        stats.fuzz_rejected += 1
        code = response["error"]["code"]
        after = fuzz.snapshot()
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        assert not changed, f"rejected {method} ({code}) changed {changed}"
        assert code in allowed_codes(method, params), (
            f"{method} answered {code}, not documented for it: {response['error']}"
        )
    extra = [m for m in daemon.answers_before_probe() if "method" not in m]
    assert not extra, f"more than one answer: {extra}"
    assert daemon.process.poll() is None, f"the daemon died: {daemon.stderr[-3000:]}"


def run_params_fuzz(fuzz: FuzzTarget, stats: StressStats, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(calls)
    def one_call(call: tuple[str, Any]) -> None:
        check_call(fuzz, *call, stats)

    try:
        one_call()
    except Exception as exc:
        stats.failures.append(f"params fuzz: {str(exc).splitlines()[0][:300]}")
        raise
    assert fuzz.deaths == 0, "the daemon died during the run"


def test_fuzz_params(target: FuzzTarget, stress_stats: StressStats) -> None:
    run_params_fuzz(target, stress_stats, PARAMS_EXAMPLES)


@pytest.mark.slow
def test_fuzz_params_long(target: FuzzTarget, stress_stats: StressStats) -> None:
    run_params_fuzz(target, stress_stats, PARAMS_EXAMPLES_SLOW)


# --------------------------------------------------------------------------- damaged streams

TRANSCRIPT_NAMES: Final = sorted(p.stem for p in TRANSCRIPTS.glob("*.jsonl"))
PROBE_WAIT: Final = 0.8  # longer than the daemon's half second of quiet before it gives up on a frame


def client_stream(name: str, root: Path) -> bytes:
    """The framed bytes a transcript's client sent, for a daemon whose root is `root`."""
    lines = load_transcript(TRANSCRIPTS / f"{name}.jsonl")
    created = _created_ids(lines)
    frames = []
    for line in lines:
        if line["dir"] != "in":
            continue
        if line["msg"] is None:
            body = line["raw"].encode()
        else:
            message = _for_this_run(line["msg"], created)
            body = orjson.dumps(message).replace(SESSIONS_DIR_TOKEN.encode(), str(root).encode())
        frames.append(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
    return b"".join(frames)


def _created_ids(lines: list[dict[str, Any]]) -> dict[Any, str]:
    """Request id of each recorded session/create -> the session id it was answered with."""
    requests = {
        line["msg"]["id"]
        for line in lines
        if line["dir"] == "in" and isinstance(line["msg"], dict) and line["msg"].get("method") == "session/create"
    }
    return {
        line["msg"]["id"]: line["msg"]["result"]["sessionId"]
        for line in lines
        if line["dir"] == "out"
        and isinstance(line["msg"], dict)
        and line["msg"].get("id") in requests
        and "result" in line["msg"]
    }


def _for_this_run(message: Any, created: dict[Any, str]) -> Any:
    """Create sessions with their recorded ids, so later requests name them; keep the client pid alive."""
    params = message.get("params") if isinstance(message, dict) else None
    if not isinstance(params, dict):
        return message
    params = dict(params)
    if message.get("method") == "initialize" and type(params.get("processId")) is int:
        params["processId"] = os.getpid()
    if message.get("method") == "session/create" and "id" not in params and message.get("id") in created:
        params["id"] = created[message["id"]]
    return {**message, "params": params}


@st.composite
def mutations(draw: st.DrawFn) -> list[tuple[str, int, bytes]]:
    """1-4 edits at positions given as fractions of the stream, so they fit any length."""
    edits = []
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "insert", "delete"]))
        where = draw(st.integers(0, 2**16))
        data = draw(st.binary(min_size=1, max_size=8)) if how != "delete" else bytes([draw(st.integers(1, 40))])
        edits.append((how, where, data))
    return edits


def mutate(stream: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    data = bytearray(stream)
    for how, where, payload in edits:
        at = where * len(data) // 2**16
        if how == "flip" and at < len(data):
            data[at] ^= payload[0] or 0xFF
        elif how == "insert":
            data[at:at] = payload
        elif how == "delete":
            del data[at : at + payload[0]]
    return bytes(data)


def probe(daemon: RawDaemon, n: int, seen: list[dict[str, Any]]) -> bool:
    """Send a probe; True once it is answered, False if the daemon is gone or stays silent."""
    probe_id = f"{PROBE_ID}-{n}"
    try:
        daemon.send_message(request(probe_id, "session/info", {"sessionId": "x"}))
    except OSError:
        return False
    deadline = time.monotonic() + PROBE_WAIT
    while (left := deadline - time.monotonic()) > 0:
        try:
            seen.append(daemon.next(left))
        except OutputError:  # a non-frame on stdout (OutputError is an AssertionError too)
            raise
        except AssertionError:  # no message in time
            return False
        except EndOfOutput as exc:
            daemon.messages.put(exc)  # for _drain
            return False
        if seen[-1].get("id") == probe_id:
            return True
    return False


def check_stream(daemon: RawDaemon, stream: bytes) -> list[dict[str, Any]]:
    """Feed a damaged stream; the daemon must answer a probe or have exited, then exit at EOF."""
    with contextlib.suppress(OSError):  # it exited already (an `exit` in the stream): checked below
        daemon.send(stream)
    seen: list[dict[str, Any]] = []
    # A probe the damaged stream swallowed (into a frame's body) goes unanswered: probe again,
    # PROBE_WAIT apart, until one is answered or the daemon exits; only silence for a whole
    # answer's bound is wedged (a busy machine may answer late, not never).
    deadline = time.monotonic() + ANSWER_TIMEOUT
    answered = any(
        probe(daemon, n, seen)
        for n in itertools.takewhile(lambda _: daemon.process.poll() is None and time.monotonic() < deadline, itertools.count())
    )
    if not answered:  # then it must be exiting (an `exit` in the stream), not silent and alive
        try:
            daemon.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"no answer to probes for {ANSWER_TIMEOUT} s and still running: wedged") from None
    with contextlib.suppress(OSError):
        daemon.close_stdin()
    try:
        code = daemon.wait(EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the daemon did not exit within {EXIT_TIMEOUT} s of its input ending") from None
    messages = seen + _drain(daemon)
    if code != 0:
        assert code > 0, f"the daemon died of signal {-code}"
        assert daemon.stderr.strip(), f"exit status {code} with nothing on stderr"
    else:
        assert any(_is_shutdown_ok(m) for m in messages), "exit status 0 without a successful shutdown"
    for message in messages:
        check_message(message)
    return messages


def _drain(daemon: RawDaemon) -> list[dict[str, Any]]:
    """Every message left; an output error (a non-frame on stdout) is raised here."""
    messages: list[dict[str, Any]] = []
    while True:
        try:
            item = daemon.messages.get(timeout=EXIT_TIMEOUT)
        except queue.Empty:
            raise AssertionError("the daemon exited but its output did not end") from None
        if isinstance(item, EndOfOutput):
            return messages
        if isinstance(item, Exception):
            raise item
        messages.append(item)


def _is_shutdown_ok(message: dict[str, Any]) -> bool:
    return "result" in message and message["result"] is None and "method" not in message


def check_message(message: Any) -> None:
    assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", f"not JSON-RPC: {message!r}"
    if "method" in message:
        assert message["method"] in KNOWN_NOTIFICATIONS, f"unexpected message {message}"
        return
    assert ("result" in message) != ("error" in message), f"not one of result and error: {message}"
    if "error" in message:
        code = message["error"]["code"]
        assert code in TABLE_CODES and code != INTERNAL_ERROR, f"undocumented or internal error: {message}"


def run_stream_fuzz(tmp_path: Path, spawn: Callable[..., RawDaemon], stats: StressStats, examples: int) -> None:
    runs = iter(range(1 << 30))

    # No shrinking: each try costs a daemon start, and four edits are short enough to read.
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    @given(st.sampled_from(TRANSCRIPT_NAMES), mutations())
    def one_stream(name: str, edits: list[tuple[str, int, bytes]]) -> None:
        root = tmp_path / f"run-{next(runs)}" / "sessions"
        seed = TRANSCRIPTS / f"{name}.seed"
        if seed.is_dir():
            shutil.copytree(seed, root, symlinks=True)
        root.mkdir(parents=True, exist_ok=True)
        daemon = spawn("--sessions-dir", str(root), cls=FuzzDaemon)
        try:
            check_stream(daemon, mutate(client_stream(name, root), edits))
        finally:
            daemon.kill()
        stats.mutation_cases += 1

    try:
        one_stream()
    except Exception as exc:
        stats.failures.append(f"stream fuzz: {str(exc).splitlines()[0][:300]}")
        raise


def test_fuzz_damaged_streams(tmp_path: Path, spawned: Callable[..., RawDaemon], stress_stats: StressStats) -> None:
    run_stream_fuzz(tmp_path, spawned, stress_stats, STREAM_EXAMPLES)


@pytest.mark.slow
def test_fuzz_damaged_streams_long(
    tmp_path: Path, spawned: Callable[..., RawDaemon], stress_stats: StressStats
) -> None:
    run_stream_fuzz(tmp_path, spawned, stress_stats, STREAM_EXAMPLES_SLOW)
