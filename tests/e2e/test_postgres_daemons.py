"""Several daemons on one PostgreSQL database, and the failures around them.

Real daemons over stdio (`serve --store DSN`), a real throwaway server. Daemons appending to one
session at once must leave it a single chain of whole lines, each acknowledged entry once, in the
order their transactions committed; another daemon's append wakes a subscribed daemon through
LISTEN/NOTIFY; a daemon killed mid-append or a server restarted mid-session loses nothing that was
acknowledged; and no error or log shows the connection string's password.
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from support.daemon import STARTUP_TIMEOUT, RawDaemon, request
from support.messages import user_entry
from support.postgres import Cluster, running_cluster
from support.timeouts import ANSWER_TIMEOUT, EVENT_TIMEOUT

STORE_UNAVAILABLE = -32023
LEAF_CONFLICT = -32012
PASSWORD = "secret-pw"
CWD = "/home/user/project"

Start = Callable[..., RawDaemon]


# ---------------------------------------------------------------------- helpers


def append(msg_id: Any, session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return request(msg_id, "session/append", {"sessionId": session_id, "entry": user_entry(text), **extra})


STARTUP_SECONDS = 60.0  # start-up (a connection, the schema checked) is bound apart from answers


def store_daemon(start: Start, root: Path, dsn: str, *extra: str) -> RawDaemon:
    daemon = start("--sessions-dir", str(root), "--store", dsn, *extra)
    daemon.send_message(request(0, "initialize", {"processId": None, "capabilities": {}}))
    assert "result" in daemon.next(STARTUP_SECONDS)
    daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return daemon


def create(daemon: RawDaemon, cwd: str = CWD) -> tuple[str, str]:
    """A new session: (sessionId, path)."""
    result = ok(daemon.call(request("create", "session/create", {"cwd": cwd})))
    return result["sessionId"], result["path"]


def open_session(daemon: RawDaemon, path: str) -> dict[str, Any]:
    return ok(daemon.call(request("open", "session/open", {"path": path})))


def ok(response: dict[str, Any]) -> Any:
    assert "result" in response, response
    return response["result"]


def all_entries(daemon: RawDaemon, session_id: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = ok(daemon.call(request("entries", "session/entries", {"sessionId": session_id, "since": None})))["entries"]
    return entries


def responses(daemon: RawDaemon, ids: set[Any], timeout: float = ANSWER_TIMEOUT) -> tuple[dict[Any, dict[str, Any]], list[dict[str, Any]]]:
    """The answers to `ids` (by id), and every message that came in the meantime, in order."""
    deadline = time.monotonic() + timeout
    answers: dict[Any, dict[str, Any]] = {}
    stream: list[dict[str, Any]] = []
    while len(answers) < len(ids):
        message = daemon.next(max(0.1, deadline - time.monotonic()))
        stream.append(message)
        if "method" not in message and message.get("id") in ids:
            answers[message["id"]] = message
    return answers, stream


def next_did_change(daemon: RawDaemon, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        message = daemon.next(max(0.01, deadline - time.monotonic()))
        if message.get("method") == "session/didChange":
            params: dict[str, Any] = message["params"]
            return params


def seen_in_order(stream: list[dict[str, Any]]) -> list[str]:
    """The entry ids a daemon's client learned of, in the order it learned them: its own appends
    (from their answers) and the others' (from `session/didChange`)."""
    ids: list[str] = []
    for message in stream:
        if message.get("method") == "session/didChange":
            ids.extend(entry["id"] for entry in message["params"]["entries"])
        elif "result" in message and isinstance(message["result"], dict) and "leafId" in message["result"]:
            if "appended" in message["result"]:
                ids.extend(item["id"] for item in message["result"]["appended"])
            elif "id" in message["result"]:
                ids.append(message["result"]["id"])
    return ids


