"""Every wait on the store is bounded: a session's row held by another connection, a statement
that runs long, and a server that stops answering are each answered with StoreUnavailable
(-32023, `data.timeout` saying which bound), and the daemon serves on. Real daemons over stdio on
a throwaway server; bounds are waited for generously (they are answers, not start-up), never timed.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from support.daemon import RawDaemon, request
from support.messages import user_entry

STORE_UNAVAILABLE = -32023
STARTUP_SECONDS = 60.0
BOUND_SECONDS = 90.0  # far past any bound below: only a wait that never ends fails


def with_options(dsn: str, options: str) -> str:
    return f"{dsn}&options={quote(options, safe='')}"


def started(start_daemon: Any, root: Path, dsn: str) -> RawDaemon:
    daemon: RawDaemon = start_daemon("--sessions-dir", str(root), "--store", dsn)
    daemon.send_message(request(0, "initialize", {"processId": None, "capabilities": {}}))
    assert "result" in daemon.next(STARTUP_SECONDS)
    daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return daemon


def answer(daemon: RawDaemon, message: dict[str, Any], seconds: float = BOUND_SECONDS) -> dict[str, Any]:
    daemon.send_message(message)
    while "id" not in (got := daemon.next(seconds)) or "method" in got:
        pass
    assert got["id"] == message["id"], got
    return got


def create(daemon: RawDaemon, cwd: str) -> tuple[str, str]:
    result = answer(daemon, request(f"create {cwd}", "session/create", {"cwd": cwd}))["result"]
    return result["sessionId"], result["path"]


def append(daemon: RawDaemon, msg_id: str, session_id: str) -> dict[str, Any]:
    return answer(daemon, request(msg_id, "session/append", {"sessionId": session_id, "entry": user_entry(msg_id)}))


@contextlib.contextmanager
def row_locked(dsn: str, path: Path, root: Path) -> Iterator[None]:
    """Another connection holds the session's row, as an append of another daemon would, for good."""
    with psycopg.connect(dsn) as holder:
        holder.execute(
            "SELECT 1 FROM sessiontree.sessions WHERE name = %s FOR UPDATE", (path.relative_to(root).as_posix(),)
        )
        yield
        holder.rollback()


def test_a_row_locked_elsewhere_is_answered_after_lock_timeout_and_other_sessions_go_on(
    start_daemon: Any, sessions_dir: Path, pg_dsn: str
) -> None:
    daemon = started(start_daemon, sessions_dir, pg_dsn)  # no bound set anywhere: the daemon's defaults
    held, held_path = create(daemon, "/work/held")
    free, _ = create(daemon, "/work/free")
    with row_locked(pg_dsn, Path(held_path), sessions_dir):
        refused = append(daemon, "behind the lock", held)
        assert refused["error"]["code"] == STORE_UNAVAILABLE, refused
        assert refused["error"]["data"]["timeout"] == "lock"
        assert "lock_timeout" in refused["error"]["message"]
        assert "result" in append(daemon, "another session", free)
    assert "result" in append(daemon, "after the lock", held)
    entries = answer(daemon, request("entries", "session/entries", {"sessionId": held, "since": None}))["result"]["entries"]
    texts = [entry["message"]["content"] for entry in entries if entry.get("type") == "message"]
    assert texts == ["after the lock"]  # the refused append left nothing behind


def test_a_bound_set_in_the_connection_string_is_kept(start_daemon: Any, sessions_dir: Path, pg_dsn: str) -> None:
    dsn = with_options(pg_dsn, "-c lock_timeout=250ms -c statement_timeout=3s")
    daemon = started(start_daemon, sessions_dir, dsn)
    held, held_path = create(daemon, "/work/held")
    with row_locked(pg_dsn, Path(held_path), sessions_dir):
        refused = append(daemon, "behind the lock", held)
    assert refused["error"]["data"]["timeout"] == "lock", refused
    with psycopg.connect(dsn) as probe:  # the same string, read as the daemon reads it
        assert probe.execute("SHOW lock_timeout").fetchone() == ("250ms",)


def backends(dsn: str) -> list[int]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'sessiontree' AND datname = current_database()"
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def test_a_server_that_stops_answering_is_given_up_and_the_daemon_connects_again(
    start_daemon: Any, sessions_dir: Path, pg_dsn: str
) -> None:
    if os.geteuid() != 0 and not backends(pg_dsn):
        pytest.skip("the server's processes cannot be stopped by this user")
    daemon = started(start_daemon, sessions_dir, with_options(pg_dsn, "-c statement_timeout=1s"))
    session_id, _ = create(daemon, "/work/project")
    stopped = backends(pg_dsn)
    assert stopped
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        refused = append(daemon, "to a stopped server", session_id)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    assert refused["error"]["code"] == STORE_UNAVAILABLE, refused
    assert refused["error"]["data"]["timeout"] == "answer"
    assert "result" in append(daemon, "to the server again", session_id)
