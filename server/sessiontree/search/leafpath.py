"""Which entries lie on the path from a file's last entry (pi's leaf when it loads the file) to
its root, kept in the index as `entries.on_path` so a hit says so without a walk per search.

The flag is kept per entry id (every row of an id alike) and follows pi's lookups: the later
line of a duplicated id wins. It is moved as rows arrive: from the new last entry, walk up to
the first id already on the path (the junction); clear the old path below the junction, mark
the new part. Appending to the leaf walks one step; a branch, as far as it forked. A batch that
repeats an id already in the file may have moved a parent anywhere: the path is walked afresh.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Final

_MAX_VARIABLES: Final = 30_000  # below SQLite's 32,766 bound parameters per statement
_LATEST: Final = "FROM entries WHERE file_id = :file AND entry_id = walk.id ORDER BY rowid DESC LIMIT 1"

# From :leaf up through parents, stopping after the first id already marked (or missing).
_NEW_PART: Final = f"""
WITH RECURSIVE walk(id) AS (
    SELECT :leaf
    UNION
    SELECT (SELECT parent_id {_LATEST}) FROM walk
    WHERE walk.id IS NOT NULL AND NOT coalesce((SELECT on_path {_LATEST}), 1)
)
SELECT id, (SELECT on_path {_LATEST}) FROM walk WHERE id IS NOT NULL
"""

# Clear the old path from :leaf up to, not including, :stop.
_CLEAR_TO: Final = f"""
WITH RECURSIVE walk(id) AS (
    SELECT :leaf
    UNION
    SELECT (SELECT parent_id {_LATEST}) FROM walk WHERE walk.id IS NOT NULL AND walk.id != :stop
)
UPDATE entries SET on_path = 0
WHERE file_id = :file AND entry_id IN (SELECT id FROM walk WHERE id IS NOT NULL AND id != :stop)
"""

# The whole path from the file's last entry, from the rows alone (no flag read).
PATH_FROM_LAST: Final = f"""
WITH RECURSIVE walk(id) AS (
    SELECT last_entry FROM files WHERE file_id = :file
    UNION
    SELECT (SELECT parent_id {_LATEST}) FROM walk WHERE walk.id IS NOT NULL
)
SELECT id FROM walk WHERE EXISTS (SELECT 1 {_LATEST})  -- a parent id not in the file ends the path
"""


def follow_leaf(
    db: sqlite3.Connection,
    file_id: int,
    old_leaf: str | None,
    new_leaf: str | None,
    first_new_rowid: int,
    new_ids: Sequence[str],
) -> None:
    """Move the file's marks from the path of `old_leaf` to that of `new_leaf`, after the rows
    from `first_new_rowid` on (holding `new_ids`) were added."""
    if _repeats_an_id(db, file_id, first_new_rowid, new_ids):
        _clear_all(db, file_id)
        old_leaf = None
    elif new_leaf == old_leaf:
        return
    if new_leaf is None:
        _clear_all(db, file_id)
        return
    walked = db.execute(_NEW_PART, {"file": file_id, "leaf": new_leaf}).fetchall()
    junction = next((id_ for id_, marked in walked if marked), None)
    if junction is None:
        _clear_all(db, file_id)
    elif old_leaf is not None:
        db.execute(_CLEAR_TO, {"file": file_id, "leaf": old_leaf, "stop": junction})
    _mark(db, file_id, [id_ for id_, marked in walked if marked == 0])


def _repeats_an_id(db: sqlite3.Connection, file_id: int, first_new_rowid: int, new_ids: Sequence[str]) -> bool:
    for start in range(0, len(new_ids), _MAX_VARIABLES):
        chunk = new_ids[start : start + _MAX_VARIABLES]
        found = db.execute(
            f"SELECT 1 FROM entries WHERE file_id = ? AND rowid < ? AND entry_id IN ({', '.join('?' * len(chunk))}) LIMIT 1",
            (file_id, first_new_rowid, *chunk),
        ).fetchone()
        if found:
            return True
    return False


def _clear_all(db: sqlite3.Connection, file_id: int) -> None:
    db.execute("UPDATE entries SET on_path = 0 WHERE file_id = ? AND on_path = 1", (file_id,))


def _mark(db: sqlite3.Connection, file_id: int, ids: list[str]) -> None:
    for start in range(0, len(ids), _MAX_VARIABLES):
        chunk = ids[start : start + _MAX_VARIABLES]
        db.execute(
            f"UPDATE entries SET on_path = 1 WHERE file_id = ? AND entry_id IN ({', '.join('?' * len(chunk))})",
            (file_id, *chunk),
        )
