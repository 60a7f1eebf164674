"""A daemon driven with raw bytes, for wire tests that a well-behaved client cannot express.

Its output is parsed strictly (`Content-Length: N\\r\\n\\r\\n` exactly), so the tests also check
that the daemon frames its own messages correctly.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

ANSWER_TIMEOUT = 2.0
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
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "-m", "sessiontree", "serve", *args]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.messages: queue.Queue[Any] = queue.Queue()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
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
                if not line.startswith(b"Content-Length: ") or not line.endswith(b"\r\n"):
                    raise OutputError(f"bad header line from the daemon: {line!r}")
                length = int(line[16:-2])
                if (blank := out.readline()) != b"\r\n":
                    raise OutputError(f"expected a blank line, got {blank!r}")
                self.messages.put(self.parse(out.read(length)))
            except Exception as exc:  # surfaced by next()
                self.messages.put(self._output_error(exc, line))
                return
        self._output_ended()

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

    def next(self, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        try:
            item = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the daemon within {timeout} s; stderr:\n{self.stderr}") from None
        if isinstance(item, Exception):
            raise item
        return item

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request; return its response (notifications before it are skipped)."""
        self.send_message(message)
        while "id" not in (response := self.next()) or "method" in response:
            pass
        assert response["id"] == message["id"], response
        return response

    def initialize(self, options: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"processId": None, "capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        response = self.call(request(0, "initialize", params))
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

    def wait(self, timeout: float = 5.0) -> int:
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


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
