"""Codex CLI threads read as pi sessions, over real files the agent wrote (tests/fixtures/codex)."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.agents import Source, Translation
from sessiontree.agents.codex import CodexTranslator
from sessiontree.store import MemoryStorage, Session
from sessiontree.tree import build_context, convert_to_llm
from support.messages import line

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["sessions"]
LINEAR, FORK, INTERACTIVE = (MANIFEST[name]["id"] for name in ("linear", "fork", "interactive"))
TRANSLATOR = CodexTranslator()
COMPACTION_PREFIX = "Another language model started to solve this problem"
HARNESS = ("<environment_context>", "# AGENTS.md instructions for ", "<user_instructions>")


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _sources() -> dict[str, Source]:
    return {source.session_id: source for source in TRANSLATOR.discover(CORPUS)}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(text) for text in path.read_text().splitlines()]


def _session(translation: Translation) -> Session:
    data = line(translation.header) + b"".join(line(entry) for entry in translation.entries)
    return Session.load(MemoryStorage(data))


def _llm(translation: Translation) -> list[Any]:
    session = _session(translation)
    return convert_to_llm(build_context(session.index, translation.leaf_id, session.entry).messages)


# ---- what Codex sent its model, read from the rollouts without the translator ---------------


def _live_history(thread: str) -> list[dict[str, Any]]:
    """The thread's live history: the newest file's lines after its bases' lines before each branch point."""
    files = sorted(CORPUS.rglob(f"rollout-*{thread}*.jsonl"), key=lambda p: ("_" in p.name.split(thread)[1], p.name))
    return _history_of(files[-1])


def _history_of(path: Path) -> list[dict[str, Any]]:
    lines = _lines(path)
    base = lines[0]["payload"].get("history_base")
    if base is None:
        return lines
    for candidate in CORPUS.rglob(f"rollout-*{base['thread_id']}*.jsonl"):
        data = candidate.read_bytes()
        at = data[base["end_byte_offset"]:].split(b"\n", 1)[0]
        if candidate != path and at and json.loads(at)["ordinal"] == base["end_ordinal_exclusive"]:
            before = [x for x in _history_of(candidate) if x["ordinal"] < base["end_ordinal_exclusive"]]
            return before + lines
    raise AssertionError(f"no base for {path}")


def _item_view(item: dict[str, Any], roles: bool) -> tuple[Any, ...] | None:
    """One input item as (kind, …); `roles` keeps the harness items too (as Codex sends them)."""
    kind = item.get("type")
    if kind == "message":
        text = "".join(part.get("text", "") for part in item["content"])
        if roles:
            return (item["role"][0],)
        if item["role"] == "developer" or text.startswith(HARNESS):
            return None
        if text.startswith(COMPACTION_PREFIX):
            return ("summary", text.split("assist with your own analysis:\n", 1)[1])
        return (item["role"], text)
    if kind == "reasoning":
        return ("r",) if roles else ("thinking", "\n\n".join(s["text"] for s in item["summary"]))
    if kind == "function_call":
        return ("f",) if roles else ("call", item["call_id"], item["name"], json.loads(item["arguments"]))
    if kind == "function_call_output":
        return ("f",) if roles else ("output", item["call_id"], item["output"])
    return None


def _model_inputs(thread: str, roles: bool) -> tuple[list[list[tuple[Any, ...]]], list[tuple[Any, ...]]]:
    """(the input of each model call of the live history, the history at its end), as `_item_view`s."""
    history: list[tuple[Any, ...]] = []
    inputs: list[list[tuple[Any, ...]]] = []
    in_call = False
    for value in _live_history(thread):
        payload = value.get("payload") or {}
        if value["type"] == "compacted":
            history = [v for v in (_item_view(i, roles) for i in payload["replacement_history"]) if v is not None]
        elif value["type"] == "token_usage_record":
            in_call = False
        elif value["type"] == "response_item" and not (value.get("metadata") or {}).get("compaction_output"):
            from_model = payload.get("type") in ("reasoning", "function_call") or payload.get("role") == "assistant"
            if from_model and not in_call:
                inputs.append(list(history))
                in_call = True
            view = _item_view(payload, roles)
            if view is not None:
                history.append(view)
    return inputs, history


