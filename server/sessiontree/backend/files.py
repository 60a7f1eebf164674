"""The file store: one JSONL file per session under the sessions root, as pi keeps them.

Every file is reached from the root one component at a time without following links
(`store.confined`); new files are written under a temporary name and linked into place.
"""

from __future__ import annotations

import builtins  # `list` in the class body below is FileBackend.list
import contextlib
import errno
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..errors import FileReplaced, SessionTreeError, StorageError
from ..file_warning import FileWarning
from ..listing import count_children, list_sessions, session_files, subdirectories, with_nested
from ..paths import SessionsRoot
from ..retire import ARCHIVE
from ..search import RefreshStats, index_path
from ..search import SearchIndex as SqliteIndex
from ..search.refresh import OtherSession
from ..session_summary import SessionSummary
from ..store import Durability, FileStorage, MemoryStorage, Session, confined, file_version, migrate_file
from ..store.migrate import CURRENT_VERSION, migrate_bytes
from ..store.sidecar import sidecar_path
from . import ChangeFeed, Progress

log = logging.getLogger(__name__)

_OPEN_TRIES = 3  # a file replaced while being opened (a migration) is opened again, so often
# A write open refused for these is no reason not to show the file: it is opened for reading instead.
_READ_ONLY_ERRNOS = {errno.EACCES: "permission", errno.EPERM: "permission", errno.EROFS: "read-only-filesystem"}


