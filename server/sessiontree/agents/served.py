"""Other agents' sessions beside pi's: found in each agent's folder, listed with pi's summary
fields (cached by their files' size and time, so a listing stays fast), and opened read-only."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path

import attrs

from ..errors import NotASessionFile, PathOutsideRoot, SessionTreeError
from ..file_warning import FileWarning
from ..listing import Summary
from ..paths import SessionsRoot
from ..session_summary import SessionSummary
from ..store import Session
from . import AgentName, Source, Translation, Translator, rendered
from .files import FolderReader, Stamp, stamp
from .registry import NEIGHBOURS, translator
from .storage import TranslationStorage

log = logging.getLogger(__name__)

_READ_ONLY = (
    "a {agent} session, shown as pi would read it: the daemon never writes to it, so every append is refused"
    " (-32024); session/import writes it out as a pi session"
)


@attrs.define
class AgentFolder:
    """One agent's folder of sessions, with its translator."""

    agent: AgentName
    root: SessionsRoot
    translator: Translator
    read: FolderReader

    def sources(self) -> list[Source]:
        """The sessions in the folder; none when it is missing or unreadable (an agent not installed)."""
        if not self.root.path.is_dir():
            return []
        try:
            return self.translator.discover(self.root.path)
        except OSError as exc:
            log.warning("could not read the %s sessions in %s: %s", self.agent, self.root.path, exc)
            return []

    def translate(self, source: Source) -> Translation:
        return self.translator.translate(source, self.read)


class AgentSessions:
    """Every agent folder the daemon reads (an agent without a translator is left out)."""

    def __init__(self, folders: Mapping[AgentName, Path]) -> None:
        self.folders: list[AgentFolder] = []
        for agent, path in folders.items():
            found = translator(agent)
            if found is not None:
                root = SessionsRoot(path)
                self.folders.append(AgentFolder(agent, root, found, FolderReader(root.path, NEIGHBOURS.get(agent, ()))))
        self._summaries: dict[Path, tuple[Stamp, SessionSummary]] = {}

    # ------------------------------------------------------------------ listing

    def list(self, cwd: str | None) -> list[SessionSummary]:
        found: list[SessionSummary] = []
        seen: set[Path] = set()
        for folder in self.folders:
            for source in folder.sources():
                seen.add(source.path)
                summary = self._summary(folder, source)
                if summary is not None and (cwd is None or summary.cwd == cwd):
                    found.append(summary)
        for gone in set(self._summaries) - seen:
            del self._summaries[gone]
        return found

    def _summary(self, folder: AgentFolder, source: Source) -> SessionSummary | None:
        now = stamp(source.files)
        if now is None:
            return None
        cached = self._summaries.get(source.path)
        if cached is not None and cached[0] == now:
            return cached[1]
        try:
            translation = folder.translate(source)
        except (OSError, ValueError, SessionTreeError) as exc:
            log.warning("could not read the %s session %s: %s", folder.agent, source.path, exc)
            return None
        summary = summarize(translation, source, max(entry[2] for entry in now) / 1e6)
        self._summaries[source.path] = (now, summary)
        return summary

    def searchable(self) -> dict[str, SearchableSession]:
        """Every session of every folder, by path, for the search index."""
        return {str(s.path): SearchableSession(folder, s) for folder in self.folders for s in folder.sources()}

    def agent_of(self, path: str) -> AgentName:
        """Whose session a listed path is (a hit's, a summary's): by the folder it lies in."""
        for folder in self.folders:
            if Path(path).is_relative_to(folder.root.path):
                return folder.agent
        return "pi"

    # ------------------------------------------------------------------ opening

    def resolve(self, path: str) -> tuple[AgentFolder, Path] | None:
        """The folder holding `path` (resolved as the sessions root resolves its paths), if any. A
        relative path is the sessions root's, never an agent folder's."""
        if not Path(path).expanduser().is_absolute():
            return None
        for folder in self.folders:
            try:
                return folder, folder.root.resolve(path)
            except PathOutsideRoot:
                continue
        return None

    def source(self, folder: AgentFolder, path: Path) -> Source:
        for source in folder.sources():
            if source.path == path:
                return source
        raise NotASessionFile(f"{path} is not a {folder.agent} session", path=str(path), agent=folder.agent)

    def load(self, folder: AgentFolder, path: Path) -> Session:
        """The session read-only over its translation; its leaf the one the agent would resume at."""
        try:
            storage = TranslationStorage(self.source(folder, path), folder.translator, folder.read)
        except (OSError, ValueError) as exc:
            raise NotASessionFile(f"{path} could not be read as a {folder.agent} session: {exc}", path=str(path)) from None
        session = Session.load(storage)
        session.read_only = f"it is a {folder.agent} session; the daemon never writes to another agent's files"
        session.read_only_reason = "another-agent"
        session.read_only_data = {"agent": folder.agent}
        session.warnings.insert(0, FileWarning("read-only", _READ_ONLY.format(agent=folder.agent)))
        session.warnings += [
            FileWarning("unknown-kind", f"{count} line(s) of kind {kind!r} that pi has no place for, kept as custom entries")
            for kind, count in sorted(storage.translation.unknown_kinds.items())
        ]
        follow_leaf(session, storage)
        return session


def follow_leaf(session: Session, storage: TranslationStorage) -> None:
    """Put the session's leaf where the agent has it (pi's would be the last entry)."""
    leaf = storage.leaf_id
    if leaf is not None and session.index.get(leaf) is not None:
        session.index.leaf_id = leaf


def summarize(translation: Translation, source: Source, mtime_ms: float) -> SessionSummary:
    """pi's summary fields, read from the translation as pi would read them from the file."""
    summary = Summary(translation.header)
    for line in rendered.lines(translation):
        summary.add(line)
    result = summary.result(source.path, mtime_ms)
    result.agent = source.agent
    return result


@attrs.frozen
class _Stat:
    st_dev: int
    st_ino: int
    st_size: int
    st_mtime_ns: int


class SearchableSession:
    """Another agent's session as the search index reads it: its state from its files' stat alone
    (a digest of them in place of a time: unchanged files, unchanged translation), its bytes the
    translation rendered as pi's lines."""

    def __init__(self, folder: AgentFolder, source: Source) -> None:
        self.folder = folder
        self.source = source

    def stat(self) -> _Stat | None:
        now = stamp(self.source.files)
        if now is None:
            return None
        digest = int.from_bytes(hashlib.blake2b(repr(now).encode(), digest_size=7).digest(), "big")
        return _Stat(0, now[0][3], -1, digest)

    def open(self) -> _Rendered:
        info = self.stat()
        storage = TranslationStorage(self.source, self.folder.translator, self.folder.read)
        if info is None:
            raise FileNotFoundError(self.source.path)
        return _Rendered(storage, attrs.evolve(info, st_size=storage.size()))


class _Rendered:
    def __init__(self, storage: TranslationStorage, info: _Stat) -> None:
        self.storage = storage
        self.info = info
        self.read = storage.read

    def stat(self) -> _Stat:
        return self.info

    def close(self) -> None:
        self.storage.close()
