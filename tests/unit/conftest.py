"""Fixtures for the domain tests: every store test runs against both storages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.store import FileStorage, MemoryStorage, Storage
from support.sessions import StorageFactory


@pytest.fixture(params=["memory", "file"])
def make_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageFactory]:
    """Every store test runs against the in-memory and the real-file storage."""
    opened: list[Storage] = []

    def make(data: bytes) -> Storage:
        storage: Storage
        if request.param == "memory":
            storage = MemoryStorage(data)
        else:
            path = tmp_path / f"s{len(opened)}.jsonl"
            path.write_bytes(data)
            storage = FileStorage(path)
        opened.append(storage)
        return storage

    yield make
    for storage in opened:
        storage.close()