class FileBackend:
    poll_seconds = 0.2  # files send no word of appends: subscribed ones are checked this often

    def __init__(
        self,
        root: Path,
        durability: Durability = "os",
        index_dir: Path | None = None,
        index_min_entries: int = 1000,
        view_only: bool = False,
    ) -> None:
        self.sessions_root = SessionsRoot(root)
        self.root = self.sessions_root.path
        self.durability = durability
        self.index_dir = index_dir  # where index sidecars go; None: no sidecars
        self.index_min_entries = index_min_entries  # smaller sessions scan in milliseconds: no sidecar
        self.shown = "files"
        # Open every file for reading only: viewing never writes (no migration in place, no appends),
        # and a file with other names (hard links) may be read, as only writes must stay in the root.
        self.view_only = view_only

    def start(self) -> None:
        pass  # the root is made when the first session is

    def changes(self) -> ChangeFeed | None:
        return None

    def resolve(self, path: str) -> Path:
        return self.sessions_root.resolve(path)

    def directory_for(self, cwd: str) -> Path:
        return self.sessions_root.directory_for(cwd)

    # ------------------------------------------------------------------ opening

    def load(self, path: Path, warnings: list[FileWarning]) -> Session:
        """Open, migrate if needed, and scan; a file replaced meanwhile (migrated by us or by another
        daemon while we waited for its lock) is opened again. A file the daemon may not write is
        opened for reading: shown, its appends refused (-32024)."""
        try:
            for _ in range(_OPEN_TRIES):
                storage, refused = self._open(path)
                try:
                    session = self._load_locked(storage, path, warnings, refused)
                except BaseException:
                    storage.close()
                    raise
                if session is not None:
                    return session
                storage.close()
        except OSError as exc:
            raise StorageError(f"could not open {path}: {exc.strerror or exc}", path=str(path)) from None
        raise FileReplaced("the file kept being replaced while it was opened; try again", path=str(path))

    def _open(self, path: Path) -> tuple[FileStorage, tuple[str, str] | None]:
        """The file opened for appending, or else for reading with why: (reason, its words)."""
        if self.view_only:
            fd = confined.open_file(self.root, path, os.O_RDONLY, one_name=False)
            return FileStorage(path, self.durability, writable=False, fd=fd), ("view", "it was opened to be viewed")
        try:
            return FileStorage(path, self.durability, fd=confined.open_file(self.root, path, os.O_RDWR | os.O_APPEND)), None
        except OSError as exc:
            reason = _READ_ONLY_ERRNOS.get(exc.errno or 0)
            if reason is None:
                raise
            refused = (reason, f"the daemon may not write the file ({exc.strerror})")
        return FileStorage(path, self.durability, writable=False, fd=confined.open_file(self.root, path, os.O_RDONLY)), refused

    def _load_locked(
        self, storage: FileStorage, path: Path, warnings: list[FileWarning], refused: tuple[str, str] | None
    ) -> Session | None:
        with storage.lock():
            if storage.replaced():
                return None
            version = file_version(storage)
            old = version is not None and version < CURRENT_VERSION
            if old and refused is None:
                try:
                    warnings.append(self._migrate(path, storage, version))  # type: ignore[arg-type]
                    return None
                except OSError as exc:  # the folder refuses the new file: shown, not migrated
                    reason = _READ_ONLY_ERRNOS.get(exc.errno or 0)
                    if reason is None:
                        raise
                    refused = (reason, f"the daemon may not write the file's folder to migrate it ({exc.strerror})")
            if old:  # not ours to rewrite: shown as the migration would make it, the file untouched
                migrated = migrate_bytes(storage.read(0, storage.size()), version)  # type: ignore[arg-type]
                session = Session.load(MemoryStorage(migrated, name=str(path)))
            else:
                session = Session.load(storage, self._sidecar_of(path))
        if old:
            storage.close()  # the session reads its bytes in memory
        if refused is not None:
            session.refuse_writes(*refused, self._read_only_warning(refused, version if old else None))
        return session

    def _migrate(self, path: Path, storage: FileStorage, version: int) -> FileWarning:
        return migrate_file(self.root, path, storage, version, sync=self.durability == "fsync")

    def _read_only_warning(self, refused: tuple[str, str], old_version: int | None) -> FileWarning | None:
        reason, why = refused
        migrated = (
            f"; it is version {old_version}, shown as migrated to {CURRENT_VERSION} in memory (its entries' ids"
            " may differ on each open when it is version 1), and not rewritten"
            if old_version is not None
            else ""
        )
        if reason == "view":
            if old_version is None:
                return None
            return FileWarning("migrated", f"viewed without rewriting the file{migrated} (`sessiontree migrate` rewrites it)")
        return FileWarning("read-only", f"read-only ({reason}): {why}; shown, but appends are refused (-32024){migrated}")

    def load_readonly(self, path: Path) -> Session | None:
        try:
            storage = FileStorage(path, writable=False, fd=confined.open_file(self.root, path, os.O_RDONLY))
        except (SessionTreeError, OSError):  # gone, a link, not a regular file
            return None
        try:
            return Session.load(storage, self._sidecar_of(path))
        except (SessionTreeError, OSError):
            storage.close()
            return None

    def release(self, session: Session, path: Path) -> None:
        """Close the file, saving its index for the next open first (a cache: failures are only logged)."""
        sidecar = self._sidecar_of(path)
        try:
            on_disk = isinstance(session.storage, FileStorage)  # not a version 1 or 2 file read into memory
            if sidecar is not None and on_disk and len(session.index) >= self.index_min_entries:
                session.save_sidecar(sidecar)
        except OSError as exc:
            log.warning("could not save the index of %s to %s: %s", path, sidecar, exc)
        finally:
            session.close()

    def _sidecar_of(self, path: Path) -> Path | None:
        return None if self.index_dir is None else sidecar_path(self.index_dir, path)

    # ------------------------------------------------------------------ writing new files

    def create(self, directory: Path, name: str, chunks: Iterable[bytes]) -> tuple[FileStorage, Path]:
        """Write a whole new session file (chunks of whole lines) under a temporary name, then give
        it its name (never over an existing file). Whatever stops it, the temporary name goes."""
        path = directory / name
        sync = self.durability == "fsync"
        try:
            with confined.directory(self.root, directory, create=True) as folder:
                temporary, fd = folder.create_unique(f".{name}.partial", os.O_RDWR | os.O_APPEND)
                try:
                    with open(fd, "ab", closefd=False) as out:
                        out.writelines(chunks)
                    if sync:
                        os.fsync(fd)
                    folder.link(temporary, name)
                except BaseException:
                    os.close(fd)
                    raise
                finally:
                    with contextlib.suppress(OSError):
                        folder.unlink(temporary)
                if sync:
                    folder.sync()
        except OSError as exc:
            raise StorageError(f"could not write {path}: {exc.strerror or exc}", path=str(path)) from None
        return FileStorage(path, self.durability, fd=fd), path

    # ------------------------------------------------------------------ listing

    def list(self, cwd: str | None, progress: Progress | None) -> list[SessionSummary]:
        """pi's listing, and the sessions agents keep in folders below a cwd's (sub-agents)."""
        if cwd is not None:
            directories = [self.directory_for(cwd)]
        else:
            directories = [self.root / name for name in subdirectories(self.root)]
        files = session_files(self.root, with_nested(self.root, directories))
        summaries = list_sessions(self.root, files, progress, every_cwd=cwd is None)
        count_children(summaries)
        return summaries

    def archived(self, cwd: str | None, progress: Progress | None) -> builtins.list[SessionSummary]:
        """The sessions moved to the `.archive/` folders (of one cwd, or of all)."""
        if cwd is not None:
            folders = [self.directory_for(cwd)]
        else:
            folders = [self.root / name for name in subdirectories(self.root)]
        archives = [folder / ARCHIVE for folder in folders]
        return list_sessions(self.root, session_files(self.root, archives), progress, every_cwd=cwd is None)

    def paths(self, cwd: str) -> builtins.list[Path]:
        return session_files(self.root, [self.directory_for(cwd)])

    def search_index(self) -> FileSearch:
        """The SQLite index of the root, in the cache directory beside the sidecars."""
        if self.index_dir is None:
            raise StorageError("search needs a cache directory: indexDir is turned off", path=str(self.root))
        return FileSearch(SqliteIndex(index_path(self.index_dir, self.root)), self.root)

    def close(self) -> None:
        pass


class FileSearch:
    """The SQLite index of the files under one root, as the backend's search index: it searches
    and closes as it is; a refresh is of this root."""

    def __init__(self, index: SqliteIndex, root: Path) -> None:
        self.index = index
        self.root = root
        self.search = index.search
        self.close = index.close
        self.others: Callable[[], Mapping[str, OtherSession]] | None = None  # other agents' sessions beside the root's

    def refresh(self, progress: Progress | None = None, cancelled: Callable[[], bool] | None = None) -> RefreshStats:
        others = self.others() if self.others is not None else None
        return self.index.refresh(self.root, progress=progress, cancelled=cancelled, others=others)
