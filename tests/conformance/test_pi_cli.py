"""pi's real CLI (the pinned package's `dist/cli.js`, on the Node it declares) beside the daemon.

pi runs in print mode (`pi -p`, `pi -p --continue`) against a scripted local model
(tests/support/model_server.py: OpenAI's chat-completions API, text, tool calls, usage), its agent
directory a temporary folder whose sessions root the daemon serves. Turn by turn:

- what pi sent the model equals what pi-ai's own client builds from the daemon's `session/context`
  (format "llm") at the entry the answer hangs under (`pi_request.mjs`): the daemon computes the
  context pi computes, the system message with its prompt sections and tool declarations included;
- the daemon appends (a custom message, context edits hiding nothing but replacing a user turn and a
  tool result) and pi's next turn continues the session with them;
- pi compacts on its own (its model's context window is small and the scripted usage is big): the
  daemon reads the compaction as pi's SessionManager does, every leaf, and pi's next request is
  again the daemon's context.

No network: the model server is on 127.0.0.1, pi runs with PI_OFFLINE. Each pi process is bounded
twice: its start-up (until its first request reaches the model) and then its answers.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pi_harness import HERE, PI_CLI, Daemon, PiDriver, start_daemon
from test_pi_conformance import Report, compare_views, daemon_view

from support.model_server import ModelServer, Reply, ToolCall

STARTUP_S = 240.0  # pi's start until its first request (~7 s on an idle 2-core machine)
ANSWER_S = 180.0  # from its first request until it exits
CONTEXT_WINDOW = 20_000
BIG_PROMPT = 19_000  # the usage of the answer that makes pi compact (over CONTEXT_WINDOW - reserve)
MODEL: dict[str, Any] = {
    "id": "scripted-1", "name": "scripted-1", "reasoning": False, "input": ["text", "image"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": CONTEXT_WINDOW, "maxTokens": 1000,
}  # fmt: skip
SUMMARIZER = "You are a context summarization assistant"


def respond(body: dict[str, Any]) -> Reply:
    """The scripted model: summaries for pi's compaction, a tool call when asked, else an echo."""
    messages = body["messages"]
    system = json.dumps(messages[0].get("content")) if messages and messages[0]["role"] == "system" else ""
    if SUMMARIZER in system:
        return Reply(text="## Goal\nThe conversation so far, summarized by the scripted model.")
    last = messages[-1]
    if last["role"] == "tool":
        return Reply(text=f"the tool answered {json.dumps(last['content'])[:60]}")
    text = json.dumps(last.get("content"))
    if "run a tool" in text:
        return Reply(text="running it", tool_calls=[ToolCall("bash", {"command": "echo from-the-tool"}, "call_tool_1")])
    if "big question" in text:
        return Reply(text="a long answer", prompt_tokens=BIG_PROMPT)
    return Reply(text=f"answer to {text[:60]}")


@dataclass
class PiCli:
    """`pi` in print mode in `cwd`, its agent directory `agent_dir`, answered by `server`."""

    node: str
    agent_dir: Path
    cwd: Path
    server: ModelServer

    def run(self, *args: str) -> str:
        before = len(self.server.requests)
        env = dict(os.environ, PI_CODING_AGENT_DIR=str(self.agent_dir), PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0")
        process = subprocess.Popen(
            [self.node, str(PI_CLI), *args], cwd=self.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            started = self.server.wait_for(before + 1, STARTUP_S)
            out, err = process.communicate(timeout=ANSWER_S if started else 5)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"pi {' '.join(args)} did not finish within {ANSWER_S} s of its first request:\n{err.decode()[-2000:]}")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        assert started, f"pi {' '.join(args)} sent no request within {STARTUP_S} s:\n{err.decode()[-2000:]}"
        assert not self.server.failures, self.server.failures
        assert process.returncode == 0, f"pi {' '.join(args)} exited {process.returncode}:\n{err.decode()[-2000:]}"
        return out.decode()


@pytest.fixture
def scene(node: str, tmp_path: Path) -> Iterator[tuple[PiCli, Daemon]]:
    server = ModelServer(respond)
    agent_dir, cwd = tmp_path / "agent", tmp_path / "project"
    agent_dir.mkdir()
    cwd.mkdir()
    provider = {"baseUrl": server.base_url, "api": "openai-completions", "apiKey": "scripted", "models": [MODEL]}
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"scripted": provider}}))
    settings = {
        "defaultProvider": "scripted", "defaultModel": MODEL["id"],
        "compaction": {"enabled": True, "reserveTokens": 4000, "keepRecentTokens": 20},
    }  # fmt: skip
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    sessions = agent_dir / "sessions"
    sessions.mkdir()
    daemon = start_daemon(sessions, tmp_path / "daemon.log")
    try:
        yield PiCli(node, agent_dir, cwd, server), daemon
    finally:
        daemon.close()
        server.close()


