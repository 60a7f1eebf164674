"""How long the daemon waits on the store, at most: every wait is bounded.

A wait on the store holds up its session's later calls (lanes.py), so every wait must end.
The bounds are libpq's and the server's own settings, set where users set them already: the
connection string (`connect_timeout=…`, `options=-c lock_timeout=…`), `PGCONNECT_TIMEOUT` and
`PGOPTIONS`, or the role's, the database's or the server's defaults. A bound none of them sets
(PostgreSQL's default, 0, waits forever) gets the daemon's:

- `connect_timeout` 10 s: reaching the server;
- `lock_timeout` 5 s: a session's row locked by another connection (an append, a push);
- `statement_timeout` 30 s: any one statement;
- `idle_in_transaction_session_timeout` 60 s: a daemon that stops while it holds a session's row
  lock (stopped, hung) does not keep the others out of the session for longer.

A server that stops answering altogether (stopped, or a network that drops packets) enforces no
statement_timeout, so the daemon waits for an answer at most statement_timeout plus ANSWER_GRACE,
then gives the connection up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Final

import psycopg
from psycopg.abc import RV, PQGen

CONNECT_TIMEOUT: Final = 10  # seconds
DEFAULTS: Final = {
    "lock_timeout": "5s",
    "statement_timeout": "30s",
    "idle_in_transaction_session_timeout": "60s",
}
ANSWER_GRACE: Final = 10.0  # seconds past statement_timeout before a silent server is given up

# Each setting the daemon's default where nothing set it (0), and statement_timeout in seconds.
_SETTLE: Final = "SELECT " + ", ".join(
    f"set_config('{name}', CASE current_setting('{name}') WHEN '0' THEN %({name})s ELSE current_setting('{name}') END,"
    " false)"
    for name in DEFAULTS
)


class AnswerTimeout(psycopg.OperationalError):
    """The server sent nothing for longer than the bound: the connection is given up."""


class BoundedConnection(psycopg.Connection[tuple[Any, ...]]):
    """A connection whose every wait for the server ends after `answer_seconds` (None: unbounded,
    only while it is being set up)."""

    answer_seconds: float | None = None

    def wait(self, gen: PQGen[RV], interval: float = 0.1, timeout: float | None = None) -> RV:
        bound = timeout if timeout is not None else self.answer_seconds
        started = time.monotonic()
        try:
            return super().wait(gen, interval, bound)
        except psycopg.OperationalError as exc:
            if bound is None or timeout is not None or type(exc).__name__ != "_WaitTimeout":
                raise
            self.pgconn.finish()  # half a message was exchanged: the connection cannot be used again
            raise AnswerTimeout(f"the server sent no answer for {time.monotonic() - started:.0f} s") from None


def connect_arguments(settings: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """connect_timeout's default when neither the string nor the environment gives one (an
    argument overrides the string, so it is passed only then)."""
    if "connect_timeout" in settings or environ.get("PGCONNECT_TIMEOUT"):
        return {}
    return {"connect_timeout": CONNECT_TIMEOUT}


def settle(connection: BoundedConnection) -> None:
    """Give the unset bounds the daemon's defaults, and bound every later answer by the
    statement_timeout in force (a first answer of its own is bounded by connect_timeout's worth)."""
    connection.answer_seconds = CONNECT_TIMEOUT + ANSWER_GRACE
    row = connection.execute(_SETTLE, DEFAULTS).fetchone()
    statement = dict(zip(DEFAULTS, row or (), strict=False)).get("statement_timeout", DEFAULTS["statement_timeout"])
    seconds = connection.execute("SELECT extract(epoch FROM %s::interval)", (statement,)).fetchone()
    connection.answer_seconds = (float(seconds[0]) if seconds and seconds[0] else 0.0) + ANSWER_GRACE
