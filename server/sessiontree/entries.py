"""The entries of a pi v3 session file: what is indexed on open, and how a new line is built.

Opening a session decodes only a *skeleton* of each line (type, ids, timestamp,
label and setting fields, a message's role and model); payloads stay on disk
and are decoded on demand from their byte offsets. Keys and entry types the
daemon does not know are never touched: lines are only ever read or appended.
"""

from __future__ import annotations

import random
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import msgspec

from . import jsonfmt
from .errors import InvalidParams
from .jsstring import js_truthy

ENTRY_TYPES: Final = (
    "message",
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "context_edit",
    "usage",
)

# pi's key order per type (JSON.stringify keeps insertion order): own fields that pi
# sets before the ids come first, then id/parentId/timestamp, then the rest.
_BEFORE_IDS: Final[dict[str, tuple[str, ...]]] = {
    "custom": ("customType", "data"),
    "custom_message": ("customType", "content", "display", "details"),
}
_AFTER_IDS: Final[dict[str, tuple[str, ...]]] = {
    "message": ("message",),
    "thinking_level_change": ("thinkingLevel",),
    "model_change": ("provider", "modelId"),
    "compaction": ("summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook", "systemMessage"),
    "branch_summary": ("fromId", "summary", "details", "usage", "fromHook"),
    "label": ("targetId", "label"),
    "session_info": ("name",),
    "context_edit": ("targetId", "replacement"),
    "usage": ("kind", "provider", "model", "usage", "note"),
}
_ASSIGNED: Final = ("id", "parentId", "timestamp")
_SUMMARY_ROLES: Final = ("branchSummary", "compactionSummary")

# ECMAScript's String.prototype.trim set: WhiteSpace (incl. U+FEFF and every Zs) + LineTerminator.
_JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """JavaScript's `trim()`: unlike `str.strip()` it strips U+FEFF and not U+001C..U+001F."""
    return text.strip(_JS_WHITESPACE)


_LINE_BREAKS: Final = re.compile(r"[\r\n]+")


def session_name(name: str) -> str:
    """A name as pi 1.6's appendSessionInfo writes it: `name.replace(/[\r\n]+/g, " ").trim()`."""
    return js_trim(_LINE_BREAKS.sub(" ", name))


_second: list[Any] = [None, ""]  # the last second formatted, and its text: appends come many a second


