"""Lanes: one session's calls in order, a call on no one session alone, other sessions meanwhile, and
a cancelled call skipped (not begun) or interrupted (running). Calls block on events, never sleeps."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest

from sessiontree.lanes import Lanes

WAIT = 60.0  # a bound on a thread's hand-over, never reached when the code is right


class Store:
    """Records interrupts; an interrupted thread's blocked call is let go."""

    def __init__(self) -> None:
        self.interrupted: list[int] = []
        self.release: dict[int, threading.Event] = {}

    def interrupt(self, thread: int) -> None:
        self.interrupted.append(thread)
        event = self.release.get(thread)
        if event is not None:
            event.set()

    def resume(self, thread: int) -> None:
        pass


def blocking(
    store: Store, log: list[str], name: str, gate: threading.Event, started: threading.Event
) -> Callable[[], str]:
    def call() -> str:
        store.release[threading.get_ident()] = gate
        started.set()
        assert gate.wait(WAIT)
        log.append(name)
        return name

    return call


def quick(log: list[str], name: str) -> Callable[[], str]:
    def call() -> str:
        log.append(name)
        return name

    return call


async def until(event: threading.Event) -> None:
    assert await asyncio.to_thread(event.wait, WAIT)


@pytest.mark.asyncio
async def test_a_blocked_session_holds_up_its_own_calls_and_calls_on_no_session_but_no_other_session() -> None:
    store, log = Store(), []
    lanes = Lanes(store)
    gate, started = threading.Event(), threading.Event()
    first = asyncio.ensure_future(lanes.run("a", blocking(store, log, "a1", gate, started)))
    await until(started)
    second = asyncio.ensure_future(lanes.run("a", quick(log, "a2")))
    alone = asyncio.ensure_future(lanes.run(None, quick(log, "list")))
    assert await lanes.run("b", quick(log, "b1")) == "b1"  # answered while a1 waits
    assert log == ["b1"] and not second.done() and not alone.done()
    gate.set()
    assert await asyncio.gather(first, second, alone) == ["a1", "a2", "list"]
    assert log == ["b1", "a1", "a2", "list"]
    assert await lanes.run("b", quick(log, "b2")) == "b2"  # after the call on no session
    lanes.close()


@pytest.mark.asyncio
async def test_a_call_on_no_session_runs_after_every_earlier_and_before_every_later_call() -> None:
    store, log = Store(), []
    lanes = Lanes(store)
    gate, started = threading.Event(), threading.Event()
    first = asyncio.ensure_future(lanes.run("a", blocking(store, log, "a1", gate, started)))
    await until(started)
    alone = asyncio.ensure_future(lanes.run(None, quick(log, "open")))
    later = asyncio.ensure_future(lanes.run("b", quick(log, "b1")))
    await asyncio.sleep(0)
    assert not alone.done() and not later.done()
    gate.set()
    await asyncio.gather(first, alone, later)
    assert log == ["a1", "open", "b1"]
    lanes.close()


@pytest.mark.asyncio
async def test_cancelling_skips_a_call_not_begun_and_interrupts_the_running_one() -> None:
    store, log = Store(), []
    lanes = Lanes(store)
    gate, started = threading.Event(), threading.Event()
    running = asyncio.ensure_future(lanes.run("a", blocking(store, log, "a1", gate, started)))
    await until(started)
    queued = asyncio.ensure_future(lanes.run("a", quick(log, "a2")))
    await asyncio.sleep(0)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    running.cancel()  # the store is told to stop the thread's call: here that lets it go
    with pytest.raises(asyncio.CancelledError):
        await running
    assert len(store.interrupted) == 1
    assert await lanes.run("a", quick(log, "a3")) == "a3"  # after a1 ended, without a2
    assert log == ["a1", "a3"]
    lanes.close()
