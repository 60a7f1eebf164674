"""The error codes of the wire layer, by name: JSON-RPC 2.0's and LSP's.

The domain's own codes (-32010 and up) live on its error classes (`errors.py`); protocol.md's
error table lists both.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Sent as plain integers (an IntEnum encodes as its value)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002  # LSP: a request before `initialize`
    REQUEST_CANCELLED = -32800  # LSP: cancelled with `$/cancelRequest`
