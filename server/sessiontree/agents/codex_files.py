"""Codex CLI's rollout files: which file is which thread and segment, and how segments chain.

A thread is one or more files `rollout-<time>-<thread id>[_<segment id>].jsonl`: the first has no
segment id; a rewind writes a new segment of the same thread whose `session_meta.history_base`
points into an earlier file; a fork is a new thread whose first file points into another thread's.
A file's history is its base's lines before `end_ordinal_exclusive`, then its own lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import attrs

_NAME: Final = re.compile(
    r"^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-"
    r"(?P<thread>[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})"
    r"(?:_(?P<segment>[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}))?\.jsonl$"
)
SESSION_INDEX: Final = "session_index.jsonl"


@attrs.frozen
class RolloutName:
    thread_id: str
    segment_id: str | None  # None: the thread's first file

    @property
    def key(self) -> str:
        """What a line's synthesized id starts with: ordinals repeat across segments, not across keys."""
        return self.segment_id or self.thread_id

    @property
    def order(self) -> tuple[int, str]:
        """Files of one thread in the order they were made (segment ids are time-ordered v7 UUIDs)."""
        return (0, "") if self.segment_id is None else (1, self.segment_id)


def rollout_name(path: Path) -> RolloutName | None:
    found = _NAME.match(path.name)
    if found is None:
        return None
    return RolloutName(found["thread"].lower(), found["segment"].lower() if found["segment"] else None)


@attrs.frozen
class Line:
    """One whole line of a rollout: its ordinal in the thread (its index in legacy files)."""

    ordinal: int
    offset: int  # byte offset of the line in its file
    value: dict[str, Any] | None  # None: not a JSON object
    text: bytes


def lines_of(data: bytes) -> Iterator[Line]:
    """The whole lines of a file; a last line without its newline is still being written."""
    offset, index = 0, 0
    while True:
        end = data.find(b"\n", offset)
        if end < 0:
            return
        text = data[offset:end]
        if text.strip():
            value: Any
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            value = value if isinstance(value, dict) else None
            ordinal = value.get("ordinal") if value is not None else None
            yield Line(ordinal if isinstance(ordinal, int) else index, offset, value, text)
            index += 1
        offset = end + 1


def session_meta(line: Line | None) -> dict[str, Any]:
    """The payload of a file's `session_meta` line ({} when the first line is not one)."""
    if line is None or line.value is None or line.value.get("type") != "session_meta":
        return {}
    payload = line.value.get("payload")
    return payload if isinstance(payload, dict) else {}


@attrs.frozen
class Base:
    thread_id: str
    end_ordinal: int
    end_offset: int | None


def history_base(meta: dict[str, Any]) -> Base | None:
    base = meta.get("history_base")
    if not isinstance(base, dict):
        return None
    thread, end = base.get("thread_id"), base.get("end_ordinal_exclusive")
    if not isinstance(thread, str) or not isinstance(end, int):
        return None
    offset = base.get("end_byte_offset")
    return Base(thread.lower(), end, offset if isinstance(offset, int) else None)


@attrs.define
class Rollout:
    """One rollout file, read."""

    path: Path
    name: RolloutName
    lines: list[Line]

    @property
    def meta(self) -> dict[str, Any]:
        return session_meta(self.lines[0] if self.lines else None)

    @property
    def base(self) -> Base | None:
        return history_base(self.meta)


def base_file(base: Base, candidates: list[Rollout], before: Rollout) -> Rollout | None:
    """The file `base` points into: of its thread, the one whose line at `end_byte_offset` has the
    ordinal `end_ordinal_exclusive`; failing that, the newest older one holding ordinal end - 1."""
    same = [c for c in candidates if c.name.thread_id == base.thread_id and c is not before]
    for candidate in same:
        if any(line.offset == base.end_offset and line.ordinal == base.end_ordinal for line in candidate.lines):
            return candidate
    older = [c for c in same if c.name.thread_id != before.name.thread_id or c.name.order < before.name.order]
    holding = [c for c in older if any(line.ordinal == base.end_ordinal - 1 for line in c.lines)]
    return max(holding, key=lambda c: c.name.order) if holding else None


def chain(rollout: Rollout, files: list[Rollout], end: int | None = None, depth: int = 0) -> list[tuple[str, Line]]:
    """The lines of `rollout`'s history (before ordinal `end`), each with its file's key."""
    own = [(rollout.name.key, line) for line in rollout.lines if end is None or line.ordinal < end]
    base = rollout.base
    if base is None or depth > len(files):  # a loop of bases is cut (files point only backwards)
        return own
    parent = base_file(base, files, rollout)
    if parent is None:
        return own
    return chain(parent, files, base.end_ordinal, depth + 1) + own


def names_in(index: bytes, thread_id: str) -> list[tuple[int, str, str]]:
    """(line number, updated_at, name) of `session_index.jsonl` lines for the thread, in file order."""
    found = []
    for number, line in enumerate(lines_of(index)):
        value = line.value or {}
        if str(value.get("id", "")).lower() == thread_id and isinstance(value.get("thread_name"), str):
            updated = value.get("updated_at")
            found.append((number, updated if isinstance(updated, str) else "", value["thread_name"]))
    return found

