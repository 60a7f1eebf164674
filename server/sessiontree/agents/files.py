"""Reading another agent's files: only below its folder, never following a link, never for writing."""

from __future__ import annotations

import os
from pathlib import Path

from ..store import confined

# What a source's files looked like when last translated: a change means it must be read again.
Stamp = tuple[tuple[str, int, int, int], ...]

_CHUNK = 1 << 20


class FolderReader:
    """Reads whole files below one agent folder, reached as the sessions root's files are
    (`store.confined`: one component at a time, `O_NOFOLLOW`, a regular file of one name)."""

    def __init__(self, folder: Path, neighbours: tuple[str, ...] = ()) -> None:
        self.folder = folder
        # Files of these names beside the folder, read too: Codex keeps its thread names in
        # `~/.codex/session_index.jsonl`, next to `sessions/`, not in it.
        self.neighbours = neighbours

    def __call__(self, path: Path) -> bytes:
        top = self.folder.parent if path.parent == self.folder.parent and path.name in self.neighbours else self.folder
        fd = confined.open_file(top, path, os.O_RDONLY)
        try:
            chunks = []
            while chunk := os.read(fd, _CHUNK):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)


def stamp(files: tuple[Path, ...]) -> Stamp | None:
    """Size, modification time and inode of each file; None when one is gone or not a plain file."""
    found = []
    for path in files:
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        found.append((str(path), info.st_size, info.st_mtime_ns, info.st_ino))
    return tuple(found)


def shrank(before: Stamp, after: Stamp) -> bool:
    """A file replaced or cut short: what was translated from it may no longer hold."""
    if [entry[0] for entry in before] != [entry[0] for entry in after][: len(before)]:
        return True
    return any(old[1] > new[1] or old[3] != new[3] for old, new in zip(before, after, strict=False))
