"""pi's token accounting: the chars/4 estimate of a message and the tokens of a context.

pi counts characters as JavaScript does (UTF-16 code units) and never calls a tokenizer;
the context's size is the last valid assistant usage plus estimates of what follows it.
Values that are not numbers make JavaScript's arithmetic NaN; NaN is kept here as
`float("nan")` (written as `null`), so comparisons with it are false, as in pi.
"""

from __future__ import annotations

import math
from typing import Any, Final, TypeGuard

import attrs

from ..jsstring import js_len, js_stringify, js_truthy
from ..summary_types import CompactionSettings

IMAGE_CHARS: Final = 4800  # pi counts an image block as 4800 characters (1200 tokens)
NAN: Final = float("nan")
Number = int | float


def _is_number(value: Any) -> TypeGuard[Number]:
    return type(value) is int or type(value) is float


def _text_chars(blocks: Any, count_images: bool) -> int:
    chars = 0
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        kind, text = block.get("type"), block.get("text")
        if kind == "text" and isinstance(text, str):
            chars += js_len(text)
        elif kind == "image" and count_images:
            chars += IMAGE_CHARS
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
    if role == "user":
        chars = js_len(content) if isinstance(content, str) else _text_chars(content, count_images=False)
    elif role == "assistant":
        chars = _assistant_chars(content)
    elif role in ("custom", "toolResult"):
        chars = js_len(content) if isinstance(content, str) else _text_chars(content, count_images=True)
    elif role == "bashExecution":
        chars = _string_chars(message.get("command")) + _string_chars(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        chars = _string_chars(message.get("summary"))
    else:
        return 0
    return -(-chars // 4)


def assistant_usage(message: Any) -> dict[str, Any] | None:
    """The usage of an assistant message that completed (pi skips aborted and error replies)."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    usage = message.get("usage")
    if message.get("stopReason") in ("aborted", "error") or not js_truthy(usage):
        return None
    return usage if isinstance(usage, dict) else {}


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


def should_compact(context_tokens: Number, context_window: Number, settings: CompactionSettings) -> bool:
    """pi's shouldCompact: enabled, and the context is past the window minus the reserve."""
    return bool(settings.enabled) and context_tokens > context_window - settings.reserve_tokens
