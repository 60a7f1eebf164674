"""The command line's output: lines to stdout, stopping quietly when the reader goes away, and
through a pager when a person reads them at a terminal."""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Iterator


def print_lines(lines: Iterator[str]) -> None:
    out = sys.stdout
    if isinstance(out, io.TextIOWrapper):  # a lone surrogate (half an emoji, kept from JavaScript) shows as \ud83d
        out.reconfigure(errors="backslashreplace")
    try:
        for line in lines:
            out.write(line)
            out.write("\n")
        out.flush()
    except BrokenPipeError:  # `sessiontree tree f | head`: stop quietly, also at exit's flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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
            pager.stdin.write(line.encode("utf-8", "backslashreplace") + b"\n")
        pager.stdin.close()
    except BrokenPipeError:  # the reader quit before the end
        pass
    finally:
        pager.wait()
        signal.signal(signal.SIGINT, interrupt)

