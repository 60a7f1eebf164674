"""An exported page in a real headless browser (Debian's chromium): it renders the example session
with no console message at all, shows the blocks a reader expects, and a hostile message stays text.

A screenshot of the page is kept at /tmp/sessiontree-export.png."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support.daemon import Calls, RawDaemon

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
SCREENSHOT = Path("/tmp/sessiontree-export.png")


def _chromium() -> str:
    found = shutil.which("chromium")
    assert found, "Debian's chromium is needed: `make test` installs it (make vscode-e2e-deps)"
    return found


def _browse(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    command = [_chromium(), *flags, *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=True)


def test_the_exported_page_renders_cleanly_and_hostile_markup_stays_text(
    daemon: RawDaemon, sessions_dir: Path, tmp_path: Path
) -> None:
    calls = Calls(daemon)
    path = sessions_dir / "--w--" / "demo.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, path)
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]
    message = {"role": "user", "content": HOSTILE, "timestamp": 1}
    calls.result("session/append", {"sessionId": sid, "entry": {"type": "message", "message": message}})
    exported = calls.result("session/export", {"sessionId": sid, "format": "html", "scope": "tree"})
    page = tmp_path / "export.html"
    page.write_text(exported["content"])

    dumped = _browse(page, "--dump-dom")
    console = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []  # no error, no blocked script or image, nothing at all
    dom = dumped.stdout
    assert "<title>Empty input in the parser</title>" in dom and "pwned</title>" not in dom
    assert dom.count('<article class="entry') == 17  # the example's 16 entries and the hostile one
    assert dom.count("<details") >= 3 and dom.count('<section class="branch') == 1  # the leaf's path
    assert dom.count('<details class="branch off-path indent-1"') == 1  # the other branch, folded
    assert '<dl class="facts"><dt>cwd</dt><dd>/home/user/demo</dd>' in dom
    assert "&lt;script&gt;document.title=\"pwned\"&lt;/script&gt;" in dom  # shown, as text
    assert "<script" not in dom
    _browse(page, "--hide-scrollbars", "--window-size=1000,1600", f"--screenshot={SCREENSHOT}")
    assert SCREENSHOT.stat().st_size > 10_000
