"""The daemon as the tests drive it: a `serve` process on pipes, fed raw bytes.

Wire tests send what a well-behaved client cannot express; `Calls` makes numbered requests for
the tests that only want answers. Output is parsed strictly (`Content-Length: N\\r\\n\\r\\n`
exactly), so every test also checks that the daemon frames its own messages correctly.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from support.timeouts import ANSWER_TIMEOUT, EXIT_TIMEOUT, STARTUP_TIMEOUT

PROBE_ID = "probe"
PROBE = {"jsonrpc": "2.0", "id": PROBE_ID, "method": "session/info", "params": {"sessionId": "no-such-session"}}
SESSION_NOT_FOUND = -32010


def frame(message: Any, *, delta: int = 0, header: str = "Content-Length: {n}\r\n\r\n") -> bytes:
    """Frame a message (or raw bytes) with `header`, its length off by `delta` if asked."""
    body = message if isinstance(message, bytes) else orjson.dumps(message)
    return header.format(n=len(body) + delta).encode() + body


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def info(msg_id: Any) -> dict[str, Any]:
    """A request the domain answers with SessionNotFound: proof that it was executed."""
    return request(msg_id, "session/info", {"sessionId": "no-such-session"})


class OutputError(AssertionError):
    pass


class RawDaemon:
    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        reader: bool = True,
        preexec: Callable[[], None] | None = None,
        command: Sequence[str] | None = None,
        stderr_to: Path | None = None,
    ) -> None:
        """`reader=False`: nothing reads the output until the test calls `read_frame` (a client
        that stops reading); else a thread queues every message for `next`. `preexec` runs in the
        child before the daemon starts (a resource limit, say). `command`: what runs before
        `serve` (default: this Python's `-m sessiontree`); `stderr_to`: a file for the daemon's
        stderr (default: kept in memory, see `stderr`)."""
        program = list(command or [sys.executable, "-m", "sessiontree"])
        self._stderr_file = stderr_to.open("wb") if stderr_to is not None else None
        self.process = subprocess.Popen(
            [*program, "serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr_file or subprocess.PIPE,
            env={**os.environ, **(env or {})},
            preexec_fn=preexec,
        )
        self.messages: queue.Queue[Any] = queue.Queue()
        self.started = False  # a first message came: start-up is over, answers get ANSWER_TIMEOUT
        self._stderr: list[bytes] = []
        if reader:
            threading.Thread(target=self._read_stdout, daemon=True).start()
        if self._stderr_file is None:
            threading.Thread(target=self._read_stderr, daemon=True).start()

    # ----------------------------------------------------------------- I/O

    # How answers are parsed, what a broken output becomes and what marks its end: the fuzz tests
    # parse with the json module (the daemon may rightly echo values orjson refuses).
    parse: Callable[[bytes], Any] = staticmethod(orjson.loads)

    def _output_error(self, exc: Exception, line: bytes) -> Exception:
        return exc

    def _output_ended(self) -> None:
        pass

    def _read_stdout(self) -> None:
        out = self.process.stdout
        assert out is not None
        while line := out.readline():
            try:
                self.messages.put(self._body_after(line))
            except Exception as exc:  # surfaced by next()
                self.messages.put(self._output_error(exc, line))
                return
        self._output_ended()

    def _body_after(self, line: bytes) -> Any:
        """The message a header line starts, read to its end."""
        out = self.process.stdout
        assert out is not None
        if not line.startswith(b"Content-Length: ") or not line.endswith(b"\r\n"):
            raise OutputError(f"bad header line from the daemon: {line!r}")
        length = int(line[16:-2])
        if (blank := out.readline()) != b"\r\n":
            raise OutputError(f"expected a blank line, got {blank!r}")
        return self.parse(out.read(length))

    def read_frame(self) -> Any:
        """The next message, read now (for a daemon started with `reader=False`)."""
        assert self.process.stdout is not None
        return self._body_after(self.process.stdout.readline())

    def _read_stderr(self) -> None:
        err = self.process.stderr
        assert err is not None
        while chunk := err.read1(65536):
            self._stderr.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def send(self, data: bytes) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()

    def send_message(self, message: Any) -> None:
        self.send(frame(message))

    def next(self, timeout: float | None = None) -> dict[str, Any]:
        """The next message. Until a first one came, the bound is at least STARTUP_TIMEOUT
        (the first answer includes the start-up); then `timeout`, by default ANSWER_TIMEOUT."""
        bound = self.bound(timeout)
        try:
            item = self.messages.get(timeout=bound)
        except queue.Empty:
            raise AssertionError(f"no message from the daemon within {bound} s; stderr:\n{self.stderr}") from None
        self.started = True
        if isinstance(item, Exception):
            raise item
        return item

    def bound(self, timeout: float | None) -> float:
        """How long to wait for the next message (see `next`)."""
        wanted = ANSWER_TIMEOUT if timeout is None else timeout
        return wanted if self.started else max(wanted, STARTUP_TIMEOUT)

    def call(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a request; return its response (notifications before it are skipped)."""
        self.send_message(message)
        while "id" not in (response := self.next(timeout)) or "method" in response:
            pass
        assert response["id"] == message["id"], response
        return response

    def initialize(self, options: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"processId": None, "capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        response = self.call(request(0, "initialize", params), STARTUP_TIMEOUT)
        assert "result" in response, response
        self.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return response["result"]

    def answers_before_probe(self) -> list[dict[str, Any]]:
        """Every message that arrives before the answer to a probe request sent now.

        The daemon answers in arrival order, so anything owed for earlier input (including a
        duplicate answer) arrives before the probe's answer, which must be SessionNotFound.
        """
        self.send_message(PROBE)
        before: list[dict[str, Any]] = []
        while (message := self.next()).get("id") != PROBE_ID:
            before.append(message)
        assert message["error"]["code"] == SESSION_NOT_FOUND, message
        return before

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self, timeout: float = EXIT_TIMEOUT) -> int:
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class Calls:
    """Numbered requests to one daemon; `result` insists on success, `error` returns the error."""

    def __init__(self, daemon: RawDaemon) -> None:
        self.daemon = daemon
        self.ids = itertools.count(1)

    def answer(self, method: str, params: Any, timeout: float | None = None) -> dict[str, Any]:
        message = request(next(self.ids), method, params)
        self.daemon.send_message(message)
        return self.receive(timeout)

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        """The next response (notifications skipped)."""
        while "id" not in (response := self.daemon.next(timeout)) or "method" in response:
            pass
        return response

    def result(self, method: str, params: Any) -> Any:
        response = self.answer(method, params)
        assert "result" in response, response
        return response["result"]

    def error(self, method: str, params: Any) -> dict[str, Any]:
        response = self.answer(method, params)
        assert "error" in response, response
        return response["error"]


def answered(messages: list[dict[str, Any]]) -> list[tuple[Any, int | None]]:
    """(id, error code or None) of each response, in order; notifications left out."""
    return [
        (m.get("id"), m["error"]["code"] if "error" in m else None)
        for m in messages
        if "method" not in m
    ]


def sessions_root(tmp_path: Path) -> Path:
    root = tmp_path / "sessions"
    root.mkdir()
    return root


@contextlib.contextmanager
def daemon_pool() -> Iterator[Callable[..., RawDaemon]]:
    """Start daemons (`serve` + arguments, of any RawDaemon class); every one is killed at the end."""
    started: list[RawDaemon] = []

    def start(*args: str, cls: type[RawDaemon] = RawDaemon, env: dict[str, str] | None = None) -> RawDaemon:
        daemon = cls(*args, env=env)
        started.append(daemon)
        return daemon

    try:
        yield start
    finally:
        for daemon in started:
            daemon.kill()
