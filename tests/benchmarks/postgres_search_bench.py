"""Search with a PostgreSQL store against the file store's SQLite index: the same sessions, the same queries.

    python tests/benchmarks/postgres_search_bench.py [--sessions 60] [--megabytes 10] [--cwds 4] [--runs 9]

Generates sessions as search_bench.py does (cached under /tmp/sessiontree-pg-search-bench), starts a
throwaway PostgreSQL server (tests/support/postgres.py, fsync on), pushes the sessions into it, and
indexes them in both stores: the first index, a refresh with nothing changed, and an append of one
entry until a search finds it. Then times search_bench.py's queries on each (the first page of 20
hits, then the second). Prints one table of medians over `--runs`. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests/, for support.postgres

from search_bench import QUERIES, appended_line, generate_root, last_entry_id  # noqa: E402

from sessiontree.backend.files import FileSearch  # noqa: E402
from sessiontree.backend.postgres import PostgresBackend  # noqa: E402
from sessiontree.backend.postgres.search import PostgresSearch  # noqa: E402
from sessiontree.backend.postgres.transfer import push  # noqa: E402
from sessiontree.search import SearchIndex  # noqa: E402
from support.postgres import Cluster, server_bin  # noqa: E402

DATA = Path("/tmp/sessiontree-pg-search-bench")


def seconds(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def median_ms(runs: int, action: Callable[[], Any]) -> float:
    return statistics.median(seconds(action)[0] * 1000 for _ in range(runs))


def queries(index: Any, one_session: str, runs: int) -> list[tuple[str, str, int, float, float | None]]:
    """(query, options, hits on the first page, first page ms, second page ms)."""
    rows = []
    for query, options in QUERIES:
        options = {k: (one_session if v == "SESSION" else v) for k, v in options.items()}
        first = index.search(query, **options)
        page1 = median_ms(runs, partial(index.search, query, **options))
        page2 = median_ms(runs, partial(index.search, query, cursor=first.cursor, **options)) if first.cursor else None
        label = ", ".join(f"{k}={'one' if k == 'session' else v}" for k, v in options.items())
        rows.append((query, label, len(first.hits), page1, page2))
    return rows


def append_then_find(index: Any, backend: PostgresBackend | None, path: Path, runs: int) -> float:
    """Append one entry (to the file, or through the store) and time the refresh and the search that finds it."""
    times = []
    for run in range(runs):
        word = f"zzfresh{run:08d}{'pg' if backend else 'fs'}"
        data = appended_line(last_entry_id(path), word)
        with open(path, "ab") as out:
            out.write(data)
        if backend is not None:
            push(backend, path)
        start = time.perf_counter()
        index.refresh()
        hits = index.search(word).hits
        times.append((time.perf_counter() - start) * 1000)
        assert len(hits) == 1, word
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--megabytes", type=int, default=10)
    parser.add_argument("--cwds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    bin_dir = server_bin()
    if bin_dir is None:
        print("PostgreSQL is not installed (make postgres)", file=sys.stderr)
        return 2
    total = generate_root(DATA / "sessions", args.sessions, args.megabytes, args.cwds, args.seed)
    cluster = Cluster(bin_dir)
    cluster.init()
    cluster.start(settings="-c shared_buffers=256MB")
    base = Path(tempfile.mkdtemp(prefix="sessiontree-pg-search-bench-"))
    try:
        root = base / "sessions"  # a copy: the appends below must not change the generated sessions
        shutil.copytree(DATA / "sessions", root)
        files = sorted(root.rglob("*.jsonl"))
        one_session = str(max(files, key=lambda p: p.stat().st_size))
        backend = PostgresBackend(root, cluster.create_database("bench"))
        backend.start()
        pushed_s, _ = seconds(lambda: [push(backend, path) for path in files])
        stores: dict[str, Any] = {
            "files": FileSearch(SearchIndex(base / "search.sqlite3"), root),
            "pg": PostgresSearch(backend.db.dsn, root, backend.connection, backend.db),
        }
        first = {name: seconds(index.refresh) for name, index in stores.items()}
        unchanged = {name: median_ms(args.runs, index.refresh) for name, index in stores.items()}
        entries = first["pg"][1].entries_added
        rows = {name: queries(index, one_session, args.runs) for name, index in stores.items()}
        appended = {
            "files": append_then_find(stores["files"], None, Path(one_session), args.runs),
            "pg": append_then_find(stores["pg"], backend, Path(one_session), args.runs),
        }
        print(
            f"\n{len(files)} sessions, {total / 1e6:.1f} MB, {entries:,} entries (pushed in {pushed_s:.1f} s);"
            f" medians of {args.runs}\n"
        )
        print("| measure | files (SQLite FTS5) | PostgreSQL |")
        print("|---|---:|---:|")
        print(f"| first index | {first['files'][0]:.2f} s | {first['pg'][0]:.2f} s |")
        print(f"| refresh, nothing changed | {unchanged['files']:.1f} ms | {unchanged['pg']:.1f} ms |")
        print(f"| append one entry → refresh → found | {appended['files']:.1f} ms | {appended['pg']:.1f} ms |")
        print("\n| query | options | hits | files: first page | PostgreSQL: first page | files: second | PostgreSQL: second |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for (query, label, hits, page1, page2), (_, _, pg_hits, pg1, pg2) in zip(rows["files"], rows["pg"], strict=True):
            second = f"{page2:.1f} ms" if page2 is not None else "–"
            pg_second = f"{pg2:.1f} ms" if pg2 is not None else "–"
            shown = f"{hits}" if hits == pg_hits else f"{hits} / {pg_hits}"
            print(f"| `{query}` | {label} | {shown} | {page1:.1f} ms | {pg1:.1f} ms | {second} | {pg_second} |")
        for index in stores.values():
            index.close()
        backend.close()
    finally:
        cluster.stop()
        cluster.remove()
        shutil.rmtree(base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
