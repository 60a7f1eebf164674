"""JSON as pi writes it: `JSON.stringify` output, byte for byte where it matters.

orjson already writes compact JSON with non-ASCII characters unescaped and the
same control-character escapes as JavaScript. The one visible difference is
numbers: JavaScript has no integral floats, so `1.0` prints as `1`, `1e20` as
`100000000000000000000` and `-0.0` as `0`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# A float that JavaScript would print differently can only show up as one of these.
_FLOAT_HINT = re.compile(rb"\d\.0(?![0-9])|\d[eE]\+?\d|-0\.0")
_JS_EXPONENT_LIMIT = 1e21  # JavaScript switches to exponent notation from here


def _js_number(value: float) -> float | int:
    if value.is_integer() and abs(value) < _JS_EXPONENT_LIMIT:
        return int(value)
    return value


def _normalize(value: Any) -> Any:
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, dict):
        return {key: _normalize(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalize(item) for item in value]
    return value


def dumps(value: Any) -> bytes:
    """Serialize like JavaScript's `JSON.stringify` (compact, unescaped non-ASCII)."""
    data = orjson.dumps(value)
    if _FLOAT_HINT.search(data):
        normalized = _normalize(value)
        try:
            data = orjson.dumps(normalized)
        except orjson.JSONEncodeError:  # an integral float beyond 64 bits, e.g. 1e20
            data = json.dumps(normalized, ensure_ascii=False, separators=(",", ":")).encode()
    return data


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    return orjson.loads(data)


JSONDecodeError = orjson.JSONDecodeError
