"""What the model sees: pi 1.6's `buildSessionContext` over the path from a leaf to the root.

pi's pipeline, kept here in the same steps: the path (`walk_path`), the selected entries
(`select`: the newest compaction, its kept range without system messages, everything after),
the latest context edit per target among them (`latest_edits`), then each entry's messages
(`entry_messages`, `edited_messages`). `project_entries` gives the entries with their messages.

Only the path is walked (O(depth)), and only the payloads that become messages
are decoded. The context of the current leaf is cached and extended in place
when an entry is appended below it, so the common "append, then read the
context" loop does not walk the path again.
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
from collections.abc import Callable
from typing import Any, Final, NamedTuple

import msgspec

from .. import jsonfmt
from ..entries import Node, iso_to_ms, model_of
from ..file_warning import FileWarning
from ..jsstring import js_truthy
from ..store import SessionIndex
from ..store.index import Anchors

LoadEntry = Callable[[Node], dict[str, Any]]
# Per node: a `message` entry's message as its text when it can go to the wire as it is, else the entry.
LoadMessages = Callable[[list[Node]], list["jsonfmt.RawJson | dict[str, Any]"]]


def walk_path(index: SessionIndex, leaf_id: str | None, warnings: list[FileWarning] | None = None) -> list[Node]:
    """Entries from the root to `leaf_id`; stops (and warns) where a parent chain would repeat."""
    seq = index.seq_of(leaf_id) if leaf_id is not None else None
    if seq is None:
        return []
    path, cut = index.walk(seq)
    if cut is not None and warnings is not None:
        at = index.ids[cut]
        warnings.append(FileWarning("cycle", f"the parent chain of {leaf_id} loops at {at}; cut there", entry_id=at))
    return [index.node(step) for step in path]


def _present(entry: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """JSON.stringify drops undefined values: copy only the keys the entry has."""
    return {key: entry[key] for key in keys if key in entry}


def custom_message(entry: dict[str, Any]) -> dict[str, Any]:
    """pi's createCustomMessage; a missing or null content becomes `[]` (`entry.content ?? []`)."""
    content = entry.get("content")
    return {
        "role": "custom",
        **_present(entry, ("customType",)),
        "content": [] if content is None else content,
        **_present(entry, ("display", "details")),
        "timestamp": iso_to_ms(entry.get("timestamp")),
    }


def branch_summary_message(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "branchSummary",
        **_present(entry, ("summary", "fromId")),
        "timestamp": iso_to_ms(entry.get("timestamp")),
    }


def compaction_summary_message(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "compactionSummary",
        **_present(entry, ("summary", "tokensBefore")),
        "timestamp": iso_to_ms(entry.get("timestamp")),
    }


# What a message of these roles gets when its content is null or missing (files are read unvalidated).
_EMPTY_CONTENT: Final[dict[str, Callable[[], Any]]] = {
    "system": str,
    "user": list,
    "assistant": list,
    "toolResult": list,
}
_EDITABLE_ROLES: Final = frozenset({"user", "assistant", "toolResult", "custom"})
_BLOCK_ROLES: Final = frozenset({"assistant", "toolResult"})  # a string replacement becomes one text block


def normalized_message(message: dict[str, Any]) -> dict[str, Any]:
    """The message as pi's sessionEntryToContextMessages passes it on: content never null."""
    empty = _EMPTY_CONTENT.get(message.get("role"))  # type: ignore[arg-type]
    if empty is not None and message.get("content") is None:
        return {**message, "content": empty()}  # JS `{...message, content}`: same key order
    return message


def entry_messages(entry: dict[str, Any], warnings: list[FileWarning] | None = None) -> list[dict[str, Any]]:
    """pi's sessionEntryToContextMessages: the messages one entry contributes (the newest compaction's
    included; an older one in the kept range contributes nothing, see `project_entries`)."""
    type_ = entry.get("type")
    if type_ == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            return [normalized_message(message)]
        if warnings is not None:
            at = entry.get("id")
            warnings.append(
                FileWarning("message-without-message", f"message entry {at} has no message; skipped", entry_id=at)
            )
        return []
    if type_ == "custom_message":
        return [custom_message(entry)]
    if type_ == "branch_summary" and js_truthy(entry.get("summary")):
        return [branch_summary_message(entry)]
    if type_ == "compaction":
        system: Any = entry.get("systemMessage")
        summary = compaction_summary_message(entry)
        return [system, summary] if js_truthy(system) else [summary]  # a checkpoint: pi passes it as written
    return []


