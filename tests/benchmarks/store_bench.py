"""The PostgreSQL store against the file store: the same session, the same requests, over stdio.

Starts a throwaway PostgreSQL server (tests/support/postgres.py; crash-safe settings, with
`synchronous_commit` on and off), pushes the session into it, and runs on each store a fresh daemon:
open, the first context and tree, appends (sequential and pipelined), peak memory. Prints one table
of medians; a row per operation and size, a column per store.

Usage: python tests/benchmarks/store_bench.py [--sizes 10000,100000] [--runs 3] [--data /tmp/sessiontree-bench]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.postgres

from daemon_bench import Daemon, message
from run import ensure_data, session_file

from sessiontree.backend.postgres import PostgresBackend
from sessiontree.backend.postgres.transfer import push
from support.postgres import Cluster, server_bin

PROJECT = "--bench-project--"
STORES = ("files", "pg", "pg-async")  # the file store; PostgreSQL committing to disk; and without waiting for it


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def one_round(root: Path, file: Path, store: str, dsns: dict[str, str], sequential: int, pipelined: int) -> dict[str, float]:
    """A fresh daemon on one store: the operations in order, their times in ms."""
    if store == "files":
        os.environ.pop("SESSIONTREE_STORE", None)
    else:
        os.environ["SESSIONTREE_STORE"] = dsns[store]
    daemon = Daemon(root, index_dir=root / ".no-sidecars" / str(time.monotonic_ns()))
    try:
        times: dict[str, float] = {}
        start = time.perf_counter()
        opened = daemon.request("session/open", {"path": str(file)})
        times["open"] = _ms(start)
        session = {"sessionId": opened["sessionId"]}
        for op, method in (("context (first)", "session/context"), ("tree (first)", "session/tree")):
            start = time.perf_counter()
            daemon.request(method, session)
            times[op] = _ms(start)
        start = time.perf_counter()
        for n in range(sequential):
            daemon.request("session/append", {**session, "entry": message(1000, n)})
        times[f"{sequential:,} appends, sequential"] = _ms(start)
        start = time.perf_counter()
        daemon.pipelined("session/append", [{**session, "entry": message(1000, n)} for n in range(pipelined)])
        times[f"{pipelined:,} appends, pipelined"] = _ms(start)
        times["peak memory (MB)"] = daemon.peak_mb()
        return times
    finally:
        daemon.stop()
        os.environ.pop("SESSIONTREE_STORE", None)


def prepare(data: Path, size: int, base: Path, dsns: dict[str, str]) -> tuple[Path, Path, dict[str, float]]:
    """A root with a copy of the generated session, the same session pushed into each database."""
    root = base / f"root-{size}"
    (root / PROJECT).mkdir(parents=True, exist_ok=True)
    file = root / PROJECT / f"{size}.jsonl"
    file.write_bytes(session_file(data, size).read_bytes())
    pushed: dict[str, float] = {}
    for store in STORES[1:]:
        backend = PostgresBackend(root, dsns[store])
        try:
            start = time.perf_counter()
            outcome = push(backend, file)
            pushed[store] = _ms(start)
            assert outcome.outcome in ("created", "unchanged"), outcome
        finally:
            backend.close()
    return root, file, pushed


def fmt(op: str, value: float | None) -> str:
    if value is None:
        return "–"
    if "memory" in op:
        return f"{value:,.0f}"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.1f} ms"


def rate(op: str, value: float) -> str:
    count = int(op.split()[0].replace(",", "")) if "appends" in op else 0
    return f" ({count / value * 1000:,.0f}/s)" if count else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path("/tmp/sessiontree-bench"))
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--pipelined", type=int, default=5000)
    args = parser.parse_args()
    bin_dir = server_bin()
    if bin_dir is None:
        print("PostgreSQL is not installed (make postgres)", file=sys.stderr)
        return 2
    cluster = Cluster(bin_dir)
    cluster.init()
    cluster.start(settings="-c shared_buffers=256MB")  # fsync on: a commit waits for the disk
    base = Path(tempfile.mkdtemp(prefix="sessiontree-store-bench-"))
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        ensure_data(args.data, sizes, seed=1, list_count=0)  # run.py's sessions: generated when missing
        dsns = {"pg": cluster.create_database("bench"), "pg-async": cluster.create_database("bench_async")}
        dsns["pg-async"] += "&options=-c%20synchronous_commit%3Doff"
        rows: list[list[str]] = []
        for size in sizes:
            root, file, pushed = prepare(args.data, size, base, dsns)
            results: dict[str, list[dict[str, float]]] = {store: [] for store in STORES}
            for _ in range(args.runs):
                for store in STORES:  # alternating, so a busy moment hurts all alike
                    results[store].append(one_round(root, file, store, dsns, args.sequential, args.pipelined))
            rows.append([f"{size:,}", "push (in process)", "–", fmt("", pushed["pg"]), fmt("", pushed["pg-async"])])
            for op in results["files"][0]:
                cells = []
                for store in STORES:
                    value = statistics.median(r[op] for r in results[store])
                    cells.append(fmt(op, value) + rate(op, value))
                rows.append([f"{size:,}", op, *cells])
        print(table(["entries", "operation", "files", "PostgreSQL", "PostgreSQL, synchronous_commit off"], rows))
    finally:
        cluster.stop("fast")
        cluster.remove()
    return 0


def table(header: list[str], rows: list[list[Any]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


if __name__ == "__main__":
    sys.exit(main())
