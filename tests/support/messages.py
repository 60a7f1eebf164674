"""Entries and messages in pi's shapes, for every test that writes or appends them.

Entries with an id and a parent are lines of a file (`line` writes them as pi does); a bare
entry (`user_entry`) is what a client appends, the daemon giving it id, parent and time.
"""

from __future__ import annotations

import json
from typing import Any

BASE_MS = 1735689600000  # 2025-01-01T00:00:00Z, the time `ts(0)` names


def line(value: dict[str, Any]) -> bytes:
    """One line as pi's JSON.stringify writes it: compact, non-ASCII as it is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def ts(second: int) -> str:
    return f"2025-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def entry(kind: str, entry_id: str, parent: str | None, second: int, **fields: Any) -> dict[str, Any]:
    """An entry of any type, at `second` past BASE_MS."""
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": ts(second), **fields}


def user(entry_id: str, parent: str | None, text: str, second: int = 1) -> dict[str, Any]:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": BASE_MS + second * 1000}
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
        "timestamp": BASE_MS + second * 1000,
    }
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts(second), "message": message}


def plain_user(entry_id: str, parent: str | None, text: str = "hi") -> dict[str, Any]:
    """A user entry with its content a plain string (pi takes both), as the other writers write."""
    message = {"role": "user", "content": text, "timestamp": 1}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z", "message": message}


def user_entry(text: str) -> dict[str, Any]:
    """A user message to append: no id, parent or time (the daemon gives them)."""
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}
