"""The command line's output: lines or a document's bytes to stdout, stopping quietly when the
reader goes away, through a pager when a person reads them at a terminal; a document to a file
whole or not at all."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

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


def write_stdout(data: bytes | Iterable[bytes]) -> None:
    """`data` (bytes, or chunks of them) as it is: no newline translation, no encoding by the locale
    (the same bytes as `-o`)."""
    chunks = [data] if isinstance(data, bytes) else data
    try:
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        for chunk in chunks:
            if buffer is None:  # a text-only stdout (an embedding program's): the nearest it can take
                sys.stdout.write(chunk.decode("utf-8"))
            else:
                buffer.write(chunk)
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()


def _quiet_stdout() -> None:
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def write_file(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write `path` whole: into a new file beside it, renamed over it once complete, so a failure
    leaves what was there (or nothing) and never a part. Through a link, to the file it names, whose
    permissions are kept; something that is not a file (`/dev/stdout`, a FIFO) is written to as it is."""
    try:
        existing: os.stat_result | None = os.stat(path)  # through links
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(path, "wb") as out:
            _write_all(out, data)
        return
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            _write_all(out, data)
        if existing is not None:  # else a new file, with the umask's permissions
            os.chmod(temporary, stat.S_IMODE(existing.st_mode))
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _write_all(out: BinaryIO, data: bytes | Iterable[bytes]) -> None:
    if isinstance(data, bytes):
        out.write(data)
        return
    for chunk in data:
        out.write(chunk)


def pager_command() -> str | None:
    """`$PAGER` as git reads it (a shell command; empty or `cat`: none), else `less` if installed."""
    command = os.environ.get("PAGER")
    if command is None:
        return "less" if shutil.which("less") else None
    return None if command.strip() in ("", "cat") else command


def show_lines(lines: Iterator[str], page: bool) -> None:
    """The lines on stdout; with `page`, through the pager (less: -F quits when they fit one screen,
    -R passes colours through, -X leaves the lines on the screen), unless none is found."""
    command = pager_command() if page else None
    if command is None:
        print_lines(lines)
        return
    import signal
    import subprocess

    environment = dict(os.environ)
    environment.setdefault("LESS", "FRX")
    environment.setdefault("LV", "-c")
    try:
        pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=environment)  # a shell command, as git runs it
    except OSError:  # not there after all: the lines as they are
        print_lines(lines)
        return
    assert pager.stdin is not None
    interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the pager is the pager's, as in git
    try:
        for line in lines:
            pager.stdin.write(without_lone_surrogates(line).encode("utf-8") + b"\n")
        pager.stdin.close()
    except BrokenPipeError:  # the reader quit before the end
        pass
    finally:
        pager.wait()
        signal.signal(signal.SIGINT, interrupt)

