"""JavaScript's view of strings and objects, where pi's arithmetic depends on it.

pi measures text with `String.prototype.length` (UTF-16 code units, so an emoji counts
2), cuts it with `slice` (code units too), sorts with `Array.prototype.sort` (code unit
order, not code point order) and writes values with `JSON.stringify`, which lists an
object's integer-like keys first, ascending, whatever order they were parsed in.
"""

from __future__ import annotations

from typing import Any, Final

from . import jsonfmt

_MAX_ARRAY_INDEX: Final = 2**32 - 2


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: unlike Python's, empty objects and arrays are true."""
    if isinstance(value, dict | list):
        return True
    return bool(value) and value == value  # NaN is false


def js_len(text: str) -> int:
    """`text.length`: UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(text: str, end: int) -> str:
    """`text.slice(0, end)` in code units; a cut inside a surrogate pair leaves half of it, as in
    JavaScript (jsonfmt writes a lone surrogate as a `\\udXXX` escape, as JSON.stringify does)."""
    if text.isascii():
        return text[:end]
    units = text.encode("utf-16-le", "surrogatepass")[: 2 * end]
    return units.decode("utf-16-le", "surrogatepass")


def js_sort_key(text: str) -> bytes:
    """Sort key giving `Array.prototype.sort`'s default order for strings (code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) <= _MAX_ARRAY_INDEX


def js_keys(obj: dict[str, Any]) -> list[str]:
    """`Object.keys` order: array-index keys ascending, then the others in insertion order."""
    indices = sorted((key for key in obj if _is_array_index(key)), key=int)
    if not indices:
        return list(obj)
    return indices + [key for key in obj if not _is_array_index(key)]


def _js_ordered(value: Any) -> Any:
    if type(value) is dict:
        return {key: _js_ordered(value[key]) for key in js_keys(value)}
    if type(value) is list:
        return [_js_ordered(item) for item in value]
    return value


def js_stringify(value: Any) -> str:
    """`JSON.stringify(value)` for JSON data (key order, numbers and escapes as JavaScript's)."""
    return jsonfmt.dumps(_js_ordered(value)).decode()
