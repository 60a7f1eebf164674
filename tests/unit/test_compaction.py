"""Compaction and branch summaries as pi 1.6.0 computes and writes them, case by case.

The conformance suite compares thousands of generated leaves with pi's own code; these
name the rules one at a time, each on the smallest session that shows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree import protocol as p
from sessiontree.entries import iso_to_ms
from sessiontree.errors import NothingToCompact
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.summary_types import CompactionSettings
from sessiontree.tree import prompts
from sessiontree.tree.compaction import Preparation, compose_summary, find_cut_point
from sessiontree.tree.summary_text import FileOps, serialize_conversation, slice_head, turn_prefix_prompt
from sessiontree.tree.system_state import current_system_message
from sessiontree.tree.tokens import estimate_context_tokens, estimate_tokens

CWD = "/home/user/project"
IMAGE = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
SMALL = CompactionSettings(True, 100, 10)


@pytest.fixture
def service(tmp_path: Path) -> SessionService:
    return SessionService(ServiceConfig(tmp_path))


def _msg(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": [{"type": "text", "text": text}], **extra}}


def _system(content: str, timestamp: int, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "system", "content": content, "timestamp": timestamp, **extra}}


def _usage(total: int) -> dict[str, Any]:
    return {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total}


def _reply(text: str, total: int) -> dict[str, Any]:
    return _msg("assistant", text, usage=_usage(total), stopReason="stop", timestamp=1)


def _session(service: SessionService, *entries: dict[str, Any]) -> tuple[str, list[str]]:
    sid = service.create(p.CreateParams(CWD)).session_id
    ids = [service.append(p.AppendParams(sid, entry=entry)).id for entry in entries]
    return sid, ids


# --------------------------------------------------------------------------- token estimates


def test_an_image_in_a_user_message_counts_1200_tokens() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "x" * 62}, IMAGE]}
    assert estimate_tokens(message) == 1216


def test_a_system_message_counts_its_text_sections_and_tools() -> None:
    tools = [{"name": "read", "parameters": {"type": "object"}}]
    message = {"role": "system", "content": "abcd", "sections": {"a": "efgh", "b": None}, "toolsAdded": tools}
    tools_chars = len('[{"name":"read","parameters":{"type":"object"}}]')
    assert estimate_tokens(message) == -(-(8 + tools_chars) // 4)


def test_usage_that_counts_nothing_is_skipped_for_the_one_before() -> None:
    zero = {"role": "assistant", "content": [], "usage": _usage(0) | {"input": 0}, "stopReason": "stop"}
    valid = {"role": "assistant", "content": [], "usage": _usage(500), "stopReason": "stop"}
    found = estimate_context_tokens([valid, zero])
    assert (found.tokens, found.last_usage_index) == (500, 0)


def test_usage_before_a_context_edit_no_longer_counts(service: SessionService) -> None:
    sid, ids = _session(service, _msg("user", "q" * 40), _reply("a" * 40, 90_000))
    before = service.context(p.ContextParams(sid, context_window=1000, settings=SMALL)).compaction
    assert before is not None and before.context_tokens == 90_000 and before.should_compact
    service.append(p.AppendParams(sid, entry={"type": "context_edit", "targetId": ids[0], "replacement": None}))
    advice = service.context(p.ContextParams(sid, context_window=1000, settings=SMALL)).compaction
    assert advice is not None and advice.context_tokens == 10 and not advice.should_compact


# --------------------------------------------------------------------------- cut points


def _entry(kind: str, entry_id: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z", **fields}


def test_custom_messages_count_towards_the_kept_tokens_and_open_a_turn() -> None:
    path = [
        _entry("message", "1", message={"role": "user", "content": "q" * 400}),
        _entry("message", "2", message={"role": "assistant", "content": [{"type": "text", "text": "a" * 400}]}),
        _entry("custom_message", "3", customType="note", content="n" * 400, display=True),
        _entry("message", "4", message={"role": "assistant", "content": [{"type": "text", "text": "b"}]}),
    ]
    cut = find_cut_point(path, 0, len(path), 100)
    assert (cut.first_kept_index, cut.turn_start_index, cut.is_split_turn) == (2, -1, False)


def test_trailing_tool_results_over_the_budget_cut_at_the_last_cut_point() -> None:
    result = {"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": [{"type": "text", "text": "r" * 800}]}
    path = [
        _entry("message", "1", message={"role": "user", "content": "q"}),
        _entry("message", "2", message={"role": "assistant", "content": [{"type": "toolCall", "name": "read", "arguments": {}}]}),
        _entry("message", "3", message=result),
    ]
    cut = find_cut_point(path, 0, len(path), 100)
    assert (cut.first_kept_index, cut.turn_start_index, cut.is_split_turn) == (1, 0, True)


def test_nothing_before_the_kept_part_is_nothing_to_compact(service: SessionService) -> None:
    sid, ids = _session(service, _msg("user", "q" * 400), _reply("a", 10))
    settings = CompactionSettings(True, 100, 50)
    assert service.prepare_compaction(p.PrepareCompactionParams(sid, settings=settings)) is None
    with pytest.raises(NothingToCompact):
        service.commit_compaction(p.CommitCompactionParams(sid, ids[-1], "s", settings=settings))


# --------------------------------------------------------------------------- prompts and texts


def test_serialization_drops_thinking_and_never_cuts_a_surrogate_pair() -> None:
    thinking = {"type": "thinking", "thinking": "secret"}
    assistant = {"role": "assistant", "content": [thinking, {"type": "text", "text": "shown"}]}
    tool = {"role": "toolResult", "content": [{"type": "text", "text": "x" * 1999 + "😀" + "y"}]}
    text = serialize_conversation([assistant, tool])
    assert "secret" not in text and "[Assistant]: shown" in text
    assert text.endswith("[Tool result]: " + "x" * 1999 + "\n\n[... 2 more characters truncated]")
    assert slice_head("ab😀", 3) == "ab" and slice_head("ab😀", 4) == "ab😀"


def test_the_turn_prefix_prompt_is_1_6s_with_the_custom_focus() -> None:
    prompt = turn_prefix_prompt([{"role": "user", "content": "hi", "timestamp": 0}], "the tests")
    assert prompt.prompt == f"# Conversation\n[User]: hi\n\n# Instructions\n{prompts.TURN_PREFIX_PROMPT}\n\nAdditional focus: the tests"
    system, user = prompt.messages
    assert system == {"role": "system", "content": prompts.SYSTEM_PROMPT, "timestamp": 0}
    assert user["content"] == [{"type": "text", "text": prompt.prompt}]
    assert "AI assistant, then" in prompts.SYSTEM_PROMPT


def test_a_split_turn_with_nothing_new_keeps_the_previous_summary_as_history() -> None:
    prep = Preparation("k", [], [{"role": "user", "content": "q"}], True, 0, "Earlier work.", FileOps(), SMALL)
    summary, _ = compose_summary(prep, "", "the prefix")
    assert summary == "Earlier work.\n\n---\n\n**Turn Context (split turn):**\n\nthe prefix"
    without = Preparation("k", [], [{"role": "user", "content": "q"}], True, 0, None, FileOps(), SMALL)
    assert compose_summary(without, "", "p")[0].startswith("No prior history.")


def test_system_messages_replay_into_one() -> None:
    first = {"role": "system", "content": "base", "sections": {"cwd": "/a", "skills": "s"}, "timestamp": 5,
             "toolsAdded": [{"name": "read"}, {"name": "grep"}]}
    patch = {"role": "system", "content": "", "sections": {"skills": None, "10": "ten"}, "timestamp": 9,
             "toolsRemoved": [{"name": "grep"}], "toolsAdded": [{"name": "edit"}]}
    assert current_system_message([first, {"role": "user", "content": "q"}, patch]) == {
        "role": "system",
        "content": "base",
        "sections": {"10": "ten", "cwd": "/a"},
        "toolsAdded": [{"name": "read"}, {"name": "edit"}],
        "timestamp": 5,
    }
    assert current_system_message([{"role": "user", "content": "q"}]) is None


# --------------------------------------------------------------------------- what is written


def test_a_compaction_carries_the_system_checkpoint_and_the_usage(service: SessionService) -> None:
    tools = [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]
    sid, _ = _session(
        service,
        _system("You are pi.", 1, sections={"cwd": "/a"}, toolsAdded=tools),
        _msg("user", "q" * 400),
        _reply("a" * 400, 300),
        _system("", 2, sections={"cwd": "/b"}),
        _msg("user", "second " * 12),
        _reply("b", 310),
    )
    prepared = service.prepare_compaction(p.PrepareCompactionParams(sid, settings=SMALL))
    assert prepared is not None and prepared.history_prompt is not None
    assert all(m["role"] != "system" for m in prepared.messages_to_summarize)
    usage = _usage(42)
    committed = service.commit_compaction(p.CommitCompactionParams(sid, prepared.leaf_id, "sum", settings=SMALL, usage=usage))
    entry = committed.entry
    assert list(entry)[4:] == ["summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook", "systemMessage"]
    assert entry["usage"] == usage
    assert entry["systemMessage"] == {
        "role": "system",
        "content": "You are pi.",
        "sections": {"cwd": "/b"},
        "toolsAdded": tools,
        "timestamp": iso_to_ms(entry["timestamp"]),
    }
    context = service.context(p.ContextParams(sid)).messages
    assert [m["role"] for m in context[:2]] == ["system", "compactionSummary"]
    # A path with no system message gets no checkpoint, and no usage when the client sent none.
    plain, _ = _session(service, _msg("user", "q" * 400), _reply("a" * 400, 300), _msg("user", "again " * 12), _reply("b", 1))
    prepared = service.prepare_compaction(p.PrepareCompactionParams(plain, settings=SMALL))
    assert prepared is not None
    entry = service.commit_compaction(p.CommitCompactionParams(plain, prepared.leaf_id, "sum", settings=SMALL)).entry
    assert "systemMessage" not in entry and "usage" not in entry


def test_a_branch_summary_names_the_leaf_left_and_honours_context_edits(service: SessionService) -> None:
    sid, ids = _session(
        service, _msg("user", "q"), _reply("a", 1), _msg("user", "hidden branch"), _reply("kept branch", 5)
    )
    service.append(p.AppendParams(sid, entry={"type": "context_edit", "targetId": ids[2], "replacement": None}))
    leaf = service.info(p.SessionParams(sid)).leaf_id
    prepared = service.prepare_branch_summary(p.PrepareBranchSummaryParams(sid, ids[1]))
    assert prepared.prompt is not None and "hidden branch" not in prepared.prompt.prompt
    assert "kept branch" in prepared.prompt.prompt
    committed = service.commit_branch_summary(
        p.CommitBranchSummaryParams(sid, ids[1], prepared.from_id, "left", usage=_usage(7))
    )
    entry = committed.entry
    assert entry is not None and entry["fromId"] == leaf and entry["parentId"] == ids[1]
    assert list(entry)[4:] == ["fromId", "summary", "details", "usage", "fromHook"]
