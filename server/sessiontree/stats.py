"""What a session (or a project's sessions) holds and cost: counts from the index, usage from the
assistant lines alone.

Entries, messages by role, types, compactions and branch points come from the index's columns
without reading the file. Tokens, cost, models and tool calls need the assistant messages: only
those lines are read, and decoded into a narrow shape that skips their text.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from .store import SessionIndex

TOKEN_KINDS = ("input", "output", "cacheRead", "cacheWrite")


class _Cost(msgspec.Struct, gc=False):
    input: float = 0
    output: float = 0
    cacheRead: float = 0  # pi's field names
    cacheWrite: float = 0
    total: float = 0


class _Usage(msgspec.Struct, gc=False):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    cost: _Cost | None = None


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    name: Any = None


class _Assistant(msgspec.Struct, gc=False):
    timestamp: Any = None  # the message's own time (ms), as the agent stamped it
    provider: Any = None
    model: Any = None
    usage: msgspec.Raw = msgspec.Raw(b"null")  # decoded on its own: odd usage must not lose the tool calls
    content: list[_Block] | str | None = None


class _Line(msgspec.Struct, gc=False):
    timestamp: Any = None
    message: _Assistant | None = None


_decode = msgspec.json.Decoder(_Line).decode
_decode_usage = msgspec.json.Decoder(_Usage).decode
_NUMBERS = 9  # four kinds of tokens, then the cost of each and the total
_ZERO: tuple[float, ...] = (0.0,) * _NUMBERS


class Facts:
    """What one assistant message adds: its model, its day, its numbers, its tool calls."""

    __slots__ = ("day", "model", "numbers", "tools")

    def __init__(self, model: str, day: str, numbers: tuple[float, ...], tools: list[str]) -> None:
        self.model, self.day, self.numbers, self.tools = model, day, numbers, tools


def facts_of(raw: bytes) -> Facts | None:
    try:
        line = _decode(raw)
    except (msgspec.MsgspecError, RecursionError):  # an odd line: counted as a message, nothing more
        return None
    message = line.message
    if message is None:
        return None
    model = "/".join(part for part in (message.provider, message.model) if isinstance(part, str)) or "unknown"
    day = _day(message.timestamp, line.timestamp)
    tools = []
    if isinstance(message.content, list):
        tools = [block.name if isinstance(block.name, str) else "?" for block in message.content if block.type == "toolCall"]
    return Facts(model, day, _numbers(message.usage), tools)


def _day(message_ms: Any, entry_iso: Any) -> str:
    """The UTC day of the message's own time, else of the entry's."""
    if isinstance(message_ms, int | float) and not isinstance(message_ms, bool) and 0 <= message_ms < 2**53:
        return time.strftime("%Y-%m-%d", time.gmtime(message_ms / 1000))
    return entry_iso[:10] if isinstance(entry_iso, str) and len(entry_iso) >= 10 else "unknown"


def _numbers(usage: msgspec.Raw) -> tuple[float, ...]:
    try:
        found = _decode_usage(usage)
    except msgspec.MsgspecError:  # not an object of numbers: no usage
        return _ZERO
    cost = found.cost or _Cost()
    return (found.input, found.output, found.cacheRead, found.cacheWrite, cost.input, cost.output,
            cost.cacheRead, cost.cacheWrite, cost.total)


def _totals(bucket: list[float]) -> dict[str, Any]:
    tokens = {kind: int(bucket[1 + n]) for n, kind in enumerate(TOKEN_KINDS)}
    tokens["total"] = sum(tokens.values())
    cost = {kind: round(bucket[5 + n], 6) for n, kind in enumerate((*TOKEN_KINDS, "total"))}
    return {"assistantMessages": int(bucket[0]), "tokens": tokens, "cost": cost}


def _sum(buckets: Iterable[list[float]]) -> list[float]:
    total = [0.0] * (1 + _NUMBERS)
    for bucket in buckets:
        for position, value in enumerate(bucket):
            total[position] += value
    return total


class Stats:
    """The figures of a set of entries; `merge` adds another set (a project's sessions)."""

    def __init__(self) -> None:
        self.entries = 0
        self.types: Counter[str] = Counter()
        self.roles: Counter[str] = Counter()
        self.tool_calls: Counter[str] = Counter()
        self.compactions = 0
        self.branch_points = 0
        self.buckets: dict[tuple[str, str], list[float]] = {}  # (model, day) -> [messages, numbers...]

    def add(self, facts: Facts) -> None:
        bucket = self.buckets.get((facts.model, facts.day))
        if bucket is None:
            bucket = self.buckets[(facts.model, facts.day)] = [0.0] * (1 + _NUMBERS)
        bucket[0] += 1
        for position, value in enumerate(facts.numbers, start=1):
            bucket[position] += value
        self.tool_calls.update(facts.tools)

    def merge(self, other: Stats) -> None:
        self.entries += other.entries
        self.types.update(other.types)
        self.roles.update(other.roles)
        self.tool_calls.update(other.tool_calls)
        self.compactions += other.compactions
        self.branch_points += other.branch_points
        for key, bucket in other.buckets.items():
            self.buckets[key] = _sum([self.buckets.get(key, [0.0] * (1 + _NUMBERS)), bucket])

    def wire(self) -> dict[str, Any]:
        by_model: dict[str, list[list[float]]] = {}
        by_day: dict[str, list[list[float]]] = {}
        for (model, day), bucket in self.buckets.items():
            by_model.setdefault(model, []).append(bucket)
            by_day.setdefault(day, []).append(bucket)
        return {
            "entries": self.entries,
            "types": dict(sorted(self.types.items())),
            "messagesByRole": dict(sorted(self.roles.items())),
            "toolCalls": dict(self.tool_calls.most_common()),
            "compactions": self.compactions,
            "branchPoints": self.branch_points,
            "usage": _totals(_sum(self.buckets.values())),
            "byModel": {key: _totals(_sum(found)) for key, found in sorted(by_model.items())},
            "byDay": {key: _totals(_sum(found)) for key, found in sorted(by_day.items())},
        }


def collect(
    index: SessionIndex, seqs: Iterable[int], read: Callable[[int, int], bytes], known: dict[int, Facts | None]
) -> Stats:
    """The figures of the entries at `seqs`; `read(offset, length)` reads a line's bytes, and
    `known` keeps what each assistant line said, so a second set (the path) reads nothing again."""
    stats = Stats()
    kinds, codes, offsets, lengths = index.kinds.values, index.kinds.codes, index.offsets, index.lengths
    for seq in seqs:
        entry_type, role = kinds[codes[seq]]
        stats.entries += 1
        stats.types[entry_type] += 1
        if entry_type == "compaction":
            stats.compactions += 1
        if entry_type == "message" and role is not None:
            stats.roles[role] += 1
            if role == "assistant":
                facts = known[seq] if seq in known else known.setdefault(seq, facts_of(read(offsets[seq], lengths[seq])))
                if facts is not None:
                    stats.add(facts)
    return stats
