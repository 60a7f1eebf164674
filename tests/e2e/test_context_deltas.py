"""Context deltas over stdio: a client that applies `since`/`cursor` answers always holds the whole
context, whatever happens to the session between its reads (random runs, compared with full reads)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from sessiontree import protocol as p
from sessiontree.client import HeldContext, SessionTreeClient
from support.messages import user_entry

TOOL_CALL = {"type": "toolCall", "id": "call-1", "name": "read", "arguments": {"path": "a.txt"}}
USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15}


def assistant_entry(text: str) -> dict[str, Any]:
    message = {
        "role": "assistant", "content": [{"type": "text", "text": text}, TOOL_CALL], "api": "a", "provider": "p",
        "model": "m1", "usage": USAGE, "stopReason": "toolUse", "timestamp": 2,
    }  # fmt: skip
    return {"type": "message", "message": message}


def tool_result_entry(text: str) -> dict[str, Any]:
    message = {
        "role": "toolResult", "toolCallId": "call-1", "toolName": "read",
        "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 3,
    }  # fmt: skip
    return {"type": "message", "message": message}


class Run:
    """One random run: a client (a) reading through deltas, another daemon (b) writing beside it."""

    def __init__(self, a: SessionTreeClient, b: SessionTreeClient, sid: str, seed: int) -> None:
        self.a, self.b, self.sid = a, b, sid
        self.rng = random.Random(seed)
        self.agent = HeldContext(sid)
        self.llm = HeldContext(sid, format="llm", tokens=True)
        self.held_before: list[tuple[str | None, list[Any]]] = [(None, [])]
        self.count = 0

    def text(self) -> str:
        self.count += 1
        return f"t{self.count}"

    async def path_ids(self, editable: bool = False) -> list[str]:
        """Ids of the entries on the leaf's path, root first (those a context edit may target)."""
        leaf = (await self.a.info(p.SessionParams(self.sid))).leaf_id
        entries = (await self.a.entries(p.EntriesParams(self.sid, path_to=leaf))).entries
        if editable:
            entries = [entry for entry in entries if entry["type"] == "message" and entry["message"]["role"] != "system"]
        return [entry["id"] for entry in entries]

    async def step(self) -> None:
        choice = self.rng.choice(
            ["turn", "turn", "turn", "held", "branch", "summary", "edit", "hide", "compaction", "other", "setting",
             "forged", "stale", "other_leaf"]
        )  # fmt: skip
        if choice == "turn":  # the agent's turn: three appends, the last one answering with the context
            await self.a.append(p.AppendParams(self.sid, entry=user_entry(self.text())))
            await self.a.append(p.AppendParams(self.sid, entry=assistant_entry(self.text())))
            result = await self.a.append_held(p.AppendParams(self.sid, entry=tool_result_entry(self.text())), self.agent)
            assert result.context is not None and result.context.leaf_id == result.leaf_id
        elif choice == "held":
            await self.a.append_held(p.AppendParams(self.sid, entry=user_entry(self.text())), self.agent)
        elif choice in ("branch", "summary"):
            target = self.rng.choice(await self.path_ids())
            summary = "went back" if choice == "summary" else None
            await self.a.branch(p.BranchParams(self.sid, target, summary=summary))
        elif choice in ("edit", "hide"):
            ids = await self.path_ids(editable=True)
            replacement = p.ContextReplacement("edited " + self.text()) if choice == "edit" else None
            await self.a.edit_context(p.EditContextParams(self.sid, self.rng.choice(ids), replacement))
        elif choice == "compaction":
            ids = await self.path_ids()
            entry = {"type": "compaction", "summary": "S " + self.text(), "tokensBefore": 9,
                     "firstKeptEntryId": self.rng.choice(ids)}  # fmt: skip
            await self.a.append(p.AppendParams(self.sid, entry=entry))
        elif choice == "other":  # another daemon's entry on the path, taken in from the file
            await self.b.append(p.AppendParams(self.sid, entry=user_entry("b " + self.text())))
        elif choice == "setting":
            entry = {"type": "thinking_level_change", "thinkingLevel": self.rng.choice(["low", "high"])}
            await self.a.append(p.AppendParams(self.sid, entry=entry))
        elif choice == "forged":  # a cursor altered or made up: answered with everything
            generation, count, fmt, check = (self.agent.cursor or "").split(".")  # a valid one: checked last step
            self.agent.cursor = self.rng.choice(
                [f"{generation}.{int(count) + 1}.{fmt}.{check}", f"{generation}.{max(int(count) - 1, 0)}.{fmt}.{check}",
                 f"{generation}.{count}.l.{check}", f"{int(generation) + 1}.{count}.{fmt}.{check}",
                 f"{generation}.{count}.{fmt}.00000000", "garbage", "", f"{generation}.{'9' * 5000}.{fmt}.{check}"]
            )  # fmt: skip
            self.agent.messages.append({"role": "user", "content": "not in the session"})
        elif choice == "stale":  # the client goes back to what it held after an earlier answer
            self.agent.cursor, messages = self.rng.choice(self.held_before)
            self.agent.messages = list(messages)
        else:  # a read at another leaf between two reads at the session's leaf
            target = self.rng.choice(await self.path_ids())
            await self.a.context(p.ContextParams(self.sid, leaf_id=target))
        await self.check()

    async def check(self) -> None:
        whole = await self.a.context(p.ContextParams(self.sid))
        got = await self.a.held_context(self.agent)
        assert got.messages == whole.messages == self.agent.messages
        assert (got.leaf_id, got.thinking_level, got.model) == (whole.leaf_id, whole.thinking_level, whole.model)
        whole_llm = await self.a.context(p.ContextParams(self.sid, format="llm", tokens=True))
        got_llm = await self.a.held_context(self.llm)
        assert got_llm.messages == whole_llm.messages == self.llm.messages
        assert got_llm.tokens == whole_llm.tokens
        self.held_before.append((self.agent.cursor, list(self.agent.messages)))