def _pi_view(messages: list[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for message in messages:
        if message["role"] == "user":
            text = "".join(block["text"] for block in message["content"] if block["type"] == "text")
            summary = text.startswith("The conversation history before this point was compacted")
            out.append(("summary", text.split("<summary>\n", 1)[1].rsplit("\n</summary>", 1)[0]) if summary else ("user", text))
        elif message["role"] == "assistant":
            for block in message["content"]:
                if block["type"] == "thinking":
                    out.append(("thinking", block["thinking"]))
                elif block["type"] == "text":
                    out.append(("assistant", block["text"]))
                else:
                    out.append(("call", block["id"].split("|")[0], block["name"], block["arguments"]))
        elif message["role"] == "toolResult":
            out.append(("output", message["toolCallId"].split("|")[0], message["content"][0]["text"]))
    return out


# ---- discovery ----------------------------------------------------------------------------


def test_discover_finds_each_thread_at_its_live_segment_with_the_files_it_reads() -> None:
    sources = _sources()
    assert set(sources) == {LINEAR, FORK, INTERACTIVE}
    index = CORPUS / "session_index.jsonl"
    interactive = sources[INTERACTIVE]
    assert "_" in interactive.path.name  # the rewind segment is the live file
    assert len(interactive.files) == 3 and interactive.files[-1] == index and interactive.path in interactive.files
    assert sources[LINEAR].files == (sources[LINEAR].path, index)
    fork = sources[FORK]
    assert fork.files == (fork.path, sources[LINEAR].path, index)  # the fork reads its base thread's file
    assert TRANSLATOR.discover(CORPUS / "sessions") == TRANSLATOR.discover(CORPUS)


def test_discover_of_a_folder_without_rollouts_is_empty(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "notes.jsonl").write_text("{}\n")
    assert TRANSLATOR.discover(tmp_path) == []


# ---- header, provenance, structure ------------------------------------------------------


@pytest.mark.parametrize("thread", [LINEAR, FORK, INTERACTIVE])
def test_header_and_provenance_come_from_session_meta(thread: str) -> None:
    source = _sources()[thread]
    translation = TRANSLATOR.translate(source, _read)
    first = _lines(min((p for p in source.files if thread in p.name), key=lambda p: p.name))[0]["payload"]
    assert translation.header == {
        "type": "session", "version": 3, "id": thread, "timestamp": first["timestamp"], "cwd": "/home/user/project",
    }
    assert (translation.provenance.agent, translation.provenance.version) == ("codex", "0.171.0")
    assert translation.provenance.source_session_id == thread and translation.unknown_kinds == {}
    assert translation.leaf_id == translation.entries[-1]["id"]
    ids = [entry["id"] for entry in translation.entries]
    assert len(set(ids)) == len(ids)
    known: set[str | None] = {None}
    for entry in translation.entries:  # every parent comes before its child
        assert entry["parentId"] in known
        known.add(entry["id"])


def test_a_rewind_segment_is_a_branch_from_the_base_before_its_branch_point() -> None:
    translation = TRANSLATOR.translate(_sources()[INTERACTIVE], _read)
    by_id = {entry["id"]: entry for entry in translation.entries}
    metas = [e for e in translation.entries if e["type"] == "custom" and e["customType"] == "codex/session_meta"]
    assert len(metas) == 2
    segment_start = metas[1]["data"]["history_base"]["end_ordinal_exclusive"]
    branch_point = by_id[metas[1]["parentId"]]
    while branch_point["type"] == "session_info":  # a rename made after the branch point sits on the new branch
        branch_point = by_id[branch_point["parentId"]]
    abandoned = [e for e in translation.entries if e["type"] == "message" and e["message"]["role"] == "user"
                 and e["message"]["content"][0]["text"] == "Interactive second message"]
    assert len(abandoned) == 1 and segment_start == 20
    # the abandoned turn hangs off the same branch point, beside the segment: two children
    children = [e for e in translation.entries if e["parentId"] == branch_point["id"]]
    assert len(children) == 2 and metas[1]["id"] in _path(by_id, translation.leaf_id)
    assert branch_point["message"]["content"][0]["text"].startswith("The tool returned")  # the last entry before ordinal 20
    path = _path(by_id, translation.leaf_id)
    assert abandoned[0]["id"] not in path and branch_point["id"] in path
    names = [e["name"] for e in translation.entries if e["type"] == "session_info"]
    assert names == ["Interactive first: USE_SHELL please", "my codex session"]


def _path(by_id: dict[str, dict[str, Any]], leaf: str | None) -> list[str]:
    path = []
    while leaf is not None:
        path.append(leaf)
        leaf = by_id[leaf]["parentId"]
    return path


def test_a_fork_copies_its_base_prefix_and_names_its_parent() -> None:
    sources = _sources()
    fork = TRANSLATOR.translate(sources[FORK], _read)
    linear = TRANSLATOR.translate(sources[LINEAR], _read)
    assert fork.parent == sources[LINEAR] and linear.parent is None
    meta = next(e for e in fork.entries if e["type"] == "custom" and e["data"].get("forked_from_id"))
    copied = fork.entries[: fork.entries.index(meta)]
    assert copied == linear.entries[: len(copied)]  # the same entries, ids and all
    assert [e["message"]["content"][0]["text"] for e in fork.entries if e["type"] == "message"
            and e["message"]["role"] == "user"][-1] == "A forked question"
    assert not any(e["type"] == "compaction" for e in fork.entries)  # the base's later compaction is not copied


def test_a_compaction_keeps_nothing_before_it_and_carries_codex_replacement_history() -> None:
    translation = TRANSLATOR.translate(_sources()[LINEAR], _read)
    compaction = next(e for e in translation.entries if e["type"] == "compaction")
    compacted = next(x for x in _lines(_sources()[LINEAR].path) if x["type"] == "compacted")["payload"]
    record = compacted["latest_token_usage_record"]
    assert compaction["firstKeptEntryId"] == compaction["id"]  # pi 1.6's "retain none"
    assert compacted["message"].endswith("\n" + compaction["summary"])
    assert compaction["details"]["replacement_history"] == compacted["replacement_history"]
    assert compaction["details"]["retained_context"] == compacted["retained_context"]
    assert compaction["usage"]["totalTokens"] == record["usage"]["total_tokens"]
    lines = _lines(_sources()[LINEAR].path)
    summary_at = next(i for i, x in enumerate(lines) if (x.get("metadata") or {}).get("compaction_output"))
    counts = [x["payload"]["info"]["last_token_usage"]["total_tokens"] for x in lines[:summary_at]
              if x["type"] == "event_msg" and x["payload"]["type"] == "token_count"]
    assert compaction["tokensBefore"] == counts[-1] == 5976  # the context of the last call before the summary call


def test_a_failed_command_is_an_error_result_with_the_command_as_details() -> None:
    translation = TRANSLATOR.translate(_sources()[LINEAR], _read)
    results = [e["message"] for e in translation.entries if e["type"] == "message" and e["message"]["role"] == "toolResult"]
    assert [r["isError"] for r in results] == [False, True]
    assert [r["details"]["exit_code"] for r in results] == [0, 2]
    assert all(r["toolName"] == "exec_command" for r in results)
    calls = [b for e in translation.entries if e["type"] == "message" and e["message"]["role"] == "assistant"
             for b in e["message"]["content"] if b["type"] == "toolCall"]
    assert [c["id"] for c in calls] == [r["toolCallId"] for r in results]


def test_model_calls_are_assistant_messages_in_pi_ai_shapes() -> None:
    translation = TRANSLATOR.translate(_sources()[LINEAR], _read)
    lines = _lines(_sources()[LINEAR].path)
    reasoning = next(x["payload"] for x in lines if x["type"] == "response_item" and x["payload"]["type"] == "reasoning")
    message = next(e["message"] for e in translation.entries if e["type"] == "message"
                   and any(b["type"] == "thinking" for b in e["message"]["content"]))
    thinking, text = message["content"]
    assert json.loads(thinking["thinkingSignature"]) == reasoning
    assert json.loads(text["textSignature"])["v"] == 1 and text["textSignature"].startswith('{"v":1,"id":"msg_')
    assert (message["api"], message["provider"], message["model"], message["stopReason"]) == (
        "openai-responses", "fake", "gpt-fake-codex", "stop")
    changes = [e for e in translation.entries if e["type"] in ("model_change", "thinking_level_change")]
    assert [(e["type"], e.get("modelId")) for e in changes] == [("model_change", "gpt-fake-codex")]  # only when it changes


# ---- prefix-stable ----------------------------------------------------------------------


def _index_until(stamp: str | None) -> bytes:
    """The names Codex had written before the line stamped `stamp` (all of them for None)."""
    kept = [text for text in (CORPUS / "session_index.jsonl").read_text().splitlines()
            if stamp is None or json.loads(text)["updated_at"] < stamp]
    return "".join(text + "\n" for text in kept).encode()


@pytest.mark.parametrize("thread", [LINEAR, FORK, INTERACTIVE])
def test_translation_is_prefix_stable_at_every_line_of_the_live_segment(thread: str) -> None:
    source = _sources()[thread]
    data = source.path.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")]
    stamps = [json.loads(text)["timestamp"] for text in data.decode().splitlines()]

    def reader(cut: int, stamp: str | None) -> Callable[[Path], bytes]:
        def read(path: Path) -> bytes:
            if path == source.path:
                return data[:cut]
            return _index_until(stamp) if path.name == "session_index.jsonl" else path.read_bytes()
        return read

    whole = TRANSLATOR.translate(source, _read)
    assert TRANSLATOR.translate(source, reader(len(data), None)).entries == whole.entries
    earlier = TRANSLATOR.translate(source, reader(0, stamps[0]))
    for number, cut in enumerate(ends):
        following = stamps[number + 1] if number + 1 < len(stamps) else None
        now = TRANSLATOR.translate(source, reader(cut, following))
        assert now.entries[: len(earlier.entries)] == earlier.entries, f"line {number + 1}"
        assert whole.entries[: len(now.entries)] == now.entries, f"line {number + 1}"
        torn = TRANSLATOR.translate(source, reader(cut - 7, following)) if cut > 7 else None
        if torn is not None and cut - 7 > (ends[number - 1] if number else 0):  # a line being written is held
            assert torn.entries == TRANSLATOR.translate(source, reader(ends[number - 1] if number else 0, following)).entries
        earlier = now


# ---- faithful ---------------------------------------------------------------------------


@pytest.mark.parametrize("thread", [LINEAR, FORK, INTERACTIVE])
def test_every_model_call_codex_made_is_in_the_request_log(thread: str) -> None:
    """The reading of the rollouts the next test relies on is what Codex really sent."""
    sent = {json.loads(text).get("roles") for text in (CORPUS / "requests-summary.jsonl").read_text().splitlines()}
    inputs, _ = _model_inputs(thread, roles=True)
    assert inputs
    for items in inputs:  # the system prompt goes first, as a developer message
        assert "d" + "".join(view[0] for view in items) in sent


@pytest.mark.parametrize("thread", [LINEAR, FORK, INTERACTIVE])
def test_pi_context_holds_what_codex_sent_its_model_in_order(thread: str) -> None:
    translation = TRANSLATOR.translate(_sources()[thread], _read)
    inputs, history = _model_inputs(thread, roles=False)
    pi = _pi_view(_llm(translation))
    last = inputs[-1]
    if any(view[0] == "summary" for view in history):
        # Lossy by design: Codex re-sends every earlier user message verbatim before the summary;
        # pi's compaction keeps only the summary (they ride in the compaction's details).
        cut = next(i for i, view in enumerate(history) if view[0] == "summary")
        compaction = next(e for e in translation.entries if e["type"] == "compaction")
        replaced = [_item_view(i, False) for i in compaction["details"]["replacement_history"]]
        assert [v for v in replaced if v is not None] == history[: cut + 1]
        assert history[:cut] == [view for view in history[:cut] if view[0] == "user"]
        history, last = history[cut:], last[cut:]
    assert pi == history
    assert pi[: len(last)] == last  # the last request Codex made, then the reply to it


@pytest.mark.parametrize("thread", [LINEAR, FORK, INTERACTIVE])
def test_token_counts_equal_the_usage_codex_recorded(thread: str) -> None:
    source = _sources()[thread]
    translation = TRANSLATOR.translate(source, _read)
    own = [p for p in source.files if thread in p.name]
    records: dict[tuple[str, str], dict[str, int]] = {}
    for path in own:
        for value in _history_of(path):
            if value["type"] == "token_usage_record":
                records[(value["payload"]["response_id"], value["timestamp"])] = value["payload"]["usage"]
    usages = [e["message"]["usage"] for e in translation.entries if e["type"] == "message"
              and e["message"]["role"] == "assistant"] + [e["usage"] for e in translation.entries if "usage" in e]
    assert len(usages) == len(records)
    assert sum(u["input"] + u["cacheRead"] + u["cacheWrite"] for u in usages) == sum(r["input_tokens"] for r in records.values())
    assert sum(u["output"] for u in usages) == sum(r["output_tokens"] for r in records.values())
    assert sum(u["totalTokens"] for u in usages) == sum(r["total_tokens"] for r in records.values())


# ---- lines the corpus does not hold -----------------------------------------------------


def _rollout(tmp_path: Path, lines: list[dict[str, Any]], name: str = "rollout-2026-01-01T00-00-00-"
             "01a00000-0000-7000-8000-000000000001.jsonl", torn: bytes = b"") -> Source:
    folder = tmp_path / "sessions" / "2026" / "01" / "01"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"".join(line(value) for value in lines) + torn)
    (source,) = TRANSLATOR.discover(tmp_path)
    return source


def _meta(**extra: Any) -> dict[str, Any]:
    payload = {"id": "01a00000-0000-7000-8000-000000000001", "timestamp": "2026-01-01T00:00:00.000Z",
               "cwd": "/w", "cli_version": "0.99.0", "model_provider": "openai", **extra}
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": "session_meta", "payload": payload}


def _item(second: int, payload: dict[str, Any], kind: str = "response_item") -> dict[str, Any]:
    return {"timestamp": f"2026-01-01T00:00:{second:02d}.000Z", "type": kind, "payload": payload}


def _user(second: int, text: str) -> dict[str, Any]:
    return _item(second, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})


