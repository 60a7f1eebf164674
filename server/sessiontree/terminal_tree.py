"""`sessiontree tree` for a person at a terminal: the folded rows of `session/treeView`, drawn to fit.

The rows are the editors' (runs of single-child entries folded into one row, every branch point,
branch start, label, summary and the leaf a row of its own, `indent` = branch points above). Here
they get branch glyphs, and every line is cut to the terminal's width. A session that branches
again and again off its latest branch is a ladder hundreds of branch points deep, whose columns are
almost all blank; when the indentation would not fit, the blank columns are left out and each row
says its depth instead (`[946]`), so the text stays in view. Nothing here recurses or is per level:
a row costs the columns it draws.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from typing import Final

from .tree_nodes import TreeRow

_FIRST, _LAST, _PIPE, _BLANK = "├─ ", "└─ ", "│  ", "   "
_MAX_BARS: Final = 12  # vertical bars drawn at most, in the compact layout
# A preview must not move the cursor or colour the terminal; a lone surrogate (kept from JavaScript) cannot be printed.
# Characters one column wide: ASCII, Latin and the punctuation, arrows and box drawing the tree uses.
_NARROW = re.compile("[\x20-\x7e\u00a0-\u02ff\u2000-\u25ff]*")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class Item:
    """One line of the view: a row, or the rows hidden below `--depth` (`hidden` entries in `rows`)."""

    __slots__ = ("hidden", "indent", "row", "rows", "starts")

    def __init__(self, indent: int, row: TreeRow | None = None, hidden: int = 0, rows: int = 0) -> None:
        self.indent, self.row, self.hidden, self.rows = indent, row, hidden, rows
        self.starts = False  # the first line of a branch (its parent is a branch point)

    @property
    def ends(self) -> bool:
        """Nothing follows it in its branch: an entry without children, or hidden rows."""
        return self.row is None or (self.row.run is None and self.row.children == 0)


def entries_in(rows: Iterable[TreeRow]) -> int:
    return sum(row.run.count if row.run is not None else 1 for row in rows)


def items_of(rows: Sequence[TreeRow], max_depth: int | None = None) -> list[Item]:
    """The rows as lines, those deeper than `max_depth` replaced by one line per hidden stretch."""
    items: list[Item] = []
    for row in rows:
        if max_depth is not None and row.indent > max_depth:
            if items and items[-1].row is None:
                items[-1].hidden += entries_in([row])
                items[-1].rows += 1
            else:
                items.append(Item(max_depth + 1, hidden=entries_in([row]), rows=1))
        else:
            items.append(Item(row.indent, row))
    _mark_starts(items)
    return items


def _mark_starts(items: list[Item]) -> None:
    """A line starts a branch when it steps in from its branch point, comes back out of a deeper
    branch, or follows a branch that ended at its own depth (rows are depth first); at depth 0,
    such a line is another root."""
    for before, item in pairwise(items):
        item.starts = before.indent != item.indent or before.ends


def _later_siblings(items: list[Item]) -> list[bool]:
    """For each line that starts a branch: does another branch of the same branch point follow?"""
    later = [False] * len(items)
    pending: list[bool] = []  # by depth: a branch start seen below, with no shallower line since
    for i in range(len(items) - 1, -1, -1):
        depth = items[i].indent
        del pending[depth + 1 :]
        pending.extend([False] * (depth + 1 - len(pending)))
        if items[i].starts:
            later[i] = pending[depth]
            pending[depth] = True
    return later


def lines(items: list[Item], width: int | None, target: str | None = None) -> Iterator[str]:
    """The lines, each cut to `width` columns (None: uncut). `target` is an entry named on the
    command line, marked where it is (the leaf is always marked)."""
    later = _later_siblings(items)
    deepest = max((item.indent for item in items), default=0)
    compact = width is not None and deepest * len(_BLANK) > max(12, width // 3)
    bars: list[bool] = []  # by depth - 1: does the branch at that depth have siblings below?
    barred: list[int] = []  # the depths - 1 where `bars` is true, ascending: the compact layout draws only these
    for i, item in enumerate(items):
        depth = item.indent
        del bars[depth:]
        bars.extend([False] * (depth - len(bars)))
        while barred and barred[-1] >= depth:
            barred.pop()
        glyph = ""
        if item.starts and depth:
            bars[depth - 1] = later[i]
            if barred and barred[-1] == depth - 1:
                barred.pop()
            if later[i]:
                barred.append(depth - 1)
            glyph = _FIRST if later[i] else _LAST
        elif depth:
            glyph = _PIPE if bars[depth - 1] else _BLANK
        if compact:
            above = len(barred) - (1 if barred and barred[-1] == depth - 1 else 0)  # bars left of this row's own
            drawn = _PIPE * above if above <= _MAX_BARS else "… " + _PIPE * _MAX_BARS
            prefix = drawn + (glyph if glyph != _BLANK else "") + (f"[{depth}] " if depth else "")
        else:
            prefix = "".join(_PIPE if bar else _BLANK for bar in bars[: depth - 1]) + glyph
        text, marks = _describe(item, target)
        on_path = item.row is not None and item.row.on_leaf_path
        line = prefix + ("• " if on_path else "  ") + text
        if width is not None:  # the marks stay in view: the preview gives way
            line = cut(line, max(width - len(marks), width // 2))
        yield cut(line + marks, width)


def _describe(item: Item, target: str | None) -> tuple[str, str]:
    """The line's text, and the marks at its end (the leaf, the entry asked for)."""
    row = item.row
    if row is None:
        return f"… {item.hidden:,} entries in {item.rows:,} rows deeper (--depth)", ""
    kind = row.role or row.type
    label = f" [{row.label}]" if row.label else ""
    if row.run is not None:
        head = f"{row.id}…{row.run.last_id} {row.run.count:,} entries, from {kind}"
    else:
        head = f"{row.id} {kind}"
        if row.children is not None and row.children > 1:
            label += f" ({row.children} branches)"
    preview = f": {clean(row.preview)}" if row.preview else ""
    marks = "  ← leaf" if row.leaf else ""
    if target is not None and row.id == target and not row.leaf:
        marks += "  ← " + target
    return f"{head}{label}{preview}", marks


def clean(text: str) -> str:
    """One line of text with no control characters: whitespace runs become one space."""
    return _UNSAFE.sub("?", " ".join(text.split()))


def cut(text: str, width: int | None) -> str:
    """`text` in at most `width` terminal columns (wide characters count two), "…" where cut."""
    if width is None or len(text) <= width // 2:
        return text
    if _NARROW.fullmatch(text):  # the usual line: one column a character
        return text if len(text) <= width else text[: width - 1] + "…"
    used, fits = 0, len(text)
    for at, char in enumerate(text):
        used += _columns(char)
        if used > width - 1 and fits > at:
            fits = at  # the text before this character leaves a column for the "…"
        if used > width:
            return text[:fits] + "…"
    return text


def _columns(char: str) -> int:
    if char.isascii():
        return 1
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _span(text: str) -> int:
    return sum(_columns(char) for char in text)
