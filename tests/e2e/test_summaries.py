"""Compaction and branch summaries with the client's model in the loop, over real stdio.

A pytest-lsp client announces `capabilities.experimental.sessiontree.summarize` and answers
the daemon's `sessiontree/summarize` requests: promptly, never, with a cancellation, or
while it appends entries of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from support.lsp import make_client, server_command
from support.messages import user_entry
from support.timeouts import ANSWER_TIMEOUT, STARTUP_TIMEOUT, eventually

CWD = "/work/project"
SUMMARIZE = "sessiontree/summarize"
SETTINGS = {"reserveTokens": 1000, "keepRecentTokens": 90}  # the cut falls on the last user message
Responder = Callable[[dict[str, Any]], Any]


class Summariser:
    """The client's side: answers summarize requests with `respond`, records what it saw."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.cancelled: list[str] = []
        self.respond: Responder = lambda params: {"summary": "A short summary."}

    async def handle(self, params: dict[str, Any]) -> Any:
        self.requests.append(params)
        try:
            answer = self.respond(params)
            return await answer if asyncio.iscoroutine(answer) else answer
        except asyncio.CancelledError:
            self.cancelled.append(params["kind"])
            raise


async def start(sessions_dir: Path, summarize: bool) -> tuple[LanguageClient, Summariser]:
    summariser = Summariser()

    def factory() -> LanguageClient:
        client = make_client()

        async def summarize(params: Any) -> Any:
            return await summariser.handle(params)

        client.feature(SUMMARIZE)(summarize)
        return client

    config = ClientServerConfig(server_command=server_command(sessions_dir), client_factory=factory)
    client = await config.start()
    experimental = {"sessiontree": {"summarize": True}} if summarize else None
    initialize = types.InitializeParams(capabilities=types.ClientCapabilities(experimental=experimental))
    await asyncio.wait_for(client.initialize_session(initialize), STARTUP_TIMEOUT)
    return client, summariser


@pytest_asyncio.fixture
async def summarising(sessions_dir: Path) -> AsyncIterator[tuple[LanguageClient, Summariser]]:
    client, summariser = await start(sessions_dir, summarize=True)
    yield client, summariser
    await client.shutdown_session()
    await client.stop()


async def call(client: LanguageClient, method: str, params: Any) -> Any:
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), ANSWER_TIMEOUT)


def assistant(text: str, path: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if path is not None:
        content.append({"type": "toolCall", "id": "t1", "name": "edit", "arguments": {"path": path}})
    usage = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120}
    message = {"role": "assistant", "content": content, "api": "messages", "provider": "anthropic", "model": "claude"}
    return {"type": "message", "message": message | {"usage": usage, "stopReason": "stop", "timestamp": 2}}


async def conversation(client: LanguageClient, turns: int = 4) -> tuple[str, list[str]]:
    session_id = (await call(client, "session/create", {"cwd": CWD}))["sessionId"]
    ids = []
    for turn in range(turns):
        for entry in (user_entry(f"Question {turn}: " + "why " * 30), assistant(f"Answer {turn}: " + "because " * 30, f"src/{turn}.py")):
            ids.append((await call(client, "session/append", {"sessionId": session_id, "entry": entry}))["id"])
    return session_id, ids


async def entries(client: LanguageClient, session_id: str) -> list[dict[str, Any]]:
    return (await call(client, "session/entries", {"sessionId": session_id, "since": None}))["entries"]


async def test_compact_round_trip_commits_the_clients_summary(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, ids = await conversation(client)
    result = await call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS, "workDoneToken": "c1"})
    [request] = summariser.requests
    prepared = request["compaction"]
    assert request["kind"] == "compaction" and prepared["leafId"] == ids[-1]
    assert prepared["historyPrompt"]["prompt"].startswith("<conversation>\n[User]: Question 0")
    entry = result["entry"]
    assert entry["type"] == "compaction" and entry["parentId"] == ids[-1] and result["leafId"] == entry["id"]
    assert entry["firstKeptEntryId"] == prepared["firstKeptEntryId"] and entry["fromHook"] is False
    assert entry["summary"].startswith("A short summary.\n\n<modified-files>\nsrc/0.py")
    kinds = [report.kind for report in client.progress_reports.get("c1", [])]
    assert kinds == ["begin", "end"]
    context = await call(client, "session/context", {"sessionId": session_id})
    assert context["messages"][0]["role"] == "compactionSummary"


