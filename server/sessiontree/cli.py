"""The `sessiontree` command: `serve` runs the daemon; `tree`, `context`, `export`, `stats` and
`search` read session files in this process, through the domain, as the daemon would serve them;
`push`, `pull` and `store` move sessions in and out of a PostgreSQL store (cli_store.py)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from . import cli_store
from .config import DEFAULT_MAX_MESSAGE_BYTES, ServerConfig
from .output import print_lines, write_file, write_stdout

if TYPE_CHECKING:
    from .agents import AgentName

T = TypeVar("T")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sessiontree", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the daemon on stdin/stdout (LSP framing, JSON-RPC 2.0)")
    serve.add_argument("--sessions-dir", type=Path, help="the sessions root (default: ~/.pi/agent/sessions)")
    serve.add_argument("--durability", choices=("os", "fsync"), help="what an acknowledged append survives")
    serve.add_argument("--store", metavar="DSN", help="keep sessions in PostgreSQL (a libpq connection string)")
    serve.add_argument("--record", type=Path, metavar="FILE", help="append every message to FILE as JSONL")
    serve.add_argument("--debug", action="store_true", help="debug logging; tracebacks in internal errors")
    serve.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="N",
        help=f"refuse larger messages (default {DEFAULT_MAX_MESSAGE_BYTES})",
    )

    _agent_flags(serve)

    tree = commands.add_parser("tree", help="print the tree of a session file")
    tree.add_argument("file", type=Path)
    _agent_flags(tree)

    context = commands.add_parser("context", help="print the context the model would see")
    context.add_argument("file", type=Path)
    context.add_argument("--leaf", metavar="ID", help="the leaf to project from (default: the current leaf)")
    context.add_argument("--format", choices=("agent", "llm"), default="agent")
    _agent_flags(context)

    export = commands.add_parser("export", help="write a session as Markdown or a self-contained HTML page")
    export.add_argument("file", type=Path)
    export.add_argument("--format", choices=("markdown", "html"), required=True)
    export.add_argument("--scope", choices=("path", "tree"), default="path", help="the leaf's path, or every branch")
    export.add_argument("--leaf", metavar="ID", help="the leaf (default: the current leaf)")
    export.add_argument("-o", "--output", type=Path, metavar="OUT", help="the file to write (default: stdout)")
    _agent_flags(export)

    stats = commands.add_parser("stats", help="entries, messages, tool calls, tokens and cost")
    target = stats.add_mutually_exclusive_group(required=True)
    target.add_argument("file", type=Path, nargs="?", help="a session file")
    target.add_argument("--cwd", metavar="DIR", help="every session of a project (under the sessions root)")
    stats.add_argument("--sessions-dir", type=Path, help="the sessions root for --cwd (default: pi's)")
    stats.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers it")
    _agent_flags(stats)

    search = commands.add_parser("search", help="search every session under the sessions root")
    search.add_argument("query", help="words to find (FTS5 syntax with --fts: phrases, prefix*, AND/OR/NOT)")
    search.add_argument("--cwd", metavar="DIR", help="only the sessions of this project")
    search.add_argument("--fts", action="store_true", help="take the query in FTS5 syntax")
    search.add_argument("--limit", type=int, default=20, metavar="N", help="hits to show (default 20)")
    search.add_argument("--sessions-dir", type=Path, help="the sessions root (default: pi's)")
    search.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers it")

    imports = commands.add_parser("import", help="write Claude Code or Codex sessions out as pi sessions")
    imports.add_argument("paths", nargs="+", metavar="PATH", help="session files or folders of either agent")
    imports.add_argument("--sessions-dir", type=Path, help="the pi sessions root to write to (default: pi's)")
    imports.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers it")
    _agent_flags(imports)
    cli_store.add_commands(commands)
    return parser


def _agent_flags(command: argparse.ArgumentParser) -> None:
    """Where other agents' sessions are read (protocol.md, "Other agents' sessions")."""
    command.add_argument(
        "--claude-code-dir", metavar="DIR", help="Claude Code's sessions (default: $CLAUDE_CONFIG_DIR/projects or"
        " ~/.claude/projects); off: none"
    )
    command.add_argument(
        "--codex-dir", metavar="DIR", help="Codex's sessions (default: $CODEX_HOME/sessions or ~/.codex/sessions); off: none"
    )


