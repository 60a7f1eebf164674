"""Another writer beside the daemon, as pi writes: whole lines, one O_APPEND write each, no lock.

tests/conformance/test_beside_pi.py runs pi's own SessionManager; this stand-in needs no Node.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

# `count` entries of `size` characters chained from `parent`, each one whole line written with
# one O_APPEND write and no lock; prints nothing.
WRITER = """
import json, os, sys, time
path, count, size, parent, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
for i in range(count):
    entry = {"type": "message", "id": "p%07d" % i, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": "x" * size, "timestamp": 1}}
    line = (json.dumps(entry, separators=(",", ":")) + "\\n").encode()
    assert os.write(fd, line) == len(line)
    parent = entry["id"]
    time.sleep(pause)
"""


def start_writer(path: Path, count: int, size: int, parent: str | None, pause: float = 0.0) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(count), str(size), parent or "", str(pause)])


def writer_ids(count: int) -> list[str]:
    return [f"p{i:07d}" for i in range(count)]


def ids_in(path: Path) -> list[str]:
    """The ids of the complete entry lines of the file, in order."""
    found = []
    for raw in path.read_bytes().split(b"\n")[1:]:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        found.append(value["id"])
    return found
