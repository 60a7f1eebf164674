"""The Python example agent loop (clients/python/agent_loop.py) runs against the daemon and does what it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "python" / "agent_loop.py"


def test_agent_loop_appends_branches_and_prints_the_context(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(EXAMPLE), "--sessions-dir", str(tmp_path), "--cwd", "/work/demo"],
        capture_output=True, text=True, timeout=60, check=True,
    )
    lines = run.stdout.splitlines()
    assert lines[2:] == [
        "user: What does this project do?",
        "assistant: (1 messages in context) You asked: What does this project do?",
        "branchSummary: The user considered a Rust rewrite and dropped it.",
        "user: Add tests instead.",
        "assistant: (4 messages in context) You asked: Add tests instead.",
    ]
    path = Path(lines[1].removeprefix("file    "))
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert entries[0]["type"] == "session" and entries[0]["cwd"] == "/work/demo"
    types = [e["type"] for e in entries[1:]]
    assert types == ["message"] * 4 + ["branch_summary"] + ["message"] * 2 + ["label"]
    # The abandoned branch is still in the file, a sibling of the summary.
    first_answer = entries[2]["id"]
    children = [e for e in entries[1:] if e["parentId"] == first_answer]
    assert [c["type"] for c in children] == ["message", "branch_summary"]
    assert entries[-1]["targetId"] == first_answer and entries[-1]["label"] == "overview"
