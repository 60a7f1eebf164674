"""Retiring sessions over real stdio: session/trash (the freedesktop.org trash, restorable),
session/archive (the folder's `.archive/`), session/restore, and an open session closed with
`session/didClose` when its file goes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from support.daemon import Calls, RawDaemon, request

NEW = {"type": "message", "message": {"role": "user", "content": "hello", "timestamp": 1}}


@pytest.fixture
def data_home(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def calls(start_daemon: Callable[..., RawDaemon], sessions_dir: Path, data_home: Path) -> Calls:
    daemon = start_daemon("--sessions-dir", str(sessions_dir), env={"XDG_DATA_HOME": str(data_home)})
    daemon.initialize()
    return Calls(daemon)


def _session(calls: Calls, cwd: str = "/home/me/project") -> dict[str, Any]:
    created = calls.result("session/create", {"cwd": cwd})
    calls.result("session/append", {"sessionId": created["sessionId"], "entry": NEW})
    return created


def _next_message(calls: Calls, method: str, params: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The notifications that came before the answer, and the answer."""
    calls.daemon.send_message(request(next(calls.ids), method, params))
    before = []
    while "id" not in (message := calls.daemon.next()):
        before.append(message)
    return before, message


def test_trash_moves_the_file_to_the_trash_with_its_info_and_restore_brings_it_back(
    calls: Calls, sessions_dir: Path, data_home: Path
) -> None:
    created = _session(calls)
    path = Path(created["path"])
    data = path.read_bytes()
    notes, answer = _next_message(calls, "session/trash", {"path": str(path)})
    trashed = answer["result"]
    trash = data_home / "Trash"
    assert trashed["movedTo"] == str(trash / "files" / path.name)
    assert trashed["infoPath"] == str(trash / "info" / (path.name + ".trashinfo"))
    assert trashed["closedSessionId"] == created["sessionId"]
    assert [n["method"] for n in notes if n["method"] == "session/didClose"] == ["session/didClose"]
    closed = next(n for n in notes if n["method"] == "session/didClose")["params"]
    assert closed == {"sessionId": created["sessionId"], "path": str(path), "reason": "trashed"}
    assert not path.exists() and Path(trashed["movedTo"]).read_bytes() == data
    info = Path(trashed["infoPath"]).read_text().splitlines()
    assert info[0] == "[Trash Info]" and unquote(info[1].removeprefix("Path=")) == str(path)
    assert info[2].startswith("DeletionDate=")
    assert calls.error("session/info", {"sessionId": created["sessionId"]})["code"] == -32010
    assert calls.result("session/list", {})["sessions"] == []

    restored = calls.result("session/restore", {"path": str(path)})  # by where it was
    assert restored == {"path": str(path), "restoredFrom": trashed["movedTo"]}
    assert path.read_bytes() == data and os.listdir(trash / "files") == os.listdir(trash / "info") == []
    assert [s["path"] for s in calls.result("session/list", {})["sessions"]] == [str(path)]


def test_a_second_trashed_file_of_the_same_name_gets_another_name(calls: Calls, data_home: Path) -> None:
    path = Path(_session(calls)["path"])
    first = calls.result("session/trash", {"path": str(path)})
    calls.result("session/restore", {"path": first["movedTo"]})  # by where it lies
    (data_home / "Trash" / "files" / path.name).write_text("another file's")
    second = calls.result("session/trash", {"path": str(path)})
    assert second["movedTo"] == str(data_home / "Trash" / "files" / f"{path.stem}.2.jsonl")
    assert (data_home / "Trash" / "files" / path.name).read_text() == "another file's"


def test_archive_hides_the_session_lists_it_on_demand_and_restore_brings_it_back(
    calls: Calls, sessions_dir: Path
) -> None:
    created = _session(calls)
    path = Path(created["path"])
    notes, answer = _next_message(calls, "session/archive", {"path": str(path)})
    archived = answer["result"]
    assert archived["movedTo"] == str(path.parent / ".archive" / path.name) and archived.get("infoPath") is None
    assert any(n["method"] == "session/didClose" and n["params"]["reason"] == "archived" for n in notes)
    assert calls.result("session/list", {})["sessions"] == []
    listed = calls.result("session/list", {"archived": True})["sessions"]
    assert [s["path"] for s in listed] == [archived["movedTo"]]
    assert [s["path"] for s in calls.result("session/list", {"cwd": "/home/me/project", "archived": True})["sessions"]] == [
        archived["movedTo"]
    ]
    restored = calls.result("session/restore", {"path": archived["movedTo"]})
    assert restored == {"path": str(path), "restoredFrom": archived["movedTo"]}
    assert [s["path"] for s in calls.result("session/list", {})["sessions"]] == [str(path)]


def test_restore_never_replaces_a_file_and_nothing_outside_the_root_is_moved(
    calls: Calls, sessions_dir: Path, tmp_path: Path
) -> None:
    path = Path(_session(calls)["path"])
    archived = calls.result("session/archive", {"path": str(path)})
    path.write_text("a new file of the same name")
    taken = calls.error("session/restore", {"path": archived["movedTo"]})
    assert taken["code"] == -32025 and taken["data"] == {"error": "NameTaken", "path": str(path)}
    assert Path(archived["movedTo"]).exists() and path.read_text() == "a new file of the same name"

    outside = tmp_path / "outside.jsonl"
    outside.write_text("{}\n")
    assert calls.error("session/trash", {"path": str(outside)})["code"] == -32013
    assert calls.error("session/archive", {"path": str(outside)})["code"] == -32013
    assert calls.error("session/restore", {"path": str(outside)})["code"] == -32013
    assert outside.read_text() == "{}\n"
    assert calls.error("session/trash", {"path": str(sessions_dir / "missing.jsonl")})["code"] == -32015
    assert calls.error("session/restore", {"path": str(sessions_dir / "missing.jsonl")})["code"] == -32015
    linked = path.parent / "linked.jsonl"
    os.link(path, path.parent / "second-name.jsonl")
    os.rename(path.parent / "second-name.jsonl", linked)
    assert calls.error("session/trash", {"path": str(linked)})["code"] == -32013  # two names: refused
    assert linked.exists()


def test_the_root_trash_is_used_when_the_home_trash_is_on_another_file_system(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path
) -> None:
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(sessions_dir).st_dev:
        pytest.skip("needs /dev/shm on another file system than the sessions root")
    daemon = start_daemon("--sessions-dir", str(sessions_dir), env={"XDG_DATA_HOME": str(other / "no-such-data")})
    daemon.initialize()
    calls = Calls(daemon)
    path = Path(_session(calls)["path"])
    trashed = calls.result("session/trash", {"path": str(path)})
    assert trashed["movedTo"] == str(sessions_dir / ".trash" / "files" / path.name)
    assert not (other / "no-such-data").exists()
    assert calls.result("session/list", {})["sessions"] == []
    assert calls.result("session/restore", {"path": str(path)})["path"] == str(path)


def test_the_root_trash_is_used_when_the_home_trash_cannot_be_made(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "data" / "Trash" / "files"  # a file where the trash's folder goes
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a folder\n")
    daemon = start_daemon("--sessions-dir", str(sessions_dir), env={"XDG_DATA_HOME": str(tmp_path / "data")})
    daemon.initialize()
    calls = Calls(daemon)
    path = Path(_session(calls)["path"])
    trashed = calls.result("session/trash", {"path": str(path)})
    assert trashed["movedTo"] == str(sessions_dir / ".trash" / "files" / path.name)
    assert calls.result("session/restore", {"path": str(path)})["path"] == str(path)
