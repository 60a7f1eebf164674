"""An imported session of another agent is a session pi 1.6.0 itself opens: its SessionManager
resumes at the agent's leaf and builds the context the daemon serves, both for the imported file and
for the agent's session read in place; pi then continues it. The translations here come from the
test-only line format (tests/support/line_agent.py); the real translators' output joins them as
they land."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pi_harness import PiDriver

from sessiontree import jsonfmt
from sessiontree import protocol as p
from sessiontree.agents import registry
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
