"""Fixtures for the crash and fuzz tests of live daemons, and the figures they report.

Both test files count what they tried (iterations, acknowledged entries, fuzz cases) in one
`StressStats` object; `pytest_terminal_summary` prints it at the end of the run, with or
without `-s`, because those figures are what a reviewer of a stress run wants to see.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from support.daemon import RawDaemon, daemon_pool


@dataclass
class StressStats:
    iterations: int = 0
    kills: int = 0
    acknowledged: int = 0
    found: int = 0
    unacknowledged_found: int = 0
    torn_lines: int = 0
    fuzz_cases: int = 0
    fuzz_rejected: int = 0
    mutation_cases: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # fuzz answers: "result" or the error code
    failures: list[str] = field(default_factory=list)

    def used(self) -> bool:
        return bool(self.iterations or self.fuzz_cases or self.mutation_cases)


_STATS = StressStats()


@pytest.fixture
def stress_stats() -> StressStats:
    return _STATS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    stats = _STATS
    if not stats.used():
        return
    terminalreporter.section("sessiontree stress")
    if stats.iterations:
        terminalreporter.write_line(
            f"kill -9: {stats.iterations} iterations, {stats.kills} daemons killed, "
            f"{stats.acknowledged} entries acknowledged, {stats.found} of them found intact, "
            f"{stats.unacknowledged_found} unacknowledged entries and {stats.torn_lines} torn lines "
            f"from killed writers"
        )
    if stats.fuzz_cases or stats.mutation_cases:
        terminalreporter.write_line(
            f"fuzz: {stats.fuzz_cases} requests ({stats.fuzz_rejected} rejected), "
            f"{stats.mutation_cases} mutated transcripts"
        )
        if stats.outcomes:
            outcomes = ", ".join(f"{name} {count}" for name, count in stats.outcomes.most_common())
            terminalreporter.write_line(f"fuzz answers: {outcomes}")
    terminalreporter.write_line(f"failures: {len(stats.failures)}")
    for failure in stats.failures[:20]:
        terminalreporter.write_line(f"  {failure}")


@pytest.fixture
def spawned() -> Iterator[Callable[..., RawDaemon]]:
    """Start daemons of any RawDaemon class; every one still running at teardown is killed."""
    with daemon_pool() as spawn:
        yield spawn
