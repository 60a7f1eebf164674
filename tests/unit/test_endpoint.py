"""The wire layer in process: the endpoint's dispatch, answers, requests to the peer and
cancellation; the LSP lifecycle's checks of `initialize`; the daemon's handler table; and what
the daemon and the CLI import."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from sessiontree.errors import InvalidParams, SessionNotFound
from sessiontree.protocol import METHODS
from sessiontree.rpc.codes import ErrorCode
from sessiontree.rpc.endpoint import CANCEL_REQUEST, Endpoint, ResponseError
from sessiontree.rpc.framing import Frame, Rejected
from sessiontree.rpc.lsp import parse_initialize
from support.timeouts import eventually


class Wire:
    """An endpoint whose sent messages are kept in order."""

    def __init__(self, **kwargs: Any) -> None:
        self.sent: list[dict[str, Any]] = []
        self.endpoint = Endpoint(self.sent.append, **kwargs)

    def receive(self, *messages: Any) -> None:
        self.endpoint.on_events([Frame(message) for message in messages])

    def errors(self) -> list[tuple[Any, int]]:
        return [(m["id"], m["error"]["code"]) for m in self.sent if "error" in m]


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


def test_requests_are_answered_in_order_with_results_and_the_errors_their_exceptions_carry() -> None:
    wire = Wire()

    def fail(params: Any) -> Any:
        raise SessionNotFound("no such session", sessionId=params["id"])

    def refuse(params: Any) -> Any:
        raise ResponseError(-32099, "refused", {"why": "test"})

    wire.endpoint.handlers.update({"echo": lambda params: params, "fail": fail, "refuse": refuse})
    wire.receive(request(1, "echo", {"a": 1}), request(2, "fail", {"id": "s"}), request(3, "refuse"), request(4, "nope"))
    assert wire.sent == [
        {"jsonrpc": "2.0", "id": 1, "result": {"a": 1}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32010, "message": "no such session", "data": {"error": "SessionNotFound", "sessionId": "s"}}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32099, "message": "refused", "data": {"why": "test"}}},
        {"jsonrpc": "2.0", "id": 4, "error": {"code": ErrorCode.METHOD_NOT_FOUND, "message": "method not found: nope"}},
    ]


@pytest.mark.parametrize("debug", [False, True])
def test_a_bug_is_an_internal_error_with_a_traceback_only_when_debugging(debug: bool) -> None:
    wire = Wire(debug=debug)
    wire.endpoint.handlers["boom"] = lambda params: 1 / 0
    wire.receive(request(1, "boom"))
    error = wire.sent[0]["error"]
    assert error["code"] == ErrorCode.INTERNAL_ERROR
    assert error["message"] == "internal error: ZeroDivisionError: division by zero"
    assert error["data"]["type"] == "ZeroDivisionError"
    assert ("traceback" in error["data"]) is debug


def test_an_unserialisable_result_is_still_answered_once() -> None:
    sent: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> None:
        if "result" in message and isinstance(message["result"], set):
            raise TypeError("set is not JSON")
        sent.append(message)

    endpoint = Endpoint(send)
    endpoint.handlers["set"] = lambda params: {1}
    endpoint.on_events([Frame(request(1, "set"))])
    assert [(m["id"], m["error"]["code"]) for m in sent] == [(1, ErrorCode.INTERNAL_ERROR)]


def test_invalid_messages_and_rejected_frames_are_answered() -> None:
    wire = Wire()
    wire.receive([request(1, "x")], {"jsonrpc": "1.0", "id": 2, "method": "x"})
    wire.endpoint.on_events([
        Rejected(ErrorCode.INVALID_REQUEST, "length mismatch", request(3, "x")),
        Rejected(ErrorCode.PARSE_ERROR, "not JSON", answer_anyway=True),
        Rejected(ErrorCode.INVALID_REQUEST, "skipped bytes"),
    ])
    assert wire.errors() == [
        (None, ErrorCode.INVALID_REQUEST),
        (2, ErrorCode.INVALID_REQUEST),
        (3, ErrorCode.INVALID_REQUEST),
        (None, ErrorCode.PARSE_ERROR),
    ]


def test_a_request_cancelled_later_in_the_same_read_never_runs() -> None:
    wire = Wire()
    ran: list[Any] = []
    wire.endpoint.handlers["run"] = ran.append
    cancel = {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"id": 1}}
    wire.receive(request(1, "run", {"n": 1}), request(2, "run", {"n": 2}), cancel)
    assert ran == [{"n": 2}]
    assert wire.sent[0] == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "request cancelled before it ran"}}


def test_notifications_go_to_their_handlers_and_unknown_ones_are_ignored() -> None:
    wire = Wire()
    heard: list[Any] = []
    wire.endpoint.notification_handlers["note"] = heard.append
    wire.receive({"jsonrpc": "2.0", "method": "note", "params": {"n": 1}}, {"jsonrpc": "2.0", "method": "other"})
    assert heard == [{"n": 1}] and wire.sent == []


async def test_a_waiting_handler_answers_from_a_task_and_can_be_cancelled() -> None:
    wire = Wire()
    release = asyncio.Event()

    async def slow(params: Any) -> Any:
        await release.wait()
        return params

    wire.endpoint.handlers["slow"] = slow
    wire.endpoint.handlers["fast"] = lambda params: "fast"
    wire.receive(request(1, "slow", ["first"]), request(2, "slow", ["second"]), request(3, "fast"))
    assert wire.sent == [{"jsonrpc": "2.0", "id": 3, "result": "fast"}]  # later requests go on
    wire.receive({"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"id": 2}})
    release.set()
    await eventually(lambda: len(wire.sent) == 3, "both slow requests answered")
    assert sorted(wire.sent[1:], key=lambda m: m["id"]) == [
        {"jsonrpc": "2.0", "id": 1, "result": ["first"]},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "request cancelled"}},
    ]
    assert wire.endpoint.running == {}


async def test_requests_to_the_peer_resolve_with_its_answers() -> None:
    wire = Wire()
    endpoint = wire.endpoint
    first = asyncio.create_task(endpoint.call("ask", {"q": 1}))
    second = asyncio.create_task(endpoint.call("ask", {"q": 2}))
    third = asyncio.create_task(endpoint.call("ask"))
    await asyncio.sleep(0)
    assert wire.sent == [
        {"id": 1, "method": "ask", "jsonrpc": "2.0", "params": {"q": 1}},
        {"id": 2, "method": "ask", "jsonrpc": "2.0", "params": {"q": 2}},
        {"id": 3, "method": "ask", "jsonrpc": "2.0"},
    ]
    wire.receive(
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "no", "data": [1]}},
        {"jsonrpc": "2.0", "id": 1, "result": "yes"},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}},
        {"jsonrpc": "2.0", "id": 99, "result": "to nothing"},
    )
    assert await first == "yes"
    with pytest.raises(ResponseError) as failed:
        await second
    assert (failed.value.code, failed.value.message, failed.value.data) == (-32000, "no", [1])
    with pytest.raises(ResponseError, match="malformed error answer"):
        await third
    assert endpoint.waiting == {}


async def test_a_timeout_or_a_cancelled_caller_withdraws_the_request() -> None:
    wire = Wire()
    with pytest.raises(TimeoutError):
        await wire.endpoint.call("ask", None, timeout=0.01)
    waiting = asyncio.create_task(wire.endpoint.call("ask"))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert [m.get("method") for m in wire.sent] == ["ask", CANCEL_REQUEST, "ask", CANCEL_REQUEST]
    assert [m["params"] for m in wire.sent if m["method"] == CANCEL_REQUEST] == [{"id": 1}, {"id": 2}]
    assert wire.endpoint.waiting == {}
    wire.receive({"jsonrpc": "2.0", "id": 1, "result": "late"})  # a late answer is ignored
    assert len(wire.sent) == 4


async def test_a_lost_connection_fails_every_waiting_request() -> None:
    wire = Wire()
    waiting = asyncio.create_task(wire.endpoint.call("ask"))
    await asyncio.sleep(0)
    wire.endpoint.fail_waiting(ConnectionError("gone"))
    with pytest.raises(ConnectionError, match="gone"):
        await waiting


# --------------------------------------------------------------------------- initialize


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (None, "$"),
        ([], "$"),
        ({"processId": None}, "capabilities"),
        ({"processId": None, "capabilities": 5}, "capabilities"),
        ({"processId": "1", "capabilities": {}}, "processId"),
        ({"processId": True, "capabilities": {}}, "processId"),
        ({"processId": 1.5, "capabilities": {}}, "processId"),
        ({"processId": None, "capabilities": {}, "trace": "loud"}, "trace"),
    ],
)
def test_initialize_checks_the_fields_it_reads(params: Any, field: str) -> None:
    with pytest.raises(InvalidParams) as refused:
        parse_initialize(params)
    assert refused.value.data["field"] == field
    assert field in refused.value.message or field == "$"


def test_initialize_reads_process_id_capabilities_and_options() -> None:
    params = {"processId": 7, "capabilities": {"experimental": {}}, "initializationOptions": {"a": 1}, "rootUri": 5}
    parsed = parse_initialize(params)
    assert (parsed.process_id, parsed.capabilities, parsed.initialization_options) == (7, {"experimental": {}}, {"a": 1})
    assert parse_initialize({"capabilities": {}}).process_id is None


# --------------------------------------------------------------------------- the daemon


def test_the_handler_table_names_each_methods_params_type() -> None:
    from sessiontree.server import HANDLERS

    assert {method: handler.params for method, handler in HANDLERS.items()} == {
        method: types.params for method, types in METHODS.items()
    }


def test_the_daemon_and_the_client_import_neither_pygls_nor_lsprotocol() -> None:
    code = (
        "import sys, sessiontree.cli, sessiontree.server, sessiontree.client\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def test_requests_in_a_row_for_a_batch_handler_are_answered_together_in_order() -> None:
    """A run of one method's requests in one read goes to its batch handler (a lone one, to its
    handler); any other message ends the run; a request cancelled in the same read is not in it."""
    wire = Wire()
    batches: list[list[Any]] = []

    def batch(params: list[Any]) -> list[Any]:
        batches.append(params)
        return [InvalidParams("odd", field="n") if p["n"] % 2 else {"n": p["n"]} for p in params]

    wire.endpoint.handlers.update({"add": lambda params: {"alone": params["n"]}, "echo": lambda params: params})
    wire.endpoint.batch_handlers["add"] = batch
    cancel = {"jsonrpc": "2.0", "method": CANCEL_REQUEST, "params": {"id": 6}}
    wire.receive(
        request(1, "add", {"n": 0}), request(2, "add", {"n": 1}), request(3, "add", {"n": 2}),
        request(4, "echo", {}),
        request(5, "add", {"n": 4}),
        {"jsonrpc": "2.0", "method": "note", "params": {}},
        request(6, "add", {"n": 6}), request(7, "add", {"n": 8}), request(8, "add", {"n": 10}), cancel,
    )
    assert batches == [[{"n": 0}, {"n": 1}, {"n": 2}], [{"n": 8}, {"n": 10}]]
    assert [(m["id"], m.get("result"), m.get("error", {}).get("code")) for m in wire.sent] == [
        (1, {"n": 0}, None), (2, None, InvalidParams.code), (3, {"n": 2}, None),
        (4, {}, None),
        (5, {"alone": 4}, None),
        (6, None, ErrorCode.REQUEST_CANCELLED), (7, {"n": 8}, None), (8, {"n": 10}, None),
    ]


def test_a_batch_handler_that_fails_answers_each_of_its_requests_with_the_error() -> None:
    wire = Wire()
    wire.endpoint.handlers["add"] = lambda params: params
    wire.endpoint.batch_handlers["add"] = lambda params: 1 / 0  # type: ignore[arg-type,return-value]
    wire.receive(request(1, "add", {}), request(2, "add", {}))
    assert wire.errors() == [(1, ErrorCode.INTERNAL_ERROR), (2, ErrorCode.INTERNAL_ERROR)]


@pytest.mark.parametrize(
    "params",
    [
        {"sessionId": "s", "entry": {"type": "message"}},
        {"sessionId": "s", "entry": {"type": "message"}, "parentId": None},
        {"sessionId": "s", "entries": [{"type": "message"}]},
        {"sessionId": 5, "entry": {}},
        {"sessionId": "s", "entry": []},
        {"sessionId": "s", "extra": 1},
    ],
)
def test_append_params_taken_the_quick_way_are_what_the_converter_makes(params: dict[str, Any]) -> None:
    from sessiontree.protocol import AppendParams, converter, parse_params

    try:
        expected: Any = converter.structure(params, AppendParams)
    except Exception:
        with pytest.raises(InvalidParams):
            parse_params("session/append", params)
        return
    assert parse_params("session/append", params) == expected
