"""What a session (or a project's sessions) holds and cost: counts from the index, usage from the
few lines that carry it.

Entries, messages by role, types, compactions and branch points come from the index's columns
without reading the file. Tokens, cost, models and tool calls are read from the lines pi's cost
breakdown (`getUsageCostBreakdown`, `getSessionStats`) counts: assistant messages, `usage` entries,
tool results, compactions and branch summaries that carry a `usage`. Only those lines are read,
decoded into a narrow shape that skips their text.

A session file is input from anywhere: a usage number that is not a finite JSON number (a string,
a boolean, null, 1e309, an integer JavaScript reads as Infinity) is skipped and counted as skipped,
never turned into NaN, Infinity or an error; so is one whose addition would overflow a total.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from .store import SessionIndex

TOKEN_KINDS: Final = ("input", "output", "cacheRead", "cacheWrite")
COST_KINDS: Final = (*TOKEN_KINDS, "total")
# pi's key for usage no model is named for: tool results', compactions' and branch summaries'.
UNATTRIBUTED: Final = "Tools/summaries"
_MAX_SAFE_INTEGER: Final = 2**53 - 1
# Values below this in size cannot overflow a total by being added, short of 10^8 of them.
_LARGE: Final = 1e300


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    name: Any = None


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    timestamp: Any = None  # the message's own time (ms), as the agent stamped it
    provider: Any = None
    model: Any = None
    responseModel: Any = None  # pi's field name: the model that answered (a router's choice)
    usage: msgspec.Raw = msgspec.Raw(b"null")  # decoded on its own: odd usage must not lose the tool calls
    content: list[_Block] | str | None = None


class _Line(msgspec.Struct, gc=False):
    timestamp: Any = None
    message: _Message | None = None
    provider: Any = None  # a `usage` entry's
    model: Any = None
    usage: msgspec.Raw = msgspec.Raw(b"null")  # a `usage`, `compaction` or `branch_summary` entry's


class _OddMessage(_Message, gc=False):
    content: Any = None  # content of another shape: no tool calls, but the usage still counts


class _OddLine(_Line, gc=False):
    message: _OddMessage | None = None


class _PlainCost(msgspec.Struct, gc=False):
    input: float = 0.0
    output: float = 0.0
    cacheRead: float = 0.0
    cacheWrite: float = 0.0
    total: float = 0.0


class _PlainUsage(msgspec.Struct, gc=False):
    """The usual usage, all numbers: decoded in one go (the checked way below is for the others)."""

    input: float = 0.0
    output: float = 0.0
    cacheRead: float = 0.0
    cacheWrite: float = 0.0
    cost: _PlainCost = msgspec.field(default_factory=_PlainCost)


class _Usage(msgspec.Struct, gc=False):
    input: Any = msgspec.UNSET  # absent (UNSET) adds nothing; null, like any non-number, is skipped
    output: Any = msgspec.UNSET
    cacheRead: Any = msgspec.UNSET  # pi's field names
    cacheWrite: Any = msgspec.UNSET
    cost: Any = msgspec.UNSET


_decode_line = msgspec.json.Decoder(_Line).decode
_decode_odd_line = msgspec.json.Decoder(_OddLine).decode
_decode_plain_usage = msgspec.json.Decoder(_PlainUsage).decode
_decode_usage = msgspec.json.Decoder(_Usage).decode
_decode_fields = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode  # the fallback, field by field
_decode_any = msgspec.json.decode
_NUMBERS: Final = 9  # four kinds of tokens, then the cost of each and the total
_ZERO: Final[tuple[float, ...]] = (0.0,) * _NUMBERS


# --------------------------------------------------------------------------- one line


class Facts:
    """What one line adds: its key (provider/model, or UNATTRIBUTED), its day, its numbers, the
    numbers it skipped, its tool calls, and whether it is an assistant message."""

    __slots__ = ("assistant", "day", "model", "numbers", "skipped", "tools", "usage")

    def __init__(
        self, model: str, day: str, numbers: tuple[float, ...], tools: list[str], *, assistant: bool = True,
        usage: bool = True, skipped: int = 0,
    ) -> None:
        self.model, self.day, self.numbers, self.tools = model, day, numbers, tools
        self.assistant, self.usage, self.skipped = assistant, usage, skipped


def facts_of(raw: bytes, entry_type: str = "message", role: str | None = "assistant") -> Facts | None:
    """What a line of this type (and message role) adds to the figures, or None for nothing."""
    try:
        line: _Line = _decode_line(raw)
    except (msgspec.MsgspecError, RecursionError):
        try:
            line = _decode_odd_line(raw)
        except (msgspec.MsgspecError, RecursionError):  # an odd line: counted by type and role, nothing more
            return None
    if entry_type == "message":
        message = line.message
        if message is None:
            return None
        day = _day(message.timestamp, line.timestamp)
        if role == "assistant":
            model = message.responseModel if isinstance(message.responseModel, str) else message.model
            return _with_usage(message.usage, _key(message.provider, model), day, _tools(message.content), True)
        return _with_usage(message.usage, UNATTRIBUTED, day, [], False) if _present(message.usage) else None
    day = _day(None, line.timestamp)
    if entry_type == "usage":
        return _with_usage(line.usage, _key(line.provider, line.model), day, [], False)
    return _with_usage(line.usage, UNATTRIBUTED, day, [], False) if _present(line.usage) else None


def _key(provider: Any, model: Any) -> str:
    return "/".join(part for part in (provider, model) if isinstance(part, str)) or "unknown"


def _present(usage: msgspec.Raw) -> bool:
    """pi counts a tool result's, compaction's or branch summary's usage only when it is truthy."""
    return bytes(usage) not in (b"null", b"false", b"0", b'""')


