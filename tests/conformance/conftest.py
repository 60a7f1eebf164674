"""Fixtures for the pi conformance suite: pi's driver (Node) and the daemon (stdio)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import (
    PI_NAME,
    PI_VERSION,
    TALLY,
    Daemon,
    PiDriver,
    Tally,
    install_pi,
    installed_pi_version,
    pi_node,
    start_daemon,
)


@pytest.fixture(scope="session")
def node() -> str:
    """The Node pi runs on (>= 22.19, as pi declares); installs pi and it when missing."""
    if installed_pi_version() != PI_VERSION:
        install_pi()
    version = installed_pi_version()
    assert version == PI_VERSION, f"tests/conformance/node_modules holds {PI_NAME} {version}, package.json pins {PI_VERSION}: run `make node`"
    return pi_node()


@pytest.fixture(scope="session")
def pi(node: str, tmp_path_factory: pytest.TempPathFactory) -> PiDriver:
    return PiDriver(tmp_path_factory.mktemp("pi-driver"), node)


@pytest.fixture(scope="session")
def sessions_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sessions")


@pytest.fixture(scope="session")
def daemon(sessions_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    log = tmp_path_factory.mktemp("daemon-log") / "stderr.log"
    client = start_daemon(sessions_root, log)
    yield client
    client.close()


@pytest.fixture(scope="session")
def tally() -> Tally:
    return TALLY


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TALLY.files:
        return
    verdict = "all equal" if not TALLY.mismatched_files else f"{TALLY.mismatched_files} files with mismatches"
    terminalreporter.write_sep("-", "pi conformance")
    terminalreporter.write_line(f"{TALLY.files} files x {TALLY.leaves} leaves compared with pi {PI_VERSION}, {verdict}")
    for direction, (files, leaves, bad) in sorted(TALLY.by_direction.items()):
        terminalreporter.write_line(f"  {direction}: {files} files, {leaves} leaves, {bad} with mismatches")
    if TALLY.byte_files:
        terminalreporter.write_line(
            f"  byte comparison (pi replaying the daemon's ids and times): "
            f"{TALLY.byte_identical}/{TALLY.byte_files} files identical to pi's"
        )
