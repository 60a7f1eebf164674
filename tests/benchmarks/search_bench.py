"""What the search index costs: a first index, keeping up with an append, and queries.

    python tests/benchmarks/search_bench.py [--sessions 2000] [--megabytes 1000] [--cwds 8] [--runs 9]

Generates `--sessions` sessions of mixed sizes (tests/benchmarks/generate.py's sessions and size
mix, scaled to about `--megabytes` in all, spread over `--cwds` project directories; cached under
/tmp/sessiontree-search-bench), then, in a fresh process so that its peak memory is the index's
own: indexes them all into an empty database, refreshes again with nothing changed, appends one
entry to a session and times until a search finds it (a refresh of that file, then the search;
and a refresh of the whole root), and times queries (the first page of 20 hits, then the second).
Prints one table of medians over `--runs`. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

from sessiontree.search import SearchIndex  # noqa: E402

DATA = Path("/tmp/sessiontree-search-bench")
BYTES_PER_ENTRY = 1340  # what generate.py's full-size profile averages, to scale the mix to a size
TARGETS = {"first index": "≤ 60 s", "peak RSS": "≤ 300 MB", "append → found": "≤ 50 ms", "query": "≤ 50 ms"}
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("session", {}),
    ("session tree", {}),
    ('"session tree"', {}),
    ("sess*", {}),
    ("readFileSync", {}),
    ("StorageError OR buildIndex", {}),
    ('"update fix check"', {}),
    ("nosuchwordanywhere", {}),
    ("test_store.py", {"syntax": "plain"}),
    ("session", {"roles": ["user"]}),
    ("session", {"types": ["branch_summary", "compaction"]}),
    ("session", {"cwd": "/bench/search/p3"}),
    ("session", {"session": "SESSION"}),
    ("session", {"since_ms": 1_780_000_000_000}),
]


# --------------------------------------------------------------------------- the sessions


def generate_root(root: Path, sessions: int, megabytes: int, cwds: int, seed: int) -> int:
    """The sessions under `root` in pi's layout (kept between runs with the same arguments)."""
    marker = root / "generated.json"
    wanted = {"sessions": sessions, "megabytes": megabytes, "cwds": cwds, "seed": seed}
    if marker.exists() and json.loads(marker.read_text())["args"] == wanted:
        return int(json.loads(marker.read_text())["bytes"])
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    sizes = generate.list_sizes(rng, sessions)
    scale = megabytes * 1e6 / (sum(sizes) * BYTES_PER_ENTRY)
    corpus = generate.Corpus(random.Random(seed))
    total = 0
    for number, entries in enumerate(sizes):
        project = f"p{number % cwds}"
        file_seed = seed * 100_003 + number
        name = f"2026-01-{1 + number % 28:02d}T10-00-{number % 60:02d}-000Z_{generate.session_id_for(file_seed)}.jsonl"
        path = root / f"--bench-search-{project}--" / name
        total += generate.write_session(
            path, max(2, round(entries * scale)), file_seed, corpus, f"/bench/search/{project}"
        )
    marker.write_text(json.dumps({"args": wanted, "bytes": total}))
    return total


# --------------------------------------------------------------------------- measuring (in a fresh process)


def median_ms(runs: int, action: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def last_entry_id(path: Path) -> str:
    with open(path, "rb") as source:
        source.seek(max(0, path.stat().st_size - 65536))
        return str(json.loads(source.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])["id"])


def appended_line(parent: str, word: str) -> bytes:
    message = {"role": "user", "content": [{"type": "text", "text": f"a new question about {word}"}], "timestamp": 0}
    entry = {
        "type": "message",
        "id": word[-8:],
        "parentId": parent,
        "timestamp": "2026-12-01T00:00:00.000Z",
        "message": message,
    }
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def measure(root: Path, database: Path, runs: int) -> dict[str, Any]:
    for stale in database.parent.glob(database.name + "*"):
        stale.unlink()
    out: dict[str, Any] = {}
    with SearchIndex(database) as index:
        start = time.perf_counter()
        stats = index.refresh(root)
        out["first"] = {
            "s": time.perf_counter() - start,
            "rss": peak_rss_mb(),
            "entries": stats.entries_added,
            "bytes": stats.bytes_read,
        }
        out["db_mb"] = sum(p.stat().st_size for p in database.parent.glob(database.name + "*")) / 1e6
        out["unchanged_ms"] = median_ms(runs, lambda: index.refresh(root))
        out.update(measure_appends(index, root, runs))
        out["queries"] = measure_queries(index, root, runs)
        out["rss_after"] = peak_rss_mb()
    return out