def agent_dir_flags(args: argparse.Namespace) -> tuple[tuple[AgentName, str], ...]:
    given: list[tuple[AgentName, str]] = []
    if getattr(args, "claude_code_dir", None):
        given.append(("claude-code", args.claude_code_dir))
    if getattr(args, "codex_dir", None):
        given.append(("codex", args.codex_dir))
    return tuple(given)


def agent_dirs(args: argparse.Namespace) -> dict[AgentName, Path]:
    from .config import InitOptions, resolve_agent_dirs

    return resolve_agent_dirs(agent_dir_flags(args), os.environ, InitOptions())


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
            store=args.store,
            agent_dirs=agent_dir_flags(args),
        )
        return serve(config)
    if args.command in ("push", "pull", "store"):
        return cli_store.run(args)
    if args.command == "search" or (args.command == "stats" and args.cwd is not None):
        return across_sessions(args)
    if args.command == "import":
        return import_sessions(args)
    return show(args)


def import_sessions(args: argparse.Namespace) -> int:
    """`import`: other agents' sessions written under the sessions root, as the daemon's session/import."""
    from . import jsonfmt
    from .config import InitOptions, resolve_sessions_dir
    from .errors import SessionTreeError
    from .protocol import ImportParams, to_wire
    from .service import ServiceConfig, SessionService

    root = resolve_sessions_dir(args.sessions_dir, os.environ, InitOptions())
    service = SessionService(ServiceConfig(sessions_dir=root, agents=agent_dirs(args)))
    try:
        paths = [str(Path(path).expanduser().absolute()) for path in args.paths]
        result = service.import_sessions(ImportParams(paths))
    except SessionTreeError as exc:
        print(f"sessiontree: {exc.message}", file=sys.stderr)
        return 1
    finally:
        service.close_all()
    if args.json:
        write_stdout(jsonfmt.dumps_wire(to_wire(result)) + b"\n")
    else:
        for done in result.imported:
            news = f"{done.added} new" if done.added != done.entries else "all new"
            print(f"{done.source} -> {done.path} ({done.entries} entries, {news if done.added else 'up to date'})")
        for failed in result.failed:
            print(f"sessiontree: {failed.source}: {failed.error}", file=sys.stderr)
    return 1 if result.failed else 0


def show(args: argparse.Namespace) -> int:
    """`tree` and `context`: read the file in this process, through the domain, as a daemon
    rooted at its directory would serve it; no daemon is started and the server is not imported."""
    from .config import InitOptions, resolve_index_dir
    from .errors import SessionTreeError
    from .protocol import UNSET, ContextParams, ContextResult, OpenParams, StatsParams, TreeParams, TreeResult
    from .render import context_lines, tree_lines
    from .service import ServiceConfig, SessionService

    path = args.file.expanduser().resolve()
    if not path.is_file():
        print(f"sessiontree: no such file: {path}", file=sys.stderr)
        return 2
    # The daemon's defaults: index sidecars where `serve` keeps them, so a large file opens as fast.
    config = ServiceConfig(
        sessions_dir=path.parent, index_dir=resolve_index_dir(os.environ, InitOptions()), agents=agent_dirs(args)
    )
    service = SessionService(config)
    try:
        opened = service.open(OpenParams(path=str(path)))
        for warning in opened.warnings:
            print(f"sessiontree: warning: {warning.message}", file=sys.stderr)
        if args.command == "tree":
            lines = tree_lines(_as_received(service.tree(TreeParams(session_id=opened.session_id)), TreeResult))
        elif args.command == "export":
            return _export(service, opened.session_id, args)
        elif args.command == "stats":
            lines = _stats_lines(service.stats(StatsParams(session_id=opened.session_id)), args.json)
        else:
            leaf = UNSET if args.leaf is None else args.leaf
            params = ContextParams(session_id=opened.session_id, leaf_id=leaf, format=args.format)
            lines = context_lines(_as_received(service.context(params), ContextResult))
        print_lines(lines)
    except SessionTreeError as exc:
        print(f"sessiontree: {exc.message}", file=sys.stderr)
        return 1
    finally:
        service.close_all()
    return 0


