"""The domain API over open sessions: one method per protocol method, no transport here.

Each method takes the params object of its protocol method and returns its
result object; failures raise `SessionTreeError` subclasses with documented codes.
"""

from __future__ import annotations

import builtins  # `list` in the class bodies below is SessionService.list
import contextlib
import gc
import itertools
import logging
import os
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs

from . import export, export_input, jsonfmt, protocol, stats, summaries
from .agents import AgentName
from .agents.importer import Importer
from .agents.served import AgentSessions, follow_leaf
from .agents.storage import TranslationStorage
from .backend import Backend, SearchIndex
from .backend.files import FileBackend, FileSearch
from .entries import iso_to_ms, now_iso, session_name, validate_entry
from .errors import (
    FileReplaced,
    InvalidParams,
    SessionExists,
    SessionNotFound,
    SessionTreeError,
)
from .file_warning import FileWarning
from .open_session import ChangeListener, OpenSession
from .paths import check_session_id, file_name, new_session_id, refuse_control_characters
from .protocol import AppendedEntry, AppendResult
from .retire import Moved, Retirement, home_trash
from .search import RefreshStats
from .session_summary import SessionSummary
from .stats import Stats  # `stats` in SessionService's body is its method
from .store import (
    WRITE_WARNINGS,
    Appended,
    AppendRequest,
    Durability,
    Session,
)
from .tree import Context, ContextCache, build_context, convert_to_llm, uncached_cursor, walk_path
from .tree.folded import FoldedTree, Row, row_of
from .tree.fork import branched_plan, whole_plan
from .unset import UNSET

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
MAX_TREE_ROWS = 2000  # rows in one session/treeView page


@attrs.define
class ServiceConfig:
    sessions_dir: Path
    durability: Durability = "os"
    index_dir: Path | None = None  # where index sidecars go; None: no sidecars
    index_min_entries: int = 1000  # smaller sessions scan in milliseconds: no sidecar
    store: str | None = None  # a PostgreSQL connection string; None: the files under sessions_dir
    view_only: bool = False  # open files for reading only (the CLI's views): nothing is ever written
    trash_dir: Path | None = None  # where session/trash moves files; None: the home trash ($XDG_DATA_HOME/Trash)
    agents: dict[AgentName, Path] = attrs.field(factory=dict)  # other agents' folders, read beside the root


class AgentOpenSession(OpenSession):
    """Another agent's session, open read-only over its translation; its leaf the agent's."""

    @property
    def storage(self) -> TranslationStorage:
        storage = self.session.storage
        assert isinstance(storage, TranslationStorage)
        return storage

    def sync(self, limit: int | None = None) -> None:
        """What the agent wrote since; the leaf then moves where the agent's leaf now is."""
        session = self.session
        leaf = session.index.leaf_id
        added = session.refresh(limit)
        if added:
            follow_leaf(session, self.storage)
        self.took_in(added, leaf)


