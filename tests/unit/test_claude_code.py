"""Claude Code's sessions read as pi sessions: over real files of Claude Code 2.1.197
(tests/fixtures/claude-code), and rule by rule over small made-up lines."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.agents import Source, Translation
from sessiontree.agents.claude_code import ClaudeCodeTranslator
from sessiontree.store import MemoryStorage, Session
from sessiontree.tree import build_context
from support.messages import line

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code"
PROJECT = CORPUS / "projects" / "-home-user-project"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["sessions"]
LINEAR = MANIFEST["linear"]["id"]
TRANSLATOR = ClaudeCodeTranslator()
SOURCES = TRANSLATOR.discover(CORPUS / "projects")
# A real file written out of order (formats.md §1.5): the first response before its prompt.
RACE = TRANSLATOR.discover(CORPUS / "tui-race" / "projects")
EVERY = [*SOURCES, *RACE]


def _translate_bytes(data: bytes, path: Path = PROJECT / "s.jsonl") -> Translation:
    source = Source("claude-code", path, path.stem, (path,))
    return TRANSLATOR.translate(source, lambda _: data)


def _translate(source: Source) -> Translation:
    return TRANSLATOR.translate(source, Path.read_bytes)


def _raw(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text().splitlines() if text.strip()]


def _context(translation: Translation) -> list[dict[str, Any]]:
    """What pi sends the model for the translation at its leaf (the daemon's own projection)."""
    data = line(translation.header) + b"".join(line(entry) for entry in translation.entries)
    session = Session.load(MemoryStorage(data))
    messages: list[dict[str, Any]] = build_context(session.index, translation.leaf_id, session.entry).messages
    return messages


def _ids(source: Source) -> str:
    return source.path.name


# Discovery -----------------------------------------------------------------------------------------


def test_discover_finds_every_session_and_sub_agents_and_branches_name_their_parents() -> None:
    main = {source.session_id for source in SOURCES if source.path.parent == PROJECT}
    assert main == {scenario["id"] for scenario in MANIFEST.values()}
    (sub,) = [source for source in SOURCES if source.path.parent.name == "subagents"]
    assert sub.session_id == "a1fb582ff6170e528"
    translation = _translate(sub)
    assert translation.parent == Source(
        "claude-code",
        PROJECT / f"{MANIFEST['subagent']['id']}.jsonl",
        MANIFEST["subagent"]["id"],
        (PROJECT / f"{MANIFEST['subagent']['id']}.jsonl",),
    )
    assert "parentSession" not in translation.header
    branch = PROJECT / f"{MANIFEST['interactive']['id']}.jsonl"
    parents = {source.session_id: _translate(source).parent for source in SOURCES if source is not sub}
    assert parents.pop(MANIFEST["branch_command"]["id"]) == Source(
        "claude-code", branch, MANIFEST["interactive"]["id"], (branch,)
    )
    assert set(parents.values()) == {None}


def test_discover_takes_the_config_folder_too() -> None:
    assert TRANSLATOR.discover(CORPUS) == SOURCES


def test_header_and_provenance() -> None:
    (linear,) = [source for source in SOURCES if source.session_id == LINEAR]
    translation = _translate(linear)
    first = next(entry for entry in _raw(linear.path) if "uuid" in entry)
    assert translation.header == {
        "type": "session",
        "version": 3,
        "id": LINEAR,
        "timestamp": first["timestamp"],
        "cwd": "/home/user/project",
    }
    assert translation.provenance.version == "2.1.197"
    assert translation.provenance.source_session_id == LINEAR
    assert translation.unknown_kinds == {}


# Prefix-stable -------------------------------------------------------------------------------------


def _out_of_order(path: Path) -> bytes:
    """The interactive session as the terminal UI sometimes flushes its first turn (formats.md §1.5):
    metadata first, a last-prompt naming the first response, that response before its prompt."""
    lines = path.read_bytes().splitlines(keepends=True)
    first_response = 8  # 0-based: the assistant tool_use line
    prompt_and_attachments = lines[4:7]
    stale = (
        json.dumps(
            {"type": "last-prompt", "leafUuid": json.loads(lines[first_response])["uuid"], "sessionId": "x"}
        ).encode()
        + b"\n"
    )
    return b"".join(
        [*lines[:4], stale, lines[first_response], lines[7], *prompt_and_attachments, *lines[first_response + 1 :]]
    )


def _cases() -> list[tuple[str, bytes]]:
    cases = [(_ids(source), source.path.read_bytes()) for source in EVERY]
    cases.append(("out-of-order", _out_of_order(PROJECT / f"{MANIFEST['interactive']['id']}.jsonl")))
    return cases


@pytest.mark.parametrize(("name", "data"), _cases(), ids=[name for name, _ in _cases()])
def test_a_prefix_translates_to_a_prefix_of_the_entries(name: str, data: bytes) -> None:
    whole = _translate_bytes(data).entries
    cuts = [index + 1 for index, byte in enumerate(data) if byte == ord("\n")]
    for cut in [0, *cuts]:
        for end in (cut, min(cut + 40, len(data))):  # at a line end, and inside the next line
            entries = _translate_bytes(data[:end]).entries
            assert entries == whole[: len(entries)], f"{name}: cut at byte {end}"


def test_an_unfinished_response_is_held_back_until_a_line_of_something_else() -> None:
    (linear,) = [source for source in SOURCES if source.session_id == LINEAR]
    lines = linear.path.read_bytes().splitlines(keepends=True)
    raw = [json.loads(text) for text in lines]
    thinking = next(
        i
        for i, entry in enumerate(raw)
        if entry["type"] == "assistant" and entry["message"]["content"][0]["type"] == "thinking"
    )
    after_thinking = _translate_bytes(b"".join(lines[: thinking + 1])).entries
    assert raw[thinking]["uuid"] not in {entry["id"] for entry in after_thinking}
    after_text = _translate_bytes(b"".join(lines[: thinking + 2])).entries
    response = after_text[-1]
    assert response["id"] == raw[thinking + 1]["uuid"]
    assert [block["type"] for block in response["message"]["content"]] == ["thinking", "text"]


def test_out_of_order_lines_wait_for_their_parents() -> None:
    data = _out_of_order(PROJECT / f"{MANIFEST['interactive']['id']}.jsonl")
    ordered = _translate_bytes((PROJECT / f"{MANIFEST['interactive']['id']}.jsonl").read_bytes())
    shuffled = _translate_bytes(data)
    tree = {
        entry["id"]: entry["parentId"] for entry in ordered.entries if not entry["id"].startswith("claude-code-line-")
    }
    assert {entry["id"]: entry["parentId"] for entry in shuffled.entries if entry["id"] in tree} == tree
    seen: set[str | None] = {None}
    for entry in shuffled.entries:
        if not entry["id"].startswith("claude-code-line-"):
            assert entry["parentId"] in seen, "a parent is written before its children"
        seen.add(entry["id"])
    # The stale last-prompt names the first response; the last entry descends from nothing it names.
    assert shuffled.leaf_id == ordered.leaf_id


# Faithful ------------------------------------------------------------------------------------------


def _claude_code_path(raw: list[dict[str, Any]], leaf: str) -> list[dict[str, Any]]:
    """The lines Claude Code loads for a leaf: up the parents to the last compaction's summary, with
    the preserved segment spliced in after it (formats.md §1.7)."""
    by_uuid = {entry["uuid"]: entry for entry in raw if "uuid" in entry}
    path: list[dict[str, Any]] = []
    current: str | None = leaf
    while current is not None:
        entry = by_uuid[current]
        if entry.get("subtype") == "compact_boundary":
            segment = entry["compactMetadata"]["preservedSegment"]
            kept = _claude_code_path_between(by_uuid, segment["tailUuid"], segment["headUuid"])
            return [*kept, *reversed(path)]
        path.append(entry)
        current = entry["parentUuid"]
    return list(reversed(path))


def _claude_code_path_between(by_uuid: dict[str, dict[str, Any]], tail: str, head: str) -> list[dict[str, Any]]:
    path = [by_uuid[tail]]
    while path[-1]["uuid"] != head:
        path.append(by_uuid[path[-1]["parentUuid"]])
    return list(reversed(path))


def _is_typed(entry: dict[str, Any]) -> bool:
    content = entry["message"]["content"]
    return (
        isinstance(content, str)
        and not entry.get("isMeta")
        and not content.startswith("<")
        and not entry.get("isCompactSummary")
    )


def _source_items(path: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """User prompts, assistant texts, tool calls and results, in the order the lines give them."""
    items: list[tuple[str, ...]] = []
    for entry in path:
        if entry["type"] == "user" and _is_typed(entry):
            items.append(("user", entry["message"]["content"]))
        elif entry["type"] == "user" and isinstance(entry["message"]["content"], list):
            for block in entry["message"]["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    text = content if isinstance(content, str) else "".join(part["text"] for part in content)
                    items.append(("result", block["tool_use_id"], text, str(bool(block.get("is_error")))))
        elif entry["type"] == "assistant":
            for block in entry["message"]["content"]:
                if block["type"] == "text":
                    items.append(("text", block["text"]))
                elif block["type"] == "tool_use":
                    items.append(("call", block["id"], block["name"], json.dumps(block["input"])))
    return items


def _pi_items(messages: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    items: list[tuple[str, ...]] = []
    for message in messages:
        if message["role"] == "user":
            items.extend(("user", block["text"]) for block in message["content"])
        elif message["role"] == "toolResult":
            text = "".join(part["text"] for part in message["content"])
            items.append(("result", message["toolCallId"], text, str(message["isError"])))
        elif message["role"] == "assistant":
            for block in message["content"]:
                if block["type"] == "text":
                    items.append(("text", block["text"]))
                elif block["type"] == "toolCall":
                    items.append(("call", block["id"], block["name"], json.dumps(block["arguments"])))
    return items


def _tokens(responses: list[dict[str, Any]]) -> int:
    usage = [response["message"]["usage"] for response in responses]
    return sum(
        u["input_tokens"] + u["output_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in usage
    )


def _once_per_response(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({entry["message"]["id"]: entry for entry in lines if entry["type"] == "assistant"}.values())


# Where Claude Code resumes each file (read off the files by hand): the last last-prompt's leaf, or
# the last user/assistant line where the file goes on below it (an /exit after the last prompt, a
# session left by /branch without a closing last-prompt, a sub-agent's file without any).
LEAVES = {
    MANIFEST["linear"]["id"]: "517f87e4-3968-4890-8314-78f3296feeb9",
    MANIFEST["fork"]["id"]: "ee5b0fbc-fc79-4ae0-99b2-21d0d7355346",
    MANIFEST["subagent"]["id"]: "11805a32-f996-4070-8743-164dc4ff835f",
    MANIFEST["interactive"]["id"]: "b4bb7be7-39d3-4576-9c2c-faa49acc36b4",
    MANIFEST["branch_command"]["id"]: "21ef305a-c937-4d89-8f92-e87cf00f9ba7",
    "a1fb582ff6170e528": "44690abe-31ee-48dc-80d4-2b851c404958",
    # The stale last-prompt at line 2 names the first response; the last entry descends from it.
    "7aa98973-acee-445d-b1b8-5e6ee75ea1d3": "f28a7dba-bbf4-494f-99b0-41ae121c62b7",
}


@pytest.mark.parametrize("source", EVERY, ids=_ids)
def test_the_context_is_what_claude_code_sent_in_its_order(source: Source) -> None:
    translation = _translate(source)
    raw = _raw(source.path)
    expected_leaf = LEAVES[source.session_id]
    assert translation.leaf_id == expected_leaf
    path = _claude_code_path(raw, expected_leaf)
    messages = _context(translation)
    assert _pi_items(messages) == _source_items(path)
    pi_tokens = sum(m["usage"]["totalTokens"] for m in messages if m["role"] == "assistant")
    assert pi_tokens == _tokens(_once_per_response(path))


@pytest.mark.parametrize("source", EVERY, ids=_ids)
def test_every_response_is_one_assistant_message_with_its_usage_once(source: Source) -> None:
    translation = _translate(source)
    raw = _raw(source.path)
    responses = [
        entry for entry in translation.entries if entry["type"] == "message" and entry["message"]["role"] == "assistant"
    ]
    assert len(responses) == len(_once_per_response(raw))
    assert sum(r["message"]["usage"]["totalTokens"] for r in responses) == _tokens(_once_per_response(raw))


@pytest.mark.parametrize("source", EVERY, ids=_ids)
def test_no_line_is_dropped(source: Source) -> None:
    """Every tree line is an entry (a response's lines: one), every metadata line a custom or session_info."""
    translation = _translate(source)
    raw = _raw(source.path)
    ids = {entry["id"] for entry in translation.entries}
    for number, entry in enumerate(raw, 1):
        if "uuid" not in entry:
            assert f"claude-code-line-{number}" in ids
        elif entry["type"] == "assistant":
            last = [e for e in raw if e["type"] == "assistant" and e["message"]["id"] == entry["message"]["id"]][-1]
            assert last["uuid"] in ids
        elif entry.get("subtype") != "compact_boundary":
            assert entry["uuid"] in ids
    assert len(ids) == len(translation.entries)


def test_the_rewound_branch_is_the_leaf_of_the_interactive_session() -> None:
    (source,) = [s for s in SOURCES if s.session_id == MANIFEST["interactive"]["id"]]
    translation = _translate(source)
    texts = [item for item in _pi_items(_context(translation)) if item[0] == "user"]
    assert texts[-1] == ("user", "Edited second message on a new branch")
    assert ("user", "Second interactive message") not in texts


# The mapping, line kind by line kind -------------------------------------------------------------


def test_tool_results_name_their_call_and_keep_the_structured_result() -> None:
    (linear,) = [source for source in SOURCES if source.session_id == LINEAR]
    results = [
        e["message"]
        for e in _translate(linear).entries
        if e["type"] == "message" and e["message"]["role"] == "toolResult"
    ]
    assert [(r["toolName"], r["isError"]) for r in results] == [
        ("Bash", False),
        ("Read", False),
        ("Write", False),
        ("Bash", True),
    ]
    assert results[0]["details"]["stdout"] == "hi"
    assert results[3]["details"].startswith("Error: Exit code 2")


def test_compaction_is_one_entry_under_the_leaf_it_summarised() -> None:
    (linear,) = [source for source in SOURCES if source.session_id == LINEAR]
    raw = _raw(linear.path)
    boundary = next(e for e in raw if e.get("subtype") == "compact_boundary")
    summary = next(e for e in raw if e.get("isCompactSummary"))
    (compaction,) = [e for e in _translate(linear).entries if e["type"] == "compaction"]
    assert compaction["id"] == summary["uuid"]
    assert compaction["parentId"] == boundary["logicalParentUuid"]
    assert compaction["firstKeptEntryId"] == boundary["compactMetadata"]["preservedSegment"]["headUuid"]
    assert compaction["tokensBefore"] == boundary["compactMetadata"]["preTokens"]
    assert compaction["details"] == boundary["compactMetadata"]
    assert compaction["summary"].startswith("This session is being continued")
    assert boundary["uuid"] not in {e["id"] for e in _translate(linear).entries}


def test_meta_lines_attachments_and_metadata() -> None:
    (linear,) = [source for source in SOURCES if source.session_id == LINEAR]
    entries = _translate(linear).entries
    kinds = {(e["type"], e.get("customType")) for e in entries}
    assert ("custom_message", "claude-code/meta") in kinds
    assert ("custom", "claude-code/attachment/skill_listing") in kinds
    assert ("custom", "claude-code/last-prompt") in kinds
    assert ("custom", "claude-code/queue-operation") in kinds
    meta = [e for e in entries if e["type"] == "custom_message"]
    assert all(e["display"] is False for e in meta)
    # Metadata lines form one chain of their own, off the conversation's path.
    chain = [e for e in entries if e["id"].startswith("claude-code-line-")]
    assert chain[0]["parentId"] is None
    assert all(after["parentId"] == before["id"] for before, after in itertools.pairwise(chain))


def test_custom_title_is_the_session_name() -> None:
    (source,) = [s for s in SOURCES if s.session_id == MANIFEST["subagent"]["id"]]
    translation = _translate(source)
    infos = [e for e in translation.entries if e["type"] == "session_info"]
    assert [e["name"] for e in infos] == ["agent demo"]
    data = line(translation.header) + b"".join(line(entry) for entry in translation.entries)
    assert Session.load(MemoryStorage(data)).index.name == "agent demo"


def _assistant(
    uuid: str, parent: str | None, message_id: str, block: dict[str, Any], stop: str | None, second: int
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "cwd": "/w",
        "message": {
            "id": message_id,
            "model": "m",
            "content": [block],
            "stop_reason": stop,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
    }


def _user(uuid: str, parent: str | None, text: str, second: int) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "cwd": "/w",
        "message": {"role": "user", "content": text},
    }


def _file(*lines: dict[str, Any]) -> bytes:
    return b"".join(line(entry) for entry in lines)


def test_a_branch_off_a_middle_line_of_a_response_hangs_under_that_part_of_it() -> None:
    data = _file(
        _user("u1", None, "q", 1),
        _assistant("a1", "u1", "m1", {"type": "thinking", "thinking": "hmm", "signature": "s"}, "end_turn", 2),
        _assistant("a2", "a1", "m1", {"type": "text", "text": "answer"}, "end_turn", 3),
        _user("u2", "a2", "next", 4),
        _user("u3", "a1", "from the middle", 5),
    )
    entries = {e["id"]: e for e in _translate_bytes(data).entries}
    assert [b["type"] for b in entries["a2"]["message"]["content"]] == ["thinking", "text"]
    assert entries["u2"]["parentId"] == "a2"
    assert entries["a1"]["parentId"] == "u1"
    assert [b["type"] for b in entries["a1"]["message"]["content"]] == ["thinking"]
    assert entries["u3"]["parentId"] == "a1"


def test_unknown_kinds_are_kept_and_counted() -> None:
    data = (
        _file(
            _user("u1", None, "q", 1),
            {"type": "novel-metadata", "value": 1},
            {"type": "novel-node", "uuid": "n1", "parentUuid": "u1", "timestamp": "2026-01-01T00:00:02.000Z"},
            _user("u2", "n1", "after", 3),
        )
        + b"not json\n"
    )
    translation = _translate_bytes(data)
    assert translation.unknown_kinds == {"novel-metadata": 1, "novel-node": 1, "<unreadable>": 1}
    kinds = {e["id"]: e.get("customType") for e in translation.entries}
    assert kinds["n1"] == "claude-code/unknown:novel-node"
    assert kinds["claude-code-line-2"] == "claude-code/unknown:novel-metadata"
    assert {e["id"]: e["parentId"] for e in translation.entries}["u2"] == "n1"


def test_an_explicit_last_prompt_wins_and_the_leaf_walks_up_to_a_message() -> None:
    nodes = [
        _user("u1", None, "q", 1),
        _assistant("a1", "u1", "m1", {"type": "text", "text": "a"}, "end_turn", 2),
        {
            "type": "attachment",
            "uuid": "t1",
            "parentUuid": "a1",
            "timestamp": "2026-01-01T00:00:03.000Z",
            "attachment": {"type": "x"},
        },
        _user("u2", "a1", "later", 4),
    ]
    assert _translate_bytes(_file(*nodes)).leaf_id == "u2"
    assert _translate_bytes(_file(*nodes, {"type": "last-prompt", "leafUuid": "t1"})).leaf_id == "a1"
    explicit = {"type": "last-prompt", "leafUuid": "u1", "explicit": True}
    assert _translate_bytes(_file(*nodes, explicit, {"type": "last-prompt", "leafUuid": "u2"})).leaf_id == "u1"


def test_timestamps_are_pi_s() -> None:
    (linear,) = [source for source in SOURCES if source.session_id == LINEAR]
    for entry in _translate(linear).entries:
        assert len(entry["timestamp"]) == 24 and entry["timestamp"].endswith("Z")
        if entry["type"] == "message":
            assert isinstance(entry["message"]["timestamp"], int)


def _results_line(uuid: str, parent: str, blocks: list[dict[str, Any]], second: int, **extra: Any) -> dict[str, Any]:
    line = _user(uuid, parent, "", second)
    line["message"]["content"] = blocks
    return {**line, **extra}


def test_parallel_tool_results_and_text_in_one_line_are_chained_messages() -> None:
    calls = [
        _assistant("a1", "u1", "m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}, "tool_use", 2),
        _assistant("a2", "a1", "m1", {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}, "tool_use", 2),
    ]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}}
    results = [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "one"}, image]},
        {"type": "tool_result", "tool_use_id": "t2", "content": "two", "is_error": True},
        {"type": "text", "text": "and a remark"},
    ]
    data = _file(_user("u1", None, "q", 1), *calls, _results_line("r1", "a2", results, 3, toolUseResult={"x": 1}))
    entries = _translate_bytes(data).entries
    assert [(e["id"], e["parentId"], e["message"]["role"]) for e in entries] == [
        ("u1", None, "user"),
        ("a2", "u1", "assistant"),
        ("r1:0", "a2", "toolResult"),
        ("r1:1", "r1:0", "toolResult"),
        ("r1", "r1:1", "user"),
    ]
    first, second, remark = (e["message"] for e in entries[2:])
    assert (first["toolName"], first["isError"], second["toolName"], second["isError"]) == ("Read", False, "Bash", True)
    assert first["content"] == [
        {"type": "text", "text": "one"},
        {"type": "image", "data": "AAA", "mimeType": "image/png"},
    ]
    assert "details" not in first  # one structured result for several calls: it belongs to none of them alone
    assert remark["content"] == [{"type": "text", "text": "and a remark"}]


def test_a_tool_use_response_waits_for_the_next_line() -> None:
    head = _file(
        _user("u1", None, "q", 1),
        _assistant("a1", "u1", "m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}, "tool_use", 2),
    )
    assert [e["id"] for e in _translate_bytes(head).entries] == ["u1"]
    more = head + _file(
        _assistant("a2", "a1", "m1", {"type": "tool_use", "id": "t2", "name": "Bash", "input": {}}, "tool_use", 2)
    )
    assert [e["id"] for e in _translate_bytes(more).entries] == ["u1"]
    done = more + _file({"type": "last-prompt", "leafUuid": "a2"})
    (response,) = [e for e in _translate_bytes(done).entries if e["id"] == "a2"]
    assert [b["id"] for b in response["message"]["content"]] == ["t1", "t2"]
    assert response["message"]["usage"]["totalTokens"] == 15
    assert response["message"]["stopReason"] == "toolUse"


def _boundary(uuid: str, logical: str, head: str) -> dict[str, Any]:
    metadata = {
        "trigger": "auto",
        "preTokens": 900,
        "preservedSegment": {"headUuid": head, "anchorUuid": "s1", "tailUuid": head},
    }
    return {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": uuid,
        "parentUuid": None,
        "logicalParentUuid": logical,
        "timestamp": "2026-01-01T00:00:05.000Z",
        "compactMetadata": metadata,
    }


def test_a_compaction_whose_summarised_leaf_is_not_in_the_file_is_a_root() -> None:
    summary = {**_user("s1", "b1", "Summary: all of it", 6), "isCompactSummary": True}
    data = _file(_boundary("b1", "elsewhere", "gone"), summary, _user("u1", "s1", "next", 7))
    translation = _translate_bytes(data)
    (compaction, after) = translation.entries
    assert (compaction["type"], compaction["id"], compaction["parentId"]) == ("compaction", "s1", None)
    assert compaction["firstKeptEntryId"] == "gone"
    assert compaction["tokensBefore"] == 900
    assert after["parentId"] == "s1"
    assert [m["role"] for m in _context(translation)] == ["compactionSummary", "user"]


def test_a_compaction_waits_for_its_summary() -> None:
    head = _file(_user("u0", None, "q", 1), _boundary("b1", "u0", "u0"))
    assert [e["id"] for e in _translate_bytes(head).entries] == ["u0"]
    summary = {**_user("s1", "b1", "Summary", 6), "isCompactSummary": True}
    (_, compaction) = _translate_bytes(head + _file(summary)).entries
    assert (compaction["id"], compaction["parentId"], compaction["firstKeptEntryId"]) == ("s1", "u0", "u0")


def test_an_api_error_and_a_synthetic_message_are_whole_at_once() -> None:
    error = _assistant("a1", "u1", "m1", {"type": "text", "text": "API Error: 500"}, None, 2)
    error["isApiErrorMessage"] = True
    entries = _translate_bytes(_file(_user("u1", None, "q", 1), error)).entries
    assert entries[-1]["message"]["stopReason"] == "error"
    assert entries[-1]["message"]["errorMessage"] == "API Error: 500"


def test_a_node_written_twice_is_kept_once_in_the_tree() -> None:
    data = _file(_user("u1", None, "q", 1), _user("u1", None, "q again", 2), _user("u2", "u1", "next", 3))
    entries = _translate_bytes(data).entries
    assert [(e["id"], e["parentId"]) for e in entries] == [("u1", None), ("claude-code-line-2", None), ("u2", "u1")]
    assert entries[1]["customType"] == "claude-code/duplicate"
    assert entries[1]["data"]["message"]["content"] == "q again"


def test_the_real_out_of_order_file_is_the_same_tree_as_an_ordered_one() -> None:
    (source,) = RACE
    translation = _translate(source)
    by_id = {e["id"]: e for e in translation.entries}
    first_response = "518cf7b6-5ac7-416c-b739-2b21ea7f232c"
    assert by_id[first_response]["parentId"] == "9e4daa36-b4f7-43a3-bef0-40db7b7f8fd6"
    written = [e["id"] for e in translation.entries]
    assert written.index(first_response) > written.index("9e4daa36-b4f7-43a3-bef0-40db7b7f8fd6")
    texts = [item for item in _pi_items(_context(translation)) if item[0] == "user"]
    assert texts == [
        ("user", "Interactive: USE_WRITE:/home/user/project/inter.txt"),
        ("user", "Edited second message on a new branch"),
    ]


def test_a_line_without_a_usable_uuid_is_kept_off_the_tree_as_unknown() -> None:
    data = _file(_user("u1", None, "q", 1), {"type": "user", "uuid": 5, "message": {"content": "odd"}})
    translation = _translate_bytes(data)
    assert translation.unknown_kinds == {"user": 1}
    assert translation.entries[-1]["customType"] == "claude-code/unknown:user"


def test_tool_results_stay_tool_results_on_a_meta_line() -> None:
    call = _assistant("a1", "u1", "m1", {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}, "tool_use", 2)
    result = _results_line("r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}], 3, isMeta=True)
    entries = _translate_bytes(_file(_user("u1", None, "q", 1), call, result)).entries
    assert entries[-1]["message"]["role"] == "toolResult"


def test_a_refusal_and_redacted_thinking_are_kept_as_pi_ai_keeps_them() -> None:
    redacted = _assistant("a1", "u1", "m1", {"type": "redacted_thinking", "data": "opaque"}, "refusal", 2)
    text = _assistant("a2", "a1", "m1", {"type": "text", "text": "no"}, "refusal", 2)
    response = _translate_bytes(_file(_user("u1", None, "q", 1), redacted, text)).entries[-1]["message"]
    assert response["content"][0] == {
        "type": "thinking",
        "thinking": "[Reasoning redacted]",
        "thinkingSignature": "opaque",
        "redacted": True,
    }
    assert (response["stopReason"], response["rawStopReason"], response["responseId"]) == ("error", "refusal", "m1")
    assert response["errorMessage"] == "The model refused to complete the request"
