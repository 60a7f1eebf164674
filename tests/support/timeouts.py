"""How long the tests wait for a process: one place, sized for a busy two-core machine.

A bound is reached only when something is wrong, so a generous one costs a passing run nothing,
while a tight one fails whenever the machine is busy (CI runs on two shared cores). Start-up is
bounded apart from the answers after it: a cold interpreter importing the package, or a daemon
connecting to PostgreSQL, takes far longer than any answer once it runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

STARTUP_TIMEOUT: Final = 60.0  # a process's first answer (`initialize`), its start-up included
ANSWER_TIMEOUT: Final = 30.0  # each answer after that
EXIT_TIMEOUT: Final = 30.0  # a process's exit once it was told to stop (or its input ended)
EVENT_TIMEOUT: Final = 30.0  # something a test waits for by polling (a file's size, a row, a count)
QUIET_WAIT: Final = 0.5  # how long a test listens to show that nothing (more) comes


def wait_until(condition: Callable[[], bool], what: str, timeout: float = EVENT_TIMEOUT, every: float = 0.01) -> None:
    """Poll `condition` until it holds; fail naming `what` when `timeout` passes first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(every)  # a poll interval, not a wait for the event itself


async def eventually(condition: Callable[[], bool], what: str, timeout: float = EVENT_TIMEOUT, every: float = 0.01) -> None:
    """`wait_until` for a test on an event loop: the loop runs (and delivers messages) meanwhile."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(every)  # a poll interval, not a wait for the event itself
