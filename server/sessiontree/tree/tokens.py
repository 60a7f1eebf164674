"""pi 1.6.0's token accounting: the chars/4 estimate of a message and the tokens of a context.

pi counts characters as JavaScript does (UTF-16 code units) and never calls a tokenizer;
the context's size is the last valid assistant usage plus estimates of what follows it,
unless a context edit or compaction came after that usage (then all of it is estimated).
Values that are not numbers make JavaScript's arithmetic NaN; NaN is kept here as
`float("nan")` (written as `null`), so comparisons with it are false, as in pi.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, Protocol, TypeGuard

import attrs

from ..jsstring import js_len, js_stringify, js_truthy
from ..summary_types import CompactionSettings
from .system_state import current_system_message

IMAGE_CHARS: Final = 4800  # pi counts an image block as 4800 characters (1200 tokens)
NAN: Final = float("nan")
Number = int | float


def _is_number(value: Any) -> TypeGuard[Number]:
    return type(value) is int or type(value) is float


def _content_chars(content: Any) -> int:
    """pi's estimateTextAndImageContentChars: a string's length, or text blocks plus 4800 per image."""
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind, text = block.get("type"), block.get("text")
        if kind == "text" and isinstance(text, str):
            chars += js_len(text)
        elif kind == "image":
            chars += IMAGE_CHARS
    return chars


def _system_chars(message: dict[str, Any]) -> int:
    """The prompt text, every section still set, and the declared tools as JSON."""
    chars = _content_chars(message.get("content"))
    sections = message.get("sections")
    for section in sections.values() if isinstance(sections, dict) else ():
        if isinstance(section, str):
            chars += js_len(section)
    tools = message.get("toolsAdded")
    if js_truthy(tools):
        chars += js_len(js_stringify(tools))
    return chars


def _assistant_chars(content: Any) -> int:
    chars = 0
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            chars += _string_chars(block.get("text"))
        elif kind == "thinking":
            chars += _string_chars(block.get("thinking"))
        elif kind == "toolCall":
            chars += _string_chars(block.get("name")) + js_len(js_stringify(block.get("arguments")))
    return chars


def _string_chars(value: Any) -> int:
    return js_len(value) if isinstance(value, str) else 0


def estimate_tokens(message: Any) -> int:
    """pi's estimateTokens: ceil(chars / 4) over what the message carries, by role."""
    if not isinstance(message, dict):
        return 0
    role = message.get("role")
    content = message.get("content")
    if role == "system":
        chars = _system_chars(message)
    elif role in ("user", "custom", "toolResult"):
        chars = _content_chars(content)
    elif role == "assistant":
        chars = _assistant_chars(content)
    elif role == "bashExecution":
        chars = _string_chars(message.get("command")) + _string_chars(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        chars = _string_chars(message.get("summary"))
    else:
        return 0
    return -(-chars // 4)


def assistant_usage(message: Any) -> dict[str, Any] | None:
    """The usage of an assistant message that completed and counted something.

    pi skips aborted and error replies, and usage whose context tokens are 0 or NaN
    (`calculateContextTokens(usage) > 0` is false for both).
    """
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if message.get("stopReason") in ("aborted", "error") or not js_truthy(usage):
        return None
    found = usage if isinstance(usage, dict) else {}
    return found if calculate_context_tokens(found) > 0 else None


def calculate_context_tokens(usage: dict[str, Any]) -> Number:
    """pi's calculateContextTokens: `totalTokens`, or the sum of its parts when that is 0 or absent."""
    total = usage.get("totalTokens")
    if _is_number(total) and total and not math.isnan(total):
        return total
    parts: list[Any] = [usage.get(key) for key in ("input", "output", "cacheRead", "cacheWrite")]
    if not all(_is_number(part) for part in parts):
        return NAN
    total_of_parts: Number = sum(parts)
    return total_of_parts


@attrs.define
class ContextTokens:
    """pi's estimateContextTokens result."""

    tokens: Number
    usage_tokens: Number
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: list[Any]) -> ContextTokens:
    """The last valid assistant usage plus estimates of the messages after it (all estimated if none)."""
    for index in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[index])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate_tokens(message) for message in messages[index + 1 :])
            return ContextTokens(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum(estimate_tokens(message) for message in messages)
    return ContextTokens(estimated, 0, estimated, None)


class ProjectedEntry(Protocol):
    """One entry of pi's buildSessionProjection: the source entry and the messages it gives."""

    @property
    def entry(self) -> dict[str, Any]: ...

    @property
    def messages(self) -> list[Any]: ...


_INVALIDATING: Final = frozenset({"context_edit", "compaction"})


def _usage_entry_id(projected: Sequence[ProjectedEntry], message_index: int) -> Any:
    """The id of the projected entry whose messages hold the context's `message_index`-th message."""
    start = 0
    for entry in projected:
        start += len(entry.messages)
        if message_index < start:
            return entry.entry.get("id")
    return None


def estimate_projected_context_tokens(projected: Sequence[ProjectedEntry], branch: list[dict[str, Any]]) -> ContextTokens:
    """pi's estimateProjectedContextTokens: the usage estimate, unless its usage was recorded
    before the latest context edit or compaction on the branch; then every message is
    estimated from its characters, the system messages once as their replay."""
    messages = [message for entry in projected for message in entry.messages]
    estimate = estimate_context_tokens(messages)
    if estimate.last_usage_index is not None:
        usage_id = _usage_entry_id(projected, estimate.last_usage_index)
        ids = [entry.get("id") for entry in branch]
        usage_at = ids.index(usage_id) if usage_id and usage_id in ids else -1
        invalidated_at = next((i for i in range(len(branch) - 1, -1, -1) if branch[i].get("type") in _INVALIDATING), -1)
        if usage_at > invalidated_at:
            return estimate
    return estimate_from_characters(messages)


def estimate_from_characters(messages: list[Any]) -> ContextTokens:
    """Every message estimated from its characters, the system messages once, as their replay."""
    system = current_system_message(messages)
    tokens = estimate_tokens(system) if system is not None else 0
    tokens += sum(estimate_tokens(message) for message in messages if not _is_system(message))
    return ContextTokens(tokens, 0, tokens, None)


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


def should_compact(context_tokens: Number, context_window: Number, settings: CompactionSettings) -> bool:
    """pi's shouldCompact: enabled, and the context is past the window minus the reserve."""
    return bool(settings.enabled) and context_tokens > context_window - settings.reserve_tokens
