"""`--record FILE`: every message in both directions, appended as JSONL.

One line per message: `{"dir": "in"|"out", "t": <seconds since start>, "msg": <message>}`.
A frame the daemon rejected before reading it as a message is recorded with `"msg"` set to
what could be recovered (or null), a `"rejected"` reason and, for invalid JSON, the `"raw"` body.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .. import jsonfmt


class Recorder:
    def __init__(self, path: Path) -> None:
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for the daemon's lifetime
        self._start = time.monotonic()

    def _t(self) -> float:
        return round(time.monotonic() - self._start, 6)

    def incoming(self, message: Any) -> None:
        self._file.write(jsonfmt.dumps_wire({"dir": "in", "t": self._t(), "msg": message}) + b"\n")

    def rejected(self, reason: str, message: Any, raw: bytes | None) -> None:
        line: dict[str, Any] = {"dir": "in", "t": self._t(), "msg": message, "rejected": reason}
        if raw is not None:
            line["raw"] = raw.decode("utf-8", "replace")
        self._file.write(jsonfmt.dumps_wire(line) + b"\n")

    def outgoing(self, body: bytes) -> None:
        """`body` is already compact JSON (no newlines), so it is spliced in as is."""
        self._file.write(b'{"dir":"out","t":%s,"msg":%b}\n' % (jsonfmt.dumps_wire(self._t()), body))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()
