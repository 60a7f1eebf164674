"""A scripted model behind OpenAI's chat-completions API, for driving pi's real CLI offline.

pi (`api: "openai-completions"` in its models.json) sends `POST {baseUrl}/chat/completions` with
`stream: true`; this server answers each request with the server-sent events of one reply (text,
tool calls, usage) chosen by a `Responder`, and keeps every request body so a test can compare what
pi sent the model with what the daemon computes. Standard library only; one thread per request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = "call_0"


@dataclass
class Reply:
    """One streamed answer: text (sent in a few chunks), tool calls, and the usage figures."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 100
    completion_tokens: int = 10

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


Responder = Callable[[dict[str, Any]], Reply]


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
    body["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def sse_events(reply: Reply) -> list[bytes]:
    """The reply as OpenAI streams it: role, text pieces, tool calls, the finish, then usage."""
    events = [_chunk({"role": "assistant", "content": ""})]
    pieces = [reply.text[i : i + 7] for i in range(0, len(reply.text), 7)]
    events += [_chunk({"content": piece}) for piece in pieces]
    for index, call in enumerate(reply.tool_calls):
        function = {"name": call.name, "arguments": json.dumps(call.arguments)}
        events.append(_chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": function}]}))
    events.append(_chunk({}, reply.finish_reason))
    usage = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    events.append(_chunk(None, usage=usage))
    events.append(b"data: [DONE]\n\n")
    return events


class ModelServer:
    """Serves on 127.0.0.1 (a free port) until `close`; `requests` holds every body received."""

    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self._changed = threading.Condition()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length))
                    if not self.path.endswith("/chat/completions"):
                        raise ValueError(f"unexpected path {self.path}")
                    reply = server.responder(body)
                except Exception as exc:  # the test sees it in `failures`; pi sees a 500
                    server._record(failure=f"{type(exc).__name__}: {exc}")
                    self.send_error(500, str(exc))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in sse_events(reply):
                    self.wfile.write(event)
                self.wfile.flush()
                self.close_connection = True
                server._record(request=body)

            def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reports
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def _record(self, request: dict[str, Any] | None = None, failure: str | None = None) -> None:
        with self._changed:
            if request is not None:
                self.requests.append(request)
            if failure is not None:
                self.failures.append(failure)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        """Until `count` requests were answered (or a request failed); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.requests) >= count or self.failures, timeout)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
