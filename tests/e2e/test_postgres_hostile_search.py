"""session/search on a PostgreSQL store under input meant to hurt it, over stdio: an entry that is
one word 30,000 times, and a query of 20,000 words. Each is answered as the file store answers it,
and the daemon serves on. The bound on an answer is generous (minutes before the work per entry
was bounded; well under a second now): only work that grows without bound fails it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.daemon import RawDaemon, daemon_pool, request, sessions_root
from support.messages import BASE_MS

PROJECT = "/home/user/project"
STARTUP_SECONDS = 60.0
BOUND_SECONDS = 120.0


def started(start: Any, root: Path, *store: str) -> RawDaemon:
    daemon: RawDaemon = start("--sessions-dir", str(root), *store)
    daemon.send_message(request(0, "initialize", {"processId": None, "capabilities": {}}))
    assert "result" in daemon.next(STARTUP_SECONDS)
    daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return daemon


def answer(daemon: RawDaemon, message: dict[str, Any]) -> dict[str, Any]:
    daemon.send_message(message)
    while "id" not in (got := daemon.next(BOUND_SECONDS)) or "method" in got:
        pass
    assert got["id"] == message["id"], got
    return got


def with_entries(daemon: RawDaemon, *texts: str) -> str:
    session_id: str = answer(daemon, request("create", "session/create", {"cwd": PROJECT}))["result"]["sessionId"]
    for number, text in enumerate(texts):
        entry = {"type": "message", "message": {"role": "user", "content": text, "timestamp": BASE_MS}}
        assert "result" in answer(daemon, request(f"a{number}", "session/append", {"sessionId": session_id, "entry": entry}))
    return session_id


def test_a_word_repeated_30000_times_in_one_entry_is_answered(tmp_path: Path, pg_dsn: str) -> None:
    with daemon_pool() as start:
        daemon = started(start, sessions_root(tmp_path), "--store", pg_dsn)
        session_id = with_entries(daemon, "needle " * 30_000 + "end", "a needle here")
        found = answer(daemon, request("search", "session/search", {"query": "needle"}))["result"]
        assert len(found["hits"]) == 2
        for hit in found["hits"]:
            assert [hit["snippet"][start:end] for start, end in hit["highlights"]][:1] == ["needle"]
        assert "result" in answer(daemon, request("info", "session/info", {"sessionId": session_id}))


QUERIES = {
    "and": " ".join(f"w{n}" for n in range(20_000)),  # every word must be there: no hit
    "or": " OR ".join(f"w{n}" for n in range(20_000)),  # any word: the entry with w3
    "not": "w1 " + " ".join(f"NOT x{n}" for n in range(5_000)),
}


@pytest.mark.parametrize("kind", list(QUERIES))
def test_a_query_of_thousands_of_words_is_answered_as_the_file_store_answers_it(
    kind: str, tmp_path: Path, pg_dsn: str
) -> None:
    query = QUERIES[kind]
    with daemon_pool() as start:
        answers = []
        for name, store in (("files", ()), ("store", ("--store", pg_dsn))):
            (tmp_path / name).mkdir()
            daemon = started(start, sessions_root(tmp_path / name), *store)
            with_entries(daemon, "w1 w2 w3", "nothing of the sort")
            found = answer(daemon, request("long", "session/search", {"query": query}))
            assert "result" in found, (name, found["error"]["message"][:300])
            answers.append(sorted(hit["snippet"] for hit in found["result"]["hits"]))
            again = answer(daemon, request("short", "session/search", {"query": "sort"}))  # the connection kept
            assert [hit["snippet"] for hit in again["result"]["hits"]] == ["nothing of the sort"]
        assert answers[0] == answers[1]
        assert answers[0] == ([] if kind == "and" else ["w1 w2 w3"])
