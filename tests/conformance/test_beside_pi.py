"""pi 1.6.0 itself, through its own SessionManager, writing a session the daemon has open: big
entries appended while the daemon opens, appends and closes, and pi's open of a file whose last
line is torn (pi ends it with a line end on every load). Neither side loses a line."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from pi_harness import PiDriver

from support.daemon import Calls, RawDaemon, request
from support.messages import plain_user
from support.sessions import session_file

APPENDER = Path(__file__).resolve().parent / "pi_appender.mjs"
STARTUP_S = 60.0


@pytest.fixture
def calls(tmp_path: Path) -> Iterator[Calls]:
    root = tmp_path / "sessions"
    root.mkdir()
    daemon = RawDaemon("--sessions-dir", str(root))
    # Start-up is bounded apart from answers: a loaded machine may take seconds to import the daemon.
    daemon.send_message(request(0, "initialize", {"processId": None, "capabilities": {}}))
    assert "result" in daemon.next(STARTUP_S)
    daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    yield Calls(daemon)
    daemon.kill()


def test_pi_and_the_daemon_appending_to_one_file_lose_nothing(pi: PiDriver, calls: Calls, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    assistant = {"type": "message", "id": "a0000002", "parentId": "a0000001", "timestamp": "2026-01-01T00:00:00.000Z",
                 "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}}
    path = session_file(root, "s.jsonl", plain_user("a0000001", None), assistant)  # pi writes at once after an answer
    writer = subprocess.Popen([pi.node, str(APPENDER), str(path), "60", "500000"], stdout=subprocess.PIPE)
    ours: list[str] = []
    while writer.poll() is None:
        opened = calls.result("session/open", {"path": str(path)})
        for _ in range(3):
            entry = {"type": "custom", "customType": "daemon", "data": len(ours)}
            ours.append(calls.result("session/append", {"sessionId": opened["sessionId"], "entry": entry})["id"])
        calls.result("session/close", {"sessionId": opened["sessionId"]})
    out, _ = writer.communicate()
    assert writer.returncode == 0
    pis = json.loads(out)
    assert len(pis) == 120 and ours
    # A blank line may stand where the daemon ended a line pi was still writing: no line is lost.
    in_file = [orjson.loads(raw)["id"] for raw in path.read_bytes().splitlines()[1:] if raw.strip()]
    assert sorted(in_file) == sorted(["a0000001", "a0000002", *pis, *ours])  # every line, whole, once
    opened = calls.result("session/open", {"path": str(path)})
    assert opened["warnings"] == [] and opened["entryCount"] == len(in_file)


def test_pi_ending_a_torn_line_on_load_is_growth_for_the_daemon(pi: PiDriver, calls: Calls, tmp_path: Path) -> None:
    """A writer died mid-line; the daemon has the file open (torn-tail). pi 1.6 opens it, ends the
    torn line with "\n" and appends: for the daemon that is growth, not a rewrite. It takes pi's
    entries in, its own append goes after them, and the torn bytes stay (a malformed line)."""
    root = tmp_path / "sessions"
    assistant = {"type": "message", "id": "a0000002", "parentId": "a0000001", "timestamp": "2026-01-01T00:00:00.000Z",
                 "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}}
    path = session_file(root, "s.jsonl", plain_user("a0000001", None), assistant)
    torn = b'{"type":"message","id":"a0000003","parentId":"a0000002","timestamp":"2026-01-01T00:0'
    with path.open("ab") as file:
        file.write(torn)
    opened = calls.result("session/open", {"path": str(path)})
    assert [w["kind"] for w in opened["warnings"]] == ["torn-tail"]
    writer = subprocess.run([pi.node, str(APPENDER), str(path), "2", "100"], capture_output=True, timeout=300, check=True)
    pis = json.loads(writer.stdout)
    raw = path.read_bytes()
    assert torn + b"\n" in raw, "pi ends the torn line on load"
    ours = calls.result("session/append", {"sessionId": opened["sessionId"], "entry": {"type": "custom", "customType": "daemon"}})
    entries = calls.result("session/entries", {"sessionId": opened["sessionId"], "since": None})["entries"]
    assert [e["id"] for e in entries] == ["a0000001", "a0000002", *pis, ours["id"]]
    assert ours["parentId"] == pis[-1]  # pi's entries were taken in before the append: the leaf moved with them
    assert path.read_bytes().startswith(raw)  # the daemon only appended
    calls.result("session/close", {"sessionId": opened["sessionId"]})
    reopened = calls.result("session/open", {"path": str(path)})
    assert [w["kind"] for w in reopened["warnings"]] == ["malformed"] and reopened["entryCount"] == 3 + len(pis)

