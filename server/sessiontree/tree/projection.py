"""What the model sees: pi's `buildSessionContext` over the path from a leaf to the root.

Only the path is walked (O(depth)), and only the payloads that become messages
are decoded. The context of the current leaf is cached and extended in place
when an entry is appended below it, so the common "append, then read the
context" loop does not walk the path again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .. import jsonfmt
from ..entries import Node, iso_to_ms, model_of
from ..file_warning import FileWarning
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
    return {
        "role": "custom",
        **_present(entry, ("customType", "content", "display", "details")),
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

    def add_summary(self, message: dict[str, Any]) -> None:
        """A message made here (a compaction's summary)."""
        self._items.append(message)

    def add_message_text(self, message: jsonfmt.RawJson) -> None:
        """A `message` entry's message, as its text (an object: checked by the reader)."""
        self._items.append(message)
        self._texts += 1

    def note_setting(self, node: Node) -> None:
        """Track the last thinking level and model along the path (also before a compaction)."""
        if node.type == "thinking_level_change":
            self.thinking_level = None if node.setting is msgspec.UNSET else node.setting
        elif node.type == "model_change" or (node.type == "message" and node.role == "assistant"):
            self.model = model_of(node.setting)

    def add_message(self, node: Node, entry: dict[str, Any]) -> None:
        """pi's appendMessage: the entry types that become messages."""
        if node.type == "message":
            message = entry.get("message")
            if isinstance(message, dict):
                self._items.append(message)
            else:
                self.warnings.append(
                    FileWarning(
                        "message-without-message", f"message entry {node.id} has no message; skipped", entry_id=node.id
                    )
                )
        elif node.type == "custom_message":
            self._items.append(custom_message(entry))
        elif node.type == "branch_summary" and entry.get("summary"):
            self._items.append(branch_summary_message(entry))


_MESSAGE_TYPES = frozenset({"message", "custom_message", "branch_summary"})


def build_context(index: SessionIndex, leaf_id: str | None, load: LoadEntry, load_messages: LoadMessages | None = None) -> Context:
    """pi's buildSessionContext for `leaf_id` (None: the empty context). `load_messages`, if
    given, reads the entries that become messages all at once (see `LoadMessages`)."""
    load_many: LoadMessages = load_messages or (lambda nodes: [load(node) for node in nodes])
    leaf = index.get(leaf_id) if leaf_id is not None else None
    anchors = index.anchors(leaf.seq) if leaf is not None and index.anchors_hold else None
    if leaf is not None and anchors is not None:
        return _build_from_anchors(index, leaf, anchors, load, load_many)
    return _build_by_walking(index, leaf_id, load, load_many)


def _build_from_anchors(index: SessionIndex, leaf: Node, anchors: Anchors, load: LoadEntry, load_many: LoadMessages) -> Context:
    """Walk only from the leaf back to its last compaction (and on to the first kept entry):
    the settings and the compaction come from the leaf's anchors."""
    context = Context(leaf.id)
    thinking, model, compaction = anchors
    for setting in (thinking, model):
        if setting is not None:
            context.note_setting(setting)
    emitted = _up_to(index, leaf.seq, -1 if compaction is None else compaction.seq)
    if compaction is not None:
        entry = load(compaction)
        context.add_summary(compaction_summary_message(entry))
        emitted = _kept_above(index, compaction.seq, entry.get("firstKeptEntryId")) + emitted
    _add_messages(context, [index.node(seq) for seq in emitted if index.type_of(seq) in _MESSAGE_TYPES], load_many)
    return context


def _add_messages(context: Context, nodes: list[Node], load_many: LoadMessages) -> None:
    for node, found in zip(nodes, load_many(nodes), strict=True):
        if type(found) is jsonfmt.RawJson:
            context.add_message_text(found)
        else:
            context.add_message(node, found)  # type: ignore[arg-type]  # not a RawJson: the entry


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


def _build_by_walking(index: SessionIndex, leaf_id: str | None, load: LoadEntry, load_many: LoadMessages) -> Context:
    """The general case (damaged trees: orphans, cycles, repeated ids): the whole path, walked safely."""
    context = Context(leaf_id)
    path = walk_path(index, leaf_id, context.warnings)
    compaction: Node | None = None
    compaction_at = -1
    for position, node in enumerate(path):
        context.note_setting(node)
        if node.type == "compaction":
            compaction, compaction_at = node, position
    if compaction is None:
        emitted = path
    else:
        entry = load(compaction)
        context.add_summary(compaction_summary_message(entry))
        emitted = _kept_before(path[:compaction_at], entry.get("firstKeptEntryId")) + path[compaction_at + 1 :]
    _add_messages(context, [node for node in emitted if node.type in _MESSAGE_TYPES], load_many)
    return context


def _kept_before(before: list[Node], first_kept_id: Any) -> list[Node]:
    """The entries from `firstKeptEntryId` up to the compaction (none if it is not on the path)."""
    for position, node in enumerate(before):
        if node.id == first_kept_id:
            return before[position:]
    return []


class ContextCache:
    """The context of one leaf, kept up to date while entries are appended below it."""

    def __init__(self) -> None:
        self.context: Context | None = None
        self._encoded = 0  # messages whose JSON is in `_wire`
        self._wire = bytearray(b"[")  # the JSON array of those messages, without its closing "]"

    def get(self, leaf_id: str | None) -> Context | None:
        context = self.context
        return context if context is not None and context.leaf_id == leaf_id else None

    def put(self, context: Context) -> None:
        self.context = context
        self._forget_wire()

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
        self._encoded = 0
        self._wire = bytearray(b"[")

    def extend(self, node: Node, entry: dict[str, Any]) -> None:
        """`node` was appended; if it continues the cached leaf, fold it in without a walk."""
        context = self.context
        if context is None or node.parent_id != context.leaf_id or context.leaf_id is None:
            return
        if node.type == "compaction":  # replaces history: rebuild on the next read
            self.clear()
            return
        context.note_setting(node)
        if node.type in _MESSAGE_TYPES:
            context.add_message(node, entry)
        context.leaf_id = node.id

    def clear(self) -> None:
        self.context = None
        self._forget_wire()


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
    if role in ("user", "assistant", "toolResult"):
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
