"""One end of a JSON-RPC 2.0 connection: the daemon's and the Python client's.

What the project owns, and why. Everything on the wire is ours: framing (`framing.py`),
envelope checks (`envelope.py`), the stdio channel (`stdio.py`), recording (`record.py`), this
endpoint, and LSP's lifecycle over it (`lsp.py`). pygls, the usual Python base for a language
server, was the daemon's base until it cost more than it gave: as shipped it wedges on imperfect
framing, answers invalid messages with silence and turns params into namedtuples; closing those
gaps meant overriding its private methods, so any pygls release could break the daemon; and
importing `lsprotocol.types` alone took 0.3 to 1.2 s of every start (BENCHMARKS.md, Start-up).
A daemon that serves its own methods needs none of LSP's types, so the package imports neither
pygls nor lsprotocol. The tests keep pytest-lsp, built on pygls, as an independent client: a
real peer that checks this endpoint against someone else's reading of the protocol.

How a connection works here:

- `on_events` takes the decoded frames of one read, in order. A request that a
  `$/cancelRequest` later in the same read cancels is answered -32800 without running.
- A request is looked up in `handlers` (method -> function of the raw params). A plain function
  runs at once and is answered before the next message is looked at, so answers come in the
  order requests arrived; a coroutine function runs as a task, so later messages go on while it
  waits (on the peer, say), and a `$/cancelRequest` for it cancels the task.
- Every request gets exactly one answer: its result, or the error its exception carries
  (`SessionTreeError` and `ResponseError` carry code, message and data; anything else is -32603).
- `request` sends a request of our own and returns its id and a future, resolved by the answer
  (an error answer fails it); `call` awaits it, and a timeout or a cancelled caller withdraws it:
  the future is dropped and the peer is sent `$/cancelRequest`.
- Notifications go to `notification_handlers`; unknown ones are ignored, as JSON-RPC asks.
- Requests of one method that arrive one after another in the same read may be answered together
  when the method has a `batch_handlers` entry: it takes their params in order and returns, per
  request, its result or the exception that fails it. Each is still answered on its own, in
  order, before the next message of the read is looked at; or, when it returns a coroutine (a
  call that may wait on a server), each in order once it is done, while later messages go on (a
  `$/cancelRequest` does not split such a batch: each request gets its own outcome).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Any, Final

from ..errors import SessionTreeError
from . import envelope
from .codes import ErrorCode
from .envelope import Invalid, MessageId, Notification, Request, Response
from .framing import Event, Frame, Rejected

log = logging.getLogger("sessiontree.rpc")

CANCEL_REQUEST: Final = "$/cancelRequest"
JSONRPC: Final = "2.0"

Handler = Callable[[Any], Any]  # the raw params -> a JSON-ready result, or a coroutine of one
# The raw params of several requests -> per request, a JSON-ready result or the exception that fails
# it (or a coroutine of that list).
BatchHandler = Callable[[list[Any]], Any]
NotificationHandler = Callable[[Any], None]
Send = Callable[[Any], None]


class ResponseError(Exception):
    """An error answer: raised by a handler to answer with exactly this error, and what a
    request of ours fails with when the peer answers with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def _not_connected(message: Any) -> None:
    raise ConnectionError("the endpoint has no connection yet")


