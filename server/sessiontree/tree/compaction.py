"""pi 1.6.0's compaction, less the model call: cut points, preparation, the stored summary.

`find_cut_point` is pi's exported findCutPoint over the raw path from the root to a leaf
(decoded entries, pi's `getBranch`). `prepare_compaction` works as pi's prepareCompaction
does, on the leaf's projection (pi's buildSessionProjection): context edits applied, the
system messages of the kept range folded into the newest compaction's checkpoint. The
model's answers come from the client; `compose_summary` turns them into the text pi's
`compact` would store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from ..jsstring import js_truthy
from ..summary_types import CompactionSettings, SummaryPrompt
from .projection import ProjectedEntry, entry_messages
from .summary_text import (
    FileOps,
    extract_file_ops,
    file_lists,
    format_file_operations,
    history_prompt,
    turn_prefix_prompt,
)
from .tokens import Number, estimate_projected_context_tokens, estimate_tokens

NO_PRIOR_HISTORY: Final = "No prior history."
SPLIT_TURN_SEPARATOR: Final = "\n\n---\n\n**Turn Context (split turn):**\n\n"
_CUT_ROLES: Final = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES: Final = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})

Entry = dict[str, Any]


def _roles(messages: list[Any]) -> set[Any]:
    return {message.get("role") for message in messages if isinstance(message, dict)}


def _tokens(messages: list[Any]) -> int:
    return sum(estimate_tokens(message) for message in messages)


# --------------------------------------------------------------------------- cut points


@attrs.define
class CutPoint:
    first_kept_index: int
    turn_start_index: int  # -1: none
    is_split_turn: bool


@attrs.define
class _Visible:
    """What the cut-point search needs of an entry: its type and the messages it contributes."""

    entry: Entry
    messages: list[Any]


def _is_cut_point(item: _Visible) -> bool:
    """A context-visible user-side or assistant message: never a tool result, never a compaction."""
    return item.entry.get("type") != "compaction" and bool(_roles(item.messages) & _CUT_ROLES)


def _starts_turn(item: _Visible) -> bool:
    """pi's isTurnStartEntry: a user, bash execution, custom or summary message opens a turn."""
    return item.entry.get("type") != "compaction" and bool(_roles(item.messages) & _TURN_START_ROLES)


def _turn_start(items: Sequence[_Visible], index: int, start: int) -> int:
    return next((i for i in range(index, start - 1, -1) if _starts_turn(items[i])), -1)


def _budget_cut(items: Sequence[_Visible], points: list[int], start: int, end: int, keep_recent: Number) -> int | None:
    """Walking back from the newest, the first cut point at or after the entry where the kept
    tokens reach `keep_recent` (the last cut point when only trailing tool results lie after it);
    None when the whole range fits."""
    accumulated = 0
    for index in range(end - 1, start - 1, -1):
        tokens = _tokens(items[index].messages)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent:
            return next((point for point in points if point >= index), points[-1])
    return None


def _finish(items: Sequence[_Visible], cut: int, start: int) -> CutPoint:
    """Take along the context-invisible entries just before the cut, then tell a split turn."""
    while cut > start:
        before = items[cut - 1]
        if before.entry.get("type") == "compaction" or before.messages:
            break
        cut -= 1
    if _starts_turn(items[cut]):
        return CutPoint(cut, -1, False)
    turn_start = _turn_start(items, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)


def find_cut_point(entries: list[Entry], start: int, end: int, keep_recent_tokens: Number) -> CutPoint:
    """pi's findCutPoint over raw path entries: keep about `keep_recent_tokens` of the newest."""
    items = [_Visible(entry, entry_messages(entry)) for entry in entries]
    points = [index for index in range(start, end) if _is_cut_point(items[index])]
    if not points:
        return CutPoint(start, -1, False)
    found = _budget_cut(items, points, start, end, keep_recent_tokens)
    return _finish(items, points[0] if found is None else found, start)


def _intrinsically_visible(item: _Visible) -> bool:
    return item.entry.get("type") != "context_edit" and bool(entry_messages(item.entry))


def _omitted(item: _Visible) -> bool:
    """An entry that would be in the context but a context edit hides."""
    return _intrinsically_visible(item) and not item.messages


def _recovery_omission_suffix(suffix: list[_Visible]) -> bool:
    """pi's recovery rule: after the cut, only a hidden failed assistant attempt and its edits.

    A reply that overflowed is omitted by an edit before the recovery compaction; such a
    closed suffix is skipped by the cut. Any other visible entry, a compaction, or an edit
    replacing something outside the suffix keeps the cut where it is.
    """
    omitted_ids = {item.entry.get("id") for item in suffix if _omitted(item)}
    for item in suffix:
        entry = item.entry
        replaces = entry.get("type") == "context_edit" and entry.get("replacement", 0) is not None
        if replaces and entry.get("targetId") not in omitted_ids:
            return False
    has_omitted_reply = any(
        item.entry.get("type") == "message" and _role(item.entry) == "assistant" and _omitted(item) for item in suffix
    )
    closed = all(
        item.entry.get("type") != "compaction" and (not _intrinsically_visible(item) or _omitted(item)) for item in suffix
    )
    return has_omitted_reply and closed


