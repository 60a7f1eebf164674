"""Session summaries for `session/list`, as pi's `buildSessionInfo` computes them.

Each file is streamed in bounded chunks and each line decoded only as far as the
summary needs: message contents are kept as raw JSON and only the first user
message's content is ever decoded.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from . import jsonfmt
from .entries import iso_to_ms, js_trim
from .errors import FileNotFound, NotASessionFile, PathOutsideRoot, StorageError
from .session_summary import SessionSummary
from .store import FileStorage, confined
from .store.lines import BOM, LineReader

_LIST_CHUNK = 1024 * 1024
_EXHAUSTED = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS)


class _Message(msgspec.Struct, gc=False):
    role: Any = None
    timestamp: Any = None
    content: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class _LineWithMessage(msgspec.Struct, gc=False):
    type: Any = None
    timestamp: Any = None
    name: Any = None
    message: _Message | None = None


_decode_line = msgspec.json.Decoder(_LineWithMessage).decode


def _generic(line: bytes) -> _LineWithMessage | None:
    """The slow path: decode the whole line leniently, keep the fields a summary needs."""
    try:
        fields = jsonfmt.loads(line)
    except jsonfmt.JSONDecodeError:
        return None
    if not isinstance(fields, dict):
        return None
    entry = _LineWithMessage(fields.get("type"), fields.get("timestamp"), fields.get("name"))
    message = fields.get("message")
    if isinstance(message, dict):
        content = message.get("content", msgspec.UNSET)
        raw = msgspec.UNSET if content is msgspec.UNSET else msgspec.Raw(jsonfmt.dumps_wire(content))
        entry.message = _Message(message.get("role"), message.get("timestamp"), raw)
    return entry


def _text_of(raw_content: msgspec.Raw) -> str:
    """pi's extractTextContent: a string, or the text blocks joined by spaces."""
    content = jsonfmt.loads(bytes(raw_content))
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and "text" in b)


def _iso(ms: float | None) -> str | None:
    if ms is None:
        return None
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Summary:
    """Accumulates pi's session info over the lines of one file (from a state kept elsewhere, for
    a store that keeps it up to date line by line)."""

    def __init__(
        self,
        header: dict[str, Any],
        message_count: int = 0,
        first_message: str = "",
        name: str | None = None,
        last_activity: float | None = None,
    ) -> None:
        self.header = header
        self.message_count = message_count
        self.first_message = first_message
        self.name = name
        self.last_activity = last_activity

    def add(self, line: bytes) -> None:
        entry: _LineWithMessage | None
        try:
            entry = _decode_line(line)
        except (msgspec.MsgspecError, RecursionError):  # odd field types, broken UTF-8, not JSON, deep nesting
            entry = _generic(line)
        if entry is None:
            return
        if entry.type == "session_info":
            self.name = (js_trim(entry.name) or None) if isinstance(entry.name, str) else None
        if entry.type != "message":
            return
        self.message_count += 1
        message = entry.message
        if not isinstance(message, _Message) or message.content is msgspec.UNSET:
            return
        if not isinstance(message.role, str) or message.role not in ("user", "assistant"):
            return
        self._note_activity(message, entry.timestamp)
        if not self.first_message and message.role == "user":
            self.first_message = _text_of(message.content)

    def _note_activity(self, message: _Message, entry_timestamp: Any) -> None:
        stamp = message.timestamp
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            moment: float | None = stamp
        else:
            moment = iso_to_ms(entry_timestamp)
        if moment is not None:
            self.last_activity = max(self.last_activity or 0, moment)

    def result(self, path: Path, mtime_ms: float) -> SessionSummary:
        header = self.header
        created_ms = iso_to_ms(header.get("timestamp"))
        if self.last_activity:
            modified_ms: float = self.last_activity
        else:
            modified_ms = created_ms if created_ms is not None else mtime_ms
        parent = header.get("parentSession")
        cwd = header.get("cwd")
        return SessionSummary(
            path=str(path),
            id=header["id"],
            cwd=cwd if isinstance(cwd, str) else "",
            created=_iso(created_ms) or "",
            modified=_iso(modified_ms) or "",
            message_count=self.message_count,
            first_message=self.first_message or "(no messages)",
            name=self.name,
            parent_session=parent if isinstance(parent, str) else None,
        )


def summarize(root: Path, path: Path) -> SessionSummary | None:
    """The summary of one session file, or None when it is not one the daemon would open."""
    try:
        fd = confined.open_file(root, path, os.O_RDONLY)
    except (PathOutsideRoot, NotASessionFile, FileNotFound):  # a link, a FIFO, gone: not served
        return None
    except OSError as exc:
        _raise_if_exhausted(path, exc)
        return None
    storage = FileStorage(path, writable=False, fd=fd)
    try:
        reader = LineReader(storage, 0, storage.size(), chunk=_LIST_CHUNK)
        summary: Summary | None = None
        for offset, line in reader:
            if summary is None:
                summary = _header(line[len(BOM) :] if offset == 0 and line.startswith(BOM) else line)
                if summary is None:
                    return None
            else:
                summary.add(line)
        if summary is None:
            return None
        return summary.result(path, storage.stat().st_mtime * 1000)
    except OSError as exc:
        _raise_if_exhausted(path, exc)
        return None
    finally:
        storage.close()


