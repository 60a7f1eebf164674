"""Session files for tests: headers, whole files from entries (support/messages builds those), and
storages another writer changes behind the daemon's back."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessiontree.store import FileStorage, MemoryStorage, Storage
from support.messages import line

from . import postgres

PI_QUIRK_CASES = Path(__file__).resolve().parents[1] / "fixtures" / "pi-quirks"
HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "11111111-2222-4333-8444-555555555555",
    "timestamp": "2025-01-01T00:00:00.000Z",
    "cwd": "/home/user/project",
}


def session_bytes(*entries: dict[str, Any], header: dict[str, Any] | None = None) -> bytes:
    return line(header or HEADER) + b"".join(line(entry) for entry in entries)


# The header `session_file` writes: a session of the cwd /w.
SESSION_FILE_HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "beside-pi",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "/w",
}


def session_file(root: Path, name: str = "s.jsonl", *entries: dict[str, Any]) -> Path:
    """A session file in pi's layout under `root` (`--w--/<name>`), for a daemon to open."""
    path = root / "--w--" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(line(SESSION_FILE_HEADER) + b"".join(line(e) for e in entries))
    return path


def write_session(root: Path, cwd: str, name: str, *entries: dict[str, Any], session_id: str | None = None) -> Path:
    """A session file in pi's layout: `<root>/--<cwd>--/<name>.jsonl` (its id `id-<name>` unless given)."""
    directory = root / f"--{cwd.strip('/').replace('/', '-')}--"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    header = {**HEADER, "id": session_id or f"id-{name}", "cwd": cwd}
    path.write_bytes(line(header) + b"".join(line(e) for e in entries))
    return path


StorageFactory = Callable[[bytes], Storage]


def contents(storage: Storage) -> bytes:
    return storage.read(0, storage.size())


def other_writer_appends(storage: Storage, data: bytes) -> None:
    """Bytes another process appends without a lock, as pi does."""
    if isinstance(storage, MemoryStorage):
        storage.data += data
    elif isinstance(storage, FileStorage):
        with open(storage.name, "ab") as out:
            out.write(data)
    else:
        postgres.other_daemon_appends(storage, data)


def other_writer_truncates(storage: Storage, size: int) -> None:
    if isinstance(storage, MemoryStorage):
        del storage.data[size:]
    elif isinstance(storage, FileStorage):
        os.truncate(storage.name, size)
    else:
        postgres.other_program_rewrites(storage, contents(storage)[:size])


def descriptors_past_1024() -> list[int]:
    """Open descriptors until the next one is past 1024, where `select` fails (a daemon holding
    many sessions gets there); the caller closes them. Skips when the limit does not allow it."""
    import resource

    import pytest

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 1100:
        pytest.skip(f"the descriptor limit is {soft}")
    held: list[int] = []
    while not held or held[-1] < 1030:
        held.append(os.open(os.devnull, os.O_RDONLY))
    return held
