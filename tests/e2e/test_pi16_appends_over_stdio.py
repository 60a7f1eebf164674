"""The entries pi 1.6 writes, over real stdio: usage and context_edit appends, session/editContext
and each of its refusals, retain-none compactions, folded names and branch summaries' fromId."""

from __future__ import annotations

from typing import Any

import pytest

from support.daemon import Calls

CWD = "/work/project"
USAGE = {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12, "cost": {"total": 0.1}}


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def _assistant(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p", "model": "m",
               "api": "x", "usage": USAGE, "stopReason": "stop", "timestamp": 2}
    return {"type": "message", "message": message}


def _system(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "system", "content": text, "sections": {"a": text}, "timestamp": 0}}


class Session:
    """A session created over stdio, and what to ask of it."""

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.id = calls.result("session/create", {"cwd": CWD})["sessionId"]

    def append(self, entry: dict[str, Any], **params: Any) -> str:
        entry_id: str = self.calls.result("session/append", {"sessionId": self.id, "entry": entry, **params})["id"]
        return entry_id

    def entry(self, entry_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.calls.result("session/entries", {"sessionId": self.id, "ids": [entry_id]})["entries"][0]
        return found

    def contents(self) -> list[Any]:
        messages = self.calls.result("session/context", {"sessionId": self.id})["messages"]
        return [m["summary"] if m["role"] == "compactionSummary" else m["content"] for m in messages]

    def cursor(self) -> str:
        cursor: str = self.calls.result("session/info", {"sessionId": self.id})["cursor"]
        return cursor

    def edit(self, target: str, replacement: Any, **params: Any) -> dict[str, Any]:
        return self.calls.answer("session/editContext", {"sessionId": self.id, "targetId": target, "replacement": replacement, **params})


def test_usage_entries_are_written_in_pi_key_order_and_add_nothing_to_the_context(calls: Calls) -> None:
    session = Session(calls)
    session.append(_user("q1"))
    plain = session.append({"type": "usage", "note": "", "usage": USAGE, "model": "m", "provider": "p", "kind": "cache_warm"})
    noted = session.append({"type": "usage", "kind": "summary", "provider": "p", "model": "m", "usage": USAGE, "note": "why"})
    assert list(session.entry(plain)) == ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage"]
    assert list(session.entry(noted))[-1] == "note"
    assert session.contents() == ["q1"]


def test_context_edits_appended_are_checked_and_stored_as_pi_stores_them(calls: Calls) -> None:
    session = Session(calls)
    q1 = session.append(_user("q1"))
    a1 = session.append(_assistant("a1"))
    edit = session.append({"replacement": {"content": "a1 edited"}, "targetId": a1, "type": "context_edit"})
    stored = session.entry(edit)
    assert list(stored) == ["type", "id", "parentId", "timestamp", "targetId", "replacement"]
    assert stored["replacement"] == {"content": [{"type": "text", "text": "a1 edited"}]}
    session.append({"type": "context_edit", "targetId": q1, "replacement": {"content": "q1 edited"}})
    assert session.contents() == ["q1 edited", [{"type": "text", "text": "a1 edited"}]]
    refused = calls.error("session/append", {"sessionId": session.id, "entry": {"type": "context_edit", "targetId": "0badbeef", "replacement": None}})
    assert (refused["code"], refused["data"]["field"]) == (-32011, "entry.targetId")


def test_edit_context_replaces_and_hides_on_this_branch_only(calls: Calls) -> None:
    session = Session(calls)
    q1 = session.append(_user("q1"))
    a1 = session.append(_assistant("a1"))
    q2 = session.append(_user("q2"))
    answer = session.edit(a1, None, expectedLeafId=q2)
    assert answer["result"]["parentId"] == q2 and answer["result"]["leafId"] == answer["result"]["id"]
    assert session.contents() == ["q1", "q2"]
    session.edit(q1, {"content": [{"type": "text", "text": "q1 as blocks"}]})
    assert session.contents() == [[{"type": "text", "text": "q1 as blocks"}], "q2"]
    calls.result("session/branch", {"sessionId": session.id, "entryId": q2})  # back above the edits
    assert session.contents() == ["q1", [{"type": "text", "text": "a1"}], "q2"]


@pytest.mark.parametrize(
    ("target", "replacement", "code", "field"),
    [
        ("unknown", None, -32011, "targetId"),
        ("off-branch", None, -32602, "targetId"),
        ("system", {"content": "x"}, -32602, "targetId"),
        ("summary", None, -32602, "targetId"),
        ("label", None, -32602, "targetId"),
        ("q1", "a bare string", -32602, "replacement"),
        ("q1", {"text": "no content"}, -32602, "replacement"),
        ("q1", {"content": 5}, -32602, "replacement"),
        ("q1", "missing", -32602, "replacement"),
    ],
)
def test_edit_context_refusals_name_the_field_and_write_nothing(
    calls: Calls, target: str, replacement: Any, code: int, field: str
) -> None:
    session = Session(calls)
    ids = {"system": session.append(_system("prompt")), "q1": session.append(_user("q1"))}
    ids["off-branch"] = session.append(_user("abandoned"))
    calls.result("session/branch", {"sessionId": session.id, "entryId": ids["q1"], "summary": "left it"})
    ids["summary"] = session.cursor()
    ids["label"] = calls.result("session/label", {"sessionId": session.id, "targetId": ids["q1"], "label": "x"})["id"]
    ids["unknown"] = "0badbeef"
    before = session.cursor()
    params: dict[str, Any] = {"sessionId": session.id, "targetId": ids[target]}
    if replacement != "missing":
        params["replacement"] = replacement
    response = calls.answer("session/editContext", params)
    assert response["error"]["code"] == code, response
    assert field in (response["error"]["data"].get("field") or " ".join(response["error"]["data"].get("problems", [])))
    assert session.cursor() == before


def test_edit_context_with_a_stale_leaf_is_a_leaf_conflict(calls: Calls) -> None:
    session = Session(calls)
    q1 = session.append(_user("q1"))
    session.append(_user("q2"))
    assert session.edit(q1, None, expectedLeafId=q1)["error"]["code"] == -32012


def test_compactions_branch_summaries_and_names_as_pi_16_writes_them(calls: Calls) -> None:
    session = Session(calls)
    q1 = session.append(_user("q1"))
    a1 = session.append(_assistant("a1"))
    checkpoint = {"role": "system", "content": "", "sections": {"a": "b"}, "timestamp": 5}
    kept_nothing = session.append(
        {"type": "compaction", "summary": "S", "tokensBefore": 9, "systemMessage": checkpoint, "fromHook": False,
         "usage": USAGE, "details": {"readFiles": []}}
    )
    stored = session.entry(kept_nothing)
    assert stored["firstKeptEntryId"] == kept_nothing
    assert list(stored)[4:] == ["summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook", "systemMessage"]
    assert session.contents() == ["", "S"]  # the checkpoint, then the summary; nothing kept
    summary = calls.result("session/branch", {"sessionId": session.id, "entryId": q1, "summary": "tried it"})
    assert session.entry(summary["summaryEntryId"])["fromId"] == kept_nothing  # the leaf that was left
    assert session.entry(kept_nothing)["parentId"] == a1
    name = calls.result("session/setName", {"sessionId": session.id, "name": " two\r\n\nlines \n"})["id"]
    assert session.entry(name)["name"] == "two lines"
    assert calls.result("session/info", {"sessionId": session.id})["name"] == "two lines"
