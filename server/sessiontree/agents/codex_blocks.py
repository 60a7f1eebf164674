"""Codex's Responses API items as pi-ai's content blocks, usage and settings.

The shapes follow what pi-ai's openai-responses provider stores for the same items, so that pi
can replay an imported session to the Responses API: text keeps its message id in `textSignature`
(`{"v":1,"id":…}`), reasoning keeps the whole item in `thinkingSignature`, and a tool call's id
is `<call_id>|<item id>`.
"""

from __future__ import annotations

import json
from typing import Any, Final

from ..jsstring import js_stringify

# Codex's reasoning efforts as pi's thinking levels.
_LEVELS: Final = {"none": "off", "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh"}


def _dumps(value: Any) -> str:
    """`JSON.stringify`, as pi-ai makes its signatures."""
    return js_stringify(value)


def objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list field (none when the field is not a list)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def texts(value: Any, key: str = "text") -> list[str]:
    """The string `key`s of a list field's objects."""
    return [item[key] for item in objects(value) if isinstance(item.get(key), str)]


def thinking_level(effort: Any) -> str | None:
    """pi's level for a Codex effort; None for none set (the model's default has no pi level)."""
    return _LEVELS.get(effort) if isinstance(effort, str) else None


def _text_signature(item: dict[str, Any]) -> str:
    signature: dict[str, Any] = {"v": 1, "id": item.get("id")}
    if item.get("phase"):
        signature["phase"] = item["phase"]
    return _dumps(signature)


def _arguments(raw: Any) -> dict[str, Any]:
    """pi-ai's parseToolCallArguments: an object, or {} with the reason and the text."""
    if isinstance(raw, dict):
        return {"arguments": raw}
    text = raw if isinstance(raw, str) else ""
    if not text.strip():
        return {"arguments": {}}
    try:
        parsed = json.loads(text)
    except ValueError as error:
        return {"arguments": {}, "argumentsError": f"{error}\n\nReceived arguments:\n{text}"}
    if not isinstance(parsed, dict):
        return {"arguments": {}, "argumentsError": f"Tool arguments must be a JSON object\n\nReceived arguments:\n{text}"}
    return {"arguments": parsed}


def _block(item: dict[str, Any]) -> dict[str, Any] | None:
    kind = item.get("type")
    if kind == "message":
        parts = objects(item.get("content"))
        text = "".join(_part_text(p) for p in parts)
        return {"type": "text", "text": text, "textSignature": _text_signature(item)}
    if kind == "reasoning":
        summary = "\n\n".join(texts(item.get("summary")))
        content = "\n\n".join(texts(item.get("content")))
        return {"type": "thinking", "thinking": summary or content, "thinkingSignature": _dumps(item)}
    call_id, item_id = item.get("call_id"), item.get("id")
    tool_id = f"{call_id}|{item_id}" if item_id else str(call_id)
    if kind == "function_call":
        block = {"type": "toolCall", "id": tool_id, "name": item.get("name", ""), **_arguments(item.get("arguments"))}
    elif kind == "custom_tool_call":  # freeform tools (apply_patch): pi-ai keeps the text under `input`
        block = {"type": "toolCall", "id": tool_id, "name": item.get("name", ""), "arguments": {"input": item.get("input", "")}}
    elif kind == "local_shell_call":  # older models' built-in shell: its action is the arguments
        action = item.get("action")
        block = {"type": "toolCall", "id": tool_id, "name": "local_shell", "arguments": action if isinstance(action, dict) else {}}
    else:
        return None
    if item.get("namespace") is not None:
        block["namespace"] = item["namespace"]
    return block


def _part_text(part: dict[str, Any]) -> str:
    """pi-ai's text of an output part: `output_text`'s text, else its refusal."""
    text = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
    return text if isinstance(text, str) else ""


def assistant_blocks(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [block for block in (_block(item) for item in items) if block is not None]


def _image(url: Any) -> dict[str, Any] | None:
    """A `data:` URL as pi's image block (pi keeps images inline; a remote URL has no pi form)."""
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return None
    head, data = url[5:].split(";base64,", 1)
    return {"type": "image", "data": data, "mimeType": head}


def _parts(parts: Any, text_types: tuple[str, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in objects(parts):
        if part.get("type") in text_types:
            text = part.get("text")
            out.append({"type": "text", "text": text if isinstance(text, str) else ""})
        elif part.get("type") == "input_image":
            image = _image(part.get("image_url"))
            out.append(image or {"type": "text", "text": f"[image: {part.get('image_url')}]"})
    return out


def user_content(item: dict[str, Any]) -> list[dict[str, Any]]:
    return _parts(item.get("content"), ("input_text", "output_text", "text"))


def tool_result_content(output: Any) -> tuple[list[dict[str, Any]], str]:
    """(pi's content, its text) for a function_call_output's `output`: a string or content items."""
    if isinstance(output, dict) and "content" in output:  # legacy: {content, success}
        output = output.get("content")
    if isinstance(output, str):
        return [{"type": "text", "text": output}], output
    content = _parts(output, ("input_text", "output_text", "text"))
    return content, "\n".join(p["text"] for p in content if p["type"] == "text")


def is_error(execution: dict[str, Any] | None, exited: int | None) -> bool:
    """Codex writes no error flag: a failed command's event, or the exit code in the output text."""
    if execution is not None:
        code = execution.get("exit_code")
        if execution.get("status") in ("failed", "declined") or (isinstance(code, int) and code != 0):
            return True
        if isinstance(code, int):
            return False
    return exited is not None and exited != 0


def usage_of(record: dict[str, Any] | None) -> dict[str, Any]:
    """pi-ai's usage from a Responses usage: `input` without the cached and cache-written tokens."""
    usage = record.get("usage") if isinstance(record, dict) else None
    usage = usage if isinstance(usage, dict) else {}

    def number(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached, written = number("cached_input_tokens"), number("cache_write_input_tokens")
    return {
        "input": max(0, number("input_tokens") - cached - written),
        "output": number("output_tokens"),
        "cacheRead": cached,
        "cacheWrite": written,
        "reasoning": number("reasoning_output_tokens"),
        "totalTokens": number("total_tokens"),
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