class SessionService:
    def __init__(self, config: ServiceConfig, listener: ChangeListener | None = None) -> None:
        """`listener` hears about entries other processes appended to an open session."""
        self.config = config
        self.listener = listener
        self.backend = _backend(config)
        self.root = self.backend.root
        self._sessions: dict[str, OpenSession] = {}
        self._by_path: dict[Path, OpenSession] = {}
        self._search: SearchIndex | None = None
        self.agents = AgentSessions(config.agents)

    # ------------------------------------------------------------------ lifecycle of sessions

    def create(self, params: protocol.CreateParams) -> protocol.CreateResult:
        session_id = check_session_id(params.id) if params.id is not None else new_session_id()
        if session_id in self._sessions:
            raise SessionExists(f"session {session_id} is already open", sessionId=session_id)
        timestamp = now_iso()
        header: dict[str, Any] = {"type": "session", "version": protocol.FORMAT_VERSION, "id": session_id}
        header.update(timestamp=timestamp, cwd=params.cwd)
        if params.parent_session is not None:
            header["parentSession"] = params.parent_session
        directory = self.backend.directory_for(params.cwd)
        storage, path = self.backend.create(directory, file_name(timestamp, session_id), [jsonfmt.dumps(header) + b"\n"])
        opened = self._add(OpenSession(Session.load(storage), path, self.listener))
        return protocol.CreateResult(opened.id, str(path), opened.session.header)

    def open(self, params: protocol.OpenParams) -> protocol.OpenResult:
        path = self._resolve(params.path)
        opened = self._by_path.get(path)
        warnings: list[FileWarning] = []
        if opened is not None:
            try:
                opened.sync()
            except FileReplaced:  # opening again is how a client recovers: the stale view goes
                self._forget(opened)
                opened = None
        if opened is None:
            opened = self._register(path, warnings)
        session = opened.session
        return protocol.OpenResult(
            session_id=opened.id,
            path=str(path),
            header=session.header,
            leaf_id=session.index.leaf_id,
            entry_count=len(session.index),
            name=session.index.name,
            warnings=warnings + session.warnings,
        )

    def _resolve(self, path: str) -> Path:
        """Another agent's session in its folder, or a pi session's path below the root."""
        found = self.agents.resolve(path)
        return found[1] if found is not None else self.backend.resolve(path)

    def _register(self, path: Path, warnings: list[FileWarning]) -> OpenSession:
        found = self.agents.resolve(str(path))
        if found is not None:
            return self._add(AgentOpenSession(self.agents.load(*found), path, self.listener))
        return self._add(OpenSession(self.backend.load(path, warnings), path, self.listener))

    def _add(self, opened: OpenSession) -> OpenSession:
        if opened.id in self._sessions:
            opened.session.close()
            raise SessionExists(
                f"another open file has the same session id {opened.id}",
                sessionId=opened.id,
                path=str(self._sessions[opened.id].path),
            )
        self._sessions[opened.id] = opened
        self._by_path[opened.path] = opened
        # An index is many long-lived objects: keep the cycle collector from walking them again and
        # again (pauses of tens of milliseconds on big sessions). Freed objects still go by refcount.
        gc.freeze()
        return opened

    def close(self, params: protocol.SessionParams) -> None:
        self._forget(self._get(params.session_id))

    def _forget(self, opened: OpenSession) -> None:
        del self._sessions[opened.id]
        del self._by_path[opened.path]
        self._close(opened)

    def close_all(self) -> None:
        for opened in list(self._sessions.values()):
            self._close(opened)
        self._sessions.clear()
        self._by_path.clear()
        if self._search is not None:
            self._search.close()
            self._search = None
        self.backend.close()

    def _close(self, opened: OpenSession) -> None:
        if isinstance(opened, AgentOpenSession):
            opened.session.close()  # no index sidecar: the translation is made afresh on open
        else:
            self.backend.release(opened.session, opened.path)

    def info(self, params: protocol.SessionParams) -> protocol.InfoResult:
        opened = self._synced(params.session_id)
        index = opened.session.index
        return protocol.InfoResult(
            session_id=opened.id,
            path=str(opened.path),
            header=opened.session.header,
            leaf_id=index.leaf_id,
            entry_count=len(index),
            name=index.name,
            cursor=index.cursor,
        )

    def subscribe(self, params: protocol.SessionParams) -> protocol.SubscribeResult:
        """Watch the file: `poll` then reports other writers' entries without a request."""
        opened = self._synced(params.session_id)
        opened.subscribed = True
        return protocol.SubscribeResult(opened.session.index.leaf_id, opened.session.index.cursor)

    def unsubscribe(self, params: protocol.SessionParams) -> None:
        self._get(params.session_id).subscribed = False

    def poll(self, limit: int | None = None, only: Collection[Path] | None = None) -> None:
        """Take in other writers' entries for every subscribed session (or those of `only`; the
        listener hears of them), at most about `limit` bytes of each: what the listener is told at
        once stays bounded."""
        for opened in list(self._sessions.values()):
            if opened.subscribed and (only is None or opened.path in only):
                with contextlib.suppress(SessionTreeError):  # a rewritten file is reported on the next request
                    opened.sync(limit)

    def list(self, params: protocol.ListParams, progress: Progress | None = None) -> protocol.ListResult:
        if params.archived:
            listed = self._file_backend("session/list with archived").archived(params.cwd, progress)
        else:
            listed = self.backend.list(params.cwd, progress)
            others = self.agents.list(params.cwd)
            if others:  # stable: pi's own order among equal times is kept
                listed = sorted(listed + others, key=lambda summary: summary.modified, reverse=True)
        if params.parent_session is not None:
            listed = _children_of(listed, params.parent_session, self.root)
        return protocol.ListResult(listed)

    def import_sessions(self, params: protocol.ImportParams) -> protocol.ImportResult:
        """Other agents' sessions written out as pi sessions (again: only what is new)."""
        importer = Importer(self.agents, self.backend, self._open_session_of)
        report = importer.run(params.paths)
        for done in report.imported:  # an open import took its new entries in: tell its listeners
            opened = self._by_path.get(Path(done.path))
            if opened is not None and done.added:
                opened.context_cache.clear()
        return protocol.ImportResult(report.imported, report.failed)

    def _open_session_of(self, path: Path) -> Session | None:
        opened = self._by_path.get(path)
        if opened is None:
            return None
        opened.sync()
        return opened.session

    # ------------------------------------------------------------------ writing

    def append(self, params: protocol.AppendParams) -> AppendResult:
        entries = self._entries_of(params)
        opened = self._get(params.session_id)
        result = self._append(opened, entries, params.parent_id, params.expected_leaf_id)
        window = params.context_window or opened.context_window
        if window:
            settings = params.settings or opened.compaction_settings
            result.compaction = summaries.advice(opened, summaries.context_at(opened, result.leaf_id), window, settings)
        if params.context is not None:  # the next request's context, in the same answer
            asked = params.context
            result.context = self.context(
                protocol.ContextParams(params.session_id, format=asked.format, tokens=asked.tokens, since=asked.since)
            )
        return result

    def append_many(self, requests: builtins.list[protocol.AppendParams]) -> builtins.list[AppendResult | SessionTreeError]:
        """`append` for requests that arrived together, in order: each answered as if sent alone
        after those before it, but the runs for one session written with one write (and one
        sync). A request that fails (its params, a check) writes nothing and fails alone."""
        outcomes: builtins.list[AppendResult | SessionTreeError] = []
        run: builtins.list[protocol.AppendParams] = []
        for params in requests:
            if run and (params.session_id != run[0].session_id or self._advises(params) or params.context is not None):
                outcomes += self._append_run(run)
                run = []
            if self._advises(params) or params.context is not None:  # reads the context at its own leaf: alone
                try:
                    outcomes.append(self.append(params))
                except SessionTreeError as exc:
                    outcomes.append(exc)
            else:
                run.append(params)
        return outcomes + self._append_run(run) if run else outcomes

    def _advises(self, params: protocol.AppendParams) -> bool:
        opened = self._sessions.get(params.session_id)
        return bool(params.context_window or (opened is not None and opened.context_window))

    def _append_run(self, run: builtins.list[protocol.AppendParams]) -> builtins.list[AppendResult | SessionTreeError]:
        """Appends to one session, none asking for advice."""
        try:
            opened = self._get(run[0].session_id)
        except SessionTreeError as exc:
            return [exc] * len(run)
        outcomes: builtins.list[AppendResult | SessionTreeError | None] = []
        requests: builtins.list[AppendRequest] = []
        for params in run:
            try:
                requests.append(AppendRequest(self._entries_of(params), params.parent_id, params.expected_leaf_id))
                outcomes.append(None)
            except SessionTreeError as exc:
                outcomes.append(exc)
        before = len(opened.session.warnings)
        written, _ = opened.session.append_many(requests, took_in=opened.took_in)
        warned = _write_warnings(opened.session, before)
        results = iter(written)
        answers: builtins.list[AppendResult | SessionTreeError] = []
        for outcome in outcomes:
            if outcome is None:  # checked here: its outcome in the session
                done = next(results)
                outcome = done if isinstance(done, SessionTreeError) else self._appended(opened, done, warned)
            answers.append(outcome)
        return answers

    def _entries_of(self, params: protocol.AppendParams) -> builtins.list[dict[str, Any]]:
        if (params.entry is None) == (params.entries is None):
            raise InvalidParams("send exactly one of entry and entries", field="entry")
        if params.entry is not None:
            validate_entry(params.entry)
            return [params.entry]
        assert params.entries is not None
        if not params.entries:
            raise InvalidParams("entries must not be empty", field="entries")
        for position, entry in enumerate(params.entries):
            validate_entry(entry, f"entries[{position}]")
        return params.entries

    def _append(
        self,
        opened: OpenSession,
        entries: builtins.list[dict[str, Any]],
        parent: protocol.MaybeId = UNSET,
        expected_leaf: protocol.MaybeId = UNSET,
        sources: builtins.list[str] | None = None,
    ) -> AppendResult:
        before = len(opened.session.warnings)
        written, _ = opened.session.append(entries, parent, expected_leaf, sources, took_in=opened.took_in)
        return self._appended(opened, written, _write_warnings(opened.session, before))

    def _appended(
        self, opened: OpenSession, written: builtins.list[Appended], warnings: builtins.list[FileWarning]
    ) -> AppendResult:
        """The answer to one append, its entries folded into the cached context; `warnings`: what
        the write that carried it did to another program's line."""
        cache = opened.context_cache
        if cache.context is not None:
            for appended in written:  # the cached context holds what a read of the file would give
                cache.extend(appended.node, jsonfmt.as_stored(appended.entry))
        result = _append_result(written, written[-1].node.id)
        result.warnings = warnings or None
        return result

    def branch(self, params: protocol.BranchParams) -> protocol.BranchResult:
        opened = self._synced(params.session_id)
        session = opened.session
        if params.summary is None:
            session.check_leaf(params.expected_leaf_id)
            session.move_leaf(params.entry_id)
            return protocol.BranchResult(session.index.leaf_id)
        entry: dict[str, Any] = {
            "type": "branch_summary",
            "fromId": session.index.leaf_id or "root",  # pi 1.6: the leaf whose path was left
            "summary": params.summary,
        }
        if params.details is not None:
            entry["details"] = params.details
        if params.usage is not None:
            entry["usage"] = params.usage
        if params.from_hook is not None:
            entry["fromHook"] = params.from_hook
        result = self._append(opened, [entry], params.entry_id, params.expected_leaf_id)
        return protocol.BranchResult(result.leaf_id, summary_entry_id=result.id)

    def label(self, params: protocol.LabelParams) -> AppendResult:
        entry: dict[str, Any] = {"type": "label", "targetId": params.target_id}
        if params.label is not None:
            entry["label"] = params.label
        return self._append(self._get(params.session_id), [entry], expected_leaf=params.expected_leaf_id, sources=[""])

    def set_name(self, params: protocol.SetNameParams) -> AppendResult:
        entry = {"type": "session_info", "name": session_name(params.name)}
        return self._append(self._get(params.session_id), [entry], expected_leaf=params.expected_leaf_id)

    def edit_context(self, params: protocol.EditContextParams) -> AppendResult:
        """pi's appendContextEdit, below the leaf: the target must be on the leaf's path."""
        replacement = None if params.replacement is None else {"content": params.replacement.content}
        entry = {"type": "context_edit", "targetId": params.target_id, "replacement": replacement}
        return self._append(self._get(params.session_id), [entry], expected_leaf=params.expected_leaf_id, sources=[""])

    def fork(self, params: protocol.ForkParams) -> protocol.ForkResult:
        if params.entry_id is None and params.cwd is None:
            raise InvalidParams("send entryId (fork a path), cwd (copy the session), or both", field="entryId")
        opened = self._synced(params.session_id)
        session = opened.session
        if params.entry_id is not None:
            path, _ = session.index.walk(session.require(params.entry_id, "entryId").seq)
            plan = branched_plan(session, path)
        else:
            plan = whole_plan(session)
        cwd = params.cwd if params.cwd is not None else session.header.get("cwd", "")
        # Beside its source, as pi forks; another agent's session forks into pi's directory for its cwd.
        elsewhere = params.cwd is not None or isinstance(opened, AgentOpenSession)
        directory = self.backend.directory_for(cwd) if elsewhere else opened.path.parent
        session_id = new_session_id()
        timestamp = now_iso()
        header = {"type": "session", "version": protocol.FORMAT_VERSION, "id": session_id, "timestamp": timestamp}
        header.update(cwd=cwd, parentSession=str(opened.path))
        header_line = jsonfmt.dumps(header)
        chunks = itertools.chain([header_line + b"\n"], plan.chunks(session.index, session.storage.read))  # read as written: the path is not held whole
        storage, file_path = self.backend.create(directory, file_name(timestamp, session_id), chunks)
        forked_session = Session.adopt(storage, header_line, plan, session)
        forked = self._add(OpenSession(forked_session, file_path, self.listener))
        return protocol.ForkResult(forked.id, str(file_path))

    # ------------------------------------------------------------------ reading

    def context(self, params: protocol.ContextParams) -> protocol.ContextResult:
        opened = self._synced(params.session_id)
        session = opened.session
        leaf = session.index.leaf_id if params.leaf_id is UNSET else params.leaf_id
        if leaf is not None:
            session.require(leaf, "leafId")
        cache = opened.context_cache
        context = cache.get(leaf)
        if context is None:
            context = build_context(session.index, leaf, session.entry, session.messages_or_entries)
            if leaf == session.index.leaf_id:
                cache.put(context)
        messages, cursor, held = self._context_messages(cache, context, params)
        result = protocol.ContextResult(messages, context.thinking_level, context.model, leaf, list(context.warnings))
        result.cursor = cursor
        if params.since is not None:
            result.reset = held is None
        window = params.context_window or opened.context_window
        if params.tokens or window:
            result.tokens = summaries.context_tokens(context.messages)
        if window:
            settings = params.settings or opened.compaction_settings
            result.compaction = summaries.advice(opened, context, window, settings)
        return result

    @staticmethod
    def _context_messages(
        cache: ContextCache, context: Context, params: protocol.ContextParams
    ) -> tuple[builtins.list[Any], str, int | None]:
        """The messages to send, the answer's cursor, and how many the client holds already
        (None: it is sent all of them). A delta comes only from the cached context, which
        changes only at its end while its cursor holds (see `ContextCache`)."""
        cached = cache.context is context
        held = cache.held(params.since, params.format) if cached and params.since is not None else None
        if held is not None:
            after = cache.messages_after(held)
            if params.format == "llm":
                after = convert_to_llm([item.value if type(item) is jsonfmt.RawJson else item for item in after])
            return after, cache.cursor(params.format), held
        if params.format == "llm":
            messages: builtins.list[Any] = convert_to_llm(context.messages)
        else:
            messages = cache.messages_for_wire() if cached else builtins.list(context.messages)
        cursor = cache.cursor(params.format) if cached else uncached_cursor(len(context.messages), params.format)
        return messages, cursor, None

    def tree(self, params: protocol.TreeParams) -> protocol.TreeResult:
        opened = self._synced(params.session_id)
        nodes, warnings = opened.tree()
        return protocol.TreeResult(opened.session.index.leaf_id, nodes, list(warnings))

    def tree_view(self, params: protocol.TreeViewParams) -> protocol.TreeViewResult:
        if params.offset < 0:
            raise InvalidParams("offset must not be negative", field="offset")
        if not 1 <= params.limit <= MAX_TREE_ROWS:
            raise InvalidParams(f"limit must be 1 to {MAX_TREE_ROWS}", field="limit")
        if params.run is not None and params.reveal is not None:
            raise InvalidParams("send at most one of run and reveal", field="run")
        opened = self._synced(params.session_id)
        session, folded = opened.session, opened.folded()
        offset, limit, leaf = params.offset, params.limit, session.index.leaf_id
        if params.run is not None:  # a run is consecutive entries: its page is a slice of seqs
            run = _run_row(folded, session.require(params.run, "run").seq)
            seqs = range(run.first, run.last + 1)
            page = [row_of(folded, Row(seq, seq, run.indent), opened.preview) for seq in seqs[offset : offset + limit]]
            return protocol.TreeViewResult(leaf, len(seqs), offset, page)
        if params.reveal is not None:
            position = folded.find(session.require(params.reveal, "reveal").seq)
            offset = 0 if position is None else position - position % limit  # the page that shows it
        page = [row_of(folded, row, opened.preview) for row in folded.page(offset, limit)]
        return protocol.TreeViewResult(leaf, folded.total, offset, page)

    def export(self, params: protocol.ExportParams) -> protocol.ExportResult:
        leaf, chunks = self.export_chunks(params)
        return protocol.ExportResult(params.format, leaf, "".join(chunks))

    def export_chunks(
        self, params: protocol.ExportParams, progress: Progress | None = None
    ) -> tuple[str | None, Iterator[str]]:
        """The leaf exported to and the document as a stream of chunks, its entries read as it is
        written (the command line writes them to a file as they come); `progress(entries written,
        entries to write)` as it goes."""
        opened = self._synced(params.session_id)
        session, index = opened.session, opened.session.index
        leaf = index.leaf_id if params.leaf_id is UNSET else params.leaf_id
        leaf_seq = session.require(leaf, "leafId").seq if leaf is not None else None
        title = index.name or _first_words(session) or f"Session {session.header['id']}"
        tree = params.scope == "tree"
        outline = export_input.outline(opened, leaf_seq, tree)
        if tree:
            items: Iterable[export.Item] = export_input.tree_items(opened, leaf_seq)
            shown = len(index)
        else:
            seqs, items = export_input.path_items(opened, leaf_seq)
            shown = len(seqs)
        if progress is not None:
            items = export_input.counted(items, shown, progress)
        if params.format == "markdown":
            return leaf, export.markdown_chunks(title, items, outline)
        return leaf, export.page_chunks(title, items, tree, export_input.facts(opened, shown), outline)

    def stats(self, params: protocol.StatsParams, progress: Progress | None = None) -> protocol.StatsResult:
        """A session's figures, or a project's (`progress(files read, files)` as it reads them)."""
        if (params.session_id is None) == (params.cwd is None):
            raise InvalidParams("session/stats takes exactly one of sessionId and cwd", field="sessionId")
        if params.session_id is not None:
            opened = self._synced(params.session_id)
            tree, on_path = opened.stats()
            return protocol.StatsResult(1, tree.wire(), on_path.wire(), session_id=opened.id)
        assert params.cwd is not None
        total = stats.Stats()
        files = self.backend.paths(params.cwd)
        counted = 0
        for done, path in enumerate(files, 1):
            found = self._file_stats(path)
            if found is not None:
                total.merge(found)
                counted += 1
            if progress is not None:
                progress(done, len(files))
        return protocol.StatsResult(counted, total.wire(), cwd=params.cwd)

    def _file_stats(self, path: Path) -> Stats | None:
        """A file's whole-tree figures: from its open session, or from a read-only scan."""
        opened = self._by_path.get(path)
        if opened is not None:
            opened.sync()
            return opened.stats()[0]
        session = self.backend.load_readonly(path)
        if session is None:
            return None
        try:
            return OpenSession(session, path, None).stats()[0]
        except (SessionTreeError, OSError):
            return None
        finally:
            session.close()

    # ------------------------------------------------------------------ search

    def search_index(self) -> SearchIndex:
        """The backend's search index (made on first use): SQLite beside the sidecars, or in PostgreSQL."""
        if self._search is None:
            self._search = self.backend.search_index()
            if isinstance(self._search, FileSearch) and self.agents.folders:
                self._search.others = self.agents.searchable
        return self._search

    def refresh_search(
        self, progress: Progress | None = None, cancelled: Callable[[], bool] | None = None
    ) -> RefreshStats:
        """Bring the search index up to date with the sessions (safe to run in a worker thread: it
        reads them through descriptors or a connection of its own and writes only the index)."""
        return self.search_index().refresh(progress=progress, cancelled=cancelled)

    def search(self, params: protocol.SearchParams, indexed: RefreshStats) -> protocol.SearchResult:
        since, until = _ms_of(params.since, "since"), _ms_of(params.until, "until")
        session = params.session
        if session is not None and session in self._sessions:  # an open session's id: its file
            session = str(self._sessions[session].path)
        page = self.search_index().search(
            params.query, syntax=params.syntax, cwd=params.cwd, session=session, roles=params.roles,
            types=params.types, since_ms=since, until_ms=until, limit=params.limit, cursor=params.cursor,
            leaf_path=self._leaf_path_ids,
        )
        hits = [
            protocol.SearchHit(
                hit.path, hit.session_id, hit.cwd, hit.entry_id, hit.parent_id, hit.type, hit.role, hit.timestamp,
                hit.snippet, [list(span) for span in hit.highlights], hit.score, hit.on_leaf_path,
                self.agents.agent_of(hit.path),
            )
            for hit in page.hits
        ]
        counts = protocol.SearchIndexed(
            indexed.files_seen, indexed.files_unchanged, indexed.files_appended, indexed.files_reindexed,
            indexed.files_removed, indexed.entries_added, indexed.rebuilt,
        )
        return protocol.SearchResult(hits, page.cursor, counts)

    def _leaf_path_ids(self, path: str) -> set[str] | None:
        """The ids on the path of an open session's current leaf; None for a file not open here."""
        opened = self._by_path.get(Path(path))
        if opened is None:
            return None
        index = opened.session.index
        leaf = index.seq_of(index.leaf_id) if index.leaf_id is not None else None
        return set() if leaf is None else {index.ids[seq] for seq in index.walk(leaf)[0]}

    def entries(self, params: protocol.EntriesParams) -> protocol.EntriesResult:
        opened = self._synced(params.session_id)
        session = opened.session
        chosen = [params.ids is not None, params.path_to is not None, params.since is not UNSET]
        if sum(chosen) != 1:
            raise InvalidParams("send exactly one of ids, pathTo and since", field="ids")
        if params.limit is not None and params.limit < 1:
            raise InvalidParams("limit must be at least 1", field="limit")
        if params.ids is not None:
            nodes = [session.require(entry_id, "ids") for entry_id in params.ids]
        elif params.path_to is not None:
            nodes = walk_path(session.index, session.require(params.path_to, "pathTo").id)
        else:
            assert params.since is not UNSET  # the one chosen
            start = 0 if params.since is None else session.require(params.since, "since").seq + 1
            nodes = session.index.nodes[start:]
        if params.limit is not None:
            nodes = nodes[: params.limit]
        cursor = nodes[-1].id if nodes and params.since is not UNSET else session.index.cursor
        if params.since is not UNSET and not nodes:
            cursor = params.since if params.since is not None else None
        return protocol.EntriesResult([session.raw_entry(node) for node in nodes], cursor)  # type: ignore[misc]  # as in DidChangeParams

    # ------------------------------------------------------------------ compaction and branch summaries

    def configure(self, params: protocol.ConfigureParams) -> protocol.ConfigureResult:
        opened = self._get(params.session_id)
        if params.context_window is not None:
            opened.context_window = params.context_window or None  # 0 stops the advice
        if params.settings is not None:
            opened.compaction_settings = params.settings
        return protocol.ConfigureResult(opened.context_window, opened.compaction_settings)

    def prepare_compaction(self, params: protocol.PrepareCompactionParams) -> protocol.PrepareCompactionResult | None:
        return summaries.prepare(self._synced(params.session_id), params)

    def commit_compaction(self, params: protocol.CommitCompactionParams) -> protocol.CommitCompactionResult:
        return summaries.commit(self._synced(params.session_id), params, self._append)

    def prepare_branch_summary(
        self, params: protocol.PrepareBranchSummaryParams
    ) -> protocol.PrepareBranchSummaryResult:
        return summaries.prepare_branch(self._synced(params.session_id), params)

    def commit_branch_summary(self, params: protocol.CommitBranchSummaryParams) -> protocol.CommitBranchSummaryResult:
        return summaries.commit_branch(self._synced(params.session_id), params, self._append)

    # ------------------------------------------------------------------ helpers

    # ------------------------------------------------------------------ retiring sessions

    def trash(self, params: protocol.RetireParams) -> protocol.RetireResult:
        """Move a session file to the trash (restorable); its open session is closed."""
        path = self.backend.resolve(params.path)
        return self._retired(self._retirement("session/trash").trash(path))

    def archive(self, params: protocol.RetireParams) -> protocol.RetireResult:
        """Move a session file to `.archive/` in its folder; its open session is closed."""
        path = self.backend.resolve(params.path)
        return self._retired(self._retirement("session/archive").archive(path))

    def restore(self, params: protocol.RetireParams) -> protocol.RestoreResult:
        """Put a trashed or archived session file back where it was (never over another file)."""
        retirement = self._retirement("session/restore")
        refuse_control_characters(params.path, "path")
        path = Path(os.path.abspath(self.root / Path(params.path).expanduser()))  # relative: from the root
        moved = retirement.restore(path)
        return protocol.RestoreResult(str(moved.target), str(moved.source))

    def _retired(self, moved: Moved) -> protocol.RetireResult:
        opened = self._by_path.get(moved.source)
        if opened is not None:  # its file is gone from where it was opened: the session ends
            self._forget(opened)
        info = None if moved.info is None else str(moved.info)
        closed = None if opened is None else opened.id
        return protocol.RetireResult(str(moved.source), str(moved.target), info, closed)

    def _retirement(self, method: str) -> Retirement:
        backend = self._file_backend(method)
        trash = self.config.trash_dir if self.config.trash_dir is not None else home_trash(os.environ)
        return Retirement(backend.root, trash)

    def _file_backend(self, method: str) -> FileBackend:
        if not isinstance(self.backend, FileBackend):
            raise InvalidParams(f"{method} moves session files: the PostgreSQL store keeps none", field="$")
        return self.backend

    def _get(self, session_id: str) -> OpenSession:
        opened = self._sessions.get(session_id)
        if opened is None:
            raise SessionNotFound(f"no open session {session_id}", sessionId=session_id)
        return opened

    def _synced(self, session_id: str) -> OpenSession:
        opened = self._get(session_id)
        opened.sync()
        return opened


