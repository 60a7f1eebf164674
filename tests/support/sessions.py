"""Builders of session files for tests: lines as pi writes them, and ready-made entries."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sessiontree.store import FileStorage, MemoryStorage, Storage

from . import postgres

PI_QUIRK_CASES = Path(__file__).resolve().parents[1] / "fixtures" / "pi-quirks"
HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "11111111-2222-4333-8444-555555555555",
    "timestamp": "2025-01-01T00:00:00.000Z",
    "cwd": "/home/user/project",
}


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def ts(second: int) -> str:
    return f"2025-01-01T00:{second // 60:02d}:{second % 60:02d}.000Z"


def user(entry_id: str, parent: str | None, text: str, second: int = 1) -> dict[str, Any]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1735689600000 + second * 1000}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts(second), "message": message}


def assistant(entry_id: str, parent: str | None, text: str, second: int = 2, model: str = "m1") -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": model,
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
        "stopReason": "stop",
        "timestamp": 1735689600000 + second * 1000,
    }
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts(second), "message": message}


def session_bytes(*entries: dict[str, Any], header: dict[str, Any] | None = None) -> bytes:
    return line(header or HEADER) + b"".join(line(entry) for entry in entries)


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
