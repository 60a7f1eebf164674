"""Crashes, power loss and refused writes, from seeds: nothing acknowledged is lost."""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import StorageError
from sessiontree.protocol import UNSET
from sessiontree.store import FileStorage, MemoryStorage, Session
from support.faults import CrashingStorage, FailingStorage
from support.messages import line
from support.sessions import HEADER

SEEDS = range(200)


def _random_entry(rng: random.Random) -> dict[str, Any]:
    size = rng.choice([10, 100, 1000, 20_000])
    text = "".join(rng.choices("abcdé 😀\n\"\\", k=size))
    return {"type": "message", "message": {"role": rng.choice(["user", "assistant"]), "content": text, "timestamp": 1}}


def _append_randomly(session: Session, storage: Any, rng: random.Random, steps: int) -> list[dict[str, Any]]:
    """Appends (sometimes below an earlier entry); returns every acknowledged entry as written."""
    acknowledged: list[dict[str, Any]] = []
    for _ in range(steps):
        parent = rng.choice([UNSET, *[e["id"] for e in acknowledged[-5:]]]) if acknowledged else UNSET
        try:
            written, _ = session.append([_random_entry(rng)], parent=parent)
        except StorageError:
            continue
        acknowledged.append(written[0].entry)
        if rng.random() < 0.2:
            storage.sync()
    return acknowledged


def _entries_of(data: bytes) -> tuple[Session, MemoryStorage, dict[str, dict[str, Any]]]:
    storage = MemoryStorage(data)
    session = Session.load(storage)
    return session, storage, {node.id: session.entry(node) for node in session.index.nodes}


@pytest.mark.parametrize("seed", SEEDS)
def test_after_a_crash_every_acknowledged_entry_that_reached_the_disk_is_there(seed: int) -> None:
    rng = random.Random(seed)
    durability = rng.choice(["os", "fsync"])
    storage = CrashingStorage(line(HEADER), durability)
    acknowledged = _append_randomly(Session.load(storage), storage, rng, rng.randint(1, 12))
    power_loss = rng.random() < 0.5
    image = storage.after_power_loss(rng) if power_loss else storage.after_process_kill()

    session, after, found = _entries_of(image)
    survivors = [e for e in acknowledged if e["id"] in found]
    assert all(found[e["id"]] == e for e in survivors)  # byte-identical in content, never mangled
    assert survivors == acknowledged[: len(survivors)]  # only the newest can be missing
    if durability == "fsync" or not power_loss:
        assert survivors == acknowledged
    assert bytes(after.data) == image  # no byte dropped
    assert all(node.parent_id is None or node.parent_id in found for node in session.index.nodes)
    written, _ = session.append([{"type": "custom", "customType": "after the crash"}])
    assert Session.load(MemoryStorage(bytes(after.data))).index.leaf_id == written[0].node.id


@pytest.mark.parametrize("seed", range(100))
def test_refused_writes_fail_the_call_and_change_nothing(seed: int) -> None:
    rng = random.Random(seed)
    storage = FailingStorage(line(HEADER), rng, failure_rate=0.3)
    session = Session.load(storage)
    acknowledged = _append_randomly(session, storage, rng, 20)
    assert [node.id for node in session.index.nodes] == [e["id"] for e in acknowledged]
    _, _, found = _entries_of(bytes(storage.data))
    assert list(found.values()) == acknowledged


def test_a_short_write_is_left_and_fenced_never_cut_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cutting it back would also cut whatever another writer appended after it."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(HEADER))
    session = Session.load(FileStorage(path))
    session.append([{"type": "custom", "customType": "before"}])
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(StorageError, match="No space left"):
        session.append([{"type": "custom", "customType": "lost"}])
    monkeypatch.setattr(os, "write", real_write)
    partial = path.read_bytes()[len(before) :]
    assert partial and b"\n" not in partial
    written, _ = session.append([{"type": "custom", "customType": "after"}])  # space came back
    assert path.read_bytes().startswith(before + partial + b"\n")
    reopened = Session.load(FileStorage(path))
    assert [w.kind for w in reopened.warnings] == ["malformed"] and reopened.index.leaf_id == written[0].node.id
    assert [n.type for n in reopened.index.nodes] == ["custom", "custom"]
