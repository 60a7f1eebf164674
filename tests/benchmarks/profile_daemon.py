"""Where the daemon spends its time: one operation under py-spy, summarised by function.

    python tests/benchmarks/profile_daemon.py FILE OP [--rate 250] [--top 15]

OP is one of open, context, tree, path, fork, append, append-pipelined. The daemon runs under
`py-spy record` (from PyPI) on a copy of FILE; the session is opened first
(except for `open`, which is the operation itself) and the samples are
summarised as self and inclusive time per function.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import daemon_bench  # noqa: E402


def run(file: Path, op: str, raw: Path, rate: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="sessiontree-profile-"))
    try:
        copy = daemon_bench.copy_session(file, root / "--bench-project--")
        spy = str(Path(sys.executable).with_name("py-spy"))
        wrap = [spy, "record", "--format", "raw", "--rate", str(rate), "--output", str(raw), "--"]
        daemon = daemon_bench.Daemon(root, wrap=wrap)
        try:
            _drive(daemon, copy, op)
        finally:
            daemon.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _drive(daemon: daemon_bench.Daemon, copy: Path, op: str) -> None:
    opened: dict[str, Any] = daemon.request("session/open", {"path": str(copy)})
    session = {"sessionId": opened["sessionId"]}
    leaf = opened["leafId"]
    if op == "context":
        daemon.request("session/context", session)
    elif op == "tree":
        daemon.request("session/tree", session)
    elif op == "path":
        daemon.request("session/entries", {**session, "pathTo": leaf})
    elif op == "fork":
        daemon.request("session/fork", {**session, "entryId": leaf})
    elif op == "append":
        for n in range(2000):
            daemon.request("session/append", {**session, "entry": daemon_bench.message(1000, n)})
    elif op == "append-pipelined":
        daemon.pipelined("session/append", [{**session, "entry": daemon_bench.message(1000, n)} for n in range(20000)])


def _frame_name(frame: str) -> str:
    """`handle (sessiontree/x.py:12)` without the line number, and with a short path."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "server/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})"


def summarise(raw: Path, top: int) -> str:
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(f) for f in stack.split(";") if f]
        if not frames or "idle" in frames[-1] or any("_bootstrap" in f for f in frames):
            continue  # idle waits and the daemon's start-up imports are not the operation
        total += count
        self_time[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    lines = [f"{total} samples"]
    lines.append("self%  function")
    lines += [f"{100 * n / total:5.1f}  {name}" for name, n in self_time.most_common(top)]
    lines.append("incl%  function (sessiontree only)")
    ours = [(name, n) for name, n in inclusive.most_common() if "sessiontree/" in name]
    lines += [f"{100 * n / total:5.1f}  {name}" for name, n in ours[:top]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("op", choices=("open", "context", "tree", "path", "fork", "append", "append-pipelined"))
    parser.add_argument("--rate", type=int, default=250)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    args = parser.parse_args(argv)
    raw = args.raw or Path(tempfile.mkstemp(suffix=".txt")[1])
    run(args.file, args.op, raw, args.rate)
    print(summarise(raw, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
