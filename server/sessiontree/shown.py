"""Values from a session file as text for people (exports, the command line's views).

A session file is input from anywhere: a tool's arguments may be nested hundreds of levels deep or
hold lone UTF-16 surrogates, a "text" may be an object. Nothing here recurses without a bound or
fails on such a value: what is too deep is cut at `MAX_DEPTH` with a marker.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

import orjson

MAX_DEPTH: Final = 64  # levels of a value shown before the rest is replaced by a marker
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def cut_marker(kind: str, size: int) -> str:
    return f"[… {kind} of {size} nested deeper than {MAX_DEPTH} levels, not shown]"


def json_text(value: Any, *, indent: bool = True) -> str:
    """`value` as JSON text: orjson when it can (depth up to its limit, no lone surrogates), else
    cut at MAX_DEPTH and written by the standard library, which keeps lone surrogates."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(_bounded(value, MAX_DEPTH), ensure_ascii=False, indent=2 if indent else None)


def _bounded(value: Any, depth: int) -> Any:
    if isinstance(value, dict):
        if depth == 0:
            return cut_marker("an object", len(value))
        return {str(key): _bounded(item, depth - 1) for key, item in value.items()}
    if isinstance(value, list):
        if depth == 0:
            return cut_marker("an array", len(value))
        return [_bounded(item, depth - 1) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # not JSON (a caller's own object): its plain text


def finite(value: Any) -> float | None:
    """A JSON number as JavaScript reads it, if that is finite (not a boolean, not beyond a double)."""
    if type(value) is float:
        return value if math.isfinite(value) else None
    if type(value) is int:
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def as_object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_text(value: Any) -> str:
    """A field that should hold a string: the string, else its JSON on one line ("" for absent)."""
    if isinstance(value, str):
        return value
    return "" if value is None else json_text(value, indent=False)


def without_lone_surrogates(text: str) -> str:
    """Each lone UTF-16 surrogate as U+FFFD, as a JavaScript TextEncoder (and so pi) writes it to a
    file: the text can then be encoded as UTF-8."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: rare, so looked for only now
        return without_lone_surrogates(text).encode("utf-8")
