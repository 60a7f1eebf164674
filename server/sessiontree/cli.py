"""The `sessiontree` command line: `serve` runs the daemon; `list`, `tree`, `context`, `export`,
`stats` and `search` read session files in this process, through the domain, as the daemon would
serve them; `push`, `pull` and `store` move sessions in and out of a PostgreSQL store (cli_store.py).

A person reads what goes wrong: every ordinary mistake (a missing or wrong file, a directory, an
unknown entry or project, a file that cannot be written, Ctrl-C) ends in one line of plain words on
stderr and a non-zero status (2: the arguments, 1: the session or the command, 130: interrupted).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from . import __version__, cli_store
from .config import DEFAULT_MAX_MESSAGE_BYTES, ServerConfig
from .output import TerminalProgress, print_lines, show_lines, write_file, write_stdout

if TYPE_CHECKING:
    from .agents import AgentName

T = TypeVar("T")

DESCRIPTION = "Look at coding-agent sessions (pi's JSONL session files), search them, and serve them to editors."
EPILOG = """examples:
  sessiontree list --cwd .            the sessions of this project, newest first
  sessiontree tree FILE               a session's tree, folded to fit the terminal
  sessiontree context FILE#ID         what the model sees at an entry (FILE#ID as search prints it)
  sessiontree search 'empty input'    full-text search over every session
  sessiontree serve                   the daemon editors and agents talk to (see protocol.md)

Sessions are read under pi's root, ~/.pi/agent/sessions, unless --sessions-dir DIR or
$SESSIONTREE_SESSIONS_DIR names another. `sessiontree COMMAND --help` explains a command."""


class UserError(Exception):
    """A mistake to report in one line: what was wrong, naming the file or directory."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message, self.status = message, status


