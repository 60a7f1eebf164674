"""Retiring session files: to the trash (the freedesktop.org trash, restorable) or to an archive
folder beside them; and back. Nothing is ever deleted.

The trash is `$XDG_DATA_HOME/Trash` (`~/.local/share/Trash`) when it lies on the sessions root's
file system, else `<root>/.trash`, laid out the same way: the file goes to `files/<name>` and a
`info/<name>.trashinfo` says where it came from and when, as the spec asks (desktop trash tools list
and restore it). The archive of a folder is its `.archive/` subfolder: out of pi's sight and of
`session/list` (unless asked), a move back away.

A file is moved by a second name and then the removal of the first: a name never replaces another,
and a crash in between leaves the file under both names, never under none. The source is reached
from the root without following links (`store.confined`) and must be a regular file of one name.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote

import attrs

from .errors import FileNotFound, FileReplaced, NameTaken, StorageError
from .store import confined

ARCHIVE = ".archive"  # a folder's archive: a dot folder, which pi and the listing do not enter
LOCAL_TRASH = ".trash"  # the root's own trash, for a root on another file system than the home trash
_INFO = ".trashinfo"
_PRIVATE = 0o700  # the spec's mode for the trash folders: others may not read what was trashed

Way = Literal["trash", "archive"]


class _Unusable(Exception):
    """The trash cannot take the file (its folders cannot be made or written, another mount)."""

    def __init__(self, trash: Path, exc: OSError) -> None:
        super().__init__(f"{trash}: {exc.strerror or exc}")


@attrs.frozen
class Moved:
    """A retired (or restored) file: where it was, where it is now, and its trash info file."""

    source: Path
    target: Path
    way: Way
    info: Path | None = None


def home_trash(environ: os._Environ[str] | dict[str, str]) -> Path:
    """The home trash of the freedesktop.org spec: `$XDG_DATA_HOME/Trash`."""
    data = environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "Trash"


class Retirement:
    """Trash, archive and restore below one sessions root (`root`: resolved)."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home

    # ------------------------------------------------------------------ where

    def trash_dir(self) -> Path:
        """The home trash when a file can move there by a new name (the same file system), else the root's."""
        try:
            if _device(self.home) == os.stat(self.root).st_dev:
                return self.home
        except OSError:
            pass
        return self.root / LOCAL_TRASH

    def in_trash(self, path: Path) -> Path | None:
        """The trash `path` lies in (as `<trash>/files/<name>`), if any."""
        for trash in (self.home, self.root / LOCAL_TRASH):
            if path.parent == trash / "files":
                return trash
        return None

    # ------------------------------------------------------------------ moving out

    def trash(self, path: Path) -> Moved:
        """Move the session file `path` (below the root) to the trash, with its `.trashinfo`; the
        root's own trash when the home trash cannot take it (not writable, another mount)."""
        trash = self.trash_dir()
        try:
            return self._trash_into(trash, path)
        except _Unusable:
            if trash == self.root / LOCAL_TRASH:
                raise StorageError(f"could not use the trash {trash}", path=str(trash)) from None
            return self._trash_into(self.root / LOCAL_TRASH, path)

    def _trash_into(self, trash: Path, path: Path) -> Moved:
        with _source(self.root, path) as (folder, identity), _trash_folders(trash) as (files, info):
            for name in _candidates(path.name):
                try:
                    info_fd = os.open(name + _INFO, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=info)
                except FileExistsError:
                    continue
                try:
                    with open(info_fd, "w", encoding="utf-8") as out:
                        out.write(_trash_info(path))
                        out.flush()
                        os.fsync(out.fileno())
                    if _link(folder, path.name, files, name, identity):
                        break
                except BaseException:
                    with suppress(OSError):
                        os.unlink(name + _INFO, dir_fd=info)
                    raise
                os.unlink(name + _INFO, dir_fd=info)  # the name is taken in files/ without an info file
            folder.unlink(path.name)
            _sync(folder.fd, files, info)
        return Moved(path, trash / "files" / name, "trash", trash / "info" / (name + _INFO))

    def archive(self, path: Path) -> Moved:
        """Move the session file `path` to `.archive/` in its folder."""
        with _as_storage_error(path):
            return self._archive(path)

    def _archive(self, path: Path) -> Moved:
        target = path.parent / ARCHIVE / path.name
        with _source(self.root, path) as (folder, identity), confined.directory(self.root, target.parent, create=True) as archive:
            if not _link(folder, path.name, archive.fd, path.name, identity):
                raise NameTaken(f"{target} exists already; nothing was moved", path=str(target))
            folder.unlink(path.name)
            _sync(folder.fd, archive.fd)
        return Moved(path, target, "archive")

    # ------------------------------------------------------------------ moving back

    def restore(self, path: Path) -> Moved:
        """Put a trashed or archived file back where it was. `path` is where it lies now (in a
        trash's `files/`, in an `.archive/` folder), or where it was (the latest trashed file that
        came from there, else the archived one)."""
        with _as_storage_error(path):
            return self._restore(path)

    def _restore(self, path: Path) -> Moved:
        trash = self.in_trash(path)
        if trash is not None:
            return self._from_trash(trash, path.name)
        confined.parts_below(self.root, path)  # anything else is, or was, below the root
        if path.parent.name == ARCHIVE:
            return self._from_archive(path)
        found = self._trashed_from(path)
        if found is not None:
            return self._from_trash(*found)
        archived = path.parent / ARCHIVE / path.name
        if archived.exists():
            return self._from_archive(archived)
        raise FileNotFound(f"no trashed or archived session from {path}", path=str(path))

    def _trashed_from(self, original: Path) -> tuple[Path, str] | None:
        """The trash and name of the latest trashed file whose info says it came from `original`."""
        latest: tuple[str, Path, str] | None = None
        for trash in (self.home, self.root / LOCAL_TRASH):
            for name, origin, when in _infos(trash):
                if origin == original and (latest is None or when > latest[0]):
                    latest = (when, trash, name)
        return None if latest is None else (latest[1], latest[2])

    def _from_trash(self, trash: Path, name: str) -> Moved:
        try:
            origin = _read_info(trash / "info" / (name + _INFO))
        except OSError:
            raise FileNotFound(f"no trashed session {trash / 'files' / name}", path=str(trash / "files" / name)) from None
        confined.parts_below(self.root, origin)  # only ever back below the root
        with _trash_folders(trash) as (files, info), confined.directory(self.root, origin.parent, create=True) as folder:
            identity = _identity(files, name, trash / "files" / name)
            if not _link_between(files, name, folder.fd, origin.name, identity):
                raise NameTaken(f"{origin} exists already; the trashed session stays in the trash", path=str(origin))
            os.unlink(name, dir_fd=files)
            with suppress(FileNotFoundError):
                os.unlink(name + _INFO, dir_fd=info)
            _sync(folder.fd, files, info)
        return Moved(trash / "files" / name, origin, "trash")

    def _from_archive(self, path: Path) -> Moved:
        target = path.parent.parent / path.name
        with _source(self.root, path) as (archive, identity), confined.directory(self.root, target.parent) as folder:
            if not _link(archive, path.name, folder.fd, path.name, identity):
                raise NameTaken(f"{target} exists already; the archived session stays archived", path=str(target))
            archive.unlink(path.name)
            _sync(folder.fd, archive.fd)
        return Moved(path, target, "archive")