def edit_replacement(edit: dict[str, Any]) -> dict[str, Any] | msgspec.UnsetType | None:
    """A context_edit's replacement: None (omit the target), an object, or UNSET when the entry
    has neither (pi would fail on it; the daemon lets such an edit change nothing)."""
    replacement = edit.get("replacement", msgspec.UNSET)
    return replacement if replacement is None or isinstance(replacement, dict) else msgspec.UNSET


def edited_messages(messages: list[dict[str, Any]], replacement: dict[str, Any] | None) -> list[dict[str, Any]]:
    """pi's projectContextEntry: null omits the entry's messages; a replacement swaps the content
    of user, assistant, toolResult and custom messages (others pass unchanged)."""
    if replacement is None:
        return []
    edited = []
    for message in messages:
        role = message.get("role")
        if role not in _EDITABLE_ROLES:
            edited.append(message)
            continue
        copy = dict(message)
        if "content" not in replacement:  # `content: undefined`: JSON.stringify drops the key
            copy.pop("content", None)
        else:
            content = replacement["content"]
            if role in _BLOCK_ROLES and isinstance(content, str):
                content = [{"type": "text", "text": content}]
            copy["content"] = content
        edited.append(copy)
    return edited


class _ContentProbe(msgspec.Struct):
    content: msgspec.Raw = msgspec.Raw()  # empty: the key is absent


_probe_content: Final = msgspec.json.Decoder(_ContentProbe).decode


def _content_is_set(text: bytes) -> bool:
    """Whether a message's JSON has a top-level `content` that is not null (the last one, as
    JSON.parse reads repeated keys): one pass that skips every value without building it."""
    raw = _probe_content(text).content
    return len(raw) > 0 and bytes(raw) != b"null"


class Context:
    """A built context: messages, thinking level and model at `leaf_id`."""

    __slots__ = ("_items", "_texts", "leaf_id", "model", "thinking_level", "warnings")

    def __init__(self, leaf_id: str | None) -> None:
        self.leaf_id = leaf_id
        # The messages; those read from the file may still be their JSON text (`RawJson`): the
        # wire takes them as they are, and only a reader here pays for decoding them.
        self._items: list[Any] = []
        self._texts = 0  # how many of the items are texts
        self.thinking_level: Any = "off"
        self.model: dict[str, Any] | None = None
        self.warnings: list[FileWarning] = []

    @property
    def messages(self) -> list[Any]:
        """The messages, every one decoded."""
        if self._texts:
            self._items = [item.value if type(item) is jsonfmt.RawJson else item for item in self._items]
            self._texts = 0
        return self._items

    def wire_items(self) -> list[Any]:
        """The messages as they go to the wire: texts are sent as they are (see `jsonfmt.RawJson`)."""
        return self._items

    def add_made(self, messages: list[dict[str, Any]]) -> None:
        """Messages made or decoded here (a compaction's checkpoint and summary, edited messages)."""
        self._items.extend(messages)

    def add_message_text(self, node: Node, message: jsonfmt.RawJson) -> None:
        """A `message` entry's message, as its text (an object: checked by the reader); decoded
        only if pi would pass on something else (a null or missing content)."""
        if node.role in _EMPTY_CONTENT and not _content_is_set(message.text):
            self._items.append(normalized_message(message.value))
            return
        self._items.append(message)
        self._texts += 1

    def note_setting(self, node: Node) -> None:
        """Track the last thinking level and model along the path (also before a compaction)."""
        if node.type == "thinking_level_change":
            self.thinking_level = None if node.setting is msgspec.UNSET else node.setting
        elif node.type == "model_change" or (node.type == "message" and node.role == "assistant"):
            self.model = model_of(node.setting)

    def add_message(self, node: Node, entry: dict[str, Any]) -> None:
        """The messages of an entry (not a compaction) as pi's sessionEntryToContextMessages makes them."""
        if node.type in _MESSAGE_TYPES:
            self._items.extend(entry_messages(entry, self.warnings))


# Entry types that contribute messages (a compaction only as the newest on the path, first).
_MESSAGE_TYPES = frozenset({"message", "custom_message", "branch_summary"})
CONTEXT_EDIT: Final = "context_edit"
_CONTEXT_TYPES: Final = _MESSAGE_TYPES | {CONTEXT_EDIT}  # what a context reads (settings come with the walk)


_SYSTEM_MESSAGE: Final = ("message", "system")


def _is_system(node: Node) -> bool:
    return node.type == "message" and node.role == "system"


class Selection(NamedTuple):
    """pi's buildContextEntries for a leaf: the newest compaction on the path (if any) and the
    entries after it in context order: the kept range (without system messages, which the
    compaction's checkpoint folds), then everything below the compaction."""

    compaction: Node | None
    compaction_entry: dict[str, Any] | None
    nodes: list[Node]


