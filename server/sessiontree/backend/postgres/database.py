"""The daemon's connection to PostgreSQL: made when first needed, made again after it is lost,
and never shown with its password.

libpq reads what users expect: the connection string (a URI or `key=value` words), the `PG*`
environment variables and `~/.pgpass`. Each thread has a connection of its own: the daemon runs
store calls in worker threads, one session's calls at a time (lanes.py), so a call that waits on
a row lock holds up no other session's connection. A transaction is open only while a session's
row is locked for an append, inside one call. `interrupt` stops a thread's call from another
thread (a `$/cancelRequest`): the server cancels its statement, which rolls the transaction back.
"""

from __future__ import annotations

import contextlib
import select
import threading
from collections.abc import Iterator
from typing import Any

import psycopg

from ...errors import StorageError, StoreUnavailable
from .bounds import CONNECT_TIMEOUT, AnswerTimeout, BoundedConnection, connect_arguments, settle
from .dsn import redacted, scrub, secrets, settings, unreadable

Connection = psycopg.Connection[tuple[Any, ...]]


def _readable(fd: int, seconds: float) -> bool:
    """`poll`, not `select`: a daemon holding many sessions has descriptors past 1024."""
    waiting = select.poll()
    waiting.register(fd, select.POLLIN)
    return bool(waiting.poll(seconds * 1000))


def _ended_while_idle(connection: Connection) -> bool:
    """The server closed a connection that had nothing in hand (a restart, pg_terminate_backend):
    its socket is readable though nothing was asked. Checked without a round trip, so that the first
    request after a restart is served rather than failed. Inside a transaction a loss is never
    hidden: the row lock went with it."""
    if connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    pgconn = connection.pgconn
    try:
        for _ in range(3):  # the server's last message (FATAL), then the end of the stream
            if not _readable(pgconn.socket, 0):
                break
            pgconn.consume_input()
    except (OSError, psycopg.Error):
        return True
    return pgconn.status != psycopg.pq.ConnStatus.OK


_TIMEOUTS: dict[str, str] = {
    "lock": "a session's row stayed locked by another connection to the store for longer than lock_timeout",
    "statement": "the store's statement ran for longer than statement_timeout",
    "answer": "the store stopped answering",
    "connect": "the store could not be reached within connect_timeout",
}


def _timeout_of(exc: psycopg.Error) -> str | None:
    """Which bound ended the wait, if one did."""
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return "lock"
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return "statement"
    if isinstance(exc, AnswerTimeout):
        return "answer"
    if isinstance(exc, psycopg.errors.ConnectionTimeout):
        return "connect"
    return None


class Interrupted(StoreUnavailable):
    """The call was cancelled (`interrupt`): what it had in hand was rolled back."""


class Database:
    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.shown = redacted(dsn)
        self._secrets = secrets(dsn)
        self._connections: dict[int, Connection] = {}  # by thread
        self._interrupted: set[int] = set()  # threads whose call was cancelled
        self._closing = threading.Lock()  # a connection is not closed while a cancel reads it

    @property
    def _connection(self) -> Connection | None:
        return self._connections.get(threading.get_ident())

    @_connection.setter
    def _connection(self, connection: Connection | None) -> None:
        if connection is None:
            self._connections.pop(threading.get_ident(), None)
        else:
            self._connections[threading.get_ident()] = connection

    def connection(self) -> Connection:
        """The open connection, made again if there is none, or if the server ended it while it was
        idle (raises StoreUnavailable; Interrupted once the thread's call was cancelled)."""
        if threading.get_ident() in self._interrupted:
            raise Interrupted("the request was cancelled; nothing it began was kept", store=self.shown)
        if self._connection is not None and (self._connection.closed or _ended_while_idle(self._connection)):
            self.drop()
        if self._connection is None:
            with self.errors():
                self._connection = self.connect()
        return self._connection

    def connect(self) -> Connection:
        """A connection of its own, in autocommit: transactions are begun explicitly. A string
        libpq cannot parse is refused without quoting it (libpq's message would)."""
        reason = unreadable(self.dsn)
        if reason is not None:
            raise StorageError(f"the store's connection string cannot be read: {reason}", store=self.shown)
        extra = connect_arguments(settings(self.dsn) or {})
        connection = BoundedConnection.connect(self.dsn, autocommit=True, application_name="sessiontree", **extra)
        try:
            settle(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """psycopg's errors as the daemon's: a lost or refused connection is StoreUnavailable (and is
        dropped, so the next call connects again); anything else the server refused, StorageError."""
        try:
            yield
        except psycopg.Error as exc:
            if not isinstance(exc, psycopg.OperationalError) and not self._lost():
                raise StorageError(f"the session store refused: {self.scrub(exc)}", store=self.shown) from None
            self.drop()  # a timed-out statement aborted its transaction: connecting again ends it too
            timeout = _timeout_of(exc)
            why = _TIMEOUTS[timeout] if timeout else "the session store is unavailable"
            raise StoreUnavailable(
                f"{why}: {self.scrub(exc)}; the next request connects again",
                store=self.shown,
                **({"timeout": timeout} if timeout else {}),
            ) from None

    def _lost(self) -> bool:
        """Whether the server ended the connection (an idle-in-transaction timeout, a shutdown)."""
        connection = self._connection
        return connection is not None and connection.closed

    def scrub(self, exc: BaseException) -> str:
        """An error's message with any password taken out (libpq's messages should not hold one)."""
        message = str(exc).strip() or type(exc).__name__
        return " ".join(scrub(message, self._secrets).split())

    def in_transaction(self) -> bool:
        connection = self._connection
        return connection is not None and not connection.closed and (
            connection.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        )

    def end_transaction(self, commit: bool) -> None:
        """COMMIT or ROLLBACK what is open; a connection lost meanwhile rolled back by itself."""
        if not self.in_transaction():
            return
        assert self._connection is not None
        if commit:
            with self.errors():
                self._connection.execute("COMMIT")
        else:
            try:
                self._connection.execute("ROLLBACK")
            except psycopg.Error:
                self.drop()

    def drop(self) -> None:
        connection = self._connections.pop(threading.get_ident(), None)
        if connection is not None:
            with self._closing, contextlib.suppress(Exception):
                connection.close()

    # ------------------------------------------------------------------ calls from other threads

    def interrupt(self, thread: int) -> None:
        """Stop the call running in `thread`: the statement it waits on is cancelled by the server
        (which ends the call with an error, and the connection is dropped and made again), and its
        later statements are refused. The cancel request is a connection of its own, sent from a
        short-lived thread: the caller (the event loop) does not wait for it."""
        self._interrupted.add(thread)
        connection = self._connections.get(thread)
        if connection is not None and not connection.closed:
            threading.Thread(target=self._cancel, args=(connection,), name="sessiontree-cancel", daemon=True).start()

    def _cancel(self, connection: Connection) -> None:
        with self._closing, contextlib.suppress(Exception):  # the server is gone: nothing to stop
            if not connection.closed:
                connection.cancel_safe(timeout=CONNECT_TIMEOUT)

    def resume(self, thread: int) -> None:
        """Called in `thread` as its next call begins. After an interrupt its connection is made
        anew: a cancel still on its way must not reach this call's statements."""
        if thread in self._interrupted:
            self._interrupted.discard(thread)
            self.drop()

    def close(self) -> None:
        """Every thread's connection closed (the calls that used them have ended)."""
        self.end_transaction(commit=False)
        with self._closing:
            for connection in list(self._connections.values()):
                with contextlib.suppress(Exception):
                    connection.close()
            self._connections.clear()
