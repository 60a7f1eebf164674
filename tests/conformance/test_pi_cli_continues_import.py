"""pi's real CLI continues an imported session of another agent for a turn: `sessiontree import` of
the real Claude Code and Codex fixtures, then `pi -p --session FILE` (tests/conformance/test_pi_cli.py
runs pi the same way). pi's request is pi-ai's request for the daemon's context of the import, and the
file pi leaves is the import with pi's turn appended."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pi_harness import Daemon
from test_pi_cli import MODEL, PiCli, replayed_requests, scene  # noqa: F401 (scene is a fixture)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOURCES = {
    "claude-code": "claude/projects/-home-user-project/8bd3621b-8ff6-4ad6-a474-eb6e0dff8f47.jsonl",
    "codex": "codex/sessions/2026/12/03/rollout-2026-12-03T18-28-50-01a23d2a-9366-7c72-93e8-c4356a2316a6.jsonl",
}


@pytest.mark.parametrize("agent", sorted(SOURCES))
def test_pi_cli_continues_an_imported_session(
    scene: tuple[PiCli, Daemon], node: str, tmp_path: Path, agent: str  # noqa: F811 (the fixture)
) -> None:
    cli, daemon = scene
    shutil.copytree(FIXTURES / "claude-code" / "projects", tmp_path / "claude" / "projects")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    source = tmp_path / SOURCES[agent]
    # pi resumes a session only in a working directory that exists: the agent's session was recorded in pi's.
    source.write_text(source.read_text().replace("/home/user/project", str(cli.cwd)))
    imported = subprocess.run(
        [sys.executable, "-m", "sessiontree", "import", str(source), "--sessions-dir", str(cli.agent_dir / "sessions"),
         "--claude-code-dir", str(tmp_path / "claude" / "projects"), "--codex-dir", str(tmp_path / "codex" / "sessions")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    [path] = [str(p) for p in (cli.agent_dir / "sessions").rglob("*.jsonl")]
    before = Path(path).read_bytes()

    cli.run("-p", "--session", path, "one more question")
    after = Path(path).read_bytes()
    assert after.startswith(before), "pi appended to the import, changing nothing in it"
    sid = daemon.request("session/open", {"path": path})["sessionId"]
    added = [json.loads(text) for text in after[len(before):].splitlines()]
    answers = [e for e in added if e["type"] == "message" and e["message"]["role"] == "assistant"]
    prompts = [e for e in added if e["type"] == "message" and e["message"]["role"] == "user"]
    assert len(answers) == 1 and json.dumps(prompts[0]["message"]["content"]).count("one more question") == 1
    context = daemon.request("session/context", {"sessionId": sid, "leafId": answers[0]["parentId"], "format": "llm"})
    model = dict(MODEL, api="openai-completions", provider="scripted", baseUrl=cli.server.base_url)
    [expected] = replayed_requests(node, tmp_path, model, [context["messages"]])
    [sent] = cli.server.requests
    assert sent["messages"] == expected["messages"]