def select(
    context: Context, index: SessionIndex, leaf_id: str | None, load: LoadEntry, types: frozenset[str] | None = None
) -> Selection:
    """The selected entries of `leaf_id`'s path (only those of `types`, if given); notes its
    settings in `context`. O(depth) at most; with the leaf's anchors only the stretch from the
    compaction's kept range down."""
    leaf = index.get(leaf_id) if leaf_id is not None else None
    anchors = index.anchors(leaf.seq) if leaf is not None and index.anchors_hold else None
    if leaf is not None and anchors is not None:
        return _select_from_anchors(context, index, leaf, anchors, load, types)
    chosen = _select_by_walking(context, index, leaf_id, load)
    if types is None:
        return chosen
    return chosen._replace(nodes=[node for node in chosen.nodes if node.type in types])


def _select_from_anchors(
    context: Context, index: SessionIndex, leaf: Node, anchors: Anchors, load: LoadEntry, types: frozenset[str] | None
) -> Selection:
    """Walk only from the leaf back to its last compaction (and on to the first kept entry):
    the settings and the compaction come from the leaf's anchors."""
    thinking, model, compaction = anchors
    for setting in (thinking, model):
        if setting is not None:
            context.note_setting(setting)
    after = _up_to(index, leaf.seq, -1 if compaction is None else compaction.seq)
    entry = None
    if compaction is not None:
        entry = load(compaction)
        kept = _kept_above(index, compaction.seq, entry.get("firstKeptEntryId"))
        kinds, codes = index.kinds.values, index.kinds.codes  # (type, role) per seq
        after = [seq for seq in kept if kinds[codes[seq]] != _SYSTEM_MESSAGE] + after
    if types is not None:  # Nodes are made only for the entries wanted
        type_of = index.type_of
        after = [seq for seq in after if type_of(seq) in types]
    return Selection(compaction, entry, [index.node(seq) for seq in after])


def _up_to(index: SessionIndex, leaf: int, stop: int) -> list[int]:
    """The seqs after `stop` down to `leaf`, in path order (the whole path if `stop` is -1)."""
    seqs: list[int] = []
    parent_seq = index.parent_seq
    seq: int | None = leaf
    while seq is not None and seq != stop:
        seqs.append(seq)
        seq = parent_seq(seq)
    seqs.reverse()
    return seqs


def _kept_above(index: SessionIndex, compaction: int, first_kept_id: Any) -> list[int]:
    """The seqs from `firstKeptEntryId` down to the compaction (none if it is not on the path)."""
    seqs: list[int] = []
    ids, parent_seq = index.ids, index.parent_seq
    seq = parent_seq(compaction)
    while seq is not None:
        seqs.append(seq)
        if ids[seq] == first_kept_id:
            seqs.reverse()
            return seqs
        seq = parent_seq(seq)
    return []


def _select_by_walking(context: Context, index: SessionIndex, leaf_id: str | None, load: LoadEntry) -> Selection:
    """The general case (damaged trees: orphans, cycles, repeated ids): the whole path, walked safely."""
    path = walk_path(index, leaf_id, context.warnings)
    compaction: Node | None = None
    compaction_at = -1
    for position, node in enumerate(path):
        context.note_setting(node)
        if node.type == "compaction":
            compaction, compaction_at = node, position
    if compaction is None:
        return Selection(None, None, path)
    entry = load(compaction)
    kept = _kept_before(path[:compaction_at], entry.get("firstKeptEntryId"))
    return Selection(compaction, entry, [node for node in kept if not _is_system(node)] + path[compaction_at + 1 :])


def _kept_before(before: list[Node], first_kept_id: Any) -> list[Node]:
    """The entries from `firstKeptEntryId` up to the compaction (none if it is not on the path)."""
    for position, node in enumerate(before):
        if node.id == first_kept_id:
            return before[position:]
    return []


def latest_edits(nodes: list[Node], load: LoadEntry) -> dict[str, dict[str, Any] | None]:
    """Per target id, the replacement of the latest context_edit among `nodes` (pi: edits are
    branch-relative and only the selected entries count). Edits with no usable replacement are skipped."""
    edits: dict[str, dict[str, Any] | None] = {}
    for node in nodes:
        if node.type == CONTEXT_EDIT:
            entry = load(node)
            target, replacement = entry.get("targetId"), edit_replacement(entry)
            if isinstance(target, str) and replacement is not msgspec.UNSET:
                edits[target] = replacement
    return edits


