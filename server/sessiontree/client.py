"""A small Python client: spawns `sessiontree serve`, does the lifecycle, calls typed methods.

    async with SessionTreeClient(sessions_dir=root) as client:
        opened = await client.open(OpenParams(path=str(file)))
        tree = await client.tree(TreeParams(session_id=opened.session_id))

A `HeldContext` keeps a session's context on this side: `held_context` and `append_held` then
ask only for the messages added since the last answer (`since`/`cursor`), and hand back the
whole context all the same.

`SyncSessionTreeClient` offers the same methods without `await`; its notifications are
delivered while a call is in progress. Errors come back as `SessionTreeError`s: the domain's
own classes for their codes (`except LeafConflict:` works), `RpcError` for the rest.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypeVar

import attrs

from . import jsonfmt, protocol
from .errors import ALL_ERRORS, SessionTreeError
from .protocol import converter, to_wire
from .rpc.codes import ErrorCode
from .rpc.endpoint import CANCEL_REQUEST, Endpoint, ResponseError
from .rpc.envelope import Notification
from .rpc.framing import FrameDecoder, Rejected
from .rpc.stdio import READ_CHUNK

NotificationHandler = Callable[[str, Any], None]
# Answers the daemon's `sessiontree/summarize`: the prepared payload in, the model's text out.
Summarizer = Callable[[protocol.SummarizeParams], Awaitable[protocol.SummarizeResult]]
T = TypeVar("T")
SUMMARIZE: Final = "sessiontree/summarize"

_ERRORS_BY_CODE: Final = {cls.code: cls for cls in ALL_ERRORS}
_STDERR_LINES: Final = 50
EXIT_TIMEOUT: Final = 10.0


class RpcError(SessionTreeError):
    """An error whose code is not a domain error (-32600, -32601, -32002, -32800, ...)."""

    name = "RpcError"

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class DaemonGone(ConnectionError):
    """The daemon exited or closed its output while a call was waiting."""


def error_from_wire(error: Any) -> SessionTreeError:
    if not isinstance(error, dict):
        return RpcError(ErrorCode.INTERNAL_ERROR, f"malformed error: {error!r}")
    code, message, data = error.get("code"), str(error.get("message", "")), error.get("data")
    cls = _ERRORS_BY_CODE.get(code)  # type: ignore[arg-type]
    if cls is None:
        return RpcError(code if isinstance(code, int) else ErrorCode.INTERNAL_ERROR, message, data)
    exc = cls(message)
    if isinstance(data, dict):
        exc.data = data
    return exc


def server_command(sessions_dir: Path | None = None, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "sessiontree", "serve"]
    if sessions_dir is not None:
        command += ["--sessions-dir", str(sessions_dir)]
    return command + list(extra)


class HeldContext:
    """One session's context as the client last read it, brought up to date by deltas.

    The daemon sends, after a `since` cursor, only the messages that followed it, or all of
    them with `reset: true` when the context changed otherwise (see protocol.md). Reads of one
    `HeldContext` go one at a time: two deltas after the same cursor cannot both apply."""

    def __init__(self, session_id: str, format: protocol.ContextFormat = "agent", tokens: bool | None = None) -> None:
        self.session_id = session_id
        self.format: protocol.ContextFormat = format
        self.tokens = tokens
        self.messages: list[Any] = []
        self.cursor: str | None = None
        self.lock = asyncio.Lock()

    def request(self) -> protocol.ContextParams:
        """`session/context` params asking for what is new since the last answer."""
        return protocol.ContextParams(self.session_id, format=self.format, tokens=self.tokens, since=self.cursor)

    def ask(self) -> protocol.AppendContext:
        """The `context` of `session/append` params, to the same effect."""
        return protocol.AppendContext(since=self.cursor, format=self.format, tokens=self.tokens)

    def take(self, result: protocol.ContextResult) -> protocol.ContextResult:
        """Fold an answer in; the answer, with the whole context as its messages."""
        if result.reset is False:
            self.messages.extend(result.messages)
        else:  # all of them: asked without a cursor, or the context changed under it
            self.messages = list(result.messages)
        self.cursor = result.cursor
        return attrs.evolve(result, messages=list(self.messages), reset=None)


class _DaemonLink(Endpoint):
    """The client's end of the connection: errors come back as the domain's classes."""

    def __init__(self, client: SessionTreeClient) -> None:
        super().__init__(client._write)
        self._client = client

    def remote_error(self, error: Any) -> Exception:
        return error_from_wire(error)

    def on_rejected(self, event: Rejected) -> None:
        self._client.stderr_tail.append(f"client: bad frame from daemon: {event.reason}")

    def on_notification(self, notification: Notification) -> None:
        if notification.method == CANCEL_REQUEST:
            self.on_cancel(notification.params)
        else:
            self._client._notified(notification.method, notification.params)


class SessionTreeClient:
    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        sessions_dir: Path | None = None,
        env: dict[str, str] | None = None,
        on_notification: NotificationHandler | None = None,
        summarize: Summarizer | None = None,
    ) -> None:
        """`summarize`, when given, is announced in `initialize` and answers the daemon's summary
        requests (session/compact, session/navigate); a `$/cancelRequest` from the daemon cancels it."""
        self.command = list(command) if command is not None else server_command(sessions_dir)
        self.env = env
        self.on_notification = on_notification
        self.summarize = summarize
        self.notification_handlers: dict[str, Callable[[Any], None]] = {}
        self.initialize_result: dict[str, Any] | None = None
        self.stderr_tail: deque[str] = deque(maxlen=_STDERR_LINES)
        self._process: asyncio.subprocess.Process | None = None
        self._link = _DaemonLink(self)
        if summarize is not None:
            self._link.handlers[SUMMARIZE] = self._summarize
        self._tasks: list[asyncio.Task[None]] = []

    # ----------------------------------------------------------------- lifecycle

    async def start(self, initialization_options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Spawn the daemon and initialize it; returns the `initialize` result."""
        env = {**os.environ, **self.env} if self.env is not None else None
        self._process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        self._tasks = [asyncio.create_task(self._read_frames()), asyncio.create_task(self._read_stderr())]
        capabilities = {"experimental": {"sessiontree": {"summarize": True}}} if self.summarize else {}
        params = {"processId": os.getpid(), "capabilities": capabilities, "initializationOptions": initialization_options}
        self.initialize_result = await self.request("initialize", params)
        self.notify("initialized", {})
        return self.initialize_result

    async def stop(self) -> int:
        """`shutdown` then `exit`; returns the daemon's exit code."""
        process = self._process
        if process is None:
            return 0
        if process.returncode is None:
            try:
                await self.request("shutdown")
                self.notify("exit")
            except (DaemonGone, ConnectionError):
                pass
        try:
            code = await asyncio.wait_for(process.wait(), EXIT_TIMEOUT)
        except TimeoutError:
            process.kill()
            code = await process.wait()
        for task in self._tasks:
            await task
        return code

    async def __aenter__(self) -> SessionTreeClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ----------------------------------------------------------------- raw JSON-RPC

    async def request(self, method: str, params: Any = None) -> Any:
        _, answer = self._link.request(method, params)
        return await answer

    def notify(self, method: str, params: Any = None) -> None:
        self._link.notify(method, params)

    def _write(self, message: dict[str, Any]) -> None:
        if self._process is None or self._process.stdin is None or self._process.stdin.is_closing():
            raise DaemonGone(self._gone_message())
        body = jsonfmt.dumps_wire(message)
        self._process.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))

    async def _read_frames(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        decoder = FrameDecoder(max_message_bytes=1 << 40)  # we trust the daemon's sizes
        while data := await self._process.stdout.read(READ_CHUNK):
            self._link.on_events(decoder.feed(data))
        await self._process.wait()
        self._link.fail_waiting(DaemonGone(self._gone_message()))

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while line := await self._process.stderr.readline():
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip("\n"))

    async def _summarize(self, raw: Any) -> Any:
        """The daemon's `sessiontree/summarize`, answered by the `summarize` callback."""
        assert self.summarize is not None
        try:
            params = converter.structure(raw, protocol.SummarizeParams)
            return to_wire(await self.summarize(params))
        except asyncio.CancelledError:  # the daemon sent $/cancelRequest
            raise ResponseError(ErrorCode.REQUEST_CANCELLED, "summary cancelled") from None
        except Exception as exc:  # the model failed: the daemon appends nothing and reports it
            raise ResponseError(ErrorCode.INTERNAL_ERROR, f"summarize failed: {exc}") from None

    def _notified(self, method: str, params: Any) -> None:
        if (handler := self.notification_handlers.get(method)) is not None:
            handler(params)
        if self.on_notification is not None:
            self.on_notification(method, params)

    def _gone_message(self) -> str:
        code = self._process.returncode if self._process is not None else None
        tail = "\n".join(self.stderr_tail)
        return f"the sessiontree daemon is gone (exit code {code})" + (f":\n{tail}" if tail else "")

    # ----------------------------------------------------------------- typed methods

    async def call(self, method: str, params: Any) -> Any:
        """Call a `protocol.METHODS` method with its params object; returns its result object."""
        raw = await self.request(method, to_wire(params))
        result_type = protocol.METHODS[method].result
        return None if result_type is None or raw is None else converter.structure(raw, result_type)

    async def _call(self, method: str, params: Any, result_type: type[T]) -> T:
        """`call` for a method whose result is always a `result_type`."""
        assert protocol.METHODS[method].result is result_type, method
        raw = await self.request(method, to_wire(params))
        return converter.structure(raw, result_type)

    async def _call_maybe(self, method: str, params: Any, result_type: type[T]) -> T | None:
        """`call` for a method that answers a `result_type` or null."""
        assert protocol.METHODS[method].result is result_type, method
        raw = await self.request(method, to_wire(params))
        return None if raw is None else converter.structure(raw, result_type)

    async def create(self, params: protocol.CreateParams) -> protocol.CreateResult:
        return await self._call("session/create", params, protocol.CreateResult)

    async def open(self, params: protocol.OpenParams) -> protocol.OpenResult:
        return await self._call("session/open", params, protocol.OpenResult)

    async def close(self, params: protocol.SessionParams) -> None:
        await self.call("session/close", params)

    async def info(self, params: protocol.SessionParams) -> protocol.InfoResult:
        return await self._call("session/info", params, protocol.InfoResult)

    async def list(self, params: protocol.ListParams) -> protocol.ListResult:
        return await self._call("session/list", params, protocol.ListResult)

    async def import_sessions(self, params: protocol.ImportParams) -> protocol.ImportResult:
        return await self._call("session/import", params, protocol.ImportResult)

    async def append(self, params: protocol.AppendParams) -> protocol.AppendResult:
        return await self._call("session/append", params, protocol.AppendResult)

    async def context(self, params: protocol.ContextParams) -> protocol.ContextResult:
        return await self._call("session/context", params, protocol.ContextResult)

    async def held_context(self, held: HeldContext) -> protocol.ContextResult:
        """`session/context` at the session's leaf for `held`: only the new messages travel."""
        async with held.lock:
            return held.take(await self.context(held.request()))

    async def append_held(self, params: protocol.AppendParams, held: HeldContext) -> protocol.AppendResult:
        """`session/append` whose answer also brings `held` up to date (its `context` is the whole)."""
        async with held.lock:
            result = await self.append(attrs.evolve(params, context=held.ask()))
            if result.context is not None:
                result.context = held.take(result.context)
            return result

    async def tree(self, params: protocol.TreeParams) -> protocol.TreeResult:
        return await self._call("session/tree", params, protocol.TreeResult)

    async def tree_view(self, params: protocol.TreeViewParams) -> protocol.TreeViewResult:
        return await self._call("session/treeView", params, protocol.TreeViewResult)

    async def export(self, params: protocol.ExportParams) -> protocol.ExportResult:
        return await self._call("session/export", params, protocol.ExportResult)

    async def stats(self, params: protocol.StatsParams) -> protocol.StatsResult:
        return await self._call("session/stats", params, protocol.StatsResult)

    async def search(self, params: protocol.SearchParams) -> protocol.SearchResult:
        return await self._call("session/search", params, protocol.SearchResult)

    async def entries(self, params: protocol.EntriesParams) -> protocol.EntriesResult:
        return await self._call("session/entries", params, protocol.EntriesResult)

    async def branch(self, params: protocol.BranchParams) -> protocol.BranchResult:
        return await self._call("session/branch", params, protocol.BranchResult)

    async def fork(self, params: protocol.ForkParams) -> protocol.ForkResult:
        return await self._call("session/fork", params, protocol.ForkResult)

    async def label(self, params: protocol.LabelParams) -> protocol.AppendResult:
        return await self._call("session/label", params, protocol.AppendResult)

    async def set_name(self, params: protocol.SetNameParams) -> protocol.AppendResult:
        return await self._call("session/setName", params, protocol.AppendResult)

    async def edit_context(self, params: protocol.EditContextParams) -> protocol.AppendResult:
        return await self._call("session/editContext", params, protocol.AppendResult)

    async def subscribe(self, params: protocol.SessionParams) -> protocol.SubscribeResult:
        return await self._call("session/subscribe", params, protocol.SubscribeResult)

    async def unsubscribe(self, params: protocol.SessionParams) -> None:
        await self.call("session/unsubscribe", params)

    async def trash(self, params: protocol.RetireParams) -> protocol.RetireResult:
        return await self._call("session/trash", params, protocol.RetireResult)

    async def archive(self, params: protocol.RetireParams) -> protocol.RetireResult:
        return await self._call("session/archive", params, protocol.RetireResult)

    async def restore(self, params: protocol.RetireParams) -> protocol.RestoreResult:
        return await self._call("session/restore", params, protocol.RestoreResult)

    async def configure(self, params: protocol.ConfigureParams) -> protocol.ConfigureResult:
        return await self._call("session/configure", params, protocol.ConfigureResult)

    async def prepare_compaction(self, params: protocol.PrepareCompactionParams) -> protocol.PrepareCompactionResult | None:
        return await self._call_maybe("session/prepareCompaction", params, protocol.PrepareCompactionResult)

    async def commit_compaction(self, params: protocol.CommitCompactionParams) -> protocol.CommitCompactionResult:
        return await self._call("session/commitCompaction", params, protocol.CommitCompactionResult)

    async def compact(self, params: protocol.CompactParams) -> protocol.CommitCompactionResult:
        return await self._call("session/compact", params, protocol.CommitCompactionResult)

    async def prepare_branch_summary(self, params: protocol.PrepareBranchSummaryParams) -> protocol.PrepareBranchSummaryResult:
        return await self._call("session/prepareBranchSummary", params, protocol.PrepareBranchSummaryResult)

    async def commit_branch_summary(self, params: protocol.CommitBranchSummaryParams) -> protocol.CommitBranchSummaryResult:
        return await self._call("session/commitBranchSummary", params, protocol.CommitBranchSummaryResult)

    async def navigate(self, params: protocol.NavigateParams) -> protocol.CommitBranchSummaryResult:
        return await self._call("session/navigate", params, protocol.CommitBranchSummaryResult)


