"""`Content-Length` framing that survives the mistakes clients make.

LSP framing is `Content-Length: N\\r\\n\\r\\n` + N bytes of JSON. This decoder accepts header
names in any case and order, ignores `Content-Type` and unknown headers, and takes LF-only line
ends. What it cannot frame it reports as `Rejected` (never silently), then resynchronises so one
bad frame never wedges the stream:

- a header block it cannot parse, or a missing, negative or non-numeric length: skip to the next
  `Content-Length:`; the skipped body, if it is JSON, is handed back so its request can be answered;
- a length off by a few bytes either way: the real message is recovered (the bytes up to the next
  header, or the body minus the swallowed start of the next header) and rejected with its id;
- a length with no more bytes coming: after the stream goes quiet, `flush()` tries the partial body;
- a length above the limit: the body is read and discarded, and the frame rejected at once;
- a length above 1 GiB: no such body is coming, so it is not waited for: skip to the next header.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

from .. import jsonfmt
from .codes import ErrorCode

MAX_HEADER_BYTES: Final = 8192
CREDIBLE_LENGTH: Final = 2**30  # a longer body is taken for a lie: dropping it would swallow the stream
_HEADER_END: Final = re.compile(rb"\r?\n\r?\n")
_LENGTH_HEADER: Final = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_NAME: Final = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_LENGTH_PREFIX: Final = b"content-length:"
_PLAIN_HEADER: Final = re.compile(rb"Content-Length: ([0-9]{1,10})\r\n\r\n")  # what clients send, as LSP spells it


@attrs.frozen
class Frame:
    """A well-framed body, decoded."""

    message: Any


@attrs.frozen
class Rejected:
    """A frame that could not be taken as sent.

    `message` is the JSON recovered from it, if any: a recovered request is answered with its
    own id. `answer_anyway` marks failures whose sender may be waiting although no id is known
    (invalid JSON, a message too large): those are answered with id null.
    """

    code: ErrorCode
    reason: str
    message: Any = None
    answer_anyway: bool = False
    raw: bytes | None = None


Event = Frame | Rejected


NOT_JSON: Final = object()


def _loads(data: bytes | bytearray) -> Any:
    """The decoded JSON, or NOT_JSON."""
    try:
        return jsonfmt.loads_wire(data)
    except ValueError:  # not JSON, or not UTF-8
        return NOT_JSON


class FrameDecoder:
    """Turns a byte stream into `Frame`/`Rejected` events; pure, no I/O."""

    def __init__(self, max_message_bytes: int) -> None:
        self._buf = bytearray()
        self._max = max_message_bytes
        self._length: int | None = None  # body length while a body is being read
        self._discard = 0  # bytes of an oversized body still to drop
        self._resync: str | None = None  # why we are skipping to the next header
        self._scan_from = 1

    @property
    def waiting(self) -> bool:
        """True when a partial frame is buffered that `flush()` may resolve."""
        return self._resync is not None or (self._length is not None and bool(self._buf))

    def feed(self, data: bytes) -> list[Event]:
        self._buf += data
        events: list[Event] = []
        while self._step(events):
            pass
        return events

    def flush(self) -> list[Event]:
        """Resolve a partial frame once the stream has gone quiet or ended."""
        if self._resync is not None:
            skipped = bytes(self._buf)
            self._buf.clear()
            return [self._skipped(skipped)]
        if self._length is not None and self._buf:
            message = _loads(self._buf)
            if message is not NOT_JSON:
                event = self._mismatch(message, self._length, len(self._buf))
                self._buf.clear()
                self._length = None
                return [event]
        return []

    # ----------------------------------------------------------------- states

    def _step(self, events: list[Event]) -> bool:
        if not self._buf:
            return False
        if self._discard:
            return self._drop()
        if self._resync is not None:
            return self._skip_to_header(events)
        if self._length is None:
            return self._read_header(events)
        return self._read_body(events)

    def _drop(self) -> bool:
        count = min(self._discard, len(self._buf))
        del self._buf[:count]
        self._discard -= count
        return self._discard == 0

    def _read_header(self, events: list[Event]) -> bool:
        plain = _PLAIN_HEADER.match(self._buf)
        if plain is not None and (length := int(plain[1])) <= self._max:  # the usual header block, quickly
            del self._buf[: plain.end()]
            self._length = length
            return True
        end = _HEADER_END.search(self._buf)
        if end is None:
            if len(self._buf) > MAX_HEADER_BYTES:
                self._start_resync("header block too long")
                return True
            return False
        headers = self._parse_headers(bytes(self._buf[: end.start()]))
        if headers is None:
            return True  # resync started
        if not headers:
            del self._buf[: end.end()]  # blank lines between messages
            return True
        raw = headers.get(b"content-length")
        if raw is None:
            self._start_resync("no Content-Length header")
            return True
        if not raw.isdigit():
            self._start_resync(f"invalid Content-Length {raw.decode('latin-1')!r}")
            return True
        del self._buf[: end.end()]
        length = int(raw)
        if length > self._max:
            events.append(
                Rejected(
                    ErrorCode.INVALID_REQUEST,
                    f"message too large: Content-Length {length} exceeds the limit of {self._max} bytes",
                    answer_anyway=True,
                )
            )
            if length <= CREDIBLE_LENGTH:
                self._discard = length
            else:  # no body that long is coming: waiting for it would swallow the stream
                self._start_resync(f"Content-Length {length} is not credible")
                self._scan_from = 0  # its header block is gone: the next one may start right here
        else:
            self._length = length
        return True

    def _parse_headers(self, block: bytes) -> dict[bytes, bytes] | None:
        headers: dict[bytes, bytes] = {}
        for line in block.split(b"\n"):
            line = line.rstrip(b"\r")
            if not line:
                continue
            name, sep, value = line.partition(b":")
            if not sep or not _HEADER_NAME.fullmatch(name.strip()):
                self._start_resync(f"unparseable header line {line[:60].decode('latin-1')!r}")
                return None
            headers[name.strip().lower()] = value.strip()
        return headers

    def _read_body(self, events: list[Event]) -> bool:
        length = self._length
        assert length is not None
        if len(self._buf) < length:
            return False
        body = self._buf[:length]
        del self._buf[:length]
        self._length = None
        message = _loads(body)
        events.append(Frame(message) if message is not NOT_JSON else self._recover(body))
        return True

    # ----------------------------------------------------------------- recovery

    def _recover(self, body: bytearray) -> Rejected:
        """A body that is not JSON: try a length that was too short, then one too long."""
        nxt = _LENGTH_HEADER.search(self._buf)
        rest = nxt.start() if nxt else len(self._buf)
        if rest and (message := _loads(body + self._buf[:rest])) is not NOT_JSON:
            del self._buf[:rest]
            return self._mismatch(message, len(body), len(body) + rest)
        cut = max(body.rfind(b"}"), body.rfind(b"]")) + 1
        tail = bytes(body[cut:]).lstrip()
        if cut and tail and _LENGTH_PREFIX.startswith(tail[: len(_LENGTH_PREFIX)].lower()):
            message = _loads(body[:cut])
            if message is not NOT_JSON:
                self._buf[:0] = body[cut:]
                return self._mismatch(message, len(body), cut)
        return Rejected(ErrorCode.PARSE_ERROR, "parse error: the body is not valid JSON", answer_anyway=True, raw=bytes(body))

    @staticmethod
    def _mismatch(message: Any, declared: int, actual: int) -> Rejected:
        reason = f"Content-Length {declared} does not match the message ({actual} bytes); message ignored"
        return Rejected(ErrorCode.INVALID_REQUEST, reason, message)

    def _start_resync(self, reason: str) -> None:
        self._resync = reason
        self._scan_from = 1

    def _skip_to_header(self, events: list[Event]) -> bool:
        found = _LENGTH_HEADER.search(self._buf, self._scan_from)
        if found is None:
            # Keep scanning where we stopped; a header may straddle two reads.
            self._scan_from = max(1, len(self._buf) - len(_LENGTH_PREFIX) - 8)
            return False
        skipped = bytes(self._buf[: found.start()])
        del self._buf[: found.start()]
        events.append(self._skipped(skipped))
        return True

    def _skipped(self, skipped: bytes) -> Rejected:
        """Report skipped bytes; a JSON body after their header block is handed back."""
        reason = self._resync or "unframed bytes"
        self._resync = None
        end = _HEADER_END.search(skipped)
        message = _loads(skipped[end.end() :]) if end else NOT_JSON
        return Rejected(ErrorCode.INVALID_REQUEST, f"{reason}; message skipped", None if message is NOT_JSON else message)
