"""The index sidecar: a session's index saved beside the daemon, so a reopen need not scan.

The JSONL file stays the only source of truth. A sidecar describes its first
`covered` bytes and is used only while the file still matches it: the same file
(device and inode), at least `covered` bytes long, the same bytes at the start,
just before `covered` (BLAKE2b of 64 KiB each) and in 32 blocks between them,
and, if the size is unchanged, the same modification time. Anything else
(another file, a rewrite, a truncation, a damaged or foreign sidecar) means a
full scan and a fresh sidecar. Bytes appended after `covered` are scanned as on
open. (What this cannot see: an edit in place that keeps every length and misses
every hashed block, followed by an append. Session files are append-only; no
writer pi knows of does that.)

Layout: `MAGIC`, the length of the metadata (4 bytes, little-endian), the
metadata as JSON, then the columns' bytes in the order the metadata lists them;
a CRC-32 of everything after the metadata is in the metadata.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import msgspec

from .. import jsonfmt
from ..file_warning import FileWarning
from .columns import Codes, SparseCodes
from .index import SessionIndex

MAGIC: Final = b"sessiontree-index\n"
FORMAT: Final = 1
SAMPLE: Final = 64 * 1024  # bytes hashed at each end of the covered region
SPREAD_BLOCKS, SPREAD_SIZE = 32, 4096  # and blocks hashed across it
# Warnings a scan of the file finds again; the others describe events (a torn line ended by an
# append) or what lies past the covered part (an unfinished last line), and are not kept.
SCAN_WARNINGS: Final = frozenset({"malformed", "duplicate-id", "label-unknown-target", "extra-header"})
_LENGTH: Final = struct.Struct("<I")
_ARRAYS: Final = ("parents", "offsets", "lengths", "anchor", "records")


class Snapshot:
    """What a sidecar restores: the index, and the session state a scan would have produced."""

    def __init__(
        self, index: SessionIndex, header: dict[str, Any], warnings: list[FileWarning], line_no: int, covered: int
    ):
        self.index = index
        self.header = header
        self.warnings = warnings
        self.line_no = line_no
        self.covered = covered


def sidecar_path(directory: Path, session_file: Path) -> Path:
    """One sidecar per session file path, named by a hash of the path."""
    digest = hashlib.blake2b(os.fsencode(session_file), digest_size=16).hexdigest()
    return directory / f"{digest}.idx"


# --------------------------------------------------------------------------- checking against the file


def _fingerprint(read: Callable[[int, int], bytes], covered: int) -> tuple[str, str, str]:
    """Hashes of the covered region's first and last 64 KiB and of 32 blocks of 4 KiB spread
    between them. An edit that changes a length shifts every later byte, so the tail changes."""
    head = read(0, min(SAMPLE, covered))
    start = max(0, covered - SAMPLE)
    tail = read(start, covered - start)
    spread = hashlib.blake2b()
    for block in range(SPREAD_BLOCKS):
        at = covered * block // SPREAD_BLOCKS
        spread.update(read(at, min(SPREAD_SIZE, covered - at)))  # never past `covered`
    return hashlib.blake2b(head).hexdigest(), hashlib.blake2b(tail).hexdigest(), spread.hexdigest()


def _matches(meta: dict[str, Any], stat: os.stat_result, read: Callable[[int, int], bytes]) -> bool:
    covered = meta["covered"]
    if [str(stat.st_dev), str(stat.st_ino)] != [meta["device"], meta["inode"]] or stat.st_size < covered:
        return False
    if stat.st_size == meta["size"] and str(stat.st_mtime_ns) != meta["mtimeNs"]:
        return False  # same length, written since: a rewrite in place
    same: bool = list(_fingerprint(read, covered)) == meta["fingerprint"]
    return same


# --------------------------------------------------------------------------- saving


def save(
    target: Path,
    index: SessionIndex,
    header: dict[str, Any],
    warnings: list[FileWarning],
    line_no: int,
    covered: int,
    stat: os.stat_result,
    read: Callable[[int, int], bytes],
) -> None:
    """Write the sidecar for the file's first `covered` bytes (all of them complete lines)."""
    blobs = [getattr(index, name).tobytes() for name in _ARRAYS]
    blobs += [index.kinds.codes.tobytes(), index.settings.positions.tobytes(), index.settings.coded.codes.tobytes()]
    ids, ids_codec = _strings(index.ids)
    stamps, stamps_codec = _strings(index.timestamps)
    blobs += [ids, stamps]
    body = b"".join(blobs)
    meta = {
        "format": FORMAT,
        "covered": covered,
        "size": stat.st_size,
        "mtimeNs": str(stat.st_mtime_ns),  # strings: JSON numbers lose digits past 2**53
        "device": str(stat.st_dev),
        "inode": str(stat.st_ino),
        "fingerprint": list(_fingerprint(read, covered)),
        "count": len(index),
        "lineNo": line_no,
        "header": header,
        "warnings": [_warning_json(w) for w in warnings if w.kind in SCAN_WARNINGS],
        "anchorsHold": index.anchors_hold,
        "rawName": index.raw_name,
        "labels": [[target, label, stamp] for target, (label, stamp) in index.labels.items()],
        "orphans": [[seq, parent] for seq, parent in index.orphans.items()],
        "kinds": [list(kind) for kind in index.kinds.values[1:]],
        "settings": [_tagged(value) for value in index.settings.coded.values[1:]],
        "codecs": [ids_codec, stamps_codec],
        "sizes": [len(blob) for blob in blobs],
        "crc": zlib.crc32(body),
    }
    encoded = jsonfmt.dumps(meta)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # ids, labels, names: the user's own
    temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
        out.write(MAGIC + _LENGTH.pack(len(encoded)) + encoded + body)
    os.replace(temporary, target)  # readers see the old sidecar or the new one, never half of one


