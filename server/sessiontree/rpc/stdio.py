"""The stdio channel: frames in from one descriptor, frames out to another, on the event loop.

Reading is an `asyncio.Protocol` on the stdin pipe: each chunk is decoded and dispatched
synchronously inside `data_received`, so there is no thread hop and no task switch per message,
and messages are handled strictly in arrival order. Replies produced while one chunk is handled
are written with a single `write` (pipelined clients get one syscall per chunk, not per reply).
The write side is a non-blocking pipe transport whose flow control pauses reading while the
client is not reading its replies, so neither side can deadlock the other.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any, Final, Protocol

from .. import jsonfmt
from .framing import Event, Frame, FrameDecoder, Rejected
from .record import Recorder

log = logging.getLogger(__name__)

IDLE_SECONDS: Final = 0.5  # quiet time after which a partial frame is resolved (see framing.py)
CLOSE_TIMEOUT: Final = 5.0
READ_CHUNK: Final = 256 * 1024


class MessageSink(Protocol):
    def on_events(self, events: list[Event]) -> None: ...

    def on_eof(self) -> None: ...

    def on_output_lost(self) -> None: ...


class StdioChannel:
    def __init__(self, sink: MessageSink, max_message_bytes: int, recorder: Recorder | None = None) -> None:
        self._sink = sink
        self._decoder = FrameDecoder(max_message_bytes)
        self._recorder = recorder
        self._pending: list[bytes] = []
        self._corked = False
        self._eof = False
        self._idle: asyncio.TimerHandle | None = None
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._write_fd: int | None = None  # used instead of a transport for a regular file
        self._write_closed: asyncio.Future[None] | None = None
        self._file_task: asyncio.Task[None] | None = None
        self.output_paused = False  # the client is not reading: send nothing it did not ask for

    async def open(self, read_fd: int, write_fd: int) -> None:
        loop = asyncio.get_running_loop()
        self._write_closed = loop.create_future()
        try:
            out = os.fdopen(write_fd, "wb", buffering=0, closefd=False)
            self._writer, _ = await loop.connect_write_pipe(lambda: _WriteSide(self), out)
        except ValueError:  # a regular file: blocking writes never stall there
            self._write_fd = write_fd
        try:
            inp = os.fdopen(read_fd, "rb", buffering=0, closefd=False)
            self._reader, _ = await loop.connect_read_pipe(lambda: _ReadSide(self), inp)
        except ValueError:  # a regular file cannot be watched by the loop; read it in turns
            self._file_task = loop.create_task(self._read_file(read_fd))

    # ----------------------------------------------------------------- output

    def send(self, message: Any) -> None:
        """Frame and queue one message; raises TypeError if it is not JSON-serialisable."""
        body = jsonfmt.dumps_wire(message)
        if self._recorder is not None:
            self._recorder.outgoing(body)
        self._pending.append(b"Content-Length: %d\r\n\r\n" % len(body))
        self._pending.append(body)
        if not self._corked:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._write(data)
        if self._recorder is not None:
            self._recorder.flush()

    def _write(self, data: bytes) -> None:
        if self._writer is not None:
            if not self._writer.is_closing():
                self._writer.write(data)
            return
        if self._write_fd is not None:
            view = memoryview(data)
            while view:
                view = view[os.write(self._write_fd, view) :]

    # ----------------------------------------------------------------- input

    def data_received(self, data: bytes) -> None:
        self._cancel_idle()
        self._deliver(self._decoder.feed(data))
        if self._decoder.waiting and not self._eof:
            self._idle = asyncio.get_running_loop().call_later(IDLE_SECONDS, self._on_idle)

    def eof_received(self) -> None:
        if self._eof:
            return
        self._eof = True
        self._cancel_idle()
        self._deliver(self._decoder.flush())
        self._sink.on_eof()

    def _on_idle(self) -> None:
        self._idle = None
        self._deliver(self._decoder.flush())

    def _cancel_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _deliver(self, events: list[Event]) -> None:
        if not events:
            return
        if self._recorder is not None:
            self._record(events)
        self._corked = True
        try:
            self._sink.on_events(events)
        finally:
            self._corked = False
            self.flush()

    def _record(self, events: list[Event]) -> None:
        assert self._recorder is not None
        for event in events:
            if type(event) is Frame:
                self._recorder.incoming(event.message)
            elif isinstance(event, Rejected):
                self._recorder.rejected(event.reason, event.message, event.raw)

    async def _read_file(self, fd: int) -> None:
        loop = asyncio.get_running_loop()
        while data := await loop.run_in_executor(None, os.read, fd, READ_CHUNK):
            self.data_received(data)
        self.eof_received()

    # ----------------------------------------------------------------- flow control and close

    def pause_reading(self) -> None:
        self.output_paused = True
        if self._reader is not None and not self._reader.is_closing():
            self._reader.pause_reading()

    def resume_reading(self) -> None:
        self.output_paused = False
        if self._reader is not None and not self._reader.is_closing():
            self._reader.resume_reading()

    def output_lost(self, exc: Exception | None) -> None:
        if self._write_closed is not None and not self._write_closed.done():
            self._write_closed.set_result(None)
        if exc is not None:
            log.error("the client closed the output pipe: %s", exc)
            self._sink.on_output_lost()

    async def close(self) -> None:
        """Stop reading, write out everything queued, then release the descriptors."""
        self._eof = True  # closing the reader must not report an EOF of its own
        self._cancel_idle()
        if self._reader is not None:
            self._reader.close()
        if self._file_task is not None:
            self._file_task.cancel()
        self.flush()
        if self._writer is not None and self._write_closed is not None:
            self._writer.close()
            try:
                await asyncio.wait_for(asyncio.shield(self._write_closed), CLOSE_TIMEOUT)
            except TimeoutError:
                log.error("the client stopped reading; %d bytes not delivered", self._writer.get_write_buffer_size())
                self._writer.abort()
        if self._recorder is not None:
            self._recorder.close()


class _ReadSide(asyncio.Protocol):
    def __init__(self, channel: StdioChannel) -> None:
        self._channel = channel

    def data_received(self, data: bytes) -> None:
        self._channel.data_received(data)

    def eof_received(self) -> bool:
        self._channel.eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._channel.eof_received()  # a read error ends the stream like EOF


class _WriteSide(asyncio.BaseProtocol):
    def __init__(self, channel: StdioChannel) -> None:
        self._channel = channel

    def pause_writing(self) -> None:
        self._channel.pause_reading()

    def resume_writing(self) -> None:
        self._channel.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._channel.output_lost(exc)
