"""The command line's output: lines or a document's bytes to stdout, stopping quietly when the
reader goes away, through a pager when a person reads them at a terminal; a document to a file
whole or not at all; a long operation's progress as one updating line on a terminal."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, TextIO

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


class TerminalProgress:
    """A `Progress(done, total)` callback shown as one line on stderr, rewritten in place (`\\r`)
    at most every `interval` seconds and cleared when the operation ends, only when stderr is a
    terminal: piped or redirected, nothing is written, so a log or a script sees only the result.
    Use it as a context manager so the line goes away however the operation ends."""

    def __init__(self, label: str, stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.label, self.interval = label, interval
        self.active = _is_terminal(self.stream)
        self.shown = False
        self._next = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.active:
            return
        now = time.monotonic()
        if now < self._next and done < total:
            return
        self._next = now + self.interval
        figure = f"{done:,} of {total:,} ({done * 100 // total}%)" if total > 0 else f"{done:,}"
        self._write(f"\r{self.label}: {figure}\x1b[K")
        self.shown = True

    def clear(self) -> None:
        """Take the line away (before other output on the terminal, and at the end)."""
        if self.shown:
            self._write("\r\x1b[K")
            self.shown = False
            self._next = 0.0

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.clear()

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: the operation goes on without it
            self.active = self.shown = False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
