"""`--record FILE`: every message in both directions, appended as JSONL.

One line per message: `{"dir": "in"|"out", "t": <seconds since start>, "msg": <message>}`.
A frame the daemon rejected before reading it as a message is recorded with `"msg"` set to
what could be recovered (or null), a `"rejected"` reason and, for invalid JSON, the `"raw"` body.

A recording holds sessions' contents, so it is made readable by its owner only (0600), and it never
holds a secret: the store's connection string in `initialize` is recorded without its passwords.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import Any, Final

from .. import jsonfmt

_UNPARSED_STORE: Final = re.compile(rb'("store"\s*:\s*)"(?:[^"\\]|\\.)*"?')  # in a frame that is not JSON


def _shown_dsn(dsn: str) -> str:
    try:
        from ..backend.postgres.dsn import redacted
    except ImportError:  # no psycopg: the daemon cannot use it either, and it is not shown
        return "(a connection string)"
    return redacted(dsn)


def without_secrets(message: Any) -> Any:
    """`message` with `params.initializationOptions.store` shown without its secrets; the rest,
    and the message itself, untouched (the copy is made only where it differs)."""
    if isinstance(message, list):  # a batch
        return [without_secrets(item) for item in message]
    params = message.get("params") if isinstance(message, dict) else None
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    if not isinstance(params, dict) or not isinstance(options, dict) or "store" not in options:
        return message
    store = options["store"]
    shown = _shown_dsn(store) if isinstance(store, str) else "(not a connection string)"
    return {**message, "params": {**params, "initializationOptions": {**options, "store": shown}}}


class Recorder:
    def __init__(self, path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with contextlib.suppress(OSError):  # a file made beforehand: narrowed too, if it is ours
            os.fchmod(fd, 0o600)
        self._file = open(fd, "ab")  # noqa: SIM115 - kept open for the daemon's lifetime
        self._start = time.monotonic()

    def _t(self) -> float:
        return round(time.monotonic() - self._start, 6)

    def incoming(self, message: Any) -> None:
        self._file.write(jsonfmt.dumps_wire({"dir": "in", "t": self._t(), "msg": without_secrets(message)}) + b"\n")

    def rejected(self, reason: str, message: Any, raw: bytes | None) -> None:
        line: dict[str, Any] = {"dir": "in", "t": self._t(), "msg": without_secrets(message), "rejected": reason}
        if raw is not None:
            line["raw"] = _UNPARSED_STORE.sub(rb'\1"(a connection string)"', raw).decode("utf-8", "replace")
        self._file.write(jsonfmt.dumps_wire(line) + b"\n")

    def outgoing(self, body: bytes) -> None:
        """`body` is already compact JSON (no newlines), so it is spliced in as is."""
        self._file.write(b'{"dir":"out","t":%s,"msg":%b}\n' % (jsonfmt.dumps_wire(self._t()), body))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
