"""Session files for the scan's exactness tests: the damaged and unusual files pi-quirks
describes, plain conversations, and damage mixed in where a block of lines can cut it."""

from __future__ import annotations

import json
import random
from pathlib import Path

from sessiontree.errors import NotASessionFile
from sessiontree.store import MemoryStorage, Session, file_version
from support.messages import assistant, line, user
from support.sessions import PI_QUIRK_CASES


def _version(path: Path) -> int | None:
    return file_version(MemoryStorage(path.read_bytes()))


def _opens(path: Path) -> bool:
    try:
        Session.load(MemoryStorage(path.read_bytes()))
    except NotASessionFile:
        return False
    return True


# The damaged and unusual files pi-quirks describes, those that open as v3 sessions as they are.
QUIRK_FILES = sorted(path for path in PI_QUIRK_CASES.glob("*.jsonl") if _version(path) == 3 and _opens(path))


def chain(count: int, start: int = 0) -> list[dict]:
    """A conversation of `count` entries with a branch and a label, ids e0000000..."""
    entries: list[dict] = []
    for n in range(start, start + count):
        parent = f"e{n - 1:07d}" if n else None
        if n % 7 == 5:
            parent = f"e{n - 3:07d}"  # a branch
        make = assistant if n % 2 else user
        entries.append(make(f"e{n:07d}", parent, f"text {n}", second=n))
    return entries


def damaged_mix() -> bytes:
    """Lines the quick way refuses among lines it takes, in every order a block can cut them:
    blanks, malformed and torn lines, a second header, odd field types, a repeated id, a label
    before its target, a child before its parent, its own parent, an empty parent id."""
    entries = chain(40)
    lines = [line(entry).rstrip(b"\n") for entry in entries]
    odd = [
        b"",
        b"   ",
        b"not json",
        lines[3][: len(lines[3]) // 2] + lines[4],  # a torn line glued to the next
        json.dumps({"type": "session", "version": 3, "id": "second", "timestamp": "t", "cwd": "/"}).encode(),
        json.dumps({"type": "message", "id": 7, "parentId": None, "timestamp": "t"}).encode(),
        json.dumps({"type": "message", "id": "e0000001", "parentId": "e0000000", "timestamp": "t", "message": {"role": "user"}}).encode(),
        json.dumps({"type": "label", "id": "lab1", "parentId": "e0000002", "timestamp": "t", "targetId": "later01", "label": "x"}).encode(),
        json.dumps({"type": "message", "id": "child01", "parentId": "later01", "timestamp": "t", "message": {"role": "assistant"}}).encode(),
        json.dumps({"type": "message", "id": "later01", "parentId": "e0000005", "timestamp": "t", "message": {"role": "user"}}).encode(),
        json.dumps({"type": "custom", "id": "self01", "parentId": "self01", "timestamp": "t"}).encode(),
        json.dumps({"type": "custom", "id": "empty01", "parentId": "", "timestamp": "t"}).encode(),
        json.dumps({"type": "message", "id": "m01", "parentId": "e0000006", "timestamp": "t", "message": "text"}).encode(),
        json.dumps({"type": "session_info", "id": "n01", "parentId": "e0000006", "timestamp": "t"}).encode(),
        json.dumps({"type": "thinking_level_change", "id": "t01", "parentId": "n01", "timestamp": "t", "thinkingLevel": None}).encode(),
        b'{"type":"message","id":"dup1","parentId":null,"timestamp":"t","id":"dup2"}',
        # a role only counts on a message; a setting only where pi reads one
        json.dumps({"type": "custom", "id": "cm01", "parentId": "e0000007", "timestamp": "t", "message": {"role": "assistant", "model": "x"}}).encode(),
        json.dumps({"type": "message", "id": "r01", "parentId": "e0000008", "timestamp": "t", "message": {"role": 5}}).encode(),
        json.dumps({"type": "message", "id": "r02", "parentId": "r01", "timestamp": "t", "message": {"role": "assistant"}}).encode(),
        json.dumps({"type": "model_change", "id": "mc01", "parentId": "r02", "timestamp": "t"}).encode(),
        json.dumps({"type": "label", "id": "lab2", "parentId": "mc01", "timestamp": "t", "targetId": "e0000009"}).encode(),
    ]
    rng = random.Random(5)
    mixed = lines[:]
    for item in odd:
        mixed.insert(rng.randrange(len(mixed) + 1), item)
    header = json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}).encode()
    return b"\n".join([header, *mixed]) + b"\n"
