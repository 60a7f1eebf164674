"""Hostile input and scarce resources: deep nesting, a client that stops reading, lying lengths,
huge lines, no file descriptors left, SIGTERM in the middle of a fork."""

from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Callable
from pathlib import Path

from support.daemon import Calls, RawDaemon, frame, info, request
from support.messages import line, plain_user
from support.pi_writer import start_writer
from support.sessions import SESSION_FILE_HEADER, session_file
from support.timeouts import ANSWER_TIMEOUT

DEPTH = 1000  # Node's parser takes it, so pi does


def test_a_session_line_nested_a_thousand_deep_opens_and_lists(calls: Calls, sessions_dir: Path) -> None:
    path = session_file(sessions_dir, "deep.jsonl", plain_user("a0000001", None))
    with path.open("ab") as out:  # nested as deep as Node's parser takes, with a lone surrogate as JS writes it
        out.write(b'{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-01-01T00:00:00.000Z",'
                  b'"message":{"role":"user","content":"deep","details":' + b"[" * DEPTH + b'"\\ud800"' + b"]" * DEPTH
                  + b',"timestamp":1}}\n')
        out.write(line(plain_user("a0000003", "a0000002")))
    opened = calls.result("session/open", {"path": str(path)})
    assert opened["entryCount"] in (2, 3)  # read, or reported as malformed: never an internal error
    assert all(w["kind"] == "malformed" for w in opened["warnings"])
    assert [s["path"] for s in calls.result("session/list", {})["sessions"]] == [str(path)]


def test_a_deeply_nested_request_with_an_escape_is_answered_and_so_is_the_next(daemon: RawDaemon) -> None:
    params = b'{"sessionId":' + b"[" * (5 * DEPTH) + b'"\\u0041"' + b"]" * (5 * DEPTH) + b"}"
    nested = frame(b'{"jsonrpc":"2.0","id":1,"method":"session/info","params":' + params + b"}")
    daemon.send(nested + frame(info(2)))  # one read: the second must not be lost with the first
    first, second = daemon.next(), daemon.next()
    assert first["id"] in (1, None) and first["error"]["code"] in (-32700, -32600, -32602)
    assert second["id"] == 2 and second["error"]["code"] == -32010


def test_a_content_length_no_body_can_have_does_not_swallow_what_follows(daemon: RawDaemon) -> None:
    daemon.send(b"Content-Length: 9223372036854775808\r\n\r\n")
    refused = daemon.next()
    assert refused["id"] is None and "too large" in refused["error"]["message"]
    daemon.send_message(info(2))  # the lying header's body is not waited for
    answer = daemon.next()
    assert answer["id"] == 2 and answer["error"]["code"] == -32010


def test_a_client_that_stops_reading_does_not_grow_the_daemon(sessions_dir: Path) -> None:
    """A subscribed session's file grows by 96 MB while the client reads nothing: what others
    appended waits in the file, not in the daemon's output queue."""
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None))
    daemon = RawDaemon("--sessions-dir", str(sessions_dir), reader=False)
    try:
        for message in (
            request(0, "initialize", {"processId": None, "capabilities": {}}),
            request(1, "session/open", {"path": str(path)}),
        ):
            daemon.send_message(message)
            opened = daemon.read_frame()
        sid = opened["result"]["sessionId"]
        daemon.send_message(request(2, "session/subscribe", {"sessionId": sid}))
        daemon.read_frame()
        before = _rss_mb(daemon.process.pid)
        assert start_writer(path, 96, 1_000_000, "a0000001").wait(60) == 0  # 96 MB, nobody reading
        time.sleep(2.0)  # a gap on purpose: several file checks, in which a daemon that buffered would grow
        grown = _rss_mb(daemon.process.pid) - before
        assert grown < 48, f"the daemon grew by {grown:.0f} MB while its client read nothing"
        assert daemon.process.poll() is None
    finally:
        daemon.kill()


def _rss_mb(pid: int) -> float:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_listing_a_session_with_a_line_of_two_hundred_megabytes_is_answered(calls: Calls, sessions_dir: Path) -> None:
    """Joining the blocks of a long line one by one was quadratic: minutes for 200 MB."""
    path = session_file(sessions_dir, "huge.jsonl")
    with path.open("ab") as out:
        out.write(b'{"type":"message","id":"a0000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
                  b'"message":{"role":"user","content":"')
        block = b"x" * (1 << 20)
        for _ in range(200):
            out.write(block)
        out.write(b'","timestamp":1}}\n')
    answer = calls.answer("session/list", {}, timeout=4 * ANSWER_TIMEOUT)  # 200 MB read on a busy machine
    assert [s["messageCount"] for s in answer["result"]["sessions"]] == [1]


def test_with_no_file_descriptors_left_listing_is_an_error_not_an_empty_list(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path
) -> None:
    paths = [session_file(sessions_dir, f"s{n:03d}.jsonl", plain_user("a0000001", None)) for n in range(64)]
    daemon = _daemon_with_fd_limit(sessions_dir, 40)
    try:
        calls = Calls(daemon)
        daemon.initialize()
        for number, path in enumerate(paths):
            header_id = f"s{number:03d}"
            path.write_bytes(line({**SESSION_FILE_HEADER, "id": header_id}) + line(plain_user("a0000001", None)))
            answer = calls.answer("session/open", {"path": str(path)})
            if "error" in answer:
                assert answer["error"]["code"] == -32017, answer  # out of descriptors: said so
                break
        else:
            raise AssertionError("the descriptor limit was never reached")
        error = calls.error("session/list", {})
        assert error["code"] == -32017 and "Too many open files" in error["message"]
    finally:
        daemon.kill()


def _daemon_with_fd_limit(sessions_dir: Path, limit: int) -> RawDaemon:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return RawDaemon("--sessions-dir", str(sessions_dir), preexec=limited)


def test_sigterm_during_a_fork_leaves_no_temporary_file(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    path = session_file(sessions_dir, "big.jsonl")
    with path.open("ab") as out:
        parent = None
        for number in range(40_000):
            entry_id = f"b{number:07d}"
            out.write(line(plain_user(entry_id, parent, "y" * 200)))
            parent = entry_id
    for delay in (0.0, 0.05, 0.2):
        daemon = start_daemon("--sessions-dir", str(sessions_dir))
        daemon.initialize()
        sid = daemon.call(request(1, "session/open", {"path": str(path)}))["result"]["sessionId"]
        daemon.send_message(request(2, "session/fork", {"sessionId": sid, "entryId": parent}))
        time.sleep(delay)  # a gap on purpose: SIGTERM at several points of the fork
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.wait(30) == 128 + signal.SIGTERM
        assert not [p for p in path.parent.iterdir() if p.name.endswith(".partial")]
        for forked in path.parent.glob("*.jsonl"):
            assert forked.read_bytes().endswith(b"\n")  # a fork is whole, or not there
        os.sync()
