"""Absent and null over stdio: `null` for an optional field is its default (treeView's offset and
limit, export's scope), a wrong type is -32602 naming the field in `data.field`."""

from __future__ import annotations

from support.daemon import Calls
from support.messages import user_entry


def test_null_is_the_default_and_a_wrong_type_names_its_field(calls: Calls) -> None:
    sid = calls.result("session/create", {"cwd": "/w"})["sessionId"]
    calls.result("session/append", {"sessionId": sid, "entry": user_entry("hello")})
    absent = calls.result("session/treeView", {"sessionId": sid})
    assert calls.result("session/treeView", {"sessionId": sid, "offset": None, "limit": None}) == absent
    exported = calls.result("session/export", {"sessionId": sid, "format": "markdown"})
    assert calls.result("session/export", {"sessionId": sid, "format": "markdown", "scope": None}) == exported
    for params, field in (({"sessionId": sid, "offset": "1"}, "offset"), ({"sessionId": sid, "limit": True}, "limit")):
        error = calls.error("session/treeView", params)
        assert error["code"] == -32602 and error["data"]["field"] == field
    error = calls.error("session/search", {"query": "x", "roles": "user"})  # a string is not an array of roles
    assert error["code"] == -32602 and error["data"]["field"] == "roles"