def _children_of(listed: list[SessionSummary], parent: str, root: Path) -> list[SessionSummary]:
    """The sessions whose `parentSession` is `parent`: a path (relative ones from the root) or an id."""
    path = str(root / parent) if not Path(parent).is_absolute() else parent
    return [s for s in listed if s.parent_session is not None and s.parent_session in (parent, path)]


def _backend(config: ServiceConfig) -> Backend:
    if config.store is None:
        return FileBackend(
            config.sessions_dir, config.durability, config.index_dir, config.index_min_entries, config.view_only
        )
    from .backend.postgres import PostgresBackend  # psycopg is needed only by those who use it

    return PostgresBackend(config.sessions_dir, config.store)


def _first_words(session: Session) -> str | None:
    """The first user message's first line, as pi's session picker names a session."""
    for node in session.index.nodes:
        if node.role == "user":
            content = session.entry(node).get("message", {}).get("content")
            text = content if isinstance(content, str) else " ".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            )
            line = " ".join(text.split())
            return (line[:79] + "…") if len(line) > 80 else line or None
    return None


def _ms_of(iso: str | None, field: str) -> int | None:
    if iso is None:
        return None
    ms = iso_to_ms(iso)
    if ms is None:
        raise InvalidParams(f"{field} must be an ISO 8601 time such as 2026-01-31T12:00:00Z", field=field)
    return int(ms)


def _run_row(folded: FoldedTree, seq: int) -> Row:
    position = folded.find(seq)
    row = folded.page(position, 1)[0] if position is not None else None
    if row is None or not row.is_run or row.first != seq:
        raise InvalidParams("run must be the id of a run row (its first entry)", field="run")
    return row


def _write_warnings(session: Session, before: int) -> list[FileWarning]:
    """The warnings an append added to `session` (from `before` on) about what its write did."""
    return [warning for warning in session.warnings[before:] if warning.kind in WRITE_WARNINGS]


def _append_result(written: list[Appended], leaf_id: str | None) -> AppendResult:
    last = written[-1].node
    result = AppendResult(last.id, last.parent_id, last.timestamp, leaf_id)
    if len(written) > 1:
        result.appended = [AppendedEntry(a.node.id, a.node.parent_id, a.node.timestamp) for a in written]
    return result
