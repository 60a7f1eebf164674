"""Other agents' sessions imported into pi: one pi session per source, again only what is new."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import protocol as p
from sessiontree.agents import ReadFile, Source, Translation, registry
from sessiontree.cli import main
from sessiontree.service import ServiceConfig, SessionService
from support.line_agent import LineTranslator, session_lines, turn_line

CWD = "/home/user/project"
TURNS = (("u1", None, "user", "hello"), ("a1", "u1", "assistant", "hi there"), ("u2", "a1", "user", "go on"))


class ForkingTranslator(LineTranslator):
    """Files named `fork-*.jsonl` were forked from `main.jsonl` beside them."""

    def translate(self, source: Source, read: ReadFile) -> Translation:
        translation = super().translate(source, read)
        if source.path.name.startswith("fork-"):
            main_path = source.path.with_name("main.jsonl")
            translation.parent = Source(self.agent, main_path, "main", (main_path,))
        return translation


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(registry, "TRANSLATORS", {"claude-code": ForkingTranslator("claude-code")})
    made = tmp_path / "claude" / "projects"
    made.mkdir(parents=True)
    return made


@pytest.fixture
def service(tmp_path: Path, folder: Path) -> Iterator[SessionService]:
    root = tmp_path / "sessions"
    root.mkdir()
    made = SessionService(ServiceConfig(root, agents={"claude-code": folder}))
    yield made
    made.close_all()


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / "proj" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_a_first_import_writes_one_pi_session_with_its_provenance(service: SessionService, folder: Path) -> None:
    source = _write(folder, "c1.jsonl", session_lines("c1", CWD, *TURNS))
    result = service.import_sessions(p.ImportParams([str(source)]))
    assert result.failed == []
    [done] = result.imported
    assert (done.source, done.entries, done.added) == (str(source), 3, 3)
    path = Path(done.path)
    assert path.parent == service.backend.directory_for(CWD)
    assert path.name.endswith(f"_{done.session_id}.jsonl") and path.name.startswith("2026-12-01T10-00-00-000Z_")
    header, mark, *entries = _lines(done.path)
    assert header == {"type": "session", "version": 3, "id": done.session_id, "timestamp": "2026-12-01T10:00:00.000Z", "cwd": CWD}
    assert mark["type"] == "custom" and mark["customType"] == "import" and mark["parentId"] is None
    assert mark["data"] == {"agent": "claude-code", "version": "1.0", "sourceFile": str(source), "sourceSessionId": "c1"}
    assert [(e["id"], e["parentId"]) for e in entries] == [("u1", mark["id"]), ("a1", "u1"), ("u2", "a1")]
    opened = service.open(p.OpenParams(path=done.path))
    assert opened.leaf_id == "u2"
    assert [m["role"] for m in service.context(p.ContextParams(opened.session_id)).messages] == ["user", "assistant", "user"]


def test_importing_again_adds_only_what_is_new(service: SessionService, folder: Path) -> None:
    source = _write(folder, "c1.jsonl", session_lines("c1", CWD, *TURNS))
    first = service.import_sessions(p.ImportParams([str(source)])).imported[0]
    again = service.import_sessions(p.ImportParams([str(source)])).imported[0]
    assert (again.path, again.added, again.entries) == (first.path, 0, 3)
    before = Path(first.path).read_bytes()
    with source.open("a") as out:
        out.write(turn_line("a2", "u2", "assistant", "more", 5))
    grown = service.import_sessions(p.ImportParams([str(folder)])).imported[0]
    assert (grown.path, grown.added, grown.entries) == (first.path, 1, 4)
    after = Path(first.path).read_bytes()
    assert after.startswith(before)
    assert [e["id"] for e in _lines(first.path)[2:]] == ["u1", "a1", "u2", "a2"]


def test_the_agents_leaf_is_pis_leaf(service: SessionService, folder: Path) -> None:
    text = session_lines("c1", CWD, *TURNS, ("u3", "a1", "user", "other way")) + json.dumps({"leaf": "u2"}) + "\n"
    source = _write(folder, "c1.jsonl", text)
    done = service.import_sessions(p.ImportParams([str(source)])).imported[0]
    last = _lines(done.path)[-1]
    assert (last["customType"], last["parentId"], last["data"]) == ("import-leaf", "u2", {"leafId": "u2"})
    opened = service.open(p.OpenParams(path=done.path))
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
             for m in service.context(p.ContextParams(opened.session_id)).messages]
    assert texts == ["hello", "hi there", "go on"]


def test_a_fork_is_imported_after_its_parent_and_names_it(service: SessionService, folder: Path) -> None:
    _write(folder, "main.jsonl", session_lines("main", CWD, *TURNS))
    fork = _write(folder, "fork-1.jsonl", session_lines("fork1", CWD, *TURNS[:2]))
    result = service.import_sessions(p.ImportParams([str(fork)]))
    by_source = {Path(done.source).name: done for done in result.imported}
    assert set(by_source) == {"main.jsonl", "fork-1.jsonl"}
    assert _lines(by_source["fork-1.jsonl"].path)[0]["parentSession"] == by_source["main.jsonl"].path


def test_paths_that_are_no_agent_session_fail_alone(service: SessionService, folder: Path, tmp_path: Path) -> None:
    good = _write(folder, "c1.jsonl", session_lines("c1", CWD, *TURNS))
    stray = tmp_path / "stray.jsonl"
    stray.write_text("{}\n")
    result = service.import_sessions(p.ImportParams([str(stray), str(good), str(folder / "proj" / "missing.jsonl")]))
    assert [done.source for done in result.imported] == [str(good)]
    assert [failed.source for failed in result.failed] == [str(stray), str(folder / "proj" / "missing.jsonl")]
    assert "none of the agents' folders" in result.failed[0].error


def test_the_cli_imports_and_says_what_it_wrote(
    tmp_path: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONTREE_SESSIONS_DIR", raising=False)
    source = _write(folder, "c1.jsonl", session_lines("c1", CWD, *TURNS))
    args = ["import", str(source), "--sessions-dir", str(tmp_path / "pi"), "--claude-code-dir", str(folder)]
    assert main(args) == 0
    assert "(3 entries, all new)" in capsys.readouterr().out
    assert main(args) == 0
    assert "up to date" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "nowhere.jsonl"), "--sessions-dir", str(tmp_path / "pi"),
                 "--claude-code-dir", str(folder)]) == 1
    assert "none of the agents' folders" in capsys.readouterr().err



def test_an_import_of_nothing_is_invalid(service: SessionService) -> None:
    from sessiontree.errors import InvalidParams

    with pytest.raises(InvalidParams) as refused:
        service.import_sessions(p.ImportParams([]))
    assert refused.value.data["field"] == "paths"
