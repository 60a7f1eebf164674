"""A one-line preview of an entry, for drawing a tree view.

Only the fields a preview shows are decoded (msgspec skips image data, tool arguments and
usage without building them), which makes the first tree of a big session several times
cheaper than decoding every entry whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec

from .. import jsonfmt

PREVIEW_CHARS = 80
_WINDOW = 8 * 1024 * 1024  # bytes read at once for the previews of many lines


class _Block(msgspec.Struct, gc=False):
    type: Any = None
    text: Any = None
    name: Any = None


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    content: str | list[_Block] | None = None
    command: Any = None
    toolName: Any = None
    sections: Any = None  # a system message's named sections (their names are shown, not its tools)


class _Replacement(msgspec.Struct, gc=False):
    content: str | list[_Block] | None = None


class _Line(msgspec.Struct, gc=False):
    type: Any = None
    message: _Message | None = None
    content: str | list[_Block] | None = None
    summary: Any = None
    provider: Any = None
    modelId: Any = None
    thinkingLevel: Any = None
    targetId: Any = None
    label: Any = None
    name: Any = None
    customType: Any = None
    replacement: _Replacement | msgspec.UnsetType | None = msgspec.UNSET  # null: the edit hides its target
    kind: Any = None
    model: Any = None


_decode_line: Final = msgspec.json.Decoder(_Line).decode


def _one_line(text: str) -> str:
    # The usual text: its first 82 characters hold no whitespace but single spaces between words,
    # so folding leaves them as they are and the line is known without folding anything.
    head = text[: PREVIEW_CHARS + 2]
    if head.isprintable() and "  " not in head and head[:1] != " " and head[-1:] != " ":
        if len(text) <= PREVIEW_CHARS:
            return text
        if len(head) == PREVIEW_CHARS + 2:
            return head[: PREVIEW_CHARS - 1] + "…"
    # Whitespace folded over a prefix, not the whole text (a tool result may be pages long): twice
    # the line is usually enough to know the line; if not, four times, as always before.
    flat = " ".join(text[: PREVIEW_CHARS * 2].split())
    if len(flat) <= PREVIEW_CHARS and len(text) > PREVIEW_CHARS * 2:
        flat = " ".join(text[: PREVIEW_CHARS * 4].split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _content_text(content: str | list[_Block] | None) -> str:
    if isinstance(content, str):
        return content
    parts = []
    length = 0
    for block in content or ():
        if block.type == "text" and isinstance(block.text, str):
            parts.append(block.text)
        elif block.type == "toolCall":
            parts.append(f"[{block.name}]")
        elif block.type == "image":
            parts.append("[image]")
        else:
            continue
        length += len(parts[-1])
        if length > PREVIEW_CHARS * 4:
            break  # enough for one line
    return " ".join(parts)


def _message_text(message: _Message | None) -> str:
    if message is None:
        return ""
    if message.role == "bashExecution":
        return f"$ {message.command}"
    if message.role == "toolResult":
        return f"{message.toolName}: {_content_text(message.content)}"
    if message.role == "system":
        return f"system: {_system_text(message)}"
    return _content_text(message.content)


def _system_text(message: _Message) -> str:
    """A system message's own words, else the names of the sections it sets (a patch of the prompt)."""
    text = _content_text(message.content).strip()
    if text or not isinstance(message.sections, dict):
        return text
    return "sections " + ", ".join(message.sections)


def _edit_text(entry: _Line) -> str:
    """What a context edit does to its target."""
    if entry.replacement is None:
        return f"hides {entry.targetId}"
    if isinstance(entry.replacement, _Replacement):
        return f"edits {entry.targetId}: {_content_text(entry.replacement.content)}"
    return f"edits {entry.targetId}"


def _entry_text(entry: _Line) -> str:
    kind = entry.type
    if kind == "message":
        return _message_text(entry.message)
    if kind == "custom_message":
        return _content_text(entry.content)
    if kind in ("compaction", "branch_summary"):
        return str(entry.summary or "")
    if kind == "model_change":
        return f"{entry.provider}/{entry.modelId}"
    if kind == "thinking_level_change":
        return f"thinking: {entry.thinkingLevel}"
    if kind == "label":
        return f"{entry.targetId}: {entry.label or '(cleared)'}"
    if kind == "session_info":
        return f"name: {entry.name}"
    if kind == "custom":
        return str(entry.customType or "")
    if kind == "context_edit":
        return _edit_text(entry)
    if kind == "usage":
        return f"usage {entry.kind} {entry.model}"
    return ""


def _parse(line: bytes | memoryview) -> _Line | None:
    try:
        return _decode_line(line)
    except (msgspec.MsgspecError, RecursionError):  # lone surrogates, broken UTF-8, odd shapes, deep nesting
        pass
    try:
        return msgspec.convert(jsonfmt.loads(line), _Line)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None


def preview_of_line(line: bytes | memoryview) -> str | None:
    """The preview of an entry's line; None when there is nothing to show."""
    entry = _parse(line)
    text = _one_line(_entry_text(entry)) if entry is not None else ""
    return text or None


def previews_of_lines(
    read: Callable[[int, int], bytes], offsets: Sequence[int], lengths: Sequence[int], seqs: Sequence[int]
) -> list[str | None]:
    """`preview_of_line` of the lines at `seqs` (in file order), read in blocks of up to
    `_WINDOW` bytes rather than one read per line."""
    previews: list[str | None] = []
    at, count = 0, len(seqs)
    while at < count:
        first = offsets[seqs[at]]
        limit, until = first + _WINDOW, at + 1
        while until < count and offsets[seqs[until]] + lengths[seqs[until]] <= limit:
            until += 1
        last = seqs[until - 1]
        block = memoryview(read(first, offsets[last] + lengths[last] - first))
        previews += [
            preview_of_line(block[offsets[seq] - first : offsets[seq] - first + lengths[seq]]) for seq in seqs[at:until]
        ]
        at = until
    return previews