async def test_the_request_is_pi_1_6s_and_the_answers_usage_is_stored(summarising: tuple[LanguageClient, Summariser]) -> None:
    """The prompt as a leading system message plus the user message, the session's thinking level,
    no output cap; the usage the client reports lands on the entry, after details."""
    client, summariser = summarising
    session_id, _ = await conversation(client)
    thinking = {"type": "thinking_level_change", "thinkingLevel": "high"}
    await call(client, "session/append", {"sessionId": session_id, "entry": thinking})
    usage = {"input": 900, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 940}
    summariser.respond = lambda params: {"summary": "A short summary.", "usage": usage}
    result = await call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS})
    prompt = summariser.requests[0]["compaction"]["historyPrompt"]
    assert "maxTokens" not in prompt and prompt["thinkingLevel"] == "high"
    system, user = prompt["messages"]
    assert system == {"role": "system", "content": prompt["systemPrompt"], "timestamp": 0}
    assert user["role"] == "user" and user["content"] == [{"type": "text", "text": prompt["prompt"]}]
    entry = result["entry"]
    assert entry["usage"] == usage and list(entry)[-3:] == ["details", "usage", "fromHook"]


async def test_a_split_turn_needs_both_answers(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id = (await call(client, "session/create", {"cwd": CWD}))["sessionId"]
    for entry in (user_entry("Do it all."), assistant("step " * 80, "a.py"), assistant("more " * 80, "b.py"), assistant("done " * 80)):
        await call(client, "session/append", {"sessionId": session_id, "entry": entry})
    settings = SETTINGS | {"keepRecentTokens": 40}
    summariser.respond = lambda params: {"summary": "History only."}
    with pytest.raises(JsonRpcException) as caught:
        await call(client, "session/compact", {"sessionId": session_id, "settings": settings})
    assert (caught.value.code, caught.value.data["reason"]) == (-32021, "malformed")
    summariser.respond = lambda params: {"summary": "History.", "turnPrefixSummary": "The turn began."}
    result = await call(client, "session/compact", {"sessionId": session_id, "settings": settings})
    prepared = summariser.requests[-1]["compaction"]
    assert prepared["isSplitTurn"] and "historyPrompt" not in prepared and "turnPrefixPrompt" in prepared
    assert result["entry"]["summary"].startswith("No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nThe turn began.")


async def test_a_client_that_cancels_compact_leaves_the_file_alone(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, _ = await conversation(client)
    before = await entries(client, session_id)
    asked = asyncio.Event()

    async def never(params: dict[str, Any]) -> Any:
        asked.set()
        await asyncio.sleep(60)  # a summariser that never answers (cancelled long before)

    summariser.respond = never
    params = {"sessionId": session_id, "settings": SETTINGS}
    pending = asyncio.ensure_future(client.protocol.send_request_async("session/compact", params, msg_id="compact-1"))
    await asyncio.wait_for(asked.wait(), ANSWER_TIMEOUT)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="compact-1"))
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(pending, ANSWER_TIMEOUT)
    assert caught.value.code == -32800
    await eventually(lambda: bool(summariser.cancelled), "the daemon's $/cancelRequest reaching the summariser")
    assert summariser.cancelled == ["compaction"]  # our $/cancelRequest reached the client's summariser
    assert await entries(client, session_id) == before


async def test_a_client_that_cancels_its_summary_cancels_the_request(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, _ = await conversation(client)

    def refuse(params: dict[str, Any]) -> Any:
        raise JsonRpcException.from_error(types.ResponseError(code=-32800, message="user pressed escape"))

    summariser.respond = refuse
    with pytest.raises(JsonRpcException) as caught:
        await call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS})
    assert caught.value.code == -32800
    assert all(e["type"] != "compaction" for e in await entries(client, session_id))


async def test_a_client_that_never_answers_times_out(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, _ = await conversation(client)
    before = await entries(client, session_id)

    async def never(params: dict[str, Any]) -> Any:
        await asyncio.sleep(60)  # a summariser that never answers (cancelled long before)

    summariser.respond = never
    with pytest.raises(JsonRpcException) as caught:
        await call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS, "timeoutMs": 300})
    assert (caught.value.code, caught.value.data["reason"]) == (-32021, "timeout")
    await eventually(lambda: bool(summariser.cancelled), "the daemon's $/cancelRequest reaching the summariser")
    assert summariser.cancelled == ["compaction"]
    assert await entries(client, session_id) == before