class Endpoint:
    def __init__(self, send: Send = _not_connected, *, ids: Iterator[MessageId] | None = None, debug: bool = False) -> None:
        """`send` frames and queues one message; `ids` numbers our requests (1, 2, ... by
        default); `debug` puts tracebacks in the `data` of internal errors."""
        self.send = send
        self.debug = debug
        self.handlers: dict[str, Handler] = {}
        self.batch_handlers: dict[str, BatchHandler] = {}  # methods whose requests in a row may be answered together
        self.notification_handlers: dict[str, NotificationHandler] = {}
        self.running: dict[MessageId, asyncio.Task[Any]] = {}  # the peer's requests answered by a task
        self.waiting: dict[MessageId, asyncio.Future[Any]] = {}  # our requests, until answered
        self._ids = ids if ids is not None else itertools.count(1)

    @property
    def stopped(self) -> bool:
        """Nothing more is handled once True (see lsp.py: after `exit`)."""
        return False

    # ----------------------------------------------------------------- incoming

    def on_events(self, events: list[Event]) -> None:
        cancelled = _cancelled_in_same_read(events) if len(events) > 1 else ()
        run: list[Request] = []  # requests in a row for one batch handler, not answered yet
        for position, event in enumerate(events):
            if self.stopped:
                return
            if type(event) is Frame:
                kind = envelope.classify(event.message)
                if type(kind) is Request and len(events) > 1 and position not in cancelled and self.batchable(kind):
                    if run and run[0].method != kind.method:
                        self._answer_run(run)
                        run = []
                    run.append(kind)
                    continue
                if run:
                    self._answer_run(run)
                    run = []
                self.on_classified(kind, position in cancelled)
            else:
                assert isinstance(event, Rejected)
                if run:
                    self._answer_run(run)
                    run = []
                self.on_rejected(event)
        if run:
            self._answer_run(run)

    def batchable(self, request: Request) -> bool:
        """Whether this request may be answered in a batch with the same method's next ones."""
        return request.method in self.batch_handlers

    def _answer_run(self, run: list[Request]) -> None:
        if len(run) == 1:
            self.on_request(run[0])
        else:
            self.answer_batch(run, self.batch_handlers[run[0].method])

    def answer_batch(self, requests: list[Request], handler: BatchHandler) -> None:
        """Run `handler` on the requests' params and answer each, in order."""
        try:
            outcomes = handler([request.params for request in requests])
        except Exception as exc:
            outcomes = [exc] * len(requests)
        if asyncio.iscoroutine(outcomes):
            task = asyncio.get_running_loop().create_task(outcomes)
            task.add_done_callback(lambda done: self._answer_batch_from(requests, done))
            return
        self._send_outcomes(requests, outcomes)

    def _answer_batch_from(self, requests: list[Request], task: asyncio.Task[Any]) -> None:
        if task.cancelled():  # the daemon closed under it
            return
        exc = task.exception()
        if self.stopped:
            return
        try:
            self._send_outcomes(requests, [exc] * len(requests) if exc is not None else task.result())
        except ConnectionError:
            log.info("no answers sent to %d requests: the connection is closed", len(requests))

    def _send_outcomes(self, requests: list[Request], outcomes: list[Any]) -> None:
        for request, outcome in zip(requests, outcomes, strict=True):
            if isinstance(outcome, Exception):
                self.send_error(request.id, *self.error_of(outcome))
            else:
                self.send_result(request.id, outcome)

    def on_message(self, message: Any, cancelled: bool = False) -> None:
        self.on_classified(envelope.classify(message), cancelled)

    def on_classified(self, kind: envelope.Envelope, cancelled: bool = False) -> None:
        if type(kind) is Request:
            if cancelled:
                self.send_error(kind.id, ErrorCode.REQUEST_CANCELLED, "request cancelled before it ran")
            else:
                self.on_request(kind)
        elif type(kind) is Notification:
            self.on_notification(kind)
        elif type(kind) is Response:
            self.on_response(kind.message)
        else:
            assert isinstance(kind, Invalid)
            log.warning("invalid message: %s", kind.reason)
            self.send_error(kind.id, ErrorCode.INVALID_REQUEST, f"invalid request: {kind.reason}")

    def on_request(self, request: Request) -> None:
        handler = self.handlers.get(request.method)
        if handler is None:
            self.send_error(request.id, ErrorCode.METHOD_NOT_FOUND, f"method not found: {request.method}")
        else:
            self.answer(request, handler)

    def answer(self, request: Request, handler: Handler) -> None:
        """Run `handler` on the request's params and answer it (from a task, if it awaits)."""
        try:
            result = handler(request.params)
        except Exception as exc:
            self.send_error(request.id, *self.error_of(exc))
            return
        if asyncio.iscoroutine(result):
            task = asyncio.get_running_loop().create_task(result)
            self.running[request.id] = task
            task.add_done_callback(lambda done: self._answer_from(request.id, done))
        else:
            self.send_result(request.id, result)

    def _answer_from(self, msg_id: MessageId, task: asyncio.Task[Any]) -> None:
        self.running.pop(msg_id, None)
        if self.stopped:  # after `exit`: nothing more is sent
            if not task.cancelled():
                task.exception()  # retrieved, so that asyncio does not report it as lost
            return
        try:
            if task.cancelled():
                self.send_error(msg_id, ErrorCode.REQUEST_CANCELLED, "request cancelled")
            elif (exc := task.exception()) is not None:
                self.send_error(msg_id, *self.error_of(exc))
            else:
                self.send_result(msg_id, task.result())
        except ConnectionError:  # the peer is gone: no one is left to answer
            log.info("no answer sent to request %r: the connection is closed", msg_id)

    def on_notification(self, notification: Notification) -> None:
        if notification.method == CANCEL_REQUEST:
            self.on_cancel(notification.params)
            return
        handler = self.notification_handlers.get(notification.method)
        if handler is not None:
            handler(notification.params)
        else:
            log.info("ignored unknown notification %s", notification.method)

    def on_cancel(self, params: Any) -> None:
        """`$/cancelRequest`: cancel the task answering that request; otherwise nothing to do."""
        msg_id = params.get("id") if type(params) is dict else None
        task = self.running.get(msg_id) if envelope.valid_id(msg_id) else None
        if task is not None:
            task.cancel()

    def on_response(self, message: dict[str, Any]) -> None:
        future = self.waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
        if future is None or future.done():
            log.warning("ignored an answer to no request of ours: id %r", message.get("id"))
        elif "error" in message:
            future.set_exception(self.remote_error(message["error"]))
        else:
            future.set_result(message.get("result"))

    def remote_error(self, error: Any) -> Exception:
        """The exception a request of ours fails with when the peer answers `error`."""
        if type(error) is dict and type(error.get("code")) is int and type(error.get("message")) is str:
            return ResponseError(error["code"], error["message"], error.get("data"))
        return ResponseError(ErrorCode.INTERNAL_ERROR, f"malformed error answer: {error!r}"[:300])

    def on_rejected(self, event: Rejected) -> None:
        """A frame that could not be read: answered when its sender may be waiting (framing.py)."""
        log.warning("rejected frame: %s", event.reason)
        message = event.message
        if type(message) is dict and "method" in message and envelope.valid_id(message.get("id")):
            self.send_error(message["id"], event.code, event.reason)
        elif event.answer_anyway:
            self.send_error(None, event.code, event.reason)

    # ----------------------------------------------------------------- outgoing

    def send_result(self, msg_id: MessageId, result: Any) -> None:
        try:
            self.send({"jsonrpc": JSONRPC, "id": msg_id, "result": result})
        except TypeError as exc:  # not JSON-serialisable: still answer, once
            self.send_error(msg_id, *self.error_of(exc))

    def send_error(self, msg_id: MessageId | None, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": JSONRPC, "id": msg_id, "error": error})

    # Requests and notifications we originate keep the key order of the daemon's recorded
    # transcripts and protocol.md's examples (LSP's generated types write the payload first).

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {} if params is None else {"params": params}
        message["method"] = method
        message["jsonrpc"] = JSONRPC
        self.send(message)

    def request(self, method: str, params: Any = None) -> tuple[MessageId, asyncio.Future[Any]]:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        message: dict[str, Any] = {"id": msg_id, "method": method, "jsonrpc": JSONRPC}
        if params is not None:
            message["params"] = params
        self.waiting[msg_id] = future
        try:
            self.send(message)
        except BaseException:
            del self.waiting[msg_id]
            raise
        return msg_id, future

    async def call(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """Send a request and wait for its result; a timeout (TimeoutError) or a cancelled caller
        withdraws the request."""
        msg_id, future = self.request(method, params)
        try:
            return await asyncio.wait_for(future, timeout)
        except (TimeoutError, asyncio.CancelledError):
            self.withdraw(msg_id)
            raise

    def withdraw(self, msg_id: MessageId) -> None:
        """Stop waiting for a request of ours and tell the peer it may stop working on it."""
        self.waiting.pop(msg_id, None)
        if not self.stopped:
            self.notify(CANCEL_REQUEST, {"id": msg_id})

    def fail_waiting(self, exc: Exception) -> None:
        """The connection is gone: every request of ours fails with `exc`."""
        waiting, self.waiting = self.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(exc)

    # ----------------------------------------------------------------- errors

    def error_of(self, exc: BaseException) -> tuple[int, str, Any]:
        """(code, message, data) of the error answer that reports `exc`."""
        if isinstance(exc, SessionTreeError | ResponseError):
            return exc.code, exc.message, exc.data
        log.error("internal error", exc_info=exc)
        data: dict[str, Any] = {"error": "InternalError", "type": type(exc).__name__}
        if self.debug:
            data["traceback"] = "".join(traceback.format_exception(exc))
        return ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {str(exc)[:200]}", data


def _cancelled_in_same_read(events: list[Event]) -> set[int]:
    """Positions of requests that a later `$/cancelRequest` in the same read cancels."""
    first_seen: dict[Any, int] = {}
    cancelled: set[int] = set()
    for position, event in enumerate(events):
        if type(event) is not Frame or type(event.message) is not dict:
            continue
        message = event.message
        if message.get("method") == CANCEL_REQUEST and "id" not in message:
            params = message.get("params")
            target = params.get("id") if type(params) is dict else None
            if envelope.valid_id(target) and target in first_seen:
                cancelled.add(first_seen.pop(target))
        elif "method" in message and envelope.valid_id(message.get("id")):
            first_seen.setdefault(message["id"], position)
    return cancelled
