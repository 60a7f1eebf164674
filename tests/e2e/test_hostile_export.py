"""session/export and the `export` command on hostile sessions: tool arguments nested 300 deep, a
fence-closing line indented three spaces, raw HTML in messages, line separators, lone surrogates.
Each is answered (no -32603, no traceback) with a document that shows what the session holds and
nothing the session could turn into markup."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.daemon import Calls

HEADER = {"type": "session", "version": 3, "id": "hostile-export", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
HOSTILE_HTML = '<script>alert(1)</script> <img src=x onerror="alert(2)"> &amp; <!-- x -->'


def _entry(n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": f"{n:08x}", "parentId": f"{n - 1:08x}" if n > 1 else None,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": {**message, "timestamp": 1767225600000}}


def _deep(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = {"a": [value]}
    return value


def _session(directory: Path, *messages: dict[str, Any], name: str = "s.jsonl") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    # ASCII JSON: a lone surrogate is the escape `\ud83d`, as JSON.stringify writes it
    lines = [json.dumps(HEADER)] + [json.dumps(_entry(n, m)) for n, m in enumerate(messages, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _tool_call(arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "edit", "arguments": arguments}],
            "provider": "p", "model": "m", "usage": {}, "stopReason": "toolUse"}


def _tool_result(text: str) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": "c1", "toolName": "edit", "content": [{"type": "text", "text": text}],
            "isError": False}


def _export(calls: Calls, path: Path, **params: Any) -> str:
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]
    content: str = calls.result("session/export", {"sessionId": sid, **params})["content"]
    calls.result("session/close", {"sessionId": sid})
    return content


def test_arguments_nested_300_deep_are_shown_cut_with_a_marker(calls: Calls, sessions_dir: Path) -> None:
    path = _session(sessions_dir / "--w--", _user("go"), _tool_call(_deep(300)))
    for params in ({"format": "markdown"}, {"format": "html", "scope": "tree"}):
        content = _export(calls, path, **params)
        assert "nested deeper than 64 levels, not shown" in content and "bottom" not in content
    shallow = _session(sessions_dir / "--w--", _user("go"), _tool_call(_deep(40)), name="shallow.jsonl")
    assert "bottom" in _export(calls, shallow, format="markdown")  # what fits is shown whole


def _code_blocks_closed_by(document: str, fence: str) -> list[str]:
    """Lines inside the fenced block opened by `fence` that CommonMark would take as its closing fence."""
    inside, closing = False, []
    for line in document.split("\n"):
        if not inside:
            inside = line.startswith(fence) and not line.startswith(fence + fence[0])
            continue
        if line == fence:
            break
        run = re.match(r" {0,3}(`+|~+)[ \t]*$", line)
        if run and run.group(1)[0] == fence[0] and len(run.group(1)) >= len(fence):
            closing.append(line)
    return closing


def test_a_fence_no_line_of_the_block_can_close(calls: Calls, sessions_dir: Path) -> None:
    text = "before\n   ```\n<b>inside</b>\nafter"
    path = _session(sessions_dir / "--w--", _user("go"), _tool_call({"path": "a"}), _tool_result(text))
    document = _export(calls, path, format="markdown")
    # a fence longer than the indented 3-backtick line, around the result as it is
    assert "\n````\nbefore\n   ```\n<b>inside</b>\nafter\n````\n" in document
    assert _code_blocks_closed_by(document, "````") == []


def test_markdown_escapes_the_sessions_html_outside_code(calls: Calls, sessions_dir: Path) -> None:
    text = f"{HOSTILE_HTML}\n\n`<code span>` and ``a ` <b>``\n\n```\n<kept as code>\n```\n\n```\nunclosed <i>"
    path = _session(sessions_dir / "--w--", _user(text), _user("**after**"))
    document = _export(calls, path, format="markdown")
    outside_code = document.replace("```\n<kept as code>\n```", "").replace("unclosed <i>", "")
    tags = set(re.findall(r"<(/?[a-zA-Z!][a-zA-Z]*)", outside_code))
    assert tags <= {"sub", "/sub", "code", "/code", "details", "/details", "summary", "/summary"}, tags
    assert "&lt;script&gt;" not in document and "&lt;script>alert(1)&lt;/script>" in document
    assert "&amp;amp;" in document and "&lt;!-- x -->" in document
    assert "<code>&lt;code span&gt;</code>" in document and "<code>a ` &lt;b&gt;</code>" in document
    assert "```\n<kept as code>\n```" in document  # fenced code is code: shown as written
    assert "unclosed <i>\n```\n" in document and "**User**" in document.split("unclosed")[1]  # closed for it


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "sessiontree", *args], capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize("kind", ["markdown", "html"])
def test_the_cli_writes_the_same_bytes_to_stdout_as_to_a_file(tmp_path: Path, kind: str) -> None:
    text = "line\u2028separator\rcarriage\ffeed\x85next\x1cgroup\r\nend"
    path = _session(tmp_path / "s", _user(text))
    to_stdout = _cli("export", "--format", kind, str(path))
    out = tmp_path / "out"
    to_file = _cli("export", "--format", kind, "-o", str(out), str(path))
    assert to_stdout.returncode == to_file.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == out.read_bytes()
    assert "line\u2028separator\rcarriage\ffeed\x85next\x1cgroup\r\nend".encode() in to_stdout.stdout


def test_a_lone_surrogate_is_written_as_u_fffd_whole_and_without_a_traceback(tmp_path: Path) -> None:
    path = _session(tmp_path / "s", _user("half an emoji: \ud83d, the rest"), _user("last words"))
    out = tmp_path / "o" / "out.md"
    out.parent.mkdir()
    done = _cli("export", "--format", "markdown", "-o", str(out), str(path))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    written = out.read_bytes()
    assert "half an emoji: \ufffd, the rest".encode() in written and written.rstrip().endswith(b"last words")
    assert _cli("export", "--format", "markdown", str(path)).stdout == written
    assert [p.name for p in out.parent.iterdir()] == ["out.md"]  # no temporary file left


def test_a_file_that_cannot_be_written_is_a_plain_error_and_nothing_is_changed(tmp_path: Path) -> None:
    path = _session(tmp_path / "s", _user("hello"))
    missing = tmp_path / "no" / "such" / "dir" / "out.md"
    done = _cli("export", "--format", "markdown", "-o", str(missing), str(path))
    # A folder that is not there is a mistake in the arguments (exit 2), found before any work.
    assert done.returncode == 2 and done.stderr.startswith(b"sessiontree: cannot write") and b"Traceback" not in done.stderr


def test_lines_with_a_lone_surrogate_print_and_the_next_lines_follow() -> None:
    """What `push` prints a line a file: one odd name must not end the listing (and the push)."""
    script = "from sessiontree.output import print_lines; print_lines(iter(['a\\udc80b', 'next']))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=False,
                          env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout == "a\ufffdb\nnext\n".encode(), done.stderr


def test_the_context_command_shows_deep_arguments_cut(tmp_path: Path) -> None:
    path = _session(tmp_path / "s", _user("go"), _tool_call(_deep(300)))
    done = _cli("context", str(path))
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert b"nested deeper than 64 levels, not shown" in done.stdout and b"[tool call edit]" in done.stdout


def test_a_file_is_written_through_its_link_and_keeps_its_permissions(tmp_path: Path) -> None:
    path = _session(tmp_path / "s", _user("hello"))
    target, link = tmp_path / "target.md", tmp_path / "link.md"
    target.write_text("old")
    target.chmod(0o640)
    link.symlink_to(target)
    assert _cli("export", "--format", "markdown", "-o", str(link), str(path)).returncode == 0
    assert link.is_symlink() and b"hello" in target.read_bytes() and target.stat().st_mode & 0o777 == 0o640
    to_stdout = _cli("export", "--format", "markdown", "-o", "/dev/stdout", str(path))  # not a file: written to
    assert to_stdout.returncode == 0 and b"hello" in to_stdout.stdout
