"""`session/search` over the store: PostgreSQL full-text search on an index derived from the lines.

Appends never index: each search first brings `sessiontree.texts` up to date (`refresh`), reading
only the lines of sessions that grew since (`text_progress.seen` is the size last read,
`indexed` the end of the last whole line indexed; a last line without its line end waits). A
session is indexed in transactions that hold its `text_progress` row, so daemons refreshing at
once index each line once: the second waits, then goes on from where the first stopped.
The refresh runs in a worker thread on a connection of its own; searches use the daemon's.

Queries take the file store's syntax (checked by SQLite first, so errors read the same) and
become tsqueries (fts_query.py). Hits are ranked as the file store ranks them, in windows of the
newest matches (by `seq`, the order entries were indexed, which follows the order they were
written), by ts_rank within a window; cursors pin the newest row of the first page.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence, Set
from pathlib import Path
from typing import Any, Final

import psycopg

from ... import jsonfmt
from ...errors import InvalidParams
from ...search import RANK_WINDOW, LeafPath, RefreshStats, SearchHit, SearchPage, Syntax
from ...search import query as q
from ...search.refresh import _entry_row as entry_row  # the file store's rows: the same entries, the same text
from . import names
from .database import Connection, Database
from .fts import marked_snippet, tsvector
from .fts_query import Compiled, compile_expression
from .schema import VERSION, installed_version, migrate

Progress = Callable[[int, int], None]
Cancelled = Callable[[], bool]

BATCH_BYTES: Final = 4 * 1024 * 1024  # lines read and indexed in one transaction
SERVED: Final = "s.directory <> '.' AND strpos(s.directory, '/') = 0 AND s.name LIKE '%%.jsonl'"  # as list()

_COPY: Final = (
    "COPY sessiontree.texts (sid, off, entry_id, parent_id, type, role, ms, timestamp, body, tsv) FROM STDIN"
)
_PATH_FROM_LAST: Final = """
WITH RECURSIVE walk(id) AS (
    SELECT last_entry FROM sessiontree.text_progress WHERE sid = %(sid)s
    UNION
    SELECT (SELECT parent_id FROM sessiontree.texts WHERE sid = %(sid)s AND entry_id = walk.id ORDER BY off DESC LIMIT 1)
    FROM walk WHERE walk.id IS NOT NULL
)
SELECT id FROM walk WHERE EXISTS (SELECT 1 FROM sessiontree.texts WHERE sid = %(sid)s AND entry_id = walk.id)
"""


def _text(value: Any) -> Any:
    """A string PostgreSQL can hold (no NUL); anything else as it is."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


@contextlib.contextmanager
def _too_complex(query: str) -> Iterator[None]:
    """A query beyond what the server can run (stack depth, a statement too complex) is the
    query's fault: InvalidParams, and the connection, whose transaction was rolled back, is kept."""
    try:
        yield
    except psycopg.errors.ProgramLimitExceeded as exc:
        shown = query if len(query) <= 80 else query[:80] + "…"
        raise InvalidParams(
            f"invalid search query {shown!r}: too complex for the PostgreSQL store ({exc.diag.message_primary or exc})",
            field="query",
        ) from None