def stored_lines(dsn: str) -> list[bytes]:
    """The one session's rows, in file order, checked to be the whole file: offsets without gaps
    or overlaps that add up to the recorded size, each row one whole JSON line whose indexed id
    is the line's."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        sessions = connection.execute("SELECT sid, size FROM sessiontree.sessions").fetchall()
        assert len(sessions) == 1, sessions
        sid, size = sessions[0]
        rows = connection.execute(
            "SELECT off, entry_id, data FROM sessiontree.lines WHERE sid = %s ORDER BY off", (sid,)
        ).fetchall()
    at = 0
    lines = []
    for off, entry_id, data in rows:
        data = bytes(data)
        assert off == at, f"a gap or an overlap at {off} (expected {at})"
        assert data.endswith(b"\n") and data.count(b"\n") == 1, f"not one whole line at {off}: {data[:200]!r}"
        value = orjson.loads(data)
        assert entry_id == value["id"], (entry_id, value)
        lines.append(data)
        at += len(data)
    assert at == size, f"the rows hold {at} bytes, the session row says {size}"
    return lines


def stored_entries(dsn: str) -> list[dict[str, Any]]:
    lines = stored_lines(dsn)
    assert orjson.loads(lines[0])["type"] == "session"
    return [orjson.loads(line) for line in lines[1:]]


def assert_single_chain(entries: list[dict[str, Any]]) -> None:
    """Each entry the child of the one before it in the file: no append lost the leaf another
    daemon's append had just moved."""
    ids = [entry["id"] for entry in entries]
    assert len(set(ids)) == len(ids), "an id appears twice"
    parents = [entry["parentId"] for entry in entries]
    assert parents == [None, *ids[:-1]], next(
        f"entry {i} ({ids[i]}) has parent {parents[i]}, but {ids[i - 1] if i else None} was the last when it committed"
        for i in range(len(ids))
        if parents[i] != (ids[i - 1] if i else None)
    )


def check_fresh_daemon(start: Start, root: Path, dsn: str, path: str, expected: list[str]) -> None:
    """A daemon that was not there reads the session as the store has it: every entry, one chain."""
    fresh = store_daemon(start, root, dsn)
    opened = open_session(fresh, path)
    assert opened["warnings"] == []
    assert opened["entryCount"] == len(expected)
    assert opened["leafId"] == (expected[-1] if expected else None)
    assert [entry["id"] for entry in all_entries(fresh, opened["sessionId"])] == expected
    tree = ok(fresh.call(request("tree", "session/tree", {"sessionId": opened["sessionId"]})))
    assert [node["id"] for node in tree["nodes"]] == expected
    assert [node["depth"] for node in tree["nodes"]] == list(range(len(expected)))
    assert tree["leafId"] == (expected[-1] if expected else None)


def listen_connections(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sessiontree' AND query LIKE 'LISTEN%'"
        ).fetchone()
    assert row is not None
    return int(row[0])


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.05)  # a poll interval, not the wait itself


# ---------------------------------------------------------------------- 1. concurrent appends


