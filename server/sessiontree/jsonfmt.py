"""JSON as pi writes it: `JSON.stringify` output, byte for byte.

orjson already writes compact JSON with non-ASCII characters unescaped and the
same control-character escapes as JavaScript. Numbers differ: JavaScript has no
integral floats (`1.0` prints as `1`) and its own rule for when to use an
exponent (`0.0000045` but `1e-7`, `100000000000000000000` but `1e+21`). Both
print the shortest digits that read back as the same double, so only the layout
of those digits has to be redone.

Strings may hold lone UTF-16 surrogates: JavaScript writes them as `\ud83d` escapes
(half of an emoji cut by `slice`). orjson refuses them both ways, so those rare
values take a slower path through the standard library, which keeps them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, Final

import orjson

_MAX_SAFE_INTEGER = 2**53 - 1  # beyond it, JSON.parse rounds integers to the nearest double


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


def _is_unsafe_integer(value: Any) -> bool:
    return type(value) is int and abs(value) > _MAX_SAFE_INTEGER


def _has_js_number(value: Any) -> bool:
    """A float, or an integer JavaScript would round: a number JavaScript spells differently.
    (A walk of the values, not a scan of the encoded text: strings, however long, cost nothing.)"""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(item.values())
        elif kind is list:
            pending.extend(item)
        elif kind is float or (kind is int and not -_MAX_SAFE_INTEGER <= item <= _MAX_SAFE_INTEGER):
            return True
    return False


def _as_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:  # JavaScript reads it as Infinity, which JSON.stringify writes as null
        return float("inf") if value > 0 else float("-inf")


def _with_js_numbers(value: Any) -> Any:
    if type(value) is float:
        return orjson.Fragment(js_number(value))
    if _is_unsafe_integer(value):
        return orjson.Fragment(js_number(_as_double(value)))
    if type(value) is dict:
        return {key: _with_js_numbers(item) for key, item in value.items()}
    if type(value) is list:
        return [_with_js_numbers(item) for item in value]
    return value


def dumps(value: Any) -> bytes:
    """Serialize like JavaScript's `JSON.stringify` (compact, unescaped non-ASCII, JS numbers)."""
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _dumps_slowly(value)
    if _has_js_number(value):
        data = orjson.dumps(_with_js_numbers(value))
    return data


def as_stored(value: Any) -> Any:
    """`value` as reading back its `dumps` gives it: what JavaScript's JSON.parse(JSON.stringify(...))
    gives (`1.0` becomes `1`, a too-large integer is rounded). Unchanged in the usual case."""
    return loads(dumps(value)) if _has_js_number(value) else value


class RawJson(Mapping[str, Any]):
    """A JSON object kept as the text it was read as: sent on as it is, decoded only if read here.

    Entries travel from the file to the wire this way without being decoded and encoded again.
    """

    __slots__ = ("_value", "text")

    def __init__(self, text: bytes) -> None:
        self.text = text  # valid UTF-8 JSON text of an object (see `raw_object`)
        self._value: dict[str, Any] | None = None

    @property
    def value(self) -> dict[str, Any]:
        if self._value is None:
            self._value = loads(self.text)
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __repr__(self) -> str:
        return f"RawJson({self.text[:60]!r}...)"


def raw_object(text: bytes) -> RawJson | dict[str, Any]:
    """`text` as a RawJson when it can go on the wire unchanged (valid UTF-8), else decoded."""
    if text.isascii():
        return RawJson(text)
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        value: dict[str, Any] = loads(text)  # U+FFFD for the broken bytes, as pi reads them
        return value
    return RawJson(text)


class JsonList(list[Any]):
    """A list that also holds its own JSON text (as `dumps_wire` writes it): sent as that text,
    not encoded again. Whoever makes one keeps the two in step."""

    __slots__ = ("wire",)

    def __init__(self, items: list[Any], wire: bytes) -> None:
        super().__init__(items)
        self.wire = wire


def _wire_default(value: Any) -> Any:
    if isinstance(value, RawJson):
        return orjson.Fragment(value.text)
    if isinstance(value, JsonList):
        return orjson.Fragment(value.wire)
    bases: tuple[type[Any], ...] = (dict, list, str, int)
    for kind in bases:  # other subclasses (passed through for JsonList): as their base
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps_wire(value: Any) -> bytes:
    """Serialize a protocol message: as fast as orjson allows, any string JavaScript could send."""
    try:
        return orjson.dumps(value, default=_wire_default, option=orjson.OPT_PASSTHROUGH_SUBCLASS)
    except orjson.JSONEncodeError:
        return _dumps_slowly(value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a Python str holds a surrogate only when it is lone


def _js_string(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _encode(value: Any) -> str:
    if value is None or value is True or value is False:
        return "null" if value is None else "true" if value else "false"
    if type(value) is str:
        return _js_string(value)
    if type(value) is float:
        return js_number(value)
    if type(value) is int:
        return js_number(_as_double(value)) if _is_unsafe_integer(value) else str(value)
    if type(value) is list:
        return "[" + ",".join(_encode(item) for item in value) + "]"
    if type(value) is dict:
        return "{" + ",".join(f"{_js_string(str(key))}:{_encode(item)}" for key, item in value.items()) + "}"
    if isinstance(value, RawJson):
        return value.text.decode()
    if isinstance(value, JsonList):
        return value.wire.decode()
    if isinstance(value, (dict, list, str, int)):  # a subclass: as its base type
        bases: tuple[type[Any], ...] = (bool, dict, list, str, int)
        return _encode(next(kind for kind in bases if isinstance(value, kind))(value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def _dumps_slowly(value: Any) -> bytes:
    """What orjson refuses (lone surrogates, integers beyond 64 bits), written as JavaScript would."""
    return _encode(value).encode()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


MAX_DEPTH: Final = 1024  # orjson's limit; deeper JSON is refused as malformed


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a line of a file; invalid UTF-8 becomes U+FFFD, as Node's `readFileSync(path, "utf8")` makes it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8", errors="replace")
        return _loads_slowly(text)


def loads_wire(data: bytes | bytearray | memoryview) -> Any:
    """Parse a protocol message: strict UTF-8, but lone surrogate escapes as JavaScript sends them."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _loads_slowly(bytes(data).decode("utf-8"))  # UnicodeDecodeError is a ValueError too


def _loads_slowly(text: str) -> Any:
    if "\\u" not in text:
        return orjson.loads(text)  # only the UTF-8 was broken, or it raises again
    try:  # a lone surrogate escape, which JavaScript writes and orjson refuses
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise orjson.JSONDecodeError(str(exc), text, 0) from None
    except RecursionError:  # orjson's own limit is 1,024 levels: hold the slow path to about the same
        raise orjson.JSONDecodeError(f"nested deeper than {MAX_DEPTH} levels", text, 0) from None


JSONDecodeError = orjson.JSONDecodeError