def _strings(values: list[Any]) -> tuple[bytes, str]:
    """Strings one per line when they allow it (made back with one split), else a JSON array."""
    if all(type(value) is str and "\n" not in value for value in values):
        return "\n".join(values).encode("utf-8", "surrogatepass"), "lines"
    return jsonfmt.dumps(values), "json"


def _tagged(value: Any) -> Any:
    """JSON for a setting: tuples and UNSET (a missing field) are kept apart from plain JSON."""
    if value is msgspec.UNSET:
        return {"unset": True}
    if type(value) is tuple:
        return {"tuple": [_tagged(item) for item in value]}
    return {"value": value}


def _untagged(value: dict[str, Any]) -> Any:
    if "unset" in value:
        return msgspec.UNSET
    if "tuple" in value:
        return tuple(_untagged(item) for item in value["tuple"])
    return value["value"]


# --------------------------------------------------------------------------- loading


class _Damaged(Exception):
    """The sidecar is not one this version wrote whole."""


def load(source: Path, stat: os.stat_result, read: Callable[[int, int], bytes]) -> Snapshot | None:
    """The snapshot in `source`, or None if it is missing, damaged, or does not match the file."""
    try:
        data = source.read_bytes()
    except OSError:
        return None
    try:
        meta, body = _split(data)
        if not _matches(meta, stat, read):
            return None
        return _restore(meta, body)
    except Exception:  # a sidecar is a cache: whatever is wrong with it, the file is scanned instead
        return None


def _split(data: bytes) -> tuple[dict[str, Any], memoryview]:
    if not data.startswith(MAGIC):
        raise _Damaged
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    meta = jsonfmt.loads(data[start : start + length])
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _Damaged
    body = memoryview(data)[start + length :]
    if len(body) != sum(meta["sizes"]) or zlib.crc32(body) != meta["crc"]:
        raise _Damaged
    return meta, body


