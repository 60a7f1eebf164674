"""Starting the daemon for pytest-lsp: its command line and a client that keeps params as plain JSON."""

from __future__ import annotations

import sys
from pathlib import Path

import cattrs
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features


def plain_converter() -> cattrs.Converter:
    """pygls's converter, except that untyped params and results stay plain dicts.

    As shipped it turns them into namedtuples, renaming keys like `class` and dropping `type_name`.
    """
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return converter


def server_command(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "sessiontree", "serve", "--sessions-dir", str(root), *extra]


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=plain_converter)
    register_lsp_features(client)
    return client
