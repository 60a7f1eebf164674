"""Fixtures for the end-to-end tests: a sessions root, a pytest-lsp client, raw-byte daemons."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from support.daemon import Calls, RawDaemon, daemon_pool, sessions_root
from support.lsp import make_client, server_command
from support.timeouts import STARTUP_TIMEOUT


@pytest.fixture
def sessions_dir(tmp_path: Path) -> Path:
    return sessions_root(tmp_path)


@pytest_asyncio.fixture
async def client(sessions_dir: Path) -> AsyncIterator[LanguageClient]:
    """An initialized pytest-lsp client talking to a daemon over real stdio."""
    config = ClientServerConfig(server_command=server_command(sessions_dir), client_factory=make_client)
    lsp_client = await config.start()
    assert isinstance(lsp_client, LanguageClient)
    initialize = types.InitializeParams(capabilities=types.ClientCapabilities())
    await asyncio.wait_for(lsp_client.initialize_session(initialize), STARTUP_TIMEOUT)
    yield lsp_client
    await lsp_client.shutdown_session()
    await lsp_client.stop()


@pytest.fixture
def start_daemon() -> Iterator[Callable[..., RawDaemon]]:
    """Start daemons (`serve` + the given arguments) driven with raw bytes; killed at the end."""
    with daemon_pool() as start:
        yield start


@pytest.fixture
def daemon(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> RawDaemon:
    """An initialized raw-byte daemon on `sessions_dir`."""
    started = start_daemon("--sessions-dir", str(sessions_dir))
    started.initialize()
    return started


@pytest.fixture
def calls(daemon: RawDaemon) -> Calls:
    """Numbered requests to `daemon`."""
    return Calls(daemon)


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawDaemon]:
    """One initialized daemon for a table of stateless cases (each case ends with a probe)."""
    started = RawDaemon("--sessions-dir", str(sessions_root(tmp_path_factory.mktemp("shared"))))
    started.initialize()
    yield started
    started.kill()
