"""The benchmark: the daemon over stdio against pi's own SessionManager, in one run.

    python tests/benchmarks/run.py [--sizes 1000,10000,100000] [--runs N] [--quick]
    python tests/benchmarks/run.py --sizes 1000000 --runs 3 --list 0 --open-only

Generates (once, deterministically, under --data) one session per size and a
directory of sessions of mixed sizes for listing. Then, per size, it runs rounds
alternating pi and the daemon (each round a fresh process on a fresh copy of the
session); the first round of each is a warm-up and is discarded. Prints one
table: per size and operation, the medians, ours/pi, the peak memory of both
processes and whether the target is met.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import daemon_bench  # noqa: E402
import generate  # noqa: E402

PI_BENCH = HERE / "pi_bench.mjs"
PROJECT_DIR = generate.PROJECT_DIR
NODE = ["node", "--expose-gc", "--max-old-space-size=8192"]

Rounds = list[dict[str, Any]]


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    text: str
    check: Callable[[float | None, float, float | None, float], bool]  # pi ms, ours ms, pi MB, ours MB


def _ratio(limit: float) -> Callable[[float | None, float, float | None, float], bool]:
    return lambda pi, ours, _pm, _om: pi is not None and ours <= pi * limit


def _open_target(size: int) -> Target | None:
    if size >= 1_000_000:
        return Target("<3 s, <1 GB, ≤1/8, mem ≤1/4", lambda pi, ours, pm, om: ours < 3000 and om < 1024 and _ratio(1 / 8)(pi, ours, pm, om) and pm is not None and om <= pm / 4)
    return Target("≤1/8, mem ≤1/4", lambda pi, ours, pm, om: _ratio(1 / 8)(pi, ours, pm, om) and pm is not None and om <= pm / 4)


def target_for(op: str, size: int) -> Target | None:
    if op == "open":
        return _open_target(size)
    if op in ("context", "context_first"):
        return Target("≤1/20", _ratio(1 / 20))
    if op == "context_after_append_daemon":
        return Target("<1 ms", lambda _p, ours, _pm, _om: ours < 1)
    if op == "turn":
        return Target("≤1", _ratio(1))
    if op in ("tree", "tree_first"):
        return Target("≤1", _ratio(1))
    if op == "fork":
        return Target("≤1/10", _ratio(1 / 10))
    if op == "reopen" and 100_000 <= size < 1_000_000:
        return Target("<50 ms", lambda _p, ours, _pm, _om: ours < 50)
    if op == "append_seq":
        return Target("≥10,000/s", lambda _p, ours, _pm, _om: ours <= 100)  # 1,000 appends
    if op == "append_pipelined":
        return Target("≥20,000/s", lambda _p, ours, _pm, _om: ours <= 500)  # 10,000 appends
    if op == "list":
        return Target("≤1", _ratio(1))
    return None


OPS = [
    "open",
    "context_first",
    "context",
    "context_after_append",
    "context_after_append_daemon",
    "turn",
    "turn_whole",
    "tree_first",
    "tree",
    "path",
    "fork",
    "reopen",
    "append_seq",
    "append_pipelined",
    "roundtrip_floor",
]
LABELS = {
    "open": "open",
    "context_first": "context at leaf (first)",
    "context": "context at leaf (again)",
    "context_after_append": "context after append",
    "context_after_append_daemon": "  the same, in the daemon",
    "turn": "agent turn: 3 appends + context",
    "turn_whole": "  the same, whole context (no since)",
    "tree_first": "tree (first)",
    "tree": "tree (again)",
    "path": "path root..leaf",
    "fork": "fork leaf path",
    "reopen": "reopen unchanged",
    "append_seq": "1,000 appends, sequential",
    "append_pipelined": "10,000 appends, pipelined",
    "roundtrip_floor": "stdio round trip (info)",
    "list": "list",
}


# --------------------------------------------------------------------------- data


def ensure_data(data: Path, sizes: list[int], seed: int, list_count: int) -> None:
    """Generate what is missing; a stamp records the seed so a changed seed regenerates."""
    stamp = data / "stamp.json"
    wanted = {"seed": seed, "generator": (HERE / "generate.py").stat().st_mtime_ns}
    if stamp.exists() and json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(data / "sessions", ignore_errors=True)
        shutil.rmtree(data / "list", ignore_errors=True)
    corpus: generate.Corpus | None = None
    for size in sizes:
        path = session_file(data, size)
        if not path.exists():
            corpus = corpus or generate.Corpus(random.Random(seed))
            note(f"generating {path}")
            partial = path.with_suffix(".partial")
            generate.write_session(partial, size, seed + size, corpus)
            partial.rename(path)
    listing = list_dir(data)
    done = listing.parent / "done"
    if list_count and not (done.exists() and done.read_text() == str(list_count)):
        corpus = corpus or generate.Corpus(random.Random(seed))
        note(f"generating {list_count} sessions in {listing}")
        shutil.rmtree(listing.parent, ignore_errors=True)
        generate.write_list_dir(listing, list_count, seed, corpus)
        done.write_text(str(list_count))
    data.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(wanted))


def session_file(data: Path, size: int) -> Path:
    return data / "sessions" / f"{size}.jsonl"


def list_dir(data: Path) -> Path:
    return data / "list" / generate.LIST_DIR


def pin_engine(revision: str, data: Path) -> str:
    """Run the daemon from `revision`'s server/ (a clean export), not the working tree; returns the commit."""
    repo = HERE.parent.parent
    commit = subprocess.run(["git", "rev-parse", revision], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    target = data / f"engine-{commit[:12]}"
    if not (target / "server").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "server"], cwd=repo, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    # The editable install is a plain path entry: PYTHONPATH comes before it in the daemon's sys.path.
    os.environ["PYTHONPATH"] = str(target / "server")
    return commit


