"""glibc's allocator, set for a daemon that builds answers of megabytes, one after another.

By default glibc serves a block over a moving threshold (from 128 KiB) with a fresh
`mmap` and gives it back at once, and returns freed memory at the top of the heap
when more than 128 KiB is free. A 1 MB context answer then costs page faults on
every request: ~1 ms of a 0.25 ms answer on a small session. Here blocks up to
4 MiB come from the heap, and up to 64 MiB of free heap is kept for the next
answer. Peak memory is unchanged; memory in use between requests may stay higher.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Final

M_TRIM_THRESHOLD: Final = -1
M_TOP_PAD: Final = -2
M_MMAP_THRESHOLD: Final = -3
SETTINGS: Final = ((M_MMAP_THRESHOLD, 4 << 20), (M_TRIM_THRESHOLD, 64 << 20), (M_TOP_PAD, 16 << 20))


def tune_allocator() -> bool:
    """Apply SETTINGS on Linux with glibc, unless the user set MALLOC_* tunables; True if applied."""
    if not sys.platform.startswith("linux") or any(name.startswith("MALLOC_") for name in os.environ):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc; musl has no mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(mallopt(parameter, value) == 1 for parameter, value in SETTINGS)
