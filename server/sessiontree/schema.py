"""A machine-readable description of the protocol, generated from `protocol.py`.

    python -m sessiontree.schema > clients/node/src/protocol.schema.json

Clients in other languages take their types from this JSON Schema instead of re-reading
protocol.md; a test keeps the committed copy equal to a fresh generation, so a change of a
wire type that is not carried over to the clients fails the suite.

Which fields are required depends on who writes the message, because the converter leaves
out a field whose value is its default `None` (or UNSET): in what a client sends (params of
requests, results of the daemon's requests) a field is required when it has no default; in
what the daemon sends (results, notifications, params of its requests) a field is required
when it is always written, and a field left out when `None` is optional and never `null`.
A class reached from both sides is described as the client sends it (the looser reading).
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from typing import Any, Final, Literal

import attrs
import orjson

from . import protocol
from .errors import ALL_ERRORS
from .rpc.codes import ErrorCode
from .unset import _Unset

SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

_MAYBE_ID: Final = "Absent and null differ: absent is the default, null is no entry (protocol.md, Absent and null)."

# Server-to-client requests, when protocol.py has a table of them.
_CLIENT_REQUEST_TABLES: Final = ("CLIENT_REQUESTS", "SERVER_REQUESTS")
SUMMARIZE: Final = "sessiontree/summarize"


def _omitted_when_default(field: attrs.Attribute[Any]) -> bool:
    """What `protocol.converter` leaves out of the wire when the value equals the default."""
    return field.default is None or field.default is protocol.UNSET


def _is_unset(tp: Any) -> bool:
    return tp is _Unset


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.sent_by_client: set[type] = set()

    # ----------------------------------------------------------------- reachability

    def mark_client_side(self, cls: type | None) -> None:
        """Note every attrs class a client writes, so they are described with input rules."""
        if cls is None or cls in self.sent_by_client:
            return
        self.sent_by_client.add(cls)
        for hint in typing.get_type_hints(cls).values():
            for inner in _attrs_classes_in(hint):
                self.mark_client_side(inner)

    # ----------------------------------------------------------------- classes

    def ref(self, cls: type) -> dict[str, Any]:
        name = protocol.WIRE_NAMES.get(cls, cls.__name__)
        if name not in self.defs:
            self.defs[name] = {}  # placeholder: classes may refer to each other
            self.defs[name] = self._object(cls, client_side=cls in self.sent_by_client)
        return {"$ref": f"#/$defs/{name}"}

    def _object(self, cls: type, client_side: bool) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            name = protocol.to_camel(field.name)
            has_default = field.default is not attrs.NOTHING
            if client_side:
                is_required = not has_default
                field_schema = self.type(hints[field.name])
            else:
                is_required = not (has_default and _omitted_when_default(field))
                # A field left out when None is never sent as null.
                field_schema = self.type(hints[field.name], drop_null=not is_required)
            if hints[field.name] == protocol.MaybeId:
                field_schema = {**field_schema, "description": _MAYBE_ID}
            properties[name] = field_schema
            if is_required:
                required.append(name)
        schema: dict[str, Any] = {"type": "object"}
        doc = inspect.getdoc(cls)
        if doc and cls.__doc__:  # its own docstring, not attrs' generated signature
            schema["description"] = " ".join(doc.split())
        schema["properties"] = properties
        schema["required"] = required
        return schema

    # ----------------------------------------------------------------- types

    def type(self, tp: Any, drop_null: bool = False) -> dict[str, Any]:
        if tp is protocol.MaybeId or typing.get_origin(tp) in (typing.Union, types.UnionType):
            members = [m for m in typing.get_args(tp) if not _is_unset(m)]
            if drop_null:
                members = [m for m in members if m is not type(None)]
            if float in members and int in members:  # Python's "a JSON number"
                members = [m for m in members if m is not int]
            schemas = [self.type(m) for m in members]
            return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
        if tp is Any:
            return {}
        if tp is type(None):
            return {"type": "null"}
        if tp is str:
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        origin = typing.get_origin(tp)
        if origin is Literal:
            return {"enum": list(typing.get_args(tp))}
        if origin is list:
            (item,) = typing.get_args(tp)
            return {"type": "array", "items": self.type(item)}
        if origin is dict:
            key, value = typing.get_args(tp)
            assert key is str, tp
            return {"type": "object", "additionalProperties": self.type(value)}
        if attrs.has(tp):
            return self.ref(tp)
        raise TypeError(f"no JSON Schema for {tp!r}")


def _attrs_classes_in(tp: Any) -> list[type]:
    if attrs.has(tp):
        return [tp]
    return [cls for arg in typing.get_args(tp) for cls in _attrs_classes_in(arg)]


def _client_requests() -> dict[str, Any]:
    for name in _CLIENT_REQUEST_TABLES:
        table = getattr(protocol, name, None)
        if table is not None:
            return dict(table)
    # Without such a table: the one request the daemon sends, when its wire types exist.
    params, result = getattr(protocol, "SummarizeParams", None), getattr(protocol, "SummarizeResult", None)
    if params is None or result is None:
        return {}
    summary = "Summarise for a compaction or a branch summary (session/compact, session/navigate)."
    return {SUMMARIZE: protocol.MethodTypes(params, result, summary)}


def error_codes() -> dict[str, int]:
    """Every error code of protocol.md's table, by name: JSON-RPC's and LSP's, then the daemon's own."""
    codes = {
        "ParseError": int(ErrorCode.PARSE_ERROR),
        "InvalidRequest": int(ErrorCode.INVALID_REQUEST),
        "MethodNotFound": int(ErrorCode.METHOD_NOT_FOUND),
        "InvalidParams": int(ErrorCode.INVALID_PARAMS),
        "InternalError": int(ErrorCode.INTERNAL_ERROR),
        "ServerNotInitialized": int(ErrorCode.SERVER_NOT_INITIALIZED),
        "RequestCancelled": int(ErrorCode.REQUEST_CANCELLED),
    }
    for cls in ALL_ERRORS:
        codes.setdefault(cls.name, cls.code)
    return codes


def build() -> dict[str, Any]:
    builder = _Builder()
    client_requests = _client_requests()
    for method in protocol.METHODS.values():
        builder.mark_client_side(method.params)
    for method in client_requests.values():
        builder.mark_client_side(method.result)

    def result_schema(cls: type | None) -> dict[str, Any]:
        return {"type": "null"} if cls is None else builder.ref(cls)

    methods = {
        name: {"summary": m.summary, "params": builder.ref(m.params), "result": result_schema(m.result)}
        for name, m in sorted(protocol.METHODS.items())
    }
    notifications = {name: {"params": builder.ref(cls)} for name, cls in sorted(protocol.NOTIFICATIONS.items())}
    requests = {
        name: {"summary": m.summary, "params": builder.ref(m.params), "result": result_schema(m.result)}
        for name, m in sorted(client_requests.items())
    }
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "sessiontree protocol",
        "description": "Generated by `python -m sessiontree.schema` from server/sessiontree/protocol.py; do not edit.",
        "protocolVersion": protocol.PROTOCOL_VERSION,
        "formatVersion": protocol.FORMAT_VERSION,
        "methods": methods,
        "notifications": notifications,
        "clientRequests": requests,
        "errors": error_codes(),
        "$defs": dict(sorted(builder.defs.items())),
    }


def render() -> bytes:
    return orjson.dumps(build(), option=orjson.OPT_INDENT_2) + b"\n"


def main() -> int:
    sys.stdout.buffer.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
