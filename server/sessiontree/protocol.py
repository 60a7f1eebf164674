"""Wire types of the sessiontree protocol, shared by the daemon and the Python client.

Every custom method has a params class and a result class here, and `METHODS`
maps the method name to both. Field names are snake_case in Python and camelCase
on the wire. On the wire, an absent optional field and `null` mean the same (the
converter reads `null` as the field's default, for every class), except for the
fields typed `MaybeId` (`leafId`, `parentId`, `expectedLeafId`, `fromId`, `since`),
where absent means "the default" and `null` means "no entry" (pi's `resetLeaf`).
Types are checked, never coerced: a wrong one is InvalidParams naming the field.
protocol.md documents each method; a test keeps it, this table and the
registered handlers in step.

The types the domain builds itself (file warnings, compaction settings, tree nodes and rows,
UNSET) are defined in the domain's modules and imported here, never the other way round.
`WIRE_NAMES` gives the wire's name of a class whose Python name differs from it.
"""

from __future__ import annotations

import re
import typing
from typing import Any, Final, Literal

import attrs
import cattrs
import orjson
from cattrs.cols import list_structure_factory
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from . import jsonfmt
from .agents import AgentName
from .agents.importer import ImportedSession as ImportedSession
from .agents.importer import ImportFailure as ImportFailure
from .errors import InvalidParams

# The domain's own types, carried on the wire as they are (re-exported: clients build them too).
from .file_warning import FileWarning as FileWarning
from .session_summary import SessionSummary as SessionSummary
from .summary_types import CompactionAdvice as CompactionAdvice
from .summary_types import CompactionSettings as CompactionSettings
from .summary_types import FileOperations as FileOperations
from .summary_types import SummaryPrompt as SummaryPrompt
from .tree_nodes import TreeNode as TreeNode
from .tree_nodes import TreeNodes as TreeNodes
from .tree_nodes import TreeRow as TreeRow
from .tree_nodes import TreeRun as TreeRun
from .unset import UNSET as UNSET
from .unset import MaybeId as MaybeId

FORMAT_VERSION: Final = 3
PROTOCOL_VERSION: Final = "1.0"


JsonObject = dict[str, Any]
ContextFormat = Literal["agent", "llm"]


# --------------------------------------------------------------------------- params


@attrs.define
class CreateParams:
    cwd: str
    id: str | None = None
    parent_session: str | None = None


@attrs.define
class OpenParams:
    path: str


@attrs.define
class SessionParams:
    """Params of the methods that name only a session (`session/close`, `session/info`)."""

    session_id: str


@attrs.define
class ListParams:
    cwd: str | None = None
    work_done_token: int | str | None = None
    archived: bool = False  # list the archived sessions (`.archive/` folders) instead
    parent_session: str | None = None  # only the sessions whose header names this one (path or id) as parent


@attrs.define
class AppendParams:
    session_id: str
    entry: JsonObject | None = None
    entries: list[JsonObject] | None = None
    parent_id: MaybeId = UNSET
    expected_leaf_id: MaybeId = UNSET
    context_window: int | None = None
    settings: CompactionSettings | None = None
    context: AppendContext | None = None  # answer with the context after the append, too


@attrs.define
class AppendContext:
    """What `session/append` is to answer of the context at the new leaf (see `ContextParams`)."""

    since: str | None = None
    format: ContextFormat = "agent"
    tokens: bool | None = None


@attrs.define
class ContextParams:
    session_id: str
    leaf_id: MaybeId = UNSET
    format: ContextFormat = "agent"
    tokens: bool | None = None
    context_window: int | None = None
    settings: CompactionSettings | None = None
    since: str | None = None  # a cursor of an earlier answer: only the messages after it


@attrs.define
class TreeParams:
    session_id: str


@attrs.define
class TreeViewParams:
    session_id: str
    offset: int = 0
    limit: int = 200
    reveal: str | None = None
    run: str | None = None


@attrs.define
class ExportParams:
    session_id: str
    format: Literal["markdown", "html"]
    leaf_id: MaybeId = UNSET
    scope: Literal["path", "tree"] = "path"


@attrs.define
class ExportResult:
    format: str
    leaf_id: str | None
    content: str


