"""Entries pi 1.6 writes, as `session/append` checks and builds them (unit level; over stdio:
tests/e2e/test_pi16_appends_over_stdio.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.entries import build_line, session_name, validate_entry
from sessiontree.errors import EntryNotFound, InvalidParams
from sessiontree.store import MemoryStorage, Session
from sessiontree.store.session import AppendRequest
from support.messages import assistant, user
from support.sessions import session_bytes


def _edit(target: str, replacement: Any = None) -> dict[str, Any]:
    return {"type": "context_edit", "targetId": target, "replacement": replacement}


def test_an_edit_pipelined_after_an_append_sees_the_path_through_it() -> None:
    """The leaf the edit is appended below may be a line the same write adds: its path still
    reaches the target (and does not reach an entry off that path)."""
    session = Session.load(MemoryStorage(session_bytes(user("a", None, "q1", 1), assistant("b", "a", "a1", 2), user("c", "a", "other", 3))))
    session.index.leaf_id = "b"
    outcomes, _ = session.append_many(
        [
            AppendRequest([{"type": "message", "message": {"role": "user", "content": "q2", "timestamp": 4}}]),
            AppendRequest([_edit("b", {"content": "a1 edited"})]),
            AppendRequest([_edit("c")]),
        ]
    )
    first, second, third = outcomes
    assert not isinstance(first, Exception) and not isinstance(second, Exception)
    assert second[0].entry["replacement"] == {"content": [{"type": "text", "text": "a1 edited"}]}
    assert isinstance(third, InvalidParams) and third.data["field"] == "entry.targetId"


def test_an_edit_of_an_unknown_entry_is_entry_not_found() -> None:
    session = Session.load(MemoryStorage(session_bytes(user("a", None, "q1", 1))))
    with pytest.raises(EntryNotFound):
        session.append([_edit("zzzzzzzz")])


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "context_edit", "replacement": None}, "entry.targetId"),
        ({"type": "context_edit", "targetId": "a"}, "entry.replacement"),
        ({"type": "context_edit", "targetId": "a", "replacement": []}, "entry.replacement"),
        ({"type": "usage", "kind": "k", "provider": "p", "model": "m"}, "entry.usage"),
        ({"type": "usage", "kind": "k", "provider": "p", "model": "m", "usage": {}, "note": 5}, "entry.note"),
        ({"type": "compaction", "summary": "s", "tokensBefore": 1, "firstKeptEntryId": 5}, "entry.firstKeptEntryId"),
        ({"type": "compaction", "summary": "s", "tokensBefore": 1, "systemMessage": "text"}, "entry.systemMessage"),
        ({"type": "branch_summary", "fromId": "root", "summary": "s", "usage": []}, "entry.usage"),
    ],
)
def test_new_fields_are_checked(entry: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        validate_entry(entry)
    assert caught.value.data["field"] == field


def test_pi_16_key_orders_and_what_is_left_out() -> None:
    compaction = {"type": "compaction", "systemMessage": {"role": "system"}, "fromHook": True, "usage": {}, "details": {},
                  "tokensBefore": 1, "firstKeptEntryId": None, "summary": "s"}
    line = build_line(compaction, "k", "p", "t")
    assert list(line) == ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook", "systemMessage"]
    assert line["firstKeptEntryId"] == "k"
    assert "systemMessage" not in build_line({**compaction, "systemMessage": None}, "k", "p", "t")
    summary = build_line({"type": "branch_summary", "fromHook": False, "usage": {}, "details": 1, "summary": "s", "fromId": "x"}, "b", "p", "t")
    assert list(summary)[4:] == ["fromId", "summary", "details", "usage", "fromHook"]
    usage = build_line({"type": "usage", "note": "", "usage": {}, "model": "m", "provider": "p", "kind": "k"}, "u", None, "t")
    assert list(usage)[4:] == ["kind", "provider", "model", "usage"]


def test_session_names_fold_line_breaks_then_trim_as_javascript() -> None:
    assert session_name("\ufeff a\r\n\r\nb\rc\n ") == "a b c"
    assert build_line({"type": "session_info", "name": "x\ny"}, "i", None, "t")["name"] == "x y"
