"""Other agents' sessions served beside pi's: listed, opened read-only, followed as they grow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import protocol as p
from sessiontree.agents import registry
from sessiontree.errors import FileReplaced, PathOutsideRoot, ReadOnlySession
from sessiontree.service import ServiceConfig, SessionService
from support.line_agent import LineTranslator, session_lines, turn_line

CWD = "/home/user/project"
TURNS = (("u1", None, "user", "hello"), ("a1", "u1", "assistant", "hi there"), ("u2", "a1", "user", "go on"))


@pytest.fixture
def translators(monkeypatch: pytest.MonkeyPatch) -> dict[str, LineTranslator]:
    table = {"claude-code": LineTranslator("claude-code"), "codex": LineTranslator("codex")}
    monkeypatch.setattr(registry, "TRANSLATORS", table)
    return table


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    made = {"claude-code": tmp_path / "claude" / "projects", "codex": tmp_path / "codex" / "sessions"}
    for folder in made.values():
        folder.mkdir(parents=True)
    return made


@pytest.fixture
def service(tmp_path: Path, folders: dict[str, Path], translators: dict[str, LineTranslator]) -> Iterator[SessionService]:
    root = tmp_path / "sessions"
    root.mkdir()
    made = SessionService(ServiceConfig(root, agents=dict(folders)))  # type: ignore[arg-type]
    yield made
    made.close_all()


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / "proj" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _texts(service: SessionService, sid: str) -> list[Any]:
    return [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
            for m in service.context(p.ContextParams(sid)).messages]


def test_list_shows_other_agents_sessions_beside_pis(service: SessionService, folders: dict[str, Path]) -> None:
    service.create(p.CreateParams(cwd=CWD))
    claude = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    codex = _write(folders["codex"], "x1.jsonl", session_lines("x1", "/elsewhere", *TURNS[:1]))
    listed = service.list(p.ListParams()).sessions
    by_agent = {s.agent: s for s in listed}
    assert set(by_agent) == {"pi", "claude-code", "codex"}
    summary = by_agent["claude-code"]
    assert (summary.path, summary.id, summary.cwd) == (str(claude), "c1", CWD)
    assert (summary.message_count, summary.first_message) == (3, "hello")
    assert summary.created == "2026-12-01T10:00:00.000Z" and summary.modified == "2026-12-01T10:03:00.000Z"
    assert by_agent["codex"].path == str(codex)
    mine = service.list(p.ListParams(cwd=CWD)).sessions
    assert sorted(s.agent for s in mine) == ["claude-code", "pi"]


def test_listing_translates_a_session_again_only_when_its_files_changed(
    service: SessionService, folders: dict[str, Path], translators: dict[str, LineTranslator]
) -> None:
    path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    service.list(p.ListParams())
    service.list(p.ListParams())
    assert translators["claude-code"].translated == 1
    with path.open("a") as out:
        out.write(turn_line("a2", "u2", "assistant", "more", 5))
    [summary] = [s for s in service.list(p.ListParams()).sessions if s.agent == "claude-code"]
    assert translators["claude-code"].translated == 2 and summary.message_count == 4


def test_an_agent_without_a_translator_is_absent(
    service: SessionService, folders: dict[str, Path], translators: dict[str, LineTranslator]
) -> None:
    del translators["codex"]
    again = SessionService(ServiceConfig(service.root, agents=dict(folders)))  # type: ignore[arg-type]
    path = _write(folders["codex"], "x1.jsonl", session_lines("x1", CWD, *TURNS))
    assert [s.agent for s in again.list(p.ListParams()).sessions] == []
    with pytest.raises(PathOutsideRoot):
        again.open(p.OpenParams(path=str(path)))


def test_open_serves_the_translation_with_the_agents_leaf(service: SessionService, folders: dict[str, Path]) -> None:
    text = session_lines("c1", CWD, *TURNS, ("u3", "a1", "user", "other way")) + json.dumps({"leaf": "u2"}) + "\n"
    path = _write(folders["claude-code"], "c1.jsonl", text)
    opened = service.open(p.OpenParams(path=str(path)))
    assert (opened.session_id, opened.leaf_id, opened.entry_count) == ("c1", "u2", 4)
    assert opened.header["cwd"] == CWD
    assert _texts(service, "c1") == ["hello", "hi there", "go on"]
    tree = service.tree(p.TreeParams("c1"))
    assert tree.leaf_id == "u2"
    got = service.entries(p.EntriesParams("c1", ids=["a1"])).entries
    assert got[0]["id"] == "a1"


def test_writes_are_refused_and_the_agents_file_is_never_touched(
    service: SessionService, folders: dict[str, Path]
) -> None:
    path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    before = path.read_bytes()
    service.open(p.OpenParams(path=str(path)))
    attempts = [
        lambda: service.append(p.AppendParams("c1", entry={"type": "custom", "customType": "x"})),
        lambda: service.label(p.LabelParams("c1", "a1", "mark")),
        lambda: service.set_name(p.SetNameParams("c1", "renamed")),
        lambda: service.branch(p.BranchParams("c1", "a1", summary="left")),
    ]
    for attempt in attempts:
        with pytest.raises(ReadOnlySession) as refused:
            attempt()
        assert refused.value.data["agent"] == "claude-code"
    assert path.read_bytes() == before
    moved = service.branch(p.BranchParams("c1", "a1"))  # only the daemon's leaf moves
    assert moved.leaf_id == "a1" and _texts(service, "c1") == ["hello", "hi there"]
    assert path.read_bytes() == before


def test_a_growing_source_is_followed(service: SessionService, folders: dict[str, Path]) -> None:
    heard: list[p.DidChangeParams] = []
    service.listener = heard.append
    path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    opened = service.open(p.OpenParams(path=str(path)))
    service.subscribe(p.SessionParams(opened.session_id))
    with path.open("a") as out:
        out.write(turn_line("a2", "u2", "assistant", "more", 5))
        out.write('{"id": "u3", "par')  # half-written: held back
    service.poll()
    assert _texts(service, "c1") == ["hello", "hi there", "go on", "more"]
    with path.open("a") as out:
        out.write('ent": "a2", "role": "user", "text": "last", "ts": "2026-12-01T11:06:00.000Z"}\n')
    service.poll()
    assert [e["id"] for change in heard for e in change.entries] == ["a2", "u3"]
    assert heard[-1].leaf_id == "u3"
    assert _texts(service, "c1")[-1] == "last"


def test_a_rewritten_source_is_a_replaced_file(service: SessionService, folders: dict[str, Path]) -> None:
    path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    service.open(p.OpenParams(path=str(path)))
    path.write_text(session_lines("c1", CWD, ("u1", None, "user", "something else entirely, and longer")))
    with pytest.raises(FileReplaced):
        service.context(p.ContextParams("c1"))
    reopened = service.open(p.OpenParams(path=str(path)))  # opening again reads it afresh
    assert reopened.entry_count == 1


def test_paths_outside_the_root_and_the_agent_folders_stay_refused(service: SessionService, tmp_path: Path) -> None:
    stray = tmp_path / "stray.jsonl"
    stray.write_text(session_lines("s1", CWD, *TURNS))
    with pytest.raises(PathOutsideRoot):
        service.open(p.OpenParams(path=str(stray)))


def test_the_agents_folders_default_to_their_own_and_can_be_moved_or_turned_off(tmp_path: Path) -> None:
    from sessiontree.config import parse_init_options, resolve_agent_dirs
    from sessiontree.errors import InvalidParams

    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "HOME": str(tmp_path)}
    found = resolve_agent_dirs((), env, parse_init_options(None))
    assert found["claude-code"] == tmp_path / "cc" / "projects"
    assert found["codex"] == Path("~/.codex/sessions").expanduser().resolve()
    options = parse_init_options({"agents": {"claude-code": False, "codex": str(tmp_path / "x")}})
    assert resolve_agent_dirs((), env, options) == {"codex": tmp_path / "x"}
    env["SESSIONTREE_CODEX_DIR"] = "off"
    assert resolve_agent_dirs((), env, options) == {}
    assert resolve_agent_dirs((("codex", str(tmp_path / "y")),), env, options) == {"codex": tmp_path / "y"}
    with pytest.raises(InvalidParams) as bad:
        parse_init_options({"agents": {"codex": 3}})
    assert bad.value.data["field"] == 'initializationOptions.agents["codex"]'


def test_search_covers_other_agents_sessions(tmp_path: Path, folders: dict[str, Path], translators: dict[str, LineTranslator]) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    service = SessionService(ServiceConfig(root, index_dir=tmp_path / "index", agents=dict(folders)))  # type: ignore[arg-type]
    try:
        path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, ("u1", None, "user", "find the walrus")))
        _write(folders["codex"], "x1.jsonl", session_lines("x1", "/elsewhere", ("u1", None, "user", "no such animal")))
        first = service.refresh_search()
        assert (first.files_seen, first.entries_added) == (2, 2)
        [hit] = service.search(p.SearchParams("walrus"), first).hits
        assert (hit.path, hit.session_id, hit.entry_id, hit.agent, hit.cwd) == (str(path), "c1", "u1", "claude-code", CWD)
        translated = translators["claude-code"].translated
        again = service.refresh_search()
        assert again.files_unchanged == 2 and translators["claude-code"].translated == translated  # not translated again
        with path.open("a") as out:
            out.write(turn_line("a1", "u1", "assistant", "the walrus is here", 5))
        grown = service.refresh_search()
        assert (grown.files_appended, grown.entries_added) == (1, 1)
        hits = service.search(p.SearchParams("walrus"), grown).hits
        assert sorted(h.entry_id for h in hits) == ["a1", "u1"]
        path.unlink()
        assert service.refresh_search().files_removed == 1
    finally:
        service.close_all()


def test_a_fork_of_another_agents_session_is_a_pi_session_under_the_root(
    service: SessionService, folders: dict[str, Path]
) -> None:
    path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    before = sorted(folders["claude-code"].rglob("*"))
    service.open(p.OpenParams(path=str(path)))
    forked = service.fork(p.ForkParams("c1", entry_id="a1"))
    assert Path(forked.path).parent == service.backend.directory_for(CWD)
    assert sorted(folders["claude-code"].rglob("*")) == before
    header = json.loads(Path(forked.path).read_text().splitlines()[0])
    assert header["parentSession"] == str(path)
    assert _texts(service, forked.session_id) == ["hello", "hi there"]
    service.append(p.AppendParams(forked.session_id, entry={"type": "custom", "customType": "x"}))  # pi's: writable


def test_the_reading_commands_read_another_agents_file_through_its_translation(
    folders: dict[str, Path], translators: dict[str, LineTranslator], capsys: pytest.CaptureFixture[str]
) -> None:
    from sessiontree.cli import main

    path = _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    assert main(["context", str(path), "--claude-code-dir", str(folders["claude-code"])]) == 0
    shown = capsys.readouterr().out
    assert "hello" in shown and "hi there" in shown and "go on" in shown


def test_a_relative_path_is_the_sessions_roots_not_an_agent_folders(service: SessionService, folders: dict[str, Path]) -> None:
    from sessiontree.errors import FileNotFound

    _write(folders["claude-code"], "c1.jsonl", session_lines("c1", CWD, *TURNS))
    with pytest.raises(FileNotFound):
        service.open(p.OpenParams(path="proj/c1.jsonl"))
