"""A cold open of a big file forks a scan worker for the file's later part: the session must be
indexed exactly as a scan alone indexes it, wherever the split falls, whatever the lines hold, and
whatever happens to the worker."""

from __future__ import annotations

import json
import os
import pickle
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.store import FileStorage, Session, SessionIndex
from sessiontree.store import scan_worker as worker_module
from sessiontree.store.packed_columns import pack, unpack
from sessiontree.tree.folded import FoldedTree
from support.equivalence import assert_indexed_alike
from support.messages import line
from support.scan_cases import QUIRK_FILES, chain, damaged_mix
from support.sessions import descriptors_past_1024

HEADER = json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}).encode()


def _odd_but_usual() -> bytes:
    """Lines the quick way takes (so a worker packs them) that are not plain: repeated ids, a
    label before its target, a child before its parent, roots, empty and odd parents, ids and
    stamps that need care when packed (a line end in an id, numbers, null), unhashable settings,
    names and thinking levels; a blank line and a torn one late, where the worker stops."""
    entries = chain(600)
    odd: list[dict[str, Any]] = [
        {"type": "message", "id": "e0000010", "parentId": "e0000009", "timestamp": "t", "message": {"role": "user"}},
        {"type": "label", "id": "lab1", "parentId": "e0000002", "timestamp": "t", "targetId": "later01", "label": "x"},
        {"type": "message", "id": "child01", "parentId": "later01", "timestamp": 5, "message": {"role": "assistant"}},
        {"type": "message", "id": "later01", "parentId": "e0000005", "timestamp": None, "message": {"role": "user"}},
        {"type": "custom", "id": "root02", "parentId": None, "timestamp": "t"},
        {"type": "custom", "id": "empty01", "parentId": "", "timestamp": "t"},
        {"type": "custom", "id": "odd01", "parentId": 12, "timestamp": ["t"]},
        {"type": "custom", "id": "line\nend", "parentId": "e0000020", "timestamp": "t\nt"},
        {"type": "label", "id": "lab2", "parentId": "e0000030", "timestamp": "t", "targetId": "e0000031", "label": {"a": [1]}},
        {"type": "model_change", "id": "mc01", "parentId": "e0000040", "timestamp": "t", "provider": "p", "modelId": ["m"]},
        {"type": "session_info", "id": "n01", "parentId": "e0000050", "timestamp": "t", "name": "a name"},
        {"type": "thinking_level_change", "id": "t01", "parentId": "n01", "timestamp": "t", "thinkingLevel": "high"},
        {"type": "message", "id": "a01", "parentId": "t01", "timestamp": "t", "message": {"role": "assistant", "provider": {"x": 1}}},
    ]
    rng = random.Random(11)
    lines = [line(entry).rstrip(b"\n") for entry in entries]
    for entry in odd:
        lines.insert(rng.randrange(len(lines) + 1), line(entry).rstrip(b"\n"))
    lines.insert(len(lines) - 40, b"")
    lines.insert(len(lines) - 20, lines[100][:30])
    return b"\n".join([HEADER, *lines]) + b"\n"


SOURCES = {
    **{path.name: path.read_bytes for path in QUIRK_FILES},
    "damaged-mix": damaged_mix,
    "odd-but-usual": _odd_but_usual,
}


