"""Session summaries for `session/list`, as pi's `buildSessionInfo` computes them.

Each file is streamed in bounded chunks and each line decoded only as far as the
summary needs: message contents are kept as raw JSON and only the first user
message's content is ever decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from . import jsonfmt
from .entries import iso_to_ms, js_trim
from .protocol import SessionSummary
from .store import FileStorage
from .store.lines import BOM, LineReader

_LIST_CHUNK = 1024 * 1024


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
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class _Summary:
    """Accumulates pi's session info over the lines of one file."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.message_count = 0
        self.first_message = ""
        self.name: str | None = None
        self.last_activity: float | None = None

    def add(self, line: bytes) -> None:
        try:
            entry = _decode_line(line)
        except msgspec.MsgspecError:  # odd field types, lone surrogates, broken UTF-8, not JSON
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


def summarize(path: Path) -> SessionSummary | None:
    """The summary of one session file, or None when it is not a session file."""
    try:
        storage = FileStorage(path, writable=False)
    except OSError:
        return None
    try:
        reader = LineReader(storage, 0, storage.size(), chunk=_LIST_CHUNK)
        summary: _Summary | None = None
        for offset, line in reader:
            if summary is None:
                summary = _header(line[len(BOM) :] if offset == 0 and line.startswith(BOM) else line)
                if summary is None:
                    return None
            else:
                summary.add(line)
        if summary is None:
            return None
        return summary.result(path, path.stat().st_mtime * 1000)
    except OSError:
        return None
    finally:
        storage.close()


def _header(line: bytes) -> _Summary | None:
    try:
        header = jsonfmt.loads(line)
    except jsonfmt.JSONDecodeError:
        return None
    if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str):
        return _Summary(header)
    return None


def session_files(directories: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for directory in directories:
        try:
            files.extend(sorted(p for p in directory.iterdir() if p.suffix == ".jsonl" and p.is_file()))
        except OSError:
            continue
    return files


def list_sessions(files: list[Path], progress: Callable[[int, int], None] | None = None) -> list[SessionSummary]:
    """Summaries of the session files among `files`, newest activity first."""
    summaries = []
    for done, path in enumerate(files, start=1):
        summary = summarize(path)
        if summary is not None:
            summaries.append(summary)
        if progress is not None:
            progress(done, len(files))
    summaries.sort(key=lambda s: s.modified, reverse=True)
    return summaries