@pytest.mark.parametrize("daemons", [2, 4])
def test_daemons_appending_to_one_session_leave_one_chain(
    start_daemon: Start, sessions_dir: Path, pg_dsn: str, daemons: int
) -> None:
    rounds, burst = 10, 19  # per daemon: 10 pipelined bursts of 19, each followed by one with expectedLeafId
    started = [store_daemon(start_daemon, sessions_dir, pg_dsn) for _ in range(daemons)]
    session_id, path = create(started[0])
    for daemon in started[1:]:
        assert open_session(daemon, path)["sessionId"] == session_id

    streams: list[list[dict[str, Any]]] = [[] for _ in started]
    expected_leaf: list[list[tuple[str, dict[str, Any]]]] = [[] for _ in started]  # (expected, answer)
    failures: list[BaseException] = []
    gate = threading.Barrier(daemons)

    def work(number: int) -> None:
        daemon, stream = started[number], streams[number]
        try:
            gate.wait()
            for round_ in range(rounds):
                ids = {f"d{number}-r{round_}-{i}" for i in range(burst)}
                for i in range(burst):
                    daemon.send_message(append(f"d{number}-r{round_}-{i}", session_id, f"daemon {number} #{round_}.{i}"))
                answers, got = responses(daemon, ids)
                stream.extend(got)
                for answer in answers.values():
                    ok(answer)
                leaf = answers[f"d{number}-r{round_}-{burst - 1}"]["result"]["leafId"]
                check = f"d{number}-r{round_}-expect"
                daemon.send_message(append(check, session_id, f"daemon {number} #{round_} after {leaf}", expectedLeafId=leaf))
                answers, got = responses(daemon, {check})
                stream.extend(got)
                expected_leaf[number].append((leaf, answers[check]))
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(number,)) for number in range(daemons)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=50)
    assert not failures, failures[0]
    assert not any(thread.is_alive() for thread in threads)

    entries = stored_entries(pg_dsn)
    ids = [entry["id"] for entry in entries]
    assert_single_chain(entries)

    # Every acknowledged entry is in the store exactly once; nothing unacknowledged is.
    acknowledged: list[str] = []
    for stream in streams:
        for message in stream:
            if "method" not in message and "result" in message:
                acknowledged.append(message["result"]["id"])
    assert sorted(acknowledged) == sorted(ids)
    assert len(ids) >= daemons * rounds * burst

    # expectedLeafId held where it was still the leaf when the append committed, and was refused
    # (with the leaf as it then was) where another daemon had appended in between.
    conflicts = 0
    for checks in expected_leaf:
        for leaf, answer in checks:
            if "result" in answer:
                assert answer["result"]["parentId"] == leaf, answer
            else:
                conflicts += 1
                assert answer["error"]["code"] == LEAF_CONFLICT, answer
                assert answer["error"]["data"]["expectedLeafId"] == leaf
                assert answer["error"]["data"]["currentLeafId"] in ids
                assert ids.index(answer["error"]["data"]["currentLeafId"]) > ids.index(leaf)
    writers = [entry["message"]["content"].split()[1] for entry in entries]
    turns = sum(1 for before, after in itertools.pairwise(writers) if before != after)
    print(f"{daemons} daemons: {len(ids)} entries, the writer changing {turns} times in the file,"
          f" {conflicts} of {daemons * rounds} expectedLeafId appends refused")
    assert turns >= daemons  # the daemons did append at the same time

    # Each daemon saw every entry once, in the order they were committed: its own from the answers,
    # the others' from session/didChange (the last ones with the request that reads them all).
    for number, daemon in enumerate(started):
        daemon.send_message(request("final", "session/entries", {"sessionId": session_id, "since": None}))
        answers, got = responses(daemon, {"final"})
        assert [entry["id"] for entry in ok(answers["final"])["entries"]] == ids
        assert seen_in_order(streams[number] + got) == ids, f"daemon {number} saw the entries otherwise"
        leaf = ok(daemon.call(request("info", "session/info", {"sessionId": session_id})))["leafId"]
        assert leaf == ids[-1]

    check_fresh_daemon(start_daemon, sessions_dir, pg_dsn, path, ids)


# ---------------------------------------------------------------------- 2. expectedLeafId


def test_stale_expected_leaf_in_another_daemon_is_refused(start_daemon: Start, sessions_dir: Path, pg_dsn: str) -> None:
    a = store_daemon(start_daemon, sessions_dir, pg_dsn)
    b = store_daemon(start_daemon, sessions_dir, pg_dsn)
    session_id, path = create(a)
    open_session(b, path)
    first = ok(b.call(append(1, session_id, "from b")))["id"]
    by_a = ok(a.call(append(2, session_id, "from a")))
    assert by_a["parentId"] == first  # a took in b's entry before appending

    stale = b.call(append(3, session_id, "b, not knowing", expectedLeafId=first))
    assert stale["error"]["code"] == LEAF_CONFLICT, stale
    assert stale["error"]["data"]["currentLeafId"] == by_a["id"]
    assert stale["error"]["data"]["expectedLeafId"] == first
    fresh = ok(b.call(append(4, session_id, "b, up to date", expectedLeafId=by_a["id"])))
    assert fresh["parentId"] == by_a["id"]
    assert [entry["id"] for entry in stored_entries(pg_dsn)] == [first, by_a["id"], fresh["id"]]


