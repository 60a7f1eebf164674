"""JSON-RPC 2.0 envelope checks: what kind of message this is, or why it is invalid.

Every message is classified before anything else looks at it, so that every request is answered
exactly once: an invalid one with -32600 (with its id when that id is usable).
"""

from __future__ import annotations

from typing import Any, TypeGuard

import attrs

MessageId = int | str


@attrs.frozen(slots=True)
class Request:
    id: MessageId
    method: str
    params: Any


@attrs.frozen(slots=True)
class Notification:
    method: str
    params: Any


@attrs.frozen(slots=True)
class Response:
    """A client's answer to a request the daemon sent."""

    message: dict[str, Any]


@attrs.frozen(slots=True)
class Invalid:
    """An invalid message: answered -32600 with its id when that id is usable, else null."""

    id: MessageId | None
    reason: str


Envelope = Request | Notification | Response | Invalid


def valid_id(value: Any) -> TypeGuard[MessageId]:
    """LSP ids are integers or strings (JSON-RPC's null and fractions are refused)."""
    return type(value) is int or type(value) is str


def classify(message: Any) -> Envelope:
    if type(message) is not dict:
        if type(message) is list:
            return Invalid(None, "batch messages are not supported")
        return Invalid(None, "a message must be a JSON object")
    has_id = "id" in message
    msg_id = message.get("id")
    usable_id = msg_id if valid_id(msg_id) else None
    if message.get("jsonrpc") != "2.0":
        return Invalid(usable_id, 'jsonrpc must be "2.0"')
    if "method" in message:
        return _call(message, has_id, usable_id)
    if "result" in message or "error" in message:
        if usable_id is None and not (msg_id is None and "error" in message):
            return Invalid(None, "a response needs an integer or string id")
        return Response(message)
    return Invalid(usable_id, "a message needs a method, or a result or an error")


def _call(message: dict[str, Any], has_id: bool, usable_id: MessageId | None) -> Envelope:
    method = message["method"]
    if type(method) is not str:
        return Invalid(usable_id, "method must be a string")
    params = message.get("params")
    if params is not None and type(params) is not dict and type(params) is not list:
        return Invalid(usable_id, "params must be an object or an array")
    if not has_id:
        return Notification(method, params)
    if usable_id is None:
        return Invalid(None, "id must be an integer or a string")
    return Request(usable_id, method, params)
