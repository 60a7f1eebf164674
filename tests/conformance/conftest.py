"""Fixtures for the pi conformance suite: pi's driver (Node) and the daemon (stdio)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PI_PACKAGE, PI_VERSION, TALLY, Daemon, PiDriver, Tally, install_pi, start_daemon


@pytest.fixture(scope="session")
def pi(tmp_path_factory: pytest.TempPathFactory) -> PiDriver:
    if shutil.which("node") is None:
        pytest.fail("node is required for the pi conformance suite (Node 20+)")
    if not PI_PACKAGE.exists():
        install_pi()
    version = json.loads(PI_PACKAGE.read_text())["version"]
    assert version == PI_VERSION, f"tests/conformance/node_modules holds pi {version}, expected {PI_VERSION}: run npm ci"
    return PiDriver(tmp_path_factory.mktemp("pi-driver"))


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
            f" ({TALLY.byte_skipped} not comparable: forks of files where pi orphaned entries)"
        )
