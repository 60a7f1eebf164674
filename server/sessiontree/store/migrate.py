"""Migration of v1 and v2 session files to v3, as pi does it, but safely.

pi rewrites the file in place and drops lines it cannot parse. Here the new
content goes to a temporary file that is synced and renamed over the original,
the original bytes stay as `<file>.v<N>.bak`, and malformed lines are kept.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from .. import jsonfmt
from ..entries import new_entry_id
from ..errors import FileReplaced
from ..file_warning import FileWarning
from . import confined
from .lines import BOM
from .storage import Storage

CURRENT_VERSION = 3
_HEADER_PROBE = 64 * 1024


def file_version(storage: Storage) -> int | None:
    """The version of the file's header (pi: absent means 1), or None when there is no header."""
    probe = storage.read(0, _HEADER_PROBE)
    lines = probe.split(b"\n")
    first = next((line for line in lines if line.strip()), b"")
    if first.startswith(BOM):
        first = first[len(BOM) :]
    try:
        header = jsonfmt.loads(first)
    except jsonfmt.JSONDecodeError:
        return None
    if not isinstance(header, dict) or header.get("type") != "session":
        return None
    version = header.get("version")
    return version if isinstance(version, int) else 1


def migrate_file(root: Path, path: Path, storage: Storage, version: int, sync: bool = True) -> FileWarning:
    """Rewrite a v1/v2 file as v3, atomically, keeping the original as `.v<N>.bak`.

    The caller holds the file's lock, so two daemons never migrate it at once (the second finds
    the file replaced when it gets the lock, and opens the new one). Every name is made with
    O_EXCL in the directory reached without following links: nothing planted there is followed."""
    original = storage.read(0, storage.size())
    migrated = migrate_bytes(original, version)
    with confined.directory(root, path.parent) as directory:
        made: list[str] = []
        try:
            temporary = _write_new(directory, f".{path.name}.migrating", migrated, made)
            # A copy, not a second name: while the original had two names another daemon
            # opening it would take it for a hard link out of the root.
            backup = _write_new(directory, f"{path.name}.v{version}.bak", original, made)
            if storage.size() != len(original) or storage.replaced():  # written meanwhile without a lock
                raise FileReplaced("the file changed while it was being migrated; open it again", path=str(path))
            directory.replace(temporary, path.name)
        except BaseException:
            for name in made:
                with contextlib.suppress(OSError):
                    directory.unlink(name)
            raise
        if sync:
            directory.sync()
    return FileWarning(
        "migrated",
        f"migrated from version {version} to {CURRENT_VERSION}; the original is kept at {path.parent / backup}",
        path=str(path.parent / backup),
    )


def _write_new(directory: confined.Directory, stem: str, data: bytes, made: list[str]) -> str:
    """`data` in a new file named `stem` (or `stem.1`, …), synced; its name is added to `made`."""
    name, fd = directory.create_unique(stem)
    made.append(name)
    with open(fd, "wb", closefd=True) as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return name


class _Line:
    """One line of the file: its bytes, and its object when it parsed."""

    __slots__ = ("changed", "raw", "value")

    def __init__(self, raw: bytes, value: Any) -> None:
        self.raw = raw
        self.value = value
        self.changed = False


def migrate_bytes(data: bytes, version: int) -> bytes:
    """pi's migrateV1ToV2 and migrateV2ToV3 over the parsed lines; other lines stay as they are."""
    lines = _parse_lines(data)
    parsed = [line for line in lines if isinstance(line.value, dict)]
    if version < 2:
        _v1_to_v2(parsed)
    _v2_to_v3(parsed)
    out = bytearray()
    for index, line in enumerate(lines):
        out += jsonfmt.dumps(line.value) if line.changed else line.raw
        if index < len(lines) - 1 or data.endswith(b"\n"):
            out += b"\n"
    return bytes(out)


def _parse_lines(data: bytes) -> list[_Line]:
    raw_lines = data.split(b"\n")
    if data.endswith(b"\n"):
        raw_lines.pop()
    lines = []
    for number, raw in enumerate(raw_lines):
        text = raw[len(BOM) :] if number == 0 and raw.startswith(BOM) else raw
        try:
            value = jsonfmt.loads(text) if text.strip() else None
        except jsonfmt.JSONDecodeError:
            value = None
        lines.append(_Line(raw, value))
    return lines


def _v1_to_v2(parsed: list[_Line]) -> None:
    ids: set[str] = set()
    previous: str | None = None
    entries = [line.value for line in parsed]
    for line in parsed:
        entry = line.value
        line.changed = True
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry["id"] = new_entry_id(ids)
        ids.add(entry["id"])
        entry["parentId"] = previous
        previous = entry["id"]
        index = entry.get("firstKeptEntryIndex")
        if entry.get("type") == "compaction" and isinstance(index, int | float) and not isinstance(index, bool):
            # pi indexes the parsed lines, the header being index 0
            target = entries[int(index)] if float(index).is_integer() and 0 <= index < len(entries) else None
            if target is not None and target.get("type") != "session":
                entry["firstKeptEntryId"] = target.get("id")
            del entry["firstKeptEntryIndex"]


def _v2_to_v3(parsed: list[_Line]) -> None:
    for line in parsed:
        entry = line.value
        if entry.get("type") == "session":
            entry["version"] = CURRENT_VERSION
            line.changed = True
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
                line.changed = True