def replayed_requests(node: str, workdir: Path, model: dict[str, Any], contexts: list[list[Any]]) -> list[dict[str, Any]]:
    """pi-ai's request bodies for the daemon's contexts (pi_request.mjs)."""
    cases = workdir / "replay.json"
    cases.write_text(json.dumps({"model": model, "contexts": contexts}))
    proc = subprocess.run([node, str(HERE / "pi_request.mjs"), str(cases)], capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    requests: list[dict[str, Any]] = json.loads(proc.stdout)
    return requests


def check_requests_are_daemon_contexts(pi: PiCli, daemon: Daemon, sid: str, node: str, workdir: Path) -> int:
    """Every turn request pi sent equals pi-ai's request for the daemon's context at the entry its
    answer hangs under (the answers, in file order, pair with the turn requests in order)."""
    entries = daemon.request("session/entries", {"sessionId": sid, "since": None})["entries"]
    answers = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]
    sent = [r for r in pi.server.requests if SUMMARIZER not in json.dumps(r["messages"][:1])]
    assert len(sent) == len(answers), f"{len(sent)} turn requests, {len(answers)} answers in the file"
    contexts = [
        daemon.request("session/context", {"sessionId": sid, "leafId": a["parentId"], "format": "llm"})["messages"] for a in answers
    ]
    model = dict(MODEL, api="openai-completions", provider="scripted", baseUrl=pi.server.base_url)
    built = replayed_requests(node, workdir, model, contexts)
    report = Report("pi CLI")
    for i, (got, expected) in enumerate(zip(sent, built, strict=True)):
        report.where = f"turn request {i} (answer {answers[i]['id']})"
        report.check("messages ", expected["messages"], got["messages"])
        report.check("tools ", expected.get("tools"), got.get("tools"))
    report.assert_clean()
    return len(sent)


def test_pi_cli_and_the_daemon_share_a_session(scene: tuple[PiCli, Daemon], node: str, pi: PiDriver, tmp_path: Path) -> None:
    cli, daemon = scene
    cwd = str(cli.cwd)

    cli.run("-p", "first question")
    listed = daemon.request("session/list", {"cwd": cwd})["sessions"]
    assert len(listed) == 1, listed
    path = listed[0]["path"]
    sid = daemon.request("session/open", {"path": path})["sessionId"]
    assert check_requests_are_daemon_contexts(cli, daemon, sid, node, tmp_path) == 1

    cli.run("-p", "--continue", "please run a tool for me")
    assert check_requests_are_daemon_contexts(cli, daemon, sid, node, tmp_path) == 3

    # The daemon writes into pi's session: a note pi must send, and two context edits it must honour.
    entries = daemon.request("session/entries", {"sessionId": sid, "since": None})["entries"]
    by_role = lambda role: [e for e in entries if e["type"] == "message" and e["message"]["role"] == role]  # noqa: E731
    note = {"type": "custom_message", "customType": "editor-note", "content": "a note from the editor", "display": True}
    daemon.request("session/append", {"sessionId": sid, "entry": note})
    for target, replacement in [
        (by_role("user")[0]["id"], {"content": "first question, as edited by the daemon"}),
        (by_role("toolResult")[0]["id"], {"content": "tool output replaced by the daemon"}),
    ]:
        ours = daemon.request("session/editContext", {"sessionId": sid, "targetId": target, "replacement": replacement})["id"]
    cli.run("-p", "--continue", "what now")
    entries = daemon.request("session/entries", {"sessionId": sid, "since": ours})["entries"]
    assert entries[0]["message"]["role"] == "user" and entries[0]["parentId"] == ours, "pi continues below the daemon's entries"
    assert check_requests_are_daemon_contexts(cli, daemon, sid, node, tmp_path) == 4
    last = json.dumps(cli.server.requests[-1]["messages"])
    assert "a note from the editor" in last and "as edited by the daemon" in last and "replaced by the daemon" in last

    # The big answer's usage fills the window: pi compacts (before its next turn), then answers.
    before = len(cli.server.requests)
    cli.run("-p", "--continue", "a big question")
    cli.run("-p", "--continue", "after the compaction")
    summaries = [r for r in cli.server.requests[before:] if SUMMARIZER in json.dumps(r["messages"][:1])]
    assert summaries, "pi did not compact"
    entries = daemon.request("session/entries", {"sessionId": sid, "since": None})["entries"]
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert len(compactions) == 1 and "systemMessage" in compactions[0], "pi's compaction carries the prompt checkpoint"
    assert check_requests_are_daemon_contexts(cli, daemon, sid, node, tmp_path) == 6

    # Every leaf as pi's SessionManager reads the file, the daemon's appends and pi's compaction in it.
    pi_view = pi.run([{"name": "cli", "ops": [{"op": "inspect", "path": path}]}])[0]["results"][0]["value"]
    report = Report("pi CLI session")
    compare_views(report, pi_view, daemon_view(daemon, sid, [e["id"] for e in pi_view["entries"]]))
    report.assert_clean()
    daemon.request("session/close", {"sessionId": sid})
    assert daemon.request("session/open", {"path": path})["warnings"] == []
