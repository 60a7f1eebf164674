"""What pi feeds a summariser and appends to its answer: file operations, the serialized
conversation and the prompts (pi's compaction/utils.js and the prompt builders)."""

from __future__ import annotations

from typing import Any, Final

import attrs

from ..jsstring import js_keys, js_len, js_slice, js_sort_key, js_stringify
from ..summary_types import SummaryPrompt
from . import prompts
from .projection import convert_to_llm

TOOL_RESULT_MAX_CHARS: Final = 2000
BRANCH_SUMMARY_MAX_TOKENS: Final = 2048


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
    """The paths of an assistant message's `read`, `write` and `edit` tool calls."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict) or block.get("type") != "toolCall" or "name" not in block:
            continue
        args = block.get("arguments")
        path = args.get("path") if isinstance(args, dict) else None
        if not isinstance(path, str) or not path:
            continue
        target = {"read": ops.read, "write": ops.written, "edit": ops.edited}.get(block["name"])
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


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))


def _truncate(text: str, max_chars: int) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{js_slice(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _tool_call(block: dict[str, Any]) -> str:
    args = block.get("arguments")
    pairs = [f"{key}={js_stringify(args[key])}" for key in js_keys(args)] if isinstance(args, dict) else []
    return f"{block.get('name')}({', '.join(pairs)})"


def _string(value: Any) -> str:
    """What `Array.prototype.join` makes of a missing value: nothing."""
    return value if isinstance(value, str) else ""


def _assistant_parts(content: Any) -> list[str]:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(_string(block.get("text")))
        elif kind == "thinking":
            thinking.append(_string(block.get("thinking")))
        elif kind == "toolCall":
            calls.append(_tool_call(block))
    parts = []
    if thinking:
        parts.append("[Assistant thinking]: " + "\n".join(thinking))
    if texts:
        parts.append("[Assistant]: " + "\n".join(texts))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return parts


def serialize_conversation(llm_messages: list[Any]) -> str:
    """pi's serializeConversation: `[User]:`, `[Assistant]:`, … blocks; tool results cut at 2000 chars."""
    parts: list[str] = []
    for message in llm_messages:
        role = message.get("role")
        if role == "user" and (text := _texts(message.get("content"))):
            parts.append(f"[User]: {text}")
        elif role == "assistant":
            parts += _assistant_parts(message.get("content"))
        elif role == "toolResult" and (text := _texts(message.get("content"))):
            parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- prompts


def _prompt(messages: list[Any], instructions: str, max_tokens: int, previous_summary: str | None = None) -> SummaryPrompt:
    conversation = serialize_conversation(convert_to_llm(messages))
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return SummaryPrompt(prompts.SYSTEM_PROMPT, text + instructions, conversation, max_tokens)


def history_prompt(
    messages: list[Any], previous_summary: str | None, custom_instructions: str | None, reserve_tokens: int
) -> SummaryPrompt:
    """pi's generateSummary: the initial prompt, or the update prompt over a previous summary."""
    instructions = prompts.UPDATE_PROMPT if previous_summary else prompts.INITIAL_PROMPT
    if custom_instructions:
        instructions += f"\n\nAdditional focus: {custom_instructions}"
    return _prompt(messages, instructions, int(0.8 * reserve_tokens), previous_summary)


def turn_prefix_prompt(messages: list[Any], reserve_tokens: int) -> SummaryPrompt:
    """pi's generateTurnPrefixSummary: the start of a turn too large to keep."""
    return _prompt(messages, prompts.TURN_PREFIX_PROMPT, int(0.5 * reserve_tokens))


def branch_prompt(messages: list[Any], custom_instructions: str | None, replace_instructions: bool) -> SummaryPrompt:
    """pi's generateBranchSummary: the branch prompt, extended or replaced by the client's instructions."""
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{prompts.BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = prompts.BRANCH_SUMMARY_PROMPT
    return _prompt(messages, instructions, BRANCH_SUMMARY_MAX_TOKENS)