# ---------------------------------------------------------------------- 3. session/didChange


def test_did_change_across_daemons_is_prompt_and_survives_a_lost_listener(
    start_daemon: Start, sessions_dir: Path, pg_dsn: str
) -> None:
    a = store_daemon(start_daemon, sessions_dir, pg_dsn)
    b = store_daemon(start_daemon, sessions_dir, pg_dsn)
    session_id, path = create(a)
    open_session(b, path)
    ok(b.call(request("subscribe", "session/subscribe", {"sessionId": session_id})))
    wait_for(lambda: listen_connections(pg_dsn) == 2, EVENT_TIMEOUT, "both daemons listening")

    appended: list[str] = []
    latencies: list[float] = []
    for number in range(20):
        sent = time.monotonic()
        answer = ok(a.call(append(number, session_id, f"a #{number}")))
        params = next_did_change(b, ANSWER_TIMEOUT)
        latencies.append(time.monotonic() - sent)
        appended.append(answer["id"])
        assert [entry["id"] for entry in params["entries"]] == [answer["id"]]
        assert params["leafId"] == params["cursor"] == answer["id"] and params["leafMoved"]
    print(
        f"didChange across daemons (a's request sent -> b's notification read): median"
        f" {statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms"
    )
    # The fallback poll is every 2 s: by it alone, half would take over a second (a busy machine may
    # delay one notification, not most of them).
    assert statistics.median(latencies) < 0.5

    # Both listening connections are killed: what is appended meanwhile still arrives (by the
    # fallback poll, once the listener is found gone), each entry once, and listening resumes.
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        killed = connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'sessiontree' AND query LIKE 'LISTEN%'"
        ).fetchall()
    assert len(killed) == 2
    missed = [ok(a.call(append(f"m{number}", session_id, f"missed #{number}")))["id"] for number in range(3)]
    arrived: list[str] = []
    started = time.monotonic()
    while len(arrived) < len(missed):
        arrived.extend(entry["id"] for entry in next_did_change(b, EVENT_TIMEOUT)["entries"])
    print(f"entries appended while b's listener was down arrived after {time.monotonic() - started:.2f} s")
    assert arrived == missed
    appended += missed

    wait_for(lambda: listen_connections(pg_dsn) == 2, EVENT_TIMEOUT, "both daemons listening again")
    sent = time.monotonic()
    again = ok(a.call(append("again", session_id, "after the listener came back")))["id"]
    assert [entry["id"] for entry in next_did_change(b, ANSWER_TIMEOUT)["entries"]] == [again]
    print(f"didChange after listening again: {(time.monotonic() - sent) * 1000:.1f} ms")
    appended.append(again)
    assert [entry["id"] for entry in all_entries(b, session_id)] == appended
    assert [entry["id"] for entry in stored_entries(pg_dsn)] == appended


# ---------------------------------------------------------------------- 4. kill -9 mid-append


