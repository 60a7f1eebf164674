"""A user's read-only sessions over real stdio: the daemon and the CLI run without the power to
override file modes (root's CAP_DAC_OVERRIDE dropped with `setpriv`: the tests may run as root), on a
0444 file and on an old file in a 0555 folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from support.daemon import Calls, RawDaemon

HEADER = {"type": "session", "version": 3, "id": "ro-e2e", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
ENTRY = {"type": "message", "id": "a", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
         "message": {"role": "user", "content": "kept as it is", "timestamp": 1}}
NEW = {"type": "message", "message": {"role": "user", "content": "more", "timestamp": 2}}


def _as_nobody() -> list[str]:
    """A prefix that runs a command bound by file modes: root less its DAC capabilities."""
    if os.geteuid() != 0:
        return []  # file modes bind this user already
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv (util-linux) to run the daemon bound by file modes")
    prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import sessiontree"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.decode(errors='replace')[-200:]}")
    return prefix


@pytest.fixture
def root() -> Iterator[Path]:
    """A sessions root, its folders made writable again for the clean-up."""
    top = Path(tempfile.mkdtemp(prefix="sessiontree-ro-"))
    top.chmod(0o755)
    yield top / "sessions"
    for folder, _, _ in os.walk(top):
        os.chmod(folder, 0o755)
    shutil.rmtree(top)


def _session(path: Path, header: dict[str, object], mode: int) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = orjson.dumps(header) + b"\n" + orjson.dumps(ENTRY) + b"\n"
    path.write_bytes(data)
    path.chmod(mode)
    return data


def _daemon(prefix: list[str], root: Path) -> RawDaemon:
    command = [*prefix, "env", f"XDG_CACHE_HOME={root.parent / 'cache'}", sys.executable, "-m", "sessiontree"]
    daemon = RawDaemon("--sessions-dir", str(root), command=command)
    daemon.initialize()
    return daemon


def test_a_0444_file_opens_read_only_and_refuses_appends(root: Path) -> None:
    prefix = _as_nobody()
    path = root / "--p--" / "s.jsonl"
    data = _session(path, HEADER, 0o444)
    path.parent.chmod(0o777)  # the folder is writable: the file's own mode refuses
    daemon = _daemon(prefix, root)
    try:
        calls = Calls(daemon)
        opened = calls.result("session/open", {"path": str(path)})
        assert opened["entryCount"] == 1 and opened["warnings"][0]["kind"] == "read-only"
        assert "permission" in opened["warnings"][0]["message"]
        refused = calls.error("session/append", {"sessionId": opened["sessionId"], "entry": NEW})
        assert refused["code"] == -32024
        assert refused["data"] == {"error": "ReadOnlySession", "path": str(path), "reason": "permission"}
        tree = calls.result("session/tree", {"sessionId": opened["sessionId"]})
        assert [node["id"] for node in tree["nodes"]] == ["a"]
    finally:
        daemon.kill()
    assert path.read_bytes() == data


def test_an_old_file_in_a_0555_folder_is_shown_migrated_and_left_as_it_is(root: Path) -> None:
    prefix = _as_nobody()
    path = root / "--p--" / "old.jsonl"
    data = _session(path, {**HEADER, "version": 2}, 0o666)
    path.parent.chmod(0o555)
    daemon = _daemon(prefix, root)
    try:
        calls = Calls(daemon)
        opened = calls.result("session/open", {"path": str(path)})
        assert opened["header"]["version"] == 3 and opened["warnings"][0]["kind"] == "read-only"
        refused = calls.error("session/append", {"sessionId": opened["sessionId"], "entry": NEW})
        assert refused["code"] == -32024 and refused["data"]["reason"] == "permission"
    finally:
        daemon.kill()
    assert path.read_bytes() == data and sorted(path.parent.iterdir()) == [path]


@pytest.mark.parametrize("command", [["tree"], ["context"], ["stats"]])
def test_the_cli_views_a_0444_file_of_another_user(root: Path, command: list[str]) -> None:
    prefix = _as_nobody()
    path = root / "--p--" / "s.jsonl"
    data = _session(path, HEADER, 0o444)
    env = {**os.environ, "XDG_CACHE_HOME": str(root.parent / "cache")}
    shown = subprocess.run(
        [*prefix, "env", f"XDG_CACHE_HOME={env['XDG_CACHE_HOME']}", sys.executable, "-m", "sessiontree",
         *command, str(path)],
        capture_output=True, timeout=60,
    )
    assert shown.returncode == 0, shown.stderr.decode()
    assert b"Permission denied" not in shown.stderr
    assert path.read_bytes() == data
