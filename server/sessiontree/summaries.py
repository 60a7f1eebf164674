"""Compaction and branch summaries over an open session: prepare, then commit the client's text.

The daemon has no model. A prepare returns what pi 1.6.0 would summarise and the prompts it
would send; the commit recomputes the same preparation from the file (entries never
change), composes the stored text as pi does and appends it, or refuses when the path
moved so that the summary no longer fits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import protocol
from .errors import InvalidParams, LeafConflict, NothingToCompact, SummaryConflict
from .open_session import OpenSession
from .summary_types import CompactionAdvice, CompactionSettings, FileOperations
from .tree import Context, Projection, build_context, project_entries, walk_path
from .tree.branch_summary import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_RESERVE_TOKENS,
    BranchEntries,
    collect_entries,
    compose_branch_summary,
    landing,
    prepare_branch_entries,
)
from .tree.compaction import Preparation, compose_summary, prepare_compaction
from .tree.summary_text import FileOps, branch_prompt, file_lists
from .tree.system_state import current_system_message
from .tree.tokens import (
    ContextTokens,
    estimate_context_tokens,
    estimate_from_characters,
    should_compact,
)
from .unset import UNSET, MaybeId

Append = Callable[..., protocol.AppendResult]
COMMIT_ATTEMPTS = 3  # another process may move the leaf between our check and our locked append


def context_at(opened: OpenSession, leaf: str | None) -> Context:
    """The built context of `leaf`, from the cache when it holds that leaf."""
    session = opened.session
    context = opened.context_cache.get(leaf)
    if context is None:
        context = build_context(session.index, leaf, session.entry, session.messages_or_entries)
        if leaf == session.index.leaf_id:
            opened.context_cache.put(context)
    return context


def _path_entries(opened: OpenSession, leaf: str) -> list[dict[str, Any]]:
    session = opened.session
    return [session.entry(node) for node in walk_path(session.index, leaf)]


def _file_operations(ops: FileOps) -> FileOperations:
    return FileOperations(list(ops.read), list(ops.written), list(ops.edited))


# --------------------------------------------------------------------------- token accounting


def context_tokens(messages: list[Any]) -> protocol.ContextTokens:
    found = estimate_context_tokens(messages)
    return protocol.ContextTokens(found.tokens, found.usage_tokens, found.trailing_tokens, found.last_usage_index)


def _same_message(a: Any, b: Any) -> bool:
    """The stored reply and the context's copy of it (which may be a normalized copy, so not `is`)."""
    return isinstance(a, dict) and isinstance(b, dict) and a.get("timestamp") == b.get("timestamp") and a.get("usage") == b.get("usage")


def _usage_still_counts(opened: OpenSession, leaf: str | None, usage_message: Any) -> bool:
    """Whether the message whose usage the estimate rests on was recorded after the latest context
    edit or compaction on the branch: walking up from the leaf, it comes before either."""
    session = opened.session
    index = session.index
    node = index.get(leaf) if leaf is not None else None
    seen: set[int] = set()  # a parent chain that loops ends the walk
    while node is not None and node.seq not in seen:  # up from the leaf: usually a few entries
        seen.add(node.seq)
        if node.type in ("context_edit", "compaction"):
            return False
        is_reply = node.type == "message" and node.role == "assistant"
        if is_reply and _same_message(session.entry(node).get("message"), usage_message):
            return True
        node = index.parent(node)
    return True


def projected_tokens(opened: OpenSession, context: Context) -> ContextTokens:
    """pi's estimateProjectedContextTokens for a built context: the usage estimate, unless that
    usage predates an edit or compaction that changed the context since (then characters only)."""
    messages = context.messages
    estimate = estimate_context_tokens(messages)
    index = estimate.last_usage_index
    if index is not None and _usage_still_counts(opened, context.leaf_id, messages[index]):
        return estimate
    return estimate_from_characters(messages)


def advice(opened: OpenSession, context: Context, context_window: int, settings: CompactionSettings) -> CompactionAdvice:
    """Whether pi would compact now: pi's shouldCompact over its projected context estimate (a
    usage recorded before the latest compaction or context edit no longer counts)."""
    tokens = projected_tokens(opened, context).tokens
    decision = should_compact(tokens, context_window, settings)
    return CompactionAdvice(tokens, context_window, context_window - settings.reserve_tokens, decision)


# --------------------------------------------------------------------------- compaction


def _projection(opened: OpenSession, leaf: str | None) -> Projection:
    session = opened.session
    return project_entries(session.index, leaf, session.entry)


def _preparation(opened: OpenSession, leaf: str, settings: CompactionSettings) -> tuple[Preparation | None, Projection]:
    projection = _projection(opened, leaf)
    return prepare_compaction(_path_entries(opened, leaf), projection.entries, settings), projection


