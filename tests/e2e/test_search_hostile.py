"""session/search against hostile input, over stdio: queries that try to leave the filters,
params of the wrong type, a shutdown or end of input while the index is being refreshed, a
damaged index, and several daemons making one index at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Calls, RawDaemon, request
from support.messages import assistant, entry, line, user
from support.sessions import write_session

PROJECT = "/home/user/project"
OTHER = "/home/user/other"


@pytest.fixture
def searching(start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path) -> Calls:
    return Calls(_started(start_daemon, sessions_dir, tmp_path / "index"))


STARTUP_TIMEOUT = 60.0  # a daemon starting on a loaded machine: bounded apart from the answers


def _started(start_daemon: Callable[..., RawDaemon], sessions_dir: Path, index_dir: Path) -> RawDaemon:
    """A daemon initialized with `index_dir`, its start-up waited for on its own bound."""
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    params = {"processId": None, "capabilities": {}, "initializationOptions": {"indexDir": str(index_dir)}}
    daemon.send_message(request(0, "initialize", params))
    assert "result" in daemon.next(timeout=STARTUP_TIMEOUT)
    daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return daemon


def _two_projects(sessions_dir: Path) -> None:
    """Every filter has something on each side: two cwds and sessions, three roles, two types, two times."""
    write_session(
        sessions_dir,
        PROJECT,
        "inside",
        user("i1", None, "needle here", second=10),
        assistant("i2", "i1", "needle here", second=20),
        entry("branch_summary", "i3", "i2", 30, fromId="i1", summary="needle here"),
        session_id="sid-inside",
    )
    write_session(
        sessions_dir,
        OTHER,
        "outside",
        user("o1", None, "needle here", second=1000),
        assistant("o2", "o1", "needle here", second=1010),
        entry("compaction", "o3", "o2", 1020, summary="needle here", firstKeptEntryId="o1", tokensBefore=1),
        session_id="sid-outside",
    )


# Each filter, and what every hit it lets through must be.
FILTERS: list[tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]] = [
    ({"cwd": PROJECT}, lambda hit: hit["cwd"] == PROJECT),
    ({"session": "sid-inside"}, lambda hit: hit["sessionId"] == "sid-inside"),
    ({"roles": ["assistant"]}, lambda hit: hit["role"] == "assistant"),
    ({"types": ["branch_summary"]}, lambda hit: hit["type"] == "branch_summary"),
    ({"since": "2025-01-01T00:16:00.000Z"}, lambda hit: hit["timestamp"] >= "2025-01-01T00:16:00.000Z"),
    ({"until": "2025-01-01T00:16:00.000Z"}, lambda hit: hit["timestamp"] < "2025-01-01T00:16:00.000Z"),
]

# Every form of query the syntax has, and forms that try to close the group they are put in.
QUERIES = [
    "needle",
    "needle here",
    '"needle here"',
    "needl*",
    "needle OR nothing",
    "needle NOT nothing",
    "NEAR(needle here, 2)",
    "text : needle",
    "{text meta} : needle",
    "^needle",
    "( needle )",
    "needle ) OR ( needle",
    "needle ) OR needle OR ( needle",
    '"needle" ) OR ( "needle"',
    "needl* ) OR ( needl*",
    "NEAR(needle here) ) OR ( needle",
    "{text meta} : needle ) OR ( needle",
    "needle ) AND ( needle ) OR ( needle",
    "needle )\0 ) OR ( needle",
    "needle )\0",
    '"needle )" OR ( needle',
    "needle OR ( needle ) ) OR ( ( needle",
]


@pytest.mark.parametrize("syntax", ["fts", "plain"])
def test_no_query_leaves_any_filter(searching: Calls, sessions_dir: Path, syntax: str) -> None:
    _two_projects(sessions_dir)
    for filters, allowed in FILTERS:
        for query in QUERIES:
            response = searching.answer("session/search", {"query": query, "syntax": syntax, "limit": 500, **filters})
            if "error" in response:
                assert syntax == "fts" and response["error"]["code"] == -32602, (query, filters, response)
                continue
            hits = response["result"]["hits"]
            escaped = [hit["entryId"] for hit in hits if not allowed(hit)]
            assert escaped == [], (query, syntax, filters)
            if ")" not in query and syntax == "fts" and "\0" not in query:
                assert hits, (query, filters)  # a plain query of the syntax finds what the filter lets through


# --------------------------------------------------------------------------- ending during a refresh


def _big_sessions(sessions_dir: Path, count: int = 12) -> None:
    """Enough to keep a first refresh busy for a while, in long batches of rows (4 MiB each)."""
    for number in range(count):
        entries, parent = [], None
        for n in range(3000):
            entries.append(user(f"e{n:07d}", parent, f"needle {number} {n} " + "word " * 200, second=n))
            parent = f"e{n:07d}"
        write_session(sessions_dir, PROJECT, f"s{number:04d}", *entries)


@pytest.mark.parametrize("ending", ["shutdown", "stdin"])
def test_ending_while_a_search_refreshes_the_index_is_clean(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path, ending: str
) -> None:
    _big_sessions(sessions_dir)
    for attempt in range(8):
        daemon = _started(start_daemon, sessions_dir, tmp_path / f"index-{attempt}")  # a fresh index: a long refresh
        params = {"query": "needle", "workDoneToken": "refresh"}
        daemon.send_message({"jsonrpc": "2.0", "id": "search", "method": "session/search", "params": params})
        while daemon.next(timeout=30).get("params", {}).get("value", {}).get("kind") != "report":
            pass  # the first file is indexed: the refresh is under way
        if ending == "shutdown":
            daemon.send_message({"jsonrpc": "2.0", "id": "shutdown", "method": "shutdown"})
            answers = {}
            while "shutdown" not in answers:
                message = daemon.next(timeout=30)
                if "id" in message and "method" not in message:
                    answers[message["id"]] = message
            assert answers["shutdown"].get("result", "missing") is None, answers
            daemon.send_message({"jsonrpc": "2.0", "method": "exit"})
        else:
            daemon.close_stdin()
        code = daemon.wait(timeout=60)
        assert code == (0 if ending == "shutdown" else 1), (attempt, code, daemon.stderr)
        assert "Traceback" not in daemon.stderr, daemon.stderr


# --------------------------------------------------------------------------- daemons making one index at once


def test_daemons_making_one_fresh_index_at_once_all_search(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path
) -> None:
    _two_projects(sessions_dir)
    for attempt in range(3):
        shared = tmp_path / f"index-{attempt}"  # fresh each time: every daemon finds no database
        daemons = [_started(start_daemon, sessions_dir, shared) for _ in range(4)]
        for daemon in daemons:  # as close together as the pipes allow
            daemon.send_message({"jsonrpc": "2.0", "id": "s", "method": "session/search", "params": {"query": "needle"}})
        for daemon in daemons:
            answer = daemon.next(timeout=60)
            assert "result" in answer, (attempt, answer)
            assert len(answer["result"]["hits"]) == 6
        for daemon in daemons:
            daemon.kill()


# --------------------------------------------------------------------------- params


BAD_PARAMS: list[tuple[dict[str, Any], str]] = [
    ({"query": 3}, "query"),
    ({"query": None}, "query"),
    ({}, "query"),
    ({"query": "needle", "syntax": 1}, "syntax"),
    ({"query": "needle", "syntax": "regex"}, "syntax"),
    ({"query": "needle", "cwd": ["/home/user/project"]}, "cwd"),
    ({"query": "needle", "cwd": "/home/user/project\0"}, "cwd"),
    ({"query": "needle", "session": 7}, "session"),
    ({"query": "needle", "session": "sid-inside\0"}, "session"),
    ({"query": "needle", "roles": "user"}, "roles"),
    ({"query": "needle", "roles": {"user": 1}}, "roles"),
    ({"query": "needle", "roles": [1]}, "roles"),
    ({"query": "needle", "roles": ["user\0"]}, "roles"),
    ({"query": "needle", "types": "message"}, "types"),
    ({"query": "needle", "types": [None]}, "types"),
    ({"query": "needle", "since": 5}, "since"),
    ({"query": "needle", "until": "yesterday"}, "until"),
    ({"query": "needle", "limit": "20"}, "limit"),
    ({"query": "needle", "limit": True}, "limit"),
    ({"query": "needle", "limit": 2.5}, "limit"),
    ({"query": "needle", "limit": 0}, "limit"),
    ({"query": "needle", "cursor": 1}, "cursor"),
    ({"query": "needle", "cursor": "nonsense"}, "cursor"),
    ({"query": "needle", "workDoneToken": [1]}, "workDoneToken"),
]


def test_a_param_of_the_wrong_type_is_invalid_params_naming_it(searching: Calls, sessions_dir: Path) -> None:
    _two_projects(sessions_dir)
    for params, field in BAD_PARAMS:
        error = searching.error("session/search", params)
        assert error["code"] == -32602 and error["data"]["field"] == field, (params, error)


def test_null_is_the_default_for_every_optional_param(searching: Calls, sessions_dir: Path) -> None:
    _two_projects(sessions_dir)
    default = searching.result("session/search", {"query": "needle"})
    optional = ["syntax", "cwd", "session", "roles", "types", "since", "until", "limit", "cursor", "workDoneToken"]
    nulls = searching.result("session/search", {"query": "needle", **dict.fromkeys(optional)})
    assert [hit["entryId"] for hit in nulls["hits"]] == [hit["entryId"] for hit in default["hits"]]
    assert len(nulls["hits"]) == 6


# --------------------------------------------------------------------------- a damaged index


def _all_hits(calls: Calls, query: str) -> tuple[int, list[dict[str, Any]]]:
    """How many hits every page holds, and each page's `indexed`."""
    found, cursor, indexed = 0, None, []
    while True:
        result = calls.result("session/search", {"query": query, "limit": 500, "cursor": cursor})
        found += len(result["hits"])
        indexed.append(result["indexed"])
        cursor = result["cursor"]
        if cursor is None:
            return found, indexed


