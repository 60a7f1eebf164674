"""The command line as a person meets it: mistakes answered in plain words (never a traceback),
`list`, `--cwd` as a path, `FILE#ID`, `--version`, the help, and `tree` folded to fit a terminal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree import __version__, cli, output
from sessiontree.paths import encode_cwd
from sessiontree.terminal_tree import _span

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "examples" / "demo-session.jsonl"
TIMEOUT = 60


class Setup:
    """A sessions root with the example session filed under a real project directory."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.project = tmp / "work" / "project"
        self.project.mkdir(parents=True)
        self.root = tmp / "sessions"
        folder = self.root / encode_cwd(str(self.project))
        folder.mkdir(parents=True)
        lines = EXAMPLE.read_bytes().splitlines()
        header = orjson.loads(lines[0]) | {"cwd": str(self.project)}
        self.session = folder / "demo.jsonl"
        self.session.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
        self.env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache"), "COLUMNS": "80", "LINES": "24"}
        self.env.pop("SESSIONTREE_SESSIONS_DIR", None)


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def sessiontree(setup: Setup, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd or setup.tmp, env=env or setup.env,
    )


# --------------------------------------------------------------------------- mistakes

def _not_a_session(s: Setup) -> list[str]:
    (s.tmp / "notes.jsonl").write_text("just some text\n")
    return ["tree", str(s.tmp / "notes.jsonl")]


def _fifo(s: Setup) -> list[str]:
    os.mkfifo(s.tmp / "pipe.jsonl")
    return ["context", str(s.tmp / "pipe.jsonl")]


# (name, arguments from the setup, exit status, words stderr must hold)
MISTAKES: list[tuple[str, Callable[[Setup], list[str]], int, list[str]]] = [
    ("a directory as the session file", lambda s: ["tree", str(s.session.parent)], 2, ["is a directory"]),
    ("a missing session file", lambda s: ["context", str(s.tmp / "gone.jsonl")], 2, ["no such file", "gone.jsonl"]),
    ("a file that is not a session", _not_a_session, 1, ["notes.jsonl", "is not a session file"]),
    ("a FIFO as the session file", _fifo, 2, ["pipe.jsonl", "not a regular file"]),
    ("export -o into a missing folder",
     lambda s: ["export", str(s.session), "--format", "html", "-o", str(s.tmp / "no" / "out.html")], 2,
     ["does not exist", str(Path("no"))]),
    ("export -o onto a directory", lambda s: ["export", str(s.session), "--format", "markdown", "-o", str(s.tmp)], 2,
     ["is a directory"]),
    ("an unknown entry with --leaf", lambda s: ["context", str(s.session), "--leaf", "ffffffff"], 1,
     ["demo.jsonl has no entry ffffffff"]),
    ("an unknown entry as FILE#ID", lambda s: ["export", f"{s.session}#ffffffff", "--format", "markdown"], 1,
     ["has no entry ffffffff"]),
    ("an unknown entry in tree", lambda s: ["tree", f"{s.session}#ffffffff"], 1, ["has no entry ffffffff"]),
    ("two different entries named", lambda s: ["context", f"{s.session}#2c3d4e5f", "--leaf", "1b2c3d4e"], 2,
     ["give one"]),
    ("a missing --sessions-dir for stats", lambda s: ["stats", "--cwd", ".", "--sessions-dir", str(s.tmp / "nope")], 2,
     ["nope", "does not exist"]),
    ("a missing --sessions-dir for search", lambda s: ["search", "parser", "--sessions-dir", str(s.tmp / "nope")], 2,
     ["does not exist"]),
    ("a missing --sessions-dir for list", lambda s: ["list", "--sessions-dir", str(s.tmp / "nope")], 2,
     ["does not exist"]),
    ("an unknown --cwd for stats", lambda s: ["stats", "--cwd", "/no/such/project", "--sessions-dir", str(s.root)], 1,
     ["no sessions of /no/such/project"]),
    ("an unknown --cwd for search", lambda s: ["search", "parser", "--cwd", "/elsewhere", "--sessions-dir", str(s.root)], 1,
     ["no sessions of /elsewhere"]),
    ("an unknown --cwd for list", lambda s: ["list", "--cwd", "/elsewhere", "--sessions-dir", str(s.root)], 1,
     ["no sessions of /elsewhere"]),
    ("a negative --depth", lambda s: ["tree", str(s.session), "--depth", "-1"], 2, ["--depth", "negative"]),
    ("a bad FTS query", lambda s: ["search", '"unclosed', "--fts", "--sessions-dir", str(s.root)], 1, ["sessiontree:"]),
]


