"""pi itself, through its own SessionManager, appending big entries to a session the daemon has
open: the daemon opens, appends and closes meanwhile, and neither side loses a line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson
import pytest
from pi_harness import PiDriver

from support.daemon import Calls, RawDaemon
from support.messages import plain_user
from support.sessions import session_file

APPENDER = Path(__file__).resolve().parent / "pi_appender.mjs"


@pytest.fixture
def calls(tmp_path: Path) -> Calls:
    root = tmp_path / "sessions"
    root.mkdir()
    daemon = RawDaemon("--sessions-dir", str(root))
    daemon.initialize()
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
