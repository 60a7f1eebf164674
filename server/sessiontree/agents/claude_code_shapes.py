"""Claude Code's lines in pi's shapes: content blocks, usage, stop reasons, and the entries built from them.

Pure functions of the lines they are given; the order and the tree are `claude_code`'s business.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

API = "anthropic-messages"
PROVIDER = "anthropic"

# Anthropic stop reasons as pi-ai's anthropic provider maps them.
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
    "sensitive": "error",
}
# pi-ai's words for the stop reasons that are errors without a message of their own.
_STOP_ERRORS = {
    "refusal": "The model refused to complete the request",
    "sensitive": "Provider stopped with: sensitive",
}
# A response with one of these reasons has no block after its final text one.
ENDED_REASONS = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal", "model_context_window_exceeded"})

# String prompts that are slash-command bookkeeping, not typed text.
_COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)


_PI_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def iso(value: Any) -> str | None:
    """An ISO time as pi writes it (milliseconds, `Z`), or None when it is not one."""
    if not isinstance(value, str):
        return None
    if _PI_TIME.fullmatch(value):  # what Claude Code writes already
        return value
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{parsed.microsecond // 1000:03d}Z"


def ms(value: str) -> int:
    """Milliseconds since the epoch of a time `iso` gave."""
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def _image(block: dict[str, Any]) -> dict[str, Any] | None:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        return {"type": "image", "data": source.get("data", ""), "mimeType": source.get("media_type", "")}
    return None


def user_content(content: Any) -> list[dict[str, Any]]:
    """A user message's text and image blocks (a string is one text block); other blocks stay as they are."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict) or block.get("type") == "tool_result":
            continue
        image = _image(block) if block.get("type") == "image" else None
        blocks.append(image or ({"type": "text", "text": block["text"]} if block.get("type") == "text" else block))
    return blocks


def tool_result_content(content: Any) -> list[dict[str, Any]]:
    """A tool_result's content (a string or text/image blocks) as pi's toolResult content."""
    return user_content(content if content is not None else "")


def assistant_block(block: Any) -> dict[str, Any]:
    """One Anthropic response block as pi's: text, toolCall, thinking; others (redacted_thinking,
    server_tool_use, …) kept as they are, since pi has no type for them."""
    if not isinstance(block, dict):
        return {"type": "text", "text": str(block)}
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return {
            "type": "toolCall",
            "id": block.get("id", ""),
            "name": block.get("name", ""),
            "arguments": block.get("input", {}),
        }
    if kind == "redacted_thinking":  # as pi-ai keeps it, to be passed back as it came
        return {
            "type": "thinking",
            "thinking": "[Reasoning redacted]",
            "thinkingSignature": block.get("data", ""),
            "redacted": True,
        }
    if kind == "thinking":
        return {
            "type": "thinking",
            "thinking": block.get("thinking", ""),
            "thinkingSignature": block.get("signature", ""),
        }
    return dict(block)


def usage(raw: Any) -> dict[str, Any]:
    """Anthropic usage as pi's (cost is not stored by Claude Code: zero)."""
    raw = raw if isinstance(raw, dict) else {}
    counts = {
        "input": _count(raw.get("input_tokens")),
        "output": _count(raw.get("output_tokens")),
        "cacheRead": _count(raw.get("cache_read_input_tokens")),
        "cacheWrite": _count(raw.get("cache_creation_input_tokens")),
    }
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {**counts, "totalTokens": sum(counts.values()), "cost": cost}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def stop_reason(line: dict[str, Any]) -> str:
    if line.get("isApiErrorMessage") is True:
        return "error"
    return _STOP_REASONS.get(str(message_of(line).get("stop_reason")), "stop")


def message_of(line: dict[str, Any]) -> dict[str, Any]:
    message = line.get("message")
    return message if isinstance(message, dict) else {}


def blocks_of(line: dict[str, Any]) -> list[Any]:
    content = message_of(line).get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def assistant_message(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """One pi assistant message from the lines of one response (one line per content block, each
    carrying the whole response's usage: taken once, from the last)."""
    last = lines[-1]
    raw = message_of(last)
    content = [assistant_block(block) for line in lines for block in blocks_of(line)]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": API,
        "provider": PROVIDER,
        "model": str(message_of(last).get("model", "")),
        "usage": usage(message_of(last).get("usage")),
        "stopReason": stop_reason(last),
        "timestamp": ms(iso(lines[0].get("timestamp")) or "1970-01-01T00:00:00.000Z"),
    }
    if isinstance(raw.get("id"), str) and raw.get("model") != "<synthetic>":
        message["responseId"] = raw["id"]
    if isinstance(raw.get("stop_reason"), str):
        message["rawStopReason"] = raw["stop_reason"]
    if message["stopReason"] == "error":
        message["errorMessage"] = _error_message(last, content)
    return message


def _error_message(line: dict[str, Any], content: list[dict[str, Any]]) -> str:
    """An API error line's text; a refusal's explanation as pi-ai gives it."""
    if line.get("isApiErrorMessage") is True:
        return "\n".join(b["text"] for b in content if b.get("type") == "text")
    reason = str(message_of(line).get("stop_reason"))
    details = message_of(line).get("stop_details")
    explanation = details.get("explanation") if isinstance(details, dict) else None
    return explanation if isinstance(explanation, str) and explanation else _STOP_ERRORS.get(reason, reason)


def response_ended(lines: list[dict[str, Any]]) -> bool:
    """Whether a response's lines so far are all of it: it ended on text, or is one the harness made whole."""
    last = lines[-1]
    if last.get("isApiErrorMessage") is True or message_of(last).get("model") == "<synthetic>":
        return True
    blocks = blocks_of(last)
    final = blocks[-1] if blocks else None
    return (
        message_of(last).get("stop_reason") in ENDED_REASONS and isinstance(final, dict) and final.get("type") == "text"
    )


def is_meta(line: dict[str, Any]) -> bool:
    """Harness text the model sees but nobody typed: isMeta lines and slash-command bookkeeping."""
    if line.get("isMeta") is True:
        return True
    content = message_of(line).get("content")
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        content = content[0].get("text")
    return isinstance(content, str) and content.lstrip().startswith(_COMMAND_PREFIXES)


def tool_results(line: dict[str, Any]) -> list[dict[str, Any]]:
    content = message_of(line).get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict) and block.get("type") == "tool_result"]


def tool_result_message(block: dict[str, Any], tool_name: str, details: Any, timestamp: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": str(block.get("tool_use_id", "")),
        "toolName": tool_name,
        "content": tool_result_content(block.get("content")),
        "isError": block.get("is_error") is True,
        "timestamp": timestamp,
    }
    if details is not None:
        message["details"] = details
    return message


def summary_text(line: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in user_content(message_of(line).get("content")) if b.get("type") == "text")
