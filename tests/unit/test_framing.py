"""The frame decoder and the envelope checks, from tables (tests/e2e/test_wire.py keeps a few of the
same cases end to end, through a real daemon)."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.rpc.codes import ErrorCode
from sessiontree.rpc.envelope import Invalid, Notification, Request, Response, classify
from sessiontree.rpc.framing import Frame, FrameDecoder, Rejected
from support.daemon import frame

LIMIT = 150  # max_message_bytes of the decoder under test


def request(msg_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "session/info"}


NEXT = frame(request(2))  # a good frame after each case: the stream is never wedged

# (case, bytes, what comes out: ("frame", id) or ("rejected", code, id of the recovered message, answer_anyway))
FRAMES: list[tuple[str, bytes, list[tuple[Any, ...]]]] = [
    ("as LSP spells it", frame(request(1)), [("frame", 1)]),
    (
        "any case, LF line ends, Content-Type and unknown headers",
        frame(request(1), header="content-length: {n}\nContent-Type: application/vscode-jsonrpc; charset=utf-8\nX-A: b\n\n"),
        [("frame", 1)],
    ),
    ("two frames in one read", frame(request(1)) + NEXT, [("frame", 1), ("frame", 2)]),
    (
        "a length that is not a number: skipped to the next header, the body's request answered",
        b"Content-Length: abc\r\n\r\n" + frame(request(1)).split(b"\r\n\r\n", 1)[1] + NEXT,
        [("rejected", ErrorCode.INVALID_REQUEST, 1, False), ("frame", 2)],
    ),
    (
        "no Content-Length",
        b"Content-Type: x\r\n\r\n" + frame(request(1)).split(b"\r\n\r\n", 1)[1] + NEXT,
        [("rejected", ErrorCode.INVALID_REQUEST, 1, False), ("frame", 2)],
    ),
    (
        "a length two bytes short: the message recovered, rejected with its id",
        frame(request(1), delta=-2) + NEXT,
        [("rejected", ErrorCode.INVALID_REQUEST, 1, False), ("frame", 2)],
    ),
    (
        "a length three bytes long: the swallowed start of the next header given back",
        frame(request(1), delta=3) + NEXT,
        [("rejected", ErrorCode.INVALID_REQUEST, 1, False), ("frame", 2)],
    ),
    (
        "a length no body can have (over 1 GiB): not waited for",
        frame(request(1), delta=2**31) + NEXT,
        [("rejected", ErrorCode.INVALID_REQUEST, None, True), ("rejected", ErrorCode.INVALID_REQUEST, None, False), ("frame", 2)],
    ),
    ("a body that is not JSON", frame(b"{nope") + NEXT, [("rejected", ErrorCode.PARSE_ERROR, None, True), ("frame", 2)]),
    (
        "a message over the limit: read, dropped, answered with id null",
        frame({**request(5), "params": {"text": "x" * LIMIT}}) + NEXT,
        [("rejected", ErrorCode.INVALID_REQUEST, None, True), ("frame", 2)],
    ),
]


def summary(event: Frame | Rejected) -> tuple[Any, ...]:
    if isinstance(event, Frame):
        return ("frame", event.message.get("id"))
    recovered = event.message.get("id") if isinstance(event.message, dict) else None
    return ("rejected", event.code, recovered, event.answer_anyway)


def decode(chunks: list[bytes]) -> list[tuple[Any, ...]]:
    decoder = FrameDecoder(max_message_bytes=LIMIT)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return [summary(event) for event in events + decoder.flush()]


@pytest.mark.parametrize(("data", "expected"), [(data, expected) for _, data, expected in FRAMES], ids=[c for c, _, _ in FRAMES])
def test_frames_decode_as_the_table_says(data: bytes, expected: list[tuple[Any, ...]]) -> None:
    assert decode([data]) == expected


# A length too short is recovered from the bytes after it, when they are already read; a byte at a
# time, they are not yet, and the short body is a parse error: recovery is a best effort.
NEEDS_LOOKAHEAD = {"a length two bytes short: the message recovered, rejected with its id"}
BYTEWISE = [(data, expected) for case, data, expected in FRAMES if case not in NEEDS_LOOKAHEAD]


@pytest.mark.parametrize(("data", "expected"), BYTEWISE, ids=[c for c, _, _ in FRAMES if c not in NEEDS_LOOKAHEAD])
def test_the_same_bytes_a_byte_at_a_time_decode_the_same(data: bytes, expected: list[tuple[Any, ...]]) -> None:
    assert decode([data[i : i + 1] for i in range(len(data))]) == expected


def test_a_short_length_read_a_byte_at_a_time_is_a_parse_error_and_the_stream_goes_on() -> None:
    data = frame(request(1), delta=-2) + NEXT
    events = decode([data[i : i + 1] for i in range(len(data))])
    assert events[0] == ("rejected", ErrorCode.PARSE_ERROR, None, True) and events[-1] == ("frame", 2)


def test_a_body_cut_short_is_tried_once_the_stream_goes_quiet() -> None:
    decoder = FrameDecoder(max_message_bytes=1000)
    assert decoder.feed(frame(request(7), delta=10)) == []  # ten more bytes announced: it waits
    assert [summary(event) for event in decoder.flush()] == [("rejected", ErrorCode.INVALID_REQUEST, 7, False)]


# (case, message, the envelope it is)
ENVELOPES: list[tuple[str, Any, Any]] = [
    ("a request", request(1), Request(1, "session/info", None)),
    ("a string id and array params", {"jsonrpc": "2.0", "id": "a", "method": "m", "params": [1]}, Request("a", "m", [1])),
    ("a notification", {"jsonrpc": "2.0", "method": "m", "params": {}}, Notification("m", {})),
    ("a response", {"jsonrpc": "2.0", "id": 3, "result": None}, Response({"jsonrpc": "2.0", "id": 3, "result": None})),
    ("an error response with id null", {"jsonrpc": "2.0", "id": None, "error": {"code": 1}}, Response({"jsonrpc": "2.0", "id": None, "error": {"code": 1}})),
    ("a batch", [request(1)], Invalid(None, "batch messages are not supported")),
    ("not an object", "hello", Invalid(None, "a message must be a JSON object")),
    ("no jsonrpc", {"id": 1, "method": "m"}, Invalid(1, 'jsonrpc must be "2.0"')),
    ("jsonrpc 1.0", {"jsonrpc": "1.0", "id": 1, "method": "m"}, Invalid(1, 'jsonrpc must be "2.0"')),
    ("a method that is not a string", {"jsonrpc": "2.0", "id": 1, "method": 7}, Invalid(1, "method must be a string")),
    ("params a string", {"jsonrpc": "2.0", "id": 1, "method": "m", "params": "x"}, Invalid(1, "params must be an object or an array")),
    ("a fractional id", {"jsonrpc": "2.0", "id": 1.5, "method": "m"}, Invalid(None, "id must be an integer or a string")),
    ("id null on a request", {"jsonrpc": "2.0", "id": None, "method": "m"}, Invalid(None, "id must be an integer or a string")),
    ("a boolean id", {"jsonrpc": "2.0", "id": True, "method": "m"}, Invalid(None, "id must be an integer or a string")),
    ("a result without an id", {"jsonrpc": "2.0", "result": 1}, Invalid(None, "a response needs an integer or string id")),
    ("neither method nor result", {"jsonrpc": "2.0", "id": 4}, Invalid(4, "a message needs a method, or a result or an error")),
]


@pytest.mark.parametrize(("message", "expected"), [(m, e) for _, m, e in ENVELOPES], ids=[c for c, _, _ in ENVELOPES])
def test_envelopes_classify_as_the_table_says(message: Any, expected: Any) -> None:
    assert classify(message) == expected
