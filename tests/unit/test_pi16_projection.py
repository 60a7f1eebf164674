"""The context as pi 1.6 builds it (`buildSessionProjection`): compaction checkpoints, system
messages, context edits and null content, on both ways a context is read (entries decoded, and
messages passed on as the text they were written as) and through the cache of the leaf's context."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessiontree.jsonfmt import RawJson
from sessiontree.store import MemoryStorage, Session
from sessiontree.tree import ContextCache, build_context, convert_to_llm, project_entries
from support.messages import BASE_MS, assistant, entry, ts, user
from support.sessions import session_bytes

SYSTEM_AT_START = {
    "role": "system",
    "content": "You are a coding agent.",
    "sections": {"preamble": "You are a coding agent.", "cwd": "/w"},
    "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
    "timestamp": BASE_MS,
}
CHECKPOINT = {"role": "system", "content": "", "sections": {"preamble": "P", "cwd": "/w", "skills": "S"}, "timestamp": BASE_MS + 9000}


def _session(*entries: dict[str, Any]) -> Session:
    return Session.load(MemoryStorage(session_bytes(*entries)))


def _both(session: Session, leaf: str | None) -> list[Any]:
    """The context's messages read entry by entry and read as texts: they must be the same."""
    decoded = build_context(session.index, leaf, session.entry)
    as_texts = build_context(session.index, leaf, session.entry, session.messages_or_entries)
    assert as_texts.messages == decoded.messages
    return decoded.messages


def _shown(messages: list[Any]) -> list[str]:
    """One word per message: its role, and its text when it has one."""
    shown = []
    for message in messages:
        role, content = message["role"], message.get("content")
        if role in ("compactionSummary", "branchSummary"):
            shown.append(f"{role}:{message['summary']}")
        elif isinstance(content, str):
            shown.append(f"{role}:{content}")
        elif content:
            shown.append(f"{role}:{content[0].get('text')}")
        else:
            shown.append(f"{role}:{content!r}")
    return shown


def _system(entry_id: str, parent: str | None, second: int, **message: Any) -> dict[str, Any]:
    return entry("message", entry_id, parent, second, message={**SYSTEM_AT_START, **message})


def _edit(entry_id: str, parent: str, second: int, target: str, replacement: Any) -> dict[str, Any]:
    return entry("context_edit", entry_id, parent, second, targetId=target, replacement=replacement)


def _compaction(entry_id: str, parent: str, second: int, first_kept: str, **fields: Any) -> dict[str, Any]:
    return entry("compaction", entry_id, parent, second, summary="S", firstKeptEntryId=first_kept, tokensBefore=50, **fields)


# ----------------------------------------------------------------------------- compactions and system messages


def test_a_compaction_gives_its_checkpoint_then_its_summary() -> None:
    session = _session(
        _system("s0", None, 0),
        user("a", "s0", "q1", 1),
        assistant("b", "a", "a1", 2),
        user("c", "b", "q2", 3),
        _compaction("k", "c", 9, "c", systemMessage=CHECKPOINT),
        user("d", "k", "q3", 10),
    )
    messages = _both(session, "d")
    assert _shown(messages) == ["system:", "compactionSummary:S", "user:q2", "user:q3"]
    assert messages[0] == CHECKPOINT  # as stored, key for key


@pytest.mark.parametrize("checkpoint", [None, "", 0, False])
def test_a_falsy_checkpoint_gives_the_summary_alone(checkpoint: Any) -> None:
    session = _session(user("a", None, "q1", 1), _compaction("k", "a", 2, "a", systemMessage=checkpoint))
    assert _shown(_both(session, "k")) == ["compactionSummary:S", "user:q1"]


def test_system_messages_in_the_kept_range_are_folded_into_the_checkpoint() -> None:
    session = _session(
        _system("s0", None, 0),
        user("a", "s0", "q1", 1),
        _system("s1", "a", 2, content="patch one", sections={"cwd": "/x"}),
        user("b", "s1", "q2", 3),
        _compaction("k", "b", 4, "a", systemMessage=CHECKPOINT),
        _system("s2", "k", 5, content="patch after"),
        user("c", "s2", "q3", 6),
    )
    # s1 lies between firstKeptEntryId and the compaction: dropped; s2 comes after: kept
    assert _shown(_both(session, "c")) == [
        "system:", "compactionSummary:S", "user:q1", "user:q2", "system:patch after", "user:q3",
    ]


def test_without_a_compaction_system_messages_are_context_messages() -> None:
    session = _session(_system("s0", None, 0), user("a", "s0", "q1", 1), _system("s1", "a", 2, content="later"))
    messages = _both(session, "s1")
    assert _shown(messages) == ["system:You are a coding agent.", "user:q1", "system:later"]
    assert messages[0] == SYSTEM_AT_START