def _export(service: Any, session_id: str, args: argparse.Namespace) -> int:
    """The document's UTF-8 bytes, the same to stdout as to `-o` (a lone surrogate, which UTF-8
    cannot hold, written as U+FFFD as pi's Node writes it); a file is written whole or not at all."""
    from .protocol import UNSET, ExportParams
    from .shown import utf8

    leaf = UNSET if args.leaf is None else args.leaf
    data = utf8(service.export(ExportParams(session_id, args.format, leaf, args.scope)).content)
    if args.output is None:
        write_stdout(data)
        return 0
    try:
        write_file(args.output, data)
    except OSError as exc:
        print(f"sessiontree: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"sessiontree: wrote {args.output}", file=sys.stderr)
    return 0


def _stats_lines(result: Any, as_json: bool) -> Iterator[str]:
    from . import jsonfmt
    from .protocol import to_wire

    wire = to_wire(result)
    if as_json:
        yield jsonfmt.dumps_wire(wire).decode()
        return
    for title, figures in (("whole tree", wire["tree"]), ("path to the leaf", wire.get("path"))):
        if figures is None:
            continue
        usage = figures["usage"]
        yield (f"{title}: {figures['entries']:,} entries, {usage['assistantMessages']:,} assistant messages, "
               f"{usage['usages']:,} usages")
        roles = ", ".join(f"{role} {count:,}" for role, count in figures["messagesByRole"].items())
        yield f"  messages: {roles or 'none'}"
        tools = ", ".join(f"{tool} {count:,}" for tool, count in list(figures["toolCalls"].items())[:10])
        yield f"  tool calls: {tools or 'none'}"
        tokens = usage["tokens"]
        yield (f"  tokens: {tokens['total']:,} (input {tokens['input']:,}, output {tokens['output']:,}, "
               f"cache read {tokens['cacheRead']:,}, cache write {tokens['cacheWrite']:,})")
        yield f"  cost: {usage['cost']['total']:.4f}"
        if usage["skipped"]:
            yield f"  skipped {usage['skipped']:,} usage values that are not finite numbers"
        for model, figures_of in figures["byModel"].items():
            yield (f"  {model}: {figures_of['assistantMessages']:,} messages, {figures_of['usages']:,} usages, "
                   f"cost {figures_of['cost']['total']:.4f}")
        yield f"  compactions {figures['compactions']}, branch points {figures['branchPoints']}"
    if wire.get("cwd") is not None:
        yield f"{wire['sessions']} sessions of {wire['cwd']}"


def across_sessions(args: argparse.Namespace) -> int:
    """`search` and `stats --cwd`: the sessions root as the daemon would serve it."""
    from . import jsonfmt
    from .config import InitOptions, resolve_index_dir, resolve_sessions_dir
    from .errors import SessionTreeError
    from .protocol import SearchParams, StatsParams, to_wire
    from .service import ServiceConfig, SessionService

    root = resolve_sessions_dir(args.sessions_dir, os.environ, InitOptions())
    index_dir = resolve_index_dir(os.environ, InitOptions())
    service = SessionService(ServiceConfig(sessions_dir=root, index_dir=index_dir, agents=agent_dirs(args)))
    try:
        if args.command == "stats":
            print_lines(_stats_lines(service.stats(StatsParams(cwd=args.cwd)), args.json))
            return 0
        syntax: Literal["fts", "plain"] = "fts" if args.fts else "plain"
        result = service.search(SearchParams(args.query, syntax, cwd=args.cwd, limit=args.limit), service.refresh_search())
        if args.json:
            print_lines(iter([jsonfmt.dumps_wire(to_wire(result)).decode()]))
        else:
            print_lines(_hit_lines(result.hits))
    except SessionTreeError as exc:
        print(f"sessiontree: {exc.message}", file=sys.stderr)
        return 1
    finally:
        service.close_all()
    return 0


def _hit_lines(hits: list[Any]) -> Iterator[str]:
    for hit in hits:
        marked, at = [], 0
        for start, end in hit.highlights:
            marked += [hit.snippet[at:start], "«", hit.snippet[start:end], "»"]
            at = end
        marked.append(hit.snippet[at:])
        where = f"{hit.path}#{hit.entry_id}"
        yield f"{hit.timestamp or '':24.24} {hit.role or hit.type:14.14} {''.join(marked)}"
        yield f"  {where}{'  (on the leaf path)' if hit.on_leaf_path else ''}"


def _as_received(result: Any, cls: type[T]) -> T:
    """`result` as a client of the daemon reads it: its wire bytes decoded and structured again, so
    the views print what they would print for a daemon's answer, to the character."""
    from . import jsonfmt
    from .protocol import converter, to_wire

    return converter.structure(jsonfmt.loads_wire(jsonfmt.dumps_wire(to_wire(result))), cls)
