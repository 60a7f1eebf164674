"""Settings for the whole suite."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator

import pytest

from support.postgres import Cluster, running_cluster


def pytest_configure() -> None:
    # Daemons the tests start keep their index sidecars in a throwaway cache, not the user's.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="sessiontree-test-cache-")
    # ... and read no agent folder of the user's (Claude Code's, Codex's): a test names its own.
    os.environ["SESSIONTREE_CLAUDE_CODE_DIR"] = os.environ["SESSIONTREE_CODEX_DIR"] = "off"
    # ... and a session they trash (session/trash, a fuzzed call too) goes to a throwaway trash.
    os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="sessiontree-test-data-")


# ---------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL server for the run (see support/postgres.py)."""
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture
def pg_dsn(postgres_cluster: Cluster, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of the test's own: its connection string."""
    name = "t_" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:16]
    return postgres_cluster.create_database(name)
