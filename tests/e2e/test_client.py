"""The Python client against the real daemon: typed methods, errors by class, notifications."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree import protocol as p
from sessiontree.client import RpcError, SessionTreeClient, SyncSessionTreeClient
from sessiontree.errors import LeafConflict, SessionNotFound, SummaryFailed
from sessiontree.server import HANDLERS
from support.messages import user_entry


@pytest.mark.parametrize("method", sorted(p.METHODS))
def test_every_method_has_a_typed_call_on_both_clients(method: str) -> None:
    name = HANDLERS[method].call.__name__
    assert callable(getattr(SessionTreeClient, name)) and callable(getattr(SyncSessionTreeClient, name))


async def test_typed_calls_round_trip(sessions_dir: Path) -> None:
    notes: list[tuple[str, Any]] = []
    async with SessionTreeClient(sessions_dir=sessions_dir, on_notification=lambda m, params: notes.append((m, params))) as client:
        created = await client.create(p.CreateParams(cwd="/work/project"))
        sid = created.session_id
        first = await client.append(p.AppendParams(session_id=sid, entry=user_entry("a")))
        second = await client.append(p.AppendParams(session_id=sid, entry=user_entry("b"), expected_leaf_id=first.id))
        assert isinstance(second, p.AppendResult) and second.parent_id == first.id
        with pytest.raises(LeafConflict):
            await client.append(p.AppendParams(session_id=sid, entry=user_entry("c"), expected_leaf_id=first.id))
        await client.label(p.LabelParams(session_id=sid, target_id=first.id, label="start"))
        await client.set_name(p.SetNameParams(session_id=sid, name="n"))
        moved = await client.branch(p.BranchParams(session_id=sid, entry_id=first.id))
        assert moved.leaf_id == first.id
        context = await client.context(p.ContextParams(session_id=sid))
        assert [m["content"] for m in context.messages] == ["a"]
        tree = await client.tree(p.TreeParams(session_id=sid))
        assert tree.nodes[0].label == "start"
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


def _turns(count: int) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for turn in range(count):
        entries.append(user_entry(f"Question {turn}: " + "why " * 30))
        message = {"role": "assistant", "content": [{"type": "text", "text": "because " * 30}], "provider": "p",
                   "model": "m", "usage": {"totalTokens": 120}, "stopReason": "stop", "timestamp": 2}
        entries.append({"type": "message", "message": message})
    return entries


async def test_the_client_answers_the_daemons_summary_requests(sessions_dir: Path) -> None:
    asked: list[p.SummarizeParams] = []

    async def summarize(params: p.SummarizeParams) -> p.SummarizeResult:
        asked.append(params)
        return p.SummarizeResult(summary="## Goal\nTest the client.", turn_prefix_summary="prefix")

    async with SessionTreeClient(sessions_dir=sessions_dir, summarize=summarize) as client:
        sid = (await client.create(p.CreateParams(cwd="/work/project"))).session_id
        await client.append(p.AppendParams(sid, entries=_turns(4)))
        settings = p.CompactionSettings(keep_recent_tokens=50)
        committed = await client.compact(p.CompactParams(sid, settings=settings))
        assert asked and asked[0].kind == "compaction" and asked[0].compaction is not None
        stored = (await client.entries(p.EntriesParams(sid, ids=[committed.entry["id"]]))).entries[0]
        assert stored == committed.entry and committed.leaf_id == stored["id"]
        assert stored["type"] == "compaction" and stored["summary"].startswith("## Goal\nTest the client.")


async def test_a_failing_or_slow_summarizer_appends_nothing(sessions_dir: Path) -> None:
    async def fails(params: p.SummarizeParams) -> p.SummarizeResult:
        raise RuntimeError("the model is down")

    cancelled: list[bool] = []

    async def hangs(params: p.SummarizeParams) -> p.SummarizeResult:
        try:
            await asyncio.sleep(30)  # a summariser that hangs (cancelled long before)
        except asyncio.CancelledError:  # the daemon gave up waiting and said so
            cancelled.append(True)
            raise
        raise AssertionError("not cancelled")

    for summarize, error in ((fails, SummaryFailed), (hangs, SummaryFailed)):
        async with SessionTreeClient(sessions_dir=sessions_dir, summarize=summarize) as client:
            sid = (await client.create(p.CreateParams(cwd="/work/project"))).session_id
            await client.append(p.AppendParams(sid, entries=_turns(4)))
            before = (await client.info(p.SessionParams(sid))).entry_count
            with pytest.raises(error):
                settings = p.CompactionSettings(keep_recent_tokens=50)
                await client.compact(p.CompactParams(sid, settings=settings, timeout_ms=300))
            assert (await client.info(p.SessionParams(sid))).entry_count == before
    assert cancelled == [True]
