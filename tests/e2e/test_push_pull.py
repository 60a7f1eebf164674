"""`sessiontree push`, `pull` and `store migrate`, run as the commands they are, on a throwaway PostgreSQL.

A push then a pull gives back the very bytes (every pi-quirks file: BOM, CRLF, malformed and torn
lines, duplicate ids); pushing again adds nothing, a grown file adds only its new lines, and a file
that went its own way adds the entries the store lacks, once. A pull leaves an identical file alone,
extends a prefix and refuses a different file. The DSN's password is never printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sessiontree import protocol as p
from sessiontree.service import ServiceConfig, SessionService
from support.sessions import PI_QUIRK_CASES

NO_HEADER = ["05-no-header.jsonl", "06-header-not-first.jsonl", "08-empty.jsonl"]  # not sessions the file store opens
SESSIONS = [case.name for case in sorted(PI_QUIRK_CASES.glob("*.jsonl")) if case.name not in NO_HEADER]
VALID = "01-valid.jsonl"
PASSWORD = "secret-pw"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_STORE", "SESSIONTREE_SESSIONS_DIR")}
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def push(dsn: str, root: Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    return cli("push", *paths, "--store", dsn, "--sessions-dir", root)


def pull(dsn: str, root: Path, *names: str) -> subprocess.CompletedProcess[str]:
    return cli("pull", "--store", dsn, "--sessions-dir", root, "--", *names)


def outcomes(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """name -> outcome, from the command's lines (`<sign> <outcome> <name>[ (amount)][: note]`)."""
    found = {}
    for line in done.stdout.splitlines():
        _, outcome, rest = line.split(maxsplit=2)
        found[rest.split(" (")[0].split(": ")[0]] = outcome
    return found


def sql(dsn: str, query: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        return connection.execute(query, args).fetchall()


def line_count(dsn: str, name: str | None = None) -> int:
    if name is None:
        return int(sql(dsn, "SELECT count(*) FROM sessiontree.lines")[0][0])
    query = "SELECT count(*) FROM sessiontree.lines JOIN sessiontree.sessions USING (sid) WHERE name = %s"
    return int(sql(dsn, query, name)[0][0])


def stored_bytes(dsn: str, name: str) -> bytes:
    rows = sql(
        dsn,
        "SELECT data FROM sessiontree.lines JOIN sessiontree.sessions USING (sid) WHERE name = %s ORDER BY off",
        name,
    )
    return b"".join(bytes(data) for (data,) in rows)


def place(root: Path, case: str, name: str | None = None) -> Path:
    target = root / "--home-user-project--" / (name or case)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PI_QUIRK_CASES / case, target)
    return target


def entry(entry_id: str, parent: str | None, text: str) -> bytes:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1735689700000}
    value = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-01T00:01:40.000Z",
        "message": message,
    }
    return json.dumps(value).encode() + b"\n"


def last_id(path: Path) -> str:
    return str(json.loads(path.read_bytes().splitlines()[-1])["id"])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


# --------------------------------------------------------------------------- push, then pull


def test_push_then_pull_gives_back_the_very_bytes_of_every_quirk_file(pg_dsn: str, root: Path, tmp_path: Path) -> None:
    files = {case: place(root, case) for case in SESSIONS}
    pushed = push(pg_dsn, root, root)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    names = {f"--home-user-project--/{case}": case for case in SESSIONS}
    assert outcomes(pushed) == dict.fromkeys(names, "created")
    for name, case in names.items():
        assert line_count(pg_dsn, name) == len(files[case].read_bytes().splitlines(keepends=True)), case
    elsewhere = tmp_path / "pulled"
    pulled = pull(pg_dsn, elsewhere)  # every session in the store
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert outcomes(pulled) == dict.fromkeys(names, "created")
    differing = [case for name, case in names.items() if (elsewhere / name).read_bytes() != files[case].read_bytes()]
    assert not differing


def test_a_repeated_push_is_unchanged_and_adds_no_row(pg_dsn: str, root: Path) -> None:
    path = place(root, "24-crlf.jsonl")
    assert outcomes(push(pg_dsn, root, path)) == {"--home-user-project--/24-crlf.jsonl": "created"}
    rows = line_count(pg_dsn)
    again = push(pg_dsn, root, path)
    assert again.returncode == 0
    assert outcomes(again) == {"--home-user-project--/24-crlf.jsonl": "unchanged"}
    assert line_count(pg_dsn) == rows


