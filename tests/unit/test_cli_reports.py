"""`sessiontree export`, `stats` and `search`: in this process, as the daemon would answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontree.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the search index, out of the user's cache
    sessions = tmp_path / "sessions"
    (sessions / "--home-user-demo--").mkdir(parents=True)
    shutil.copyfile(EXAMPLE, sessions / "--home-user-demo--" / "demo.jsonl")
    return sessions


def test_export_writes_the_page_or_prints_the_markdown(root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = root / "--home-user-demo--" / "demo.jsonl"
    out = tmp_path / "out.html"
    assert main(["export", str(path), "--format", "html", "--scope", "tree", "-o", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>") and "Raise a ValueError" in out.read_text()
    assert main(["export", str(path), "--format", "markdown", "--leaf", "2c3d4e5f"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# Empty input in the parser") and "Raise a ValueError" in printed
    assert main(["export", str(path), "--format", "markdown", "--leaf", "ffffffff"]) == 1


def test_stats_of_a_file_and_of_a_project(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(root / "--home-user-demo--" / "demo.jsonl")]) == 0
    text = capsys.readouterr().out
    assert "whole tree: 16 entries, 5 assistant messages" in text and "tool calls: read 1" in text
    assert main(["stats", "--cwd", "/home/user/demo", "--sessions-dir", str(root), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["sessions"] == 1 and answer["tree"]["entries"] == 16


def test_search_prints_marked_hits_and_json(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "callers", "--sessions-dir", str(root)]) == 0
    text = capsys.readouterr().out
    assert "«callers»" in text and "demo.jsonl#7b8c9d0e" in text
    assert main(["search", '"empty result"', "--fts", "--sessions-dir", str(root), "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert {hit["entryId"] for hit in hits} >= {"3d4e5f6a"}
    assert main(["search", '"unclosed', "--fts", "--sessions-dir", str(root)]) == 1
    assert "sessiontree:" in capsys.readouterr().err
