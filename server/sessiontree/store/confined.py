"""Reaching files below the sessions root so that nothing outside it is ever touched.

Checking a path and then opening it by name leaves a gap in which a directory or the file can be
swapped for a symbolic link (out of the root), or for a FIFO (whose open would block the
single-threaded daemon for good). So a file is reached from the root's own descriptor one
component at a time with `O_NOFOLLOW`, opened with `O_NONBLOCK`, and checked on the descriptor:
a regular file with a single name (a hard link may be a second name outside the root). New files
are made with `O_EXCL` (a name planted beforehand is never followed or overwritten) and renamed
inside the directory descriptor they were made in.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import FileNotFound, NotASessionFile, PathOutsideRoot

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR)  # O_NOFOLLOW met a symlink, or a component is no directory


def parts_below(root: Path, path: Path) -> tuple[str, ...]:
    """The components of `path` (already resolved) below `root`; PathOutsideRoot if it is not below."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = ("..",)
    if ".." in parts:  # relative_to is lexical: `root/../x` is "below" it
        raise PathOutsideRoot(f"{path} is outside the sessions directory {root}", path=str(path), root=str(root))
    return parts


class Directory:
    """An open directory at or below the root, reached without following any symlink."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd = fd
        self.path = path

    def open_file(self, name: str, flags: int, one_name: bool = True) -> int:
        """Open `name` here as a regular file of one name; refuse anything else, clearly. Without
        `one_name` a file with other names (hard links) is opened too: for reading only, since the
        rule protects writes from reaching a file outside the root."""
        try:
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except FileNotFoundError:
            raise FileNotFound(f"no session file at {self.path / name}", path=str(self.path / name)) from None
        except OSError as exc:
            if exc.errno in _LINK_ERRORS and _is_link(self.fd, name):
                raise _symlink(self.path / name) from None
            raise
        try:
            _check_regular(os.fstat(fd), self.path / name, one_name)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def create_unique(self, stem: str, access: int = os.O_WRONLY) -> tuple[str, int]:
        """A new, empty file named `stem`, or `stem.1`, `stem.2`…, whichever is free first: a name
        taken by anything at all (a file, a dangling symlink) is never opened."""
        name, number = stem, 0
        while True:
            try:
                return name, os.open(name, _NEW_FILE | access, 0o666, dir_fd=self.fd)
            except FileExistsError:
                number += 1
                name = f"{stem}.{number}"

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def link(self, source: str, target: str) -> None:
        """A second name, never over an existing one (FileExistsError): how a new file is put in place."""
        os.link(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def unlink(self, name: str) -> None:
        os.unlink(name, dir_fd=self.fd)

    def sync(self) -> None:
        os.fsync(self.fd)



def _check_regular(info: os.stat_result, path: Path, one_name: bool = True) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise NotASessionFile(f"{path} is not a regular file", path=str(path))
    if info.st_nlink == 0:  # removed or renamed over between the open and this check
        raise FileNotFound(f"{path} was removed while it was being opened", path=str(path))
    if info.st_nlink != 1 and one_name:
        raise PathOutsideRoot(
            f"{path} has {info.st_nlink} names (hard links), which may lie outside the sessions directory",
            path=str(path),
        )


def _is_link(directory: int, name: str) -> bool:
    """Whether O_NOFOLLOW's ELOOP/ENOTDIR meant a symlink (rather than a file where a directory goes)."""
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return True  # gone or swapped again meanwhile: refuse as a link would be


def _symlink(path: Path) -> PathOutsideRoot:
    return PathOutsideRoot(f"{path} is or passes through a symbolic link; refused", path=str(path))


@contextmanager
def directory(root: Path, path: Path, create: bool = False) -> Iterator[Directory]:
    """The directory `path` (resolved, at or below `root`), reached from the root one component at
    a time with O_NOFOLLOW; with `create`, missing components are made (0777 less the umask, as pi)."""
    if create:
        os.makedirs(root, exist_ok=True)  # the root itself is the user's choice: made as named
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts_below(root, path):
            child = _step(fd, part, create, path)
            os.close(fd)
            fd = child
        yield Directory(fd, path)
    finally:
        os.close(fd)


def _step(parent: int, name: str, create: bool, path: Path) -> int:
    try:
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise FileNotFound(f"no directory {path}", path=str(path)) from None
            with suppress(FileExistsError):  # made meanwhile by another process: open it, unfollowed
                os.mkdir(name, 0o777, dir_fd=parent)
            return os.open(name, _DIRECTORY, dir_fd=parent)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS and _is_link(parent, name):
            raise _symlink(path) from None
        raise


def open_file(root: Path, path: Path, flags: int, one_name: bool = True) -> int:
    """Open the resolved `path` below `root` as a regular file of one name (see `Directory.open_file`),
    never following a link."""
    if not one_name and flags & (os.O_WRONLY | os.O_RDWR):
        raise ValueError("only a file opened for reading may have other names")
    with directory(root, path.parent) as parent:
        return parent.open_file(path.name, flags, one_name)
