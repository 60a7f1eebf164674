"""Calls that may wait on a server, run in worker threads, one lane a session.

With a PostgreSQL store a call can wait seconds on the server (a row another daemon holds, up to
lock_timeout). Run on the event loop, that wait would hold up every other session and
`$/cancelRequest` too. Each such call therefore runs in a worker thread, with a connection of
that thread's own (see backend/postgres/database.py), while the loop goes on reading:

- Calls on one session (one key) run one after another, in the order they were submitted, so a
  session's answers keep the order of its requests.
- A call on no one session (key None: opening, listing, searching, creating) runs alone: after
  every call submitted before it, and before any submitted after it. What it answers reflects
  every earlier request, as one-at-a-time handling promised.
- A cancelled call that has not started never runs; one that has started is interrupted (the
  store's `interrupt`: the statement in hand is cancelled on the server and the transaction rolled
  back). Either way the caller is answered at once; the lane waits for the worker to finish, so
  the session's next call starts on a settled session.

Why only then. Measured on the 2-core test machine (loaded): a hop to a worker and back
(`await loop.run_in_executor`) costs about 70 us of CPU and 220 us of wall time, while a whole
file-store `session/append` costs the daemon about 100 us of CPU
(`tests/benchmarks/request_cost.py`): a hop would nearly double it, for files that never make a
request wait. So the file store keeps its direct path, and only a store whose calls are network
round trips (hundreds of us already, seconds when a row is locked) pays for the hop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

T = TypeVar("T")
WORKERS = 32  # sessions whose calls wait on the server at once; more queue for a free worker


@runtime_checkable
class Interruptible(Protocol):
    """A backend whose calls may wait on a server, and can be stopped from another thread."""

    def interrupt(self, thread: int) -> None:
        """Stop the call running in `thread`: cancel what it waits for; its later statements fail."""

    def resume(self, thread: int) -> None:
        """`thread`'s next call runs as usual."""


class _Skipped(Exception):
    """The call was cancelled before it started."""


class _Job:
    """One call: run at most once, in a worker; `cancel` before it starts skips it."""

    def __init__(self, call: Callable[[], Any], store: Interruptible) -> None:
        self.call = call
        self.store = store
        self.cancelled = False
        self.thread: int | None = None
        self._state = threading.Lock()  # `thread` and `cancelled` change together

    def run(self) -> Any:
        with self._state:
            if self.cancelled:
                raise _Skipped
            self.thread = threading.get_ident()
            self.store.resume(self.thread)
        try:
            return self.call()
        finally:
            with self._state:
                self.thread = None

    def cancel(self) -> None:
        with self._state:
            self.cancelled = True
            if self.thread is not None:
                self.store.interrupt(self.thread)


class Lanes:
    def __init__(self, store: Interruptible) -> None:
        self.store = store
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="sessiontree-store")
        self._tails: dict[str, asyncio.Future[None]] = {}  # each session's last call, until it ends
        self._alone: asyncio.Future[None] | None = None  # the last call on no one session, until it ends
        self._started: set[_Job] = set()  # submitted, not ended: interrupted when the daemon closes

    async def run(self, key: str | None, call: Callable[[], T]) -> T:
        """`call()` in a worker, after the calls it must follow; cancelling the caller cancels it."""
        loop = asyncio.get_running_loop()
        job = _Job(call, self.store)
        after = self._after(key)
        done: asyncio.Future[None] = loop.create_future()
        if key is None:
            self._alone, self._tails = done, {}  # every later call follows this one, so the ones before too
        else:
            self._tails[key] = done
        work = loop.create_task(self._work(job, after, done, key))
        work.add_done_callback(_retrieved)  # a call whose caller was cancelled ends unheard
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if work.done() and not work.cancelled() and work.exception() is None:
                return cast(T, work.result())  # it ended (committed) first: its answer is the truth
            job.cancel()
            raise

    def _after(self, key: str | None) -> list[asyncio.Future[None]]:
        if key is None:
            return [*self._tails.values(), *([self._alone] if self._alone else [])]
        return [f for f in (self._tails.get(key), self._alone) if f is not None]

    async def _work(
        self, job: _Job, after: list[asyncio.Future[None]], done: asyncio.Future[None], key: str | None
    ) -> Any:
        self._started.add(job)
        try:
            if after:
                await asyncio.wait(after)
            return await asyncio.get_running_loop().run_in_executor(self._pool, job.run)
        finally:
            self._started.discard(job)
            done.set_result(None)
            if key is None:
                if self._alone is done:
                    self._alone = None
            elif self._tails.get(key) is done:
                del self._tails[key]

    def close(self) -> None:
        """Calls not started are dropped, those running interrupted, and their end waited for: the
        store's connections may then be closed (closing one under a running call is not safe)."""
        for job in list(self._started):
            job.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _retrieved(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()