def build_context(
    index: SessionIndex, leaf_id: str | None, load: LoadEntry, load_messages: LoadMessages | None = None
) -> Context:
    """pi's buildSessionContext for `leaf_id` (None: the empty context). `load_messages`, if
    given, reads the entries that become messages all at once (see `LoadMessages`)."""
    context = Context(leaf_id)
    return fill_context(context, select(context, index, leaf_id, load, _CONTEXT_TYPES), load, load_messages)


def fill_context(
    context: Context, chosen: Selection, load: LoadEntry, load_messages: LoadMessages | None = None
) -> Context:
    """Add the messages of the selected entries to `context`, with the latest edits applied.
    Unedited messages stay the text they were read as (see `LoadMessages`)."""
    load_many: LoadMessages = load_messages or (lambda nodes: [load(node) for node in nodes])
    edits = latest_edits(chosen.nodes, load)
    if chosen.compaction is not None and chosen.compaction_entry is not None:
        messages = entry_messages(chosen.compaction_entry)
        if chosen.compaction.id in edits:
            messages = edited_messages(messages, edits[chosen.compaction.id])
        context.add_made(messages)
    nodes = [node for node in chosen.nodes if node.type in _MESSAGE_TYPES]
    for node, found in zip(nodes, load_many(nodes), strict=True):
        if isinstance(found, dict):  # the entry, decoded
            if node.id in edits:
                context.add_made(edited_messages(entry_messages(found, context.warnings), edits[node.id]))
            else:
                context.add_message(node, found)
        elif node.id in edits:  # the message alone, as its text
            message = {"type": "message", "id": node.id, "message": found.value}
            context.add_made(edited_messages(entry_messages(message, context.warnings), edits[node.id]))
        else:
            context.add_message_text(node, found)
    return context


class ProjectedEntry(NamedTuple):
    """One selected entry and the messages it contributes (pi's `buildSessionProjection().entries`)."""

    node: Node
    entry: dict[str, Any]
    messages: list[dict[str, Any]]


class Projection(NamedTuple):
    """pi's buildSessionProjection for a leaf: the selected entries with their messages, and the
    thinking level and model of the whole path."""

    entries: list[ProjectedEntry]
    thinking_level: Any
    model: dict[str, Any] | None
    warnings: list[FileWarning]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [message for projected in self.entries for message in projected.messages]


def project_entries(index: SessionIndex, leaf_id: str | None, load: LoadEntry) -> Projection:
    """pi's buildSessionProjection: every selected entry decoded, with its (edited) messages.
    For work that reads the entries themselves (compaction, summaries); a context for the wire is
    `build_context`, which decodes only what becomes a message."""
    context = Context(leaf_id)
    chosen = select(context, index, leaf_id, load)
    edits = latest_edits(chosen.nodes, load)
    projected: list[ProjectedEntry] = []
    if chosen.compaction is not None and chosen.compaction_entry is not None:
        projected.append(_projected(chosen.compaction, chosen.compaction_entry, edits, context.warnings))
    for node in chosen.nodes:
        entry = load(node)
        if node.type == "compaction":  # an older one in the kept range: its id alone was kept
            projected.append(ProjectedEntry(node, entry, []))
        else:
            projected.append(_projected(node, entry, edits, context.warnings))
    return Projection(projected, context.thinking_level, context.model, context.warnings)


def _projected(
    node: Node, entry: dict[str, Any], edits: dict[str, dict[str, Any] | None], warnings: list[FileWarning]
) -> ProjectedEntry:
    messages = entry_messages(entry, warnings)
    if node.id in edits:
        messages = edited_messages(messages, edits[node.id])
    return ProjectedEntry(node, entry, messages)


# A cursor names a prefix of one cached context: "<generation>.<count>.<format>.<check>". The
# generation is the cached context's, drawn anew (from one counter for all sessions) whenever the
# cache is filled or emptied, so it only names a context that has since grown by appends; the
# check, keyed with this process's secret, turns away cursors made up or altered by a client, or
# given by an earlier daemon.
_KEY: Final = secrets.token_bytes(16)
_GENERATIONS = itertools.count(1)
_FORMATS: Final = {"agent": "a", "llm": "l"}


def _cursor(generation: int, count: int, format: str) -> str:
    named = f"{generation}.{count}.{_FORMATS[format]}"
    return f"{named}.{hashlib.blake2b(named.encode(), key=_KEY, digest_size=4).hexdigest()}"


def uncached_cursor(count: int, format: str) -> str:
    """A cursor for a context that is not cached (another leaf's): it will only ever reset."""
    return _cursor(next(_GENERATIONS), count, format)


