"""Viewing never writes: a file the daemon may not write is shown read-only, its appends refused
(-32024 with a reason), and the CLI's views never rewrite, migrate or refuse a file they read."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree import cli
from sessiontree import protocol as p
from sessiontree.errors import ReadOnlySession
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.store import confined

HEADER = {"type": "session", "version": 3, "id": "ro-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
V2_HEADER = {**HEADER, "version": 2}
V1_HEADER = {key: value for key, value in HEADER.items() if key != "version"}


def _message(entry_id: str | None, parent: str | None, text: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "message", "timestamp": "2026-01-01T00:00:01.000Z"}
    if entry_id is not None:
        entry.update(id=entry_id, parentId=parent)
    entry["message"] = {"role": "user", "content": text, "timestamp": 1}
    return entry


def _write(path: Path, header: dict[str, Any], *entries: dict[str, Any]) -> bytes:
    data = b"".join(orjson.dumps(line) + b"\n" for line in (header, *entries))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def _refuse_write_opens(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """The write open fails as it does for an unprivileged user (the tests may run as root)."""
    real: Callable[..., int] = confined.open_file

    def open_file(root: Path, path: Path, flags: int, one_name: bool = True) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(code, os.strerror(code), str(path))
        return real(root, path, flags, one_name)

    monkeypatch.setattr(confined, "open_file", open_file)


@pytest.mark.parametrize(("code", "reason"), [(errno.EACCES, "permission"), (errno.EROFS, "read-only-filesystem")])
def test_a_file_the_daemon_may_not_write_opens_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, reason: str
) -> None:
    path = tmp_path / "s.jsonl"
    data = _write(path, HEADER, _message("a", None, "hello"))
    _refuse_write_opens(monkeypatch, code)
    service = SessionService(ServiceConfig(sessions_dir=tmp_path))
    opened = service.open(p.OpenParams(str(path)))
    assert opened.entry_count == 1 and opened.leaf_id == "a"
    assert opened.warnings[0].kind == "read-only" and reason in opened.warnings[0].message
    with pytest.raises(ReadOnlySession) as refused:
        service.append(p.AppendParams(opened.session_id, {"type": "message", "message": {"role": "user", "content": "more", "timestamp": 1}}))
    assert refused.value.code == -32024
    assert refused.value.data == {"error": "ReadOnlySession", "path": str(path), "reason": reason}
    assert path.read_bytes() == data
    service.close_all()


def test_an_old_file_the_daemon_may_not_write_is_shown_migrated_and_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.jsonl"
    data = _write(path, V1_HEADER, _message(None, None, "one"), _message(None, None, "two"))
    _refuse_write_opens(monkeypatch, errno.EACCES)
    service = SessionService(ServiceConfig(sessions_dir=tmp_path))
    opened = service.open(p.OpenParams(str(path)))
    assert opened.header["version"] == 3 and opened.entry_count == 2
    assert opened.warnings[0].kind == "read-only" and "version 1" in opened.warnings[0].message
    context = service.context(p.ContextParams(session_id=opened.session_id))
    assert [m["content"] for m in context.messages] == ["one", "two"]
    service.close_all()
    assert path.read_bytes() == data and sorted(tmp_path.iterdir()) == [path]


def test_an_old_file_in_a_folder_the_daemon_may_not_write_is_shown_not_migrated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.jsonl"
    data = _write(path, V2_HEADER, _message("a", None, "one"))
    real = confined.Directory.create_unique

    def create_unique(self: confined.Directory, stem: str, access: int = os.O_WRONLY) -> tuple[str, int]:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(confined.Directory, "create_unique", create_unique)
    service = SessionService(ServiceConfig(sessions_dir=tmp_path))
    opened = service.open(p.OpenParams(str(path)))
    assert opened.warnings[0].kind == "read-only" and "folder" in opened.warnings[0].message
    with pytest.raises(ReadOnlySession):
        service.append(p.AppendParams(opened.session_id, {"type": "message", "message": {"role": "user", "content": "more", "timestamp": 1}}))
    service.close_all()
    monkeypatch.setattr(confined.Directory, "create_unique", real)
    assert path.read_bytes() == data and sorted(tmp_path.iterdir()) == [path]


def test_the_cli_views_an_old_file_without_migrating_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.jsonl"
    data = _write(path, V2_HEADER, _message("a", None, "hello there"))
    for command in (["tree"], ["context"], ["stats"], ["export", "--format", "markdown"]):
        assert cli.main([*command, str(path)]) == 0
    out, err = capsys.readouterr()
    assert "hello there" in out and "sessiontree migrate" in err
    assert path.read_bytes() == data and sorted(tmp_path.iterdir()) == [path]


def test_the_cli_views_a_file_with_a_second_hard_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    data = _write(path, HEADER, _message("a", None, "linked"))
    os.link(path, tmp_path / "backup.jsonl")
    assert cli.main(["tree", str(path)]) == 0
    assert "linked" in capsys.readouterr().out
    assert path.read_bytes() == data


def test_migrate_rewrites_an_old_file_and_keeps_the_original(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.jsonl"
    data = _write(path, V2_HEADER, _message("a", None, "hello"))
    assert cli.main(["migrate", str(path)]) == 0
    assert orjson.loads(path.read_bytes().split(b"\n")[0])["version"] == 3
    assert (tmp_path / "old.jsonl.v2.bak").read_bytes() == data
    assert "migrated from version 2" in capsys.readouterr().err
    assert cli.main(["migrate", str(path)]) == 0
    assert "already version 3" in capsys.readouterr().err
    assert cli.main(["migrate", str(tmp_path / "missing.jsonl")]) == 1


def test_search_on_a_terminal_says_where_its_index_is_and_how_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sessions"
    _write(root / "--p--" / "s.jsonl", HEADER, _message("a", None, "a findable word"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert cli.main(["search", "findable", "--sessions-dir", str(root)]) == 0
    err = capsys.readouterr().err
    index = tmp_path / "cache" / "sessiontree" / "index"
    assert f"indexed 1 session files into {index}" in err and " MB)" in err
    assert cli.main(["search", "findable", "--sessions-dir", str(root)]) == 0  # nothing new: nothing said
    assert "indexed" not in capsys.readouterr().err