class PostgresSearch:
    """The search index in the store of `root`'s sessions. `connection()` gives the daemon's
    connection (searches run in the daemon's thread); refreshes connect on their own."""

    def __init__(self, dsn: str, root: Path, connection: Callable[[], Connection], database: Database,
                 rank_window: int = RANK_WINDOW) -> None:
        self.root = root
        self.rank_window = rank_window
        self._connection = connection
        self._db = database  # the daemon's: its errors()
        self._refresh_db = Database(dsn)
        self._refresh_lock = threading.Lock()
        self._schema_checked = False
        self._paths: dict[tuple[int, str | None, int], frozenset[str]] = {}  # (sid, last entry, indexed)

    # ------------------------------------------------------------------ refreshing

    def refresh(self, progress: Progress | None = None, cancelled: Cancelled | None = None) -> RefreshStats:
        """Index what was added to the served sessions since the last refresh (any daemon's)."""
        with self._refresh_lock:
            db = self._refresh_db
            with db.errors():
                connection = db.connection()
                if not self._schema_checked:
                    if installed_version(connection) != VERSION:
                        migrate(connection)
                    self._schema_checked = True
            return Refresh(db, cancelled).run(progress)

    # ------------------------------------------------------------------ searching

    def search(
        self,
        query: str,
        *,
        syntax: Syntax = "fts",
        cwd: str | None = None,
        session: str | None = None,
        roles: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int = 20,
        cursor: str | None = None,
        leaf_path: LeafPath | None = None,
    ) -> SearchPage:
        request = q.request_of(query, syntax, cwd, session, roles, types, since_ms, until_ms, limit, cursor)
        expression, filters, key, position = request.expression, request.filters, request.key, request.position
        compiled = compile_expression(query, expression)
        if compiled.match is None or filters.empty:
            return SearchPage()
        where, timed, params = self._where(compiled, filters)
        connection = self._connection()
        with self._db.errors(), _too_complex(query), connection.transaction():
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")  # one snapshot a page
            if position is None:
                row = connection.execute("SELECT coalesce(max(seq), 0) FROM sessiontree.texts").fetchone()
                position = q.Position(int(row[0]) if row else 0, None, 0)
            rows, after = self._ranked(connection, where, timed, params, position, limit)
            hits = self._hits(connection, compiled, rows, leaf_path)
        return SearchPage(hits, q.encode_cursor(key, after) if after is not None else None)

    def _where(self, compiled: Compiled, filters: q.Filters) -> tuple[str, str, dict[str, Any]]:
        """The conditions on `t` (texts) of the query and its filters: without the time range
        (which windows are counted by, as in the file store), and those of the time range."""
        clauses = ["t.tsv @@ %(match)s::tsquery"]
        params: dict[str, Any] = {"match": compiled.match, "rank": compiled.rank or compiled.match}
        if filters.session is not None:
            clauses.append(
                "t.sid IN (SELECT p.sid FROM sessiontree.text_progress p JOIN sessiontree.sessions s USING (sid)"
                " WHERE p.session_id = %(session)s OR s.name = %(session_name)s)"
            )
            params["session"] = _text(filters.session)
            params["session_name"] = self._name_of(filters.session)
        if filters.cwd is not None:
            clauses.append("t.sid IN (SELECT sid FROM sessiontree.text_progress WHERE cwd = %(cwd)s)")
            params["cwd"] = _text(filters.cwd)
        if filters.roles is not None:
            clauses.append("t.role = ANY(%(roles)s)")
            params["roles"] = [_text(role) for role in filters.roles]
        else:  # as the file store: system prompts only when asked for (search/text.py)
            clauses.append("t.role IS DISTINCT FROM 'system'")
        if filters.types is not None:
            clauses.append("t.type = ANY(%(types)s)")
            params["types"] = [_text(kind) for kind in filters.types]
        timed = ""
        if filters.since_ms is not None:
            timed += " AND t.ms >= %(since)s"
            params["since"] = filters.since_ms
        if filters.until_ms is not None:
            timed += " AND t.ms < %(until)s"
            params["until"] = filters.until_ms
        return " AND ".join(clauses), timed, params

    def _name_of(self, session: str) -> str | None:
        """The store's name of a session given by its path under the root; None for anything else."""
        path = Path(session)
        if not path.is_absolute() or self.root not in path.parents:
            return None
        return path.relative_to(self.root).as_posix().replace("\x00", "\ufffd")

    def _ranked(
        self, connection: Connection, where: str, timed: str, params: dict[str, Any], position: q.Position, limit: int
    ) -> tuple[list[tuple[int, float]], q.Position | None]:
        """Up to `limit` (seq, rank) from `position` on, crossing into older windows as needed, and
        where the next page starts (None: nothing more). As the file store's SearchIndex._ranked."""
        found: list[tuple[int, float]] = []
        while True:
            low = position.low
            if low is None:
                row = connection.execute(
                    f"SELECT t.seq FROM sessiontree.texts t WHERE {where} AND t.seq <= %(high)s"
                    " ORDER BY t.seq DESC LIMIT 1 OFFSET %(skip)s",
                    {**params, "high": position.high, "skip": self.rank_window - 1},
                ).fetchone()
                low = int(row[0]) if row else 0
            need = limit - len(found)
            rows = connection.execute(
                f"SELECT t.seq, ts_rank(t.tsv, %(rank)s::tsquery, 1) AS score FROM sessiontree.texts t"
                f" WHERE {where}{timed} AND t.seq BETWEEN %(low)s AND %(high)s"
                " ORDER BY score DESC, t.seq LIMIT %(count)s OFFSET %(offset)s",
                {**params, "low": low, "high": position.high, "count": need + 1, "offset": position.offset},
            ).fetchall()
            found += [(int(seq), float(score)) for seq, score in rows[:need]]
            if len(rows) > need:
                return found, q.Position(position.high, low, position.offset + need)
            if low == 0:
                return found, None
            position = q.Position(low - 1, None, 0)
            if len(found) == limit:
                return found, position

    def _hits(
        self, connection: Connection, compiled: Compiled, rows: list[tuple[int, float]], leaf_path: LeafPath | None
    ) -> list[SearchHit]:
        if not rows:
            return []
        details = {
            int(row[0]): row[1:]
            for row in connection.execute(
                "SELECT t.seq, t.sid, s.name, p.session_id, p.cwd, t.entry_id, t.parent_id, t.type, t.role,"
                " t.timestamp, t.ms, t.off, t.body, p.last_entry, p.indexed"
                " FROM sessiontree.texts t JOIN sessiontree.text_progress p USING (sid)"
                " JOIN sessiontree.sessions s USING (sid) WHERE t.seq = ANY(%s)",
                ([seq for seq, _ in rows],),
            )
        }
        known: dict[str, Set[str]] = {}
        hits = []
        for seq, score in rows:
            if seq not in details:
                continue
            sid, name, session_id, cwd, entry_id, parent_id, kind, role, stamp, ms, off, body, last, indexed = details[seq]
            if not names.is_safe(name):  # not a path below the root: never shown as one
                continue
            path = str(self.root / name)
            if path not in known:
                opened = leaf_path(path) if leaf_path is not None else None
                known[path] = opened if opened is not None else self._path_from_last(connection, sid, last, indexed)
            snippet, highlights = q.split_snippet(marked_snippet(body, compiled.phrases))
            hits.append(
                SearchHit(
                    path=path,
                    session_id=session_id or "",
                    cwd=cwd or "",
                    entry_id=entry_id,
                    parent_id=parent_id,
                    type=kind or "",
                    role=role,
                    timestamp=stamp,
                    timestamp_ms=ms,
                    offset=int(off),
                    snippet=snippet,
                    highlights=highlights,
                    score=score,
                    on_leaf_path=entry_id is not None and entry_id in known[path],
                )
            )
        return hits

    def _path_from_last(self, connection: Connection, sid: int, last: str | None, indexed: int) -> frozenset[str]:
        """The ids on the path from the session's last entry (pi's leaf when it loads the session)
        to its root, as far as it is indexed; kept until the session is indexed further."""
        key = (sid, last, int(indexed))
        if key not in self._paths:
            if len(self._paths) > 256:
                self._paths.clear()
            rows = connection.execute(_PATH_FROM_LAST, {"sid": sid}).fetchall()
            self._paths[key] = frozenset(str(row[0]) for row in rows)
        return self._paths[key]

    def close(self) -> None:
        self._refresh_db.close()


