"""session/stats: counts from the index, usage from the assistant lines, for a session or a project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree import protocol as p
from sessiontree import stats
from sessiontree.errors import InvalidParams
from sessiontree.service import ServiceConfig, SessionService
from support import pi16_entries as pi16
from support.messages import line

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"


@pytest.fixture
def service(tmp_path: Path) -> SessionService:
    return SessionService(ServiceConfig(tmp_path / "sessions"))


CWD = json.loads(EXAMPLE.read_text().splitlines()[0])["cwd"]


def _place(service: SessionService, name: str) -> Path:
    path = service.backend.directory_for(CWD) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EXAMPLE, path)
    return path


def _assistant(tokens: int, cost: float, tools: list[str], model: str = "m1", day: str = "2026-02-03") -> dict[str, Any]:
    usage = {"input": tokens, "output": 1, "cacheRead": 2, "cacheWrite": 3, "totalTokens": tokens + 6,
             "cost": {"input": cost, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}}
    content = [{"type": "text", "text": "ok"}] + [{"type": "toolCall", "id": t, "name": t, "arguments": {}} for t in tools]
    message = {"role": "assistant", "content": content, "provider": "p", "model": model, "usage": usage,
               "timestamp": 1}
    return {"type": "message", "message": message}


def test_a_session_counts_its_tree_and_its_path(service: SessionService) -> None:
    sid = service.open(p.OpenParams(str(_place(service, "demo.jsonl")))).session_id
    result = service.stats(p.StatsParams(session_id=sid))
    tree, path = result.tree, result.path
    assert path is not None and result.sessions == 1
    assert tree["entries"] == 16 and path["entries"] == 13
    assert tree["messagesByRole"] == {"assistant": 5, "toolResult": 1, "user": 4}
    assert tree["toolCalls"] == {"read": 1} and tree["compactions"] == 1 and tree["branchPoints"] == 1
    assert tree["usage"]["assistantMessages"] == 5 and path["usage"]["assistantMessages"] == 4
    assert tree["usage"]["tokens"]["total"] == sum(
        v for k, v in tree["usage"]["tokens"].items() if k != "total"
    )
    assert list(tree["byModel"]) == ["anthropic/claude-sonnet-4-5"] and list(tree["byDay"]) == ["2026-01-01"]


def test_usage_tokens_cost_models_days_and_tools_add_up(service: SessionService) -> None:
    sid = service.create(p.CreateParams("/w")).session_id
    service.append(p.AppendParams(sid, entries=[_assistant(10, 0.5, ["read", "bash"]), _assistant(20, 0.25, ["read"], "m2")]))
    odd = _assistant(99, 9.0, ["edit"])
    odd["message"]["usage"]["input"] = "lots"  # an odd number: skipped, the others and its tool call count
    service.append(p.AppendParams(sid, entry=odd))
    tree = service.stats(p.StatsParams(session_id=sid)).tree
    assert tree["toolCalls"] == {"read": 2, "bash": 1, "edit": 1}
    assert tree["usage"]["tokens"] == {"input": 30, "output": 3, "cacheRead": 6, "cacheWrite": 9, "total": 48}
    assert tree["usage"]["cost"]["total"] == 9.75 and tree["usage"]["assistantMessages"] == 3
    assert tree["usage"]["skipped"] == 1 and tree["usage"]["usages"] == 3
    assert tree["byModel"]["p/m1"]["tokens"]["input"] == 10 and tree["byModel"]["p/m2"]["cost"]["input"] == 0.25
    service.branch(p.BranchParams(sid, entry_id=None))
    assert service.stats(p.StatsParams(session_id=sid)).path["entries"] == 0  # type: ignore[index]


def test_a_project_adds_up_its_sessions_open_or_not(service: SessionService) -> None:
    opened = _place(service, "a.jsonl")
    closed = _place(service, "b.jsonl")
    header = json.loads(closed.read_text().splitlines()[0])
    closed.write_text(closed.read_text().replace(header["id"], "another-session"))
    service.open(p.OpenParams(str(opened)))
    result = service.stats(p.StatsParams(cwd=CWD))
    assert result.sessions == 2 and result.path is None
    assert result.tree["entries"] == 32 and result.tree["toolCalls"] == {"read": 2}


@pytest.mark.parametrize("params", [p.StatsParams(), p.StatsParams(session_id="x", cwd="/w")])
def test_exactly_one_of_session_and_cwd(service: SessionService, params: p.StatsParams) -> None:
    with pytest.raises(InvalidParams):
        service.stats(params)


def test_a_line_that_is_not_json_adds_no_usage() -> None:
    assert stats.facts_of(b"{not json") is None


def test_pi_16_usage_is_counted_as_pi_counts_it(service: SessionService) -> None:
    """Usage entries, tool results', compactions' and branch summaries' usage, keyed by `responseModel
    ?? model`: the totals and the per-model breakdown pi 1.6.0's code gives (support/pi16_entries.py)."""
    path = service.backend.directory_for("/w") / "pi16.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(line(pi16.HEADER) + b"".join(line(e) for e in pi16.session()))
    result = service.stats(p.StatsParams(session_id=service.open(p.OpenParams(str(path))).session_id))
    tree, on_path = result.tree, result.path
    assert on_path is not None
    assert tree["usage"]["tokens"]["total"] == pi16.PI_TOTAL_TOKENS
    assert tree["usage"]["cost"]["total"] == pytest.approx(pi16.PI_TOTAL_COST)
    assert tree["usage"]["assistantMessages"] == 3 and tree["usage"]["usages"] == 7 and tree["usage"]["skipped"] == 0
    assert set(tree["byModel"]) == set(pi16.PI_BREAKDOWN)
    for key, (tokens, cost) in pi16.PI_BREAKDOWN.items():
        assert tree["byModel"][key]["tokens"]["total"] == tokens and tree["byModel"][key]["cost"]["total"] == pytest.approx(cost)
    assert tree["messagesByRole"] == {"assistant": 3, "system": 1, "toolResult": 1, "user": 1}
    assert tree["types"]["usage"] == 1 and tree["types"]["context_edit"] == 2
    assert tree["toolCalls"] == {"read": 3}
    # the path (system, user, branch summary, the last assistant): its own two usages
    assert on_path["usage"]["usages"] == 2 and on_path["usage"]["tokens"]["total"] == 10 + 7
    assert set(on_path["byModel"]) == {"Tools/summaries", "anthropic/claude-y"}
