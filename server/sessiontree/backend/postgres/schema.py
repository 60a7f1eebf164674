"""The tables in PostgreSQL, versioned: each step brings the schema from one version to the next.

`sessiontree.sessions` has a row per session (its name is its path under the sessions root) with
what `session/list` shows kept up to date by every write, and its size: the length of the session
as a JSONL file. `sessiontree.lines` holds that file's bytes in pieces, each a line with its line
end, at the offset it has in the file, so a pull writes back the very bytes a push read.
"""

from __future__ import annotations

from typing import Final

from ...errors import StorageError
from .database import Connection

SCHEMA: Final = "sessiontree"
CHANNEL: Final = "sessiontree"  # NOTIFY'd with a session's sid when lines are added to it
_LOCK_KEY: Final = 0x5E55_1047  # an advisory lock: one migration at a time per database

STEPS: Final[tuple[tuple[str, ...], ...]] = (
    (  # 1: sessions and their lines
        """CREATE TABLE sessiontree.sessions (
            sid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL UNIQUE,
            directory text NOT NULL,
            header bytea NOT NULL,
            size bigint NOT NULL,
            updated timestamptz NOT NULL DEFAULT now(),
            message_count integer NOT NULL DEFAULT 0,
            first_message text NOT NULL DEFAULT '',
            title text,
            last_activity double precision
        )""",
        "CREATE INDEX sessions_directory ON sessiontree.sessions (directory)",
        """CREATE TABLE sessiontree.lines (
            sid bigint NOT NULL REFERENCES sessiontree.sessions (sid) ON DELETE CASCADE,
            off bigint NOT NULL,
            entry_id text,
            data bytea NOT NULL,
            PRIMARY KEY (sid, off)
        )""",
        "CREATE INDEX lines_entry_id ON sessiontree.lines (sid, entry_id) WHERE entry_id IS NOT NULL",
    ),
    (  # 2: the search index, derived from the lines by a refresh before each search (search.py)
        # How far each session is indexed. Rows here are made apart from the indexing, so that
        # indexing, which holds this row, never holds a lock on the session's row: appends lock that.
        """CREATE TABLE sessiontree.text_progress (
            sid bigint PRIMARY KEY REFERENCES sessiontree.sessions (sid) ON DELETE CASCADE,
            indexed bigint NOT NULL DEFAULT 0,
            seen bigint NOT NULL DEFAULT 0,
            session_id text,
            cwd text,
            last_entry text
        )""",
        # An entry per row, text or not (the walk from the last entry needs every parent). `tsv`
        # is written by the indexer, with words cut as the file store's FTS5 cuts them (fts.py):
        # no text search configuration's parser is used. `seq` is the order of indexing.
        """CREATE TABLE sessiontree.texts (
            sid bigint NOT NULL REFERENCES sessiontree.text_progress (sid) ON DELETE CASCADE,
            off bigint NOT NULL,
            seq bigint GENERATED ALWAYS AS IDENTITY,
            entry_id text,
            parent_id text,
            type text,
            role text,
            ms bigint,
            timestamp text,
            body text NOT NULL,
            tsv tsvector NOT NULL,
            PRIMARY KEY (sid, off)
        )""",
        "CREATE UNIQUE INDEX texts_seq ON sessiontree.texts (seq)",
        # Without the pending list: rows a refresh adds are searched through the index at once, not
        # by a scan of the list (which made the planner read every row instead).
        "CREATE INDEX texts_tsv ON sessiontree.texts USING gin (tsv) WITH (fastupdate = off)",
        "CREATE INDEX texts_entry_id ON sessiontree.texts (sid, entry_id) WHERE entry_id IS NOT NULL",
        "CREATE INDEX text_progress_cwd ON sessiontree.text_progress (cwd)",
        "CREATE INDEX text_progress_session_id ON sessiontree.text_progress (session_id)",
    ),
)
VERSION: Final = len(STEPS)


def installed_version(connection: Connection) -> int:
    """The schema's version in this database; 0 when there is none yet."""
    row = connection.execute("SELECT to_regclass('sessiontree.schema_version') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return 0
    found = connection.execute("SELECT max(version) FROM sessiontree.schema_version").fetchone()
    return int(found[0]) if found is not None and found[0] is not None else 0


def migrate(connection: Connection) -> tuple[int, int]:
    """Bring the schema to VERSION, in one transaction under an advisory lock (so daemons starting
    together migrate once). Returns (version found, version now)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        found = installed_version(connection)
        if found > VERSION:
            raise StorageError(
                f"the session store's schema is version {found}, newer than this sessiontree knows ({VERSION});"
                " upgrade sessiontree",
                schemaVersion=found,
            )
        if found == 0:
            connection.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
            connection.execute("CREATE TABLE sessiontree.schema_version (version integer NOT NULL)")
        for version in range(found + 1, VERSION + 1):
            for statement in STEPS[version - 1]:
                connection.execute(statement)
            connection.execute("INSERT INTO sessiontree.schema_version (version) VALUES (%s)", (version,))
    return found, VERSION