def now_iso() -> str:
    """The current time as JavaScript's `toISOString()` writes it (milliseconds, `Z`)."""
    seconds, millis = divmod(time.time_ns() // 1_000_000, 1000)
    if _second[0] != seconds:
        _second[:] = seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{_second[1]}.{millis:03d}Z"


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND: Final = timedelta(milliseconds=1)


def iso_to_ms(value: Any) -> int | None:
    """`new Date(iso).getTime()` for the timestamps pi writes; None where JavaScript gives NaN."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return (parsed - _EPOCH) // _MILLISECOND


# Ids need to be unpredictable enough not to collide with other writers' (checked anyway), not
# secret: a generator seeded once from the OS saves a system call per entry.
_ids: Final = random.Random()


class Either:
    """Membership in either of two collections, without building their union."""

    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second = first, second

    def __contains__(self, item: object) -> bool:
        return item in self.first or item in self.second


def new_entry_id(taken: Any) -> str:
    """8 lowercase hex characters (pi: the first 8 of a random UUID), re-drawn on collision."""
    while True:
        candidate = f"{_ids.getrandbits(32):08x}"
        if candidate not in taken:
            return candidate


# --------------------------------------------------------------------------- skeleton decoding


class _MessageSkeleton(msgspec.Struct, gc=False):
    role: Any = None
    provider: Any = msgspec.UNSET
    model: Any = msgspec.UNSET


class _LineSkeleton(msgspec.Struct, gc=False):
    """The fields of a line the tree and the projection need; everything else is skipped."""

    type: str
    id: str
    parentId: Any = msgspec.UNSET
    timestamp: Any = None
    targetId: Any = None
    label: Any = None
    name: Any = None
    thinkingLevel: Any = msgspec.UNSET
    provider: Any = msgspec.UNSET
    modelId: Any = msgspec.UNSET
    message: _MessageSkeleton | msgspec.UnsetType | None = msgspec.UNSET


_skeleton_decoder: Final = msgspec.json.Decoder(_LineSkeleton)


class Node(msgspec.Struct, gc=False):
    """One entry line as the index describes it: small, no payload. Made on demand from the
    index's columns, so two Nodes for one line are equal but not identical."""

    id: str
    parent_id: str | None  # None: a root (null, absent or not a string)
    type: str
    timestamp: Any
    offset: int  # byte offset of the line in the file
    length: int  # bytes of the line without its line end
    seq: int  # position among the file's entries (file order)
    role: str | None  # message role, or None
    setting: Any  # thinking level, (provider, model id), (target, label) or name, by type

    def moved(self, offset: int, seq: int) -> Node:
        """The same line at another place (in a copy of the file)."""
        return msgspec.structs.replace(self, offset=offset, seq=seq)

    def __repr__(self) -> str:
        return f"Node({self.id!r}, parent={self.parent_id!r}, type={self.type!r})"


class SkeletonError(ValueError):
    """A line that is not a usable entry (not JSON, not an object, no string id or type)."""


_intern = sys.intern


def _setting_of(type_: str, fields: dict[str, Any]) -> Any:
    if type_ == "thinking_level_change":
        return fields.get("thinkingLevel", msgspec.UNSET)
    if type_ == "model_change":
        return (fields.get("provider", msgspec.UNSET), fields.get("modelId", msgspec.UNSET))
    if type_ == "label":
        return (fields.get("targetId"), fields.get("label"))
    if type_ == "session_info":
        return fields.get("name")
    return None


def model_of(setting: tuple[Any, Any]) -> dict[str, Any]:
    """pi builds `{provider, modelId}`; JSON.stringify drops the keys that are undefined."""
    provider, model_id = setting
    model: dict[str, Any] = {}
    if provider is not msgspec.UNSET:
        model["provider"] = provider
    if model_id is not msgspec.UNSET:
        model["modelId"] = model_id
    return model


def decode_skeleton(line: bytes | memoryview, offset: int, seq: int) -> Node:
    """Decode one entry line into a Node, raising SkeletonError if it is not an entry."""
    try:
        skel = _skeleton_decoder.decode(line)
    except (msgspec.MsgspecError, RecursionError):  # odd field types, broken UTF-8, deep nesting (Node reads it)
        return _decode_skeleton_slowly(line, offset, seq)
    role = None
    setting: Any = None
    message = skel.message
    type_ = _intern(skel.type)
    if type_ == "message" and isinstance(message, _MessageSkeleton):
        role = message.role if isinstance(message.role, str) else None
        if role == "assistant":
            setting = (message.provider, message.model)  # made a dict only if a context shows it
    elif type_ == "thinking_level_change":
        setting = skel.thinkingLevel
    elif type_ == "model_change":
        setting = (skel.provider, skel.modelId)
    elif type_ == "label":
        setting = (skel.targetId, skel.label)
    elif type_ == "session_info":
        setting = skel.name
    parent = skel.parentId if isinstance(skel.parentId, str) else None
    return Node(skel.id, parent, type_, skel.timestamp, offset, len(line), seq, role and _intern(role), setting)


def _decode_skeleton_slowly(line: bytes | memoryview, offset: int, seq: int) -> Node:
    """The rare line msgspec refuses (odd field types, lone surrogates, broken UTF-8, not JSON at all):
    decode generically and leniently, keep what is usable."""
    try:
        fields = jsonfmt.loads(line)
    except jsonfmt.JSONDecodeError:
        raise SkeletonError("not valid JSON") from None  # the decoder's wording varies by version
    if not isinstance(fields, dict):
        raise SkeletonError("not a JSON object")
    return node_of_fields(fields, offset, len(line), seq)


def node_of_fields(fields: dict[str, Any], offset: int, length: int, seq: int) -> Node:
    """The Node of an entry already decoded (or about to be written), as `decode_skeleton` makes it."""
    type_, id_ = fields.get("type"), fields.get("id")
    if not isinstance(type_, str):
        raise SkeletonError("entry without a string `type`")
    if not isinstance(id_, str):
        raise SkeletonError("entry without a string `id`")
    parent = fields.get("parentId")
    message = fields.get("message")
    role = None
    setting = _setting_of(type_, fields)
    if type_ == "message" and isinstance(message, dict) and isinstance(message.get("role"), str):
        role = message["role"]
        if role == "assistant":
            setting = (message.get("provider", msgspec.UNSET), message.get("model", msgspec.UNSET))
    return Node(
        id_,
        parent if isinstance(parent, str) else None,
        _intern(type_),
        fields.get("timestamp"),
        offset,
        length,
        seq,
        role,
        setting,
    )


# --------------------------------------------------------------------------- a block of lines at once

_SETTING_KINDS: Final = frozenset(
    {("message", "assistant"), *((type_, None) for type_ in ("thinking_level_change", "model_change", "label", "session_info"))}
)


def skeletons(block: memoryview, starts: list[int], ends: list[int], first: int) -> list[_LineSkeleton]:
    """The skeletons of the lines `block[starts[i]:ends[i]]` from `first` on, up to the first line
    that does not decode as one (left to `decode_skeleton`, line by line) or is a session header."""
    decode = _skeleton_decoder.decode
    pairs = zip(starts[first:], ends[first:], strict=True) if first else zip(starts, ends, strict=True)
    try:
        decoded = [decode(block[start:end]) for start, end in pairs]
    except (msgspec.MsgspecError, RecursionError):  # find the line: the ones before it hold
        decoded = []
        decode_until = decoded.append
        try:
            for start, end in zip(starts[first:], ends[first:], strict=True):
                decode_until(decode(block[start:end]))
        except (msgspec.MsgspecError, RecursionError):
            pass
    if any(skel.type == "session" for skel in decoded):
        decoded = decoded[: next(at for at, skel in enumerate(decoded) if skel.type == "session")]
    return decoded


def skeleton_columns(
    decoded: list[_LineSkeleton],
) -> tuple[list[str], list[str | None], list[tuple[str, str | None]], list[Any], list[tuple[int, Any]]]:
    """What the `Node`s of these skeletons (as `decode_skeleton` makes them) hold, as columns:
    ids, parent ids, (type, role), timestamps and (position, setting) where there is a setting."""
    ids = [skel.id for skel in decoded]
    parents = [parent if type(parent) is str else None for parent in [skel.parentId for skel in decoded]]
    stamps = [skel.timestamp for skel in decoded]
    kinds = [
        (skel.type, message.role if type(message := skel.message) is _MessageSkeleton and skel.type == "message" and type(message.role) is str else None)
        for skel in decoded
    ]
    settings = [
        (at, (message.provider, message.model) if kinds[at][1] == "assistant" and isinstance(message, _MessageSkeleton) else _setting_of_skeleton(decoded[at]))
        for at in [at for at, kind in enumerate(kinds) if kind in _SETTING_KINDS]
        for message in (decoded[at].message,)
    ]
    return ids, parents, kinds, stamps, [item for item in settings if item[1] is not None]  # None: no setting


def _setting_of_skeleton(skel: _LineSkeleton) -> Any:
    type_ = skel.type
    if type_ == "message":
        message = skel.message
        return (message.provider, message.model)  # type: ignore[union-attr]
    if type_ == "thinking_level_change":
        return skel.thinkingLevel
    if type_ == "model_change":
        return (skel.provider, skel.modelId)
    if type_ == "label":
        return (skel.targetId, skel.label)
    return skel.name


# --------------------------------------------------------------------------- building new lines


def _require(entry: dict[str, Any], key: str, kinds: tuple[type, ...], where: str, what: str) -> Any:
    value = entry.get(key)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise InvalidParams(f"{where}.{key} must be {what}", field=f"{where}.{key}")
    return value


def validate_entry(entry: dict[str, Any], where: str = "entry") -> str:
    """Check the fields pi relies on for this entry type; returns the type. Raises InvalidParams."""
    type_ = entry.get("type")
    if type_ not in ENTRY_TYPES:
        raise InvalidParams(f"{where}.type must be one of {', '.join(ENTRY_TYPES)}", field=f"{where}.type", got=type_)
    for key in _ASSIGNED:
        if key in entry:
            raise InvalidParams(f"{where}.{key} is assigned by the daemon and must not be sent", field=f"{where}.{key}")
    _VALIDATORS[type_](entry, where)
    checked: str = type_  # one of ENTRY_TYPES
    return checked


def _validate_message(entry: dict[str, Any], where: str) -> None:
    message = _require(entry, "message", (dict,), where, "an object (an AgentMessage)")
    role = _require(message, "role", (str,), f"{where}.message", "a string")
    if role in _SUMMARY_ROLES:
        raise InvalidParams(
            f"{where}.message.role {role!r} is not stored as a message: append a "
            f"{'branch_summary' if role == 'branchSummary' else 'compaction'} entry instead",
            field=f"{where}.message.role",
        )


def _validate_compaction(entry: dict[str, Any], where: str) -> None:
    _require(entry, "summary", (str,), where, "a string")
    if entry.get("firstKeptEntryId") is not None:  # absent or null: the compaction keeps nothing (its own id)
        _require(entry, "firstKeptEntryId", (str,), where, "a string, or null to keep nothing")
    _require(entry, "tokensBefore", (int, float), where, "a number")
    _optional_object(entry, "systemMessage", where)
    _optional_object(entry, "usage", where)


def _validate_branch_summary(entry: dict[str, Any], where: str) -> None:
    _require(entry, "fromId", (str,), where, "a string")
    _require(entry, "summary", (str,), where, "a string")
    _optional_object(entry, "usage", where)


def _optional_object(entry: dict[str, Any], key: str, where: str) -> None:
    """An object field pi writes only when it has one (null is left out of the line)."""
    if entry.get(key) is not None:
        _require(entry, key, (dict,), where, "an object")


def _validate_context_edit(entry: dict[str, Any], where: str) -> None:
    """pi's appendContextEdit: the replacement is null or an object with string or array content.
    (The target is checked against the session when the entry is written.)"""
    _require(entry, "targetId", (str,), where, "a string")
    if "replacement" not in entry:
        raise InvalidParams(f"{where}.replacement must be sent (null hides the target)", field=f"{where}.replacement")
    replacement = entry["replacement"]
    if replacement is not None and (not isinstance(replacement, dict) or not isinstance(replacement.get("content"), str | list)):
        raise InvalidParams(f"{where}.replacement must be null or an object with string or array content", field=f"{where}.replacement")


def _validate_usage(entry: dict[str, Any], where: str) -> None:
    for key in ("kind", "provider", "model"):
        _require(entry, key, (str,), where, "a string")
    _require(entry, "usage", (dict,), where, "an object (a Usage)")
    if js_truthy(entry.get("note")):  # pi writes a note only when it is truthy
        _require(entry, "note", (str,), where, "a string")


def _validate_custom_message(entry: dict[str, Any], where: str) -> None:
    _require(entry, "customType", (str,), where, "a string")
    _require(entry, "content", (str, list), where, "a string or an array of content blocks")
    _require(entry, "display", (bool,), where, "a boolean")


def _validate_label(entry: dict[str, Any], where: str) -> None:
    _require(entry, "targetId", (str,), where, "a string")
    if entry.get("label") is not None:
        _require(entry, "label", (str,), where, "a string")


def _fields(*spec: tuple[str, tuple[type, ...], str]) -> Any:
    def validate(entry: dict[str, Any], where: str) -> None:
        for key, kinds, what in spec:
            _require(entry, key, kinds, where, what)

    return validate


_STR = ((str,), "a string")
_VALIDATORS: Final = {
    "message": _validate_message,
    "thinking_level_change": _fields(("thinkingLevel", *_STR)),
    "model_change": _fields(("provider", *_STR), ("modelId", *_STR)),
    "compaction": _validate_compaction,
    "branch_summary": _validate_branch_summary,
    "custom": _fields(("customType", *_STR)),
    "custom_message": _validate_custom_message,
    "label": _validate_label,
    "session_info": _fields(("name", *_STR)),
    "context_edit": _validate_context_edit,
    "usage": _validate_usage,
}

# Fields pi leaves out of the line when they are falsy (`...(x ? {x} : {})`).
_ONLY_WHEN_TRUTHY: Final[dict[str, tuple[str, ...]]] = {"usage": ("note",), "compaction": ("systemMessage",)}


def build_line(entry: dict[str, Any], id: str, parent_id: str | None, timestamp: str) -> dict[str, Any]:
    """The entry as pi would write it: pi's key order for the fields it knows, the rest after.
    What pi 1.6 derives on write is derived here too: a compaction that keeps nothing points at
    its own id, a session name has its line breaks folded, falsy optional fields are left out."""
    type_ = entry["type"]
    if type_ == "compaction" and entry.get("firstKeptEntryId") is None:
        entry = {**entry, "firstKeptEntryId": id}  # pi: `firstKeptEntryId ?? id` ("retain-none")
    ordered: dict[str, Any] = {"type": type_}
    for key in _BEFORE_IDS.get(type_, ()):
        if key in entry:
            ordered[key] = entry[key]
    ordered["id"] = id
    ordered["parentId"] = parent_id
    ordered["timestamp"] = timestamp
    for key in _AFTER_IDS.get(type_, ()):
        if key in entry:
            ordered[key] = entry[key]
    for key, value in entry.items():
        if key not in ordered:
            ordered[key] = value
    for key in _ONLY_WHEN_TRUTHY.get(type_, ()):
        if key in ordered and not js_truthy(ordered[key]):
            del ordered[key]
    if type_ == "session_info" and isinstance(ordered.get("name"), str):
        ordered["name"] = session_name(ordered["name"])
    system = ordered.get("systemMessage")
    if type_ == "compaction" and isinstance(system, dict) and "timestamp" not in system:
        ordered["systemMessage"] = {**system, "timestamp": iso_to_ms(timestamp)}  # pi: the compaction's time
    return ordered
