"""The server side of LSP's base protocol over an `Endpoint`, on stdio.

- The lifecycle: before a successful `initialize` every request is answered -32002 and every
  notification but `exit` dropped; `initialize` is answered once (-32600 after that); after
  `shutdown` every request is -32600; `exit` ends the process with 0 after `shutdown`, else 1.
  So do the end of standard input (0 after `shutdown`, else 1), a closed standard output (1),
  SIGTERM (143) and the death of the `processId` given in `initialize` (1).
- `$/setTrace`: while not "off", every answer to a request of `handlers` is followed by a
  `$/logTrace` with the time spent on it, from reading the request to queueing the answer.
- `window/logMessage` and `$/progress` (work-done progress on a token the client gave).

Subclasses say what `initialize` does (`on_initialize`, which returns the server's
capabilities), fill `handlers` (with `initialize`'s checks behind them) and release what they
hold in `on_shutdown` and `on_close`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import attrs

from .. import jsonfmt
from ..errors import InvalidParams
from .codes import ErrorCode
from .endpoint import Endpoint, Handler
from .envelope import MessageId, Notification, Request
from .record import Recorder
from .stdio import StdioChannel

log = logging.getLogger("sessiontree")

INITIALIZE: Final = "initialize"
INITIALIZED: Final = "initialized"
SHUTDOWN: Final = "shutdown"
EXIT: Final = "exit"
SET_TRACE: Final = "$/setTrace"
LOG_TRACE: Final = "$/logTrace"
LOG_MESSAGE: Final = "window/logMessage"
PROGRESS: Final = "$/progress"
PROGRESS_CANCEL: Final = "window/workDoneProgress/cancel"
TRACE_VALUES: Final = ("off", "messages", "verbose")
PARENT_POLL_SECONDS: Final = 2.0
TERMINATED: Final = 128 + signal.SIGTERM  # the exit code a shell reports for a process SIGTERM ended


class MessageType(enum.IntEnum):
    """LSP's `MessageType` of `window/logMessage`."""

    ERROR = 1
    WARNING = 2
    INFO = 3
    LOG = 4


@attrs.frozen
class InitializeParams:
    """What the server reads of LSP's `InitializeParams`; other fields are neither read nor checked."""

    process_id: int | None
    capabilities: dict[str, Any]  # the client's, as sent
    initialization_options: Any


def parse_initialize(params: Any) -> InitializeParams:
    """Check the fields the server reads, as LSP types them, or raise InvalidParams naming one."""
    if type(params) is not dict:
        raise InvalidParams("params of initialize must be an object", field="$")
    process_id = params.get("processId")
    if process_id is not None and type(process_id) is not int:
        raise _bad_field("processId", "an integer or null", process_id)
    capabilities = params.get("capabilities")
    if type(capabilities) is not dict:
        raise _bad_field("capabilities", "an object", capabilities, "capabilities" in params)
    trace = params.get("trace")
    if trace is not None and trace not in TRACE_VALUES:  # read by LSP servers; tracing starts with $/setTrace
        raise _bad_field("trace", '"off", "messages" or "verbose"', trace)
    return InitializeParams(process_id, capabilities, params.get("initializationOptions"))


def _bad_field(field: str, expected: str, value: Any, present: bool = True) -> InvalidParams:
    got = repr(value) if present else "nothing"
    return InvalidParams(f"invalid params for initialize: {field}: expected {expected}, got {got}", field=field)


class Progress:
    """`$/progress` on one work-done token: `begin`, `report`s, `end` (LSP's WorkDoneProgress)."""

    def __init__(self, endpoint: Endpoint, token: int | str) -> None:
        self._endpoint = endpoint
        self.token = token

    def begin(self, title: str, *, cancellable: bool | None = None, percentage: int | None = None) -> None:
        self._send({"title": title, "kind": "begin", "cancellable": cancellable, "percentage": percentage})

    def report(self, *, message: str | None = None, percentage: int | None = None) -> None:
        self._send({"kind": "report", "message": message, "percentage": percentage})

    def end(self) -> None:
        self._send({"kind": "end"})

    def _send(self, value: dict[str, Any]) -> None:
        value = {key: item for key, item in value.items() if item is not None}
        self._endpoint.notify(PROGRESS, {"token": self.token, "value": value})