@attrs.define
class StatsParams:
    session_id: str | None = None
    cwd: str | None = None


@attrs.define
class StatsResult:
    sessions: int
    tree: JsonObject
    path: JsonObject | None = None
    session_id: str | None = None
    cwd: str | None = None


@attrs.define
class SearchParams:
    query: str
    syntax: Literal["fts", "plain"] = "fts"
    cwd: str | None = None
    session: str | None = None
    roles: list[str] | None = None
    types: list[str] | None = None
    since: str | None = None
    until: str | None = None
    limit: int = 20
    cursor: str | None = None
    work_done_token: int | str | None = None


@attrs.define
class SearchHit:
    path: str
    session_id: str
    cwd: str
    entry_id: str | None
    parent_id: str | None
    type: str
    role: str | None
    timestamp: str | None
    snippet: str
    highlights: list[list[int]]
    score: float
    on_leaf_path: bool
    agent: AgentName = "pi"  # whose session: another agent's is searched in its translation


@attrs.define
class SearchIndexed:
    files_seen: int
    files_unchanged: int
    files_appended: int
    files_reindexed: int
    files_removed: int
    entries_added: int
    rebuilt: bool


@attrs.define
class SearchResult:
    hits: list[SearchHit]
    cursor: str | None
    indexed: SearchIndexed


@attrs.define
class EntriesParams:
    session_id: str
    ids: list[str] | None = None
    path_to: str | None = None
    since: MaybeId = UNSET
    limit: int | None = None


@attrs.define
class BranchParams:
    session_id: str
    entry_id: str | None
    summary: str | None = None
    details: Any = None
    from_hook: bool | None = None
    usage: JsonObject | None = None  # the summarising call's Usage, stored on the branch_summary
    expected_leaf_id: MaybeId = UNSET


@attrs.define
class ForkParams:
    session_id: str
    entry_id: str | None = None
    cwd: str | None = None


@attrs.define
class LabelParams:
    session_id: str
    target_id: str
    label: str | None = None
    expected_leaf_id: MaybeId = UNSET


@attrs.define
class ContextReplacement:
    """What a context edit puts in place of its target's content: a string or content blocks."""

    content: str | list[Any]


@attrs.define
class EditContextParams:
    session_id: str
    target_id: str
    replacement: ContextReplacement | None  # null: the target's messages leave the context
    expected_leaf_id: MaybeId = UNSET


@attrs.define
class ConfigureParams:
    session_id: str
    context_window: int | None = None
    settings: CompactionSettings | None = None


@attrs.define
class PrepareCompactionParams:
    session_id: str
    leaf_id: MaybeId = UNSET
    settings: CompactionSettings | None = None
    custom_instructions: str | None = None


@attrs.define
class CommitCompactionParams:
    session_id: str
    leaf_id: str
    summary: str | None = None
    turn_prefix_summary: str | None = None
    settings: CompactionSettings | None = None
    from_hook: bool | None = None
    details: Any = None
    usage: JsonObject | None = None


@attrs.define
class CompactParams:
    session_id: str
    settings: CompactionSettings | None = None
    custom_instructions: str | None = None
    timeout_ms: int | None = None
    work_done_token: int | str | None = None


@attrs.define
class PrepareBranchSummaryParams:
    session_id: str
    target_id: str
    from_id: MaybeId = UNSET
    context_window: int | None = None
    reserve_tokens: int | None = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None


@attrs.define
class CommitBranchSummaryParams:
    session_id: str
    target_id: str
    from_id: MaybeId = UNSET
    summary: str | None = None
    context_window: int | None = None
    reserve_tokens: int | None = None
    from_hook: bool | None = None
    details: Any = None
    usage: JsonObject | None = None


@attrs.define
class NavigateParams:
    session_id: str
    target_id: str
    context_window: int | None = None
    reserve_tokens: int | None = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    timeout_ms: int | None = None
    work_done_token: int | str | None = None


@attrs.define
class SetNameParams:
    session_id: str
    name: str
    expected_leaf_id: MaybeId = UNSET


@attrs.define
class ImportParams:
    paths: list[str]


# --------------------------------------------------------------------------- results


