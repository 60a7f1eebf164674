"""kill -9 at random moments while one or four daemons append to the same session file.

Each iteration (seeded) starts 1 or 4 daemons on one session file (the first creates it, the
others `session/open` it), lets every client append message entries of 10 B to 256 KB as fast
as the daemons acknowledge them, and SIGKILLs one or all daemons at a random moment. When one is
killed, the others keep appending for a moment (they must fence a line the victim left torn),
then shut down cleanly. The file is then checked twice: parsed here, and opened by a fresh
daemon. What must hold:

- every acknowledged entry is in the file: the line parses, equals the entry sent plus the id,
  parentId and timestamp the daemon acknowledged, and is byte for byte what JSON.stringify writes;
- besides them, each killed client left at most one thing: its last, unacknowledged entry, whole
  or as a torn prefix; survivors left nothing unacknowledged;
- ids are unique, every parentId is null or an entry earlier in the file, each client's entries
  are in the order they were acknowledged;
- the reopen changes nothing: a torn last line is reported and left in place, byte for byte (its
  writer may still be writing it); the reopened daemon serves exactly the entries parsed.

`SESSIONTREE_STRESS_ITERATIONS` sets the iterations of the slow variant (default 200).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from support.daemon import RawDaemon, request
from support.timeouts import ANSWER_TIMEOUT, EXIT_TIMEOUT, wait_until

if TYPE_CHECKING:
    from .conftest import StressStats

DEFAULT_ITERATIONS: Final = 50
SLOW_ITERATIONS: Final = int(os.environ.get("SESSIONTREE_STRESS_ITERATIONS", "200"))
MIN_PAYLOAD, MAX_PAYLOAD = 10, 256 * 1024
MAX_KILL_DELAY: Final = 0.15
# Mostly ASCII, plus what JSON must escape and multi-byte UTF-8 (2, 3 and 4 bytes, U+2028).
ALPHABET: Final = "abcdefghijklmnopqrstuvwxyz0123456789 " * 6 + '"\\\n\t\x01/éß€中\u2028😀'


class DaemonGone(Exception):
    """The daemon's output ended (it was killed, or died)."""


class KillableDaemon(RawDaemon):
    """A RawDaemon whose end of output is reported at once instead of as a timeout."""

    def _read_stdout(self) -> None:
        try:
            super()._read_stdout()
        finally:
            self.messages.put(DaemonGone(f"daemon {self.process.pid} closed its output"))

    def result(self, message: dict[str, Any]) -> Any:
        response = self.call(message)
        if "error" in response:
            raise AssertionError(f"{message['method']} failed: {response['error']}")
        return response["result"]


# --------------------------------------------------------------------------- writing


@dataclass
class Acked:
    """An append the daemon acknowledged: what was sent and what the daemon assigned."""

    entry: dict[str, Any]
    id: str
    parent_id: str | None
    timestamp: str


@dataclass
class Writer:
    index: int
    daemon: KillableDaemon
    session_id: str
    rng: random.Random
    acked: list[Acked] = field(default_factory=list)
    in_flight: dict[str, Any] | None = None
    killed: bool = False
    error: str | None = None

    def run(self, stop: threading.Event) -> None:
        """Append one entry at a time until stopped or killed; remember what was acknowledged."""
        seq = 0
        while not stop.is_set():
            entry = make_entry(self.index, seq, self.rng)
            self.in_flight = entry
            try:
                response = self.daemon.call(
                    request(seq, "session/append", {"sessionId": self.session_id, "entry": entry})
                )
            except Exception as exc:  # a killed daemon: no output, a cut frame, a broken pipe
                if not self.killed:
                    self.error = f"client {self.index}: {type(exc).__name__}: {exc}\n{self.daemon.stderr[-2000:]}"
                return
            if "error" in response:
                self.error = f"client {self.index}: append failed: {response['error']}"
                return
            result = response["result"]
            self.acked.append(Acked(entry, result["id"], result["parentId"], result["timestamp"]))
            self.in_flight = None
            seq += 1


def payload_size(rng: random.Random) -> int:
    """Log-uniform between 10 B and 256 KB: mostly small entries, some very large ones."""
    return int(math.exp(rng.uniform(math.log(MIN_PAYLOAD), math.log(MAX_PAYLOAD))))


