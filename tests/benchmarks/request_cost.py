"""What one request at a time costs, and on which side: the bound on sequential appends.

    python tests/benchmarks/request_cost.py [--requests 5000] [--runs 3]

A client (this process: blocking reads and writes, orjson) sends a request, waits for its answer,
and sends the next. Each row gives the time per round trip and the CPU time (user + system, from
`/proc`) each process spent per request; medians of `--runs`. Rows:

- `echo`: a Python process that reads each frame and writes it back, with blocking reads and no
  event loop: what the pipes, the wake-ups and framing cost on this machine, the floor of any
  Python daemon;
- `session/info`: the daemon's cheapest request (a few microseconds of work in the service);
- `session/append`: a 1 KB user message, as `make bench`'s sequential appends send it.

The daemon's rows come once per event loop: asyncio's own, and uvloop's when it is installed
(the daemon uses it then; SESSIONTREE_EVENT_LOOP=asyncio turns it off).

One request at a time, the two processes never run together: a round trip is at least the sum of
both sides' CPU time, and a rate of 10,000 per second needs both under 100 us together.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
ECHO = """
import sys
read, write = sys.stdin.buffer, sys.stdout.buffer
while header := read.readline():
    length = int(header[16:-2]); read.readline()
    body = read.read(length)
    write.write(b"Content-Length: %d\\r\\n\\r\\n" % length + body); write.flush()
"""
APPEND = {"type": "message", "message": {"role": "user", "content": "x" * 1000, "timestamp": 1}}


class Peer:
    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO, env=env
        )
        self.ids = 0

    def call(self, method: str, params: object) -> dict:
        self.ids += 1
        body = orjson.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        stdin.flush()
        while True:
            length = int(stdout.readline()[16:-2])
            stdout.readline()
            message = orjson.loads(stdout.read(length))
            if "id" in message:
                return message

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def measure(peer: Peer, call: Callable[[], object], requests: int) -> tuple[float, float, float]:
    """Per request: round trip, the peer's CPU, this client's CPU (seconds)."""
    for _ in range(200):
        call()
    peer_before, mine_before, start = peer.cpu_seconds(), time.process_time(), time.perf_counter()
    for _ in range(requests):
        call()
    elapsed = time.perf_counter() - start
    return elapsed / requests, (peer.cpu_seconds() - peer_before) / requests, (time.process_time() - mine_before) / requests


def daemon(root: Path, loop: str) -> tuple[Peer, str]:
    env = {**os.environ, "SESSIONTREE_EVENT_LOOP": loop}
    peer = Peer([sys.executable, "-m", "sessiontree", "serve", "--sessions-dir", str(root)], env)
    peer.call("initialize", {"processId": None, "capabilities": {}})
    (root / "p").mkdir(exist_ok=True)
    created = peer.call("session/create", {"cwd": "/w", "path": str(root / "p" / f"{time.monotonic_ns()}.jsonl")})
    return peer, created["result"]["sessionId"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sessiontree-request-cost-"))
    loops = ["asyncio", "uvloop"] if importlib.util.find_spec("uvloop") else ["asyncio"]
    rows: dict[str, list[tuple[float, float, float]]] = {"echo": []}
    try:
        for _ in range(args.runs):
            echo = Peer([sys.executable, "-c", ECHO])
            rows["echo"].append(measure(echo, lambda echo=echo: echo.call("echo", {}), args.requests))
            echo.close()
            for loop in loops:
                peer, sid = daemon(root, loop)
                info = lambda peer=peer, sid=sid: peer.call("session/info", {"sessionId": sid})  # noqa: E731
                append = lambda peer=peer, sid=sid: peer.call("session/append", {"sessionId": sid, "entry": APPEND})  # noqa: E731
                rows.setdefault(f"session/info ({loop})", []).append(measure(peer, info, args.requests))
                rows.setdefault(f"session/append (1 KB, {loop})", []).append(measure(peer, append, args.requests))
                peer.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.requests:,} requests one at a time, medians of {args.runs} runs; load average {os.getloadavg()[0]:.1f}")
    print("| request | round trip | per second | the other side's CPU | the client's CPU |")
    print("|---|---|---|---|---|")
    for name, found in rows.items():
        trip, peer_cpu, mine = (statistics.median(column) for column in zip(*found, strict=True))
        print(f"| {name} | {trip * 1e6:.0f} us | {1 / trip:,.0f} | {peer_cpu * 1e6:.0f} us | {mine * 1e6:.0f} us |")


if __name__ == "__main__":
    main()