def measure_appends(index: SearchIndex, root: Path, runs: int) -> dict[str, Any]:
    target = max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size)  # the biggest: the worst case
    rng = random.Random()
    one: list[float] = []
    whole: list[float] = []
    for attempt in range(runs * 2):
        word = f"fresh{rng.getrandbits(40):010x}"
        data = appended_line(last_entry_id(target), word)
        start = time.perf_counter()
        with open(target, "ab") as out:
            out.write(data)
        if attempt % 2 == 0:
            index.refresh(root, files=[target])
        else:
            index.refresh(root)
        hits = index.search(word).hits
        elapsed = (time.perf_counter() - start) * 1000
        assert [hit.entry_id for hit in hits] == [word[-8:]] and hits[0].on_leaf_path, hits
        (one if attempt % 2 == 0 else whole).append(elapsed)
    return {
        "append_file_ms": statistics.median(one),
        "append_root_ms": statistics.median(whole),
        "target_mb": target.stat().st_size / 1e6,
    }


def measure_queries(index: SearchIndex, root: Path, runs: int) -> list[dict[str, Any]]:
    one_session = str(max(root.rglob("*.jsonl"), key=lambda p: p.stat().st_size))
    rows = []
    for query, options in QUERIES:
        options = {k: (one_session if v == "SESSION" else v) for k, v in options.items()}
        first = index.search(query, **options)
        page1 = median_ms(runs, partial(index.search, query, **options))
        page2 = median_ms(runs, partial(index.search, query, cursor=first.cursor, **options)) if first.cursor else None
        label = ", ".join(f"{k}={'one' if k == 'session' else v}" for k, v in options.items())
        rows.append({"query": query, "options": label, "hits": len(first.hits), "page1": page1, "page2": page2})
    return rows


# --------------------------------------------------------------------------- the table


def print_table(args: argparse.Namespace, total: int, result: dict[str, Any]) -> None:
    first = result["first"]
    print(
        f"\nsearch index: {args.sessions} sessions, {total / 1e6:.0f} MB in {args.cwds} cwds, {first['entries']:,} entries; medians of {args.runs}\n"
    )
    print("| measure | result | target |")
    print("|---|---:|---|")
    print(
        f"| first index ({first['bytes'] / 1e6:.0f} MB read) | {first['s']:.1f} s ({first['bytes'] / 1e6 / first['s']:.0f} MB/s) | {TARGETS['first index']} |"
    )
    print(f"| peak RSS of the indexing process | {first['rss']:.0f} MB | {TARGETS['peak RSS']} |")
    print(f"| database on disk | {result['db_mb']:.0f} MB | |")
    print(f"| refresh of the root, nothing changed | {result['unchanged_ms']:.1f} ms | |")
    print(
        f"| append one entry → refresh that file → found ({result['target_mb']:.0f} MB session) | {result['append_file_ms']:.1f} ms | {TARGETS['append → found']} |"
    )
    print(
        f"| append one entry → refresh the whole root → found | {result['append_root_ms']:.1f} ms | {TARGETS['append → found']} |"
    )
    print("\n| query | options | hits | first page | second page |")
    print("|---|---|---:|---:|---:|")
    for row in result["queries"]:
        page2 = f"{row['page2']:.1f} ms" if row["page2"] is not None else "–"
        print(f"| `{row['query']}` | {row['options']} | {row['hits']} | {row['page1']:.1f} ms | {page2} |")
    print(f"\npeak RSS after the queries: {result['rss_after']:.0f} MB (query target {TARGETS['query']})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--megabytes", type=int, default=1000)
    parser.add_argument("--cwds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--measure", nargs=2, metavar=("ROOT", "DATABASE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # the child: measure, print the result as JSON
        print(json.dumps(measure(Path(args.measure[0]), Path(args.measure[1]), args.runs)))
        return 0
    root = DATA / f"sessions-{args.sessions}-{args.megabytes}mb"
    print(f"generating {root} …", file=sys.stderr)
    total = generate_root(root, args.sessions, args.megabytes, args.cwds, args.seed)
    database = DATA / "cache" / "search.sqlite3"
    database.parent.mkdir(parents=True, exist_ok=True)
    print("indexing and querying in a fresh process …", file=sys.stderr)
    child = subprocess.run(
        [sys.executable, __file__, "--runs", str(args.runs), "--measure", str(root.resolve()), str(database)],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    print_table(args, total, json.loads(child.stdout))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