def _raise_if_exhausted(path: Path, exc: OSError) -> None:
    """Out of descriptors or memory is the daemon's trouble, not the file's: an error, not a gap."""
    if exc.errno in _EXHAUSTED:
        raise StorageError(f"could not read {path}: {exc.strerror or exc}", path=str(path)) from None


def _header(line: bytes) -> Summary | None:
    try:
        header = jsonfmt.loads(line)
    except jsonfmt.JSONDecodeError:
        return None
    if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str):
        return Summary(header)
    return None


def subdirectories(directory: Path) -> list[str]:
    """The names of the real directories in `directory`: symlinked ones are not followed."""
    return sorted(entry.name for entry in _scan(directory) if entry.is_dir(follow_symlinks=False))


MAX_NESTED_DEPTH = 4  # folders below a cwd's folder searched for sessions (agents keep sub-agents' in <parent>/<run>/)


def with_nested(root: Path, directories: Iterable[Path]) -> list[Path]:
    """`directories`, each followed by the real folders below it to MAX_NESTED_DEPTH, where agents
    keep the sessions of sub-agents. Dot folders (an `.archive`, the root's `.trash`) are not
    entered, nor are symlinked ones."""
    found: list[Path] = []
    for directory in directories:
        found.append(directory)
        if not directory.name.startswith("."):
            found.extend(_nested(root, directory, MAX_NESTED_DEPTH))
    return found


def _nested(root: Path, directory: Path, depth: int) -> list[Path]:
    if depth == 0:
        return []
    try:
        with confined.directory(root, directory) as folder:
            names = sorted(e.name for e in _scan(folder.fd) if not e.name.startswith(".") and _is_dir(e))
    except (PathOutsideRoot, FileNotFound):
        return []
    except OSError as exc:
        _raise_if_exhausted(directory, exc)
        return []
    found: list[Path] = []
    for name in names:
        found.append(directory / name)
        found.extend(_nested(root, directory / name, depth - 1))
    return found


def count_children(summaries: list[SessionSummary]) -> None:
    """Set each session's `children`: the listed sessions whose header names it as `parentSession`
    (by its path, as pi's forks do, or by its id)."""
    counts: dict[str, int] = {}
    for summary in summaries:
        if summary.parent_session is not None:
            counts[summary.parent_session] = counts.get(summary.parent_session, 0) + 1
    for summary in summaries:
        found = counts.get(summary.path, 0) + (counts.get(summary.id, 0) if summary.id != summary.path else 0)
        summary.children = found or None


def session_files(root: Path, directories: Iterable[Path]) -> list[Path]:
    """The `.jsonl` regular files in `directories` (below `root`, reached without following links)."""
    files: list[Path] = []
    for directory in directories:
        try:
            with confined.directory(root, directory) as folder:
                names = sorted(e.name for e in _scan(folder.fd) if e.name.endswith(".jsonl") and _is_file(e))
        except (PathOutsideRoot, FileNotFound):
            continue
        except OSError as exc:
            _raise_if_exhausted(directory, exc)
            continue
        files.extend(directory / name for name in names)
    return files


def _scan(directory: Path | int) -> list[os.DirEntry[Any]]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError as exc:
        _raise_if_exhausted(Path(str(directory)), exc)
        return []


def _is_dir(entry: os.DirEntry[Any]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[Any]) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def list_sessions(
    root: Path, files: list[Path], progress: Callable[[int, int], None] | None = None, every_cwd: bool = False
) -> list[SessionSummary]:
    """Summaries of the session files among `files`, newest activity first.

    Ties in `modified` fall as pi 1.6 orders them before its stable sort by `modified`: by file name
    descending for one cwd (`list`); across every cwd (`listAll`) the file written last first, then
    by file name descending."""
    summaries = []
    for done, path in enumerate(files, start=1):
        summary = summarize(root, path)
        if summary is not None:
            summaries.append(summary)
        if progress is not None:
            progress(done, len(files))
    summaries.sort(key=lambda s: collation_key(Path(s.path).name), reverse=True)
    if every_cwd:
        summaries.sort(key=lambda s: _mtime(Path(s.path)), reverse=True)
    summaries.sort(key=lambda s: s.modified, reverse=True)
    return summaries


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # gone since it was read: last, as pi puts a file it cannot stat
        return float("-inf")


# The ASCII characters in the order of JavaScript's `localeCompare` (ICU's root collation, which
# pi's name sort uses): white space, punctuation, symbols, digits, then letters, a letter's cases
# sharing one place (the lower case first when all else is equal); other controls are ignored.
_ASCII_COLLATION = "\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY = {c: i for i, c in enumerate(_ASCII_COLLATION)}
_PRIMARY.update({c.upper(): i for c, i in list(_PRIMARY.items()) if c.isalpha()})


def collation_key(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """`name`'s place in `localeCompare` order, exact for ASCII names (pi's are `<time>_<id>.jsonl`):
    letters compare without case first, then lower before upper. Characters beyond ASCII come after
    its letters, by code point (ICU would interleave them)."""
    shown = [c for c in name if c in _PRIMARY or c > "\x7f"]
    primary = tuple(_PRIMARY.get(c, len(_ASCII_COLLATION) + ord(c)) for c in shown)
    return primary, tuple(int("A" <= c <= "Z") for c in shown)
