"""Columns of the session index for values that repeat, stored as small integer codes."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec


class Codes:
    """Values that repeat (entry types, roles, models): one small table and a code per entry.
    Code 0 is None. Unhashable values (only in odd files) get a code each."""

    __slots__ = ("_typed", "codes", "plain", "values")

    def __init__(self, values: list[Any] | None = None, codes: array[int] | None = None) -> None:
        self.values: list[Any] = [None] if values is None else values
        self.codes = array("i") if codes is None else codes
        # Strings and tuples of strings are looked up as they are (the common case, fast); other
        # values by a key that keeps 1, 1.0 and True apart, which Python finds equal and JSON not.
        self.plain: dict[Any, int] = {None: 0}
        self._typed: dict[Any, int] = {}
        for code, value in enumerate(self.values):
            self._remember(value, code)

    def code_of(self, value: Any) -> int:
        """The code of a value, made if new (`plain.get` answers the usual ones faster)."""
        try:
            return self.plain[value]
        except (KeyError, TypeError):
            return self._code_slowly(value)

    def codes_of(self, values: list[Any]) -> list[int]:
        """`code_of` for many values."""
        plain, code = self.plain, self.code_of
        try:
            return [plain.get(value) or code(value) for value in values]
        except TypeError:  # an unhashable value (odd files only): one at a time
            return [code(value) for value in values]

    def _code_slowly(self, value: Any) -> int:
        try:
            return self._typed[_key(value)]
        except KeyError:
            pass
        except TypeError:  # unhashable
            self.values.append(value)
            return len(self.values) - 1
        self.values.append(value)
        code = len(self.values) - 1
        self._remember(value, code)
        return code

    def _remember(self, value: Any, code: int) -> None:
        try:
            if _plain(value):
                self.plain.setdefault(value, code)
            else:
                self._typed.setdefault(_key(value), code)
        except TypeError:
            pass

    def __getitem__(self, seq: int) -> Any:
        return self.values[self.codes[seq]]


def _plain(value: Any) -> bool:
    """A value only equal to values of its own kind: a string, or a tuple of strings, None and UNSET."""
    if type(value) is str:
        return True
    return type(value) is tuple and all(type(item) is str or item is None or item is msgspec.UNSET for item in value)


def _key(value: Any) -> Any:
    """A key that tells 1, 1.0 and True apart (equal in Python, not in JSON), also inside tuples."""
    if type(value) is tuple:
        return (tuple, *((type(item), item) for item in value))
    return (type(value), value)


class SparseCodes:
    """Coded values for a few positions (seqs, added in increasing order); None elsewhere."""

    __slots__ = ("coded", "positions")

    def __init__(self, positions: array[int] | None = None, coded: Codes | None = None) -> None:
        self.positions = array("i") if positions is None else positions
        self.coded = Codes() if coded is None else coded

    def put_all(self, items: list[tuple[int, Any]]) -> None:
        """`put` for many (position, value) pairs, positions increasing."""
        self.put_coded([position for position, _ in items], self.coded.codes_of([value for _, value in items]))

    def put_coded(self, positions: Sequence[int], codes: Sequence[int]) -> None:
        """Values already coded in `coded`, at positions increasing (after those held)."""
        self.positions.extend(positions)
        self.coded.codes.extend(codes)

    def get(self, position: int) -> Any:
        at = bisect_left(self.positions, position)
        if at < len(self.positions) and self.positions[at] == position:
            return self.coded[at]
        return None

    def between(self, first: int, last: int) -> Iterator[tuple[int, int]]:
        """(position, code) for the positions from `first` to `last`, both included."""
        start, end = bisect_left(self.positions, first), bisect_right(self.positions, last)
        return zip(self.positions[start:end], self.coded.codes[start:end], strict=True)
