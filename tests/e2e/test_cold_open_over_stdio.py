"""A cold open that forks a scan worker, in the real daemon over stdio: what every client sees is
what a daemon that scans alone answers, and the worker is gone when the answer comes."""

from __future__ import annotations

import json
from pathlib import Path

from support.daemon import Calls, RawDaemon
from support.messages import assistant, line, user
from support.scan_cases import damaged_mix
from support.sessions import session_file


def _session(root: Path) -> Path:
    """Three thousand entries with branches and labels, then the damaged lines of the scan tests."""
    path = session_file(root, "big.jsonl")
    with path.open("ab") as out:
        parent = None
        for seq in range(3000):
            entry_id = f"e{seq:07d}"
            make = assistant if seq % 2 else user
            out.write(line(make(entry_id, parent, f"text {seq}", seq)))
            parent = f"e{seq - 3:07d}" if seq % 97 == 0 and seq > 3 else entry_id
            if seq % 500 == 250:
                out.write(line({"type": "label", "id": f"l{seq}", "parentId": entry_id, "timestamp": "t", "targetId": entry_id, "label": "x"}))
        out.write(damaged_mix().split(b"\n", 1)[1])
    return path


def _seen(daemon: RawDaemon, path: Path) -> list[object]:
    calls = Calls(daemon)
    opened = calls.result("session/open", {"path": str(path)})
    sid = opened["sessionId"]
    seen: list[object] = [{key: value for key, value in opened.items() if key != "sessionId"}]
    seen.append(calls.result("session/tree", {"sessionId": sid}))
    seen.append(calls.result("session/treeView", {"sessionId": sid, "limit": 500}))
    for leaf in [opened["leafId"], "e0000999", "e0002998", "later01"]:
        context = calls.answer("session/context", {"sessionId": sid, "leafId": leaf}).get("result")
        if isinstance(context, dict):
            context.pop("cursor", None)  # names the daemon's own cache generation, whatever it scanned
        seen.append(context)
    return seen


def test_a_daemon_with_a_scan_worker_answers_as_one_that_scans_alone(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = _session(root)
    written = path.read_bytes()
    alone = RawDaemon("--sessions-dir", str(root), env={"SESSIONTREE_SCAN_WORKER": "0"})
    shared = RawDaemon("--sessions-dir", str(root), "--debug", env={"SESSIONTREE_SCAN_WORKER": "1000"})
    try:
        for daemon in (alone, shared):
            daemon.initialize({"indexDir": False})
        expected, got = _seen(alone, path), _seen(shared, path)
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)
        assert "a scan worker took bytes" in shared.stderr and "a scan worker" not in alone.stderr
        children = Path(f"/proc/{shared.process.pid}/task/{shared.process.pid}/children").read_text().split()
        assert children == []  # reaped before the open was answered
        assert path.read_bytes() == written
    finally:
        alone.kill()
        shared.kill()