@attrs.define
class CreateResult:
    session_id: str
    path: str
    header: JsonObject


@attrs.define
class OpenResult:
    session_id: str
    path: str
    header: JsonObject
    leaf_id: str | None
    entry_count: int
    name: str | None = None
    warnings: list[FileWarning] = attrs.Factory(list)


@attrs.define
class InfoResult:
    session_id: str
    path: str
    header: JsonObject
    leaf_id: str | None
    entry_count: int
    name: str | None = None
    cursor: str | None = None


@attrs.define
class ListResult:
    sessions: list[SessionSummary]


@attrs.define
class ImportResult:
    imported: list[ImportedSession]
    failed: list[ImportFailure]


@attrs.define
class AppendedEntry:
    id: str
    parent_id: str | None
    timestamp: str


@attrs.define
class AppendResult:
    id: str
    parent_id: str | None
    timestamp: str
    leaf_id: str | None
    appended: list[AppendedEntry] | None = None
    compaction: CompactionAdvice | None = None
    warnings: list[FileWarning] | None = None  # what the write did to another program's line (fenced it)
    context: ContextResult | None = None  # asked for with `context` in the params


@attrs.define
class ContextTokens:
    """pi's estimateContextTokens: the last assistant usage plus estimates of what follows it."""

    tokens: float | int
    usage_tokens: float | int
    trailing_tokens: int
    last_usage_index: int | None


@attrs.define
class ContextResult:
    messages: list[Any]
    thinking_level: str | None
    model: JsonObject | None  # {provider, modelId}, keys pi did not have left out
    leaf_id: str | None
    warnings: list[FileWarning] = attrs.Factory(list)
    tokens: ContextTokens | None = None
    compaction: CompactionAdvice | None = None
    cursor: str | None = None  # always sent: `since` of a later request
    reset: bool | None = None  # with `since`: true when `messages` are all of them, false when those after it


@attrs.define
class TreeViewResult:
    leaf_id: str | None
    total: int
    offset: int
    rows: list[TreeRow]


@attrs.define
class TreeResult:
    leaf_id: str | None
    nodes: list[TreeNode]
    warnings: list[FileWarning] = attrs.Factory(list)


@attrs.define
class EntriesResult:
    entries: list[JsonObject]
    cursor: str | None


@attrs.define
class BranchResult:
    leaf_id: str | None
    summary_entry_id: str | None = None


@attrs.define
class ForkResult:
    session_id: str
    path: str


@attrs.define
class SubscribeResult:
    leaf_id: str | None
    cursor: str | None


@attrs.define
class DidChangeParams:
    """Entries another process appended, as this daemon took them in."""

    session_id: str
    entries: list[JsonObject]
    leaf_id: str | None
    cursor: str | None
    leaf_moved: bool


@attrs.define
class ConfigureResult:
    context_window: int | None
    settings: CompactionSettings


@attrs.define
class PrepareCompactionResult:
    leaf_id: str
    first_kept_entry_id: str
    messages_to_summarize: list[Any]
    turn_prefix_messages: list[Any]
    is_split_turn: bool
    tokens_before: float | int
    file_ops: FileOperations
    read_files: list[Any]
    modified_files: list[Any]
    settings: CompactionSettings
    previous_summary: Any = None
    history_prompt: SummaryPrompt | None = None
    turn_prefix_prompt: SummaryPrompt | None = None


@attrs.define
class CommitCompactionResult:
    entry: JsonObject
    leaf_id: str | None


@attrs.define
class PrepareBranchSummaryResult:
    from_id: str | None
    target_id: str
    new_leaf_id: str | None
    common_ancestor_id: str | None
    entry_ids: list[str]
    messages: list[Any]
    total_tokens: int
    token_budget: int
    file_ops: FileOperations
    read_files: list[Any]
    modified_files: list[Any]
    prompt: SummaryPrompt | None = None
    editor_text: str | None = None


@attrs.define
class CommitBranchSummaryResult:
    leaf_id: str | None
    entry: JsonObject | None = None
    editor_text: str | None = None


@attrs.define
class SummarizeParams:
    """The daemon's request to a client that can summarise (`sessiontree/summarize`)."""

    session_id: str
    kind: Literal["compaction", "branchSummary"]
    compaction: PrepareCompactionResult | None = None
    branch_summary: PrepareBranchSummaryResult | None = None