def prepare(opened: OpenSession, params: protocol.PrepareCompactionParams) -> protocol.PrepareCompactionResult | None:
    """None when pi's prepareCompaction gives nothing: no leaf, a path that ends in a compaction,
    or no message before the part that is kept."""
    session = opened.session
    leaf = session.index.leaf_id if params.leaf_id is UNSET else params.leaf_id
    if leaf is None:
        return None
    session.require(leaf, "leafId")
    settings = params.settings or CompactionSettings()
    found, projection = _preparation(opened, leaf, settings)
    if found is None:
        return None
    read_files, modified_files = file_lists(found.file_ops)
    thinking = projection.thinking_level
    return protocol.PrepareCompactionResult(
        leaf_id=leaf,
        first_kept_entry_id=found.first_kept_entry_id,
        messages_to_summarize=found.messages_to_summarize,
        turn_prefix_messages=found.turn_prefix_messages,
        is_split_turn=found.is_split_turn,
        tokens_before=found.tokens_before,
        file_ops=_file_operations(found.file_ops),
        read_files=read_files,
        modified_files=modified_files,
        settings=settings,
        previous_summary=found.previous_summary,
        history_prompt=found.history_prompt(params.custom_instructions, thinking),
        turn_prefix_prompt=found.turn_prefix_prompt(params.custom_instructions, thinking),
    )


def nothing_to_compact(path_ends_in_compaction: bool, leaf: str | None) -> NothingToCompact:
    """pi's two reasons: "Already compacted", "Nothing to compact (session too small)"."""
    if path_ends_in_compaction:
        return NothingToCompact(f"already compacted: the path to {leaf} ends in a compaction")
    return NothingToCompact(f"nothing to compact at {leaf}: no message before the part that is kept")


def _compaction_entry(found: Preparation, params: protocol.CommitCompactionParams) -> dict[str, Any]:
    """The entry as pi's appendCompaction writes it, less the checkpoint (added at the append)."""
    entry: dict[str, Any] = {"type": "compaction", "firstKeptEntryId": found.first_kept_entry_id}
    entry["tokensBefore"] = found.tokens_before
    if params.from_hook:
        if params.summary is None:
            raise InvalidParams("a summary the client made itself (fromHook) needs summary", field="summary")
        entry["summary"] = params.summary
        if params.details is not None:
            entry["details"] = params.details
    else:
        if found.needs_history_summary and params.summary is None:
            raise InvalidParams("summary is required: the preparation has a history prompt", field="summary")
        if found.needs_turn_prefix_summary and params.turn_prefix_summary is None:
            raise InvalidParams("turnPrefixSummary is required: the preparation splits a turn", field="turnPrefixSummary")
        entry["summary"], entry["details"] = compose_summary(found, params.summary or "", params.turn_prefix_summary)
    if params.usage is not None:
        entry["usage"] = params.usage
    entry["fromHook"] = bool(params.from_hook)
    return entry


def _with_checkpoint(opened: OpenSession, entry: dict[str, Any], leaf: str | None) -> dict[str, Any]:
    """pi's appendCompaction: the replayed system message of the path it is appended to, when
    that path has system messages (its timestamp becomes the compaction's time when written)."""
    system = current_system_message(_projection(opened, leaf).messages)
    if system is None:
        return entry
    del system["timestamp"]
    return {**entry, "systemMessage": system}


def _check_still_fits(opened: OpenSession, prepared_leaf: str) -> str | None:
    """The current leaf, if the prepared leaf is still on its path with no compaction since."""
    session = opened.session
    leaf = session.index.leaf_id
    path = walk_path(session.index, leaf)
    ids = [node.id for node in path]
    if prepared_leaf not in ids:
        raise SummaryConflict(
            f"the leaf moved to {leaf} and the prepared leaf {prepared_leaf} is no longer on its path",
            leafId=prepared_leaf,
            currentLeafId=leaf,
        )
    after = path[ids.index(prepared_leaf) + 1 :]
    if any(node.type == "compaction" for node in after):
        raise SummaryConflict(
            f"the path was compacted again after {prepared_leaf}", leafId=prepared_leaf, currentLeafId=leaf
        )
    return leaf


def commit(opened: OpenSession, params: protocol.CommitCompactionParams, append: Append) -> protocol.CommitCompactionResult:
    """Append the compaction below the current leaf; entries appended meanwhile stay kept."""
    node = opened.session.require(params.leaf_id, "leafId")
    found, _ = _preparation(opened, params.leaf_id, params.settings or CompactionSettings())
    if found is None:
        raise nothing_to_compact(node.type == "compaction", params.leaf_id)
    entry = _compaction_entry(found, params)
    for attempt in range(COMMIT_ATTEMPTS):
        opened.sync()
        leaf = _check_still_fits(opened, params.leaf_id)
        try:
            result = append(opened, [_with_checkpoint(opened, entry, leaf)], expected_leaf=leaf)
        except LeafConflict:
            if attempt + 1 == COMMIT_ATTEMPTS:
                raise
            continue
        return protocol.CommitCompactionResult(_written(opened, result.id), result.leaf_id)
    raise AssertionError("unreachable")