class Refresh:
    """One refresh over one connection; not reused."""

    def __init__(self, db: Database, cancelled: Cancelled | None) -> None:
        self.db = db
        self.connection = db.connection()
        self.cancelled = cancelled or (lambda: False)
        self.stats = RefreshStats()

    def run(self, progress: Progress | None) -> RefreshStats:
        with self.db.errors():
            self._run(progress)
        return self.stats

    def _run(self, progress: Progress | None) -> None:
        connection = self.connection
        gone = connection.execute(
            "DELETE FROM sessiontree.text_progress p WHERE NOT EXISTS"
            f" (SELECT 1 FROM sessiontree.sessions s WHERE s.sid = p.sid AND {SERVED})"
        )
        self.stats.files_removed = max(gone.rowcount, 0)
        sessions = connection.execute(
            "SELECT s.sid, s.size, p.seen, CASE WHEN p.sid IS NULL THEN s.header END"
            " FROM sessiontree.sessions s LEFT JOIN sessiontree.text_progress p USING (sid)"
            f" WHERE {SERVED} ORDER BY s.sid"
        ).fetchall()
        for done, (sid, size, seen, header) in enumerate(sessions, start=1):
            if self.cancelled():
                self.stats.cancelled = True
                return
            self.stats.files_seen += 1
            if seen is not None and int(seen) == int(size):
                self.stats.files_unchanged += 1
            else:
                if header is not None:
                    self._start(sid, bytes(header))
                self._index(sid)
                if self.stats.cancelled:
                    return
            if progress is not None:
                progress(done, len(sessions))

    def _start(self, sid: int, header_bytes: bytes) -> None:
        """The session's progress row, in a transaction of its own: it locks the session's row
        (for its key) only for a moment."""
        try:
            header = jsonfmt.loads(header_bytes)
        except jsonfmt.JSONDecodeError:
            header = {}
        session_id, cwd = header.get("id"), header.get("cwd")
        self.connection.execute(
            "INSERT INTO sessiontree.text_progress (sid, session_id, cwd) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            (sid, _text(session_id) if isinstance(session_id, str) else None, _text(cwd) if isinstance(cwd, str) else ""),
        )

    def _index(self, sid: int) -> None:
        """Index the session's new whole lines, a batch per transaction, each under its progress row."""
        counted = False
        while True:
            with self.connection.transaction():
                row = self.connection.execute(
                    "SELECT p.indexed, p.seen, p.last_entry, s.size FROM sessiontree.text_progress p"
                    " JOIN sessiontree.sessions s USING (sid) WHERE p.sid = %s FOR UPDATE OF p",
                    (sid,),
                ).fetchone()
                if row is None:  # deleted meanwhile
                    return
                indexed, seen, last_entry, size = int(row[0]), int(row[1]), row[2], int(row[3])
                if seen == size:  # another daemon indexed it meanwhile
                    if not counted:
                        self.stats.files_unchanged += 1
                    return
                if not counted:
                    if seen == 0 or size < seen:
                        self.stats.files_reindexed += 1
                    else:
                        self.stats.files_appended += 1
                    counted = True
                if size < seen:  # someone rewrote the rows shorter (sessiontree never does)
                    self.connection.execute("DELETE FROM sessiontree.texts WHERE sid = %s", (sid,))
                    indexed, last_entry = 0, None
                indexed, last_entry, finished = self._batch(sid, indexed, size, last_entry)
                self.connection.execute(
                    "UPDATE sessiontree.text_progress SET indexed = %s, seen = %s, last_entry = %s WHERE sid = %s",
                    (indexed, size if finished else indexed, last_entry, sid),
                )
            if finished:
                return
            if self.cancelled():
                self.stats.cancelled = True
                return

    def _batch(self, sid: int, start: int, size: int, last_entry: str | None) -> tuple[int, str | None, bool]:
        """Index the whole lines from `start` in about BATCH_BYTES; (indexed up to, last entry,
        whether every whole line before `size` is now indexed)."""
        span = BATCH_BYTES
        while True:
            stop = min(size, start + span)
            rows = self.connection.execute(
                "SELECT off, data FROM sessiontree.lines WHERE sid = %s AND off >= %s AND off < %s ORDER BY off",
                (sid, start, stop),
            ).fetchall()
            data = b"".join(bytes(piece) for _, piece in rows)
            end = data.rfind(b"\n") + 1
            if end or stop >= size:
                break
            span *= 2  # a line longer than the span: read it whole
        self.stats.bytes_read += len(data)
        entries = []
        at = 0
        while at < end:
            cut = data.index(b"\n", at)
            row = entry_row(data[at:cut], start + at)
            at = cut + 1
            if row is None:
                continue
            entry_id, parent_id, kind, role, stamp, ms, offset, _, text = (_text(value) for value in row)
            entries.append((sid, offset, entry_id, parent_id, kind, role, ms, stamp, text, tsvector(text)))
            if entry_id is not None:
                last_entry = entry_id
        if entries:
            with self.connection.cursor() as cursor, cursor.copy(_COPY) as copy:
                for entry in entries:
                    copy.write_row(entry)
        self.stats.entries_added += len(entries)
        return start + end, last_entry, start + len(data) >= size