class SyncSessionTreeClient:
    """The same client for code without an event loop (the CLI)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self.client = SessionTreeClient(*args, **kwargs)

    def _run(self, awaitable: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(awaitable)

    def start(self, initialization_options: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._run(self.client.start(initialization_options))

    def stop(self) -> int:
        try:
            return self._run(self.client.stop())
        finally:
            self._loop.close()

    def __enter__(self) -> SyncSessionTreeClient:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def request(self, method: str, params: Any = None) -> Any:
        return self._run(self.client.request(method, params))

    def create(self, params: protocol.CreateParams) -> protocol.CreateResult:
        return self._run(self.client.create(params))

    def open(self, params: protocol.OpenParams) -> protocol.OpenResult:
        return self._run(self.client.open(params))

    def close(self, params: protocol.SessionParams) -> None:
        self._run(self.client.close(params))

    def info(self, params: protocol.SessionParams) -> protocol.InfoResult:
        return self._run(self.client.info(params))

    def list(self, params: protocol.ListParams) -> protocol.ListResult:
        return self._run(self.client.list(params))

    def import_sessions(self, params: protocol.ImportParams) -> protocol.ImportResult:
        return self._run(self.client.import_sessions(params))

    def append(self, params: protocol.AppendParams) -> protocol.AppendResult:
        return self._run(self.client.append(params))

    def context(self, params: protocol.ContextParams) -> protocol.ContextResult:
        return self._run(self.client.context(params))

    def held_context(self, held: HeldContext) -> protocol.ContextResult:
        return self._run(self.client.held_context(held))

    def append_held(self, params: protocol.AppendParams, held: HeldContext) -> protocol.AppendResult:
        return self._run(self.client.append_held(params, held))

    def tree(self, params: protocol.TreeParams) -> protocol.TreeResult:
        return self._run(self.client.tree(params))

    def tree_view(self, params: protocol.TreeViewParams) -> protocol.TreeViewResult:
        return self._run(self.client.tree_view(params))

    def export(self, params: protocol.ExportParams) -> protocol.ExportResult:
        return self._run(self.client.export(params))

    def stats(self, params: protocol.StatsParams) -> protocol.StatsResult:
        return self._run(self.client.stats(params))

    def search(self, params: protocol.SearchParams) -> protocol.SearchResult:
        return self._run(self.client.search(params))

    def entries(self, params: protocol.EntriesParams) -> protocol.EntriesResult:
        return self._run(self.client.entries(params))

    def branch(self, params: protocol.BranchParams) -> protocol.BranchResult:
        return self._run(self.client.branch(params))

    def fork(self, params: protocol.ForkParams) -> protocol.ForkResult:
        return self._run(self.client.fork(params))

    def label(self, params: protocol.LabelParams) -> protocol.AppendResult:
        return self._run(self.client.label(params))

    def set_name(self, params: protocol.SetNameParams) -> protocol.AppendResult:
        return self._run(self.client.set_name(params))

    def edit_context(self, params: protocol.EditContextParams) -> protocol.AppendResult:
        return self._run(self.client.edit_context(params))

    def subscribe(self, params: protocol.SessionParams) -> protocol.SubscribeResult:
        return self._run(self.client.subscribe(params))

    def unsubscribe(self, params: protocol.SessionParams) -> None:
        return self._run(self.client.unsubscribe(params))

    def trash(self, params: protocol.RetireParams) -> protocol.RetireResult:
        return self._run(self.client.trash(params))

    def archive(self, params: protocol.RetireParams) -> protocol.RetireResult:
        return self._run(self.client.archive(params))

    def restore(self, params: protocol.RetireParams) -> protocol.RestoreResult:
        return self._run(self.client.restore(params))

    def configure(self, params: protocol.ConfigureParams) -> protocol.ConfigureResult:
        return self._run(self.client.configure(params))

    def prepare_compaction(self, params: protocol.PrepareCompactionParams) -> protocol.PrepareCompactionResult | None:
        return self._run(self.client.prepare_compaction(params))

    def commit_compaction(self, params: protocol.CommitCompactionParams) -> protocol.CommitCompactionResult:
        return self._run(self.client.commit_compaction(params))

    def compact(self, params: protocol.CompactParams) -> protocol.CommitCompactionResult:
        return self._run(self.client.compact(params))

    def prepare_branch_summary(self, params: protocol.PrepareBranchSummaryParams) -> protocol.PrepareBranchSummaryResult:
        return self._run(self.client.prepare_branch_summary(params))

    def commit_branch_summary(self, params: protocol.CommitBranchSummaryParams) -> protocol.CommitBranchSummaryResult:
        return self._run(self.client.commit_branch_summary(params))

    def navigate(self, params: protocol.NavigateParams) -> protocol.CommitBranchSummaryResult:
        return self._run(self.client.navigate(params))