def _written(opened: OpenSession, entry_id: str) -> dict[str, Any]:
    session = opened.session
    return session.entry(session.require(entry_id, "id"))


# --------------------------------------------------------------------------- branch summaries


class _Branch:
    """What pi's navigateTree computes before it asks for a summary."""

    def __init__(self, opened: OpenSession, target_id: str, from_id: MaybeId, window: int | None, reserve: int | None):
        session = opened.session
        target = session.require(target_id, "targetId")
        self.from_leaf = session.index.leaf_id if from_id is UNSET else from_id
        if self.from_leaf is not None:
            session.require(self.from_leaf, "fromId")
        nodes, self.common_ancestor = collect_entries(session.index, self.from_leaf, target_id)
        self.entry_ids = [node.id for node in nodes]
        self.budget = (window or DEFAULT_CONTEXT_WINDOW) - (DEFAULT_RESERVE_TOKENS if reserve is None else reserve)
        self.entries: BranchEntries = prepare_branch_entries([session.entry(n) for n in nodes], self.budget)
        self.no_op = target_id == self.from_leaf
        self.new_leaf, self.editor_text = (self.from_leaf, None) if self.no_op else landing(session.entry(target))
        self.thinking_level = context_at(opened, self.from_leaf).thinking_level if self.from_leaf else "off"


def prepare_branch(opened: OpenSession, params: protocol.PrepareBranchSummaryParams) -> protocol.PrepareBranchSummaryResult:
    branch = _Branch(opened, params.target_id, params.from_id, params.context_window, params.reserve_tokens)
    prepared = branch.entries
    read_files, modified_files = file_lists(prepared.file_ops)
    prompt = None
    if prepared.messages:
        instructions, replace = params.custom_instructions, bool(params.replace_instructions)
        prompt = branch_prompt(prepared.messages, instructions, replace, branch.thinking_level)
    return protocol.PrepareBranchSummaryResult(
        from_id=branch.from_leaf,
        target_id=params.target_id,
        new_leaf_id=branch.new_leaf,
        common_ancestor_id=branch.common_ancestor,
        entry_ids=branch.entry_ids,
        messages=prepared.messages,
        total_tokens=prepared.total_tokens,
        token_budget=branch.budget,
        file_ops=_file_operations(prepared.file_ops),
        read_files=read_files,
        modified_files=modified_files,
        prompt=prompt,
        editor_text=branch.editor_text,
    )


def _branch_entry(branch: _Branch, params: protocol.CommitBranchSummaryParams) -> dict[str, Any] | None:
    """The branch_summary entry to append, or None when pi would only move the leaf."""
    if not branch.entry_ids:
        return None
    # pi 1.6: `fromId` is the leaf the move leaves, whose abandoned path is summarised.
    entry: dict[str, Any] = {"type": "branch_summary", "fromId": branch.from_leaf or "root"}
    if params.from_hook:
        if not params.summary:
            return None
        entry["summary"] = params.summary
        if params.details is not None:
            entry["details"] = params.details
    else:
        if branch.entries.messages and params.summary is None:
            raise InvalidParams("summary is required: the preparation has a prompt", field="summary")
        entry["summary"], entry["details"] = compose_branch_summary(branch.entries, params.summary)
    if params.usage is not None:
        entry["usage"] = params.usage
    entry["fromHook"] = bool(params.from_hook)
    return entry


def commit_branch(
    opened: OpenSession, params: protocol.CommitBranchSummaryParams, append: Append
) -> protocol.CommitBranchSummaryResult:
    """pi's navigateTree after the summary: branchWithSummary at the landing entry, or a plain move."""
    branch = _Branch(opened, params.target_id, params.from_id, params.context_window, params.reserve_tokens)
    session = opened.session
    if branch.from_leaf != session.index.leaf_id:
        raise SummaryConflict(
            f"the leaf moved to {session.index.leaf_id} since the branch from {branch.from_leaf} was prepared",
            leafId=branch.from_leaf,
            currentLeafId=session.index.leaf_id,
        )
    if branch.no_op:
        return protocol.CommitBranchSummaryResult(session.index.leaf_id)
    entry = _branch_entry(branch, params)
    if entry is None:
        session.move_leaf(branch.new_leaf)
        return protocol.CommitBranchSummaryResult(session.index.leaf_id, editor_text=branch.editor_text)
    try:
        result = append(opened, [entry], branch.new_leaf, branch.from_leaf)
    except LeafConflict as exc:
        raise SummaryConflict(exc.message, leafId=branch.from_leaf, currentLeafId=session.index.leaf_id) from None
    return protocol.CommitBranchSummaryResult(result.leaf_id, _written(opened, result.id), branch.editor_text)
