"""What pi 1.6.0 feeds a summariser and appends to its answer: file operations, the serialized
conversation and the prompts (pi's compaction/utils.js and the prompt builders)."""

from __future__ import annotations

from typing import Any, Final

import attrs

from ..jsstring import js_keys, js_len, js_slice, js_sort_key, js_stringify, js_truthy
from ..summary_types import SummaryPrompt
from . import prompts
from .projection import convert_to_llm
from .system_state import content_text

TOOL_RESULT_MAX_CHARS: Final = 2000


# --------------------------------------------------------------------------- file operations


@attrs.define
class FileOps:
    """pi's three sets, as lists in insertion order (JavaScript sets keep it)."""

    read: list[Any] = attrs.Factory(list)
    written: list[Any] = attrs.Factory(list)
    edited: list[Any] = attrs.Factory(list)

    @staticmethod
    def add(target: list[Any], value: Any) -> None:
        if value not in target:
            target.append(value)

    def add_details(self, details: Any) -> None:
        """A previous summary's `details`: its read files, and its modified files as edited."""
        if not isinstance(details, dict):
            return
        for key, target in (("readFiles", self.read), ("modifiedFiles", self.edited)):
            values = details.get(key)
            if isinstance(values, list):
                for value in values:
                    self.add(target, value)


def extract_file_ops(message: Any, ops: FileOps) -> None:
    """The paths of an assistant message's `read`, `write` and `edit` tool calls, and of the
    calls a tool result records as made from a script (`nestedCalls.calls`)."""
    if not isinstance(message, dict):
        return
    if message.get("role") == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                _add_file_op(call.get("name"), call.get("arguments"), ops)
        return
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, dict) and block.get("type") == "toolCall" and "arguments" in block and "name" in block:
            _add_file_op(block["name"], block["arguments"], ops)


def _add_file_op(tool: Any, args: Any, ops: FileOps) -> None:
    path = args.get("path") if isinstance(args, dict) else None
    if not isinstance(path, str) or not path:
        return
    target = {"read": ops.read, "write": ops.written, "edit": ops.edited}.get(tool) if isinstance(tool, str) else None
    if target is not None:
        ops.add(target, path)


def _sorted_js(values: list[Any]) -> list[Any]:
    """`Array.prototype.sort()`: by the values' string forms in UTF-16 code unit order."""
    return sorted(values, key=lambda value: js_sort_key(value if isinstance(value, str) else js_stringify(value)))


def file_lists(ops: FileOps) -> tuple[list[Any], list[Any]]:
    """(read-only files, modified files), each sorted: pi's computeFileLists."""
    modified = list(ops.edited)
    for path in ops.written:
        FileOps.add(modified, path)
    read_only = [path for path in ops.read if path not in modified]
    return _sorted_js(read_only), _sorted_js(modified)


def format_file_operations(read_files: list[Any], modified_files: list[Any]) -> str:
    """The `<read-files>` / `<modified-files>` blocks pi appends to a summary."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(map(str, read_files)) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(map(str, modified_files)) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


# --------------------------------------------------------------------------- serialization


def slice_head(text: str, max_units: int) -> str:
    """pi's sliceHead: the first `max_units` UTF-16 units, one fewer rather than half a surrogate pair."""
    end = max(0, max_units)
    units = text.encode("utf-16-le", "surrogatepass")
    if 0 < end < len(units) // 2:
        before = int.from_bytes(units[2 * end - 2 : 2 * end], "little")
        after = int.from_bytes(units[2 * end : 2 * end + 2], "little")
        if 0xD800 <= before <= 0xDBFF and 0xDC00 <= after <= 0xDFFF:
            end -= 1
    return js_slice(text, end)


def _truncate(text: str, max_chars: int) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{slice_head(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _tool_call(block: dict[str, Any]) -> str:
    args = block.get("arguments")
    pairs = [f"{key}={js_stringify(args[key])}" for key in js_keys(args)] if isinstance(args, dict) else []
    return f"{_js_template(block.get('name'))}({', '.join(pairs)})"


def _js_template(value: Any) -> str:
    """`${value}` for the values a tool call's name may hold in a file."""
    if isinstance(value, str):
        return value
    if value is None:
        return "undefined"
    return js_stringify(value) if isinstance(value, bool | int | float) else str(value)


def _assistant_parts(content: Any) -> list[str]:
    """Visible text and tool calls; thinking is left out (pi 1.2.0 on: a replayed reasoning
    summary can be larger than the context it summarises)."""
    blocks = [block for block in content if isinstance(block, dict)] if isinstance(content, list) else []
    calls = [_tool_call(block) for block in blocks if block.get("type") == "toolCall"]
    parts = []
    if any(block.get("type") == "text" for block in blocks):
        parts.append("[Assistant]: " + content_text(blocks))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return parts


def serialize_conversation(llm_messages: list[Any]) -> str:
    """pi's serializeConversation: `[User]:`, `[Assistant]:`, … blocks; tool results cut at 2000 units."""
    parts: list[str] = []
    for message in llm_messages:
        role = message.get("role")
        if role == "user" and (text := content_text(message.get("content"), "")):
            parts.append(f"[User]: {text}")
        elif role == "assistant":
            parts += _assistant_parts(message.get("content"))
        elif role == "toolResult" and (text := content_text(message.get("content"), "")):
            parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- prompts


def _request(conversation: str, text: str, thinking_level: Any) -> SummaryPrompt:
    """The call as pi-ai's normalizeContext shapes it: the system prompt as a leading message."""
    messages = [
        {"role": "system", "content": prompts.SYSTEM_PROMPT, "timestamp": 0},
        {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0},
    ]
    level = thinking_level if isinstance(thinking_level, str) else None  # a file may hold anything
    return SummaryPrompt(prompts.SYSTEM_PROMPT, text, conversation, messages, level)


def _conversation(messages: list[Any]) -> str:
    return serialize_conversation(convert_to_llm(messages))


def history_prompt(
    messages: list[Any], previous_summary: Any, custom_instructions: str | None, thinking_level: Any = None
) -> SummaryPrompt:
    """pi's generateSummary: the initial prompt, or the update prompt over a previous summary."""
    instructions = prompts.UPDATE_PROMPT if js_truthy(previous_summary) else prompts.INITIAL_PROMPT
    if custom_instructions:
        instructions += f"\n\nAdditional focus: {custom_instructions}"
    conversation = _conversation(messages)
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if js_truthy(previous_summary):
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return _request(conversation, text + instructions, thinking_level)


def turn_prefix_prompt(messages: list[Any], custom_instructions: str | None, thinking_level: Any = None) -> SummaryPrompt:
    """pi's generateTurnPrefixSummary: the start of a turn too large to keep."""
    conversation = _conversation(messages)
    text = f"# Conversation\n{conversation}\n\n# Instructions\n{prompts.TURN_PREFIX_PROMPT}"
    if custom_instructions:
        text += f"\n\nAdditional focus: {custom_instructions}"
    return _request(conversation, text, thinking_level)


def branch_prompt(
    messages: list[Any], custom_instructions: str | None, replace_instructions: bool, thinking_level: Any = None
) -> SummaryPrompt:
    """pi's generateBranchSummary: the branch prompt, extended or replaced by the client's instructions."""
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{prompts.BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = prompts.BRANCH_SUMMARY_PROMPT
    conversation = _conversation(messages)
    return _request(conversation, f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}", thinking_level)