@attrs.define
class SummarizeResult:
    summary: str
    turn_prefix_summary: str | None = None
    usage: JsonObject | None = None


# ---------------------------------------------------------------- retiring sessions


@attrs.define
class RetireParams:
    """Params of `session/trash`, `session/archive` and `session/restore`: a session file's path."""

    path: str


@attrs.define
class RetireResult:
    path: str  # where the file was
    moved_to: str  # where it is now
    info_path: str | None = None  # the trash's `.trashinfo` of it (`session/trash`)
    closed_session_id: str | None = None  # the open session of the file, now closed


@attrs.define
class RestoreResult:
    path: str  # where the file is again
    restored_from: str


@attrs.define
class DidCloseParams:
    """An open session the daemon closed because its file was trashed or archived."""

    session_id: str
    path: str
    reason: Literal["trashed", "archived"]


# The schema's (and the clients') name of a class, where it differs from the Python name:
# `Warning` would shadow the builtin exception.
WIRE_NAMES: Final[dict[type, str]] = {FileWarning: "Warning"}


@attrs.define
class MethodTypes:
    params: type
    result: type | None
    summary: str


METHODS: Final[dict[str, MethodTypes]] = {
    "session/create": MethodTypes(CreateParams, CreateResult, "Create a new session file."),
    "session/open": MethodTypes(OpenParams, OpenResult, "Open a session file."),
    "session/close": MethodTypes(SessionParams, None, "Close an open session."),
    "session/info": MethodTypes(SessionParams, InfoResult, "The state of an open session."),
    "session/list": MethodTypes(ListParams, ListResult, "List the sessions of one cwd or all."),
    "session/append": MethodTypes(AppendParams, AppendResult, "Append one entry or a batch."),
    "session/context": MethodTypes(ContextParams, ContextResult, "The LLM context at a leaf."),
    "session/configure": MethodTypes(ConfigureParams, ConfigureResult, "Register a context window for advice."),
    "session/prepareCompaction": MethodTypes(
        PrepareCompactionParams, PrepareCompactionResult, "What pi would summarise to compact, and its prompts."
    ),
    "session/commitCompaction": MethodTypes(CommitCompactionParams, CommitCompactionResult, "Store a compaction."),
    "session/compact": MethodTypes(CompactParams, CommitCompactionResult, "Compact, the client summarising."),
    "session/prepareBranchSummary": MethodTypes(
        PrepareBranchSummaryParams, PrepareBranchSummaryResult, "What pi would summarise when the leaf moves."
    ),
    "session/commitBranchSummary": MethodTypes(
        CommitBranchSummaryParams, CommitBranchSummaryResult, "Move the leaf, storing a branch summary."
    ),
    "session/navigate": MethodTypes(NavigateParams, CommitBranchSummaryResult, "Move the leaf, the client summarising."),
    "session/tree": MethodTypes(TreeParams, TreeResult, "Every entry as a flat depth-first tree."),
    "session/treeView": MethodTypes(TreeViewParams, TreeViewResult, "The tree folded, a page of rows at a time."),
    "session/export": MethodTypes(ExportParams, ExportResult, "The session as Markdown or a self-contained HTML page."),
    "session/stats": MethodTypes(StatsParams, StatsResult, "Counts, tokens and cost of a session or a project."),
    "session/search": MethodTypes(SearchParams, SearchResult, "Full-text search over every session under the root."),
    "session/entries": MethodTypes(EntriesParams, EntriesResult, "Full entries by id, path or cursor."),
    "session/branch": MethodTypes(BranchParams, BranchResult, "Move the leaf, optionally with a summary."),
    "session/fork": MethodTypes(ForkParams, ForkResult, "Copy a path (or a whole session) to a new file."),
    "session/label": MethodTypes(LabelParams, AppendResult, "Set or clear the label of an entry."),
    "session/setName": MethodTypes(SetNameParams, AppendResult, "Set or clear the session's name."),
    "session/editContext": MethodTypes(
        EditContextParams, AppendResult, "Replace or hide an earlier message in the context of this branch."
    ),
    "session/import": MethodTypes(ImportParams, ImportResult, "Write other agents' sessions out as pi sessions."),
    "session/subscribe": MethodTypes(SessionParams, SubscribeResult, "Watch the file for other writers."),
    "session/unsubscribe": MethodTypes(SessionParams, None, "Stop watching the file."),
    "session/trash": MethodTypes(RetireParams, RetireResult, "Move a session file to the trash (restorable)."),
    "session/archive": MethodTypes(RetireParams, RetireResult, "Move a session file to its folder's archive."),
    "session/restore": MethodTypes(RetireParams, RestoreResult, "Put a trashed or archived session file back."),
}