@pytest.mark.parametrize(("name", "arguments", "status", "words"), MISTAKES, ids=[m[0] for m in MISTAKES])
def test_a_mistake_gets_plain_words_and_a_status(
    setup: Setup, name: str, arguments: Callable[[Setup], list[str]], status: int, words: list[str]
) -> None:
    done = sessiontree(setup, *arguments(setup))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, done.stderr
    assert all(word in done.stderr for word in words), done.stderr
    assert done.stderr.startswith(("sessiontree: ", "usage: ")), done.stderr
    assert "invalid params" not in done.stderr.lower() and "(leafId)" not in done.stderr


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_named(setup: Setup) -> None:
    setup.session.chmod(0)
    done = sessiontree(setup, "tree", str(setup.session))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "demo.jsonl" in done.stderr and "ermission" in done.stderr


def test_ctrl_c_is_one_line_and_status_130(setup: Setup) -> None:
    """Interrupted mid-command (here: as the tree is read): no traceback, the shell's status for SIGINT."""
    code = (
        "import sys\nfrom sessiontree import cli\n"
        "def interrupted(*args, **kwargs):\n    raise KeyboardInterrupt\n"
        "cli.folded_rows = interrupted\n"
        "raise SystemExit(cli.main(sys.argv[1:]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, "tree", str(setup.session)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=setup.env)
    assert (done.returncode, done.stderr) == (130, "sessiontree: interrupted\n")


def test_a_file_the_system_refuses_is_named(setup: Setup) -> None:
    """Any OSError on the way (here: reading the tree) names the file and the system's reason."""
    code = (
        "import sys\nfrom sessiontree import cli\n"
        "def refused(*args, **kwargs):\n    raise PermissionError(13, 'Permission denied', '/s/x.jsonl')\n"
        "cli.folded_rows = refused\n"
        "raise SystemExit(cli.main(sys.argv[1:]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, "tree", str(setup.session)],
                          capture_output=True, text=True, timeout=TIMEOUT, env=setup.env)
    assert (done.returncode, done.stderr) == (1, "sessiontree: /s/x.jsonl: Permission denied\n")


def test_half_an_emoji_is_printed_not_a_traceback(setup: Setup) -> None:
    """JavaScript writes lone surrogates (`\\ud83d`) and the daemon keeps them: they print as U+FFFD, as
    Node writes them, in every command (the same policy as export's bytes)."""
    header = setup.session.read_bytes().splitlines()[0]
    entry = b'{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",' \
            b'"message":{"role":"user","content":"half \\ud83d emoji","timestamp":1}}'
    setup.session.write_bytes(header + b"\n" + entry + b"\n")
    for command in (["context"], ["tree", "--flat"], ["export", "--format", "markdown"]):
        done = sessiontree(setup, *command, str(setup.session))
        assert done.returncode == 0 and "half \ufffd emoji" in done.stdout, done.stderr
    done = sessiontree(setup, "export", str(setup.session), "--format", "markdown", "-o", str(setup.tmp / "out.md"))
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr


def test_an_empty_session_says_so(setup: Setup) -> None:
    setup.session.write_bytes(setup.session.read_bytes().splitlines(keepends=True)[0])
    done = sessiontree(setup, "tree", str(setup.session))
    assert (done.returncode, done.stdout) == (0, "(no entries yet)\n")


def test_an_export_that_cannot_be_written_loses_nothing(setup: Setup) -> None:
    before = setup.session.read_bytes()
    done = sessiontree(setup, "export", str(setup.session), "--format", "html", "-o", str(setup.tmp / "x" / "y.html"))
    assert done.returncode == 2 and setup.session.read_bytes() == before and not (setup.tmp / "x").exists()


# --------------------------------------------------------------------------- finding sessions

@pytest.mark.parametrize("given", [".", "./", "../project/", "{project}", "{project}/"])
def test_cwd_is_a_path_everywhere(setup: Setup, given: str) -> None:
    cwd = given.format(project=setup.project)
    stats = sessiontree(setup, "stats", "--cwd", cwd, "--sessions-dir", str(setup.root), "--json", cwd=setup.project)
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["sessions"] == 1
    found = sessiontree(setup, "search", "callers", "--cwd", cwd, "--sessions-dir", str(setup.root), cwd=setup.project)
    assert found.returncode == 0 and "demo.jsonl#7b8c9d0e" in found.stdout, found.stderr
    listed = sessiontree(setup, "list", "--cwd", cwd, "--sessions-dir", str(setup.root), "--json", cwd=setup.project)
    assert [s["path"] for s in json.loads(listed.stdout)["sessions"]] == [str(setup.session)]


def test_cwd_with_a_tilde(setup: Setup) -> None:
    env = {**setup.env, "HOME": str(setup.tmp / "work")}
    done = sessiontree(setup, "stats", "--cwd", "~/project", "--sessions-dir", str(setup.root), "--json", env=env)
    assert done.returncode == 0 and json.loads(done.stdout)["cwd"] == str(setup.project), done.stderr


def test_list_shows_the_newest_first_with_entries_size_and_place(setup: Setup) -> None:
    older = setup.session.with_name("older.jsonl")
    lines = EXAMPLE.read_bytes().splitlines()
    header = orjson.loads(lines[0]) | {"cwd": str(setup.project), "id": "older", "timestamp": "2025-01-01T00:00:00.000Z"}
    older.write_bytes(orjson.dumps(header) + b"\n")
    done = sessiontree(setup, "list", "--sessions-dir", str(setup.root))
    assert done.returncode == 0, done.stderr
    text = done.stdout.splitlines()
    assert "16 entries" in text[0] and "Empty input in the parser" in text[0] and "KB" in text[0]
    assert text[1].split() == [str(setup.project), str(setup.session)]
    assert "0 entries" in text[2] and "(no messages)" in text[2] and text[3].split()[1] == str(older)


def test_file_hash_id_is_the_leaf_for_context_export_and_tree(setup: Setup) -> None:
    by_flag = sessiontree(setup, "context", str(setup.session), "--leaf", "2c3d4e5f")
    by_hash = sessiontree(setup, "context", f"{setup.session}#2c3d4e5f")
    assert by_hash.returncode == 0 and by_hash.stdout == by_flag.stdout and "leaf: 2c3d4e5f" in by_hash.stdout
    exported = sessiontree(setup, "export", f"{setup.session}#2c3d4e5f", "--format", "markdown")
    assert exported.returncode == 0 and "Raise a ValueError" in exported.stdout
    tree = sessiontree(setup, "tree", f"{setup.session}#1b2c3d4e").stdout.splitlines()
    marked = {line.split("• ")[1].split()[0] for line in tree if "• " in line}
    assert marked == {"a1b2c3d4", "b2c3d4e5", "c3d4e5f6", "d4e5f6a7", "e5f6a7b8", "f6a7b8c9", "0a1b2c3d", "1b2c3d4e"}
    assert any(line.endswith("← 1b2c3d4e") for line in tree) and tree[-1].endswith("← leaf")


# --------------------------------------------------------------------------- version and help

def test_version_names_the_package_protocol_and_format(setup: Setup) -> None:
    done = sessiontree(setup, "--version")
    assert (done.returncode, done.stdout) == (0, f"sessiontree {__version__} (protocol 1.0, session format 3)\n")


def test_the_help_speaks_to_a_person() -> None:
    top = cli._parser().format_help()
    assert ".py" not in top and "domain" not in top and "sessiontree list --cwd ." in top
    commands = next(a for a in cli._parser()._actions if isinstance(a, type(cli._parser()._subparsers._group_actions[0])))  # type: ignore[union-attr]
    for name, parser in commands.choices.items():  # type: ignore[attr-defined]
        assert parser.description, f"`sessiontree {name} --help` has no description"


# --------------------------------------------------------------------------- the tree at a terminal

def ladder(path: Path, rungs: int, run: int = 6) -> Path:
    """A session that branches off its latest branch again and again (how pi sessions grow): each rung
    a chain of `run` entries, then a branch point with a dead end and the next rung."""
    lines: list[Any] = [{"type": "session", "version": 3, "id": "ladder", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}]
    parent, n = None, 0

    def add(parent_id: str | None, text: str) -> str:
        nonlocal n
        n += 1
        entry_id = f"e{n:07d}"
        stamp = f"2026-01-01T00:{n // 60000 % 60:02d}:{n // 1000 % 60:02d}.{n % 1000:03d}Z"
        lines.append({"type": "message", "id": entry_id, "parentId": parent_id, "timestamp": stamp,
                      "message": {"role": "user", "content": f"{text} " + "words " * 30, "timestamp": n}})
        return entry_id

    for rung in range(rungs):
        for _ in range(run):
            parent = add(parent, f"rung {rung}")
        add(parent, f"dead end {rung}")
    add(parent, "the leaf")
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def test_a_deep_tree_fits_the_terminal(setup: Setup) -> None:
    path = ladder(setup.tmp / "ladder.jsonl", 60)
    done = sessiontree(setup, "tree", str(path))
    assert done.returncode == 0, done.stderr
    shown = done.stdout.splitlines()
    assert all(_span(line) <= 80 for line in shown), max(shown, key=_span)
    assert len(shown) < 0.6 * (60 * 7 + 1), "runs are folded"
    assert any("[60]" in line for line in shown) and shown[-1].endswith("← leaf")
    assert any("4 entries" in line for line in shown) and any("(2 branches)" in line for line in shown)
    wide = sessiontree(setup, "tree", str(path), "--width", "0").stdout.splitlines()
    assert max(map(_span, wide)) > 80 and len(wide) == len(shown)


def test_tree_file_hash_id_inside_a_folded_run(setup: Setup) -> None:
    """The entry named becomes a row of its own (the run around it split) and the path marks lead to it."""
    path = ladder(setup.tmp / "ladder.jsonl", 20)
    shown = sessiontree(setup, "tree", f"{path}#e0000003").stdout.splitlines()
    assert shown[:4] == [
        "• e0000001 user: rung 0 words words words words words words words words words w…",
        "• e0000002 user: rung 0 words words words words words words words words words w…",
        "• e0000003 user: rung 0 words words words words words words words w…  ← e0000003",
        "  e0000004…e0000005 2 entries, from user: rung 0 words words words words words …",
    ]
    assert sum("• " in line for line in shown) == 3 and shown[-1].endswith("← leaf")
    whole = sessiontree(setup, "tree", str(path)).stdout.splitlines()
    assert len(shown) == len(whole) + 2 and whole[1].startswith("• e0000002…e0000005 4 entries")


def test_tree_unfolds_limits_and_keeps_the_stable_forms(setup: Setup) -> None:
    path = ladder(setup.tmp / "ladder.jsonl", 10)
    every = sessiontree(setup, "tree", str(path), "--all").stdout.splitlines()
    assert len(every) == 10 * 7 + 1
    assert sessiontree(setup, "tree", str(path), "--unfold").stdout.splitlines() == every
    limited = sessiontree(setup, "tree", str(path), "--limit", "3").stdout.splitlines()
    assert len(limited) == 4 and limited[-1].startswith("… ") and "--limit 3" in limited[-1]
    shallow = sessiontree(setup, "tree", str(path), "--depth", "2").stdout.splitlines()
    assert "rows deeper (--depth)" in shallow[-1] and all("[" not in line for line in shallow)
    flat = sessiontree(setup, "tree", str(path), "--flat").stdout.splitlines()
    assert len(flat) == 71 and flat[-1].endswith("← leaf")
    answer = json.loads(sessiontree(setup, "tree", str(path), "--json").stdout)
    assert answer["leafId"] == "e0000071" and len(answer["nodes"]) == 71


def test_a_small_tree_is_shown_whole(setup: Setup) -> None:
    shown = sessiontree(setup, "tree", str(setup.session)).stdout.splitlines()
    assert len(shown) == 16 and shown[0].startswith("• a1b2c3d4 model_change")
    assert shown[6].startswith("├─   0a1b2c3d label") and shown[9].startswith("└─ • 3d4e5f6a user")


def test_previews_cannot_reach_the_terminal(setup: Setup) -> None:
    lines = setup.session.read_bytes().splitlines()
    entry = orjson.loads(lines[-1])
    entry["message"]["content"] = [{"type": "text", "text": "\x1b]0;owned\x07 \x1b[2J gone"}]
    setup.session.write_bytes(b"\n".join([*lines[:-1], orjson.dumps(entry)]) + b"\n")
    shown = sessiontree(setup, "tree", str(setup.session)).stdout
    assert "\x1b" not in shown and "\x07" not in shown


def test_the_pager_gets_the_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "paged"
    monkeypatch.delenv("LESS", raising=False)
    monkeypatch.setenv("PAGER", f'echo "LESS=$LESS" > {out}; cat >> {out}')
    output.show_lines(iter(["one", "two"]), page=True)
    assert out.read_text() == "LESS=FRX\none\ntwo\n"
    monkeypatch.setenv("PAGER", "cat")
    assert output.pager_command() is None
    if shutil.which("less"):
        monkeypatch.delenv("PAGER")
        assert output.pager_command() == "less"


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        ("├─ • abc def", 8, "├─ • ab…"),
        ("├─ • abc", 8, "├─ • abc"),
        ("日本語のテキスト", 7, "日本語…"),  # two columns a character
        ("e\u0301e\u0301e\u0301e\u0301e\u0301", 4, "e\u0301e\u0301e\u0301e\u0301e\u0301"[:6] + "…"),  # combining marks take none
        ("ab😀cd", 4, "ab…"),
    ],
)
def test_lines_are_cut_by_terminal_columns(text: str, width: int, shown: str) -> None:
    from sessiontree.terminal_tree import cut

    assert cut(text, width) == shown and _span(cut(text, width)) <= width
