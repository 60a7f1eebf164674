"""Start-up: how long a fresh process takes to be useful, before and after, and where the time goes.

    git worktree add /tmp/st-before <commit>
    python tests/benchmarks/startup.py --before /tmp/st-before/server --runs 15

Each row is the median of `--runs` fresh processes (after one warm-up):

- spawn -> `initialize` answered: `sessiontree serve` started, `initialize` written at once, until
  its answer is read (a fresh sessions root; `shutdown` and `exit` afterwards are not timed);
- `sessiontree tree` / `context` on clients/examples/demo-session.jsonl: spawn to exit;
- `python -c pass`: the interpreter alone, the floor under every row.

Every row is measured twice. "cached": modules load from bytecode caches, as an installed package
does (pip compiles at install); the caches are kept in a directory of this run's own. "compiled":
`PYTHONDONTWRITEBYTECODE=1` and no `__pycache__` in the package's tree, as a checkout run that way
is, so the package's own modules are compiled from source at every start (site-packages keep the
caches pip wrote).

The last tables split the daemon's imports (`python -X importtime -c "import sessiontree.cli,
sessiontree.server"`, what `sessiontree serve` imports, cached) into groups by the time spent in
each module itself, and list the modules that cost most with what they import (medians of runs).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "clients" / "examples" / "demo-session.jsonl"
DAEMON_IMPORTS = "import sessiontree.cli, sessiontree.server"
GROUPS: list[tuple[str, Callable[[str], bool]]] = [
    ("pygls, lsprotocol", lambda name: name.split(".")[0] in ("pygls", "lsprotocol")),
    ("wire layer (server, rpc, cli, config, client_summary)", lambda name: name.startswith(("sessiontree.rpc", "sessiontree.server", "sessiontree.cli", "sessiontree.config", "sessiontree.client_summary"))),
    ("domain (sessiontree: protocol, store, tree, service, ...)", lambda name: name.split(".")[0] == "sessiontree"),
    ("attrs, cattrs", lambda name: name.split(".")[0] in ("attr", "attrs", "cattrs", "typing_extensions", "exceptiongroup")),
    ("asyncio (and concurrent, ssl, selectors)", lambda name: name.split(".")[0] in ("asyncio", "concurrent", "ssl", "_ssl", "selectors", "_asyncio")),
    ("msgspec, orjson", lambda name: name.split(".")[0] in ("msgspec", "orjson")),
    ("other (stdlib)", lambda name: True),
]


def frame(message: object) -> bytes:
    body = orjson.dumps(message)
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


INITIALIZE = frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
STOP = frame({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}) + frame({"jsonrpc": "2.0", "method": "exit"})


class Side:
    """One version of the package (a `server/` directory) in one bytecode mode."""

    def __init__(self, server_dir: Path, cached: bool, cache_dir: Path) -> None:
        self.server_dir = server_dir
        self.env = {**os.environ, "PYTHONPATH": str(server_dir)}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env.pop("PYTHONPYCACHEPREFIX", None)
        if cached:
            self.env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
        else:
            self.env["PYTHONDONTWRITEBYTECODE"] = "1"
        script = Path(sys.executable).with_name("sessiontree")
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "sessiontree"]

    def spawn_to_initialize(self, root: Path) -> float:
        start = time.perf_counter()
        process = subprocess.Popen(
            [*self.command, "serve", "--sessions-dir", str(root)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env, bufsize=0,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(INITIALIZE)
        _read_message(process.stdout.fileno())
        spent = time.perf_counter() - start
        process.stdin.write(STOP)
        process.stdin.close()
        process.wait(10)
        process.stdout.close()
        return spent

    def command_time(self, *args: str) -> float:
        start = time.perf_counter()
        done = subprocess.run([*self.command, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env)
        spent = time.perf_counter() - start
        if done.returncode != 0:
            raise RuntimeError(f"{args} failed: {done.stderr.decode()}")
        return spent

    def python_pass(self) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=self.env, check=True)
        return time.perf_counter() - start

    def importtime(self, code: str) -> dict[str, tuple[int, int]]:
        """Each module's (self, cumulative) microseconds."""
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, env=self.env, check=True)
        times: dict[str, tuple[int, int]] = {}
        for line in done.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if match:
                times[match.group(4)] = (int(match.group(1)), int(match.group(2)))
        return times


def _read_message(fd: int) -> bytes:
    data = b""
    while True:
        header_end = data.find(b"\r\n\r\n")
        if header_end >= 0:
            length = int(data[: header_end].split(b":")[1])
            if len(data) >= header_end + 4 + length:
                return data[header_end + 4 : header_end + 4 + length]
        select.select([fd], [], [], 10)
        chunk = os.read(fd, 65536)
        if not chunk:
            raise EOFError("the daemon closed its output before answering initialize")
        data += chunk


def _has_pycache(server_dir: Path) -> bool:
    return any(server_dir.rglob("__pycache__"))


