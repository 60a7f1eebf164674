"""The `sessiontree` command: `serve` runs the daemon; `tree` and `context` ask one for a file."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Iterator, Sequence

from .config import DEFAULT_MAX_MESSAGE_BYTES, ServerConfig


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sessiontree", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the daemon on stdin/stdout (LSP framing, JSON-RPC 2.0)")
    serve.add_argument("--sessions-dir", type=Path, help="the sessions root (default: ~/.pi/agent/sessions)")
    serve.add_argument("--durability", choices=("os", "fsync"), help="what an acknowledged append survives")
    serve.add_argument("--record", type=Path, metavar="FILE", help="append every message to FILE as JSONL")
    serve.add_argument("--debug", action="store_true", help="debug logging; tracebacks in internal errors")
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="N",
        help=f"refuse larger messages (default {DEFAULT_MAX_MESSAGE_BYTES})",
    )

    tree = commands.add_parser("tree", help="print the tree of a session file")
    tree.add_argument("file", type=Path)

    context = commands.add_parser("context", help="print the context the model would see")
    context.add_argument("file", type=Path)
    context.add_argument("--leaf", metavar="ID", help="the leaf to project from (default: the current leaf)")
    context.add_argument("--format", choices=("agent", "llm"), default="agent")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from .server import serve

        config = ServerConfig(
            sessions_dir=args.sessions_dir,
            durability=args.durability,
            max_message_bytes=args.max_message_bytes,
            debug=args.debug,
            record=args.record,
        )
        return serve(config)
    return show(args)


def show(args: argparse.Namespace) -> int:
    """`tree` and `context`: open the file in a daemon rooted at its directory, print, stop."""
    from .client import SyncSessionTreeClient
    from .errors import SessionTreeError
    from .protocol import UNSET, ContextParams, OpenParams, TreeParams
    from .render import context_lines, tree_lines

    path = args.file.expanduser().resolve()
    if not path.is_file():
        print(f"sessiontree: no such file: {path}", file=sys.stderr)
        return 2
    client = SyncSessionTreeClient(sessions_dir=path.parent)
    try:
        client.start()
        opened = client.open(OpenParams(path=str(path)))
        for warning in opened.warnings:
            print(f"sessiontree: warning: {warning.message}", file=sys.stderr)
        if args.command == "tree":
            lines = tree_lines(client.tree(TreeParams(session_id=opened.session_id)))
        else:
            leaf = UNSET if args.leaf is None else args.leaf
            params = ContextParams(session_id=opened.session_id, leaf_id=leaf, format=args.format)
            lines = context_lines(client.context(params))
        _print_lines(lines)
    except SessionTreeError as exc:
        print(f"sessiontree: {exc.message}", file=sys.stderr)
        return 1
    finally:
        client.stop()
    return 0


def _print_lines(lines: Iterator[str]) -> None:
    out = sys.stdout
    try:
        for line in lines:
            out.write(line)
            out.write("\n")
        out.flush()
    except BrokenPipeError:  # `sessiontree tree f | head`: stop quietly, also at exit's flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
