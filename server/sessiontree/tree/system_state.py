"""pi-ai's replay of system messages into one: the prompt and tools in force at a point.

pi 1.x persists the first request's prompt and tools as a `system` message and later
changes as system messages that patch `sections` by name. A compaction stores the
replay (`getCurrentSystemMessage`) as its `systemMessage`, and the token estimate of a
context counts the replay once instead of every patch.
"""

from __future__ import annotations

from typing import Any

from ..jsstring import js_keys


def content_text(content: Any, separator: str = "\n") -> str:
    """pi-ai's contentText: a string as is, else its text blocks joined (a missing text is "")."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    texts = (block.get("text") for block in blocks if isinstance(block, dict) and block.get("type") == "text")
    return separator.join(text if isinstance(text, str) else "" for text in texts)


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"


def _named(values: Any) -> list[dict[str, Any]]:
    return [value for value in values if isinstance(value, dict)] if isinstance(values, list) else []


def _map_key(name: Any) -> Any:
    """A JavaScript Map key: primitives by value, objects by identity."""
    return name if name is None or isinstance(name, str | int | float | bool) else ("object", id(name))


def current_tools(messages: list[Any]) -> list[Any]:
    """pi-ai's getCurrentTools: every system message's removals then additions, by tool name."""
    tools: dict[Any, Any] = {}
    for message in messages:
        if not _is_system(message):
            continue
        for tool in _named(message.get("toolsRemoved")):
            tools.pop(_map_key(tool.get("name")), None)
        for tool in _named(message.get("toolsAdded")):
            tools[_map_key(tool.get("name"))] = tool  # a Map keeps the first insertion's place on a reset
    return list(tools.values())


def current_system_message(messages: list[Any]) -> dict[str, Any] | None:
    """pi-ai's getCurrentSystemMessage: the replayed prompt, sections and tools, or None.

    None when no system message has a timestamp and no tools are declared (pi's
    `timestamp === undefined && tools.length === 0`).
    """
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = None
    seen_timestamp = False
    for message in messages:
        if not _is_system(message):
            continue
        if timestamp is None and "timestamp" in message:  # `timestamp ??= message.timestamp`
            timestamp, seen_timestamp = message["timestamp"], True
        text = content_text(message.get("content"))
        if text:
            content.append(text)
        patch = message.get("sections")
        for name in js_keys(patch) if isinstance(patch, dict) else ():
            if patch[name] is None:
                sections.pop(name, None)
            else:
                sections[name] = patch[name]
    tools = current_tools(messages)
    if not seen_timestamp and not tools:
        return None
    replayed: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        replayed["sections"] = {name: sections[name] for name in js_keys(sections)}  # Object.fromEntries
    if tools:
        replayed["toolsAdded"] = tools
    replayed["timestamp"] = 0 if timestamp is None else timestamp
    return replayed
