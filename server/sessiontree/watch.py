"""Keeping subscribed sessions live: other writers' entries are taken in unasked, and the listener
(`session/didChange`) hears of them.

Files are checked on a timer. A PostgreSQL store also sends a notification on every append, which
wakes the daemon at once; its timer is slow and only catches what a lost connection missed.
A client that stops reading gets nothing unasked: what others append stays in the store (read from
the cursor later), not in our output queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from .backend import ChangeFeed
from .errors import StoreUnavailable
from .service import SessionService

log = logging.getLogger(__name__)

POLL_BYTES: Final = 4 * 1024 * 1024  # taken in per session and check: the rest on the next one


class Watcher:
    def __init__(self, service: SessionService, may_send: Callable[[], bool]) -> None:
        self.service = service
        self.may_send = may_send  # False while the client is not reading our output
        self._timer: asyncio.TimerHandle | None = None
        self._feed: ChangeFeed | None = service.backend.changes()
        self._socket: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._listen()
        self._timer = self._loop.call_later(self.service.backend.poll_seconds, self._tick)

    def _tick(self) -> None:
        assert self._loop is not None
        if self._feed is not None and self._socket is None:
            self._listen()
        if self.may_send():
            self.service.poll(POLL_BYTES)
        self._timer = self._loop.call_later(self.service.backend.poll_seconds, self._tick)

    def _listen(self) -> None:
        if self._feed is None or self._loop is None:
            return
        try:
            self._socket = self._feed.start()
        except StoreUnavailable as exc:
            log.warning("not listening for other daemons' appends (trying again): %s", exc.message)
            return
        self._loop.add_reader(self._socket, self._woken)

    def _woken(self) -> None:
        assert self._feed is not None
        try:
            changed = self._feed.drain()
        except StoreUnavailable as exc:
            log.warning("stopped listening for other daemons' appends (trying again): %s", exc.message)
            self._unlisten()
            return
        if changed and self.may_send():
            self.service.poll(POLL_BYTES, changed)

    def _unlisten(self) -> None:
        if self._socket is not None and self._loop is not None:
            self._loop.remove_reader(self._socket)
        self._socket = None
        if self._feed is not None:
            self._feed.stop()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._unlisten()