class LspServer(Endpoint):
    def __init__(self, name: str, version: str, *, ids: Iterator[MessageId] | None = None, debug: bool = False) -> None:
        super().__init__(ids=ids, debug=debug)
        self.server_info = {"name": name, "version": version}
        self.initialized = False  # a successful `initialize` was answered
        self.shut_down = False
        self.trace = "off"
        self.channel: StdioChannel | None = None
        self.exit_code: asyncio.Future[int] | None = None
        self._parent_watch: asyncio.TimerHandle | None = None
        self.notification_handlers[INITIALIZED] = _nothing
        self.notification_handlers[SET_TRACE] = self._set_trace
        self.notification_handlers[PROGRESS_CANCEL] = _nothing  # no progress of ours is server-initiated

    # ----------------------------------------------------------------- what subclasses say

    def on_initialize(self, params: InitializeParams) -> dict[str, Any]:
        """Set up for serving; returns `capabilities.experimental`. An exception refuses `initialize`."""
        return {}

    def on_shutdown(self) -> None:
        """`shutdown`: release what the server holds; only `exit` follows."""

    def on_close(self) -> None:
        """The last thing before the process exits, however it ends."""

    # ----------------------------------------------------------------- the lifecycle

    @property
    def stopped(self) -> bool:
        return self.exit_code is not None and self.exit_code.done()

    def stop(self, code: int) -> None:
        if self.exit_code is not None and not self.exit_code.done():
            self.exit_code.set_result(code)

    def on_request(self, request: Request) -> None:
        method = request.method
        if not self.initialized and method != INITIALIZE:
            self.send_error(request.id, ErrorCode.SERVER_NOT_INITIALIZED, "server not initialized: send initialize first")
        elif self.shut_down:
            self.send_error(request.id, ErrorCode.INVALID_REQUEST, "server is shutting down: only exit is accepted")
        elif method in self.handlers:
            self.answer(request, self.handlers[method])
        elif method == SHUTDOWN:
            self._shutdown()
            self.send_result(request.id, None)
        elif method != INITIALIZE:
            self.send_error(request.id, ErrorCode.METHOD_NOT_FOUND, f"method not found: {method}")
        elif self.initialized:
            self.send_error(request.id, ErrorCode.INVALID_REQUEST, "initialize may be sent only once")
        else:
            self._initialize(request)

    def batchable(self, request: Request) -> bool:
        """Not while tracing: each answer is then timed and followed by its own `$/logTrace`."""
        return self.initialized and not self.shut_down and self.trace == "off" and super().batchable(request)

    def on_notification(self, notification: Notification) -> None:
        if notification.method == EXIT:
            self.stop(0 if self.shut_down else 1)
        elif not self.initialized or self.shut_down:
            state = "not initialized" if not self.initialized else "shut down"
            log.info("ignored notification %s: %s", notification.method, state)
        else:
            super().on_notification(notification)

    def _initialize(self, request: Request) -> None:
        try:
            params = parse_initialize(request.params)
            experimental = self.on_initialize(params)
        except Exception as exc:
            self.send_error(request.id, *self.error_of(exc))
            return
        self.initialized = True
        if params.process_id is not None:
            self._watch_parent(params.process_id)
        self.send_result(request.id, {"capabilities": {"experimental": experimental}, "serverInfo": self.server_info})

    def _shutdown(self) -> None:
        for task in list(self.running.values()):
            task.cancel()
        self.on_shutdown()
        self.shut_down = True

    def on_eof(self) -> None:
        if not self.stopped:
            log.info("stdin closed%s", "" if self.shut_down else " without shutdown")
        self.stop(0 if self.shut_down else 1)

    def on_output_lost(self) -> None:
        self.stop(1)

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

    # ----------------------------------------------------------------- tracing, logging, progress

    def _set_trace(self, params: Any) -> None:
        value = params.get("value") if type(params) is dict else None
        if value in TRACE_VALUES:
            self.trace = value
        else:
            log.warning("ignored malformed %s: %r", SET_TRACE, params)

    def answer(self, request: Request, handler: Handler) -> None:
        if self.trace == "off":
            super().answer(request, handler)
            return
        start = time.perf_counter()
        super().answer(request, handler)
        task = self.running.get(request.id)
        if task is None:
            self._log_trace(request, start)
        else:  # after the answer, which the endpoint's own callback (added first) sends
            task.add_done_callback(lambda _: self._log_trace(request, start))

    def _log_trace(self, request: Request, start: float) -> None:
        if self.stopped:
            return
        spent = (time.perf_counter() - start) * 1000
        message = f"{request.method} {jsonfmt.dumps(request.id).decode()}: answered in {spent:.3f} ms"
        self.notify(LOG_TRACE, {"message": message})

    def log_message(self, kind: MessageType, message: str) -> None:
        self.notify(LOG_MESSAGE, {"type": kind, "message": message})

    def progress(self, token: int | str) -> Progress:
        return Progress(self, token)

    # ----------------------------------------------------------------- running

    async def serve(self, read_fd: int, write_fd: int, max_message_bytes: int, record: Path | None) -> int:
        """Serve until `exit`, EOF, a lost output pipe, SIGTERM or the parent's death; returns the exit code."""
        loop = asyncio.get_running_loop()
        self.exit_code = loop.create_future()
        recorder = Recorder(record) if record is not None else None
        self.channel = channel = StdioChannel(self, max_message_bytes, recorder)
        self.send = channel.send
        await channel.open(read_fd, write_fd)
        # SIGTERM stops like a lost client: after the message being handled, with on_close run.
        loop.add_signal_handler(signal.SIGTERM, self.stop, TERMINATED)
        code = await self.exit_code
        loop.remove_signal_handler(signal.SIGTERM)
        if self._parent_watch is not None:
            self._parent_watch.cancel()
        await channel.close()
        self.on_close()
        return code


def _nothing(params: Any) -> None:
    pass


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True