def timings(sides: dict[str, Side], runs: int) -> dict[str, dict[str, float]]:
    """Median ms per measurement and side. The sides take turns run by run, so a machine that
    gets busier or quieter while this runs weighs on every side alike; the first round is a
    warm-up (it writes the bytecode caches in the cached mode and fills the OS's caches)."""
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    with tempfile.TemporaryDirectory(prefix="sessiontree-startup-") as tmp:
        example = Path(tmp) / EXAMPLE.name  # a copy: nothing the commands do touches the repository
        shutil.copyfile(EXAMPLE, example)
        roots = {name: Path(tmp) / f"root-{index}" for index, name in enumerate(sides)}
        for root in roots.values():
            root.mkdir()
        measurements: dict[str, Callable[[Side, Path], float]] = {
            "spawn → initialize answered": lambda side, root: side.spawn_to_initialize(root),
            "sessiontree tree, example": lambda side, root: side.command_time("tree", str(example)),
            "sessiontree context, example": lambda side, root: side.command_time("context", str(example)),
            "python -c pass": lambda side, root: side.python_pass(),
        }
        for mode in ("cached", "compiled"):
            for what, measure in measurements.items():
                samples: dict[str, list[float]] = defaultdict(list)
                for round_ in range(runs + 1):
                    for name, side in sides.items():
                        if name.endswith(mode):
                            spent = measure(side, roots[name])
                            if round_:
                                samples[name.rsplit(" ", 1)[0]].append(spent * 1000)
                for label, values in samples.items():
                    rows[f"{what} ({mode})"][label] = statistics.median(values)
    return rows


def import_profile(side: Side, runs: int) -> dict[str, tuple[float, float]]:
    """Median (self, cumulative) milliseconds per module of the daemon's imports."""
    side.importtime(DAEMON_IMPORTS)  # warm-up
    samples = [side.importtime(DAEMON_IMPORTS) for _ in range(runs)]
    names = set().union(*samples)
    return {
        name: (
            statistics.median(s.get(name, (0, 0))[0] for s in samples) / 1000,
            statistics.median(s.get(name, (0, 0))[1] for s in samples) / 1000,
        )
        for name in names
    }


def groups(profile: dict[str, tuple[float, float]]) -> dict[str, float]:
    totals: dict[str, float] = {label: 0.0 for label, _ in GROUPS}
    for name, (own, _) in profile.items():
        label = next(label for label, belongs in GROUPS if belongs(name))
        totals[label] += own
    return totals


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) + " |" for line in [header, *rows]]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, help="a server/ directory to compare with (e.g. a git worktree's)")
    parser.add_argument("--after", type=Path, default=REPO / "server", help="the server/ directory measured (default: this checkout's)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--top", type=int, default=12, help="modules listed by cumulative import time")
    args = parser.parse_args()

    versions = {"after": args.after.resolve()}
    if args.before is not None:
        versions = {"before": args.before.resolve(), **versions}
    for server_dir in versions.values():
        if _has_pycache(server_dir):
            print(f"note: {server_dir} holds __pycache__ directories: its 'compiled' rows load some modules from them")
    with tempfile.TemporaryDirectory(prefix="sessiontree-pyc-") as caches:
        sides = {
            f"{label} {mode}": Side(server_dir, mode == "cached", Path(caches) / label)
            for mode in ("cached", "compiled")
            for label, server_dir in versions.items()
        }
        rows = timings(sides, args.runs)
        profiles = {label: import_profile(sides[f"{label} cached"], args.runs) for label in versions}

    labels = list(versions)
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, {platform.system()}; medians of {args.runs} runs, ms\n")
    header = ["measurement", *labels] + (["after/before"] if len(labels) == 2 else [])
    body = []
    for name, by_label in rows.items():
        cells = [f"{by_label[label]:.0f}" for label in labels]
        if len(labels) == 2:
            cells.append(f"{by_label['after'] / by_label['before']:.2f}")
        body.append([name, *cells])
    print(table(header, body))

    print(f"\nThe daemon's imports by group (`{DAEMON_IMPORTS}`, cached), ms spent in the modules themselves\n")
    grouped = {label: groups(profile) for label, profile in profiles.items()}
    group_rows = [[name, *(f"{grouped[label][name]:.0f}" for label in labels)] for name, _ in GROUPS]
    group_rows.append(["total", *(f"{sum(grouped[label].values()):.0f}" for label in labels)])
    print(table(["group", *labels], group_rows))

    for label, profile in profiles.items():
        print(f"\nTop {args.top} modules by cumulative import time, {label} (ms: itself, with what it imports)\n")
        top = sorted(profile.items(), key=lambda item: -item[1][1])[: args.top]
        print(table(["module", "self", "cumulative"], [[name, f"{own:.1f}", f"{cum:.1f}"] for name, (own, cum) in top]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
