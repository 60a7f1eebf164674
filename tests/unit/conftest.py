"""Fixtures for the domain tests: every store test runs against both storages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.store import FileStorage, MemoryStorage, Storage
from support import postgres
from support.sessions import StorageFactory


@pytest.fixture(params=["memory", "file", "postgresql"])
def make_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageFactory]:
    """Every store test runs against the in-memory storage, the real file and a session in PostgreSQL."""
    dsn = request.getfixturevalue("pg_dsn") if request.param == "postgresql" else ""
    opened: list[Storage] = []

    def make(data: bytes) -> Storage:
        storage: Storage
        if request.param == "memory":
            storage = MemoryStorage(data)
        elif request.param == "postgresql":
            storage = postgres.storage_with(dsn, data, f"s{len(opened)}.jsonl")
        else:
            path = tmp_path / f"s{len(opened)}.jsonl"
            path.write_bytes(data)
            storage = FileStorage(path)
        opened.append(storage)
        return storage

    yield make
    for storage in opened:
        storage.close()
