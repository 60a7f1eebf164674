"""A one-line preview of an entry, for drawing a tree view."""

from __future__ import annotations

from typing import Any

PREVIEW_CHARS = 80


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "toolCall":
            parts.append(f"[{block.get('name')}]")
        elif kind == "image":
            parts.append("[image]")
    return " ".join(parts)


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    role = message.get("role")
    if role == "bashExecution":
        return f"$ {message.get('command')}"
    if role == "toolResult":
        return f"{message.get('toolName')}: {_content_text(message.get('content'))}"
    return _content_text(message.get("content"))


def _entry_text(entry: dict[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message":
        return _message_text(entry.get("message"))
    if kind == "custom_message":
        return _content_text(entry.get("content"))
    if kind in ("compaction", "branch_summary"):
        return str(entry.get("summary") or "")
    if kind == "model_change":
        return f"{entry.get('provider')}/{entry.get('modelId')}"
    if kind == "thinking_level_change":
        return f"thinking: {entry.get('thinkingLevel')}"
    if kind == "label":
        return f"{entry.get('targetId')}: {entry.get('label') or '(cleared)'}"
    if kind == "session_info":
        return f"name: {entry.get('name')}"
    if kind == "custom":
        return str(entry.get("customType") or "")
    return ""


def preview(entry: dict[str, Any]) -> str | None:
    text = _one_line(_entry_text(entry))
    return text or None
