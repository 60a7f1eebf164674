"""`sessiontree push`, `pull` and `store migrate`: session files in and out of a PostgreSQL store.

The store is `--store DSN` or `$SESSIONTREE_STORE` (libpq's connection string; `PG*` variables and
`~/.pgpass` apply); names in the store are paths below the sessions root (`--sessions-dir`, else
`$SESSIONTREE_SESSIONS_DIR`, else pi's `~/.pi/agent/sessions`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .config import STORE_ENV, InitOptions, resolve_sessions_dir
from .output import TerminalProgress, print_lines

_SIGNS = {"created": "+", "appended": ">", "merged": "~", "unchanged": "=", "differs": "!", "failed": "!"}


def add_commands(commands: Any) -> None:
    push = commands.add_parser("push", help="copy session files (or every .jsonl below directories) into a store")
    push.add_argument("paths", type=Path, nargs="+", metavar="FILE|DIR")
    pull = commands.add_parser("pull", help="write sessions from a store back as files under the sessions root")
    pull.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="sessions by path (absolute, or below the sessions root; pi's names start with '--', so put them"
        " after a lone '--': pull -- --home-me-project--/FILE.jsonl); default: every session",
    )
    store = commands.add_parser("store", help="manage a store: `store migrate` brings its schema up to date")
    store.add_argument("action", choices=("migrate",))
    for parser in (push, pull, store):
        parser.add_argument("--store", metavar="DSN", help=f"the PostgreSQL store (default: ${STORE_ENV})")
        parser.add_argument("--sessions-dir", type=Path, help="the sessions root (default: pi's)")


def run(args: argparse.Namespace) -> int:
    from .errors import SessionTreeError

    dsn = args.store or os.environ.get(STORE_ENV)
    if not dsn:
        print(f"sessiontree: name the store with --store DSN or ${STORE_ENV}", file=sys.stderr)
        return 2
    try:
        from .backend.postgres import PostgresBackend
    except ImportError:
        print("sessiontree: the PostgreSQL store needs psycopg: from the checkout, pipx install --force '.[postgresql]'", file=sys.stderr)
        return 2
    root = resolve_sessions_dir(args.sessions_dir, os.environ, InitOptions())
    backend = PostgresBackend(root, dsn)
    try:
        if args.command == "store":
            return _migrate(backend)
        return _push(backend, args.paths) if args.command == "push" else _pull(backend, args.names)
    except SessionTreeError as exc:
        print(f"sessiontree: {exc.message}", file=sys.stderr)
        return 1
    finally:
        backend.close()


def _migrate(backend: Any) -> int:
    from .backend.postgres.schema import migrate

    with backend.db.errors():
        found, now = migrate(backend.db.connection())
    print(f"sessiontree: {backend.shown}: schema version {now}" + (f" (was {found})" if found != now else ", up to date"))
    return 0


def _push(backend: Any, paths: list[Path]) -> int:
    from .backend.postgres.transfer import push, session_files

    files = session_files(paths)
    return _report((push(backend, path) for path in files), len(files), "pushing sessions")


def _pull(backend: Any, names: list[str]) -> int:
    from .backend.files import FileBackend
    from .backend.postgres.transfer import pull, stored_names

    backend.root.mkdir(parents=True, exist_ok=True)
    files = FileBackend(backend.root)
    names = stored_names(backend, names)
    return _report((pull(backend, name, files) for name in names), len(names), "pulling sessions")


def _report(moved: Any, total: int, doing: str) -> int:
    """One line a session, and on a terminal how many of `total` are done; the exit status is 1 if
    any failed or differs."""
    status = 0

    def lines(progress: TerminalProgress) -> Iterator[str]:
        nonlocal status
        progress(0, total)
        for done, item in enumerate(moved, 1):
            amount = f" ({item.added:,} {'entries' if item.outcome == 'merged' else 'bytes'})" if item.added else ""
            note = f": {item.message}" if item.message else ""
            status |= item.outcome in ("failed", "differs")
            progress.clear()  # the session's line goes where the progress line was
            yield f"{_SIGNS[item.outcome]} {item.outcome:9} {item.name}{amount}{note}"
            progress(done, total)

    with TerminalProgress(doing) as progress:
        print_lines(lines(progress))
    return status
