"""The `sessiontree` command: argument parsing, the tree and context views, and the real commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree import cli
from sessiontree.protocol import ContextResult, TreeNode, TreeResult
from sessiontree.render import context_lines, tree_lines

HEADER = {"type": "session", "version": 3, "id": "cli-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def node(node_id: str, parent: str | None, depth: int, children: int, **extra: Any) -> TreeNode:
    return TreeNode(node_id, parent, "message", "t", depth, children, **extra)


def test_tree_draws_branches_labels_and_the_leaf() -> None:
    nodes = [
        node("r", None, 0, 2, role="user", preview="root question"),
        node("a", "r", 1, 1, role="assistant", preview="answer A", label="keep"),
        node("a1", "a", 2, 0, role="user", preview="more\non A"),
        node("b", "r", 1, 0, role="assistant", preview="answer B"),
    ]
    assert list(tree_lines(TreeResult("a1", nodes))) == [
        "r user: root question",
        "├─ a assistant [keep]: answer A",
        "│  a1 user: more on A  ← leaf",
        "└─ b assistant: answer B",
    ]


def test_tree_of_a_100000_deep_session_stays_flat_and_fast() -> None:
    depth = 100_000
    nodes = [node(f"n{i}", f"n{i - 1}" if i else None, i, 1 if i < depth - 1 else 0, role="user") for i in range(depth)]
    lines = list(tree_lines(TreeResult(f"n{depth - 1}", nodes)))
    assert len(lines) == depth
    assert lines[0] == "n0 user" and lines[-1] == f"n{depth - 1} user  ← leaf"
    assert max(len(line) for line in lines) < 40


def test_context_shows_role_headers_and_text() -> None:
    context = ContextResult(
        messages=[
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "toolCall", "name": "read", "arguments": {"path": "a"}}]},
            {"role": "toolResult", "toolName": "read", "content": [{"type": "text", "text": "file body"}]},
            {"role": "compactionSummary", "summary": "earlier work"},
        ],
        thinking_level="high",
        model={"provider": "anthropic", "modelId": "claude"},
        leaf_id="x",
    )
    assert list(context_lines(context)) == [
        "# model: anthropic/claude  thinking: high  leaf: x",
        "",
        "── user ──",
        "hello",
        "",
        "── assistant ──",
        "[thinking] hm",
        '[tool call read] {"path":"a"}',
        "",
        "── toolResult (read) ──",
        "file body",
        "",
        "── compactionSummary ──",
        "earlier work",
    ]


def test_serve_options_parse() -> None:
    args = cli._parser().parse_args(["serve", "--sessions-dir", "/s", "--durability", "fsync", "--record", "r", "--debug"])
    assert (args.sessions_dir, args.durability, args.record, args.debug) == (Path("/s"), "fsync", Path("r"), True)
    with pytest.raises(SystemExit):
        cli._parser().parse_args(["serve", "--durability", "sometimes"])


def _session_file(tmp_path: Path) -> Path:
    entries = [
        {"type": "message", "id": "aaaaaaa1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "first question", "timestamp": 1}},
        {"type": "message", "id": "aaaaaaa2", "parentId": "aaaaaaa1", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "an answer"}], "provider": "p",
                     "model": "m", "api": "x", "usage": {}, "stopReason": "stop", "timestamp": 2}},
        {"type": "message", "id": "aaaaaaa3", "parentId": "aaaaaaa1", "timestamp": "2026-01-01T00:00:03.000Z",
         "message": {"role": "user", "content": "another try", "timestamp": 3}},
        {"type": "label", "id": "aaaaaaa4", "parentId": "aaaaaaa3", "timestamp": "2026-01-01T00:00:04.000Z",
         "targetId": "aaaaaaa2", "label": "good"},
    ]
    path = tmp_path / "--p--" / "s.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [HEADER, *entries]))
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, timeout=30)


def test_tree_command_prints_the_file(tmp_path: Path) -> None:
    done = _run("tree", "--flat", str(_session_file(tmp_path)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "aaaaaaa1 user: first question",
        "├─ aaaaaaa2 assistant [good]: an answer",
        "└─ aaaaaaa3 user: another try",
        "   aaaaaaa4 label: aaaaaaa2: good  ← leaf",
    ]


def test_context_command_at_a_leaf(tmp_path: Path) -> None:
    done = _run("context", str(_session_file(tmp_path)), "--leaf", "aaaaaaa2", "--format", "llm")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "# model: p/m  thinking: off  leaf: aaaaaaa2",
        "",
        "── user ──",
        "first question",
        "",
        "── assistant ──",
        "an answer",
    ]


def test_context_command_reports_errors(tmp_path: Path) -> None:
    done = _run("context", str(_session_file(tmp_path)), "--leaf", "ffffffff")
    assert done.returncode == 1
    assert "ffffffff" in done.stderr and done.stdout == ""
    assert _run("tree", str(tmp_path / "missing.jsonl")).returncode == 2


def test_tree_and_context_read_the_file_in_process(tmp_path: Path) -> None:
    """No daemon is spawned, and neither the server nor asyncio is imported."""
    code = (
        "import sys\n"
        "from sessiontree import cli\n"
        "assert cli.main(sys.argv[1:]) == 0\n"
        "print(sorted(m for m in ('sessiontree.server', 'sessiontree.client', 'asyncio', 'subprocess') if m in sys.modules), file=sys.stderr)\n"
    )
    path = _session_file(tmp_path)
    for command in (["tree"], ["context", "--format", "llm"]):
        args = [sys.executable, "-c", code, *command, str(path)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        assert done.stderr == "[]\n"


def test_the_allocator_is_set_on_glibc_and_left_alone_when_the_user_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import platform

    from sessiontree.rpc.allocator import tune_allocator

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert tune_allocator() is True
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert tune_allocator() is False
