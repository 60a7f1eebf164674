"""A request that waits on the store holds up no other session: while session A's append waits for
a row another connection holds, session B is served, A's later requests keep their order, and
`$/cancelRequest` answers A's append -32800 at once and rolls its transaction back. Real daemons
over stdio on a throwaway server. The lock is held far longer than any answer may take (the lock
bound is set to minutes), so each check is an order of answers, never a time.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
from test_postgres_timeouts import BOUND_SECONDS, answer, create, row_locked, started, with_options

from support.messages import user_entry

REQUEST_CANCELLED = -32800


def next_answer(daemon: Any) -> dict[str, Any]:
    while "id" not in (got := daemon.next(BOUND_SECONDS)) or "method" in got:
        pass
    return got


def append_request(msg_id: str, session_id: str) -> dict[str, Any]:
    entry = user_entry(msg_id)
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "session/append",
        "params": {"sessionId": session_id, "entry": entry},
    }


def waiting_on_a_lock(dsn: str) -> int:
    """The daemon's connections waiting for a lock (the append behind the held row)."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sessiontree'"
            " AND datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return int(row[0]) if row else 0


def until(condition: Any, seconds: float = BOUND_SECONDS) -> None:
    """Wait for what another process does (the server's view of the daemon), bounded generously."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def test_a_wait_on_one_session_holds_up_no_other_and_a_cancel_answers_it_at_once(
    start_daemon: Any, sessions_dir: Path, pg_dsn: str
) -> None:
    daemon = started(start_daemon, sessions_dir, with_options(pg_dsn, "-c lock_timeout=10min"))
    held, held_path = create(daemon, "/work/held")
    free, _ = create(daemon, "/work/free")
    with row_locked(pg_dsn, Path(held_path), sessions_dir):
        daemon.send_message(append_request("A behind the lock", held))
        until(lambda: waiting_on_a_lock(pg_dsn) == 1)  # A's append is in the server, waiting
        daemon.send_message(
            {"jsonrpc": "2.0", "id": "A context", "method": "session/context", "params": {"sessionId": held}}
        )
        # Before: nothing is answered until A's wait ends (here, with the lock's release).
        context = answer(
            daemon, {"jsonrpc": "2.0", "id": "B context", "method": "session/context", "params": {"sessionId": free}}
        )
        assert "result" in context, context
        appended = answer(daemon, append_request("B while A waits", free))
        assert "result" in appended, appended
        daemon.send_message(append_request("A queued", held))  # behind A's first append: not begun
        daemon.send_message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "A queued"}})
        queued = next_answer(daemon)
        assert queued["id"] == "A queued" and queued["error"]["code"] == REQUEST_CANCELLED, queued
        daemon.send_message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "A behind the lock"}})
        cancelled = next_answer(daemon)  # before the lock is released
        assert cancelled["id"] == "A behind the lock", cancelled
        assert cancelled["error"]["code"] == REQUEST_CANCELLED, cancelled
        after = next_answer(daemon)  # A's later request, answered after A's append: in order
        assert after["id"] == "A context" and after["result"]["messages"] == [], after
        until(lambda: waiting_on_a_lock(pg_dsn) == 0)  # the append's transaction is gone
    assert "result" in answer(daemon, append_request("A after the lock", held))
    entries = answer(
        daemon,
        {"jsonrpc": "2.0", "id": "entries", "method": "session/entries", "params": {"sessionId": held, "since": None}},
    )
    texts = [entry["message"]["content"] for entry in entries["result"]["entries"] if entry.get("type") == "message"]
    assert texts == ["A after the lock"]  # the cancelled appends left nothing behind
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        stored = connection.execute(
            "SELECT count(*) FROM sessiontree.lines JOIN sessiontree.sessions USING (sid) WHERE name = %s",
            (Path(held_path).relative_to(sessions_dir).as_posix(),),
        ).fetchone()
    assert stored == (2,)  # the header and the one append


def assistant_entry(text: str) -> dict[str, Any]:
    usage = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120}
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "messages",
        "provider": "p",
        "model": "m",
    }
    return {"type": "message", "message": message | {"usage": usage, "stopReason": "stop", "timestamp": 2}}


def test_a_compaction_round_trip_on_another_session_completes_while_one_waits(
    start_daemon: Any, sessions_dir: Path, pg_dsn: str
) -> None:
    """`session/compact` prepares and commits in its session's lane: a wait elsewhere holds up neither."""
    daemon = start_daemon("--sessions-dir", str(sessions_dir), "--store", with_options(pg_dsn, "-c lock_timeout=10min"))
    capabilities = {"experimental": {"sessiontree": {"summarize": True}}}
    daemon.send_message(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"processId": None, "capabilities": capabilities}}
    )
    assert "result" in daemon.next(60.0)
    daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    held, held_path = create(daemon, "/work/held")
    free, _ = create(daemon, "/work/free")
    for turn in range(3):
        for number, entry in enumerate(
            (user_entry(f"question {turn} " + "why " * 30), assistant_entry("because " * 30))
        ):
            params = {"sessionId": free, "entry": entry}
            assert "result" in answer(
                daemon, {"jsonrpc": "2.0", "id": f"turn {turn}.{number}", "method": "session/append", "params": params}
            )
    with row_locked(pg_dsn, Path(held_path), sessions_dir):
        daemon.send_message(append_request("A behind the lock", held))
        until(lambda: waiting_on_a_lock(pg_dsn) == 1)
        settings = {"reserveTokens": 1000, "keepRecentTokens": 90}
        daemon.send_message(
            {
                "jsonrpc": "2.0",
                "id": "compact",
                "method": "session/compact",
                "params": {"sessionId": free, "settings": settings},
            }
        )
        asked = daemon.next(BOUND_SECONDS)  # before: nothing until A's wait ends
        assert asked.get("method") == "sessiontree/summarize", asked
        daemon.send_message({"jsonrpc": "2.0", "id": asked["id"], "result": {"summary": "what happened"}})
        compacted = next_answer(daemon)
        assert compacted["id"] == "compact" and "result" in compacted, compacted
        daemon.send_message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "A behind the lock"}})
        assert next_answer(daemon)["error"]["code"] == REQUEST_CANCELLED
    context = answer(
        daemon, {"jsonrpc": "2.0", "id": "context", "method": "session/context", "params": {"sessionId": free}}
    )
    assert context["result"]["messages"][0]["role"] == "compactionSummary", context
