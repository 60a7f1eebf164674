"""The Python client against the real daemon: typed methods, errors by class, notifications."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree import protocol as p
from sessiontree.client import RpcError, SessionTreeClient, SyncSessionTreeClient
from sessiontree.errors import LeafConflict, SessionNotFound
from sessiontree.server import _service_call


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


@pytest.mark.parametrize("method", sorted(p.METHODS))
def test_every_method_has_a_typed_call_on_both_clients(method: str) -> None:
    name = _service_call(method).__name__.removeprefix("session_")
    assert callable(getattr(SessionTreeClient, name)) and callable(getattr(SyncSessionTreeClient, name))


async def test_typed_calls_round_trip(sessions_dir: Path) -> None:
    notes: list[tuple[str, Any]] = []
    async with SessionTreeClient(sessions_dir=sessions_dir, on_notification=lambda m, params: notes.append((m, params))) as client:
        created = await client.create(p.CreateParams(cwd="/work/project"))
        sid = created.session_id
        first = await client.append(p.AppendParams(session_id=sid, entry=user("a")))
        second = await client.append(p.AppendParams(session_id=sid, entry=user("b"), expected_leaf_id=first.id))
        assert isinstance(second, p.AppendResult) and second.parent_id == first.id
        with pytest.raises(LeafConflict):
            await client.append(p.AppendParams(session_id=sid, entry=user("c"), expected_leaf_id=first.id))
        await client.label(p.LabelParams(session_id=sid, target_id=first.id, label="start"))
        await client.set_name(p.SetNameParams(session_id=sid, name="n"))
        moved = await client.branch(p.BranchParams(session_id=sid, entry_id=first.id))
        assert moved.leaf_id == first.id
        context = await client.context(p.ContextParams(session_id=sid))
        assert [m["content"] for m in context.messages] == ["a"]
        tree = await client.tree(p.TreeParams(session_id=sid))
        assert [n.label for n in tree.nodes][0] == "start"
        entries = await client.entries(p.EntriesParams(session_id=sid, ids=[second.id]))
        assert entries.entries[0]["id"] == second.id
        forked = await client.fork(p.ForkParams(session_id=sid, entry_id=second.id))
        assert (await client.info(p.SessionParams(session_id=forked.session_id))).entry_count >= 2
        await client.close(p.SessionParams(session_id=sid))
        with pytest.raises(SessionNotFound):
            await client.info(p.SessionParams(session_id=sid))
        with pytest.raises(RpcError) as unknown:
            await client.request("session/nope", {})
        assert unknown.value.code == -32601

        torn = sessions_dir / "torn.jsonl"
        header = {"type": "session", "version": 3, "id": "torn-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
        torn.write_bytes(orjson.dumps(header) + b"\n{\"type\":")
        opened = await client.open(p.OpenParams(path=str(torn)))
        assert opened.warnings
    assert [method for method, _ in notes] == ["window/logMessage"] * len(opened.warnings)


def test_sync_client_and_exit_code(sessions_dir: Path) -> None:
    client = SyncSessionTreeClient(sessions_dir=sessions_dir)
    result = client.start()
    assert result["capabilities"]["experimental"]["sessiontree"]["methods"] == sorted(p.METHODS)
    created = client.create(p.CreateParams(cwd="/x"))
    assert client.info(p.SessionParams(session_id=created.session_id)).entry_count == 0
    assert client.stop() == 0