class _Version(argparse.Action):
    """`--version`: the package, the protocol and the session format it reads and writes."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the versions and exit", default=argparse.SUPPRESS)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from .protocol import FORMAT_VERSION, PROTOCOL_VERSION

        print(f"sessiontree {__version__} (protocol {PROTOCOL_VERSION}, session format {FORMAT_VERSION})")
        parser.exit()


def _command(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(name, help=summary, description=description)
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sessiontree", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = _command(
        commands,
        "serve",
        "run the daemon editors and agents talk to (JSON-RPC on stdin/stdout)",
        "Run the daemon on stdin/stdout: JSON-RPC 2.0 with LSP's Content-Length framing, as protocol.md describes."
        " Editors and agents start it; a person rarely does.",
    )
    serve.add_argument("--sessions-dir", type=Path, metavar="DIR", help="the sessions root (default: ~/.pi/agent/sessions)")
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

    listing = _command(
        commands,
        "list",
        "list the sessions, newest first",
        "List the sessions under the sessions root, newest first: when, entries, size, name (or first message),"
        " project directory and file.",
    )
    listing.add_argument("--cwd", metavar="DIR", help="only the sessions of this project directory (., ~/src/x, ...)")
    _sessions_dir_option(listing)
    listing.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers session/list")
    listing.add_argument("--no-pager", action="store_true", help="do not page the output on a terminal")

    tree = _command(
        commands,
        "tree",
        "show a session's tree, folded to fit the terminal",
        "Show a session's tree as the editors do: stretches of entries with one child each folded into one row,"
        " every branch point, label, summary and the path to the leaf (•) shown, lines cut to the terminal's width,"
        " paged on a terminal. Deep trees show each row's depth as [N] instead of indenting it.",
    )
    tree.add_argument("file", type=Path, metavar="FILE[#ID]", help="a session file; #ID (or --leaf) marks the path to that entry")
    tree.add_argument("--leaf", metavar="ID", help="show the path to this entry instead of the current leaf's")
    tree.add_argument("--all", "--unfold", action="store_true", dest="all", help="every entry on a line of its own")
    tree.add_argument("--depth", type=_count, metavar="N", help="hide the branches more than N branch points deep")
    tree.add_argument("--limit", type=_count, metavar="N", help="show at most N lines")
    tree.add_argument("--width", type=_count, metavar="N", help="cut lines to N columns (default: the terminal's; 0: never)")
    tree.add_argument("--no-pager", action="store_true", help="do not page the output on a terminal")
    form = tree.add_mutually_exclusive_group()
    form.add_argument("--flat", action="store_true", help="the plain form: one line per entry, nothing cut (stable)")
    form.add_argument("--json", action="store_true", help="every entry as JSON, as the daemon answers session/tree")
    _agent_flags(tree)

    context = _command(
        commands,
        "context",
        "show what the model sees at the leaf (or at an entry)",
        "Show the messages the model would be sent at the leaf, or at the entry FILE#ID or --leaf names:"
        " the path back to the last compaction, as pi builds it.",
    )
    context.add_argument("file", type=Path, metavar="FILE[#ID]", help="a session file; #ID: the entry to project from")
    context.add_argument("--leaf", metavar="ID", help="the entry to project from (default: the current leaf)")
    context.add_argument("--format", choices=("agent", "llm"), default="agent",
                         help="agent: every message pi keeps; llm: only what is sent to the model")
    context.add_argument("--no-pager", action="store_true", help="do not page the output on a terminal")
    _agent_flags(context)

    export = _command(
        commands,
        "export",
        "write a session as Markdown or a self-contained HTML page",
        "Write a session as Markdown or as one self-contained HTML page: the path to the leaf (or to FILE#ID),"
        " or every branch.",
    )
    export.add_argument("file", type=Path, metavar="FILE[#ID]", help="a session file; #ID: the leaf to export to")
    export.add_argument("--format", choices=("markdown", "html"), required=True)
    export.add_argument("--scope", choices=("path", "tree"), default="path", help="the leaf's path, or every branch")
    export.add_argument("--leaf", metavar="ID", help="the leaf (default: the current leaf)")
    export.add_argument("-o", "--output", type=Path, metavar="OUT", help="the file to write (default: stdout)")
    _agent_flags(export)

    stats = _command(
        commands,
        "stats",
        "count entries, messages, tool calls, tokens and cost",
        "Count a session's entries, messages, tool calls, tokens and cost (by model), or those of every session"
        " of a project with --cwd.",
    )
    target = stats.add_mutually_exclusive_group(required=True)
    target.add_argument("file", type=Path, nargs="?", metavar="FILE", help="a session file")
    target.add_argument("--cwd", metavar="DIR", help="every session of this project directory (., ~/src/x, ...)")
    _sessions_dir_option(stats)
    stats.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers it")
    _agent_flags(stats)

    search = _command(
        commands,
        "search",
        "search the text of every session",
        "Search the text of every session under the sessions root. Each hit prints FILE#ID, which tree, context"
        " and export accept. The first search builds a full-text index of them (SQLite, about as big as the"
        " session files it indexes: ~100 MB for 100 MB of sessions) in $XDG_CACHE_HOME/sessiontree/index"
        " (~/.cache/sessiontree/index), shared with the daemon; later searches only read what changed. It is a"
        " cache: delete it any time, it is built again.",
    )
    search.add_argument("query", help="words to find (FTS5 syntax with --fts: phrases, prefix*, AND/OR/NOT)")
    search.add_argument("--cwd", metavar="DIR", help="only the sessions of this project directory (., ~/src/x, ...)")
    search.add_argument("--fts", action="store_true", help="take the query in FTS5 syntax")
    search.add_argument("--limit", type=int, default=20, metavar="N", help="hits to show (default 20)")
    _sessions_dir_option(search)
    search.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers it")

    imports = _command(
        commands,
        "import",
        "write Claude Code or Codex sessions out as pi sessions",
        "Write Claude Code or Codex sessions (files, or folders of them) out as pi sessions under the sessions"
        " root, one per source session, which pi opens and continues; importing again adds only what is new.",
    )
    imports.add_argument("paths", nargs="+", metavar="PATH", help="session files or folders of either agent")
    imports.add_argument("--sessions-dir", type=Path, help="the pi sessions root to write to (default: pi's)")
    imports.add_argument("--json", action="store_true", help="the result as JSON, as the daemon answers it")
    _agent_flags(imports)
    cli_store.add_commands(commands)
    for name, description in _STORE_DESCRIPTIONS.items():
        commands.choices[name].description = description
    _add_migrate(commands)
    _add_retire(commands)
    return parser


_STORE_DESCRIPTIONS = {
    "push": "Copy session files into a PostgreSQL store (every .jsonl below a directory); again later, only what is new.",
    "pull": "Write sessions from a PostgreSQL store back as files under the sessions root, byte for byte.",
    "store": "Manage a PostgreSQL store: `store migrate` creates its schema or brings it up to date.",
}


def _sessions_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sessions-dir", type=Path, metavar="DIR", help="the sessions root (default: $SESSIONTREE_SESSIONS_DIR, else pi's)"
    )


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


_RETIRE_HELP = {
    "trash": "move session files to the trash ($XDG_DATA_HOME/Trash, or .trash under the sessions root"
    " when that is on another file system): restorable, never deleted",
    "archive": "move session files to .archive/ in their folder: out of pi's list and of `session/list`",
    "restore": "put trashed or archived session files back (FILE: where it was, or where it lies now)",
}


def _add_retire(commands: Any) -> None:
    for name, text in _RETIRE_HELP.items():
        command = commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        command.add_argument("files", type=Path, nargs="+", metavar="FILE")
        command.add_argument("--sessions-dir", type=Path, help="the sessions root (default: pi's)")
        if name != "restore":
            command.add_argument("-y", "--yes", action="store_true", help="do not ask on a terminal")


def retire(args: argparse.Namespace) -> int:
    """`trash`, `archive` and `restore`: the daemon's methods, run in this process; on a terminal
    `trash` and `archive` ask first (unless --yes)."""
    from .config import InitOptions, resolve_sessions_dir
    from .errors import SessionTreeError
    from .protocol import RetireParams
    from .service import ServiceConfig, SessionService

    root = resolve_sessions_dir(args.sessions_dir, os.environ, InitOptions())
    paths = [str(file.expanduser().absolute()) for file in args.files]
    if args.command != "restore" and not args.yes and sys.stdin.isatty():
        print("\n".join(paths), file=sys.stderr)
        where = "the trash" if args.command == "trash" else "the archive"
        print(f"sessiontree: move {len(paths)} session file(s) to {where}? [y/N] ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline()
        if answer.strip().lower() not in ("y", "yes"):
            print("sessiontree: nothing moved", file=sys.stderr)
            return 1
    service = SessionService(ServiceConfig(sessions_dir=root))
    call = {"trash": service.trash, "archive": service.archive, "restore": service.restore}[args.command]
    status = 0
    for path in paths:
        try:
            moved: Any = call(RetireParams(path))
        except SessionTreeError as exc:
            print(f"sessiontree: {exc.message}", file=sys.stderr)
            status = 1
            continue
        source = moved.restored_from if args.command == "restore" else moved.path
        target = moved.path if args.command == "restore" else moved.moved_to
        print(f"sessiontree: {source} -> {target}", file=sys.stderr)
    return status


def _add_migrate(commands: Any) -> None:
    text = (
        "rewrite version 1 and 2 session files as version 3, the originals kept as FILE.v<N>.bak"
        " (viewing never migrates; the daemon migrates a file when it opens it to write)"
    )
    migrate = commands.add_parser("migrate", help=text, description=text[0].upper() + text[1:] + ".")
    migrate.add_argument("files", type=Path, nargs="+", metavar="FILE")


def migrate_files(files: list[Path]) -> int:
    """`migrate`: each file opened for writing as the daemon opens it (which migrates an old one)."""
    from .backend.files import FileBackend
    from .errors import SessionTreeError
    from .file_warning import FileWarning

    status = 0
    for file in files:
        path = file.expanduser().resolve()
        warnings: list[FileWarning] = []
        try:
            session = FileBackend(path.parent).load(path, warnings)
        except SessionTreeError as exc:
            print(f"sessiontree: {exc.message}", file=sys.stderr)
            status = 1
            continue
        refused = session.read_only
        session.close()
        done = [w.message for w in warnings if w.kind == "migrated"]
        if refused is not None and not done:
            print(f"sessiontree: {path}: not migrated: {refused}", file=sys.stderr)
            status = 1
        else:
            print(f"sessiontree: {path}: {done[0] if done else 'already version 3'}", file=sys.stderr)
    return status


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
    from .errors import SessionTreeError

    try:
        return _run(_parser().parse_args(argv))
    except UserError as exc:
        return _fail(exc.message, exc.status)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except SessionTreeError as exc:
        return _fail(exc.message, 1)
    except OSError as exc:  # a file that could not be read or written: named, with the system's reason
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}", 1)
    except UnicodeEncodeError as exc:  # text that is not Unicode (a lone surrogate) written to a file
        return _fail(f"cannot write text that is not valid Unicode ({exc.reason}: {exc.object[exc.start:exc.end]!a})", 1)


def _fail(message: str, status: int) -> int:
    with contextlib.suppress(OSError):  # stderr closed: the status still says it
        print(f"sessiontree: {message}", file=sys.stderr)
    return status


def _run(args: argparse.Namespace) -> int:
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
    if args.command == "list":
        return list_sessions(args)
    if args.command == "migrate":
        return migrate_files(args.files)
    if args.command in _RETIRE_HELP:
        return retire(args)
    if args.command == "search" or (args.command == "stats" and args.cwd is not None):
        return across_sessions(args)
    if args.command == "import":
        return import_sessions(args)
    return show(args)


def session_file(given: Path) -> tuple[Path, str | None]:
    """The session file an argument names, and the entry after its `#` (as `search` prints hits)."""
    path, entry = given.expanduser(), None
    if not path.exists() and "#" in path.name:
        name, _, entry = path.name.rpartition("#")
        path = path.with_name(name)
    if path.is_dir():
        raise UserError(f"{path} is a directory, not a session file (`sessiontree list` shows the sessions)", 2)
    if not path.exists():
        raise UserError(f"no such file: {path}", 2)
    if not path.is_file():
        raise UserError(f"{path} is not a regular file", 2)
    return path.resolve(), entry or None


def _leaf_of(args: argparse.Namespace, entry: str | None) -> str | None:
    if entry is not None and args.leaf is not None and args.leaf != entry:
        raise UserError(f"two entries named: #{entry} and --leaf {args.leaf}; give one", 2)
    leaf: str | None = args.leaf or entry
    return leaf


def _about(path: Path, exc: Exception) -> UserError:
    """A domain error about a session file, in words that name the file."""
    from .errors import EntryNotFound, NotASessionFile, StorageError

    if isinstance(exc, EntryNotFound):
        return UserError(f"{path} has no entry {exc.data.get('entryId')}", 1)
    if isinstance(exc, NotASessionFile):
        return UserError(f"{path} is not a session file: {exc.message}", 1)
    if isinstance(exc, StorageError):
        return UserError(str(getattr(exc, "message", exc)), 1)
    return UserError(f"{path}: {getattr(exc, 'message', exc)}", 1)


def _check_output(out: Path) -> None:
    """Refuse, before any work, an output path that cannot be written as a file."""
    if out.is_dir():
        raise UserError(f"{out} is a directory; -o takes the file to write", 2)
    if not out.parent.is_dir():
        raise UserError(f"cannot write {out}: the directory {out.parent} does not exist", 2)


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
    """`tree`, `context`, `export` and `stats FILE`: read the file in this process, through the
    domain, as a daemon rooted at its directory would serve it; no daemon is started and the
    server is not imported."""
    from .config import InitOptions, resolve_index_dir
    from .errors import SessionTreeError
    from .protocol import UNSET, ContextParams, ContextResult, OpenParams, StatsParams
    from .render import context_lines
    from .service import ServiceConfig, SessionService

    path, entry = session_file(args.file)
    leaf = _leaf_of(args, entry) if args.command != "stats" else None
    if args.command == "export":
        args.leaf = leaf
        if args.output is not None:
            _check_output(args.output)
    # The daemon's defaults: index sidecars where `serve` keeps them, so a large file opens as fast.
    # Viewing never writes: the file is opened for reading only (not migrated, hard links allowed).
    config = ServiceConfig(
        sessions_dir=path.parent,
        index_dir=resolve_index_dir(os.environ, InitOptions()),
        view_only=True,
        agents=agent_dirs(args),
    )
    service = SessionService(config)
    try:
        opened = service.open(OpenParams(path=str(path)))
        for warning in opened.warnings:
            print(f"sessiontree: warning: {path}: {warning.message}", file=sys.stderr)
        if args.command == "tree":
            return _show_tree(service, opened.session_id, args, leaf)
        if args.command == "export":
            return _export(service, opened.session_id, args)
        if args.command == "stats":
            print_lines(_stats_lines(service.stats(StatsParams(session_id=opened.session_id)), args.json))
            return 0
        params = ContextParams(session_id=opened.session_id, leaf_id=UNSET if leaf is None else leaf, format=args.format)
        lines = context_lines(_as_received(service.context(params), ContextResult))
        show_lines(lines, page=_pages(args))
    except SessionTreeError as exc:
        raise _about(path, exc) from None
    finally:
        service.close_all()
    return 0


def _pages(args: argparse.Namespace) -> bool:
    return not args.no_pager and sys.stdout.isatty()


def _show_tree(service: Any, session_id: str, args: argparse.Namespace, leaf: str | None) -> int:
    from . import jsonfmt, terminal_tree
    from .protocol import TreeParams, TreeResult, to_wire
    from .render import tree_lines

    if args.json or args.flat:
        tree = service.tree(TreeParams(session_id=session_id))
        if args.json:
            print_lines(iter([jsonfmt.dumps_wire(to_wire(tree)).decode()]))
        else:
            print_lines(tree_lines(_as_received(tree, TreeResult)))
        return 0
    import shutil

    size = shutil.get_terminal_size()
    rows = folded_rows(service, session_id)
    if args.all or terminal_tree.entries_in(rows) <= size.lines:  # asked, or it all fits: nothing folded
        rows = unfolded(service, session_id, rows)
    if leaf is not None:
        rows = as_leaf(service, session_id, rows, leaf)
    width = size.columns if args.width is None else args.width or None
    page = _pages(args)
    items = terminal_tree.items_of(rows, args.depth)
    lines = terminal_tree.lines(items, width, target=leaf)
    if args.limit is not None and len(items) > args.limit:
        lines = _limited(lines, args.limit, len(items))
    if not items:
        lines = iter(["(no entries yet)"])
    show_lines(lines, page=page)
    return 0


def _limited(lines: Iterator[str], limit: int, total: int) -> Iterator[str]:
    for _, line in zip(range(limit), lines, strict=False):
        yield line
    yield f"… {total - limit:,} more lines (--limit {limit})"


def folded_rows(service: Any, session_id: str, run: str | None = None) -> list[Any]:
    """Every row of `session/treeView`, page by page (with `run`: the entries of that run row)."""
    from .protocol import TreeViewParams

    rows: list[Any] = []
    while True:
        page = service.tree_view(TreeViewParams(session_id, offset=len(rows), limit=2000, run=run))
        rows.extend(page.rows)
        if not page.rows or len(rows) >= page.total:
            break
    return rows


def unfolded(service: Any, session_id: str, rows: list[Any]) -> list[Any]:
    """The rows with each run row replaced by its entries."""
    return [entry for row in rows for entry in (folded_rows(service, session_id, row.id) if row.run else [row])]


def as_leaf(service: Any, session_id: str, rows: list[Any], leaf: str) -> list[Any]:
    """The rows with the path to `leaf` marked instead of the current leaf's, `leaf` a row of its own."""
    from . import terminal_tree
    from .protocol import TreeViewParams

    at = service.tree_view(TreeViewParams(session_id, limit=1, reveal=leaf)).offset  # raises if not an entry
    # The folded rows' position of the row that shows it; unfolded rows list it as it is.
    at = next((n for n, row in enumerate(rows) if row.id == leaf), at)
    row = rows[at] if at < len(rows) else None
    if row is None or (row.id != leaf and row.run is None):
        print(f"sessiontree: warning: entry {leaf} is on no path from a root; it is not shown", file=sys.stderr)
        return rows
    if row.run is not None:
        parts = _split_run(service, session_id, row, leaf)
        if not any(part.id == leaf for part in parts):
            return rows
        rows = [*rows[:at], *parts, *rows[at + 1 :]]
        at += next(n for n, part in enumerate(parts) if part.id == leaf)
    items = terminal_tree.items_of(rows)
    for shown in rows:
        shown.on_leaf_path = None
    # Walk back up: the rows before it in its branch, then the branch point it grew from, and so on.
    depth, inside = rows[at].indent, not items[at].starts
    rows[at].on_leaf_path = True
    for n in range(at - 1, -1, -1):
        if rows[n].indent < depth or (rows[n].indent == depth and inside):
            rows[n].on_leaf_path = True
            depth, inside = rows[n].indent, not items[n].starts
    return rows


