"""The daemon: `HANDLERS` maps each method to its params type and the call it makes.

The wire itself (framing, envelope checks, dispatch, requests to the client, cancellation, the
LSP lifecycle, tracing and progress) is `rpc/`; the domain is `SessionService`. Everything runs
on one event loop, one message at a time, in arrival order: with session files the service is
synchronous and fast, so handlers call it directly; only the methods that wait for the client's
summary (`session/compact`, `session/navigate`) run as tasks. With a PostgreSQL store a call may
wait on the server for seconds, so every service call runs in a worker thread, in its session's
lane (lanes.py): one session's waits hold up no other, and `$/cancelRequest` stops them.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, cast

import attrs

from . import __version__
from . import protocol as p
from .client_summary import Summarizer
from .config import (
    ServerConfig,
    parse_init_options,
    resolve_agent_dirs,
    resolve_durability,
    resolve_index_dir,
    resolve_sessions_dir,
    resolve_store,
)
from .errors import InvalidParams
from .lanes import Interruptible, Lanes
from .protocol import FORMAT_VERSION, METHODS, PROTOCOL_VERSION, parse_params, to_wire
from .rpc.allocator import tune_allocator
from .rpc.lsp import InitializeParams, LspServer, MessageType
from .search import IndexDamaged, RefreshStats
from .search.query import check_wire_params
from .service import ServiceConfig, SessionService
from .watch import Watcher

log = logging.getLogger("sessiontree")
T = TypeVar("T")

NAME: Final = "sessiontree"
DID_CHANGE: Final = "session/didChange"
DID_CLOSE: Final = "session/didClose"


def capabilities() -> dict[str, Any]:
    """What `initialize` advertises under `capabilities.experimental`."""
    return {
        "sessiontree": {
            "protocolVersion": PROTOCOL_VERSION,
            "formatVersion": FORMAT_VERSION,
            "methods": sorted(METHODS),
        }
    }


def _request_ids() -> Iterator[str]:
    """Ids of the daemon's requests to the client: UUIDs, as protocol.md's examples show them."""
    while True:
        yield str(uuid.uuid4())


class Daemon(LspServer):
    """The lifecycle's hooks, and the methods that say more on the wire than their result."""

    def __init__(self, config: ServerConfig) -> None:
        super().__init__(NAME, __version__, ids=_request_ids(), debug=config.debug)
        self.config = config
        self._service: SessionService | None = None
        self.client_capabilities: dict[str, Any] = {}
        self._watcher: Watcher | None = None
        self._closed = False  # on_close ran: a search whose refresh ends now must not reopen the index
        self.lanes: Lanes | None = None  # where service calls run when they may wait on a server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = threading.get_ident()

    @property
    def service(self) -> SessionService:
        assert self._service is not None, "requests before initialize are refused by the lifecycle"
        return self._service

    # ----------------------------------------------------------------- lifecycle

    def on_initialize(self, params: InitializeParams) -> dict[str, Any]:
        options = parse_init_options(params.initialization_options)
        root = resolve_sessions_dir(self.config.sessions_dir, os.environ, options)
        durability = resolve_durability(self.config.durability, options)
        store = resolve_store(self.config.store, os.environ, options)
        agents = resolve_agent_dirs(self.config.agent_dirs, os.environ, options)
        config = ServiceConfig(root, durability, resolve_index_dir(os.environ, options), store=store, agents=agents)
        service = SessionService(config, self._did_change)
        service.backend.start()  # a store that cannot be reached fails `initialize`, with why
        self._service = service
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        if isinstance(service.backend, Interruptible):
            self.lanes = Lanes(service.backend)
        self.client_capabilities = params.capabilities
        self.handlers.update((method, bind(method, handler, self)) for method, handler in HANDLERS.items())
        self.batch_handlers.update(
            (method, bind_batch(method, handler.batch, self)) for method, handler in HANDLERS.items() if handler.batch
        )
        watched = service if self.lanes is None else cast(SessionService, _PollInLanes(service, self.lanes))
        self._watcher = Watcher(watched, lambda: self.channel is None or not self.channel.output_paused)
        self._watcher.start()
        log.info("serving sessions under %s (durability %s)", root, durability)  # the Neovim plugin reads this line
        if store is not None:
            log.info("sessions are kept in the PostgreSQL store %s", service.backend.shown)
        return capabilities()

    def on_shutdown(self) -> None:
        self.on_close()  # every lock released, every index saved, before `shutdown` is answered

    def on_close(self) -> None:
        """Closing the search index stops a refresh under way in a worker thread and waits for it
        (see SearchIndex.close): a connection closed under a running statement crashes SQLite."""
        self._closed = True
        if self._watcher is not None:
            self._watcher.stop()
        if self.lanes is not None:
            self.lanes.close()  # the calls in workers end first: then their connections may close
        if self._service is not None:
            self._service.close_all()

    def _did_change(self, change: p.DidChangeParams) -> None:
        """Tell the client about entries another process appended (see the service's listener).
        Heard in a worker (lanes), it is sent from the loop, before the answer of that call."""
        message = to_wire(change)
        if self._loop is not None and threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(self.notify, DID_CHANGE, message)
        else:
            self.notify(DID_CHANGE, message)

    async def in_lane(self, key: str | None, call: Callable[[], T]) -> T:
        """`call` in a worker, in the lane of session `key` (None: after and before every other)."""
        assert self.lanes is not None
        return await self.lanes.run(key, call)

    # ----------------------------------------------------------------- methods with more to say

    def open(self, params: p.OpenParams) -> p.OpenResult:
        """Each warning of the file is also sent as a `window/logMessage`, before the answer."""
        return self._warned(self.service.open(params))

    async def open_in_lanes(self, params: p.OpenParams) -> p.OpenResult:
        return self._warned(await self.in_lane(None, functools.partial(self.service.open, params)))

    def _warned(self, result: p.OpenResult) -> p.OpenResult:
        for warning in result.warnings:
            self.log_message(MessageType.WARNING, f"{result.path}: {warning.message}")
        return result

    def list(self, params: p.ListParams) -> p.ListResult:
        """With a `workDoneToken`, `$/progress` each time the percentage of files read changes."""
        if params.work_done_token is None:
            return self.service.list(params)
        progress = self.progress(params.work_done_token)
        progress.begin("Listing sessions", percentage=0)
        last = -1

        def report(done: int, total: int) -> None:
            nonlocal last
            percent = 100 if total <= 0 else min(100, done * 100 // total)
            if percent != last:
                last = percent
                progress.report(message=f"{done}/{total}", percentage=percent)

        try:
            return self.service.list(params, report)
        finally:
            progress.end()

    async def list_in_lanes(self, params: p.ListParams) -> p.ListResult:
        """`list`, its progress reported from the worker through the loop."""
        if params.work_done_token is None:
            return await self.in_lane(None, functools.partial(self.service.list, params))
        loop = asyncio.get_running_loop()
        progress = self.progress(params.work_done_token)
        progress.begin("Listing sessions", percentage=0)

        def report(done: int, total: int) -> None:  # in the worker
            percent = 100 if total <= 0 else min(100, done * 100 // total)
            loop.call_soon_threadsafe(lambda: progress.report(message=f"{done}/{total}", percentage=percent))

        try:
            return await self.in_lane(None, functools.partial(self.service.list, params, report))
        finally:
            progress.end()

    async def search(self, params: p.SearchParams) -> p.SearchResult:
        """The index is brought up to date first, in a worker thread, so the daemon answers other
        requests meanwhile; with a `workDoneToken`, `$/progress` as files are read. A cancelled
        search stops the refresh between files (what it indexed is kept). A search that finds the
        index damaged says so (`window/logMessage`), has it rebuilt and runs again, once."""
        loop = asyncio.get_running_loop()
        progress = None if params.work_done_token is None else self.progress(params.work_done_token)
        report = None
        if progress is not None:
            progress.begin("Indexing sessions for search", percentage=0)
            shown = [-1]

            def report(done: int, total: int) -> None:  # in the worker thread
                percent = 100 if total <= 0 else min(100, done * 100 // total)
                if percent != shown[0]:
                    shown[0] = percent
                    loop.call_soon_threadsafe(lambda: progress.report(message=f"{done}/{total}", percentage=percent))

        try:
            indexed = await self._refresh_search(report)
            try:
                return await self._search(params, indexed)
            except IndexDamaged as exc:
                self.log_message(MessageType.WARNING, f"{exc.message}: rebuilding it now")
                indexed = await self._refresh_search(report)
                return await self._search(params, indexed)
        finally:
            if progress is not None:
                progress.end()

    async def _search(self, params: p.SearchParams, indexed: RefreshStats) -> p.SearchResult:
        if self.lanes is None:
            return self.service.search(params, indexed)
        return await self.in_lane(None, functools.partial(self.service.search, params, indexed))

    async def _refresh_search(self, report: Callable[[int, int], None] | None) -> RefreshStats:
        """The index brought up to date in a worker thread; a cancel stops it between files."""
        stop = threading.Event()
        try:
            indexed = await asyncio.to_thread(self.service.refresh_search, report, stop.is_set)
        except asyncio.CancelledError:
            stop.set()
            raise
        if self._closed:  # the daemon closed while the index was refreshed (end of input)
            raise asyncio.CancelledError
        return indexed

    async def compact(self, params: p.CompactParams) -> p.CommitCompactionResult:
        return await self._summarizer().compact(params)

    async def navigate(self, params: p.NavigateParams) -> p.CommitBranchSummaryResult:
        return await self._summarizer().navigate(params)

    def _summarizer(self) -> Summarizer:
        """Its service calls in their session's lane, when there are lanes."""
        return Summarizer(self, self.service, self.client_capabilities, None if self.lanes is None else self.in_lane)

    def trash(self, params: p.RetireParams) -> p.RetireResult:
        return self._closed_by(self.service.trash(params), "trashed")

    def archive(self, params: p.RetireParams) -> p.RetireResult:
        return self._closed_by(self.service.archive(params), "archived")

    def _closed_by(self, result: p.RetireResult, reason: Literal["trashed", "archived"]) -> p.RetireResult:
        """An open session of the moved file was closed: the client hears it before the answer."""
        if result.closed_session_id is not None:
            self.notify(DID_CLOSE, to_wire(p.DidCloseParams(result.closed_session_id, result.path, reason)))
        return result


class _PollInLanes:
    """The service as the watcher sees it when calls run in lanes: a poll is a call on no one
    session (it syncs any subscribed session, so it runs alone). Polls asked for while one waits
    to run are folded into it."""

    def __init__(self, service: SessionService, lanes: Lanes) -> None:
        self.backend = service.backend
        self._service = service
        self._lanes = lanes
        self._pending: tuple[int | None, set[Path] | None] | None = None  # (limit, only: None for all)
        self._taking = threading.Lock()  # the loop folds polls in while the worker may take them

    def poll(self, limit: int | None = None, only: Collection[Path] | None = None) -> None:
        with self._taking:
            if self._pending is not None:  # not taken yet: this poll rides along
                _, paths = self._pending
                self._pending = (limit, None if paths is None or only is None else paths | set(only))
                return
            self._pending = (limit, None if only is None else set(only))
        task = asyncio.get_running_loop().create_task(self._lanes.run(None, self._run))
        task.add_done_callback(_logged)

    def _run(self) -> None:
        with self._taking:  # taken in the worker: a poll asked from now on is a new one
            pending, self._pending = self._pending, None
        if pending is not None:
            self._service.poll(*pending)


def _logged(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("checking subscribed sessions failed: %s", exc)


@attrs.frozen
class Handler:
    """A method's params type and the call it makes: a `SessionService` method, run on the
    daemon's service, or (`daemon=True`) a `Daemon` method, for methods that also notify or
    ask the client."""

    params: type
    call: Callable[[Any, Any], Any]
    daemon: bool = False
    # A `SessionService` method taking the params of requests in a row and returning, per request,
    # its result or the error that fails it (see rpc/endpoint.py): for requests pipelined together.
    batch: Callable[[Any, list[Any]], list[Any]] | None = None
    # A check of the raw params before they are structured (which would take a string for a list).
    check: Callable[[Any], Any] | None = None
    # The `Daemon` method's form for service calls in lanes (lanes.py), where it differs.
    in_lanes: Callable[[Any, Any], Any] | None = None


# Every method of protocol.METHODS, once (a test holds the two tables in step).
HANDLERS: Final[dict[str, Handler]] = {
    "session/create": Handler(p.CreateParams, SessionService.create),
    "session/open": Handler(p.OpenParams, Daemon.open, daemon=True, in_lanes=Daemon.open_in_lanes),
    "session/close": Handler(p.SessionParams, SessionService.close),
    "session/info": Handler(p.SessionParams, SessionService.info),
    "session/list": Handler(p.ListParams, Daemon.list, daemon=True, in_lanes=Daemon.list_in_lanes),
    "session/append": Handler(p.AppendParams, SessionService.append, batch=SessionService.append_many),
    "session/context": Handler(p.ContextParams, SessionService.context),
    "session/tree": Handler(p.TreeParams, SessionService.tree),
    "session/treeView": Handler(p.TreeViewParams, SessionService.tree_view),
    "session/export": Handler(p.ExportParams, SessionService.export),
    "session/stats": Handler(p.StatsParams, SessionService.stats),
    "session/search": Handler(p.SearchParams, Daemon.search, daemon=True, check=check_wire_params),
    "session/entries": Handler(p.EntriesParams, SessionService.entries),
    "session/branch": Handler(p.BranchParams, SessionService.branch),
    "session/fork": Handler(p.ForkParams, SessionService.fork),
    "session/label": Handler(p.LabelParams, SessionService.label),
    "session/setName": Handler(p.SetNameParams, SessionService.set_name),
    "session/editContext": Handler(p.EditContextParams, SessionService.edit_context),
    "session/import": Handler(p.ImportParams, SessionService.import_sessions),
    "session/subscribe": Handler(p.SessionParams, SessionService.subscribe),
    "session/unsubscribe": Handler(p.SessionParams, SessionService.unsubscribe),
    "session/configure": Handler(p.ConfigureParams, SessionService.configure),
    "session/prepareCompaction": Handler(p.PrepareCompactionParams, SessionService.prepare_compaction),
    "session/commitCompaction": Handler(p.CommitCompactionParams, SessionService.commit_compaction),
    "session/compact": Handler(p.CompactParams, Daemon.compact, daemon=True),
    "session/prepareBranchSummary": Handler(p.PrepareBranchSummaryParams, SessionService.prepare_branch_summary),
    "session/commitBranchSummary": Handler(p.CommitBranchSummaryParams, SessionService.commit_branch_summary),
    "session/navigate": Handler(p.NavigateParams, Daemon.navigate, daemon=True),
    "session/trash": Handler(p.RetireParams, Daemon.trash, daemon=True),
    "session/archive": Handler(p.RetireParams, Daemon.archive, daemon=True),
    "session/restore": Handler(p.RetireParams, SessionService.restore),
}


def lane_of(params: Any) -> str | None:
    """The session a request works on (its lane), or None for one on no one session: a
    `session/create`, `open`, `list`, `search`, a `session/stats` of a cwd."""
    session_id = getattr(params, "session_id", None)
    return session_id if isinstance(session_id, str) else None


def bind(method: str, handler: Handler, daemon: Daemon) -> Callable[[Any], Any]:
    """The endpoint's handler for `method`: parse the raw params, make the call, unstructure.
    With lanes, a service call runs in its session's lane, and the result is unstructured there."""
    target = daemon if handler.daemon else daemon.service
    call = handler.call if daemon.lanes is None or handler.in_lanes is None else handler.in_lanes
    check = handler.check or (lambda params: params)
    if daemon.lanes is not None and not handler.daemon:

        async def run_in_lane(params: Any) -> Any:
            parsed = parse_params(method, check(params))
            return await daemon.in_lane(lane_of(parsed), lambda: to_wire(call(target, parsed)))

        return run_in_lane
    if inspect.iscoroutinefunction(call):

        async def run_async(params: Any) -> Any:
            return to_wire(await call(target, parse_params(method, check(params))))

        return run_async

    def run(params: Any) -> Any:
        return to_wire(call(target, parse_params(method, check(params))))

    return run


def bind_batch(method: str, call: Callable[[Any, list[Any]], list[Any]], daemon: Daemon) -> Callable[[list[Any]], Any]:
    """The endpoint's batch handler for `method`: params that do not parse fail alone. With lanes
    the call runs in the lane of the requests' session (of none, when they name several)."""
    service = daemon.service

    def parse(raw: list[Any]) -> tuple[list[Any], list[Any]]:
        outcomes: list[Any] = []
        parsed: list[Any] = []
        for params in raw:
            try:
                parsed.append(parse_params(method, params))
                outcomes.append(None)
            except InvalidParams as exc:
                outcomes.append(exc)
        return outcomes, parsed

    def answers(outcomes: list[Any], parsed: list[Any]) -> list[Any]:
        results = iter(call(service, parsed) if parsed else [])
        done: list[Any] = []
        for outcome in outcomes:
            result = next(results) if outcome is None else outcome
            done.append(result if isinstance(result, Exception) else to_wire(result))
        return done

    def run(raw: list[Any]) -> list[Any]:
        return answers(*parse(raw))

    async def run_in_lane(raw: list[Any]) -> list[Any]:
        outcomes, parsed = parse(raw)
        lanes = {lane_of(params) for params in parsed}
        key = lanes.pop() if len(lanes) == 1 else None
        return await daemon.in_lane(key, lambda: answers(outcomes, parsed))

    return run if daemon.lanes is None else run_in_lane


# --------------------------------------------------------------------------- entry point


def claim_stdout() -> int:
    """Keep the real stdout for frames only; everything else written to fd 1 goes to stderr.

    `print()` in a handler, or a C library writing to fd 1, would otherwise corrupt the stream.
    """
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop when it is installed (`pip install sessiontree[fast]`): it wakes up and
    dispatches a request in less time, which bounds requests sent one at a time. Without it, or
    with SESSIONTREE_EVENT_LOOP=asyncio, asyncio's own loop (None: the default)."""
    if os.environ.get("SESSIONTREE_EVENT_LOOP") == "asyncio":
        return None
    try:
        import uvloop  # optional: looked for only when serving
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def serve(config: ServerConfig) -> int:
    """Run the daemon on stdin/stdout; returns the process exit code."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if config.debug else logging.INFO,
        format="sessiontree %(levelname)s %(name)s: %(message)s",
    )
    wire = claim_stdout()
    tune_allocator()
    daemon = Daemon(config)
    try:
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            return runner.run(daemon.serve(sys.stdin.fileno(), wire, config.max_message_bytes, config.record))
    except KeyboardInterrupt:
        return 130
