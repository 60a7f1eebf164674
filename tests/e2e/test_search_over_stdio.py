"""session/search over stdio: every session under the root, filters, pages, the leaf's path,
progress, and entries another process appends found on the next search."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Calls, RawDaemon, request
from support.messages import line, plain_user
from support.sessions import session_file

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"


@pytest.fixture
def searching(start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path) -> Calls:
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    daemon.initialize({"indexDir": str(tmp_path / "index")})
    return Calls(daemon)


def _demo(sessions_dir: Path) -> Path:
    path = sessions_dir / "--home-user-demo--" / "demo.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, path)
    return path


def _ids(result: dict[str, Any]) -> list[str]:
    return [hit["entryId"] for hit in result["hits"]]


def test_search_finds_filters_and_marks_the_leafs_path(searching: Calls, sessions_dir: Path) -> None:
    demo = _demo(sessions_dir)
    other = session_file(sessions_dir, "other.jsonl", plain_user("a0000001", None, "a ValueError elsewhere"))
    found = searching.result("session/search", {"query": "ValueError"})
    assert {hit["path"] for hit in found["hits"]} == {str(demo), str(other)}
    assert found["indexed"]["filesReindexed"] == 2 and found["indexed"]["entriesAdded"] == 17
    hit = next(hit for hit in found["hits"] if hit["entryId"] == "1b2c3d4e")
    start, end = hit["highlights"][0]
    assert hit["snippet"][start:end] == "ValueError" and hit["role"] == "user" and not hit["onLeafPath"]
    assert next(h for h in found["hits"] if h["entryId"] == "5f6a7b8c")["onLeafPath"]
    project = searching.result("session/search", {"query": "ValueError", "cwd": "/home/user/demo", "roles": ["user"]})
    assert _ids(project) == ["1b2c3d4e"]
    assert _ids(searching.result("session/search", {"query": '"empty result"'})) != []
    assert "3d4e5f6a" in _ids(searching.result("session/search", {"query": "secon*"}))
    error = searching.error("session/search", {"query": '"unclosed'})
    assert error["code"] == -32602
    sid = searching.result("session/open", {"path": str(demo)})["sessionId"]
    searching.result("session/branch", {"sessionId": sid, "entryId": "2c3d4e5f"})
    moved = searching.result("session/search", {"query": "ValueError", "session": sid})
    on_path = {hit["entryId"] for hit in moved["hits"] if hit["onLeafPath"]}
    assert on_path == {"1b2c3d4e", "2c3d4e5f", "f6a7b8c9"}  # the open session's leaf moved


def test_pages_follow_the_cursor_and_new_lines_are_found(searching: Calls, sessions_dir: Path) -> None:
    path = session_file(sessions_dir, "many.jsonl", *[plain_user(f"a{n:07d}", None, f"needle {n}") for n in range(25)])
    first = searching.result("session/search", {"query": "needle", "limit": 10})
    seen = _ids(first)
    cursor = first["cursor"]
    while cursor is not None:
        page = searching.result("session/search", {"query": "needle", "limit": 10, "cursor": cursor})
        seen += _ids(page)
        cursor = page["cursor"]
    assert sorted(seen) == [f"a{n:07d}" for n in range(25)]
    with path.open("ab") as out:  # another process, pi for instance, appends
        out.write(line(plain_user("b0000001", "a0000024", "a haystack")))
    again = searching.result("session/search", {"query": "haystack"})
    assert _ids(again) == ["b0000001"] and again["indexed"]["filesAppended"] == 1


def test_progress_is_reported_with_a_token(searching: Calls, sessions_dir: Path) -> None:
    for n in range(3):
        session_file(sessions_dir, f"s{n}.jsonl", plain_user("a0000001", None, "word"))
    daemon = searching.daemon
    daemon.send_message(request(99, "session/search", {"query": "word", "workDoneToken": "search-1"}))
    seen: list[dict[str, Any]] = []
    while (message := daemon.next()).get("id") != 99:
        seen.append(message)
    kinds = [m["params"]["value"]["kind"] for m in seen if m.get("method") == "$/progress"]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert len(message["result"]["hits"]) == 3