def test_daemon_killed_mid_append_loses_nothing_acknowledged(start_daemon: Start, sessions_dir: Path, pg_dsn: str) -> None:
    victim = store_daemon(start_daemon, sessions_dir, pg_dsn)
    other = store_daemon(start_daemon, sessions_dir, pg_dsn)
    session_id, path = create(victim)
    open_session(other, path)

    count = 400
    for number in range(count):
        victim.send_message(append(number, session_id, f"victim #{number} " + "x" * 200))
    acknowledged: list[str] = []
    while len(acknowledged) < 60:
        message = victim.next()
        if "method" not in message:
            acknowledged.append(ok(message)["id"])
    victim.process.kill()  # SIGKILL: no rollback, no goodbye; the server notices the socket close
    victim.process.wait()
    with contextlib.suppress(AssertionError):  # answers written before the kill are acknowledged too
        while True:
            message = victim.next(0.3)
            if "method" not in message:
                acknowledged.append(ok(message)["id"])
    assert len(acknowledged) < count, "the daemon finished before it was killed: kill it sooner"

    # The row lock went with the killed daemon's connection: the other daemon appends at once,
    # after the last entry the killed one committed.
    before = [entry["id"] for entry in stored_entries(pg_dsn)]
    sent = time.monotonic()
    after = ok(other.call(append("after", session_id, "after the kill")))
    print(f"{len(acknowledged)} answers before the kill, {len(before)} entries committed;"
          f" the other daemon's append took {(time.monotonic() - sent) * 1000:.0f} ms")
    assert after["parentId"] == before[-1]

    entries = stored_entries(pg_dsn)  # whole lines only, no gap
    ids = [entry["id"] for entry in entries]
    assert ids == [*before, after["id"]]
    assert ids[: len(acknowledged)] == acknowledged  # every acknowledged entry, in order, once
    assert_single_chain(entries)
    check_fresh_daemon(start_daemon, sessions_dir, pg_dsn, path, ids)


def test_daemon_killed_holding_the_row_lock(start_daemon: Start, sessions_dir: Path, pg_dsn: str) -> None:
    """Killed while its append is inside the server (the rows being inserted, the row lock held),
    with another daemon waiting for the lock: the append is committed whole or not at all (its
    statement and COMMIT went in one message, so the server may finish it for a dead client), the
    lock is released, and the other daemon appends after the last committed entry. (A trigger holds
    the insert until the test lets it go.)"""
    victim = store_daemon(start_daemon, sessions_dir, pg_dsn)
    other = store_daemon(start_daemon, sessions_dir, pg_dsn)
    session_id, path = create(victim)
    open_session(other, path)
    acknowledged = [ok(victim.call(append(number, session_id, f"victim #{number}")))["id"] for number in range(3)]

    with psycopg.connect(pg_dsn, autocommit=True) as test:
        test.execute(
            "CREATE FUNCTION public.held() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN PERFORM pg_advisory_lock_shared(4242); PERFORM pg_advisory_unlock_shared(4242); RETURN NEW; END $$"
        )
        test.execute("CREATE TRIGGER held BEFORE INSERT ON sessiontree.lines FOR EACH ROW EXECUTE FUNCTION public.held()")
        test.execute("SELECT pg_advisory_lock(4242)")

        def waiting(kind: str) -> bool:
            """One daemon waits for a lock of this kind (pg_locks' `locktype`)."""
            row = test.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sessiontree'"
                " AND wait_event_type = 'Lock' AND wait_event = %s",
                (kind,),
            ).fetchone()
            return row is not None and row[0] == 1

        victim.send_message(append("lost", session_id, "never acknowledged"))
        wait_for(lambda: waiting("advisory"), EVENT_TIMEOUT, "the victim inserting its rows, holding the session's row lock")
        other.send_message(append("after", session_id, "after the kill"))
        wait_for(lambda: waiting("transactionid") or waiting("tuple"), EVENT_TIMEOUT, "the other daemon waiting for the row lock")
        victim.process.kill()
        victim.process.wait()
        test.execute("SELECT pg_advisory_unlock(4242)")  # the dead daemon's backend finds its client gone
        after = ok(responses(other, {"after"})[0]["after"])
        test.execute("DROP TRIGGER held ON sessiontree.lines")

    entries = stored_entries(pg_dsn)
    assert_single_chain(entries)
    ids = [entry["id"] for entry in entries]
    lost = [entry for entry in entries if entry["id"] not in (*acknowledged, after["id"])]
    assert len(lost) <= 1, lost  # the killed append: whole, or not there
    if lost:
        assert lost[0]["message"]["content"] == "never acknowledged"
    assert ids == [*acknowledged, *(entry["id"] for entry in lost), after["id"]]
    assert after["parentId"] == ids[-2]
    check_fresh_daemon(start_daemon, sessions_dir, pg_dsn, path, ids)