@pytest.mark.parametrize("damage", ["zeroed-middle", "zeroed-quarter", "zeroed-end", "cut-half", "cut-end"])
def test_a_damaged_index_is_rebuilt_never_an_empty_or_short_answer(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path, damage: str
) -> None:
    for number in range(30):
        entries = [user(f"e{n:07d}", None, f"needle {n} " + f"word{n % 50} " * 30, second=n) for n in range(300)]
        write_session(sessions_dir, PROJECT, f"s{number:02d}", *entries)
    index_dir = tmp_path / "index"
    first = _started(start_daemon, sessions_dir, index_dir)
    assert _all_hits(Calls(first), "needle")[0] == 9000
    Calls(first).result("shutdown", None)
    first.send_message({"jsonrpc": "2.0", "method": "exit"})
    assert first.wait(timeout=60) == 0
    (database,) = index_dir.glob("search-*.sqlite3")
    data = database.read_bytes()
    size = len(data)
    block = b"\0" * 65536
    damaged = {
        "zeroed-middle": data[: size // 2] + block + data[size // 2 + len(block) :],
        "zeroed-quarter": data[: size // 4] + block + data[size // 4 + len(block) :],
        "zeroed-end": data[: size - len(block)] + block,
        "cut-half": data[: size // 2],
        "cut-end": data[: size - len(block)],
    }[damage]
    database.write_bytes(damaged)
    second = Calls(_started(start_daemon, sessions_dir, index_dir))
    found, indexed = _all_hits(second, "needle")
    assert found == 9000
    assert indexed[0]["rebuilt"] is True  # said so


def test_damage_a_running_daemons_search_meets_is_rebuilt_and_said(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path
) -> None:
    paths = []
    for number in range(30):
        entries = [user(f"e{n:07d}", None, f"needle {n} " + f"word{n % 50} " * 30, second=n) for n in range(300)]
        paths.append(write_session(sessions_dir, PROJECT, f"s{number:02d}", *entries))
    index_dir = tmp_path / "index"
    daemon = _started(start_daemon, sessions_dir, index_dir)
    calls = Calls(daemon)
    assert _all_hits(calls, "needle")[0] == 9000
    (database,) = index_dir.glob("search-*.sqlite3")
    with database.open("r+b") as out:  # the disk damages pages the daemon's searches read
        out.seek(database.stat().st_size // 2 // 4096 * 4096)
        out.write(b"\0" * 65536)
    with paths[0].open("ab") as out:  # an append: the next search writes, and reads the file afresh
        out.write(line(user("late0001", None, "needle late", second=500)))
    daemon.send_message(request("after", "session/search", {"query": "needle", "limit": 500}))
    said = []
    while (message := daemon.next(timeout=60)).get("id") != "after":
        said.append(message)
    assert "result" in message, message
    assert len(message["result"]["hits"]) == 500  # the answer itself: not empty, not short
    assert _all_hits(calls, "needle")[0] == 9001
    warned = [m for m in said if m.get("method") == "window/logMessage" and "damaged" in m["params"]["message"]]
    assert warned or message["result"]["indexed"]["rebuilt"], said  # said so, whichever step met it