def _restore(meta: dict[str, Any], body: memoryview) -> Snapshot:
    count = meta["count"]
    blobs = _cut(body, meta["sizes"])
    index = SessionIndex()
    for name, blob in zip(_ARRAYS, blobs[: len(_ARRAYS)], strict=True):  # the code columns follow
        setattr(index, name, _array(getattr(index, name).typecode, blob))
    index.kinds = Codes([None, *(_kind(kind) for kind in meta["kinds"])], _array("i", blobs[5]))
    coded = Codes([None, *(_untagged(value) for value in meta["settings"])], _array("i", blobs[7]))
    index.settings = SparseCodes(_array("i", blobs[6]), coded)
    ids_codec, stamps_codec = meta["codecs"]
    index.defer(
        ids=_strings_later(blobs[8], ids_codec, count), timestamps=_strings_later(blobs[9], stamps_codec, count)
    )
    index.anchors_hold = meta["anchorsHold"]
    index.raw_name = meta["rawName"]
    index.labels = {target: (label, stamp) for target, label, stamp in meta["labels"]}
    index.orphans = {seq: parent for seq, parent in meta["orphans"]}
    _check_columns(index, count)
    index.restore_waiting()
    warnings = [_warning(w) for w in meta["warnings"]]
    return Snapshot(index, meta["header"], warnings, meta["lineNo"], meta["covered"])


def _warning_json(warning: FileWarning) -> dict[str, Any]:
    """A warning as the sidecar keeps it: the wire's keys, fields that are None left out (the
    sidecar's own codec, so that a change of the wire's leaves the files written before readable)."""
    fields = {
        "kind": warning.kind,
        "message": warning.message,
        "line": warning.line,
        "entryId": warning.entry_id,
        "path": warning.path,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _warning(value: Any) -> FileWarning:
    if type(value) is not dict:
        raise _Damaged
    kind, message, line = value.get("kind"), value.get("message"), value.get("line")
    entry_id, path = value.get("entryId"), value.get("path")
    if type(kind) is not str or type(message) is not str or not (line is None or type(line) is int):
        raise _Damaged
    if not all(text is None or type(text) is str for text in (entry_id, path)):
        raise _Damaged
    return FileWarning(kind, message, line, entry_id, path)


def _kind(kind: Any) -> tuple[str, str | None]:
    """A (type, role) pair of the kinds table."""
    if type(kind) is not list or len(kind) != 2 or type(kind[0]) is not str or not isinstance(kind[1], (str, type(None))):
        raise _Damaged
    return kind[0], kind[1]


def _check_columns(index: SessionIndex, count: int) -> None:
    """The columns agree in length. (Their contents are covered by the checksum; the sidecar
    directory is the user's own, 0700: whoever can write there can write the session file too.)"""
    columns = (index.parents, index.offsets, index.lengths, index.anchor, index.kinds.codes)
    if any(len(column) != count for column in columns) or len(index.records) % 3:
        raise _Damaged
    if len(index.settings.positions) != len(index.settings.coded.codes) or any(seq >= count for seq in index.orphans):
        raise _Damaged


def _cut(body: memoryview, sizes: list[int]) -> list[memoryview]:
    blobs, at = [], 0
    for size in sizes:
        blobs.append(body[at : at + size])
        at += size
    return blobs


def _array(typecode: str, blob: memoryview) -> array[int]:
    column = array(typecode)
    column.frombytes(blob)
    return column


def _strings_later(blob: memoryview, codec: str, count: int) -> Callable[[], list[Any]]:
    """Check the strings now (cheaply), make the list when it is first read."""
    raw = bytes(blob)
    if codec == "lines":
        if (raw.count(b"\n") + 1 if count else len(raw)) != count:
            raise _Damaged
        return lambda: raw.decode("utf-8", "surrogatepass").split("\n") if count else []
    values = jsonfmt.loads(raw)
    if not isinstance(values, list) or len(values) != count:
        raise _Damaged
    return lambda: values
