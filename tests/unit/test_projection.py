"""pi's buildSessionContext and convertToLlm, rule by rule."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from sessiontree.jsonfmt import RawJson
from sessiontree.store import MemoryStorage, Session
from sessiontree.tree import ContextCache, build_context, convert_to_llm
from sessiontree.tree.projection import Context, _select_by_walking, fill_context
from support.messages import assistant, line, ts, user
from support.sessions import session_bytes


def _session(*entries: dict[str, Any]) -> Session:
    return Session.load(MemoryStorage(session_bytes(*entries)))


def _context(session: Session, leaf: str | None) -> Any:
    return build_context(session.index, leaf, session.entry)


def _texts(messages: list[Any]) -> list[str]:
    out = []
    for m in messages:
        if m["role"] in ("compactionSummary", "branchSummary"):
            out.append(f"{m['role']}:{m['summary']}")
        else:
            content = m["content"]
            out.append(content if isinstance(content, str) else content[0]["text"])
    return out


def test_null_leaf_is_the_empty_context() -> None:
    session = _session(user("a", None, "q"))
    context = _context(session, None)
    assert (context.messages, context.thinking_level, context.model) == ([], "off", None)


def test_only_the_path_to_the_leaf_is_projected() -> None:
    session = _session(
        user("a", None, "q1", 1),
        assistant("b", "a", "a1", 2),
        user("c", "b", "abandoned", 3),
        user("d", "b", "kept", 4),
    )
    assert _texts(_context(session, "d").messages) == ["q1", "a1", "kept"]
    assert _texts(_context(session, "c").messages) == ["q1", "a1", "abandoned"]


def test_settings_are_the_last_on_the_path_and_assistant_messages_set_the_model() -> None:
    session = _session(
        {"type": "thinking_level_change", "id": "t", "parentId": None, "timestamp": ts(1), "thinkingLevel": "high"},
        {"type": "model_change", "id": "m", "parentId": "t", "timestamp": ts(2), "provider": "openai", "modelId": "g"},
        user("a", "m", "q", 3),
        assistant("b", "a", "x", 4, model="claude"),
        {"type": "model_change", "id": "m2", "parentId": "a", "timestamp": ts(5), "provider": "p", "modelId": "z"},
    )
    at_b = _context(session, "b")
    assert at_b.thinking_level == "high"
    assert at_b.model == {"provider": "anthropic", "modelId": "claude"}
    assert _context(session, "m2").model == {"provider": "p", "modelId": "z"}
    assert _context(session, "a").model == {"provider": "openai", "modelId": "g"}


def test_compaction_summary_then_kept_entries_then_the_rest() -> None:
    session = _session(
        user("a", None, "q1", 1),
        assistant("b", "a", "a1", 2),
        user("c", "b", "q2", 3),
        assistant("d", "c", "a2", 4),
        {"type": "compaction", "id": "k", "parentId": "d", "timestamp": ts(5), "summary": "S",
         "firstKeptEntryId": "c", "tokensBefore": 123},
        user("e", "k", "q3", 6),
    )
    context = _context(session, "e")
    assert _texts(context.messages) == ["compactionSummary:S", "q2", "a2", "q3"]
    assert context.messages[0] == {
        "role": "compactionSummary", "summary": "S", "tokensBefore": 123, "timestamp": 1735689605000,
    }
    assert context.model == {"provider": "anthropic", "modelId": "m1"}  # from before the compaction


def test_the_last_compaction_on_the_path_wins_and_an_unknown_first_kept_drops_history() -> None:
    session = _session(
        user("a", None, "q1", 1),
        {"type": "compaction", "id": "k1", "parentId": "a", "timestamp": ts(2), "summary": "S1",
         "firstKeptEntryId": "a", "tokensBefore": 1},
        user("b", "k1", "q2", 3),
        {"type": "compaction", "id": "k2", "parentId": "b", "timestamp": ts(4), "summary": "S2",
         "firstKeptEntryId": "nope", "tokensBefore": 2},
        user("c", "k2", "q3", 5),
    )
    assert _texts(_context(session, "c").messages) == ["compactionSummary:S2", "q3"]


def test_custom_messages_and_branch_summaries_become_messages() -> None:
    session = _session(
        user("a", None, "q", 1),
        {"type": "custom_message", "customType": "ext", "content": "hi", "display": True,
         "id": "c", "parentId": "a", "timestamp": ts(2)},
        {"type": "branch_summary", "id": "s", "parentId": "c", "timestamp": ts(3), "fromId": "x", "summary": "went"},
        {"type": "branch_summary", "id": "s2", "parentId": "s", "timestamp": ts(4), "fromId": "x", "summary": ""},
        {"type": "custom", "customType": "state", "data": {}, "id": "z", "parentId": "s2", "timestamp": ts(5)},
        {"type": "label", "id": "l", "parentId": "z", "timestamp": ts(6), "targetId": "a", "label": "L"},
    )
    messages = _context(session, "l").messages
    assert messages[1] == {
        "role": "custom", "customType": "ext", "content": "hi", "display": True, "timestamp": 1735689602000,
    }
    assert messages[2] == {"role": "branchSummary", "summary": "went", "fromId": "x", "timestamp": 1735689603000}
    assert len(messages) == 3  # empty summary, custom and label entries add nothing


def test_convert_to_llm_matches_pi() -> None:
    bash = {"role": "bashExecution", "command": "ls", "output": "a\nb", "exitCode": 2, "cancelled": False,
            "truncated": True, "fullOutputPath": "/tmp/o", "timestamp": 5}
    messages = [
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 1},
        {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 2},
        {"role": "custom", "customType": "t", "content": "c", "display": True, "timestamp": 3},
        bash,
        {**bash, "excludeFromContext": True},
        {"role": "user", "content": "u", "timestamp": 6},
        {"role": "mystery", "timestamp": 7},
    ]
    llm = convert_to_llm(messages)
    texts = [m["content"][0]["text"] if isinstance(m["content"], list) else m["content"] for m in llm]
    assert texts == [
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\nS\n</summary>",
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nB</summary>",
        "c",
        "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2\n\n[Output truncated. Full output: /tmp/o]",
        "u",
    ]
    assert all(m["role"] == "user" for m in llm)


def test_cycles_end_the_walk_with_a_warning_instead_of_hanging() -> None:
    session = _session(user("a", "b", "qa", 1), user("b", "a", "qb", 2), user("c", "b", "qc", 3))
    context = _context(session, "c")
    assert _texts(context.messages) == ["qa", "qb", "qc"]
    assert [w.kind for w in context.warnings] == ["cycle"]


def test_the_cache_extends_the_leaf_context_exactly_as_a_rebuild_would() -> None:
    session = _session(user("a", None, "q1", 1), assistant("b", "a", "a1", 2))
    cache = ContextCache()
    cache.put(_context(session, "b"))
    appended = [
        {"type": "thinking_level_change", "thinkingLevel": "low"},
        {"type": "message", "message": {"role": "user", "content": "q2", "timestamp": 3}},
        {"type": "custom_message", "customType": "t", "content": "c", "display": False},
        {"type": "model_change", "provider": "p", "modelId": "m"},
    ]
    for entry in appended:
        written, _ = session.append([entry])
        cache.extend(written[0].node, written[0].entry)
    cached = cache.get(session.index.leaf_id)
    rebuilt = _context(session, session.index.leaf_id)
    assert cached is not None
    assert (cached.messages, cached.thinking_level, cached.model) == (
        rebuilt.messages, rebuilt.thinking_level, rebuilt.model,
    )


def test_the_cache_is_dropped_by_a_compaction_and_ignores_other_branches() -> None:
    session = _session(user("a", None, "q1", 1), assistant("b", "a", "a1", 2))
    cache = ContextCache()
    cache.put(_context(session, "b"))
    written, _ = session.append([{"type": "custom", "customType": "x"}], parent="a")
    cache.extend(written[0].node, written[0].entry)
    assert cache.get("b") is not None  # still right for its own leaf
    written, _ = session.append(
        [{"type": "compaction", "summary": "S", "firstKeptEntryId": "a", "tokensBefore": 1}], parent="b"
    )
    cache.extend(written[0].node, written[0].entry)
    assert cache.get(written[0].node.id) is None


@pytest.mark.parametrize("seed", range(40))
def test_anchored_contexts_equal_walking_the_whole_path(seed: int) -> None:
    """The fast path (anchors carried down from the parents) against the safe walk, on random trees
    with settings, compactions and, for some seeds, lines out of order or ids used twice."""
    rng = random.Random(seed)
    entries: list[dict[str, Any]] = []
    for n in range(60):
        parent = rng.choice([None, *[e["id"] for e in entries[-8:]]]) if entries and rng.random() < 0.97 else None
        entry_id = f"{n:08x}"
        kind = rng.random()
        if kind < 0.1:
            entries.append({"type": "thinking_level_change", "id": entry_id, "parentId": parent, "timestamp": ts(n), "thinkingLevel": rng.choice(["low", "high"])})
        elif kind < 0.2 and entries:
            entries.append({"type": "compaction", "id": entry_id, "parentId": parent, "timestamp": ts(n), "summary": f"s{n}",
                            "firstKeptEntryId": rng.choice([e["id"] for e in entries] + ["missing"]), "tokensBefore": n})
        elif kind < 0.3:
            entries.append({"type": "model_change", "id": entry_id, "parentId": parent, "timestamp": ts(n), "provider": "p", "modelId": entry_id})
        else:
            maker = assistant if rng.random() < 0.5 else user
            entries.append(maker(entry_id, parent, f"m{n}", n))
    if seed % 3 == 1:
        rng.shuffle(entries)  # children before their parents: orphans until the parent turns up
    if seed % 3 == 2:
        entries.append({**entries[rng.randrange(len(entries))], "id": entries[rng.randrange(len(entries))]["id"]})
    session = _session(*entries)
    for node in session.index.nodes:
        fast = build_context(session.index, node.id, session.entry)
        walked = Context(node.id)
        chosen = _select_by_walking(walked, session.index, node.id, session.entry)
        slow = fill_context(walked, chosen, session.entry, session.messages_or_entries)
        assert (fast.messages, fast.thinking_level, fast.model) == (slow.messages, slow.thinking_level, slow.model)


def _odd_message_lines() -> bytes:
    """Message lines a context may pass on as their text, and lines it must decode: a message key
    written twice, a lone surrogate escape, broken UTF-8, a message that is not an object, spacing
    and escapes another writer uses, a number JavaScript would round, a custom message between."""
    lines = [
        line(user("a", None, "plain", 1)),
        b'{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"user","content":"first"},'
        b'"message":{"role":"user","content":"second wins"}}\n',
        b'{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"user","content":"\\ud800 lone"}}\n',
        b'{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"user","content":"broken \xff utf-8"}}\n',
        b'{"type":"message","id":"e","parentId":"d","timestamp":"t","message":"not an object"}\n',
        b'{ "type" : "message", "id" : "f", "parentId" : "e", "timestamp" : "t",\t"message" : { "role" : "user", "content" : "sp\\u00e9ced \\/" } }\n',
        b'{"type":"message","id":"g","parentId":"f","timestamp":"t","message":{"role":"user","content":"n","n":12345678901234567}}\n',
        line({"type": "custom_message", "id": "h", "parentId": "g", "timestamp": "t", "customType": "x", "content": "c", "display": True}),
        line(assistant("i", "h", "é, as written", 9)),
    ]
    return line({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}) + b"".join(lines)


def test_messages_kept_as_their_text_are_the_messages_the_entries_decode_to() -> None:
    """A context passes a message on as the bytes it was written as when that is safe, and
    decodes the rest: the wire carries the same JSON values as decoding every entry gives."""
    session = Session.load(MemoryStorage(_odd_message_lines()))
    leaf = build_context(session.index, "i", session.entry, session.messages_or_entries)
    # a, b, f, g and i go as written; c (lone surrogate), d (broken UTF-8) and h (custom) decoded
    assert [type(item) is RawJson for item in leaf.wire_items()] == [True, True, False, False, True, True, False, True]
    assert leaf.wire_items()[1].text == b'{"role":"user","content":"second wins"}'
    for node in session.index.nodes:
        careful = build_context(session.index, node.id, session.entry)
        kept = build_context(session.index, node.id, session.entry, session.messages_or_entries)
        cache = ContextCache()
        cache.put(kept)
        wire = json.loads(cache.messages_for_wire().wire)
        assert wire == json.loads(json.dumps(careful.messages))
        assert (kept.warnings, kept.messages) == (careful.warnings, careful.messages)