@pytest.mark.parametrize("case", [VALID, "04-truncated-last.jsonl"])
def test_a_file_that_grew_pushes_only_its_new_lines(case: str, pg_dsn: str, root: Path) -> None:
    path = place(root, case)
    name = f"--home-user-project--/{case}"
    push(pg_dsn, root, path)
    rows, size = line_count(pg_dsn, name), path.stat().st_size
    torn = not path.read_bytes().endswith(b"\n")
    grown = (b'"}\n' if torn else b"") + entry("9e000001", None, "one") + entry("9e000002", "9e000001", "two")
    with path.open("ab") as out:
        out.write(grown)
    done = push(pg_dsn, root, path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outcomes(done) == {name: "appended"}
    assert f"({len(grown):,} bytes)" in done.stdout
    assert line_count(pg_dsn, name) == rows + 2 + torn  # a torn line's completion is a row of its own
    assert stored_bytes(pg_dsn, name) == path.read_bytes()
    assert size + len(grown) == path.stat().st_size


def test_a_file_that_went_its_own_way_is_merged_by_id_once(pg_dsn: str, root: Path, tmp_path: Path) -> None:
    path = place(root, VALID)
    name = f"--home-user-project--/{VALID}"
    push(pg_dsn, root, path)
    # The store: two appends by a daemon serving it.
    service = SessionService(ServiceConfig(root, store=pg_dsn))
    try:
        sid = service.open(p.OpenParams(str(path))).session_id
        for text in ("daemon one", "daemon two"):
            message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1735689800000}
            service.append(p.AppendParams(sid, entry={"type": "message", "message": message}))
    finally:
        service.close_all()
    daemon_rows = line_count(pg_dsn, name)
    # The file: two other lines, and one the store already has.
    original = path.read_bytes()
    tail = original.splitlines(keepends=True)[-1]
    with path.open("ab") as out:
        out.write(entry("f11e0001", last_id(path), "file one") + entry("f11e0002", "f11e0001", "file two") + tail)
    merged = push(pg_dsn, root, path)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert outcomes(merged) == {name: "merged"}
    assert "(2 entries)" in merged.stdout
    assert line_count(pg_dsn, name) == daemon_rows + 2
    again = push(pg_dsn, root, path)
    assert outcomes(again) == {name: "unchanged"}
    assert line_count(pg_dsn, name) == daemon_rows + 2
    ids = [json.loads(line).get("id") for line in stored_bytes(pg_dsn, name).splitlines()]
    assert ids.count("f11e0001") == ids.count("f11e0002") == 1
    assert stored_bytes(pg_dsn, name).startswith(original)


# --------------------------------------------------------------------------- pull into existing files


