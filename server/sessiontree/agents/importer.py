"""Another agent's sessions written out as pi sessions under the sessions root.

One pi session per source session, in pi's directory for the source's cwd and named as pi names
its files. Its first entry is a `custom` entry of type `import` holding the provenance (so pi
ignores it and a later import finds the file again); then the translation's entries with their
ids, the roots hung under the import entry. pi's leaf is the file's last entry: when the agent's
leaf is not the last entry, a `custom` `import-leaf` entry is written under it. Importing again
appends only the entries not in the file yet. A fork or sub-agent session is imported after the
session it came from, and names that file as its `parentSession`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .. import jsonfmt
from ..backend import Backend
from ..entries import build_line, new_entry_id, now_iso
from ..errors import InvalidParams, NotASessionFile, PathOutsideRoot, SessionTreeError
from ..paths import file_name, new_session_id
from ..store import Session
from . import Source, Translation
from .served import AgentFolder, AgentSessions

IMPORT = "import"
IMPORT_LEAF = "import-leaf"
_HEAD_BYTES = 64 * 1024  # the header and the import entry of an earlier import

# The open session of a path in this daemon, if it is open (its appends then go through it).
OpenSessionOf = Callable[[Path], Session | None]


@attrs.frozen
class ImportedSession:
    source: str  # the agent's file
    path: str  # the pi session written or appended to
    session_id: str  # the pi session's id
    entries: int  # the translation's entries
    added: int  # entries written by this import (0: it was up to date)


@attrs.frozen
class ImportFailure:
    source: str
    error: str


@attrs.define
class ImportReport:
    imported: list[ImportedSession] = attrs.Factory(list)
    failed: list[ImportFailure] = attrs.Factory(list)


class Importer:
    def __init__(self, agents: AgentSessions, backend: Backend, open_session_of: OpenSessionOf) -> None:
        self.agents = agents
        self.backend = backend
        self.open_session_of = open_session_of
        self._done: dict[Path, ImportedSession] = {}
        self.report = ImportReport()

    def run(self, paths: list[str]) -> ImportReport:
        if not paths:
            raise InvalidParams("paths must name at least one file or folder", field="paths")
        report = self.report
        for asked in paths:
            try:
                found = list(self._sources(asked))
            except SessionTreeError as exc:
                report.failed.append(ImportFailure(asked, exc.message))
                continue
            for folder, source in found:
                try:
                    self._import(folder, source)
                except (SessionTreeError, OSError, ValueError) as exc:
                    message = exc.message if isinstance(exc, SessionTreeError) else str(exc)
                    report.failed.append(ImportFailure(str(source.path), message))
        return report

    def _sources(self, asked: str) -> Iterator[tuple[AgentFolder, Source]]:
        """The sessions a path names: one file, or every session in a folder (below it)."""
        for folder in self.agents.folders:
            try:
                real = folder.root.resolve(asked, must_exist=False)
            except PathOutsideRoot:
                continue
            if real.is_dir():
                yield from ((folder, s) for s in folder.sources() if s.path.is_relative_to(real))
            else:
                yield folder, self.agents.source(folder, folder.root.resolve(asked))
            return
        raise PathOutsideRoot(f"{asked} is in none of the agents' folders the daemon reads", path=asked)

    def _import(self, folder: AgentFolder, source: Source) -> ImportedSession:
        done = self._done.get(source.path)
        if done is not None:  # met again as another session's parent
            return done
        translation = folder.translate(source)
        if not isinstance(translation.header.get("cwd"), str):
            raise NotASessionFile(f"{source.path} records no working directory", path=str(source.path))
        parent = self._parent(translation)
        earlier = self._earlier_import(translation)
        result = self._write_new(translation, parent) if earlier is None else self._append_new(translation, earlier)
        self._done[source.path] = result
        self.report.imported.append(result)
        return result

    def _parent(self, translation: Translation) -> str | None:
        """The imported file of the session this one was forked from or runs under."""
        parent = translation.parent
        if parent is None:
            return None
        for folder in self.agents.folders:
            if folder.agent == parent.agent:
                return self._import(folder, parent).path
        return None

    # ------------------------------------------------------------------ a first import

    def _write_new(self, translation: Translation, parent: str | None) -> ImportedSession:
        created = translation.header.get("timestamp")
        timestamp = created if isinstance(created, str) else now_iso()
        session_id = new_session_id()
        header: dict[str, Any] = {"type": "session", "version": 3, "id": session_id, "timestamp": timestamp}
        header["cwd"] = translation.header["cwd"]
        if parent is not None:
            header["parentSession"] = parent
        taken = {entry["id"] for entry in translation.entries}
        mark = build_line(_provenance(translation), new_entry_id(taken), None, timestamp)
        lines = [mark, *_lines(translation.entries, mark["id"]), *_leaf_mark(translation, taken)]
        chunks = [jsonfmt.dumps(header) + b"\n", *(jsonfmt.dumps(line) + b"\n" for line in lines)]
        directory = self.backend.directory_for(header["cwd"])
        storage, path = self.backend.create(directory, file_name(timestamp, session_id), chunks)
        storage.close()
        count = len(translation.entries)
        return ImportedSession(translation.provenance.source_file, str(path), session_id, count, count)

    # ------------------------------------------------------------------ importing again

    def _earlier_import(self, translation: Translation) -> Path | None:
        wanted = _provenance(translation)["data"]
        for path in self.backend.paths(translation.header["cwd"]):
            mark = self._import_mark(path)
            if mark is not None and _same_source(mark.get("data"), wanted):
                return path
        return None

    def _import_mark(self, path: Path) -> dict[str, Any] | None:
        """The file's first entry when it is an import's provenance."""
        lines = _head(self.backend, path).split(b"\n")
        if len(lines) < 3:  # a header, the first entry and what follows its line end
            return None
        try:
            entry = jsonfmt.loads(lines[1])
        except jsonfmt.JSONDecodeError:
            return None
        if isinstance(entry, dict) and entry.get("type") == "custom" and entry.get("customType") == IMPORT:
            return entry
        return None

    def _append_new(self, translation: Translation, path: Path) -> ImportedSession:
        session = self.open_session_of(path)
        owned = session is None
        if session is None:
            session = self.backend.load(path, [])
        try:
            session.refresh()
            known = set(session.index.by_id)
            mark_id = session.index.ids[0]
            new = [entry for entry in translation.entries if entry["id"] not in known]
            lines = list(_lines(new, mark_id))
            resumed_at = lines[-1]["id"] if lines else _effective_leaf(session)
            if resumed_at != translation.leaf_id:
                lines += _leaf_mark(translation, known | {entry["id"] for entry in new}, always=True)
            if lines:
                session.append_built(lines)
            session_id = session.header["id"]
        finally:
            if owned:
                self.backend.release(session, path)
        return ImportedSession(translation.provenance.source_file, str(path), session_id, len(translation.entries), len(new))


def _provenance(translation: Translation) -> dict[str, Any]:
    source = translation.provenance
    data = {"agent": source.agent, "version": source.version, "sourceFile": source.source_file,
            "sourceSessionId": source.source_session_id}
    return {"type": "custom", "customType": IMPORT, "data": data}


def _same_source(found: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(found, dict) and all(found.get(key) == wanted[key] for key in ("agent", "sourceFile"))


def _lines(entries: list[dict[str, Any]], root_parent: str) -> Iterator[dict[str, Any]]:
    """The entries as pi writes them, roots hung under the import entry."""
    for entry in entries:
        fields = {key: value for key, value in entry.items() if key not in ("id", "parentId", "timestamp")}
        parent = entry.get("parentId")
        yield build_line(fields, entry["id"], parent if parent is not None else root_parent, entry["timestamp"])


def _leaf_mark(translation: Translation, taken: set[str], always: bool = False) -> list[dict[str, Any]]:
    """A last entry under the agent's leaf, so pi (whose leaf is the last entry) resumes there."""
    leaf, entries = translation.leaf_id, translation.entries
    if leaf is None or (not always and entries and entries[-1]["id"] == leaf):
        return []
    mark = {"type": "custom", "customType": IMPORT_LEAF, "data": {"leafId": leaf}}
    return [build_line(mark, new_entry_id(taken), leaf, now_iso())]


def _effective_leaf(session: Session) -> str | None:
    """The entry pi resumes at: the last one, or the one an `import-leaf` entry stands under."""
    index = session.index
    if not len(index):
        return None
    last = index.node(len(index) - 1)
    if last.type == "custom" and session.entry(last).get("customType") == IMPORT_LEAF:
        return last.parent_id
    return last.id


def _head(backend: Backend, path: Path) -> bytes:
    """The file's first bytes, read without a scan (a directory of many sessions is looked through)."""
    from ..backend.files import FileBackend
    from ..store import confined

    if isinstance(backend, FileBackend):
        try:
            fd = confined.open_file(backend.root, path, os.O_RDONLY)
        except (SessionTreeError, OSError):
            return b""
        try:
            return os.pread(fd, _HEAD_BYTES, 0)
        finally:
            os.close(fd)
    session = backend.load_readonly(path)
    if session is None:
        return b""
    try:
        return session.storage.read(0, _HEAD_BYTES)
    finally:
        session.close()