def _split_run(service: Any, session_id: str, run: Any, leaf: str) -> list[Any]:
    """A run row as the rows before `leaf`, `leaf`, and the rows after it (each a run if longer than one)."""
    from .protocol import TreeViewParams
    from .tree_nodes import TreeRun

    entries: list[Any] = []
    while not any(entry.id == leaf for entry in entries[-2000:]) or entries[-1].id == leaf:
        page = service.tree_view(TreeViewParams(session_id, offset=len(entries), limit=2000, run=run.id))
        entries.extend(page.rows)
        if not page.rows or len(entries) >= page.total:
            break
    at = next((n for n, entry in enumerate(entries) if entry.id == leaf), None)
    if at is None:  # not in this run after all (the file changed meanwhile): the run as it was
        return [run]
    count = run.run.count

    def fold(first: Any, size: int, last_id: str) -> Any:
        if size > 1:
            first.run, first.children = TreeRun(size, last_id), None
        return first

    parts = []
    if at > 0:
        parts.append(fold(entries[0], at, entries[at - 1].id))
    parts.append(entries[at])
    if at + 1 < count:
        parts.append(fold(entries[at + 1], count - at - 1, run.run.last_id))
    return parts


def list_sessions(args: argparse.Namespace) -> int:
    """`list`: the sessions under the root (of one project with --cwd), newest first."""
    from . import jsonfmt
    from .protocol import ListParams, ListResult, to_wire
    from .service import ServiceConfig, SessionService

    root = sessions_root(args.sessions_dir)
    cwd = None if args.cwd is None else project(args.cwd, root)
    service = SessionService(ServiceConfig(sessions_dir=root, index_dir=None))
    try:
        found = service.list(ListParams(cwd=cwd)).sessions
    finally:
        service.close_all()
    if cwd is not None:  # pi keeps a project's sessions by its cwd, as the header says (the folder's name is lossy)
        found = [summary for summary in found if summary.cwd and os.path.abspath(summary.cwd) == cwd]
    if args.json:
        print_lines(iter([jsonfmt.dumps_wire(to_wire(ListResult(found))).decode()]))
    else:
        show_lines(_listing_lines(found, root), page=_pages(args))
    if cwd is not None and not found:
        raise UserError(f"no sessions of {cwd} under {root}", 1)
    return 0


