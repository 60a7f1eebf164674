"""A block of lines as index columns, packed for a scan worker to hand over to the daemon.

A scan worker (`scan_worker.py`) decodes a part of a big file in a process of its own and sends
what `SessionIndex.add_coded` needs. Most of it travels as a few large objects, not millions of
small ones, so that unpacking costs the daemon little: the ids, parents and timestamps as one
string each (split on a separator none of them holds; a plain list when one does), the kinds and
settings as small tables with a code per entry, the offsets and lengths as arrays.
"""

from __future__ import annotations

import pickle
from array import array
from typing import Any, NamedTuple

_SEP = "\n"


class BlockColumns(NamedTuple):
    """Consecutive whole lines of one file, every one an entry in pi's usual shape."""

    offset: int  # where the first line starts in the file
    end: int  # just after the last line's line end
    ids: list[str]
    parents: list[str | None]
    timestamps: list[Any]
    offsets: array[int]
    lengths: array[int]
    kinds: list[tuple[str, str | None]]  # the distinct (type, role) pairs
    kind_codes: array[int]  # per entry, its pair's position in `kinds`
    setting_at: array[int]  # positions (among these entries) of the entries that have a setting
    settings: list[Any]  # the distinct settings, or one per position when one is unhashable
    setting_codes: array[int] | None  # per position, its setting's place in `settings`; None: in order


def pack(
    ids: list[str],
    parents: list[str | None],
    kinds: list[tuple[str, str | None]],
    timestamps: list[Any],
    offsets: list[int],
    lengths: list[int],
    settings: list[tuple[int, Any]],
) -> bytes:
    """The columns of `skeleton_columns` (and the lines' offsets and lengths) as one frame."""
    kind_table: dict[tuple[str, str | None], int] = {}
    kind_codes = array("i", [kind_table.setdefault(kind, len(kind_table)) for kind in kinds])
    values = [value for _, value in settings]
    try:
        setting_table: dict[Any, int] = {}
        setting_codes: array[int] | None = array("i", [setting_table.setdefault(value, len(setting_table)) for value in values])
        distinct: list[Any] = list(setting_table)
    except TypeError:  # an unhashable setting (odd files only): each as it is
        setting_codes, distinct = None, values
    roots = [at for at, parent in enumerate(parents) if parent is None] if None in parents else []
    columns = (
        offsets[0],
        offsets[-1] + lengths[-1] + 1,
        _strings(ids),
        _strings(parents if not roots else [parent or "" for parent in parents]),
        roots,
        _strings(timestamps),
        array("q", offsets),
        array("q", lengths),
        list(kind_table),
        kind_codes,
        array("i", [at for at, _ in settings]),
        distinct,
        setting_codes,
    )
    return pickle.dumps(columns, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(frame: bytes) -> BlockColumns:
    """The columns `pack` packed; the frame comes from our own worker, over a pipe of our own."""
    (offset, end, ids, parents, roots, stamps, offsets, lengths, kinds, kind_codes, setting_at, settings, setting_codes) = pickle.loads(frame)
    parent_ids: list[str | None] = _split(parents)
    for at in roots:
        parent_ids[at] = None
    return BlockColumns(offset, end, _split(ids), parent_ids, _split(stamps), offsets, lengths, kinds, kind_codes, setting_at, settings, setting_codes)


def _strings(values: list[Any]) -> str | list[Any]:
    """One string when every value is a string without the separator, else the values as they are."""
    try:
        joined = _SEP.join(values)
    except TypeError:  # a value that is not a string
        return values
    return joined if joined.count(_SEP) == len(values) - 1 else values


def _split(packed: str | list[Any]) -> list[Any]:
    return packed.split(_SEP) if isinstance(packed, str) else packed
