"""pi 1.6.0's branch summaries, less the model call: what is left behind when the leaf moves.

Moving from A to B, pi summarises the entries from A back to the deepest entry on both
paths (`collectEntriesForBranchSummary`), newest first within a token budget
(`prepareBranchEntries`), as the model saw them (the latest context edit among those
entries hides or replaces its target), and stores the answer with a preamble and the
file lists.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import msgspec

from ..entries import Node, iso_to_ms
from ..jsstring import js_truthy
from ..store import SessionIndex
from . import prompts
from .projection import (
    branch_summary_message,
    compaction_summary_message,
    edit_replacement,
    edited_messages,
    entry_messages,
    walk_path,
)
from .summary_text import FileOps, extract_file_ops, file_lists, format_file_operations
from .tokens import estimate_tokens

DEFAULT_CONTEXT_WINDOW: Final = 128000  # pi's fallback when the model names none
DEFAULT_RESERVE_TOKENS: Final = 16384
NO_CONTENT: Final = "No content to summarize"
_SUMMARY_TYPES: Final = frozenset({"compaction", "branch_summary"})


def collect_entries(index: SessionIndex, old_leaf: str | None, target: str) -> tuple[list[Node], str | None]:
    """The entries from `old_leaf` back to the common ancestor with `target`, oldest first."""
    if not old_leaf:
        return [], None
    old_path = walk_path(index, old_leaf)
    on_old_path = {node.id for node in old_path}
    common = next((node.id for node in reversed(walk_path(index, target)) if node.id in on_old_path), None)
    left: list[Node] = []
    for node in reversed(old_path):
        if node.id == common:
            break
        left.append(node)
    left.reverse()
    return left, common


Replacement = dict[str, Any] | None


def _edited(entry: dict[str, Any], replacement: Replacement) -> Any:
    """pi's `projectContextEntry(entry, edit)[0]`: None when the edit hides the entry."""
    messages = edited_messages(entry_messages(entry), replacement)
    return messages[0] if messages else None


def _custom_message(entry: dict[str, Any]) -> dict[str, Any]:
    """pi's createCustomMessage as prepareBranchEntries calls it: the content as the entry has it."""
    message: dict[str, Any] = {"role": "custom"}
    message.update((key, entry[key]) for key in ("customType", "content", "display", "details") if key in entry)
    message["timestamp"] = iso_to_ms(entry.get("timestamp"))
    return message


def _branch_message(entry: dict[str, Any], edits: dict[Any, Replacement]) -> Any:
    """pi's getMessageFromEntry for branch summaries. Tool results are left out: the
    assistant's tool call carries their context."""
    kind, edited = entry.get("type"), entry.get("id") in edits
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "toolResult":
            return None
        return _edited(entry, edits[entry.get("id")]) if edited else message
    if kind == "custom_message":
        return _edited(entry, edits[entry.get("id")]) if edited else _custom_message(entry)
    if kind == "branch_summary":
        return branch_summary_message(entry)
    if kind == "compaction":
        return compaction_summary_message(entry)
    return None


def _latest_edits(entries: list[dict[str, Any]]) -> dict[Any, Replacement]:
    """Per target, the replacement of the latest context_edit among the summarised entries."""
    edits: dict[Any, Replacement] = {}
    for entry in entries:
        if entry.get("type") == "context_edit" and isinstance(entry.get("targetId"), str):
            replacement = edit_replacement(entry)
            if replacement is not msgspec.UNSET:
                edits[entry["targetId"]] = replacement
    return edits


@attrs.define
class BranchEntries:
    messages: list[Any]
    file_ops: FileOps
    total_tokens: int


def prepare_branch_entries(entries: list[dict[str, Any]], token_budget: float = 0) -> BranchEntries:
    """pi's prepareBranchEntries: the newest messages that fit, file operations from all of them."""
    ops = FileOps()
    for entry in entries:
        if entry.get("type") == "branch_summary" and not js_truthy(entry.get("fromHook")) and js_truthy(entry.get("details")):
            ops.add_details(entry["details"])
    edits = _latest_edits(entries)
    kept: list[Any] = []
    total = 0
    for entry in reversed(entries):
        message = _branch_message(entry, edits)
        if message is None:
            continue
        extract_file_ops(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            # A summary is worth squeezing in while the budget is under 90% used.
            if entry.get("type") in _SUMMARY_TYPES and total < token_budget * 0.9:
                kept.append(message)
                total += tokens
            break
        kept.append(message)
        total += tokens
    kept.reverse()
    return BranchEntries(kept, ops, total)


def compose_branch_summary(prepared: BranchEntries, answer: str | None) -> tuple[str, dict[str, Any]]:
    """The summary and details pi's navigateTree stores: preamble + answer + file lists.

    With no messages pi asks no model and stores "No content to summarize" without files.
    """
    if not prepared.messages:
        return NO_CONTENT, {"readFiles": [], "modifiedFiles": []}
    read_files, modified_files = file_lists(prepared.file_ops)
    summary = prompts.BRANCH_SUMMARY_PREAMBLE + (answer or "") + format_file_operations(read_files, modified_files)
    return summary, {"readFiles": read_files, "modifiedFiles": modified_files}


def landing(target: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where pi's navigateTree puts the leaf for a target, and the text it gives the editor.

    A user message or custom message is re-opened for editing: the leaf goes to its parent.
    """
    kind = target.get("type")
    message = target.get("message")
    if kind == "message" and isinstance(message, dict) and message.get("role") == "user":
        return target.get("parentId"), _editor_text(message.get("content"))
    if kind == "custom_message":
        return target.get("parentId"), _editor_text(target.get("content"))
    return target.get("id"), None


def _editor_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str))
    return ""
