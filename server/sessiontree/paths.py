"""Where session files live: pi's layout under a sessions root, and the rule that nothing leaves it."""

from __future__ import annotations

import os
import re
import secrets
import stat
import time
import uuid
from pathlib import Path

from .errors import FileNotFound, InvalidParams, NotASessionFile, PathOutsideRoot

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # never in a name pi makes; a newline in a path is an attack or an accident


def encode_cwd(cwd: str) -> str:
    """pi's directory name for a cwd: `--<cwd without its leading slash, / \\ : as ->--`."""
    stripped = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + re.sub(r"[/\\:]", "-", stripped) + "--"


def file_name(timestamp_iso: str, session_id: str) -> str:
    """pi's file name: the ISO timestamp with `:` and `.` as `-`, then the session id."""
    return f"{re.sub(r'[:.]', '-', timestamp_iso)}_{session_id}.jsonl"


def new_session_id() -> str:
    """A UUID version 7 (time-ordered), as pi creates session ids."""
    ms = time.time_ns() // 1_000_000
    value = (ms & (2**48 - 1)) << 80 | 0x7 << 76 | secrets.randbits(12) << 64 | 0b10 << 62 | secrets.randbits(62)
    return str(uuid.UUID(int=value))


def check_session_id(session_id: str) -> str:
    """A session id becomes part of a file name: keep it to safe characters."""
    if not _SESSION_ID.match(session_id):
        raise InvalidParams(
            "id must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit",
            field="id",
        )
    return session_id


def refuse_control_characters(text: str, field: str) -> None:
    if _CONTROL.search(text):
        raise InvalidParams(f"{field} contains a control character", field=field)
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:  # half of a UTF-16 pair: no file name can hold it as pi would
            raise InvalidParams(f"{field} contains a lone surrogate", field=field) from None


def _require_file(path: Path, asked: str) -> None:
    try:
        mode = os.stat(path).st_mode
    except OSError:  # missing, a name too long, a loop of symlinks: no file there either way
        raise FileNotFound(f"no session file at {asked}", path=asked) from None
    if not stat.S_ISREG(mode):  # a FIFO would block the daemon, a device is no session
        raise NotASessionFile(f"{asked} is not a regular file", path=asked)


def _realpath(candidate: Path, asked: str) -> Path:
    """realpath, which raises when a link is swapped for a file between its lstat and readlink."""
    for _ in range(3):
        try:
            return Path(os.path.realpath(candidate))
        except OSError:
            continue
    raise FileNotFound(f"{asked} kept changing while it was being resolved", path=asked)


class SessionsRoot:
    """The directory the daemon owns; every path it touches must resolve inside it."""

    def __init__(self, root: Path) -> None:
        self.path = Path(os.path.realpath(root.expanduser()))

    def resolve(self, path: str, must_exist: bool = True) -> Path:
        """An absolute path (relative ones are taken from the root), symlinks resolved, checked."""
        refuse_control_characters(path, "path")
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.path / candidate
        real = _realpath(candidate, path)
        if real != self.path and self.path not in real.parents:
            raise PathOutsideRoot(
                f"{path} is outside the sessions directory {self.path}", path=path, root=str(self.path)
            )
        if must_exist:
            _require_file(real, path)
        return real

    def directory_for(self, cwd: str) -> Path:
        refuse_control_characters(cwd, "cwd")
        directory = self.path / encode_cwd(cwd)
        self.resolve(str(directory), must_exist=False)  # a cwd must not escape through a symlinked directory
        return directory
