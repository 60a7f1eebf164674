"""The daemon: pygls wiring over `SessionService`, on our own stdio channel.

Who does what, and why:

- `rpc/` reads and writes the frames and checks every envelope, because pygls as shipped
  wedges on imperfect framing and answers invalid messages with silence.
- `SessionTreeProtocol.on_events` routes each valid message. Requests for the `session/*`
  methods are dispatched here, straight to the handler registered with `@server.feature`:
  pygls's generic path would wrap every call in a `Future`, copy a context and turn params
  into namedtuples, which costs a large share of the per-message budget on a 2-core machine.
- pygls is kept where it helps: the feature registry, the typed LSP lifecycle messages
  (`initialize`, `shutdown`, `exit`, `$/setTrace`, ...) structured with lsprotocol, outgoing
  notifications (`window/logMessage`, `$/progress`), requests to the client and their answers.

Everything runs on one event loop, one message at a time, in arrival order; the service is
synchronous and fast, so handlers call it directly.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from . import jsonfmt
from .client_summary import Summarizer
from .config import ServerConfig, parse_init_options, resolve_durability, resolve_index_dir, resolve_sessions_dir
from .errors import InvalidParams, SessionTreeError
from .protocol import FORMAT_VERSION, METHODS, PROTOCOL_VERSION, DidChangeParams, parse_params, to_wire
from .rpc import envelope
from .rpc.allocator import tune_allocator
from .rpc.envelope import Invalid, Notification, Request, Response
from .rpc.framing import Event, Frame, Rejected
from .rpc.record import Recorder
from .rpc.stdio import StdioChannel
from .service import ServiceConfig, SessionService

log = logging.getLogger("sessiontree")

try:
    VERSION: Final = version("sessiontree")
except PackageNotFoundError:  # running from a source tree that is not installed
    VERSION = "0.0.0"

CANCEL_REQUEST: Final = "$/cancelRequest"
# Notifications pygls structures and handles for us; `initialized` and a cancel that found
# nothing queued need nothing done; any other notification is unknown and ignored.
PYGLS_NOTIFICATIONS: Final = frozenset({types.SET_TRACE, types.WINDOW_WORK_DONE_PROGRESS_CANCEL})
NO_OP_NOTIFICATIONS: Final = frozenset({types.INITIALIZED, CANCEL_REQUEST})
PARENT_POLL_SECONDS: Final = 2.0
WATCH_SECONDS: Final = 0.2  # how often subscribed session files are checked for other writers
TERMINATED: Final = 128 + signal.SIGTERM  # the exit code a shell reports for a process SIGTERM ended
POLL_BYTES: Final = 4 * 1024 * 1024  # taken in per session and check: the rest on the next one
DID_CHANGE: Final = "session/didChange"
LOG_TRACE: Final = "$/logTrace"


def capabilities() -> dict[str, Any]:
    """What `initialize` advertises under `capabilities.experimental`."""
    return {
        "sessiontree": {
            "protocolVersion": PROTOCOL_VERSION,
            "formatVersion": FORMAT_VERSION,
            "methods": sorted(METHODS),
        }
    }


def error_of(exc: BaseException, debug: bool) -> tuple[int, str, Any]:
    """(code, message, data) of the JSON-RPC error that reports `exc`."""
    if isinstance(exc, SessionTreeError):
        return exc.code, exc.message, exc.data
    if isinstance(exc, JsonRpcException):
        return exc.code, exc.message, exc.data
    log.error("internal error", exc_info=exc)
    data: dict[str, Any] = {"error": "InternalError", "type": type(exc).__name__}
    if debug:
        data["traceback"] = "".join(traceback.format_exception(exc))
    return envelope.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {str(exc)[:200]}", data


def _structure_error(method: str, exc: Exception) -> InvalidParams:
    """Name the bad field of an LSP message lsprotocol could not structure."""
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if isinstance(cause, cattrs.BaseValidationError):
        problems = cattrs.transform_error(cause, path="message")
    else:
        problems = [str(cause)]
    return InvalidParams(f"invalid params for {method}: {'; '.join(problems)}", problems=problems)


class SessionTreeProtocol(LanguageServerProtocol):
    """Routing, state checks and the lifecycle (see the module docstring)."""

    _server: SessionTreeServer

    def __init__(self, server: SessionTreeServer, converter: cattrs.Converter) -> None:
        # Set before pygls's __init__, which reads every attribute while registering builtins.
        self.settings = ServerConfig()
        self.service: SessionService | None = None
        self.channel: StdioChannel | None = None
        self.exit_code: asyncio.Future[int] | None = None
        self._parent_watch: asyncio.TimerHandle | None = None
        self._file_watch: asyncio.TimerHandle | None = None
        self.pending: dict[Any, asyncio.Task[Any]] = {}  # requests waiting on the client, by id
        super().__init__(server, converter)

    # ----------------------------------------------------------------- routing

    def on_events(self, events: list[Event]) -> None:
        cancels = _cancel_positions(events) if len(events) > 1 else {}
        for position, event in enumerate(events):
            if self.stopped:
                return  # nothing is handled after `exit`
            if type(event) is Frame:
                self._on_message(event.message, cancels.get(position))
            else:
                assert isinstance(event, Rejected)
                self._on_rejected(event)

    def _on_message(self, message: Any, cancelled_later: bool | None) -> None:
        kind = envelope.classify(message)
        if type(kind) is Request:
            if cancelled_later:
                self.send_error(kind.id, envelope.REQUEST_CANCELLED, "request cancelled before it ran")
            else:
                self._on_request(kind, message)
        elif type(kind) is Notification:
            self._on_notification(kind, message)
        elif type(kind) is Response:
            self._handle_pygls(message, None)
        else:
            assert isinstance(kind, Invalid)
            log.warning("invalid message: %s", kind.reason)
            self.send_error(kind.id, envelope.INVALID_REQUEST, f"invalid request: {kind.reason}")

    def _on_request(self, request: Request, message: dict[str, Any]) -> None:
        method = request.method
        if self.service is None and method != types.INITIALIZE:
            self.send_error(
                request.id, envelope.SERVER_NOT_INITIALIZED, "server not initialized: send initialize first"
            )
        elif self._shutdown:
            self.send_error(request.id, envelope.INVALID_REQUEST, "server is shutting down: only exit is accepted")
        elif method in METHODS:
            if self.trace == types.TraceValue.Off:
                self._call(request, self.fm.features[method], request.params)
            else:
                self._call_traced(request, self.fm.features[method], request.params)
        elif method == types.SHUTDOWN:
            self._call(request, self.lsp_shutdown)
        elif method != types.INITIALIZE:
            self.send_error(request.id, envelope.METHOD_NOT_FOUND, f"method not found: {method}")
        elif self.service is not None:
            self.send_error(request.id, envelope.INVALID_REQUEST, "initialize may be sent only once")
        else:
            self._handle_pygls(message, request.id)

    def _on_notification(self, notification: Notification, message: dict[str, Any]) -> None:
        method = notification.method
        if method == types.EXIT:
            self.lsp_exit()
        elif self.service is None or self._shutdown:
            log.info("ignored notification %s: %s", method, "not initialized" if self.service is None else "shut down")
        elif method in PYGLS_NOTIFICATIONS:
            self._handle_pygls(message, None)
        elif method == CANCEL_REQUEST:
            self._cancel_pending(message.get("params"))
        elif method not in NO_OP_NOTIFICATIONS:
            log.info("ignored unknown notification %s", method)

    def _call(self, request: Request, handler: Callable[..., Any], *args: Any) -> None:
        try:
            result = handler(*args)
        except Exception as exc:
            self.send_error(request.id, *error_of(exc, self.settings.debug))
            return
        if inspect.iscoroutine(result):
            self._run_pending(request.id, result)
            return
        self.send_result(request.id, result)

    def _call_traced(self, request: Request, handler: Callable[..., Any], *args: Any) -> None:
        """`_call`, then a `$/logTrace` with the time spent in the daemon (`$/setTrace` not "off")."""
        start = time.perf_counter()
        self._call(request, handler, *args)
        spent = (time.perf_counter() - start) * 1000
        assert self.channel is not None
        message = f"{request.method} {jsonfmt.dumps(request.id).decode()}: answered in {spent:.3f} ms"
        self.channel.send({"jsonrpc": "2.0", "method": LOG_TRACE, "params": {"message": message}})

    # ----------------------------------------------------------------- requests that wait on the client

    def _run_pending(self, msg_id: Any, coroutine: Any) -> None:
        """A handler that awaits the client runs as a task; later requests go on in arrival order."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self.pending[msg_id] = task
        task.add_done_callback(lambda done: self._finish_pending(msg_id, done))

    def _finish_pending(self, msg_id: Any, task: asyncio.Task[Any]) -> None:
        self.pending.pop(msg_id, None)
        if self.stopped:
            return
        if task.cancelled():
            self.send_error(msg_id, envelope.REQUEST_CANCELLED, "request cancelled")
        elif (exc := task.exception()) is not None:
            self.send_error(msg_id, *error_of(exc, self.settings.debug))
        else:
            self.send_result(msg_id, task.result())

    def _cancel_pending(self, params: Any) -> None:
        task = self.pending.get(params.get("id")) if type(params) is dict else None
        if task is not None:
            task.cancel()

    def _handle_pygls(self, message: dict[str, Any], msg_id: Any) -> None:
        """Hand a typed LSP message to pygls; a message lsprotocol rejects is -32602."""
        try:
            structured = self.structure_message(message)
        except Exception as exc:
            if msg_id is not None:
                self.send_error(msg_id, *error_of(_structure_error(message["method"], exc), False))
            else:
                log.warning("ignored malformed %s: %s", message.get("method", "response"), exc)
            return
        self.handle_message(structured)

    def _on_rejected(self, event: Rejected) -> None:
        log.warning("rejected frame: %s", event.reason)
        message = event.message
        if type(message) is dict and "method" in message and envelope.valid_id(message.get("id")):
            self.send_error(message["id"], event.code, event.reason)
        elif event.answer_anyway:
            self.send_error(None, event.code, event.reason)

    # ----------------------------------------------------------------- output

    def send_result(self, msg_id: Any, result: Any) -> None:
        assert self.channel is not None
        try:
            self.channel.send({"jsonrpc": "2.0", "id": msg_id, "result": result})
        except TypeError as exc:  # not JSON-serialisable: still answer, once
            self.send_error(msg_id, *error_of(exc, self.settings.debug))

    def send_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        assert self.channel is not None
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.channel.send({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _send_data(self, data: Any) -> None:
        """pygls's outgoing path (notifications, requests to the client): orjson on our channel."""
        if self.channel is None:
            log.error("no channel to send %r", data)
            return
        self.channel.send(self._converter.unstructure(data) if attrs.has(type(data)) else data)

    def _send_response(self, msg_id: Any, result: Any = None, error: types.ResponseError | None = None) -> None:
        if error is not None:
            self.send_error(msg_id, error.code, error.message, error.data)
        else:
            self.send_result(msg_id, self._converter.unstructure(result) if attrs.has(type(result)) else result)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        """pygls calls this when a lifecycle handler finishes: map failures like ours."""
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self.send_error(msg_id, envelope.REQUEST_CANCELLED, "request cancelled")
        elif (exc := future.exception()) is not None:
            self.send_error(msg_id, *error_of(exc, self.settings.debug))
        else:
            self._send_response(msg_id, future.result())

    # ----------------------------------------------------------------- lifecycle

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> types.InitializeResult:
        options = parse_init_options(params.initialization_options)
        root = resolve_sessions_dir(self.settings.sessions_dir, os.environ, options)
        durability = resolve_durability(self.settings.durability, options)
        config = ServiceConfig(
            sessions_dir=root, durability=durability, index_dir=resolve_index_dir(os.environ, options)
        )
        self.service = SessionService(config, self._did_change)
        self._watch_files()
        log.info("serving sessions under %s (durability %s)", root, durability)
        self.client_capabilities = params.capabilities
        self._server.process_id = params.process_id
        if params.process_id is not None:
            self._watch_parent(params.process_id)
        return types.InitializeResult(
            capabilities=types.ServerCapabilities(experimental=capabilities()),
            server_info=self.server_info,
        )

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> None:
        for task in list(self.pending.values()):
            task.cancel()
        self.close_sessions()
        self._shutdown = True

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:
        self.stop(0 if self._shutdown else 1)

    def on_eof(self) -> None:
        if not self.stopped:
            log.info("stdin closed%s", "" if self._shutdown else " without shutdown")
        self.stop(0 if self._shutdown else 1)

    def on_output_lost(self) -> None:
        self.stop(1)

    @property
    def stopped(self) -> bool:
        return self.exit_code is not None and self.exit_code.done()

    def stop(self, code: int) -> None:
        if self.exit_code is not None and not self.exit_code.done():
            self.exit_code.set_result(code)

    def close_sessions(self) -> None:
        if self.service is not None:
            self.service.close_all()

    def _did_change(self, change: DidChangeParams) -> None:
        """Tell the client about entries another process appended (see the service's listener)."""
        self.notify(DID_CHANGE, to_wire(change))

    def _watch_files(self) -> None:
        """Check subscribed session files for other writers, so a tree view stays live unasked."""

        def tick() -> None:
            # A client that stops reading gets nothing unasked: what others append stays in the
            # file (read from the cursor later), not in our output queue.
            paused = self.channel is not None and self.channel.output_paused
            if self.service is not None and not self._shutdown and not paused:
                self.service.poll(POLL_BYTES)
            self._file_watch = loop.call_later(WATCH_SECONDS, tick)

        loop = asyncio.get_running_loop()
        self._file_watch = loop.call_later(WATCH_SECONDS, tick)

    def _watch_parent(self, pid: int) -> None:
        """Exit when the editor that started us is gone (it may die without closing our stdin)."""

        def check() -> None:
            if _process_exists(pid):
                self._parent_watch = loop.call_later(PARENT_POLL_SECONDS, check)
            else:
                log.error("parent process %d is gone; exiting", pid)
                self.stop(1)

        loop = asyncio.get_running_loop()
        self._parent_watch = loop.call_later(PARENT_POLL_SECONDS, check)

    async def run(self, read_fd: int, write_fd: int) -> int:
        """Serve until `exit`, EOF, a lost output pipe or the parent's death; return the exit code."""
        loop = asyncio.get_running_loop()
        self.exit_code = loop.create_future()
        recorder = Recorder(self.settings.record) if self.settings.record is not None else None
        self.channel = StdioChannel(self, self.settings.max_message_bytes, recorder)
        await self.channel.open(read_fd, write_fd)
        # SIGTERM stops like a lost client: after the request being handled (a fork finishes and
        # leaves no temporary file), sessions closed and their indexes saved.
        loop.add_signal_handler(signal.SIGTERM, self.stop, TERMINATED)
        code = await self.exit_code
        loop.remove_signal_handler(signal.SIGTERM)
        for watch in (self._parent_watch, self._file_watch):
            if watch is not None:
                watch.cancel()
        await self.channel.close()
        self.close_sessions()
        return code


def _cancel_positions(events: list[Event]) -> dict[int, bool]:
    """Positions of requests that a later `$/cancelRequest` in the same read cancels."""
    first_seen: dict[Any, int] = {}
    cancelled: dict[int, bool] = {}
    for position, event in enumerate(events):
        if type(event) is not Frame or type(event.message) is not dict:
            continue
        message = event.message
        if message.get("method") == CANCEL_REQUEST and "id" not in message:
            params = message.get("params")
            target = params.get("id") if type(params) is dict else None
            if envelope.valid_id(target) and target in first_seen:
                cancelled[first_seen.pop(target)] = True
        elif "method" in message and envelope.valid_id(message.get("id")):
            first_seen.setdefault(message["id"], position)
    return cancelled


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True


class SessionTreeServer(LanguageServer):
    protocol: SessionTreeProtocol

    @property
    def service(self) -> SessionService:
        service = self.protocol.service
        assert service is not None, "requests before initialize are refused by the protocol"
        return service


def plain_converter() -> cattrs.Converter:
    """pygls's converter, except that untyped params and results stay plain dicts.

    As shipped it turns them into namedtuples, renaming keys like `class` and dropping `type_name`.
    """
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return converter


server: Final = SessionTreeServer(
    "sessiontree", VERSION, protocol_cls=SessionTreeProtocol, converter_factory=plain_converter
)


# --------------------------------------------------------------------------- handlers


def _service_call(method: str) -> Callable[[SessionTreeServer, Any], Any]:
    """The adapter for a method that needs nothing but its params: parse, call, unstructure."""
    name = method.removeprefix("session/")
    attr = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)

    def handle(ls: SessionTreeServer, params: Any) -> Any:
        return to_wire(getattr(ls.service, attr)(parse_params(method, params)))

    handle.__name__ = f"session_{attr}"
    return handle


@server.feature("session/open")
def session_open(ls: SessionTreeServer, params: Any) -> Any:
    result = ls.service.open(parse_params("session/open", params))
    for warning in result.warnings:
        message = f"{result.path}: {warning.message}"
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=message))
    return to_wire(result)