# Requests the daemon sends to a client that announced it can answer them.
CLIENT_REQUESTS: Final[dict[str, MethodTypes]] = {
    "sessiontree/summarize": MethodTypes(
        SummarizeParams,
        SummarizeResult,
        "Summarise for a compaction or a branch summary (session/compact, session/navigate).",
    ),
}

# Notifications the daemon sends, by method, with their params class.
NOTIFICATIONS: Final[dict[str, type]] = {
    "session/didChange": DidChangeParams,
    "session/didClose": DidCloseParams,
}


# --------------------------------------------------------------------------- converter

_CAMEL_RE = re.compile(r"_([a-z])")


def to_camel(name: str) -> str:
    return _CAMEL_RE.sub(lambda m: m.group(1).upper(), name)


def _structure_maybe_id(value: Any, _type: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"expected a string or null, got {type(value).__name__}")


def _strict(kind: type) -> Any:
    """cattrs coerces (`str(5)`, `int("5")`); the wire must not, so check exact types."""

    def hook(value: Any, _type: Any) -> Any:
        if type(value) is bool and kind is not bool:
            raise ValueError(f"expected {kind.__name__}, got bool")
        if not isinstance(value, kind):
            raise ValueError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


def _structure_token(value: Any, _type: Any) -> int | str | None:
    if value is None or (isinstance(value, int | str) and not isinstance(value, bool)):
        return value
    raise ValueError(f"expected an integer or a string, got {type(value).__name__}")


def _structure_number(value: Any, _type: Any) -> float | int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected a number, got {type(value).__name__}")


def _structure_content(value: Any, _type: Any) -> str | list[Any]:
    if not isinstance(value, str | list):
        raise ValueError(f"expected a string or an array, got {type(value).__name__}")
    return value


def _structure_object(value: Any, _type: Any) -> JsonObject:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, got {type(value).__name__}")
    return value


def _is_list(kind: Any) -> bool:
    return typing.get_origin(kind) is list


def _strict_list(conv: cattrs.Converter) -> Any:
    """cattrs takes any iterable for a list (an object's keys, a string's characters); the wire must
    send an array."""

    def factory(kind: Any) -> Any:
        structure = list_structure_factory(kind, conv)

        def hook(value: Any, _type: Any) -> Any:
            if not isinstance(value, list):
                raise ValueError(f"expected an array, got {type(value).__name__}")
            return structure(value, _type)

        return hook

    return factory


def _tree_nodes_to_wire(conv: cattrs.Converter) -> Any:
    unstructure = conv.get_unstructure_hook(list[TreeNode])

    def hook(nodes: list[TreeNode]) -> Any:
        if not isinstance(nodes, TreeNodes):
            return unstructure(nodes)
        if nodes.wire is None:
            nodes.wire = orjson.Fragment(jsonfmt.dumps_wire(unstructure(nodes)))
        return nodes.wire

    return hook


def _is_json_payload(kind: Any) -> bool:
    """Fields declared as JSON (objects, or lists of JSON values) hold plain JSON or RawJson:
    nothing to convert. (A bare `Any` is left to cattrs: it may hold an attrs object.)"""
    return bool(kind == JsonObject or kind == list[JsonObject] or kind == list[Any])


def _as_is(value: Any) -> Any:
    return value


def _null_means_absent(cls: type) -> frozenset[str]:
    """The wire names of `cls`'s optional fields whose `null` must be read as absent: every field with
    a default other than None (a None default already takes `null`), except the `MaybeId` ones, where
    `null` means "no entry"."""
    return frozenset(
        to_camel(f.name) for f in attrs.fields(cls) if f.default not in (attrs.NOTHING, None, UNSET)
    )