# ---------------------------------------------------------------------- 5. PostgreSQL restarted


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Cluster]:
    """A server of this module's own, to be stopped and started without disturbing other tests."""
    with running_cluster() as cluster:
        yield cluster


def test_server_restarted_mid_session(start_daemon: Start, sessions_dir: Path, own_cluster: Cluster) -> None:
    own_cluster.create_database("restart")
    dsn = f"host={own_cluster.base} dbname=restart user=postgres password={PASSWORD}"  # trust: ignored
    a = store_daemon(start_daemon, sessions_dir, dsn, "--debug")
    b = store_daemon(start_daemon, sessions_dir, dsn, "--debug")
    session_id, path = create(a)
    open_session(b, path)
    ok(b.call(request("subscribe", "session/subscribe", {"sessionId": session_id})))
    idle = store_daemon(start_daemon, sessions_dir, dsn)
    open_session(idle, path)
    acknowledged = [ok(a.call(append(number, session_id, f"before #{number}")))["id"] for number in range(5)]
    assert [entry["id"] for entry in all_entries(b, session_id)] == acknowledged  # b has taken them in

    own_cluster.stop("fast")
    try:
        refused = [a.call(append("down-1", session_id, "during the outage"))]
        refused.append(a.call(request("down-2", "session/entries", {"sessionId": session_id, "since": None})))
        refused.append(b.call(append("down-3", session_id, "during the outage, b")))
        time.sleep(2.2)  # the subscribed daemon's poll and its listener try (and fail) meanwhile
        refused.append(a.call(append("down-4", session_id, "still down")))
    finally:
        own_cluster.start()
    for answer in refused:
        error = answer["error"]
        assert error["code"] == STORE_UNAVAILABLE, answer
        assert "store is unavailable" in error["message"] and "connects again" in error["message"], error
        assert sorted(error["data"]["store"].split()) == ["dbname=restart", f"host={own_cluster.base}", "user=postgres"]
        assert PASSWORD not in orjson.dumps(answer).decode()

    # The same daemons serve again: the next request connects; nothing acknowledged was lost.
    resumed = ok(a.call(append("up", session_id, "after the restart")))
    assert resumed["parentId"] == acknowledged[-1]
    acknowledged.append(resumed["id"])
    arrived = next_did_change(b, EVENT_TIMEOUT)  # by b's poll, or its listener if it is back already
    assert [entry["id"] for entry in arrived["entries"]] == [resumed["id"]]
    wait_for(lambda: listen_connections(dsn) == 3, EVENT_TIMEOUT, "every daemon listening again")
    again = ok(a.call(append("again", session_id, "notified again")))
    assert [entry["id"] for entry in next_did_change(b, ANSWER_TIMEOUT)["entries"]] == [again["id"]]
    acknowledged.append(again["id"])
    by_b = ok(b.call(append("up-b", session_id, "b after the restart")))
    assert by_b["parentId"] == again["id"]
    acknowledged.append(by_b["id"])

    # A daemon that sent nothing during the outage finds its connection ended and makes another:
    # its first request is served, not failed for a store that is back.
    assert [entry["id"] for entry in all_entries(idle, session_id)] == acknowledged
    assert [entry["id"] for entry in all_entries(a, session_id)] == acknowledged
    assert [entry["id"] for entry in stored_entries(dsn)] == acknowledged

    for daemon in (a, b, idle):
        assert PASSWORD not in daemon.stderr
    assert "unavailable" in b.stderr  # the listener's loss was logged (without the password)


# ---------------------------------------------------------------------- 6. unreachable store


