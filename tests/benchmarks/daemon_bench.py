"""One benchmark round on the daemon, over real stdio, from a fresh `sessiontree serve`.

The same operations as pi_bench.mjs, as JSON-RPC requests. Times are client-side
round trips (request written to response decoded); peak memory is the daemon's
VmHWM from /proc. Slow operations run once per process (the runner repeats whole
rounds); fast ones run once to warm up, then `reps` times.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

Result = dict[str, Any]
FILLER = "lorem ipsum dolor sit amet "  # as padEnd in pi_bench.mjs


def serve_command(root: Path) -> list[str]:
    """The installed console script when there is one beside this interpreter, else `-m`."""
    script = Path(sys.executable).with_name("sessiontree")
    base = [str(script)] if script.exists() else [sys.executable, "-m", "sessiontree"]
    return [*base, "serve", "--sessions-dir", str(root)]


class RpcError(RuntimeError):
    pass


class Daemon:
    """A minimal blocking client: Content-Length framing and orjson, so the client costs little."""

    def __init__(self, root: Path, wrap: list[str] | None = None, index_dir: Path | None = None) -> None:
        self.process = subprocess.Popen(
            [*(wrap or []), *serve_command(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        self.stdout = open(self.process.stdout.fileno(), "rb", buffering=1 << 20, closefd=False)  # noqa: SIM115 - read for the daemon's lifetime
        self.next_id = 0
        self.traces: list[str] = []  # `$/logTrace` messages, while tracing is on
        # Index sidecars in a directory of this round's own: an open scans, a reopen finds the sidecar.
        options = {"indexDir": str(index_dir or root / ".index")}
        self.request("initialize", {"processId": None, "capabilities": {}, "initializationOptions": options})
        self.send(self.frame("initialized", {}, None))

    # ----------------------------------------------------------------- framing

    def frame(self, method: str, params: Any, request_id: int | None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request_id is not None:
            message["id"] = request_id
        body = orjson.dumps(message)
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    def send(self, data: bytes) -> None:
        self.stdin.write(data)

    def read_message(self) -> tuple[dict[str, Any], int]:
        """The next message and its body size."""
        length = -1
        while True:
            line = self.stdout.readline()
            if not line:
                raise RpcError("the daemon closed its stdout")
            if line == b"\r\n":
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = self.stdout.read(length)
        return orjson.loads(body), length

    def response(self, request_id: int) -> tuple[Any, int]:
        """Skip notifications and server requests until the response to `request_id`."""
        while True:
            message, size = self.read_message()
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RpcError(str(message["error"]))
                return message.get("result"), size
            if "method" in message and "id" in message:  # a server request: answer null
                self.send(b"Content-Length: %d\r\n\r\n%s" % _reply(message["id"]))
            elif message.get("method") == "$/logTrace":
                self.traces.append(message["params"]["message"])

    def request(self, method: str, params: Any) -> Any:
        return self.request_sized(method, params)[0]

    def request_sized(self, method: str, params: Any) -> tuple[Any, int]:
        self.next_id += 1
        self.send(self.frame(method, params, self.next_id))
        return self.response(self.next_id)

    def trace_of(self, request_id: int) -> str:
        """The `$/logTrace` the daemon sends after answering `request_id` (tracing on):
        "session/context 12: answered in 0.105 ms"."""
        while True:
            for trace in self.traces:
                if trace.split(": ", 1)[0].rsplit(" ", 1)[-1] == str(request_id):
                    return trace
            message, _ = self.read_message()
            if message.get("method") == "$/logTrace":
                self.traces.append(message["params"]["message"])

    def pipelined(self, method: str, params: list[Any]) -> None:
        """Write every request from a thread while this one reads the responses: neither pipe fills up."""
        first = self.next_id + 1
        frames = [self.frame(method, p, first + i) for i, p in enumerate(params)]
        self.next_id += len(frames)
        writer = threading.Thread(target=lambda: [self.send(f) for f in frames])
        writer.start()
        for request_id in range(first, first + len(frames)):
            self.response(request_id)
        writer.join()

    # ----------------------------------------------------------------- process

    def peak_mb(self) -> float:
        """VmHWM: the daemon's peak resident set size so far."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        try:
            self.request("shutdown", None)
            self.send(self.frame("exit", None, None))
            self.stdin.close()
            self.process.wait(timeout=30)
        except (RpcError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def _reply(request_id: Any) -> tuple[int, bytes]:
    body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": None})
    return len(body), body


def _ms(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


class Round:
    """Runs the operations in order on one daemon, recording times and the peak after each."""

    def __init__(self, daemon: Daemon, reps: int) -> None:
        self.daemon = daemon
        self.reps = reps
        self.ops: dict[str, Result] = {}

    def record(self, op: str, ms: list[float], **extra: Any) -> None:
        self.ops[op] = {"ms": ms, "peakMb": self.daemon.peak_mb(), **extra}

    def once(self, op: str, fn: Callable[[], Any], **extra: Any) -> None:
        self.record(op, [_ms(fn)], **extra)

    def repeated(self, op: str, fn: Callable[[], Any], first_op: str | None = None) -> None:
        first = _ms(fn)  # warm-up; the daemon caches some answers, so the first call can be its own row
        if first_op is not None:
            self.record(first_op, [first])
        self.record(op, [_ms(fn) for _ in range(self.reps)])


def message(payload: int, n: int) -> dict[str, Any]:
    """The same ~1 KB user message pi_bench.mjs appends."""
    prefix = f"message {n} "
    text = (prefix + FILLER * (payload // len(FILLER) + 1))[:payload] if len(prefix) < payload else prefix
    return {"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1767225600000 + n}}


def session_round(root: Path, file: Path, reps: int, sequential: int, pipelined: int, payload: int) -> Result:
    shutil.rmtree(root / ".index", ignore_errors=True)  # no sidecar from an earlier round
    daemon = Daemon(root)
    try:
        bench = Round(daemon, reps)
        opened: dict[str, Any] = {}
        bench.once("open", lambda: opened.update(daemon.request("session/open", {"path": str(file)})))
        sid, leaf = opened["sessionId"], opened["leafId"]
        session = {"sessionId": sid}
        bench.repeated("context", lambda: daemon.request("session/context", session), "context_first")
        bench.repeated("tree", lambda: daemon.request("session/tree", session), "tree_first")
        bench.repeated("path", lambda: daemon.request("session/entries", {**session, "pathTo": leaf}))
        forked: dict[str, Any] = {}
        bench.once("fork", lambda: forked.update(daemon.request("session/fork", {**session, "entryId": leaf})))
        daemon.request("session/close", {"sessionId": forked["sessionId"]})
        Path(forked["path"]).unlink()
        daemon.request("session/close", session)
        bench.once("reopen", lambda: daemon.request("session/open", {"path": str(file)}))
        _after_append(bench, session, reps, payload)
        _turns(bench, session, payload)
        _appends(bench, session, sequential, pipelined, payload)
        return {"ops": bench.ops, "peakMb": daemon.peak_mb()}
    finally:
        daemon.stop()


def open_round(root: Path, file: Path) -> Result:
    """Only open and reopen (sizes where the whole round takes too long)."""
    shutil.rmtree(root / ".index", ignore_errors=True)
    daemon = Daemon(root)
    try:
        bench = Round(daemon, 1)
        opened: dict[str, Any] = {}
        bench.once("open", lambda: opened.update(daemon.request("session/open", {"path": str(file)})))
        daemon.request("session/close", {"sessionId": opened["sessionId"]})
        bench.once("reopen", lambda: daemon.request("session/open", {"path": str(file)}))
        return {"ops": bench.ops, "peakMb": daemon.peak_mb()}
    finally:
        daemon.stop()


def _after_append(bench: Round, session: dict[str, Any], reps: int, payload: int) -> None:
    daemon = bench.daemon
    daemon.request("session/append", {**session, "entry": message(payload, 0)})
    daemon.request("session/context", session)  # warm-up
    times, sizes, inside = [], [], []
    daemon.send(daemon.frame("$/setTrace", {"value": "messages"}, None))  # the daemon reports its own time
    for n in range(1, reps + 1):
        daemon.request("session/append", {**session, "entry": message(payload, n)})
        start = time.perf_counter()
        _, size = daemon.request_sized("session/context", session)
        times.append((time.perf_counter() - start) * 1000)
        sizes.append(size)
        inside.append(_answered_ms(daemon.trace_of(daemon.next_id)))
    daemon.send(daemon.frame("$/setTrace", {"value": "off"}, None))
    bench.record("context_after_append", times, responseBytes=sizes[-1])
    bench.record("context_after_append_daemon", inside)
    # The floor of any round trip: a request with a tiny answer.
    bench.repeated("roundtrip_floor", lambda: daemon.request("session/info", session))


def turn_entries(payload: int, n: int) -> list[dict[str, Any]]:
    """The turn pi_bench.mjs appends: the user's message, the reply with a tool call, its result."""
    user = message(payload, n)
    text = user["message"]["content"][0]["text"]
    call = {"type": "toolCall", "id": f"call-{n}", "name": "read", "arguments": {"path": f"src/file{n}.ts"}}
    assistant = {
        "role": "assistant", "content": [{"type": "text", "text": text}, call], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse", "timestamp": 1767225600000 + n + 1,
        "usage": {"input": 1000, "output": 250, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1250},
    }  # fmt: skip
    result = {
        "role": "toolResult", "toolCallId": call["id"], "toolName": "read", "content": [{"type": "text", "text": text}],
        "isError": False, "timestamp": 1767225600000 + n + 2,
    }  # fmt: skip
    return [user, {"type": "message", "message": assistant}, {"type": "message", "message": result}]


TURNS = 20  # timed turns of each kind per round: a turn is short, its median needs samples


def _turns(bench: Round, session: dict[str, Any], payload: int) -> None:
    """The agent's turn, as pi_bench.mjs times it: three appends, then the next request's context.
    With deltas the last append answers with the new messages, which the client adds to those it
    holds (decoding included); without them (turn_whole) a session/context brings all of them."""
    daemon = bench.daemon
    held = daemon.request("session/context", session)
    messages, cursor = held["messages"], held["cursor"]
    times: dict[bool, list[float]] = {True: [], False: []}
    n = 10_000_000
    for deltas in (True, False):
        for turn in range(TURNS + 1):  # the first of each kind warms up
            user, assistant, result = turn_entries(payload, n)
            n += 3
            start = time.perf_counter()
            daemon.request("session/append", {**session, "entry": user})
            daemon.request("session/append", {**session, "entry": assistant})
            if deltas:
                answer = daemon.request("session/append", {**session, "entry": result, "context": {"since": cursor}})
                delta = answer["context"]
                messages = [*messages, *delta["messages"]] if delta.get("reset") is False else delta["messages"]
                cursor = delta["cursor"]
            else:  # a client that ignores deltas: the whole context, after the three appends
                daemon.request("session/append", {**session, "entry": result})
                messages = daemon.request("session/context", session)["messages"]
            if turn:
                times[deltas].append((time.perf_counter() - start) * 1000)
    assert len(messages) == len(daemon.request("session/context", session)["messages"])
    bench.record("turn", times[True])
    bench.record("turn_whole", times[False])


def _answered_ms(trace: str) -> float:
    assert trace.startswith("session/context"), trace
    return float(trace.rsplit("answered in ", 1)[1].split()[0])


def _appends(bench: Round, session: dict[str, Any], sequential: int, pipelined: int, payload: int) -> None:
    daemon = bench.daemon
    seq = [{**session, "entry": message(payload, n)} for n in range(sequential)]
    bench.once("append_seq", lambda: [daemon.request("session/append", p) for p in seq])
    pipe = [{**session, "entry": message(payload, n)} for n in range(pipelined)]
    bench.once("append_pipelined", lambda: daemon.pipelined("session/append", pipe))


def list_round(root: Path, cwd: str) -> Result:
    daemon = Daemon(root)
    try:
        bench = Round(daemon, 1)
        listed: dict[str, Any] = {}
        bench.once("list", lambda: listed.update(daemon.request("session/list", {"cwd": cwd})))
        bench.ops["list"]["count"] = len(listed["sessions"])
        return {"ops": bench.ops, "peakMb": daemon.peak_mb()}
    finally:
        daemon.stop()


def copy_session(source: Path, directory: Path) -> Path:
    """A fresh working copy: rounds append to and fork from it, never the generated file."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    target = directory / source.name
    shutil.copyfile(source, target)
    return target
