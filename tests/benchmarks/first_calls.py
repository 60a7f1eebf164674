"""First calls after an open, two engines alternated round by round, over real stdio.

    python tests/benchmarks/first_calls.py [--sizes 1000,10000] [--rounds 7] [--before REV] [--calls tree,treeView]

Each round starts a fresh daemon per engine (the working tree's, and `--before`'s `server/` exported
with `git archive`), opens a copy of the generated session (tests/benchmarks/generate.py, seed 1,
under --data) and times one call after the open: the whole `session/tree`, the `session/treeView`
page that shows the leaf, the context at the leaf, or the path to the leaf (`session/entries`
`pathTo`). The engines take turns within each round, so a busy machine slows both alike; medians
and ranges over the rounds. pi's own times for these calls are run.py's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from daemon_bench import Daemon, copy_session

HERE = Path(__file__).resolve().parent
CALLS: dict[str, tuple[str, Any]] = {
    "tree": ("session/tree", lambda sid, leaf: {"sessionId": sid}),
    "treeView": ("session/treeView", lambda sid, leaf: {"sessionId": sid, "reveal": leaf}),
    "context": ("session/context", lambda sid, leaf: {"sessionId": sid}),
    "pathTo": ("session/entries", lambda sid, leaf: {"sessionId": sid, "pathTo": leaf}),
}


def session_file(data: Path, size: int) -> Path:
    path = data / "sessions" / f"{size}.jsonl"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--sizes", str(size), "--list", "0", str(data)], check=True)
    found = path if path.exists() else data / f"{size}.jsonl"
    return found


def export(rev: str, into: Path) -> Path:
    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], check=True, capture_output=True, text=True).stdout.strip())
    target = into / f"engine-{rev}"
    if not (target / "server").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(root), "archive", rev, "server"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "server"


def one(source: Path, call: str, pythonpath: str | None) -> tuple[float, int]:
    method, params = CALLS[call]
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath
    try:
        with tempfile.TemporaryDirectory(prefix="sessiontree-first-") as tmp:
            root = Path(tmp) / "sessions"
            path = copy_session(source, root / "--bench--")
            daemon = Daemon(root, index_dir=Path(tmp) / "index")
            try:
                opened = daemon.request("session/open", {"path": str(path)})
                start = time.perf_counter()
                _, size = daemon.request_sized(method, params(opened["sessionId"], opened["leafId"]))
                return (time.perf_counter() - start) * 1000, size
            finally:
                daemon.stop()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", metavar="REV", help="the engine to compare with (a git revision)")
    parser.add_argument("--calls", default="tree", help=f"comma-separated, of {','.join(CALLS)}")
    parser.add_argument("--data", type=Path, default=Path("/tmp/sessiontree-bench"))
    args = parser.parse_args(argv)
    engines: dict[str, str | None] = {}
    if args.before:
        engines[f"before ({args.before})"] = str(export(args.before, args.data))
    engines["after (working tree)"] = None
    print("| size | call | engine | median | range | on the wire |")
    print("|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        source = session_file(args.data, size)
        for call in args.calls.split(","):
            times: dict[str, list[float]] = {name: [] for name in engines}
            wire = 0
            for _ in range(args.rounds):
                for name, path in engines.items():
                    ms, wire = one(source, call, path)
                    times[name].append(ms)
            for name, found in times.items():
                print(
                    f"| {size:,} | {call} | {name} | {statistics.median(found):.1f} ms | {min(found):.1f}-{max(found):.1f} ms | {wire / 1024:,.0f} KB |"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
