"""An imported session of another agent is a session pi 1.6.0 itself opens: its SessionManager
resumes at the agent's leaf and builds the context the daemon serves, both for the imported file and
for the agent's session read in place; pi then continues it. Over the test-only line format
(tests/support/line_agent.py) and over the real agents' files (tests/fixtures: Claude Code, Codex)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiDriver

from sessiontree import jsonfmt
from sessiontree import protocol as p
from sessiontree.agents import AgentName, registry
from sessiontree.service import ServiceConfig, SessionService
from support.line_agent import LineTranslator, session_lines, turn_line

CWD = "/home/user/project"
TURNS = (
    ("u1", None, "user", "hello"),
    ("a1", "u1", "assistant", "hi there"),
    ("u2", "a1", "user", "go on"),
    ("a2", "u2", "assistant", "going"),
    ("u3", "a1", "user", "the other way"),  # a branch the agent left
    ("a3", "u3", "assistant", "that way"),
)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(registry, "TRANSLATORS", {"claude-code": LineTranslator("claude-code")})
    made = tmp_path / "claude" / "projects"
    made.mkdir(parents=True)
    return made


@pytest.fixture
def service(tmp_path: Path, folder: Path) -> Iterator[SessionService]:
    made = SessionService(ServiceConfig(tmp_path / "sessions", agents={"claude-code": folder}))
    yield made
    made.close_all()


def _wire(value: Any) -> Any:
    return json.loads(jsonfmt.dumps_wire(value))


def _daemon_context(service: SessionService, path: str) -> tuple[str | None, list[Any]]:
    opened = service.open(p.OpenParams(path=path))
    context = service.context(p.ContextParams(opened.session_id))
    return opened.leaf_id, _wire(context.messages)


def _pi(pi: PiDriver, path: str, *more: dict[str, Any]) -> list[dict[str, Any]]:
    [run] = pi.run([{"name": "imported", "ops": [{"op": "open", "path": path}, {"op": "contexts"}, *more]}])
    for result in run["results"]:
        assert "error" not in result, result
    return run["results"]


def test_pi_opens_an_import_and_builds_the_daemons_context(pi: PiDriver, service: SessionService, folder: Path) -> None:
    source = folder / "proj" / "c1.jsonl"
    source.parent.mkdir()
    source.write_text(session_lines("c1", CWD, *TURNS) + json.dumps({"leaf": "a2"}) + "\n")  # not the last entry
    [done] = service.import_sessions(p.ImportParams([str(source)])).imported
    in_place_leaf, in_place = _daemon_context(service, str(source))
    _, imported = _daemon_context(service, done.path)

    opened, contexts = _pi(pi, done.path)[:2]
    pi_context = contexts["value"]["default"]["context"]["messages"]
    assert in_place_leaf == "a2"
    assert [m["role"] for m in in_place] == ["user", "assistant", "user", "assistant"]
    assert pi_context == imported == in_place

    with source.open("a") as out:  # the agent goes on; a second import appends what is new
        out.write(turn_line("u4", "a2", "user", "and then", 10) + json.dumps({"leaf": "u4"}) + "\n")
    [again] = service.import_sessions(p.ImportParams([str(source)])).imported
    assert (again.path, again.added) == (done.path, 1)
    message = {"role": "user", "content": "continued in pi", "timestamp": 1767225600000}
    results = _pi(pi, done.path, {"op": "appendMessage", "message": message}, {"op": "contexts"})
    assert opened["value"]["leaf"] is not None
    before, after = results[1]["value"]["default"]["context"]["messages"], results[3]["value"]["default"]["context"]["messages"]
    _, in_place = _daemon_context(service, str(source))
    assert before == in_place
    assert after == [*in_place, message]


# The real agents' files (tests/fixtures: Claude Code 2.1.197, Codex 0.171.0) ---------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def real_service(tmp_path: Path) -> Iterator[tuple[SessionService, dict[str, Path]]]:
    """A daemon's service over copies of both agents' fixture folders, with the real translators."""
    claude, codex = tmp_path / "claude" / "projects", tmp_path / "codex"
    shutil.copytree(FIXTURES / "claude-code" / "projects", claude)
    shutil.copytree(FIXTURES / "codex", codex)
    folders: dict[AgentName, Path] = {"claude-code": claude, "codex": codex / "sessions"}
    made = SessionService(ServiceConfig(tmp_path / "sessions", agents=dict(folders)))
    yield made, dict(folders)
    made.close_all()


def test_pi_opens_every_real_import_at_every_leaf_as_the_daemon_reads_it(
    pi: PiDriver, real_service: tuple[SessionService, dict[str, Path]]
) -> None:
    service, folders = real_service
    result = service.import_sessions(p.ImportParams([str(folder) for folder in folders.values()]))
    assert result.failed == []
    assert len(result.imported) == 9  # Claude Code: 5 sessions and a sub-agent; Codex: 3 threads
    headers = {done.path: json.loads(Path(done.path).read_text().splitlines()[0]) for done in result.imported}
    parents = {Path(done.source).name: headers[done.path].get("parentSession") for done in result.imported}
    imported_paths = {done.path for done in result.imported}
    linked = {name for name, parent in parents.items() if parent is not None}
    assert all(parents[name] in imported_paths for name in linked)
    # Claude Code's sub-agent and its /branch; Codex's fork.
    assert "agent-a1fb582ff6170e528.jsonl" in linked
    assert "83607e0a-a1fb-4391-9311-8613ccf93ebb.jsonl" in linked
    assert any("01a23d2a-c272-7602-8e68-cef59f12d11a" in name for name in linked)

    for done in result.imported:
        _, in_place = _daemon_context(service, done.source)
        opened = service.open(p.OpenParams(path=done.path))
        daemon_default = _wire(service.context(p.ContextParams(opened.session_id)).messages)
        [run] = pi.run([{"name": done.source, "ops": [{"op": "open", "path": done.path}, {"op": "contexts"}]}])
        assert all("error" not in r for r in run["results"]), run["results"]
        contexts = run["results"][1]["value"]
        assert contexts["default"]["context"]["messages"] == daemon_default == in_place, done.source
        for leaf, context in contexts["byLeaf"].items():
            at_leaf = service.context(p.ContextParams(opened.session_id, leaf_id=leaf)).messages
            assert context["messages"] == _wire(at_leaf), (done.source, leaf)

    again = service.import_sessions(p.ImportParams([str(folder) for folder in folders.values()]))
    assert {(d.path, d.added) for d in again.imported} == {(d.path, 0) for d in result.imported}



@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_importing_a_grown_real_session_adds_only_the_new_entries(
    pi: PiDriver, real_service: tuple[SessionService, dict[str, Path]], agent: str
) -> None:
    service, folders = real_service
    sources = registry.TRANSLATORS[agent].discover(folders[agent])  # type: ignore[index]
    source = max(sources, key=lambda s: s.path.stat().st_size)  # the linear session: many turns
    whole = source.path.read_bytes()
    lines = whole.splitlines(keepends=True)
    source.path.write_bytes(b"".join(lines[: len(lines) // 2]))
    [first] = service.import_sessions(p.ImportParams([str(source.path)])).imported
    before = Path(first.path).read_bytes()
    source.path.write_bytes(whole)
    [second] = service.import_sessions(p.ImportParams([str(source.path)])).imported
    after = Path(first.path).read_bytes()
    assert second.path == first.path and second.entries > first.entries
    assert after.startswith(before)  # nothing written before is changed
    assert second.added == second.entries - first.entries  # only the new entries
    appended = [json.loads(text) for text in after[len(before):].splitlines()]
    marks = [e for e in appended if e["type"] == "custom" and e.get("customType") == "import-leaf"]
    assert len(appended) == second.added + len(marks) and len(marks) <= 1  # and the agent's leaf, where it moved
    _, in_place = _daemon_context(service, str(source.path))
    [run] = pi.run([{"name": "grown", "ops": [{"op": "open", "path": first.path}, {"op": "contexts"}]}])
    assert run["results"][1]["value"]["default"]["context"]["messages"] == in_place