def _role(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("role") if isinstance(message, dict) else None


def find_projected_cut_point(items: Sequence[_Visible], start: int, end: int, keep_recent_tokens: Number) -> CutPoint:
    """pi's findProjectedCutPoint: findCutPoint over the projection, plus the recovery rule."""
    points = [index for index in range(start, end) if _is_cut_point(items[index])]
    if not points:
        return CutPoint(start, -1, False)
    found = _budget_cut(items, points, start, end, keep_recent_tokens)
    cut = points[0] if found is None else found
    if found is not None and _recovery_omission_suffix(list(items[cut + 1 : end])):
        cut += 1
    return _finish(items, cut, start)


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
        """pi skips the history call only for a split turn with nothing new before it."""
        return bool(self.messages_to_summarize) or not self.needs_turn_prefix_summary

    @property
    def needs_turn_prefix_summary(self) -> bool:
        return self.is_split_turn and bool(self.turn_prefix_messages)

    def history_prompt(self, custom_instructions: str | None, thinking_level: Any = None) -> SummaryPrompt | None:
        if not self.needs_history_summary:
            return None
        return history_prompt(self.messages_to_summarize, self.previous_summary, custom_instructions, thinking_level)

    def turn_prefix_prompt(self, custom_instructions: str | None, thinking_level: Any = None) -> SummaryPrompt | None:
        if not self.needs_turn_prefix_summary:
            return None
        return turn_prefix_prompt(self.turn_prefix_messages, custom_instructions, thinking_level)


def _for_summary(item: ProjectedEntry) -> list[Any]:
    """pi's getMessagesFromProjectedEntryForCompaction: no compaction, no system message
    (the prompt state is carried by the compaction's checkpoint, not summarised)."""
    if item.entry.get("type") == "compaction":
        return []
    return [message for message in item.messages if not (isinstance(message, dict) and message.get("role") == "system")]


def _summarised(projected: Sequence[ProjectedEntry], start: int, end: int) -> list[Any]:
    return [message for item in projected[start:end] for message in _for_summary(item)]


def _file_ops(previous: Entry | None, messages: list[Any]) -> FileOps:
    """The previous compaction's files (unless a hook wrote it), then the summarised tool calls."""
    ops = FileOps()
    if previous is not None and not js_truthy(previous.get("fromHook")) and js_truthy(previous.get("details")):
        ops.add_details(previous["details"])
    for message in messages:
        extract_file_ops(message, ops)
    return ops


def prepare_compaction(
    path: list[Entry], projected: Sequence[ProjectedEntry], settings: CompactionSettings
) -> Preparation | None:
    """pi's prepareCompaction for the leaf that ends `path`; `projected` is that leaf's projection.

    None when there is nothing to summarise: an empty path, one that ends in a compaction,
    or a cut that leaves no message before it.
    """
    if not path or path[-1].get("type") == "compaction":
        return None
    previous = next((i for i, item in enumerate(projected) if item.entry.get("type") == "compaction" and item.messages), -1)
    previous_summary = projected[previous].entry.get("summary") if previous >= 0 else None
    start = previous + 1
    items = [_Visible(item.entry, item.messages) for item in projected]
    cut = find_projected_cut_point(items, start, len(items), settings.keep_recent_tokens)
    first_kept = projected[cut.first_kept_index].entry if cut.first_kept_index < len(projected) else {}
    if not first_kept.get("id"):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = _summarised(projected, start, history_end)
    turn_prefix = _summarised(projected, cut.turn_start_index, cut.first_kept_index) if cut.is_split_turn else []
    if not to_summarize and not turn_prefix:
        return None
    return Preparation(
        first_kept_entry_id=first_kept["id"],
        messages_to_summarize=to_summarize,
        turn_prefix_messages=turn_prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=estimate_projected_context_tokens(projected, path).tokens,
        previous_summary=previous_summary,
        file_ops=_file_ops(projected[previous].entry if previous >= 0 else None, to_summarize + turn_prefix),
        settings=settings,
    )


def compose_summary(preparation: Preparation, history: str, turn_prefix: str | None) -> tuple[str, dict[str, Any]]:
    """The summary and details pi's `compact` stores, from the model's answers.

    For a split turn with nothing new before it, the history part is the previous summary,
    or "No prior history." when there is none.
    """
    if preparation.needs_turn_prefix_summary:
        assert turn_prefix is not None
        before: Any = history
        if not preparation.messages_to_summarize:
            before = NO_PRIOR_HISTORY if preparation.previous_summary is None else preparation.previous_summary
        summary = f"{_js_string(before)}{SPLIT_TURN_SEPARATOR}{turn_prefix}"
    else:
        summary = history
    read_files, modified_files = file_lists(preparation.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return summary, {"readFiles": read_files, "modifiedFiles": modified_files}


def _js_string(value: Any) -> str:
    """A template literal's `${value}` for what a summary field may hold in a file."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

