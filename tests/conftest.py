"""Settings for the whole suite."""

from __future__ import annotations

import os
import tempfile


def pytest_configure() -> None:
    # Daemons the tests start keep their index sidecars in a throwaway cache, not the user's.
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="sessiontree-test-cache-")
