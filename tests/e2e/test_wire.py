"""Framing and envelope, driven with raw bytes over real stdio.

Every case checks the exact list of answers (id, error code) the input is owed, followed by
a probe request whose answer proves the stream is not wedged and that nothing was answered
twice (answers come in arrival order, so a duplicate would show up before the probe's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.daemon import RawDaemon, answered, frame, info, request

NOT_FOUND = -32010  # the domain's answer to session/info for an unknown session
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602

Answers = list[tuple[Any, int | None]]

FRAMING: list[tuple[str, bytes, Answers]] = [
    ("crlf headers", frame(info(1)), [(1, NOT_FOUND)]),
    ("LF-only line ends", frame(info(1), header="Content-Length: {n}\n\n"), [(1, NOT_FOUND)]),
    ("lower-case header name", frame(info(1), header="content-length: {n}\r\n\r\n"), [(1, NOT_FOUND)]),
    ("no space, trailing blanks", frame(info(1), header="Content-Length:{n}  \r\n\r\n"), [(1, NOT_FOUND)]),
    (
        "extra headers in any order",
        frame(info(1), header="Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nX-Trace: 1\r\nCONTENT-LENGTH: {n}\r\n\r\n"),
        [(1, NOT_FOUND)],
    ),
    ("blank lines between frames", b"\r\n" + frame(info(1)) + b"\n\n" + frame(info(2)), [(1, NOT_FOUND), (2, NOT_FOUND)]),
    ("several frames in one write", b"".join(frame(info(i)) for i in range(1, 6)), [(i, NOT_FOUND) for i in range(1, 6)]),
    ("length one too long", frame(info(1), delta=1) + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("length one too short", frame(info(1), delta=-1) + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("length 20 too long", frame(info(1), delta=20) + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("length 3 too short", frame(info(1), delta=-3) + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("negative length", frame(info(1), header="Content-Length: -5\r\n\r\n") + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("non-numeric length", frame(info(1), header="Content-Length: ten\r\n\r\n") + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("no Content-Length", frame(info(1), header="Content-Type: x\r\n\r\n") + frame(info(2)), [(1, INVALID_REQUEST), (2, NOT_FOUND)]),
    ("garbage line before a header", b"hello world\r\n" + frame(info(1)), [(1, NOT_FOUND)]),
    ("garbage glued to a header", b"}}" + frame(info(1)), [(1, NOT_FOUND)]),
    ("invalid JSON body", frame(b"{not json}") + frame(info(2)), [(None, PARSE_ERROR), (2, NOT_FOUND)]),
    ("invalid UTF-8 body", frame(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}') + frame(info(2)), [(None, PARSE_ERROR), (2, NOT_FOUND)]),
]


@pytest.mark.parametrize(("data", "expected"), [case[1:] for case in FRAMING], ids=[case[0] for case in FRAMING])
def test_framing(daemon: RawDaemon, data: bytes, expected: Answers) -> None:
    daemon.send(data)
    assert answered(daemon.answers_before_probe()) == expected


def test_frames_split_across_writes(daemon: RawDaemon) -> None:
    data = frame(info(1)) + frame(info(2))
    for cut in (3, 9, 19, 30, 50, len(data) - 1):  # inside the header, the body, the next header
        daemon.send(data[:cut])
        data = data[cut:]
        time.sleep(0.02)  # a gap on purpose: each part arrives in a read of its own
    daemon.send(data)
    assert answered(daemon.answers_before_probe()) == [(1, NOT_FOUND), (2, NOT_FOUND)]


def test_length_too_long_with_nothing_after_is_answered_once_quiet(daemon: RawDaemon) -> None:
    daemon.send(frame(info(1), delta=1))
    answer = daemon.next()
    assert (answer["id"], answer["error"]["code"]) == (1, INVALID_REQUEST)
    assert "Content-Length" in answer["error"]["message"]
    assert daemon.answers_before_probe() == []


def test_message_over_the_limit_is_discarded_exactly(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    daemon = start_daemon("--sessions-dir", str(sessions_dir), "--max-message-bytes", "1000")
    daemon.initialize()
    big = info(1) | {"padding": "x" * 2000}
    daemon.send(frame(big) + frame(info(2)))
    answers = daemon.answers_before_probe()
    assert answered(answers) == [(None, INVALID_REQUEST), (2, NOT_FOUND)]
    assert "too large" in answers[0]["error"]["message"]


def test_huge_length_is_refused_without_dying(daemon: RawDaemon) -> None:
    daemon.send(frame(info(1), header="Content-Length: 99999999999999999999\r\n\r\n"))
    answer = daemon.next()
    assert (answer["id"], answer["error"]["code"]) == (None, INVALID_REQUEST)
    assert "too large" in answer["error"]["message"]
    assert daemon.process.poll() is None  # still alive, discarding the announced body
    daemon.close_stdin()
    assert daemon.wait() == 1
    assert "too large" in daemon.stderr


CALL = {"jsonrpc": "2.0", "id": 1, "method": "session/info", "params": {"sessionId": "x"}}


def without(key: str) -> dict[str, Any]:
    return {k: v for k, v in CALL.items() if k != key}


ENVELOPE: list[tuple[str, Any, Answers, str]] = [
    ("invalid JSON", b'{"jsonrpc": "2.0", "id": 1,', [(None, PARSE_ERROR)], "parse error"),
    ("batch", [info(1), info(2)], [(None, INVALID_REQUEST)], "batch"),
    ("empty batch", [], [(None, INVALID_REQUEST)], "batch"),
    ("number", 5, [(None, INVALID_REQUEST)], "object"),
    ("string", "hello", [(None, INVALID_REQUEST)], "object"),
    ("null", None, [(None, INVALID_REQUEST)], "object"),
    ("no jsonrpc", without("jsonrpc"), [(1, INVALID_REQUEST)], "jsonrpc"),
    ("jsonrpc 1.0", CALL | {"jsonrpc": "1.0"}, [(1, INVALID_REQUEST)], "jsonrpc"),
    ("jsonrpc a number", CALL | {"jsonrpc": 2.0}, [(1, INVALID_REQUEST)], "jsonrpc"),
    ("fractional id", CALL | {"id": 1.5}, [(None, INVALID_REQUEST)], "id"),
    ("boolean id", CALL | {"id": True}, [(None, INVALID_REQUEST)], "id"),
    ("object id", CALL | {"id": {"a": 1}}, [(None, INVALID_REQUEST)], "id"),
    ("null id", CALL | {"id": None}, [(None, INVALID_REQUEST)], "id"),
    ("method a number", CALL | {"method": 5}, [(1, INVALID_REQUEST)], "method"),
    ("params a string", CALL | {"params": "x"}, [(1, INVALID_REQUEST)], "params"),
    ("params a number", CALL | {"params": 5}, [(1, INVALID_REQUEST)], "params"),
    ("neither method nor result", {"jsonrpc": "2.0", "id": 1}, [(1, INVALID_REQUEST)], "method"),
    ("custom method without params", without("params"), [(1, INVALID_PARAMS)], "params"),
    ("custom method with null params", CALL | {"params": None}, [(1, INVALID_PARAMS)], "params"),
    ("custom method with array params", CALL | {"params": ["x"]}, [(1, INVALID_PARAMS)], "params"),
    ("missing field", CALL | {"params": {}}, [(1, INVALID_PARAMS)], "sessionId"),
    ("wrong field type", CALL | {"params": {"sessionId": 5}}, [(1, INVALID_PARAMS)], "sessionId"),
    ("unknown method", CALL | {"method": "session/nope"}, [(1, METHOD_NOT_FOUND)], "session/nope"),
    ("unserved LSP method", CALL | {"method": "textDocument/hover"}, [(1, METHOD_NOT_FOUND)], "hover"),
    ("unknown $/ request", CALL | {"method": "$/unknown"}, [(1, METHOD_NOT_FOUND)], "$/unknown"),
    ("unknown $/ notification", {"jsonrpc": "2.0", "method": "$/unknown", "params": {}}, [], ""),
    ("unknown notification", {"jsonrpc": "2.0", "method": "foo/bar"}, [], ""),
    ("custom method as a notification", without("id"), [], ""),
    ("response to an unknown id", {"jsonrpc": "2.0", "id": 99, "result": None}, [], ""),
    ("cancel of nothing pending", {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}}, [], ""),
    ("malformed $/setTrace", {"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "loud"}}, [], ""),
    ("work done progress cancel", {"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel", "params": {"token": "t"}}, [], ""),
    ("$/setTrace as a request", request(1, "$/setTrace", {"value": "off"}), [(1, METHOD_NOT_FOUND)], "$/setTrace"),
    ("initialize twice", request(1, "initialize", {"processId": None, "capabilities": {}}), [(1, INVALID_REQUEST)], "once"),
    ("string id", info("abc"), [("abc", NOT_FOUND)], "no-such-session"),
]


@pytest.mark.parametrize(
    ("body", "expected", "mentions"), [case[1:] for case in ENVELOPE], ids=[case[0] for case in ENVELOPE]
)
def test_envelope(shared_daemon: RawDaemon, body: Any, expected: Answers, mentions: str) -> None:
    shared_daemon.send(frame(body))
    answers = shared_daemon.answers_before_probe()
    assert answered(answers) == expected
    for message in answers:
        assert mentions in message["error"]["message"]


def test_a_request_cancelled_before_it_ran_is_answered_once_with_32800(daemon: RawDaemon, sessions_dir: Path) -> None:
    cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 7}}
    daemon.send(frame(request(7, "session/list", {})) + frame(cancel) + frame(info(8)))
    assert answered(daemon.answers_before_probe()) == [(7, -32800), (8, NOT_FOUND)]
