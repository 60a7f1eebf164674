"""Appends pipelined in one write, over real stdio: the daemon may write the ones for a session
together (one write, one sync), but each is answered on its own, in request order, and one that
fails fails alone and writes nothing (protocol.md, "Pipelined appends")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Calls, RawDaemon, answered, frame, request
from support.messages import user_entry

INVALID_PARAMS, SESSION_NOT_FOUND, ENTRY_NOT_FOUND, LEAF_CONFLICT = -32602, -32010, -32011, -32012


def append(msg_id: int, params: dict[str, Any]) -> bytes:
    return frame(request(msg_id, "session/append", params))


@pytest.mark.parametrize("durability", ["os", "fsync"])
def test_pipelined_appends_are_answered_in_order_and_a_failed_one_writes_nothing(
    start_daemon: Any, sessions_dir: Path, durability: str
) -> None:
    daemon: RawDaemon = start_daemon("--sessions-dir", str(sessions_dir), "--durability", durability)
    daemon.initialize()
    calls = Calls(daemon)
    created = calls.result("session/create", {"cwd": "/work/project"})
    sid, path = created["sessionId"], Path(created["path"])
    first = calls.result("session/append", {"sessionId": sid, "entry": user_entry("first")})["id"]
    s = {"sessionId": sid}
    daemon.send(
        append(10, {**s, "entry": user_entry("a")})
        + append(11, {**s, "entry": user_entry("stale"), "expectedLeafId": first})  # the leaf is now 10's entry
        + append(12, {**s, "entry": {"type": "message"}})  # invalid params
        + append(13, {**s, "entry": user_entry("lost"), "parentId": "nope0000"})
        + append(14, {**s, "entries": [user_entry("b"), user_entry("c")]})
        + append(15, {"sessionId": "no-such-session", "entry": user_entry("elsewhere")})
        + append(16, {**s, "entry": {"type": "label", "targetId": first, "label": "start"}})
        + append(17, {**s, "entry": user_entry("branch"), "parentId": first})
        + append(18, {**s, "entry": user_entry("d")})
    )
    messages = daemon.answers_before_probe()
    assert answered(messages) == [
        (10, None), (11, LEAF_CONFLICT), (12, INVALID_PARAMS), (13, ENTRY_NOT_FOUND), (14, None),
        (15, SESSION_NOT_FOUND), (16, None), (17, None), (18, None),
    ]
    results = {m["id"]: m["result"] for m in messages if "result" in m}
    assert results[10]["parentId"] == first
    assert next(m for m in messages if m.get("id") == 11)["error"]["data"]["currentLeafId"] == results[10]["id"]
    b, c = results[14]["appended"]
    assert (b["parentId"], c["parentId"], results[14]["leafId"]) == (results[10]["id"], b["id"], c["id"])
    assert results[16]["parentId"] == c["id"]
    assert results[17]["parentId"] == first
    assert results[18]["parentId"] == results[17]["id"]  # the leaf 17 left
    lines = [json.loads(raw) for raw in path.read_text().splitlines()[2:]]
    expected = [results[10]["id"], b["id"], c["id"], results[16]["id"], results[17]["id"], results[18]["id"]]
    assert [entry["id"] for entry in lines] == expected  # in request order, nothing of the failed ones
    info = calls.result("session/info", s)
    assert (info["leafId"], info["entryCount"]) == (results[18]["id"], 1 + len(expected))