async def test_a_malformed_answer_fails_without_writing(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, _ = await conversation(client)
    summariser.respond = lambda params: {"summary": 42}
    with pytest.raises(JsonRpcException) as caught:
        await call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS})
    assert (caught.value.code, caught.value.data["reason"]) == (-32021, "malformed")
    assert all(e["type"] != "compaction" for e in await entries(client, session_id))


async def test_appends_racing_a_compaction_are_kept(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, ids = await conversation(client)
    raced: list[str] = []

    async def append_meanwhile(params: dict[str, Any]) -> Any:
        for text in ("meanwhile one", "meanwhile two"):
            raced.append((await call(client, "session/append", {"sessionId": session_id, "entry": user_entry(text)}))["id"])
        return {"summary": "Summary."}

    summariser.respond = append_meanwhile
    result = await call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS})
    entry = result["entry"]
    assert entry["parentId"] == raced[-1]  # below what was appended meanwhile, nothing re-parented
    by_id = {e["id"]: e for e in await entries(client, session_id)}
    assert by_id[raced[0]]["parentId"] == ids[-1] and by_id[raced[1]]["parentId"] == raced[0]
    context = await call(client, "session/context", {"sessionId": session_id})
    texts = [m.get("content") for m in context["messages"]]
    assert texts[-2:] == ["meanwhile one", "meanwhile two"]


async def test_a_compaction_prepared_before_a_branch_move_conflicts(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, _ = summarising
    session_id, ids = await conversation(client)
    prepared = await call(client, "session/prepareCompaction", {"sessionId": session_id, "settings": SETTINGS})
    await call(client, "session/branch", {"sessionId": session_id, "entryId": ids[1]})
    with pytest.raises(JsonRpcException) as caught:
        commit = {"sessionId": session_id, "leafId": prepared["leafId"], "summary": "late", "settings": SETTINGS}
        await call(client, "session/commitCompaction", commit)
    assert caught.value.code == -32018 and caught.value.data["currentLeafId"] == ids[1]


async def test_navigate_summarises_the_branch_left(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, ids = await conversation(client)
    summariser.respond = lambda params: {"summary": "Explored answers."}
    result = await call(client, "session/navigate", {"sessionId": session_id, "targetId": ids[1]})
    [request] = summariser.requests
    assert request["kind"] == "branchSummary" and request["branchSummary"]["entryIds"] == ids[2:]
    entry = result["entry"]
    # pi 1.6: fromId is the leaf left behind, whose abandoned path was summarised
    assert entry["type"] == "branch_summary" and entry["parentId"] == ids[1] and entry["fromId"] == ids[-1]
    assert entry["summary"].startswith("The user explored a different conversation branch before returning here.")
    assert "Explored answers.\n\n<modified-files>\nsrc/1.py" in entry["summary"]
    target_user = await call(client, "session/navigate", {"sessionId": session_id, "targetId": ids[2]})
    assert target_user["editorText"].startswith("Question 1") and target_user["entry"]["parentId"] == ids[1]


async def test_without_the_capability_the_daemon_does_not_ask(sessions_dir: Path) -> None:
    client, summariser = await start(sessions_dir, summarize=False)
    try:
        session_id, _ = await conversation(client)
        with pytest.raises(JsonRpcException) as caught:
            await call(client, "session/compact", {"sessionId": session_id})
        assert caught.value.code == -32020 and summariser.requests == []
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_other_requests_are_answered_while_a_summary_is_pending(summarising: tuple[LanguageClient, Summariser]) -> None:
    client, summariser = summarising
    session_id, _ = await conversation(client)
    release = asyncio.Event()

    async def slow(params: dict[str, Any]) -> Any:
        await release.wait()
        return {"summary": "Later."}

    summariser.respond = slow
    pending = asyncio.ensure_future(call(client, "session/compact", {"sessionId": session_id, "settings": SETTINGS}))
    info = await asyncio.wait_for(call(client, "session/info", {"sessionId": session_id}), 5)
    assert info["sessionId"] == session_id and not pending.done()
    release.set()
    assert (await asyncio.wait_for(pending, 5))["entry"]["summary"].startswith("Later.")