def test_pull_leaves_an_identical_file_extends_a_prefix_and_refuses_a_different_file(pg_dsn: str, root: Path) -> None:
    path = place(root, "07-bom.jsonl")
    name = f"--home-user-project--/{path.name}"
    push(pg_dsn, root, path)
    data = path.read_bytes()

    same = pull(pg_dsn, root, name)
    assert (same.returncode, outcomes(same)) == (0, {name: "unchanged"})
    assert path.read_bytes() == data

    path.write_bytes(data[: len(data) // 2])  # a prefix, cut inside a line
    extended = pull(pg_dsn, root, name)
    assert (extended.returncode, outcomes(extended)) == (0, {name: "appended"})
    assert path.read_bytes() == data

    different = data.replace(b'"user"', b'"USER"', 1)
    assert different != data
    for other in (different, data + b"\n", data[:10] + b"x"):
        path.write_bytes(other)
        refused = pull(pg_dsn, root, name)
        assert (refused.returncode, outcomes(refused)) == (1, {name: "differs"}), refused.stdout
        assert path.read_bytes() == other


def test_files_without_a_header_fail_clearly(pg_dsn: str, root: Path) -> None:
    paths = [place(root, case) for case in NO_HEADER]
    done = push(pg_dsn, root, *paths)
    assert done.returncode == 1
    assert outcomes(done) == {f"--home-user-project--/{case}": "failed" for case in NO_HEADER}
    assert done.stdout.count("the first line is not a session header") == 2  # 05, 06
    assert done.stdout.count("holds no session header") == 1  # 08
    assert sql(pg_dsn, "SELECT count(*) FROM sessiontree.sessions") == [(0,)]
    elsewhere = push(pg_dsn, root, PI_QUIRK_CASES / NO_HEADER[0])  # no header, so no cwd to name it by
    assert elsewhere.returncode == 1 and "holds no session header" in elsewhere.stdout


# --------------------------------------------------------------------------- the password, the schema, names


def test_the_dsn_password_is_never_printed(pg_dsn: str, root: Path, tmp_path: Path) -> None:
    with_password = pg_dsn.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")
    assert PASSWORD in with_password
    path = place(root, VALID)
    runs = [
        cli("store", "migrate", "--store", with_password),
        push(with_password, root, path),
        push(with_password, root, path, root / "missing.jsonl"),
        pull(with_password, tmp_path / "pulled"),
        pull(with_password, root, "--home-user-project--/no-such.jsonl"),
        push(with_password.replace(pg_dsn.rsplit("/", 1)[1].split("?")[0], "no_such_database"), root, path),
        cli("store", "migrate", "--store", with_password.replace("host=", "port=1&host=")),
    ]
    assert [run.returncode for run in runs] == [0, 0, 1, 0, 1, 1, 1]
    assert "no_such_database" in runs[5].stderr + runs[5].stdout  # the failure itself is shown
    for run in runs:
        assert PASSWORD not in run.stdout + run.stderr, run.args


def test_store_migrate_creates_the_schema_then_says_up_to_date(pg_dsn: str) -> None:
    first = cli("store", "migrate", "--store", pg_dsn)
    assert first.returncode == 0, first.stderr
    assert "(was 0)" in first.stdout
    tables = {name for (name,) in sql(pg_dsn, "SELECT tablename FROM pg_tables WHERE schemaname = 'sessiontree'")}
    assert {"sessions", "lines", "schema_version"} <= tables
    second = cli("store", "migrate", "--store", pg_dsn)
    assert second.returncode == 0
    assert second.stdout.strip().endswith("up to date")
    assert (
        first.stdout.split(": schema version ")[1].split()[0]
        == second.stdout.split(": schema version ")[1].split(",")[0]
    )


def test_names_are_paths_below_the_root_or_pi_s_place_for_the_header_cwd(
    pg_dsn: str, root: Path, tmp_path: Path
) -> None:
    nested = root / "--somewhere--" / "deeper" / "a.jsonl"
    nested.parent.mkdir(parents=True)
    shutil.copyfile(PI_QUIRK_CASES / VALID, nested)
    outside = tmp_path / "elsewhere" / "b.jsonl"
    outside.parent.mkdir()
    shutil.copyfile(PI_QUIRK_CASES / "24-crlf.jsonl", outside)
    cwd = json.loads(outside.read_bytes().splitlines()[0])["cwd"]
    done = push(pg_dsn, root, nested, outside)
    assert done.returncode == 0, done.stdout + done.stderr
    encoded = "--" + cwd.strip("/").replace("/", "-") + "--"
    expected = {"--somewhere--/deeper/a.jsonl": "created", f"{encoded}/b.jsonl": "created"}
    assert outcomes(done) == expected
    assert sorted(name for (name,) in sql(pg_dsn, "SELECT name FROM sessiontree.sessions")) == sorted(expected)


# --------------------------------------------------------------------------- names from the store are untrusted

HOSTILE_NAMES = [
    "../../../.ssh/authorized_keys",
    "--home-user-project--/../../../escaped.jsonl",
    "../escaped.jsonl",
    "/tmp/absolute.jsonl",
    "--home-user-project--//empty-part.jsonl",
    "--home-user-project--/./dot.jsonl",
    "--home-user-project--/\x1b[31mred.jsonl",
]


def copy_row(dsn: str, source: str, name: str) -> None:
    """A row as any role serving the store may insert it: `source`'s session under `name`."""
    with psycopg.connect(dsn, autocommit=True) as connection, connection.transaction():
        row = connection.execute(
            "INSERT INTO sessiontree.sessions (name, directory, header, size, message_count, first_message)"
            " SELECT %s, %s, header, size, message_count, first_message FROM sessiontree.sessions WHERE name = %s"
            " RETURNING sid",
            (name, name.rsplit("/", 1)[0] if "/" in name else ".", source),
        ).fetchone()
        assert row is not None
        connection.execute(
            "INSERT INTO sessiontree.lines (sid, off, entry_id, data) SELECT %s, off, entry_id, data"
            " FROM sessiontree.lines JOIN sessiontree.sessions USING (sid) WHERE name = %s",
            (row[0], source),
        )


def test_pull_refuses_store_names_that_are_no_path_below_the_root_and_pulls_the_rest(
    pg_dsn: str, root: Path, tmp_path: Path
) -> None:
    path = place(root, VALID)
    good = f"--home-user-project--/{VALID}"
    push(pg_dsn, root, path)
    for name in HOSTILE_NAMES:
        copy_row(pg_dsn, good, name)
    home = tmp_path / "home"
    target = home / "user" / "sessions"  # `../../../` from the root reaches tmp_path
    before = {str(p) for p in tmp_path.rglob("*")}
    everything = pull(pg_dsn, target)
    assert everything.returncode == 1, everything.stdout + everything.stderr
    assert "Traceback" not in everything.stderr
    assert outcomes(everything)[good] == "created"
    assert (target / good).read_bytes() == path.read_bytes()
    failed = [line for line in everything.stdout.splitlines() if line.startswith("! failed")]
    assert len(failed) == len(HOSTILE_NAMES), everything.stdout
    assert all("not a path below the sessions root" in line for line in failed)
    assert "\x1b" not in everything.stdout  # an escape sequence is shown escaped, never sent to the terminal
    after = {str(p) for p in tmp_path.rglob("*") if not str(p).startswith(str(target))}
    assert after == before | {str(home), str(home / "user")}  # the root's parents only: nothing beside them
    named = pull(pg_dsn, target, "--home-user-project--/../../../escaped.jsonl")  # by the user: a path outside
    assert named.returncode == 1 and not (home / "escaped.jsonl").exists()


def test_list_and_search_never_show_a_store_name_outside_the_root(pg_dsn: str, root: Path) -> None:
    path = place(root, VALID)
    good = f"--home-user-project--/{VALID}"
    push(pg_dsn, root, path)
    for name in ("../escaped.jsonl", "--home-user-project--/\x1b[31mred.jsonl"):
        copy_row(pg_dsn, good, name)
    service = SessionService(ServiceConfig(root, store=pg_dsn))
    try:
        listed = [summary.path for summary in service.list(p.ListParams()).sessions]
        assert listed == [str(root / good)]
        found = service.search(p.SearchParams(query="question"), service.refresh_search())
        assert found.hits and {hit.path for hit in found.hits} == {str(root / good)}
    finally:
        service.close_all()


# --------------------------------------------------------------------------- a merge adds each id once


def daemon_append(root: Path, dsn: str, path: Path, text: str) -> None:
    service = SessionService(ServiceConfig(root, store=dsn))
    try:
        sid = service.open(p.OpenParams(str(path))).session_id
        message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1735689800000}
        service.append(p.AppendParams(sid, entry={"type": "message", "message": message}))
    finally:
        service.close_all()


def stored_ids(dsn: str, name: str) -> list[str]:
    ids = []
    for line in stored_bytes(dsn, name).splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("type") != "session":
            ids.append(value.get("id"))
    return ids


def test_a_merge_does_not_add_again_an_entry_an_earlier_push_caught_half_written(pg_dsn: str, root: Path) -> None:
    path = place(root, VALID)
    name = f"--home-user-project--/{VALID}"
    line = entry("4a1f0001", last_id(path), "written in two goes")
    with path.open("ab") as out:
        out.write(line[:25])  # the writer is half way through the line
    assert outcomes(push(pg_dsn, root, path)) == {name: "created"}
    with path.open("ab") as out:
        out.write(line[25:])
    assert outcomes(push(pg_dsn, root, path)) == {name: "appended"}
    daemon_append(root, pg_dsn, path, "the store goes its own way")
    with path.open("ab") as out:  # and so does the file, holding one id twice (a pi quirk)
        out.write(entry("4a1f0002", "4a1f0001", "file only") + entry("4a1f0002", "4a1f0001", "file only"))
    merged = push(pg_dsn, root, path)
    assert outcomes(merged) == {name: "merged"}, merged.stdout
    assert "(1 entries)" in merged.stdout
    ids = stored_ids(pg_dsn, name)
    assert ids.count("4a1f0001") == ids.count("4a1f0002") == 1, ids
    assert outcomes(push(pg_dsn, root, path)) == {name: "unchanged"}


def test_push_of_a_fifo_fails_alone_instead_of_waiting_for_a_writer(pg_dsn: str, root: Path) -> None:
    path = place(root, VALID)
    fifo = root / "--home-user-project--" / "fifo.jsonl"
    os.mkfifo(fifo)
    done = push(pg_dsn, root, fifo, path)  # before: open() of the FIFO waited for a writer for good
    assert done.returncode == 1, done.stdout + done.stderr
    assert outcomes(done) == {"--home-user-project--/fifo.jsonl": "failed", f"--home-user-project--/{VALID}": "created"}
    assert "is not a regular file" in done.stdout


def test_push_of_a_file_whose_header_cwd_has_a_lone_surrogate_fails_alone_saying_why(
    pg_dsn: str, root: Path, tmp_path: Path
) -> None:
    """A header `cwd` with half an emoji names no place below the root (names.py refuses such a name
    for a pull too): that file fails with a plain message naming it, and the others are pushed."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    header = b'{"type":"session","version":3,"id":"odd","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/home/\\ud83d"}\n'
    odd = outside / "odd.jsonl"
    odd.write_bytes(header + entry("4a1f0001", None, "hi"))
    shutil.copyfile(PI_QUIRK_CASES / VALID, outside / VALID)
    done = push(pg_dsn, root, outside)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    failed = [line for line in lines if " failed " in line]
    assert len(failed) == 1 and str(odd) in failed[0], done.stdout
    # before: "the store holds a session named ..., it is left alone", as a pull says of a stored name
    assert "header's cwd" in failed[0] and "lone surrogate" in failed[0] and "not pushed" in failed[0], failed
    assert "the store holds" not in failed[0], failed
    assert sum(" created " in line for line in lines) == 1, done.stdout
    assert int(sql(pg_dsn, "SELECT count(*) FROM sessiontree.sessions")[0][0]) == 1
