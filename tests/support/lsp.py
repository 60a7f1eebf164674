"""Starting the daemon for pytest-lsp: its command line and a client that keeps params as plain JSON."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

from sessiontree.server import plain_converter


def server_command(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sessiontree", "serve", "--sessions-dir", str(root), *extra]


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=plain_converter)
    register_lsp_features(client)
    return client
