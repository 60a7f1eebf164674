"""Sessions agents keep in nested folders (`<root>/<cwd>/<parent>/<run>/*.jsonl`, sub-agents) are
listed with their `parentSession`, counted as their parent's `children`, reachable from the parent
(`session/list` with `parentSession`) and searched; dot folders (an archive, a trash) are not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from support.daemon import Calls


def _session(path: Path, session_id: str, text: str, parent: str | None = None) -> Path:
    header: dict[str, Any] = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00.000Z",
                              "cwd": "/work/p"}
    if parent is not None:
        header["parentSession"] = parent
    entry = {"type": "message", "id": "a0000001", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
             "message": {"role": "user", "content": text, "timestamp": 1767225601000}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(entry) + b"\n")
    return path


def _family(root: Path) -> tuple[Path, Path, Path]:
    folder = root / "--work-p--"
    parent = _session(folder / "2026-01-01T00-00-00-000Z_parent.jsonl", "parent", "the parent's plan")
    child = _session(folder / "parent" / "run-1" / "2026-01-01T00-00-01-000Z_child.jsonl", "child",
                     "a sub-agent's zebra", str(parent))
    by_id = _session(folder / "parent" / "run-2" / "deeper" / "x.jsonl", "grandchild", "found by id", "child")
    _session(folder / ".archive" / "old.jsonl", "archived", "archived zebra")
    _session(root / ".trash" / "files" / "gone.jsonl", "trashed", "trashed zebra")
    return parent, child, by_id


def test_nested_sessions_are_listed_with_their_parent_and_counted(calls: Calls, sessions_dir: Path) -> None:
    parent, child, grandchild = _family(sessions_dir)
    for params in ({}, {"cwd": "/work/p"}):
        listed = {s["path"]: s for s in calls.result("session/list", params)["sessions"]}
        assert sorted(listed) == sorted(map(str, (parent, child, grandchild)))
        assert listed[str(child)]["parentSession"] == str(parent)
        assert listed[str(parent)]["children"] == 1 and listed[str(child)]["children"] == 1
        assert "children" not in listed[str(grandchild)]
    children = calls.result("session/list", {"parentSession": str(parent)})["sessions"]
    assert [s["path"] for s in children] == [str(child)]
    assert [s["id"] for s in calls.result("session/list", {"parentSession": "child"})["sessions"]] == ["grandchild"]


def test_nested_sessions_are_searched_and_dot_folders_are_not(calls: Calls, sessions_dir: Path) -> None:
    _, child, _ = _family(sessions_dir)
    hits = calls.result("session/search", {"query": "zebra"})["hits"]
    assert [hit["path"] for hit in hits] == [str(child)]
