"""What an editor's tree view costs: `session/treeView` against `session/tree`, over real stdio.

    python tests/benchmarks/tree_view.py [--sizes 1000,10000,100000,1000000] [--runs 3] [--leaf-first] [--no-tree]

For each generated session (tests/benchmarks/generate.py, cached under /tmp/sessiontree-bench) a
fresh daemon opens it, then asks for: the first page of the folded tree (200 rows), the page that
shows the leaf, a later page, the first page of the longest run, and the whole flat tree. Each is
a client-side round trip, the answer's size on the wire beside it; medians over `--runs` daemons.
`--leaf-first` asks for the leaf's page before the first page (as the Neovim and VS Code views
do when they open); `--no-tree` leaves out the flat tree (20 s at 1,000,000 entries).
pi has no paged tree: its `getTree` is the flat tree, measured by run.py.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from daemon_bench import Daemon, copy_session

DATA = Path("/tmp/sessiontree-bench")
HERE = Path(__file__).resolve().parent


def session_file(size: int) -> Path:
    path = DATA / f"{size}.jsonl"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--sizes", str(size), "--list", "0", str(DATA)], check=True)
    return path


def timed(daemon: Daemon, method: str, params: dict[str, Any]) -> tuple[Any, float, int]:
    start = time.perf_counter()
    result, size = daemon.request_sized(method, params)
    return result, (time.perf_counter() - start) * 1000, size


def one_round(source: Path, leaf_first: bool = False, flat: bool = True) -> dict[str, tuple[float, int]]:
    with tempfile.TemporaryDirectory(prefix="sessiontree-treeview-") as tmp:
        root = Path(tmp) / "sessions"
        path = copy_session(source, root / "--bench--")
        daemon = Daemon(root, index_dir=Path(tmp) / "index")
        try:
            opened = daemon.request("session/open", {"path": str(path)})
            sid, found = opened["sessionId"], {}
            calls = [("first page (200 rows)", {"sessionId": sid}), ("page showing the leaf", {"sessionId": sid, "reveal": opened["leafId"]})]
            answers = {}
            for name, params in reversed(calls) if leaf_first else calls:
                answers[name], ms, size = timed(daemon, "session/treeView", params)
                found[f"{name} (first call)" if leaf_first and not found else name] = (ms, size)
            first = answers["first page (200 rows)"]
            _, ms, size = timed(daemon, "session/treeView", {"sessionId": sid, "offset": first["total"] // 2})
            found["a later page"] = (ms, size)
            runs = [row for row in first["rows"] if "run" in row]
            if runs:
                longest = max(runs, key=lambda row: row["run"]["count"])
                _, ms, size = timed(daemon, "session/treeView", {"sessionId": sid, "run": longest["id"]})
                found["first page of a run"] = (ms, size)
            if flat:
                _, ms, size = timed(daemon, "session/tree", {"sessionId": sid})
                found["session/tree (all of it)"] = (ms, size)
            found["rows in all"] = (float(first["total"]), 0)
        finally:
            daemon.stop()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--leaf-first", action="store_true", help="ask for the leaf's page before the first page")
    parser.add_argument("--no-tree", action="store_true", help="leave out the whole flat session/tree")
    args = parser.parse_args(argv)
    print("| size | call | median | on the wire |")
    print("|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        source = session_file(size)
        rounds = [one_round(source, args.leaf_first, not args.no_tree) for _ in range(args.runs)]
        for call in rounds[0]:
            values = [r[call][0] for r in rounds if call in r]
            if call == "rows in all":
                print(f"| {size:,} | {call} | {int(values[0]):,} | |")
                continue
            wire = rounds[0][call][1]
            print(f"| {size:,} | {call} | {statistics.median(values):.1f} ms | {wire / 1024:,.0f} KB |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