def test_an_older_compaction_in_the_kept_range_adds_nothing() -> None:
    session = _session(
        user("a", None, "q1", 1),
        _compaction("k1", "a", 2, "a", systemMessage=CHECKPOINT),
        user("b", "k1", "q2", 3),
        entry("compaction", "k2", "b", 4, summary="S2", firstKeptEntryId="a", tokensBefore=9),
    )
    assert _shown(_both(session, "k2")) == ["compactionSummary:S2", "user:q1", "user:q2"]
    projection = project_entries(session.index, "k2", session.entry)
    assert [(p.node.id, len(p.messages)) for p in projection.entries] == [("k2", 1), ("a", 1), ("k1", 0), ("b", 1)]


def test_a_compaction_that_keeps_nothing_points_at_itself() -> None:
    session = _session(user("a", None, "q1", 1), _compaction("k", "a", 2, "k"), user("b", "k", "q2", 3))
    assert _shown(_both(session, "b")) == ["compactionSummary:S", "user:q2"]


def test_llm_format_passes_system_messages_unchanged() -> None:
    messages = _both(_session(_system("s0", None, 0), user("a", "s0", "q1", 1)), "a")
    assert convert_to_llm(messages)[0] == SYSTEM_AT_START


# ----------------------------------------------------------------------------- context edits


def _edited_tree() -> Session:
    """q1 a1 q2, then two branches below q2, each editing a1 (and q1) its own way."""
    return _session(
        user("a", None, "q1", 1),
        assistant("b", "a", "a1", 2),
        user("c", "b", "q2", 3),
        _edit("e1", "c", 4, "b", {"content": [{"type": "text", "text": "first edit"}]}),
        _edit("e2", "e1", 5, "b", {"content": [{"type": "text", "text": "second edit"}]}),
        _edit("e3", "e2", 6, "a", {"content": "q1 edited"}),
        _edit("f1", "c", 7, "b", None),
        user("g", "f1", "other branch", 8),
    )


def test_the_latest_edit_on_the_branch_wins_and_edits_are_branch_relative() -> None:
    session = _edited_tree()
    assert _shown(_both(session, "c")) == ["user:q1", "assistant:a1", "user:q2"]
    assert _shown(_both(session, "e1")) == ["user:q1", "assistant:first edit", "user:q2"]
    assert _shown(_both(session, "e3")) == ["user:q1 edited", "assistant:second edit", "user:q2"]
    assert _shown(_both(session, "g")) == ["user:q1", "user:q2", "user:other branch"]  # null hides a1


def test_a_replacement_changes_only_the_content() -> None:
    session = _edited_tree()
    original = session.entry(session.index.get("b"))["message"]  # type: ignore[arg-type]
    edited = _both(session, "e2")[1]
    assert edited == {**original, "content": [{"type": "text", "text": "second edit"}]}
    assert list(edited) == list(original)  # the key keeps its place


def test_a_string_replacement_becomes_a_text_block_for_assistant_and_tool_results_only() -> None:
    result = {"role": "toolResult", "toolCallId": "t", "toolName": "read", "content": [], "isError": False, "timestamp": 1}
    session = _session(
        user("a", None, "q1", 1),
        entry("message", "r", "a", 2, message=result),
        entry("custom_message", "m", "r", 3, customType="note", content="c", display=True),
        _edit("e1", "m", 4, "r", {"content": "read failed"}),
        _edit("e2", "e1", 5, "m", {"content": "custom edited"}),
        _edit("e3", "e2", 6, "a", {"content": "plain"}),
    )
    messages = _both(session, "e3")
    assert [m["content"] for m in messages] == ["plain", [{"type": "text", "text": "read failed"}], "custom edited"]


def test_edits_summarised_away_do_not_apply_but_those_in_the_kept_range_do() -> None:
    session = _session(
        user("a", None, "q1", 1),
        _edit("e0", "a", 2, "a", None),  # before firstKeptEntryId: summarised, no longer selected
        user("b", "e0", "q2", 3),
        _edit("e1", "b", 4, "b", {"content": "q2 edited"}),  # in the kept range: applies
        _compaction("k", "e1", 5, "b"),
        user("c", "k", "q3", 6),
    )
    assert _shown(_both(session, "c")) == ["compactionSummary:S", "user:q2 edited", "user:q3"]
    keep_all = _session(*[{**e, "firstKeptEntryId": "a"} if e["id"] == "k" else e for e in session_entries(session)])
    assert _shown(_both(keep_all, "c")) == ["compactionSummary:S", "user:q2 edited", "user:q3"]  # e0 kept: q1 hidden
    hidden_first = _session(*[e for e in session_entries(session) if e["id"] != "k"])
    assert _shown(_both(hidden_first, "e1")) == ["user:q2 edited"]


def test_an_edit_of_a_compaction_with_null_hides_its_checkpoint_and_summary() -> None:
    session = _session(
        user("a", None, "q1", 1),
        _compaction("k", "a", 2, "a", systemMessage=CHECKPOINT),
        _edit("e", "k", 3, "k", None),
        _edit("e2", "e", 4, "k", {"content": "not a content edit for summaries"}),
    )
    assert _shown(_both(session, "e")) == ["user:q1"]
    assert _shown(_both(session, "e2")) == ["system:", "compactionSummary:S", "user:q1"]