def _tools(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    return [block.name if isinstance(block.name, str) else "?" for block in content
            if isinstance(block, _Block) and block.type == "toolCall"]


def _with_usage(usage: msgspec.Raw, model: str, day: str, tools: list[str], assistant: bool) -> Facts:
    numbers, skipped, counted = _numbers(usage)
    return Facts(model, day, numbers, tools, assistant=assistant, usage=counted, skipped=skipped)


def _day(message_ms: Any, entry_iso: Any) -> str:
    """The UTC day of the message's own time, else of the entry's."""
    if isinstance(message_ms, int | float) and not isinstance(message_ms, bool) and 0 <= message_ms < 2**53:
        return time.strftime("%Y-%m-%d", time.gmtime(message_ms / 1000))
    return entry_iso[:10] if isinstance(entry_iso, str) and len(entry_iso) >= 10 else "unknown"


def _numbers(usage: msgspec.Raw) -> tuple[tuple[float, ...], int, bool]:
    """(the nine numbers, how many values were skipped, whether there was a usage object at all)."""
    raw = bytes(usage)
    if raw == b"null":
        return _ZERO, 0, False
    try:
        plain = _decode_plain_usage(raw)
    except msgspec.MsgspecError:
        pass
    else:
        split = plain.cost
        plain_numbers = (plain.input, plain.output, plain.cacheRead, plain.cacheWrite, split.input, split.output,
                         split.cacheRead, split.cacheWrite, split.total)
        if math.isfinite(sum(plain_numbers)):  # else an integer beyond a double became infinite: check each
            return plain_numbers, 0, True
    try:
        found = _decode_usage(raw)
    except msgspec.MsgspecError:  # not an object, or a number msgspec cannot hold (1e309)
        return _numbers_one_by_one(raw)
    cost = found.cost
    costs = [cost.get(kind, msgspec.UNSET) for kind in COST_KINDS] if type(cost) is dict else [msgspec.UNSET] * 5
    numbers, skipped = _checked([found.input, found.output, found.cacheRead, found.cacheWrite, *costs])
    return numbers, skipped + (cost is not msgspec.UNSET and type(cost) is not dict), True


def _numbers_one_by_one(raw: bytes) -> tuple[tuple[float, ...], int, bool]:
    try:
        fields = _decode_fields(raw)
    except msgspec.MsgspecError:  # not an object: the usage is one value skipped
        return _ZERO, 1, False
    skipped = 0
    cost: dict[str, msgspec.Raw] = {}
    if "cost" in fields:
        try:
            cost = _decode_fields(fields["cost"])
        except msgspec.MsgspecError:  # not an object
            skipped += 1
    raws = [fields.get(kind) for kind in TOKEN_KINDS] + [cost.get(kind) for kind in COST_KINDS]
    numbers, more = _checked([msgspec.UNSET if item is None else _decoded(item) for item in raws])
    return numbers, skipped + more, True


def _decoded(raw: msgspec.Raw) -> Any:
    try:
        return _decode_any(raw)
    except msgspec.MsgspecError:  # out of a double's range
        return None


def _checked(values: list[Any]) -> tuple[tuple[float, ...], int]:
    numbers, skipped = [], 0
    for value in values:
        number = _finite(value)
        if number is None:
            skipped += value is not msgspec.UNSET
            number = 0.0
        numbers.append(number)
    return tuple(numbers), skipped


def _finite(value: Any) -> float | None:
    """The value as JavaScript would read it, if that is a finite number; else None."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:  # JavaScript reads it as Infinity
            return None
    return None


# --------------------------------------------------------------------------- totals

_COUNTS: Final = 3  # a bucket: [assistant messages, usages counted, values skipped, the nine numbers]


def _empty() -> list[float]:
    return [0.0] * (_COUNTS + _NUMBERS)


def _add_into(bucket: list[float], position: int, value: float) -> None:
    """Add unless the total would overflow: then the value is skipped, and counted so."""
    total = bucket[position] + value
    if math.isfinite(total):
        bucket[position] = total
    else:
        bucket[2] += 1


def _wire_number(value: float) -> float | int:
    """An integral total as an integer when it is exact in JSON; -0 as 0."""
    if value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return int(value)
    return value + 0.0


def _totals(bucket: list[float]) -> dict[str, Any]:
    if not math.isfinite(sum(bucket)):  # past 10^8 values of 1e300 (see _LARGE): never a JSON null
        bucket = [value if math.isfinite(value) else 0.0 for value in bucket]
    tokens: dict[str, float | int] = {kind: _wire_number(bucket[_COUNTS + n]) for n, kind in enumerate(TOKEN_KINDS)}
    total = math.fsum(bucket[_COUNTS : _COUNTS + 4])
    tokens["total"] = _wire_number(total) if math.isfinite(total) else _wire_number(max(bucket[_COUNTS : _COUNTS + 4]))
    cost = {kind: round(bucket[_COUNTS + 4 + n], 6) + 0.0 for n, kind in enumerate(COST_KINDS)}
    return {
        "assistantMessages": int(bucket[0]),
        "usages": int(bucket[1]),
        "skipped": int(bucket[2]),
        "tokens": tokens,
        "cost": cost,
    }


def _sum(buckets: Iterable[list[float]]) -> list[float]:
    total = _empty()
    for bucket in buckets:
        for position in range(_COUNTS):
            total[position] += bucket[position]
        for position in range(_COUNTS, _COUNTS + _NUMBERS):
            _add_into(total, position, bucket[position])
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
        self.buckets: dict[tuple[str, str], list[float]] = {}  # (model, day) -> [counts..., numbers...]

    def add(self, facts: Facts) -> None:
        bucket = self.buckets.get((facts.model, facts.day))
        if bucket is None:
            bucket = self.buckets[(facts.model, facts.day)] = _empty()
        bucket[0] += facts.assistant
        bucket[1] += facts.usage
        bucket[2] += facts.skipped
        numbers = facts.numbers
        if max(numbers) < _LARGE and min(numbers) > -_LARGE:  # no total can overflow by adding these
            for position, value in enumerate(numbers, start=_COUNTS):
                bucket[position] += value
        else:  # a total might overflow: add value by value, skipping those that would
            for position, value in enumerate(numbers, start=_COUNTS):
                _add_into(bucket, position, value)
        self.tool_calls.update(facts.tools)

    def merge(self, other: Stats) -> None:
        self.entries += other.entries
        self.types.update(other.types)
        self.roles.update(other.roles)
        self.tool_calls.update(other.tool_calls)
        self.compactions += other.compactions
        self.branch_points += other.branch_points
        for key, bucket in other.buckets.items():
            self.buckets[key] = _sum([self.buckets.get(key, _empty()), bucket])

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


# Lines that may carry usage, by (type, role): assistant messages always; the others only when they
# hold a `usage`, which a tool result line (often large) is checked for before it is decoded.
_READ: Final = frozenset({("message", "assistant"), ("message", "toolResult"), ("usage", None),
                          ("compaction", None), ("branch_summary", None)})


def collect(
    index: SessionIndex, seqs: Iterable[int], read: Callable[[int, int], bytes], known: dict[int, Facts | None]
) -> Stats:
    """The figures of the entries at `seqs`; `read(offset, length)` reads a line's bytes, and
    `known` keeps what each line said, so a second set (the path) reads nothing again."""
    stats = Stats()
    kinds, codes, offsets, lengths = index.kinds.values, index.kinds.codes, index.offsets, index.lengths
    for seq in seqs:
        kind = kinds[codes[seq]]
        entry_type, role = kind
        stats.entries += 1
        stats.types[entry_type] += 1
        if entry_type == "compaction":
            stats.compactions += 1
        if entry_type == "message" and role is not None:
            stats.roles[role] += 1
        if kind not in _READ:
            continue
        if seq in known:
            facts = known[seq]
        else:
            facts = known[seq] = _facts_at(read(offsets[seq], lengths[seq]), entry_type, role)
        if facts is not None:
            stats.add(facts)
    return stats


def _facts_at(raw: bytes, entry_type: str, role: str | None) -> Facts | None:
    if role == "toolResult" and b'"usage"' not in raw:  # most tool results: no usage, no decoding
        return None
    return facts_of(raw, entry_type, role)