@server.feature("session/list")
def session_list(ls: SessionTreeServer, params: Any) -> Any:
    token, params = _take_progress_token(params)
    args = parse_params("session/list", params)
    if token is None:
        return to_wire(ls.service.list(args))
    progress = ls.work_done_progress
    progress.begin(token, types.WorkDoneProgressBegin(title="Listing sessions", percentage=0))
    try:
        return to_wire(ls.service.list(args, _percent_reporter(ls, token)))
    finally:
        progress.end(token, types.WorkDoneProgressEnd())
        progress.tokens.pop(token, None)


def _take_progress_token(params: Any) -> tuple[int | str | None, Any]:
    """Split off LSP's `workDoneToken`, a transport matter the service never sees."""
    if type(params) is not dict or params.get("workDoneToken") is None:
        return None, params
    token = params["workDoneToken"]
    if not envelope.valid_id(token):
        raise InvalidParams(
            f"invalid params for session/list: expected an integer or a string @ params.workDoneToken, got {token!r}",
            field="workDoneToken",
        )
    return token, {k: v for k, v in params.items() if k != "workDoneToken"}


def _percent_reporter(ls: SessionTreeServer, token: int | str) -> Callable[[int, int], None]:
    """A progress callback that reports only when the percentage changes (at most 100 times)."""
    last = -1

    def report(done: int, total: int) -> None:
        nonlocal last
        percent = 100 if total <= 0 else min(100, done * 100 // total)
        if percent != last:
            last = percent
            value = types.WorkDoneProgressReport(message=f"{done}/{total}", percentage=percent)
            ls.work_done_progress.report(token, value)

    return report


@server.feature("session/compact")
async def session_compact(ls: SessionTreeServer, params: Any) -> Any:
    return to_wire(await Summarizer(ls, ls.service).compact(parse_params("session/compact", params)))


@server.feature("session/navigate")
async def session_navigate(ls: SessionTreeServer, params: Any) -> Any:
    return to_wire(await Summarizer(ls, ls.service).navigate(parse_params("session/navigate", params)))


_OWN_HANDLERS: Final = {"session/open", "session/list", "session/compact", "session/navigate"}
for _method in sorted(METHODS.keys() - _OWN_HANDLERS):
    server.feature(_method)(_service_call(_method))


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


def serve(config: ServerConfig) -> int:
    """Run the daemon on stdin/stdout; returns the process exit code."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if config.debug else logging.INFO,
        format="sessiontree %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls").setLevel(logging.DEBUG if config.debug else logging.WARNING)
    wire = claim_stdout()
    tune_allocator()
    server.protocol.settings = config
    try:
        return asyncio.run(server.protocol.run(sys.stdin.fileno(), wire))
    except KeyboardInterrupt:
        return 130