def make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(detailed_validation=True, forbid_extra_keys=False)
    for kind in (str, int, bool, float):
        conv.register_structure_hook(kind, _strict(kind))
    conv.register_structure_hook(MaybeId, _structure_maybe_id)
    conv.register_structure_hook(int | str | None, _structure_token)
    for number in (float | int, int | float):
        conv.register_structure_hook(number, _structure_number)
    conv.register_structure_hook_func(lambda t: t == JsonObject, _structure_object)
    conv.register_structure_hook(str | list[Any], _structure_content)
    conv.register_structure_hook_func(lambda t: t is Any, lambda value, _type: value)
    conv.register_structure_hook_factory(_is_list, _strict_list(conv))
    # Entries, messages and headers are JSON already: walking them again would only copy them.
    conv.register_unstructure_hook_func(_is_json_payload, _as_is)

    def structure_factory(cls: type) -> Any:
        overrides = {f.name: override(rename=to_camel(f.name)) for f in attrs.fields(cls)}
        # The keys are field names, never one of the `_cattrs_` options the same ** also takes.
        structure: Any = make_dict_structure_fn(cls, conv, **overrides)  # type: ignore[arg-type]
        nullable = _null_means_absent(cls)
        if not nullable:
            return structure

        def structure_null_as_absent(value: Any, kind: Any) -> Any:
            if isinstance(value, dict) and any(value.get(name, UNSET) is None for name in nullable):
                value = {key: item for key, item in value.items() if not (item is None and key in nullable)}
            return structure(value, kind)

        return structure_null_as_absent

    def unstructure_factory(cls: type) -> Any:
        overrides = {
            f.name: override(rename=to_camel(f.name), omit_if_default=f.default is None or f.default is UNSET)
            for f in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **overrides)  # type: ignore[arg-type]  # as above

    conv.register_structure_hook_factory(attrs.has, structure_factory)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)
    conv.register_unstructure_hook_func(lambda t: t == list[TreeNode], _tree_nodes_to_wire(conv))
    return conv


converter: Final = make_converter()


def _camel_path(problem: str) -> str:
    """Name the field as the client spelled it: `@ params.session_id` -> `@ params.sessionId`."""
    text, sep, path = problem.rpartition(" @ ")
    return f"{text}{sep}{to_camel(path)}" if sep else problem


def _field_of(problem: str) -> str:
    """The field a problem names, as `data.field` spells it: `... @ params.settings.reserveTokens`
    -> `settings.reserveTokens`; `$` for the params themselves."""
    _, sep, path = problem.rpartition(" @ params")
    return path.lstrip(".") or "$" if sep else "$"


def _plain_append(params: dict[str, Any]) -> AppendParams | None:
    """The usual append params, `{sessionId, entry}`, as the converter would structure them; None
    for any other shape (the converter then checks and reports it)."""
    if len(params) == 2:
        session_id, entry = params.get("sessionId"), params.get("entry")
        if type(session_id) is str and type(entry) is dict:
            return AppendParams(session_id, entry)
    return None


def parse_params(method: str, params: Any) -> Any:
    """Structure raw JSON params into the method's params class, or raise InvalidParams."""
    cls = METHODS[method].params
    if not isinstance(params, dict):
        raise InvalidParams(f"params of {method} must be an object", field="$")
    if cls is AppendParams and (plain := _plain_append(params)) is not None:  # most requests, by far
        return plain
    try:
        return converter.structure(params, cls)
    except Exception as exc:  # cattrs wraps every field failure in a group
        if isinstance(exc, cattrs.BaseValidationError):
            problems = [_camel_path(p) for p in cattrs.transform_error(exc, path="params")]
        else:
            problems = [str(exc)]
        message = f"invalid params for {method}: {'; '.join(problems)}"
        raise InvalidParams(message, field=_field_of(problems[0]), problems=problems) from None


def to_wire(value: Any) -> Any:
    """Unstructure a params or result object into plain JSON-ready data (UNSET fields left out)."""
    return converter.unstructure(value)