@pytest.fixture(autouse=True)
def _storages_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every file these tests open is closed after each (hundreds of opens, two per test)."""
    opened: list[FileStorage] = []
    made = FileStorage.__init__

    def remembered(self: FileStorage, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(FileStorage, "__init__", remembered)
    yield
    for storage in opened:
        storage.close()


def _alone(path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    with monkeypatch.context() as patch:
        patch.setenv(worker_module.SETTING, "0")
        return Session.load(FileStorage(path))


WORKERS: list[int] = []  # the pids of the workers forked by `_with_worker`


def _with_worker(path: Path, monkeypatch: pytest.MonkeyPatch, share: float, chunk: int) -> tuple[Session, list[int]]:
    """A scan with a worker forced on this small file; also the ends of the blocks it handed over."""
    handed: list[int] = []
    blocks = worker_module.ScanWorker.blocks

    def spied(self: worker_module.ScanWorker):  # type: ignore[no-untyped-def]
        WORKERS.append(self.pid)
        for block in blocks(self):
            handed.append(block.end)
            yield block

    with monkeypatch.context() as patch:
        patch.setenv(worker_module.SETTING, "1")
        patch.setattr(worker_module, "SHARE", share)
        patch.setattr(worker_module, "CHUNK", chunk)
        patch.setattr(worker_module.ScanWorker, "blocks", spied)
        session = Session.load(FileStorage(path))
    return session, handed


def _assert_same(mine: Session, alone: Session) -> None:
    assert_indexed_alike(mine, alone)
    assert mine.warnings == alone.warnings
    a, b = mine.index, alone.index
    assert (list(a.anchor), list(a.records), list(a.parents)) == (list(b.anchor), list(b.records), list(b.parents))
    assert [a.settings.get(seq) for seq in range(len(a))] == [b.settings.get(seq) for seq in range(len(b))]
    assert (a.jumps(), a.orphans) == (b.jumps(), b.orphans)
    # How jumps were filed depends on where blocks ended (a parent may arrive after its child's
    # block); what a view shows must not.
    assert _rows(a) == _rows(b)
    assert list(a.timestamps) == list(b.timestamps)


def _rows(index: SessionIndex) -> list[tuple[int, int, int]]:
    return [(row.first, row.last, row.indent) for row in FoldedTree(index).rows]


def _no_children_left() -> None:
    """Every worker forked so far was reaped (other children of the test run, a database server
    say, are not ours to count)."""
    for pid in WORKERS:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("chunk", [200, 4096, 1 << 23])
@pytest.mark.parametrize("share", [0.1, 0.5, 0.75, 0.99])
@pytest.mark.parametrize("source", list(SOURCES))
def test_a_scan_shared_with_a_worker_indexes_as_a_scan_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, share: float, chunk: int) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(SOURCES[source]())
    alone = _alone(path, monkeypatch)
    mine, _ = _with_worker(path, monkeypatch, share, chunk)
    _assert_same(mine, alone)
    _no_children_left()


def test_the_worker_really_takes_a_part_and_the_file_is_left_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    data = b"\n".join([HEADER, *(line(entry).rstrip(b"\n") for entry in chain(3000))]) + b"\n"
    path.write_bytes(data)
    mine, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    assert len(handed) > 10 and handed[-1] == len(data)  # the worker's part, to the end, in many blocks
    _assert_same(mine, _alone(path, monkeypatch))
    assert path.read_bytes() == data


def test_a_worker_on_descriptors_past_1024_is_heard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([HEADER, *(line(entry).rstrip(b"\n") for entry in chain(3000))]) + b"\n")
    held = descriptors_past_1024()
    try:
        mine, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    finally:
        for fd in held:
            os.close(fd)
    assert len(handed) > 10
    _assert_same(mine, _alone(path, monkeypatch))


def test_the_worker_stops_at_the_first_line_it_refuses_and_the_daemon_goes_on_from_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    lines = [line(entry).rstrip(b"\n") for entry in chain(2000)]
    lines.insert(1800, b"not json")
    path.write_bytes(b"\n".join([HEADER, *lines]) + b"\n")
    mine, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    refused_at = len(HEADER) + 1 + sum(len(text) + 1 for text in lines[:1800])
    assert handed and handed[-1] == refused_at
    assert [w.kind for w in mine.warnings] == ["malformed"]
    _assert_same(mine, _alone(path, monkeypatch))


def _failing_worker(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Make the forked worker die or fall silent after handing over its first block."""
    write_all = worker_module._write_all
    sent: list[bytes] = []

    def failing(fd: int, data: bytes) -> int:
        if data[:1] in (b"B", b"S") and len(data) == 9:
            sent.append(data)
            if len(sent) == 2:
                if how == "dies":
                    os.kill(os.getpid(), signal.SIGKILL)
                time.sleep(60)  # a worker fallen silent (killed by the daemon long before)
        return write_all(fd, data)

    monkeypatch.setattr(worker_module, "_write_all", failing)


@pytest.mark.parametrize("how", ["dies", "falls silent"])
def test_a_worker_that_dies_or_falls_silent_leaves_its_part_to_the_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([HEADER, *(line(entry).rstrip(b"\n") for entry in chain(3000))]) + b"\n")
    alone = _alone(path, monkeypatch)
    monkeypatch.setattr(worker_module, "SILENCE_SECONDS", 0.5)
    _failing_worker(monkeypatch, how)
    mine, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    assert len(handed) == 1  # one block arrived whole and was kept; the rest the daemon scanned
    _assert_same(mine, alone)
    _no_children_left()


