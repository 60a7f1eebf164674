"""`sessiontree trash|archive|restore FILE…` as a user runs it: the files move, nothing is deleted,
a terminal is asked first, and a file outside the sessions root is refused."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sessiontree import cli

HEADER = {"type": "session", "version": 3, "id": "cli-retire", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def _session(root: Path, name: str = "2026-01-01T00-00-00-000Z_cli-retire.jsonl") -> Path:
    path = root / "--p--" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(HEADER) + b"\n")
    return path


def _run(root: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(data)}
    command = [sys.executable, "-m", "sessiontree", *args, "--sessions-dir", str(root)]
    return subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60)


def test_trash_and_restore_by_the_cli(tmp_path: Path) -> None:
    root, data = tmp_path / "sessions", tmp_path / "data"
    path = _session(root)
    content = path.read_bytes()
    trashed = _run(root, data, "trash", str(path))
    assert trashed.returncode == 0, trashed.stderr
    assert not path.exists() and (data / "Trash" / "files" / path.name).read_bytes() == content
    assert (data / "Trash" / "info" / f"{path.name}.trashinfo").exists()
    assert f"{path} -> {data / 'Trash' / 'files' / path.name}" in trashed.stderr
    restored = _run(root, data, "restore", str(path))
    assert restored.returncode == 0, restored.stderr
    assert path.read_bytes() == content


def test_archive_and_restore_by_the_cli(tmp_path: Path) -> None:
    root, data = tmp_path / "sessions", tmp_path / "data"
    path = _session(root)
    assert _run(root, data, "archive", str(path)).returncode == 0
    archived = path.parent / ".archive" / path.name
    assert archived.exists() and not path.exists()
    assert _run(root, data, "restore", str(archived)).returncode == 0
    assert path.exists() and not archived.exists()


def test_the_cli_refuses_a_file_outside_the_root_in_plain_words(tmp_path: Path) -> None:
    root, data = tmp_path / "sessions", tmp_path / "data"
    _session(root)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(orjson.dumps(HEADER) + b"\n")
    refused = _run(root, data, "trash", str(outside))
    assert refused.returncode == 1 and "outside the sessions directory" in refused.stderr
    assert "Traceback" not in refused.stderr and outside.exists()


def test_a_terminal_is_asked_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    root, data = tmp_path / "sessions", tmp_path / "data"
    path = _session(root)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    assert cli.main(["trash", str(path), "--sessions-dir", str(root)]) == 1
    assert path.exists() and "nothing moved" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert cli.main(["trash", str(path), "--sessions-dir", str(root)]) == 0
    assert not path.exists()
    assert cli.main(["restore", str(path), "--sessions-dir", str(root)]) == 0
    monkeypatch.setattr(sys, "stdin", Terminal(""))
    assert cli.main(["archive", "--yes", str(path), "--sessions-dir", str(root)]) == 0
    assert not path.exists()
