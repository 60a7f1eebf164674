"""pi 0.73.1's compaction, less the model call: cut points, preparation, the stored summary.

Everything works on the path from the root to a leaf, as decoded entries (pi's
`getBranch`). The model's answers come from the client; `compose_summary` turns them
into the text pi's `compact` would store.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ..jsstring import js_truthy
from ..summary_types import CompactionSettings, SummaryPrompt
from .projection import branch_summary_message, compaction_summary_message, custom_message
from .summary_text import (
    FileOps,
    extract_file_ops,
    file_lists,
    format_file_operations,
    history_prompt,
    turn_prefix_prompt,
)
from .tokens import Number, estimate_context_tokens, estimate_tokens

NO_PRIOR_HISTORY: Final = "No prior history."
SPLIT_TURN_SEPARATOR: Final = "\n\n---\n\n**Turn Context (split turn):**\n\n"
_CUT_ROLES: Final = frozenset({"bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant"})
_USER_ROLE_TYPES: Final = frozenset({"branch_summary", "custom_message"})  # user-role messages in pi's eyes

Entry = dict[str, Any]


def _role(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def message_of(entry: Entry) -> Any:
    """pi's getMessageFromEntry: the message an entry contributes (None for none)."""
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message")
    if kind == "custom_message":
        return custom_message(entry)
    if kind == "branch_summary":
        return branch_summary_message(entry)
    if kind == "compaction":
        return compaction_summary_message(entry)
    return None


def _message_for_compaction(entry: Entry) -> Any:
    """Compaction entries are not messages to summarise: their summary goes in as the previous one."""
    return None if entry.get("type") == "compaction" else message_of(entry)


# --------------------------------------------------------------------------- cut points


@attrs.define
class CutPoint:
    first_kept_index: int
    turn_start_index: int  # -1: none
    is_split_turn: bool


def valid_cut_points(entries: list[Entry], start: int, end: int) -> list[int]:
    """Where a kept part may begin: user-side and assistant messages, never a tool result."""
    points = []
    for index in range(start, end):
        entry = entries[index]
        kind = entry.get("type")
        if (kind == "message" and _role(entry) in _CUT_ROLES) or kind in _USER_ROLE_TYPES:
            points.append(index)
    return points


def turn_start_index(entries: list[Entry], index: int, start: int) -> int:
    """The user message (or bash execution, branch summary, custom message) that opens the turn."""
    for position in range(index, start - 1, -1):
        entry = entries[position]
        if entry.get("type") in _USER_ROLE_TYPES:
            return position
        if entry.get("type") == "message" and _role(entry) in ("user", "bashExecution"):
            return position
    return -1


def find_cut_point(entries: list[Entry], start: int, end: int, keep_recent_tokens: Number) -> CutPoint:
    """pi's findCutPoint: keep about `keep_recent_tokens` of the newest messages."""
    points = valid_cut_points(entries, start, end)
    if not points:
        return CutPoint(start, -1, False)
    cut = points[0]
    accumulated = 0
    for index in range(end - 1, start - 1, -1):
        if entries[index].get("type") != "message":
            continue
        accumulated += estimate_tokens(entries[index].get("message"))
        if accumulated >= keep_recent_tokens:
            cut = next((point for point in points if point >= index), cut)
            break
    while cut > start:  # take along the settings and other non-message entries just before the cut
        before = entries[cut - 1].get("type")
        if before in ("compaction", "message"):
            break
        cut -= 1
    if entries[cut].get("type") == "message" and _role(entries[cut]) == "user":
        return CutPoint(cut, -1, False)
    turn_start = turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)


# --------------------------------------------------------------------------- preparation


@attrs.define
class Preparation:
    """pi's CompactionPreparation."""

    first_kept_entry_id: str
    messages_to_summarize: list[Any]
    turn_prefix_messages: list[Any]
    is_split_turn: bool
    tokens_before: Number
    previous_summary: Any  # None: pi's undefined (no compaction before)
    file_ops: FileOps
    settings: CompactionSettings

    @property
    def needs_history_summary(self) -> bool:
        """pi skips the history call only for a split turn with nothing before it."""
        return bool(self.messages_to_summarize) or not self.needs_turn_prefix_summary

    @property
    def needs_turn_prefix_summary(self) -> bool:
        return self.is_split_turn and bool(self.turn_prefix_messages)

    def history_prompt(self, custom_instructions: str | None) -> SummaryPrompt | None:
        if not self.needs_history_summary:
            return None
        return history_prompt(
            self.messages_to_summarize, self.previous_summary, custom_instructions, self.settings.reserve_tokens
        )

    def turn_prefix_prompt(self) -> SummaryPrompt | None:
        if not self.needs_turn_prefix_summary:
            return None
        return turn_prefix_prompt(self.turn_prefix_messages, self.settings.reserve_tokens)


def _previous_compaction(entries: list[Entry]) -> int:
    for index in range(len(entries) - 1, -1, -1):
        if entries[index].get("type") == "compaction":
            return index
    return -1


def _messages(entries: list[Entry], start: int, end: int) -> list[Any]:
    return [message for entry in entries[start:end] if (message := _message_for_compaction(entry)) is not None]


def prepare_compaction(path: list[Entry], context: list[Any], settings: CompactionSettings) -> Preparation | None:
    """pi's prepareCompaction over the path to a leaf; `context` is the leaf's built context.

    None when there is nothing to do: an empty path, or one that already ends in a compaction.
    """
    if not path or path[-1].get("type") == "compaction":
        return None
    previous = _previous_compaction(path)
    previous_summary = None
    start = 0
    if previous >= 0:
        previous_summary = path[previous].get("summary")
        kept_id = path[previous].get("firstKeptEntryId")
        start = next((i for i, entry in enumerate(path) if entry.get("id") == kept_id), previous + 1)
    cut = find_cut_point(path, start, len(path), settings.keep_recent_tokens)
    first_kept = path[cut.first_kept_index] if cut.first_kept_index < len(path) else {}
    if not first_kept.get("id"):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _messages(path, start, history_end)
    turn_prefix = _messages(path, cut.turn_start_index, cut.first_kept_index) if cut.is_split_turn else []
    ops = FileOps()
    if previous >= 0 and not js_truthy(path[previous].get("fromHook")) and js_truthy(path[previous].get("details")):
        ops.add_details(path[previous]["details"])
    for message in to_summarize + turn_prefix:
        extract_file_ops(message, ops)
    return Preparation(
        first_kept_entry_id=first_kept["id"],
        messages_to_summarize=to_summarize,
        turn_prefix_messages=turn_prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=estimate_context_tokens(context).tokens,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
    )


def compose_summary(preparation: Preparation, history: str, turn_prefix: str | None) -> tuple[str, dict[str, Any]]:
    """The summary and details pi's `compact` stores, from the model's answers."""
    if preparation.needs_turn_prefix_summary:
        assert turn_prefix is not None
        before = history if preparation.messages_to_summarize else NO_PRIOR_HISTORY
        summary = f"{before}{SPLIT_TURN_SEPARATOR}{turn_prefix}"
    else:
        summary = history
    read_files, modified_files = file_lists(preparation.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return summary, {"readFiles": read_files, "modifiedFiles": modified_files}
