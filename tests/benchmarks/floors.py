"""What bounds the daemon's operations: the cost of the unavoidable steps alone, in-process.

    python tests/benchmarks/floors.py FILE [FILE...]

Per file: reading the bytes, splitting lines, decoding skeletons (msgspec, as the
index does), orjson-decoding every line, the previews of every line, and the
engine's own steps through the domain API (SessionService: open, context, tree,
path, fork, close and reopen from the index sidecar) without the wire, plus the
size of the big answers on the wire and what decoding them costs a client. Run it
on an idle machine.
"""

from __future__ import annotations

import gc
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from sessiontree import protocol as p
from sessiontree.entries import decode_skeleton
from sessiontree.jsonfmt import dumps_wire
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.tree.preview import preview_of_line


def best(fn: Callable[[], Any], reps: int = 3) -> float:
    """The median of `reps` runs in ms (garbage collected before each)."""
    times = []
    for _ in range(reps):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


class _Skeleton(msgspec.Struct, gc=False):
    type: str
    id: str
    parentId: Any = None
    timestamp: Any = None


def file_floors(path: Path) -> dict[str, float]:
    data = path.read_bytes()
    lines = data.split(b"\n")
    decoder = msgspec.json.Decoder(_Skeleton)
    return {
        "read bytes": best(lambda: path.read_bytes()),
        "split lines": best(lambda: data.split(b"\n")),
        "msgspec 4-field skeletons": best(lambda: [decoder.decode(line) for line in lines[1:] if line]),
        "decode_skeleton (the index's)": best(lambda: [decode_skeleton(line, 0, 0) for line in lines[1:] if line]),
        "orjson every line": best(lambda: [orjson.loads(line) for line in lines if line]),
        "preview_of_line every line (a first tree's previews)": best(lambda: [preview_of_line(line) for line in lines[1:] if line]),
    }


def engine_steps(path: Path) -> dict[str, float]:
    """The domain API alone, on a copy under a temporary root."""
    root = Path(tempfile.mkdtemp(prefix="sessiontree-floor-"))
    try:
        copy = root / "--bench-project--" / path.name
        copy.parent.mkdir()
        shutil.copyfile(path, copy)
        service = SessionService(ServiceConfig(sessions_dir=root, index_dir=root / "index"))
        times: dict[str, float] = {}
        start = time.perf_counter()
        opened = service.open(p.OpenParams(str(copy)))
        times["service.open"] = (time.perf_counter() - start) * 1000
        sid, leaf = opened.session_id, opened.leaf_id
        times["service.context (first)"] = best(lambda: service.context(p.ContextParams(sid)), reps=1)
        times["service.context (cached)"] = best(lambda: service.context(p.ContextParams(sid)))
        context = service.context(p.ContextParams(sid))
        times["jsonfmt.dumps_wire(context messages)"] = best(lambda: dumps_wire(context.messages))
        times["service.tree (first)"] = best(lambda: service.tree(p.TreeParams(sid)), reps=1)
        times["service.tree (again)"] = best(lambda: service.tree(p.TreeParams(sid)))
        tree = dumps_wire(p.to_wire(service.tree(p.TreeParams(sid))))
        times["tree bytes on the wire (MB)"] = len(tree) / 1e6
        times["orjson.loads(tree) (client)"] = best(lambda: orjson.loads(tree))
        entries = service.entries(p.EntriesParams(sid, path_to=leaf))
        times["service.entries pathTo (path)"] = best(lambda: service.entries(p.EntriesParams(sid, path_to=leaf)))
        times["jsonfmt.dumps_wire(path entries)"] = best(lambda: dumps_wire(entries.entries))
        wire = dumps_wire(entries.entries)
        times["orjson.loads(path entries) (client)"] = best(lambda: orjson.loads(wire))
        times["path bytes on the wire (MB)"] = len(wire) / 1e6
        times["service.fork (leaf path)"] = best(lambda: service.fork(p.ForkParams(sid, entry_id=leaf)), reps=1)
        start = time.perf_counter()
        service.close(p.SessionParams(sid))
        times["service.close (saves the index sidecar)"] = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        service.open(p.OpenParams(str(copy)))
        times["service.open again (from the sidecar)"] = (time.perf_counter() - start) * 1000
        times["peak RSS of this process (MB)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return times
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    for name in argv:
        path = Path(name)
        print(f"## {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
        for key, value in {**file_floors(path), **engine_steps(path)}.items():
            print(f"{key:<40} {value:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
