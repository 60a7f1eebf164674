"""A long operation of the command line shows its progress as one line on a terminal's stderr,
rewritten in place and cleared at the end, and writes nothing of it when stderr is piped."""

from __future__ import annotations

import io
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessiontree.output import TerminalProgress
from sessiontree.paths import encode_cwd

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"
CWD = "/home/user/demo"  # the example session's
TIMEOUT = 120


@pytest.fixture
def root(tmp_path: Path) -> Path:
    sessions = tmp_path / "sessions"
    project = sessions / encode_cwd(CWD)
    project.mkdir(parents=True)
    for n in range(3):
        shutil.copyfile(EXAMPLE, project / f"demo-{n}.jsonl")
    return sessions


def _env(root: Path) -> dict[str, str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(root.parent / "cache"), "SESSIONTREE_SESSIONS_DIR": str(root)}
    env.pop("SESSIONTREE_STORE", None)
    return env


def _stderr_on_a_terminal(root: Path, *args: str) -> tuple[int, str]:
    """Run the command with stderr on a pseudo-terminal; its exit status and what the terminal got."""
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "sessiontree", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=follower, env=_env(root), cwd=root.parent,
        )
    finally:
        os.close(follower)
    received = bytearray()
    try:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(leader)
    return process.wait(timeout=TIMEOUT), received.decode("utf-8", "replace")


def _stderr_piped(root: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        capture_output=False, stderr=subprocess.PIPE, text=True, env=_env(root), cwd=root.parent, timeout=TIMEOUT,
    )
    return done.returncode, done.stderr


def _commands(root: Path) -> dict[str, list[str]]:
    session = str(root / encode_cwd(CWD) / "demo-0.jsonl")
    return {
        "exporting entries": ["export", session, "--format", "html", "-o", str(root.parent / "out.html")],
        "reading sessions": ["stats", "--cwd", CWD],
        "indexing sessions": ["search", "parser"],
    }


@pytest.mark.parametrize("label", ["exporting entries", "reading sessions", "indexing sessions"])
def test_progress_is_one_line_on_a_terminal_and_nothing_on_a_pipe(root: Path, label: str) -> None:
    command = _commands(root)[label]
    status, shown = _stderr_on_a_terminal(root, *command)
    assert status == 0, shown
    assert f"\r{label}: " in shown
    last = shown.rindex(f"\r{label}: ")
    assert "\r\x1b[K" in shown[last:]  # cleared at the end, after its last update
    assert "\n" not in shown[: shown.rindex("\r\x1b[K")]  # one line, rewritten in place: no line feed
    status, piped = _stderr_piped(root, *command)
    assert status == 0, piped
    assert "\r" not in piped and label not in piped and "\x1b" not in piped


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_counts_and_clears() -> None:
    terminal = _Terminal()
    with TerminalProgress("reading", terminal, interval=3600) as progress:
        progress(0, 4)
        progress(1, 4)  # within the interval: not written
        progress(4, 4)  # the end is always written
    assert terminal.getvalue() == "\rreading: 0 of 4 (0%)\x1b[K\rreading: 4 of 4 (100%)\x1b[K\r\x1b[K"
    quiet = io.StringIO()  # not a terminal
    with TerminalProgress("reading", quiet) as progress:
        progress(1, 2)
    assert quiet.getvalue() == ""