# ---------------------------------------------------------------------- the moves


@contextmanager
def _as_storage_error(path: Path) -> Iterator[None]:
    try:
        yield
    except _Unusable as exc:
        raise StorageError(f"could not move {path}: {exc}", path=str(path)) from None


@contextmanager
def _source(root: Path, path: Path) -> Iterator[tuple[confined.Directory, tuple[int, int]]]:
    """The folder of `path` (reached without links) and the identity of the regular, single-named
    file there: what is moved must be the file that was checked."""
    try:
        with confined.directory(root, path.parent) as folder:
            fd = folder.open_file(path.name, os.O_RDONLY)
            info = os.fstat(fd)
            os.close(fd)
            yield folder, (info.st_dev, info.st_ino)
    except OSError as exc:
        raise StorageError(f"could not move {path}: {exc.strerror or exc}", path=str(path)) from None


@contextmanager
def _trash_folders(trash: Path) -> Iterator[tuple[int, int]]:
    """Descriptors of the trash's `files/` and `info/` folders, made private if missing."""
    opened: list[int] = []
    try:
        for part in ("files", "info"):
            os.makedirs(trash / part, mode=_PRIVATE, exist_ok=True)
            opened.append(os.open(trash / part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC))
        yield opened[0], opened[1]
    except OSError as exc:
        raise _Unusable(trash, exc) from None
    finally:
        for fd in opened:
            os.close(fd)


