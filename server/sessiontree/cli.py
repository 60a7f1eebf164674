"""The `sessiontree` command: `serve` runs the daemon; `tree` and `context` print a session file."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .config import DEFAULT_MAX_MESSAGE_BYTES, ServerConfig

T = TypeVar("T")


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
    """`tree` and `context`: read the file in this process, through the domain, as a daemon
    rooted at its directory would serve it; no daemon is started and the server is not imported."""
    from .config import InitOptions, resolve_index_dir
    from .errors import SessionTreeError
    from .protocol import UNSET, ContextParams, ContextResult, OpenParams, TreeParams, TreeResult
    from .render import context_lines, tree_lines
    from .service import ServiceConfig, SessionService

    path = args.file.expanduser().resolve()
    if not path.is_file():
        print(f"sessiontree: no such file: {path}", file=sys.stderr)
        return 2
    # The daemon's defaults: index sidecars where `serve` keeps them, so a large file opens as fast.
    config = ServiceConfig(sessions_dir=path.parent, index_dir=resolve_index_dir(os.environ, InitOptions()))
    service = SessionService(config)
    try:
        opened = service.open(OpenParams(path=str(path)))
        for warning in opened.warnings:
            print(f"sessiontree: warning: {warning.message}", file=sys.stderr)
        if args.command == "tree":
            lines = tree_lines(_as_received(service.tree(TreeParams(session_id=opened.session_id)), TreeResult))
        else:
            leaf = UNSET if args.leaf is None else args.leaf
            params = ContextParams(session_id=opened.session_id, leaf_id=leaf, format=args.format)
            lines = context_lines(_as_received(service.context(params), ContextResult))
        _print_lines(lines)
    except SessionTreeError as exc:
        print(f"sessiontree: {exc.message}", file=sys.stderr)
        return 1
    finally:
        service.close_all()
    return 0


def _as_received(result: Any, cls: type[T]) -> T:
    """`result` as a client of the daemon reads it: its wire bytes decoded and structured again, so
    the views print what they would print for a daemon's answer, to the character."""
    from . import jsonfmt
    from .protocol import converter, to_wire

    return converter.structure(jsonfmt.loads_wire(jsonfmt.dumps_wire(to_wire(result))), cls)


def _print_lines(lines: Iterator[str]) -> None:
    out = sys.stdout
    try:
        for line in lines:
            out.write(line)
            out.write("\n")
        out.flush()
    except BrokenPipeError:  # `sessiontree tree f | head`: stop quietly, also at exit's flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
