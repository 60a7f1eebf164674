"""The command line's output: lines to stdout, stopping quietly when the reader goes away."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator


def print_lines(lines: Iterator[str]) -> None:
    out = sys.stdout
    try:
        for line in lines:
            out.write(line)
            out.write("\n")
        out.flush()
    except BrokenPipeError:  # `sessiontree tree f | head`: stop quietly, also at exit's flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
