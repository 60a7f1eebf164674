"""The command line's output: lines or a document's bytes to stdout, stopping quietly when the
reader goes away; a document to a file whole or not at all."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from .shown import without_lone_surrogates


def print_lines(lines: Iterator[str]) -> None:
    out = sys.stdout
    try:
        for line in lines:
            try:
                out.write(line)
            except UnicodeEncodeError:  # a lone surrogate (a session's name, say), or a narrow locale
                out.write(_encodable(line, out.encoding or "utf-8"))
            out.write("\n")
        out.flush()
    except BrokenPipeError:  # `sessiontree tree f | head`: stop quietly, also at exit's flush
        _quiet_stdout()


def _encodable(text: str, encoding: str) -> str:
    return without_lone_surrogates(text).encode(encoding, "replace").decode(encoding)


def write_stdout(data: bytes) -> None:
    """`data` as it is: no newline translation, no encoding by the locale (the same bytes as `-o`)."""
    try:
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:  # a text-only stdout (an embedding program's): the nearest it can take
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
            return
        buffer.write(data)
        buffer.flush()
    except BrokenPipeError:
        _quiet_stdout()


def _quiet_stdout() -> None:
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def write_file(path: Path, data: bytes) -> None:
    """Write `path` whole: into a new file beside it, renamed over it once complete, so a failure
    leaves what was there (or nothing) and never a part. Through a link, to the file it names, whose
    permissions are kept; something that is not a file (`/dev/stdout`, a FIFO) is written to as it is."""
    try:
        existing: os.stat_result | None = os.stat(path)  # through links
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(path, "wb") as out:
            out.write(data)
        return
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        if existing is not None:  # else a new file, with the umask's permissions
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