def test_an_edit_with_no_usable_replacement_changes_nothing() -> None:
    session = _session(user("a", None, "q1", 1), entry("context_edit", "e", "a", 2, targetId="a"))
    assert _shown(_both(session, "e")) == ["user:q1"]


def test_edited_messages_are_made_others_stay_texts() -> None:
    session = _edited_tree()
    items = build_context(session.index, "e3", session.entry, session.messages_or_entries).wire_items()
    assert [type(item) is RawJson for item in items] == [False, False, True]


# ----------------------------------------------------------------------------- null content


def _message(entry_id: str, parent: str | None, **message: Any) -> dict[str, Any]:
    return entry("message", entry_id, parent, 1, message=message)


def test_null_or_missing_content_is_normalized_as_pi_does() -> None:
    session = _session(
        _message("s", None, role="system", content=None, timestamp=1),
        _message("u", "s", role="user", content=None, timestamp=2),
        _message("a", "u", role="assistant", timestamp=3, provider="p", model="m"),
        _message("t", "a", role="toolResult", toolCallId="x", content=None, timestamp=4),
        _message("x", "t", role="bashExecution", command="ls", timestamp=5),
        entry("custom_message", "m", "x", 6, customType="n", display=False),
        entry("custom_message", "m2", "m", 7, customType="n", content=None, display=False),
    )
    messages = _both(session, "m2")
    assert [m.get("content", "(absent)") for m in messages] == ["", [], [], [], "(absent)", [], []]
    assert list(messages[2]) == ["role", "timestamp", "provider", "model", "content"]  # JS spread: added last
    assert list(messages[5]) == ["role", "customType", "content", "display", "timestamp"]


def test_null_content_never_reaches_the_wire_as_written() -> None:
    session = _session(
        _message("u", None, role="user", content=None, timestamp=2),
        entry("message", "v", "u", 2, message={"role": "toolResult", "toolCallId": "x", "timestamp": 1}),
        user("w", "v", "fine", 3),
    )
    cache = ContextCache()
    cache.put(build_context(session.index, "w", session.entry, session.messages_or_entries))
    wire = json.loads(cache.messages_for_wire().wire)
    assert [m["content"] for m in wire] == [[], [], [{"type": "text", "text": "fine"}]]


@pytest.mark.parametrize(
    "text",
    [
        b'{"role":"user","content":null,"timestamp":1}',
        b'{"role":"user" , "content" : null}',
        b'{"timestamp":1,"role":"assistant"}',
        b'{"role":"toolResult","details":{"content":[1]},"content":null}',
        b'{"role":"toolResult","details":{"content":[1]}}',
    ],
)
def test_content_is_found_whatever_the_spacing_and_key_order(text: bytes) -> None:
    line = b'{"type":"message","id":"a","parentId":null,"timestamp":"' + ts(1).encode() + b'","message":' + text + b"}\n"
    header = session_bytes()
    session = Session.load(MemoryStorage(header + line))
    messages = build_context(session.index, "a", session.entry, session.messages_or_entries).messages
    assert messages[0]["content"] == []


# ----------------------------------------------------------------------------- the cache


def test_an_appended_edit_or_compaction_rebuilds_the_cached_context() -> None:
    session = _session(user("a", None, "q1", 1), assistant("b", "a", "a1", 2))
    cache = ContextCache()
    cache.put(build_context(session.index, "b", session.entry))
    for appended in (
        {"type": "context_edit", "targetId": "a", "replacement": {"content": "q1 edited"}},
        {"type": "compaction", "summary": "S", "firstKeptEntryId": "b", "tokensBefore": 1},
    ):
        written, _ = session.append([appended])
        cache.extend(written[0].node, written[0].entry)
        assert cache.get(written[0].node.id) is None
        cache.put(build_context(session.index, written[0].node.id, session.entry))
    cached = cache.get(session.index.leaf_id)
    assert cached is not None and _shown(cached.messages) == ["compactionSummary:S", "assistant:a1"]


def test_appended_system_messages_and_usage_extend_the_cached_context() -> None:
    session = _session(user("a", None, "q1", 1))
    cache = ContextCache()
    cache.put(build_context(session.index, "a", session.entry))
    appended = [
        {"type": "message", "message": {"role": "system", "content": None, "sections": {"x": "y"}, "timestamp": 2}},
        {"type": "usage", "kind": "cache_warm", "provider": "p", "model": "m", "usage": {"input": 1}},
        {"type": "message", "message": {"role": "user", "content": None, "timestamp": 3}},
    ]
    for item in appended:
        written, _ = session.append([item])
        cache.extend(written[0].node, written[0].entry)
    cached = cache.get(session.index.leaf_id)
    assert cached is not None
    assert cached.messages == build_context(session.index, session.index.leaf_id, session.entry).messages
    assert [m["content"] for m in cached.messages] == [[{"type": "text", "text": "q1"}], "", []]


def session_entries(session: Session) -> list[dict[str, Any]]:
    return [session.entry(node) for node in session.index.nodes]