def _listing_lines(found: list[Any], root: Path) -> Iterator[str]:
    import shutil
    from datetime import datetime

    from .terminal_tree import clean, cut

    width = shutil.get_terminal_size().columns
    home = str(Path.home())
    for summary in found:
        path = Path(summary.path)
        try:
            size, entries = path.stat().st_size, _lines_in(path) - 1
        except OSError:
            size, entries = 0, 0
        when = datetime.fromisoformat(summary.modified.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
        title = clean(summary.name or summary.first_message)
        yield cut(f"{when}  {entries:>7,} entries  {_size(size):>8}  {title}", width)
        cwd = summary.cwd.replace(home, "~", 1) if summary.cwd.startswith(home + "/") else summary.cwd
        yield f"  {cwd}  {path}"


def _lines_in(path: Path) -> int:
    count, last = 0, b"\n"
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def _size(size: int) -> str:
    if size < 1024:
        return f"{size:,} B"
    amount = size / 1024
    for unit in ("KB", "MB"):
        if amount < 1024:
            return f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:,.1f} GB"


def sessions_root(flag: Path | None) -> Path:
    """The sessions root, which must exist: a mistyped --sessions-dir must not look like "no sessions"."""
    from .config import SESSIONS_DIR_ENV, InitOptions, resolve_sessions_dir

    root = resolve_sessions_dir(flag, os.environ, InitOptions())
    if not root.is_dir():
        given = "--sessions-dir" if flag else f"${SESSIONS_DIR_ENV}" if os.environ.get(SESSIONS_DIR_ENV) else "pi's default"
        what = "is not a directory" if root.exists() else "does not exist"
        raise UserError(f"the sessions root {root} ({given}) {what}; name another with --sessions-dir DIR", 2)
    return root