def _turn(second: int, model: str, effort: str | None) -> dict[str, Any]:
    settings = {"model": model, "reasoning_effort": effort}
    return _item(second, {"model": model, "collaboration_mode": {"mode": "default", "settings": settings}}, "turn_context")


def _count(second: int, total: int) -> dict[str, Any]:
    usage = {"input_tokens": total - 1, "cached_input_tokens": 0, "output_tokens": 1, "total_tokens": total}
    return _item(second, {"type": "token_count", "info": {"last_token_usage": usage}}, "event_msg")


def test_a_legacy_file_without_ordinals_or_usage_records(tmp_path: Path) -> None:
    """Older Codex: no `ordinal`, usage only in token_count events, a rollback event."""
    source = _rollout(tmp_path, [
        _meta(), _turn(1, "gpt-a", "medium"), _user(2, "first"),
        _item(3, {"type": "custom_tool_call", "call_id": "c1", "id": "ctc_1", "name": "apply_patch", "input": "*** Begin"}),
        _count(4, 100),
        _item(5, {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done"}),
        _item(6, {"type": "message", "role": "assistant", "id": "m1", "content": [{"type": "output_text", "text": "ok"}]}),
        _count(7, 120),
        _turn(8, "gpt-a", "high"), _user(9, "second"),
        _item(10, {"type": "message", "role": "assistant", "id": "m2", "content": [{"type": "output_text", "text": "two"}]}),
        _count(11, 130),
        _item(12, {"type": "thread_rolled_back", "num_turns": 1}, "event_msg"),
        _turn(13, "gpt-b", "high"), _user(14, "again"),
    ])
    translation = TRANSLATOR.translate(source, _read)
    kinds = [(e["type"], e.get("modelId") or e.get("thinkingLevel")) for e in translation.entries
             if e["type"] in ("model_change", "thinking_level_change")]
    assert kinds == [("model_change", "gpt-a"), ("thinking_level_change", "medium"),
                     ("thinking_level_change", "high"), ("model_change", "gpt-b")]
    messages = [e for e in translation.entries if e["type"] == "message"]
    call = messages[1]["message"]
    assert call["content"][0] == {"type": "toolCall", "id": "c1|ctc_1", "name": "apply_patch", "arguments": {"input": "*** Begin"}}
    assert call["usage"]["totalTokens"] == 100 and call["stopReason"] == "toolUse"
    assert messages[2]["message"]["toolCallId"] == "c1|ctc_1" and messages[2]["message"]["isError"] is False
    by_id = {e["id"]: e for e in translation.entries}
    second = next(e for e in messages if e["message"]["role"] == "user" and e["message"]["content"][0]["text"] == "second")
    again = messages[-1]
    assert again["message"]["content"][0]["text"] == "again"
    assert second["id"] not in _path(by_id, again["id"])  # rolled back: "again" branches where "second" did
    assert _pi_view(_llm(translation)) == [("user", "first"), ("call", "c1", "apply_patch", {"input": "*** Begin"}),
                                           ("output", "c1", "Done"), ("assistant", "ok"), ("user", "again")]


def test_unknown_lines_are_kept_as_custom_and_counted_and_a_torn_line_is_held(tmp_path: Path) -> None:
    source = _rollout(tmp_path, [
        _meta(), _user(1, "q"),
        _item(2, {"what": 1}, "realtime_item"),
        _item(3, {"type": "mystery_call", "id": "mc_1"}),
        _item(4, {"type": "mystery_event"}, "event_msg"),
        _item(5, {"type": "function_call", "call_id": "c", "id": "fc_1", "name": "f", "arguments": "{oops"}),
    ], torn=b'[1, 2]\n{"timestamp":"2026-01-01T00:00:06.000Z","type":"token_usage_re')
    translation = TRANSLATOR.translate(source, _read)
    assert translation.unknown_kinds == {
        "realtime_item": 1, "response_item/mystery_call": 1, "event_msg/mystery_event": 1, "unparsable": 1}
    unparsable = next(e for e in translation.entries if e.get("customType") == "codex/unknown:unparsable")
    assert unparsable["data"] == {"line": "[1, 2]"}
    customs = [e["customType"] for e in translation.entries if e["type"] == "custom"]
    assert "codex/unknown:realtime_item" in customs and "codex/unknown:event_msg/mystery_event" in customs
    assert not any(e["type"] == "message" and e["message"]["role"] == "assistant" for e in translation.entries)


def test_a_call_with_arguments_that_are_not_json_keeps_them_as_pi_ai_does(tmp_path: Path) -> None:
    source = _rollout(tmp_path, [
        _meta(), _user(1, "q"),
        _item(2, {"type": "function_call", "call_id": "c", "id": "fc_1", "name": "f", "arguments": "{oops"}),
        _item(3, {"response_id": "r1", "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2,
                                                  "total_tokens": 12}}, "token_usage_record"),
        _item(4, {"type": "function_call_output", "call_id": "c", "output": "x\nProcess exited with code 3\n"}),
    ])
    translation = TRANSLATOR.translate(source, _read)
    messages = [e["message"] for e in translation.entries if e["type"] == "message"]
    call = messages[1]["content"][0]
    assert call["arguments"] == {} and call["argumentsError"].endswith("Received arguments:\n{oops")
    assert messages[1]["usage"] | {"cost": None} == {"input": 6, "output": 2, "cacheRead": 4, "cacheWrite": 0,
                                                     "reasoning": 0, "totalTokens": 12, "cost": None}
    assert messages[1]["responseId"] == "r1"
    assert messages[2]["isError"] is True and "details" not in messages[2]  # the exit code from the output text


def test_the_corpus_fixture_is_the_agent_layout(tmp_path: Path) -> None:
    """discover takes the Codex home or its sessions folder, wherever it is."""
    shutil.copytree(CORPUS, tmp_path / "home")
    moved = {s.session_id: s for s in TRANSLATOR.discover(tmp_path / "home")}
    assert set(moved) == {LINEAR, FORK, INTERACTIVE}
    assert TRANSLATOR.translate(moved[LINEAR], _read).entries == TRANSLATOR.translate(_sources()[LINEAR], _read).entries


def test_names_are_the_last_index_line_for_the_thread_as_pi_writes_them(tmp_path: Path) -> None:
    source_id = "01a00000-0000-7000-8000-000000000001"
    index = [{"id": source_id, "thread_name": "old", "updated_at": "2026-01-01T00:00:01.500000000Z"},
             {"id": "01a00000-0000-7000-8000-0000000000ff", "thread_name": "another thread", "updated_at": "2026-01-01T00:00:02Z"},
             {"id": source_id, "thread_name": " two\r\n\nlines ", "updated_at": "2026-01-01T00:00:09.123456789Z"}]
    (tmp_path / "session_index.jsonl").write_bytes(b"".join(line(value) for value in index))
    source = _rollout(tmp_path, [_meta(), _user(1, "q"), _user(2, "r")])
    translation = TRANSLATOR.translate(source, _read)
    assert [(e["type"], e.get("name")) for e in translation.entries[1:]] == [
        ("message", None), ("session_info", "old"), ("message", None), ("session_info", "two lines")]
    assert translation.entries[-1]["timestamp"] == "2026-01-01T00:00:09.123Z"
    assert translation.leaf_id == translation.entries[-1]["id"]


_ODD_VALUES: list[Any] = [None, True, -1, 1.5, "", "x", [], {}, [1, "a"], {"type": 3}]


def _spoil(value: Any, rng: random.Random) -> Any:
    """`value` with one of its fields, at any depth, given a value of another type."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(sorted(value))
        return {**value, key: _spoil(value[key], rng)}
    if isinstance(value, list) and value and rng.random() < 0.7:
        at = rng.randrange(len(value))
        return [*value[:at], _spoil(value[at], rng), *value[at + 1:]]
    return rng.choice(_ODD_VALUES)


@pytest.mark.parametrize("seed", range(6))
def test_lines_of_any_shape_never_stop_a_translation(tmp_path: Path, seed: int) -> None:
    """A rollout is input from anywhere: odd lines become what they can, never an exception."""
    rng = random.Random(seed)
    source = _sources()[INTERACTIVE]
    spoiled: dict[Path, bytes] = {}
    for path in source.files:
        texts = path.read_text().splitlines()
        out = []
        for text in texts:
            value = json.loads(text)
            out.append(json.dumps(_spoil(value, rng)) if rng.random() < 0.5 else text)
        spoiled[path] = "".join(t + "\n" for t in out).encode()
    translation = TRANSLATOR.translate(source, lambda path: spoiled[path])
    _session(translation)  # and pi's reader takes what came out
    assert all(isinstance(entry["id"], str) for entry in translation.entries)


def test_a_model_call_stays_one_message_around_items_pi_has_no_block_for(tmp_path: Path) -> None:
    """A server-side web search, an older model's shell call, an image the user attached."""
    image = "data:image/png;base64,iVBORw0KGgo="
    source = _rollout(tmp_path, [
        _meta(),
        _item(1, {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": image}]}),
        _item(2, {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]}),
        _item(3, {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}}),
        _item(4, {"type": "local_shell_call", "call_id": "c", "id": "lsh_1", "action": {"type": "exec", "command": ["ls"]}}),
        _item(5, {"response_id": "r1", "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}, "token_usage_record"),
        _item(6, {"type": "function_call_output", "call_id": "c", "output": "a\n"}),
    ])
    translation = TRANSLATOR.translate(source, _read)
    kinds = [(e["type"], e.get("customType") or e["message"]["role"]) for e in translation.entries
             if e["type"] in ("message", "custom")][1:]
    assert kinds == [("message", "user"), ("message", "assistant"), ("custom", "codex/web_search_call"),
                     ("message", "toolResult")]
    user = translation.entries[1]["message"]["content"]
    assert user == [{"type": "text", "text": "look"}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
    reply = translation.entries[2]["message"]
    assert [b["type"] for b in reply["content"]] == ["thinking", "toolCall"] and reply["content"][0]["thinking"] == "hm"
    assert reply["content"][1] == {"type": "toolCall", "id": "c|lsh_1", "name": "local_shell",
                                   "arguments": {"type": "exec", "command": ["ls"]}}
    assert translation.entries[-1]["message"]["toolName"] == "local_shell" and translation.unknown_kinds == {}