class ContextCache:
    """The context of one leaf, kept up to date while entries are appended below it.

    While its generation stays the same the context only grows at its end, so a client holding
    its first `count` messages can be sent the rest alone (`cursor`, `held`)."""

    def __init__(self) -> None:
        self.context: Context | None = None
        self.generation = next(_GENERATIONS)
        self._encoded = 0  # messages whose JSON is in `_wire`
        self._wire = bytearray(b"[")  # the JSON array of those messages, without its closing "]"

    def get(self, leaf_id: str | None) -> Context | None:
        context = self.context
        return context if context is not None and context.leaf_id == leaf_id else None

    def put(self, context: Context) -> None:
        self.context = context
        self._forget_wire()

    def cursor(self, format: str) -> str:
        """The cursor of the cached context as it is now, for answers in `format`."""
        assert self.context is not None
        return _cursor(self.generation, len(self.context.wire_items()), format)

    def held(self, cursor: str, format: str) -> int | None:
        """How many of the cached context's messages the holder of `cursor` has, or None when
        the cursor does not name a prefix of it (another context, a changed one, another format,
        another daemon, or not a cursor at all): that holder must be sent everything."""
        context = self.context
        parts = cursor.split(".")
        if context is None or len(parts) != 4 or parts[0] != str(self.generation):
            return None
        count = parts[1]
        if not (count.isascii() and count.isdigit() and len(count) < 19) or cursor != _cursor(self.generation, int(count), format):
            return None
        return int(count) if int(count) <= len(context.wire_items()) else None

    def messages_after(self, count: int) -> list[Any]:
        """The cached context's messages after its first `count`, as they go to the wire."""
        assert self.context is not None
        return self.context.wire_items()[count:]

    def messages_for_wire(self) -> jsonfmt.JsonList:
        """The cached context's messages, with their JSON: each message is encoded once, so an
        answer after an append costs one message's encoding (and a copy), not the whole context's."""
        assert self.context is not None
        messages, wire = self.context.wire_items(), self._wire
        new = messages[self._encoded :]
        if new:  # "[a,b]" is the messages' JSON joined by commas; texts are their own JSON
            if self._encoded:
                wire += b","
            raw = jsonfmt.RawJson
            wire += b",".join([item.text if type(item) is raw else jsonfmt.dumps_wire(item) for item in new])
            self._encoded += len(new)
        wire += b"]"
        text = bytes(wire)
        del wire[-1]
        return jsonfmt.JsonList(messages, text)

    def _forget_wire(self) -> None:
        self.generation = next(_GENERATIONS)  # the messages may differ from here on
        self._encoded = 0
        self._wire = bytearray(b"[")

    def extend(self, node: Node, entry: dict[str, Any]) -> None:
        """`node` was appended; if it continues the cached leaf, fold it in without a walk."""
        context = self.context
        if context is None or node.parent_id != context.leaf_id:  # a new root continues the empty context
            return
        if node.type in _REBUILDS:
            self.clear()
            return
        context.note_setting(node)
        context.add_message(node, entry)
        context.leaf_id = node.id

    def clear(self) -> None:
        self.context = None
        self._forget_wire()


# Appended below the cached leaf, these change messages already in the context: a compaction
# replaces the history, a context edit rewrites or hides an earlier message.
_REBUILDS: Final = frozenset({"compaction", CONTEXT_EDIT})


# --------------------------------------------------------------------------- convertToLlm

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


def bash_execution_text(message: dict[str, Any]) -> str:
    """pi's bashExecutionToText."""
    text = f"Ran `{message.get('command')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _user_text(text: str, timestamp: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": timestamp}


def _to_llm(message: dict[str, Any]) -> dict[str, Any] | None:
    role = message.get("role")
    timestamp = message.get("timestamp")
    if role in ("system", "user", "assistant", "toolResult"):
        return message
    if role == "bashExecution":
        return None if message.get("excludeFromContext") else _user_text(bash_execution_text(message), timestamp)
    if role == "custom":
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        return {"role": "user", "content": blocks, "timestamp": timestamp}
    if role == "branchSummary":
        return _user_text(BRANCH_SUMMARY_PREFIX + str(message.get("summary")) + BRANCH_SUMMARY_SUFFIX, timestamp)
    if role == "compactionSummary":
        return _user_text(
            COMPACTION_SUMMARY_PREFIX + str(message.get("summary")) + COMPACTION_SUMMARY_SUFFIX, timestamp
        )
    return None  # pi drops roles it does not know


def convert_to_llm(messages: list[Any]) -> list[Any]:
    """pi's convertToLlm: summaries and bash executions become user messages."""
    converted = (_to_llm(message) for message in messages if isinstance(message, dict))
    return [message for message in converted if message is not None]