@pytest_asyncio.fixture
async def daemons(sessions_dir: Path) -> AsyncIterator[tuple[SessionTreeClient, SessionTreeClient, str]]:
    a, b = SessionTreeClient(sessions_dir=sessions_dir), SessionTreeClient(sessions_dir=sessions_dir)
    await a.start()
    await b.start()
    created = await a.create(p.CreateParams(cwd="/work/project"))
    await a.append(p.AppendParams(created.session_id, entry=user_entry("root")))
    await b.open(p.OpenParams(created.path))
    yield a, b, created.session_id
    await a.stop()
    await b.stop()


@pytest.mark.parametrize("seed", range(6))
async def test_a_client_applying_deltas_always_holds_the_whole_context(daemons: Any, seed: int) -> None:
    a, b, sid = daemons
    run = Run(a, b, sid, seed)
    await run.check()
    for _ in range(40):
        await run.step()


async def test_a_turn_sends_only_its_messages_and_a_branch_resets(daemons: Any) -> None:
    a, _, sid = daemons
    held = HeldContext(sid)
    first = await a.context(held.request())
    assert first.reset is None and first.cursor is not None  # no `since`: everything, as before
    held.take(first)
    for entry in (user_entry("q"), assistant_entry("a")):
        await a.append(p.AppendParams(sid, entry=entry))
    appended = await a.append(p.AppendParams(sid, entry=tool_result_entry("r"), context=held.ask()))
    assert appended.context is not None and appended.context.reset is False
    assert [m["role"] for m in appended.context.messages] == ["user", "assistant", "toolResult"]
    held.take(appended.context)
    unchanged = await a.context(held.request())
    assert (unchanged.reset, unchanged.messages, unchanged.cursor) == (False, [], held.cursor)
    summary = await a.branch(p.BranchParams(sid, appended.id, summary="continued"))  # below the leaf: a delta
    continued = await a.context(held.request())
    assert continued.reset is False and [m["role"] for m in continued.messages] == ["branchSummary"]
    held.take(continued)
    await a.branch(p.BranchParams(sid, first.leaf_id))  # back to the root: not a continuation
    moved = await a.context(held.request())
    assert moved.reset is True and [m["content"] for m in moved.messages] == ["root"]
    assert summary.leaf_id == continued.leaf_id


async def test_a_cursor_from_another_session_or_a_forged_one_resets(daemons: Any) -> None:
    a, _, sid = daemons
    other = await a.create(p.CreateParams(cwd="/work/other"))
    await a.append(p.AppendParams(other.session_id, entry=user_entry("elsewhere")))
    foreign = (await a.context(p.ContextParams(other.session_id))).cursor
    mine = (await a.context(p.ContextParams(sid))).cursor or ""
    generation, count, _, check = mine.split(".")
    altered = [f"{generation}.0.a.{check}", f"{generation}.{count}.l.{check}", f"{generation}.\u0661.a.{check}"]
    for cursor in [foreign, "", "1.2.3", "a.b.c.d", "x" * 10_000, *altered]:
        answer = await a.context(p.ContextParams(sid, since=cursor))
        assert answer.reset is True and [m["content"] for m in answer.messages] == ["root"]


async def test_since_of_the_wrong_type_is_invalid_params(daemons: Any) -> None:
    a, _, sid = daemons
    with pytest.raises(Exception) as raised:
        await a.call("session/context", {"sessionId": sid, "since": 7})
    assert getattr(raised.value, "code", None) == -32602 and "since" in str(raised.value)


async def test_the_first_turn_of_a_new_session_is_a_delta_from_the_empty_context(daemons: Any) -> None:
    a, _, _ = daemons
    sid = (await a.create(p.CreateParams(cwd="/work/new"))).session_id
    held = HeldContext(sid)
    assert (await a.held_context(held)).messages == []
    first = await a.append(p.AppendParams(sid, entry=user_entry("first"), context=held.ask()))
    assert first.context is not None and first.context.reset is False
    assert [m["content"] for m in held.take(first.context).messages] == ["first"]
    assert held.messages == (await a.context(p.ContextParams(sid))).messages