def project(given: str, root: Path) -> str:
    """A project directory as pi records it (`~` expanded, absolute, normalised: `.`, `DIR/` and
    relative paths work), which must have sessions under the root."""
    from .paths import encode_cwd

    cwd = os.path.abspath(os.path.expanduser(given))
    if not (root / encode_cwd(cwd)).is_dir():
        raise UserError(f"no sessions of {cwd} under {root} (`sessiontree list` shows every project's)", 1)
    return cwd


def _export(service: Any, session_id: str, args: argparse.Namespace) -> int:
    """The document's UTF-8 bytes, the same to stdout as to `-o` (a lone surrogate, which UTF-8
    cannot hold, written as U+FFFD as pi's Node writes it), written as it is made, entry by entry;
    a file is written whole or not at all."""
    from .protocol import UNSET, ExportParams
    from .shown import utf8

    leaf = UNSET if args.leaf is None else args.leaf
    with TerminalProgress("exporting entries") as progress:
        if args.output is None and sys.stdout.isatty():
            progress.active = False  # the document itself is on the terminal: no line across it
        _, chunks = service.export_chunks(ExportParams(session_id, args.format, leaf, args.scope), progress)
        data = (utf8(chunk) for chunk in chunks)
        if args.output is None:
            write_stdout(data)
            return 0
        try:
            write_file(args.output, data)
        except OSError as exc:
            progress.clear()
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
    from .config import InitOptions, resolve_index_dir
    from .protocol import SearchParams, StatsParams, to_wire
    from .service import ServiceConfig, SessionService

    root = sessions_root(args.sessions_dir)
    cwd = None if args.cwd is None else project(args.cwd, root)
    index_dir = resolve_index_dir(os.environ, InitOptions())
    service = SessionService(ServiceConfig(sessions_dir=root, index_dir=index_dir, agents=agent_dirs(args)))
    try:
        if args.command == "stats":
            with TerminalProgress("reading sessions") as progress:
                figures = service.stats(StatsParams(cwd=cwd), progress)
            print_lines(_stats_lines(figures, args.json))
            return 0
        syntax: Literal["fts", "plain"] = "fts" if args.fts else "plain"
        with TerminalProgress("indexing sessions") as progress:
            indexed = service.refresh_search(progress)
        _say_where_the_index_is(service, indexed)
        result = service.search(SearchParams(args.query, syntax, cwd=cwd, limit=args.limit), indexed)
        if args.json:
            print_lines(iter([jsonfmt.dumps_wire(to_wire(result)).decode()]))
        else:
            print_lines(_hit_lines(result.hits))
    finally:
        service.close_all()
    return 0


def _say_where_the_index_is(service: Any, indexed: Any) -> None:
    """On a terminal, a search that built or grew the index says where it is and how big: it is
    written to the user's cache, and may be large."""
    if not sys.stderr.isatty() or not (indexed.files_reindexed or indexed.files_appended or indexed.rebuilt):
        return
    path = getattr(getattr(service.search_index(), "index", None), "path", None)
    if path is None:  # the PostgreSQL store's index is in the store
        return
    size = sum(os.path.getsize(part) for part in Path(path).parent.glob(Path(path).name + "*") if part.is_file())
    print(
        f"sessiontree: indexed {indexed.files_reindexed + indexed.files_appended:,} session files into {path}"
        f" ({size / 1e6:,.1f} MB); a cache, built again if deleted",
        file=sys.stderr,
    )


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