@pytest.mark.parametrize("how", ["--store", "initializationOptions"])
def test_initialize_with_an_unreachable_store(start_daemon: Start, sessions_dir: Path, tmp_path: Path, how: str) -> None:
    nowhere = tmp_path / "no-server"
    nowhere.mkdir()
    dsn = f"host={nowhere} dbname=sessions user=someone password={PASSWORD}"
    params: dict[str, Any] = {"processId": None, "capabilities": {}}
    if how == "--store":
        daemon = start_daemon("--sessions-dir", str(sessions_dir), "--store", dsn)
    else:
        daemon = start_daemon("--sessions-dir", str(sessions_dir))
        params["initializationOptions"] = {"store": dsn}
    answer = daemon.call(request(0, "initialize", params), STARTUP_TIMEOUT)
    error = answer["error"]
    assert error["code"] == STORE_UNAVAILABLE, answer
    assert sorted(error["data"]["store"].split()) == ["dbname=sessions", f"host={nowhere}", "user=someone"]
    assert str(nowhere) in error["message"]
    assert PASSWORD not in orjson.dumps(answer).decode()
    # Not initialized: requests are still refused as before initialize.
    assert daemon.call(request(1, "session/list", {}))["error"]["code"] == -32002
    daemon.close_stdin()
    daemon.wait()
    assert PASSWORD not in daemon.stderr


# ---------------------------------------------------------------------- 7. session/list


def test_list_from_the_store_has_every_daemons_sessions(start_daemon: Start, sessions_dir: Path, pg_dsn: str) -> None:
    a = store_daemon(start_daemon, sessions_dir, pg_dsn)
    b = store_daemon(start_daemon, sessions_dir, pg_dsn)
    named_id, named_path = create(a)
    ok(a.call(append(1, named_id, "first question")))
    ok(a.call(request(2, "session/append", {"sessionId": named_id, "entry": {"type": "session_info", "name": "Named one"}})))
    ok(a.call(append(3, named_id, "second question")))
    assistant = {"role": "assistant", "content": [{"type": "text", "text": "an answer"}], "timestamp": 1735689601000}
    ok(a.call(request(4, "session/append", {"sessionId": named_id, "entry": {"type": "message", "message": assistant}})))

    by_b_id, by_b_path = create(b)  # made by the other daemon
    ok(b.call(append(5, by_b_id, "b's question")))
    empty_id, empty_path = create(b)
    elsewhere_id, elsewhere_path = create(b, "/somewhere/else")

    listed = ok(a.call(request(6, "session/list", {"cwd": CWD})))["sessions"]
    summaries = {summary["id"]: summary for summary in listed}
    assert set(summaries) == {named_id, by_b_id, empty_id}
    named = summaries[named_id]
    assert (named["path"], named["cwd"], named["messageCount"], named["firstMessage"], named["name"]) == (
        named_path, CWD, 3, "first question", "Named one"
    )
    assert named["modified"] == "2025-01-01T00:00:01.000Z"  # the newest message's time
    by_b = summaries[by_b_id]
    assert (by_b["path"], by_b["messageCount"], by_b["firstMessage"]) == (by_b_path, 1, "b's question")
    assert "name" not in by_b
    empty = summaries[empty_id]
    assert (empty["path"], empty["messageCount"], empty["firstMessage"]) == (empty_path, 0, "(no messages)")
    assert empty["modified"] == empty["created"]
    assert [summary["id"] for summary in listed] == sorted(
        summaries, key=lambda sid: summaries[sid]["modified"], reverse=True
    )

    everywhere = ok(b.call(request(7, "session/list", {})))["sessions"]
    assert {summary["id"] for summary in everywhere} == {named_id, by_b_id, empty_id, elsewhere_id}
    assert {summary["path"] for summary in everywhere if summary["id"] == elsewhere_id} == {elsewhere_path}
    # b lists what a appended, as a wrote it: the summary is kept in the store, not by the daemon.
    assert next(summary for summary in everywhere if summary["id"] == named_id) == named