def engine_note(args: argparse.Namespace) -> str:
    if args.engine:
        return f"engine: commit {pin_engine(args.engine, args.data)}"
    return "engine: the working tree"


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- rounds


def pi_round(config: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run([*NODE, str(PI_BENCH), json.dumps(config)], capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pi_bench.mjs failed: {done.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(done.stdout)


def session_rounds(data: Path, size: int, args: argparse.Namespace) -> tuple[Rounds, Rounds]:
    source = session_file(data, size)
    work = data / "work"
    pi_results: Rounds = []
    ours: Rounds = []
    for number in range(args.runs + 1):
        for side in ("pi", "daemon") if number % 2 == 0 else ("daemon", "pi"):
            copy = daemon_bench.copy_session(source, work / side / PROJECT_DIR)
            started = time.perf_counter()
            if side == "pi":
                config = {"mode": "session", "file": str(copy), "reps": args.reps, "sequential": 1000, "pipelined": 10000, "payload": 1000}
                config["skip"] = [op for op in args.pi_skip.split(",") if op]
                result = pi_round({**config, "mode": "open"} if args.open_only else config)
                (pi_results if number else []).append(result)
            elif args.open_only:
                (ours if number else []).append(daemon_bench.open_round(work / side, copy))
            else:
                result = daemon_bench.session_round(work / side, copy, args.reps, 1000, 10000, 1000)
                (ours if number else []).append(result)
            note(f"  {size:>9,} {side:<6} round {number}{' (warm-up)' if not number else ''}: {time.perf_counter() - started:.1f} s")
    shutil.rmtree(work, ignore_errors=True)
    return pi_results, ours


def list_rounds(data: Path, args: argparse.Namespace) -> tuple[Rounds, Rounds]:
    directory = list_dir(data)
    pi_results: Rounds = []
    ours: Rounds = []
    for number in range(args.runs + 1):
        for side in ("pi", "daemon") if number % 2 == 0 else ("daemon", "pi"):
            if side == "pi":
                result = pi_round({"mode": "list", "dir": str(directory), "cwd": generate.LIST_CWD})
                (pi_results if number else []).append(result)
            else:
                result = daemon_bench.list_round(directory.parent, generate.LIST_CWD)
                (ours if number else []).append(result)
            note(f"  list {side:<6} round {number}: {result['ops']['list']['ms'][0]:.0f} ms, {result['ops']['list']['count']} sessions")
    return pi_results, ours


# --------------------------------------------------------------------------- the table


def summarize(rounds: Rounds, op: str) -> tuple[float, float] | None:
    """Median time over every measured sample of `op`, and the highest peak memory seen after it."""
    samples = [ms for r in rounds if op in r["ops"] for ms in r["ops"][op]["ms"]]
    if not samples:
        return None
    peak = max(r["ops"][op]["peakMb"] for r in rounds if op in r["ops"])
    return statistics.median(samples), peak


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return "–"
    if ms < 1:
        return f"{ms:.2f} ms"
    if ms < 1000:
        return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ms / 1000:.2f} s"


def rate(op: str, ms: float | None) -> str:
    count = {"append_seq": 1000, "append_pipelined": 10000}.get(op)
    return f" ({count / ms * 1000:,.0f}/s)" if count and ms else ""


def row(size_label: str, size: int, op: str, pi_rounds: Rounds, our_rounds: Rounds) -> list[str] | None:
    ours = summarize(our_rounds, op)
    if ours is None:
        return None
    pi = summarize(pi_rounds, op)
    pi_ms, pi_mb = pi if pi else (None, None)
    our_ms, our_mb = ours
    target = target_for(op, size)
    met = "" if target is None else ("yes" if target.check(pi_ms, our_ms, pi_mb, our_mb) else "NO")
    return [
        size_label,
        LABELS[op],
        fmt_ms(pi_ms) + rate(op, pi_ms),
        fmt_ms(our_ms) + rate(op, our_ms),
        f"{our_ms / pi_ms:.3f}" if pi_ms else "–",
        f"{pi_mb:,.0f}" if pi_mb is not None else "–",
        f"{our_mb:,.0f}",
        target.text if target else "",
        met,
    ]


HEADER = ["size", "operation", "pi (median)", "ours (median)", "ours/pi", "pi peak MB", "ours peak MB", "target", "met"]


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |" for line in [HEADER, *rows]]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="entries per session, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="measured rounds per side (after one warm-up round)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of the fast operations within a round")
    parser.add_argument("--list", type=int, default=2000, help="sessions in the listing directory (0: skip listing)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", type=Path, default=Path("/tmp/sessiontree-bench"), help="where generated sessions go")
    parser.add_argument("--json", type=Path, help="also write every raw measurement here")
    parser.add_argument("--pi-skip", default="", metavar="OPS", help="pi operations to leave out, e.g. fork (quadratic in pi at 1,000,000)")
    parser.add_argument("--engine", metavar="REV", help="measure the daemon of this git revision (default: the working tree)")
    parser.add_argument("--quick", action="store_true", help="sizes 1,000 and 10,000, 2 runs, 3 reps")
    parser.add_argument("--open-only", action="store_true", help="only open and reopen (for 1,000,000 entries)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.runs, args.reps = "1000,10000", 2, 3
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    ensure_data(args.data, sizes, args.seed, args.list)
    engine = engine_note(args)
    note(engine)
    rows: list[list[str]] = []
    raw: dict[str, Any] = {}
    for size in sizes:
        megabytes = session_file(args.data, size).stat().st_size / 1e6
        note(f"{size:,} entries ({megabytes:.1f} MB)")
        pi_rounds, our_rounds = session_rounds(args.data, size, args)
        raw[str(size)] = {"pi": pi_rounds, "ours": our_rounds, "mb": megabytes}
        label = f"{size:,} ({megabytes:.1f} MB)"
        rows.extend(r for op in OPS if (r := row(label, size, op, pi_rounds, our_rounds)) is not None)
    if args.list:
        note(f"listing {args.list:,} sessions")
        pi_rounds, our_rounds = list_rounds(args.data, args)
        raw["list"] = {"pi": pi_rounds, "ours": our_rounds}
        rows.extend(r for r in [row(f"{args.list:,} sessions", 0, "list", pi_rounds, our_rounds)] if r is not None)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{engine}; {os.cpu_count()} cores; runs {args.runs} (+1 warm-up), reps {args.reps}; load average at the end {load}")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