def _link(folder: confined.Directory, name: str, target_dir: int, target: str, identity: tuple[int, int]) -> bool:
    return _link_between(folder.fd, name, target_dir, target, identity)


def _link_between(source_dir: int, name: str, target_dir: int, target: str, identity: tuple[int, int]) -> bool:
    """Give the file a second name; False when `target` is taken. The new name is checked to be
    the file that was checked (the old name could have been swapped meanwhile), else undone."""
    try:
        os.link(name, target, src_dir_fd=source_dir, dst_dir_fd=target_dir, follow_symlinks=False)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno == errno.EXDEV:  # the same device number, but another mount
            raise _Unusable(Path(name), exc) from None
        raise
    info = os.stat(target, dir_fd=target_dir, follow_symlinks=False)
    if (info.st_dev, info.st_ino) != identity:
        os.unlink(target, dir_fd=target_dir)
        raise FileReplaced(f"{name} was replaced while it was being moved; nothing was moved", path=name)
    return True


def _identity(directory: int, name: str, shown: Path) -> tuple[int, int]:
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        raise FileNotFound(f"no trashed session {shown}", path=str(shown)) from None
    return info.st_dev, info.st_ino


def _sync(*directories: int) -> None:
    for fd in directories:
        os.fsync(fd)


def _device(path: Path) -> int:
    """The file system `path` is (or would be made) on: that of its nearest existing ancestor."""
    for candidate in (path, *path.parents):
        with suppress(FileNotFoundError):
            return os.stat(candidate).st_dev
    raise FileNotFoundError(errno.ENOENT, "no existing ancestor", str(path))


def _candidates(name: str) -> Iterator[str]:
    """`name`, then `stem.2.jsonl`, `stem.3.jsonl`…: the first free name in the trash."""
    yield name
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    number = 2
    while True:
        yield f"{stem}.{number}{'.' + extension if extension else ''}"
        number += 1


def _trash_info(path: Path) -> str:
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime())
    return f"[Trash Info]\nPath={quote(str(path))}\nDeletionDate={when}\n"


def _read_info(info: Path) -> Path:
    for line in info.read_text(encoding="utf-8").splitlines():
        if line.startswith("Path="):
            return Path(unquote(line[len("Path=") :]))
    raise FileNotFoundError(errno.ENOENT, "no Path= in the trash info", str(info))


def _infos(trash: Path) -> Iterator[tuple[str, Path, str]]:
    """(name in files/, original path, deletion date) of each trashed file with an info file."""
    try:
        entries = list(os.scandir(trash / "info"))
    except OSError:
        return
    for entry in entries:
        if not entry.name.endswith(_INFO):
            continue
        try:
            text = Path(entry.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        fields = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        if "Path" in fields:
            yield entry.name[: -len(_INFO)], Path(unquote(fields["Path"])), fields.get("DeletionDate", "")