def test_a_file_that_grows_while_it_is_opened_is_indexed_up_to_the_size_it_had(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pi appends without a lock: lines after the size the open read are left for the next refresh."""
    path = tmp_path / "s.jsonl"
    entries = chain(3000)
    path.write_bytes(b"\n".join([HEADER, *(line(entry).rstrip(b"\n") for entry in entries)]) + b"\n")
    size = path.stat().st_size
    scan = worker_module.scan

    def growing(*args: Any) -> None:
        with path.open("ab") as file:
            file.write(line(chain(1, 3000)[0]))
        scan(*args)

    monkeypatch.setattr(worker_module, "scan", growing)
    mine, _ = _with_worker(path, monkeypatch, 0.75, 4096)
    assert mine.end == size and len(mine.index) == 3000
    assert len(mine.refresh()) == 1 and len(mine.index) == 3001


@pytest.mark.parametrize(
    "parents",
    [["a", "b", "c"], [None, "a", None], ["", "a", None], ["x\ny", "a", "b"]],
)
def test_packed_columns_come_back_as_they_went(parents: list[str | None]) -> None:
    ids = ["a", "b\nc", "d"] if parents[0] == "x\ny" else ["a", "b", "c"]
    stamps: list[Any] = ["t1", "t2", "t3"] if parents[1] == "a" and parents[0] == "a" else ["t", 5, None]
    kinds = [("message", "user"), ("message", "assistant"), ("label", None)]
    settings: list[tuple[int, Any]] = [(1, ("p", "m")), (2, ("target", {"unhashable": True}))] if parents[0] is None else [(1, ("p", "m"))]
    block = unpack(pack(ids, parents, kinds, stamps, [10, 20, 30], [9, 9, 9], settings))
    assert (block.offset, block.end) == (10, 40)
    assert (block.ids, block.parents, block.timestamps) == (ids, parents, stamps)
    assert [block.kinds[code] for code in block.kind_codes] == kinds
    codes = block.setting_codes if block.setting_codes is not None else range(len(block.settings))
    assert [(at, block.settings[code]) for at, code in zip(block.setting_at, codes, strict=True)] == settings
    assert (list(block.offsets), list(block.lengths)) == ([10, 20, 30], [9, 9, 9])


def test_the_worker_holds_only_the_descriptors_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork lets go of the client's pipes, sockets and other sessions at once: a client sees
    the end of a daemon killed during an open, and no other file stays locked by the worker."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([HEADER, *(line(entry).rstrip(b"\n") for entry in chain(3000))]) + b"\n")
    report = tmp_path / "descriptors.json"
    scan = worker_module.scan

    def looking(storage: FileStorage, start: int, end: int, frames: int, notify: int) -> None:
        held = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))  # the listing's own one among them
        standard = [os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 1, 2)]
        report.write_text(json.dumps({"held": held, "standard": standard, "needed": [storage.fd, frames, notify]}))
        scan(storage, start, end, frames, notify)

    monkeypatch.setattr(worker_module, "scan", looking)
    other = os.open(tmp_path / "another-session", os.O_CREAT | os.O_RDWR)
    try:
        _, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    finally:
        os.close(other)
    assert handed
    seen = json.loads(report.read_text())
    assert seen["standard"] == [os.devnull] * 3
    extra = set(seen["held"]) - {0, 1, 2, *seen["needed"]}
    assert len(extra) <= 1 and other not in extra  # at most the descriptor the listing itself used


@pytest.mark.parametrize(("line_bytes", "share"), [(100, 0.86), (500, 0.86), (925, 0.805), (1350, 0.75), (5000, 0.75)])
def test_the_worker_takes_more_of_a_file_of_short_lines(tmp_path: Path, line_bytes: int, share: float) -> None:
    """The daemon indexes every entry the worker decodes: the more lines a megabyte holds, the
    more of the bytes the worker takes."""
    path = tmp_path / "s.jsonl"
    path.write_bytes((b"x" * (line_bytes - 1) + b"\n") * (4 * 1024 * 1024 // line_bytes))
    storage = FileStorage(path)
    assert worker_module._share(storage, 0, path.stat().st_size) == pytest.approx(share, abs=0.005)


@pytest.mark.parametrize("when", ["before the worker maps it", "while the worker reads it"])
def test_a_file_cut_short_under_the_worker_is_read_by_the_daemon_to_where_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Another program cuts the file during the open: the worker fails (an error, or a fault on a
    page of its mapping that is gone) and the daemon reads on to where the file now ends."""
    path = tmp_path / "s.jsonl"
    lines = [HEADER, *(line(entry).rstrip(b"\n") for entry in chain(3000))]
    path.write_bytes(b"\n".join(lines) + b"\n")
    cut = len(b"\n".join(lines[:2800])) + 1  # a line end late in the worker's part
    calls: list[int] = []

    def cut_short() -> None:
        with path.open("r+b") as file:
            file.truncate(cut)

    if when == "before the worker maps it":
        scan = worker_module.scan
        monkeypatch.setattr(worker_module, "scan", lambda *args: (cut_short(), scan(*args)))
    else:
        decode = worker_module.skeletons

        def decode_then_cut(*args: Any) -> Any:
            calls.append(1)
            if len(calls) == 3:
                cut_short()
            return decode(*args)

        monkeypatch.setattr(worker_module, "skeletons", decode_then_cut)
    mine, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    assert not handed or handed[-1] <= cut
    assert (mine.end, len(mine.index)) == (cut, 2799)
    _assert_same(mine, _alone(path, monkeypatch))
    _no_children_left()


def test_a_block_that_cannot_be_read_leaves_the_rest_to_the_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never expected (the worker is our own code), but a block that does not unpack must not fail
    the open: the daemon reads on from the last block that did."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([HEADER, *(line(entry).rstrip(b"\n") for entry in chain(3000))]) + b"\n")
    unpacked: list[int] = []
    unpack_block = worker_module.unpack

    def second_fails(body: bytes) -> Any:
        unpacked.append(1)
        if len(unpacked) == 2:
            raise pickle.UnpicklingError("a damaged block")
        return unpack_block(body)

    monkeypatch.setattr(worker_module, "unpack", second_fails)
    mine, handed = _with_worker(path, monkeypatch, 0.75, 4096)
    assert len(handed) == 1
    _assert_same(mine, _alone(path, monkeypatch))
    _no_children_left()
