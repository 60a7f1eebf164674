"""JSON as pi writes it: `JSON.stringify` output, byte for byte.

orjson already writes compact JSON with non-ASCII characters unescaped and the
same control-character escapes as JavaScript. Numbers differ: JavaScript has no
integral floats (`1.0` prints as `1`) and its own rule for when to use an
exponent (`0.0000045` but `1e-7`, `100000000000000000000` but `1e+21`). Both
print the shortest digits that read back as the same double, so only the layout
of those digits has to be redone.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import orjson

# orjson writes every float with a "." or an exponent; no match means no float to redo.
_MAYBE_FLOAT = re.compile(rb"[0-9][.eE]")


def js_number(value: float) -> str:
    """ECMAScript's Number::toString for a finite double (JSON.stringify writes NaN/Infinity as null)."""
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    point = len(digit_tuple) + exponent  # value = 0.<digits> x 10^point
    text = _layout(digits, point)
    return f"-{text}" if sign else text


def _layout(digits: str, point: int) -> str:
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"0.{'0' * -point}{digits}"
    mantissa = digits[0] + (f".{digits[1:]}" if count > 1 else "")
    return f"{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"


def _has_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if type(value) is dict:
        return any(_has_float(item) for item in value.values())
    if type(value) is list:
        return any(_has_float(item) for item in value)
    return False


def _with_js_numbers(value: Any) -> Any:
    if type(value) is float:
        return orjson.Fragment(js_number(value))
    if type(value) is dict:
        return {key: _with_js_numbers(item) for key, item in value.items()}
    if type(value) is list:
        return [_with_js_numbers(item) for item in value]
    return value


def dumps(value: Any) -> bytes:
    """Serialize like JavaScript's `JSON.stringify` (compact, unescaped non-ASCII, JS numbers)."""
    data = orjson.dumps(value)
    if _MAYBE_FLOAT.search(data) and _has_float(value):
        data = orjson.dumps(_with_js_numbers(value))
    return data


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    return orjson.loads(data)


JSONDecodeError = orjson.JSONDecodeError
