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