def make_entry(client: int, seq: int, rng: random.Random) -> dict[str, Any]:
    size = payload_size(rng)
    block = "".join(rng.choices(ALPHABET, k=min(size, 4096)))
    text = (block * (size // len(block) + 1))[:size]
    # The tag makes each entry's content unique, so an unacknowledged line names its writer.
    content = f"c{client}.{seq}:{text}"
    return {"type": "message", "message": {"role": "user", "content": content, "timestamp": 1735689600000 + seq}}


def js_line(value: Any) -> bytes:
    """JSON.stringify's bytes for the plain strings and integers used here."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def expected_line(acked: Acked) -> bytes:
    return js_line(
        {
            "type": "message",
            "id": acked.id,
            "parentId": acked.parent_id,
            "timestamp": acked.timestamp,
            "message": acked.entry["message"],
        }
    )


# --------------------------------------------------------------------------- checking the file


@dataclass
class Line:
    number: int  # 1-based
    offset: int
    raw: bytes
    entry: dict[str, Any] | None  # None: not a JSON object with a string id
    terminated: bool


@dataclass
class Findings:
    failures: list[str] = field(default_factory=list)
    found: int = 0
    extra: int = 0
    torn: list[Line] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)


def split_lines(data: bytes) -> list[Line]:
    lines: list[Line] = []
    offset = 0
    pieces = data.split(b"\n")
    for number, raw in enumerate(pieces, start=1):
        terminated = number < len(pieces)
        if raw or terminated:
            lines.append(Line(number, offset, raw, _parse(raw), terminated))
        offset += len(raw) + 1
    return lines


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("id"), str) else None


# The start of a line this test's daemons write; H is a hex digit and T a timestamp character.
_HEADS: Final = [
    b'{"type":"message","id":"HHHHHHHH","parentId":null,"timestamp":"TTTTTTTTTTTTTTTTTTTTTTTT","message":',
    b'{"type":"message","id":"HHHHHHHH","parentId":"HHHHHHHH","timestamp":"TTTTTTTTTTTTTTTTTTTTTTTT","message":',
]
_WILD: Final = {ord("H"): re.compile(rb"[0-9a-f]"), ord("T"): re.compile(rb"[0-9TZ:.\-]")}


def is_torn_prefix(raw: bytes, entry: dict[str, Any]) -> bool:
    """Is `raw` a proper prefix of the line a daemon writes for `entry` (with any id and time)?"""
    rest = js_line(entry["message"]) + b"}"
    for head in _HEADS:
        if all(_char_fits(raw[i : i + 1], head[i]) for i in range(min(len(raw), len(head)))):
            tail = raw[len(head) :]
            if len(raw) <= len(head) or (rest.startswith(tail) and len(tail) < len(rest)):
                return True
    return False


def _char_fits(char: bytes, template: int) -> bool:
    wild = _WILD.get(template)
    return bool(wild.fullmatch(char)) if wild else char[0] == template


def check_file(data: bytes, writers: list[Writer]) -> Findings:
    findings = Findings()
    fail = findings.failures.append
    lines = split_lines(data)
    if not lines or lines[0].entry is None or lines[0].entry.get("type") != "session":
        fail("the first line is not a session header")
        return findings
    body = lines[1:]
    position: dict[str, int] = {}
    for line in body:
        if line.entry is None:
            findings.torn.append(line)
            continue
        entry_id, parent = line.entry["id"], line.entry.get("parentId")
        if entry_id in position:
            fail(f"line {line.number}: id {entry_id} repeated (first at line {position[entry_id]})")
        if parent is not None and parent not in position:
            fail(f"line {line.number}: parentId {parent!r} is not an earlier entry")
        position[entry_id] = line.number
        findings.entries.append(line.entry)
    by_id = {line.entry["id"]: line for line in body if line.entry is not None}
    acked_ids = _check_acknowledged(writers, by_id, findings)
    _check_unacknowledged(
        writers, [line for line in body if line.entry is not None and line.entry["id"] not in acked_ids], findings
    )
    return findings


def _check_acknowledged(writers: list[Writer], by_id: dict[str, Line], findings: Findings) -> set[str]:
    acked_ids: set[str] = set()
    for writer in writers:
        last_line = 0
        for acked in writer.acked:
            acked_ids.add(acked.id)
            line = by_id.get(acked.id)
            if line is None:
                findings.failures.append(f"client {writer.index}: acknowledged entry {acked.id} is not in the file")
                continue
            expected = expected_line(acked)
            if line.entry != json.loads(expected) or line.raw != expected or not line.terminated:
                findings.failures.append(f"line {line.number}: entry {acked.id} differs from what was acknowledged")
                continue
            if line.number < last_line:
                findings.failures.append(f"client {writer.index}: entry {acked.id} is before an earlier append")
            last_line = line.number
            findings.found += 1
    return acked_ids


def _check_unacknowledged(writers: list[Writer], extra: list[Line], findings: Findings) -> None:
    """Only a killed client's last, unanswered entry may be there unacknowledged, whole or torn."""
    left_by: dict[int, int] = {}
    for line in extra + findings.torn:
        owner = next((w for w in writers if w.killed and w.in_flight and _is_from(line, w.in_flight)), None)
        if owner is None:
            findings.failures.append(
                f"line {line.number}: {len(line.raw)} bytes nobody was waiting for: {line.raw[:120]!r}"
            )
            continue
        left_by[owner.index] = left_by.get(owner.index, 0) + 1
        findings.extra += line.entry is not None
    for index, count in left_by.items():
        if count > 1:
            findings.failures.append(f"client {index}: {count} unacknowledged lines, at most one expected")


def _is_from(line: Line, in_flight: dict[str, Any]) -> bool:
    if line.entry is not None:
        return line.entry.get("message") == in_flight["message"] and line.entry.get("type") == "message"
    return is_torn_prefix(line.raw, in_flight)


def check_reopen(verifier: KillableDaemon, path: Path, before: bytes, findings: Findings) -> list[str]:
    """A fresh daemon opens the file: nothing changed, an unfinished last line reported and left."""
    failures: list[str] = []
    opened = verifier.result(request("open", "session/open", {"path": str(path)}))
    after = path.read_bytes()
    tail = findings.torn[-1] if findings.torn and not findings.torn[-1].terminated else None
    torn_warnings = [w for w in opened["warnings"] if w["kind"] == "torn-tail"]
    if after != before:
        failures.append(f"reopen changed the file ({len(before)} -> {len(after)} bytes)")
    if len(torn_warnings) != (tail is not None):
        failures.append(f"reopen reported {torn_warnings}, expected {'one torn-tail' if tail else 'none'}")
    fenced = len([line for line in findings.torn if line.terminated])
    malformed = len([w for w in opened["warnings"] if w["kind"] == "malformed"])
    if opened["entryCount"] != len(findings.entries) or malformed != fenced:
        failures.append(
            f"reopen: {opened['entryCount']} entries and {malformed} malformed lines, "
            f"expected {len(findings.entries)} and {fenced}"
        )
    served = verifier.result(request("entries", "session/entries", {"sessionId": opened["sessionId"], "since": None}))
    if served["entries"] != findings.entries:
        failures.append("the reopened daemon serves other entries than the file holds")
    verifier.result(request("close", "session/close", {"sessionId": opened["sessionId"]}))
    return failures


# --------------------------------------------------------------------------- one iteration

Spawn = Callable[..., RawDaemon]


class Pool:
    """Daemons waiting for an iteration. Survivors of a crash go back in and write again;
    replacements for killed ones are started at once, so their start-up overlaps the checks."""

    def __init__(self, spawn: Spawn, root: Path) -> None:
        self.spawn, self.root = spawn, root
        self.idle: list[KillableDaemon] = []
        self.ready: set[int] = set()

    def start(self, count: int) -> None:
        for _ in range(count):
            daemon = self.spawn("--sessions-dir", str(self.root), cls=KillableDaemon)
            assert isinstance(daemon, KillableDaemon)
            self.idle.append(daemon)

    def take(self, count: int) -> list[KillableDaemon]:
        self.start(count - len(self.idle))
        taken, self.idle = self.idle[:count], self.idle[count:]
        for daemon in taken:
            if daemon.process.pid not in self.ready:
                daemon.initialize()
                self.ready.add(daemon.process.pid)
        return taken

    def give_back(self, daemon: KillableDaemon) -> None:
        self.idle.append(daemon)

    def shut_down(self) -> list[str]:
        """Every daemon left must shut down cleanly, crash survivors included."""
        failures = []
        for daemon in self.take(len(self.idle)):
            daemon.call(request("down", "shutdown"))
            daemon.send_message({"jsonrpc": "2.0", "method": "exit"})
            if (code := daemon.wait(EXIT_TIMEOUT)) != 0:
                failures.append(f"daemon {daemon.process.pid} exited with {code}: {daemon.stderr[-2000:]}")
        return failures


def start_writers(pool: Pool, seed: int, count: int) -> tuple[Path, list[Writer]]:
    daemons = pool.take(count)
    created = daemons[0].result(request("create", "session/create", {"cwd": f"/stress/{seed}"}))
    path = Path(created["path"])
    writers = [Writer(0, daemons[0], created["sessionId"], random.Random(f"{seed}/0"))]
    for index, daemon in enumerate(daemons[1:], start=1):
        opened = daemon.result(request("open", "session/open", {"path": str(path)}))
        writers.append(Writer(index, daemon, opened["sessionId"], random.Random(f"{seed}/{index}")))
    return path, writers


def run_iteration(seed: int, pool: Pool, verifier: KillableDaemon, stats: StressStats) -> list[str]:
    rng = random.Random(seed)
    count = 1 if seed % 2 == 0 else 4
    kill_all = count == 1 or rng.random() < 0.25  # all four: four fresh daemons, so rarer
    path, writers = start_writers(pool, seed, count)
    stop = threading.Event()
    threads = [threading.Thread(target=w.run, args=(stop,), daemon=True) for w in writers]
    for thread in threads:
        thread.start()
    time.sleep(rng.uniform(0.0, MAX_KILL_DELAY))  # a random moment of the writing to kill at: a gap on purpose
    victims = writers if kill_all else [rng.choice(writers)]
    for victim in victims:
        victim.killed = True
        os.kill(victim.daemon.process.pid, signal.SIGKILL)
    pool.start(len(victims))
    if not kill_all:  # survivors append after the crash: two answers each (the first may have been sent before)
        survivors = {w.index: len(w.acked) for w in writers if not w.killed}
        wait_until(
            lambda: all(len(w.acked) >= survivors[w.index] + 2 or w.error for w in writers if not w.killed),
            "each survivor's appends after the crash",
        )
    stop.set()
    failures = _finish(writers, threads, pool)
    stats.kills += len(victims)
    before = path.read_bytes()
    findings = check_file(before, writers)
    if not findings.failures:
        findings.failures += check_reopen(verifier, path, before, findings)
    stats.acknowledged += sum(len(w.acked) for w in writers)
    stats.found += findings.found
    stats.unacknowledged_found += findings.extra
    stats.torn_lines += len(findings.torn)
    mode = "all" if kill_all else f"client {victims[0].index}"
    return [f"seed {seed} ({count} clients, killed {mode}): {f}" for f in failures + findings.failures]


def _finish(writers: list[Writer], threads: list[threading.Thread], pool: Pool) -> list[str]:
    """Join the clients, reap the killed daemons, put the survivors back into the pool."""
    failures: list[str] = []
    for thread in threads:
        thread.join(ANSWER_TIMEOUT * 2)
        if thread.is_alive():
            failures.append("a client is still waiting for an answer")
    for writer in writers:
        if writer.error:
            failures.append(writer.error)
        if writer.killed:
            writer.daemon.wait(EXIT_TIMEOUT)
        else:
            writer.daemon.result(request("close", "session/close", {"sessionId": writer.session_id}))
            pool.give_back(writer.daemon)
    return failures


def run_iterations(first_seed: int, iterations: int, tmp_path: Path, spawn: Spawn, stats: StressStats) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    pool = Pool(spawn, root)
    (verifier,) = pool.take(1)
    failures: list[str] = []
    for seed in range(first_seed, first_seed + iterations):
        failures += run_iteration(seed, pool, verifier, stats)
        stats.iterations += 1
    pool.give_back(verifier)
    failures += pool.shut_down()
    stats.failures += failures
    assert not failures, "\n".join(failures[:10])


def test_kill9_during_appends(tmp_path: Path, spawned: Spawn, stress_stats: StressStats) -> None:
    run_iterations(0, DEFAULT_ITERATIONS, tmp_path, spawned, stress_stats)


@pytest.mark.slow
def test_kill9_during_appends_long(tmp_path: Path, spawned: Spawn, stress_stats: StressStats) -> None:
    run_iterations(100_000, SLOW_ITERATIONS, tmp_path, spawned, stress_stats)


# --------------------------------------------------------------------------- the checker itself


def _scenario() -> tuple[list[bytes], list[Writer]]:
    """A file three clients wrote: 0 survived, 1 was killed after writing its last entry whole,
    2 was killed mid-write. Returns its lines (the last one torn) and the clients' records."""
    rng = random.Random(7)
    a1, a2, b1, b2, c1 = (make_entry(client, seq, rng) for client, seq in ((0, 0), (0, 1), (1, 0), (1, 1), (2, 0)))
    times = "2026-01-01T00:00:00.00%dZ"
    acked = [Acked(a1, "0000000a", None, times % 1), Acked(b1, "0000000b", "0000000a", times % 2)]
    acked.append(Acked(a2, "0000000c", "0000000b", times % 3))
    unacked = expected_line(Acked(b2, "0000000d", "0000000c", times % 4))
    torn = expected_line(Acked(c1, "0000000e", "0000000d", times % 5))[:-7]
    header = js_line({"type": "session", "version": 3, "id": "s", "timestamp": times % 0, "cwd": "/"})
    lines = [header, expected_line(acked[0]), expected_line(acked[1]), expected_line(acked[2]), unacked, torn]
    writers = [
        Writer(0, None, "s", rng, [acked[0], acked[2]]),  # type: ignore[arg-type]  # no daemon needed
        Writer(1, None, "s", rng, [acked[1]], in_flight=b2, killed=True),  # type: ignore[arg-type]
        Writer(2, None, "s", rng, [], in_flight=c1, killed=True),  # type: ignore[arg-type]
    ]
    return lines, writers


def _joined(lines: list[bytes]) -> bytes:
    return b"\n".join(lines)  # the last line has no line end: torn


def test_checker_accepts_what_a_crash_may_leave() -> None:
    lines, writers = _scenario()
    findings = check_file(_joined(lines), writers)
    assert (findings.failures, findings.found, findings.extra, len(findings.torn)) == ([], 3, 1, 1)


def _tampered(lines: list[bytes], writers: list[Writer], how: str) -> bytes:
    if how == "acknowledged line lost":
        del lines[3]
    elif how == "acknowledged line altered":
        lines[1] = lines[1].replace(b'"content":"c0.0:', b'"content":"c0.0:!')
    elif how == "id repeated":
        lines.insert(3, lines[2])
    elif how == "parent unknown":
        lines[3] = lines[3].replace(b'"parentId":"0000000b"', b'"parentId":"ffffffff"')
    elif how == "survivor left an unacknowledged entry":
        writers[1].killed = False
    elif how == "two unacknowledged entries from one client":
        lines.insert(5, lines[4].replace(b'"id":"0000000d"', b'"id":"0000000f"'))
    elif how == "torn line from nobody":
        lines[5] = b'{"type":"message","id":"zz'
    elif how == "appends out of order":
        writers[0].acked.reverse()
    elif how == "acknowledged line without a line end":
        lines[3:] = [lines[3]]
    return _joined(lines)


@pytest.mark.parametrize(
    ("how", "reported"),
    [
        ("acknowledged line lost", "is not in the file"),
        ("acknowledged line altered", "differs from what was acknowledged"),
        ("id repeated", "repeated"),
        ("parent unknown", "is not an earlier entry"),
        ("survivor left an unacknowledged entry", "nobody was waiting for"),
        ("two unacknowledged entries from one client", "at most one expected"),
        ("torn line from nobody", "nobody was waiting for"),
        ("appends out of order", "before an earlier append"),
        ("acknowledged line without a line end", "differs from what was acknowledged"),
    ],
)
def test_checker_catches(how: str, reported: str) -> None:
    """Each check of check_file can fail: damage the scenario one way and that check reports it."""
    lines, writers = _scenario()
    failures = check_file(_tampered(lines, writers, how), writers).failures
    assert any(reported in failure for failure in failures), failures


def test_reopen_check_catches(tmp_path: Path, spawned: Spawn) -> None:
    """check_reopen passes a torn tail reported and left, and fails a changed file, a torn tail not
    reported, or other entries served."""
    root = tmp_path / "sessions"
    (root / "--x--").mkdir(parents=True)
    lines, writers = _scenario()
    path = root / "--x--" / "s.jsonl"
    before = _joined(lines)
    path.write_bytes(before)
    findings = check_file(before, writers)
    verifier = spawned("--sessions-dir", str(root), cls=KillableDaemon)
    assert isinstance(verifier, KillableDaemon)
    verifier.initialize()
    assert check_reopen(verifier, path, before, findings) == []
    assert path.read_bytes() == before
    changed = before + b"\n"
    path.write_bytes(changed)  # the tail is a whole (malformed) line now: no torn tail to report
    failures = check_reopen(verifier, path, before, findings)
    assert any("reopen changed the file" in f for f in failures)
    assert any("expected one torn-tail" in f for f in failures)
    path.write_bytes(before)
    findings.entries.pop()
    assert any("serves other entries" in f for f in check_reopen(verifier, path, path.read_bytes(), findings))
