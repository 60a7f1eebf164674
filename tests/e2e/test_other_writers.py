"""Two daemons (and plain writers) on one file: each sees the others' entries and says so."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest_asyncio

from sessiontree import protocol as p
from sessiontree.client import SessionTreeClient
from sessiontree.errors import LeafConflict
from support.messages import user_entry
from support.timeouts import EVENT_TIMEOUT


class Watcher:
    """A client that keeps the `session/didChange` notifications it receives."""

    def __init__(self, sessions_dir: Path) -> None:
        self.changes: list[dict[str, Any]] = []
        self.client = SessionTreeClient(sessions_dir=sessions_dir, on_notification=self._note)

    def _note(self, method: str, params: Any) -> None:
        if method == "session/didChange":
            self.changes.append(params)

    async def wait_for(self, count: int, timeout: float = EVENT_TIMEOUT) -> list[dict[str, Any]]:
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.changes) < count and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        return self.changes


@pytest_asyncio.fixture
async def pair(sessions_dir: Path) -> AsyncIterator[tuple[Watcher, Watcher, str, str]]:
    """Two daemons with the same session open: (a, b, session id, path)."""
    a, b = Watcher(sessions_dir), Watcher(sessions_dir)
    await a.client.start()
    await b.client.start()
    created = await a.client.create(p.CreateParams(cwd="/work/project"))
    await a.client.append(p.AppendParams(created.session_id, entry=user_entry("root")))
    await b.client.open(p.OpenParams(created.path))
    yield a, b, created.session_id, created.path
    await a.client.stop()
    await b.client.stop()


async def test_a_subscribed_client_hears_of_the_other_daemons_appends_unasked(pair: Any) -> None:
    a, b, sid, _ = pair
    await a.client.subscribe(p.SessionParams(sid))
    appended = await b.client.append(p.AppendParams(sid, entry=user_entry("from b")))
    changes = await a.wait_for(1)
    assert [e["id"] for change in changes for e in change["entries"]] == [appended.id]
    assert changes[0]["entries"][0]["message"]["content"] == "from b"
    assert (changes[0]["leafId"], changes[0]["cursor"], changes[0]["leafMoved"]) == (appended.id, appended.id, True)


async def test_the_leaf_stays_put_when_the_other_writer_branches_elsewhere(pair: Any) -> None:
    a, b, sid, _ = pair
    root = (await a.client.info(p.SessionParams(sid))).leaf_id
    mine = await a.client.append(p.AppendParams(sid, entry=user_entry("a's line")))
    await b.client.append(p.AppendParams(sid, entry=user_entry("b's branch"), parent_id=root))
    info = await a.client.info(p.SessionParams(sid))  # a request takes others' entries in, subscribed or not
    assert info.leaf_id == mine.id
    changes = await a.wait_for(1)
    assert changes[-1]["leafMoved"] is False and changes[-1]["leafId"] == mine.id


async def test_a_stale_view_is_a_conflict_not_a_silent_fork(pair: Any) -> None:
    a, b, sid, _ = pair
    seen = (await a.client.info(p.SessionParams(sid))).leaf_id
    await b.client.append(p.AppendParams(sid, entry=user_entry("b moved on")))
    try:
        await a.client.append(p.AppendParams(sid, entry=user_entry("stale"), expected_leaf_id=seen))
    except LeafConflict as conflict:
        assert conflict.data["currentLeafId"] != seen
    else:
        raise AssertionError("the stale append was accepted")


async def test_both_daemons_and_plain_writers_end_with_the_same_tree(pair: Any) -> None:
    a, b, sid, path = pair

    def plain_writer(count: int, tag: str) -> None:
        """A cooperating tool: whole lines, one write each, under the same lock."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            for n in range(count):
                line = {"type": "custom", "customType": tag, "data": {"n": n}, "id": f"{tag}{n:04x}",
                        "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z"}
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(fd, orjson.dumps(line) + b"\n")
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    async def daemon_writer(watcher: Watcher, count: int) -> list[str]:
        ids = []
        for n in range(count):
            ids.append((await watcher.client.append(p.AppendParams(sid, entry=user_entry(f"{n}")))).id)
        return ids

    writers = [asyncio.to_thread(plain_writer, 100, tag) for tag in ("w1", "w2")]
    ids_a, ids_b, *_ = await asyncio.gather(daemon_writer(a, 150), daemon_writer(b, 150), *writers)
    tree_a = await a.client.tree(p.TreeParams(sid))
    tree_b = await b.client.tree(p.TreeParams(sid))
    assert [n.id for n in tree_a.nodes] == [n.id for n in tree_b.nodes]
    lines = Path(path).read_bytes().splitlines()
    assert len(lines) == 1 + 1 + 300 + 200  # header, root, daemons' and writers' lines: none lost or glued
    ids = [orjson.loads(raw)["id"] for raw in lines[1:]]
    assert len(set(ids)) == len(ids)
    assert set(ids_a) | set(ids_b) <= set(ids)
