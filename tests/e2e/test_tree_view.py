"""session/treeView over stdio: pages stay small on a big session, and unfolding every page and
every run gives session/tree's order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.daemon import Calls, RawDaemon, frame
from support.messages import line, plain_user
from support.sessions import session_file

BRANCH_EVERY = 997  # entries between branch points


def _big_session(root: Path, count: int) -> Path:
    path = session_file(root, "big.jsonl")
    with path.open("ab") as out:
        parent = None
        for seq in range(count):
            entry_id = f"e{seq:07d}"
            out.write(line(plain_user(entry_id, parent, f"question {seq}")))
            # now and then the next entry resumes two entries back: a branch point
            parent = f"e{seq - 1:07d}" if seq % BRANCH_EVERY == 0 and seq > 0 else entry_id
    return path


def test_pages_are_small_and_unfold_to_the_flat_tree(daemon: RawDaemon, sessions_dir: Path) -> None:
    calls = Calls(daemon)
    opened = calls.result("session/open", {"path": str(_big_session(sessions_dir, 20_000))})
    sid = opened["sessionId"]
    flat = [node["id"] for node in calls.result("session/tree", {"sessionId": sid})["nodes"]]
    first = calls.answer("session/treeView", {"sessionId": sid})
    assert len(frame(first)) < 100_000
    rows: list[dict[str, Any]] = []
    while len(rows) < first["result"]["total"]:
        rows += calls.result("session/treeView", {"sessionId": sid, "offset": len(rows), "limit": 2000})["rows"]
    unfolded: list[str] = []
    for row in rows:
        if "run" not in row:
            unfolded.append(row["id"])
            continue
        inside: list[dict[str, Any]] = []
        while len(inside) < row["run"]["count"]:
            params = {"sessionId": sid, "run": row["id"], "offset": len(inside), "limit": 2000}
            inside += calls.result("session/treeView", params)["rows"]
        unfolded += [entry["id"] for entry in inside]
    assert unfolded == flat
    assert len(rows) < len(flat) // 100  # folded
    page = calls.result("session/treeView", {"sessionId": sid, "reveal": opened["leafId"], "limit": 50})
    assert [row["id"] for row in page["rows"] if row.get("leaf")] == [opened["leafId"]]
    assert page["offset"] % 50 == 0
