"""Settings for the whole suite."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator

import pytest

from support.postgres import Cluster, server_bin


def pytest_configure() -> None:
    # Daemons the tests start keep their index sidecars in a throwaway cache, not the user's.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="sessiontree-test-cache-")


# ---------------------------------------------------------------------- PostgreSQL

_REQUIRE_POSTGRES = "SESSIONTREE_REQUIRE_POSTGRES"  # `make test` sets it: there a missing server fails


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL server for the run (see support/postgres.py)."""
    bin_dir = server_bin()
    if bin_dir is None:
        if os.environ.get(_REQUIRE_POSTGRES):
            pytest.fail("PostgreSQL is not installed: `make postgres` installs it")
        pytest.skip("PostgreSQL is not installed (`make postgres`)")
    cluster = Cluster(bin_dir)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.stop("immediate")
        cluster.remove()


@pytest.fixture
def pg_dsn(postgres_cluster: Cluster, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database of the test's own: its connection string."""
    name = "t_" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:16]
    return postgres_cluster.create_database(name)
