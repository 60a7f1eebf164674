"""The daemon beside writers that take no lock (pi), and on a disk someone is tampering with.

Each test reproduces one way the daemon used to lose another writer's lines or reach outside its
sessions root, against the real daemon over stdio. pi's writer is simulated by a process that
appends whole lines with one `O_APPEND` write each and no lock, as pi's `appendFileSync` does
(tests/conformance/test_beside_pi.py runs pi's own SessionManager).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from support.daemon import Calls, RawDaemon, request
from support.messages import line, plain_user, user_entry
from support.pi_writer import ids_in, start_writer, writer_ids
from support.sessions import PI_QUIRK_CASES, SESSION_FILE_HEADER, session_file
from support.timeouts import EVENT_TIMEOUT

# --------------------------------------------------------------------------- another writer, no lock


def test_opening_while_another_process_writes_big_lines_cuts_none_of_them(calls: Calls, sessions_dir: Path) -> None:
    """A 500 KB write is visible half-done for a moment: that is not a torn line to cut off."""
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None))
    writer = start_writer(path, 40, 500_000, "a0000001", pause=0.002)
    opens = 0
    while writer.poll() is None:
        opened = calls.result("session/open", {"path": str(path)})
        calls.result("session/close", {"sessionId": opened["sessionId"]})
        opens += 1
    assert writer.returncode == 0 and opens > 0
    assert ids_in(path) == ["a0000001", *writer_ids(40)]  # every line whole, none cut
    opened = calls.result("session/open", {"path": str(path)})
    assert opened["entryCount"] == 41 and opened["warnings"] == []


def test_appends_beside_an_unlocked_writer_keep_every_line_in_its_place(
    calls: Calls, start_daemon: Callable[..., RawDaemon], sessions_dir: Path
) -> None:
    """Our offset is where our write landed, not the size we saw before it: lines that land in
    between are taken in as the other writer's, and nothing answers -32017 or vanishes."""
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None))
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]
    writer = start_writer(path, 3000, 300, "a0000001")
    ours = []
    for number in range(400):
        entry = {"type": "message", "message": {"role": "user", "content": f"ours {number}", "timestamp": 1}}
        ours.append(calls.result("session/append", {"sessionId": sid, "entry": entry})["id"])
    assert writer.wait(30) == 0
    in_file = ids_in(path)
    assert sorted(in_file) == sorted(["a0000001", *writer_ids(3000), *ours])  # each once
    served = calls.result("session/entries", {"sessionId": sid, "since": None})["entries"]
    assert [e["id"] for e in served] == in_file  # the daemon's view is the file, in file order
    assert [e["id"] for e in served if e["id"] in set(ours)] == ours
    fresh = Calls(start_daemon("--sessions-dir", str(sessions_dir)))
    fresh.daemon.initialize()
    assert fresh.result("session/open", {"path": str(path)})["warnings"] == []


def test_appends_beside_lines_of_twenty_megabytes_leave_no_empty_line_unreported(calls: Calls, sessions_dir: Path) -> None:
    """pi writes a line of 16-24 MiB with one write(): readers see it grow while the write runs,
    and an append that fences it then lands after its whole line (the writer holds the file until
    its write is done), line end and all: our fence made an empty line. The append waits for such
    a line to be finished instead; if a fence still follows a line end, its answer says so."""
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None))
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]
    writer = start_writer(path, 8, 20 << 20, "a0000001", pause=0.02)
    deadline = time.monotonic() + 4 * EVENT_TIMEOUT  # 160 MiB from a process on a busy machine
    ours, reported = [], []
    while writer.poll() is None:
        assert time.monotonic() < deadline, "the writer did not finish"
        answer = calls.result("session/append", {"sessionId": sid, "entry": user_entry(f"ours {len(ours)}")})
        ours.append(answer["id"])
        reported += [w for w in answer.get("warnings", []) if w["kind"] == "empty-line-fenced"]
    assert writer.returncode == 0 and len(ours) > 8
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    empty = [number for number, raw in enumerate(lines[:-1], start=1) if not raw]
    print(f"{len(ours)} appends beside 8 lines of 20 MiB: {len(empty)} empty lines, {len(reported)} reported")
    assert [w["line"] for w in reported] == empty, "an empty line the answers did not report"
    assert sorted(ids_in(path)) == sorted(["a0000001", *writer_ids(8), *ours])


def test_an_unfinished_line_is_never_moved_or_cut_and_its_bytes_stay_in_place(calls: Calls, sessions_dir: Path) -> None:
    """Two tears at the same offset keep every byte: nothing is moved, copied aside or cut."""
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None))
    first = line(plain_user("a0000002", "a0000001"))[:30]
    with path.open("ab") as out:
        out.write(first)
    opened = calls.result("session/open", {"path": str(path)})
    assert [w["kind"] for w in opened["warnings"]] == ["torn-tail"]
    calls.result("session/close", {"sessionId": opened["sessionId"]})
    with path.open("ab") as out:
        out.write(b"more bytes of the same unfinished line")
    before = path.read_bytes()
    opened = calls.result("session/open", {"path": str(path)})
    assert path.read_bytes() == before
    appended = calls.result("session/append", {"sessionId": opened["sessionId"], "entry": user_entry("after")})
    assert path.read_bytes().startswith(before + b"\n")
    assert not list(path.parent.glob("*.torn-*"))
    assert ids_in(path) == ["a0000001", appended["id"]]


def test_two_daemons_opening_one_v2_file_at_once_both_open_the_migrated_file(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path
) -> None:
    daemons = [Calls(start_daemon("--sessions-dir", str(sessions_dir))) for _ in range(2)]
    for d in daemons:
        d.daemon.initialize()
    for round_ in range(8):
        path = sessions_dir / "--w--" / f"v2-{round_}.jsonl"
        path.parent.mkdir(exist_ok=True)
        shutil.copyfile(PI_QUIRK_CASES / "19-v2-hookMessage.jsonl", path)
        messages = [request(1000 + round_, "session/open", {"path": str(path)}) for _ in daemons]
        for d, message in zip(daemons, messages, strict=True):
            d.daemon.send_message(message)  # both at once: they race for the migration
        answers = [d.receive() for d in daemons]
        assert all("result" in a for a in answers), answers
        assert len({a["result"]["sessionId"] for a in answers}) == 1
        appended = [d.result("session/append", {"sessionId": a["result"]["sessionId"], "entry": user_entry("x")})["id"]
                    for d, a in zip(daemons, answers, strict=True)]
        assert set(appended) <= set(ids_in(path))  # in the live file, not in the backup
        assert len(list(path.parent.glob(f"{path.name}.v2.bak*"))) == 1
        assert not list(path.parent.glob(f".{path.name}.migrating*"))
        for d, a in zip(daemons, answers, strict=True):
            d.result("session/close", {"sessionId": a["result"]["sessionId"]})


@pytest.mark.parametrize("how", ["renamed over", "made a symlink", "deleted"])
def test_a_file_replaced_under_an_open_session_is_noticed(calls: Calls, sessions_dir: Path, how: str) -> None:
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None))
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]
    other = session_file(sessions_dir, "other.jsonl", plain_user("a0000001", None))
    if how == "renamed over":
        other.replace(path)
    elif how == "made a symlink":
        path.unlink()
        path.symlink_to(other)
    else:
        path.unlink()
    kept = other.read_bytes() if other.exists() else None
    error = calls.error("session/append", {"sessionId": sid, "entry": user_entry("lost?")})
    assert error["code"] == -32022 and error["data"]["error"] == "FileReplaced"
    if kept is not None:
        assert other.read_bytes() == kept
    if how == "renamed over":  # opening again is how a client recovers
        assert calls.result("session/open", {"path": str(path)})["entryCount"] == 1
        calls.result("session/append", {"sessionId": sid, "entry": user_entry("found")})
        assert len(ids_in(path)) == 2


def test_an_in_place_rewrite_of_the_same_length_is_an_error_never_invalid_json(calls: Calls, sessions_dir: Path) -> None:
    path = session_file(sessions_dir, "s.jsonl", plain_user("a0000001", None), plain_user("a0000002", "a0000001"))
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]
    data = path.read_bytes()
    start = data.index(b"\n") + 1
    with path.open("r+b") as out:  # same length, another program's bytes
        out.seek(start + 5)
        out.write(b"\x00garbage\x00")
    error = calls.error("session/entries", {"sessionId": sid, "since": None})
    assert error["code"] == -32022


# --------------------------------------------------------------------------- confinement to the root


def test_symlinks_planted_at_the_names_the_daemon_writes_are_never_followed(
    calls: Calls, sessions_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not the daemon's")
    torn = session_file(sessions_dir, "torn.jsonl", plain_user("a0000001", None))
    with torn.open("ab") as out:
        out.write(b'{"type":"message","id":"a00')
    size = torn.stat().st_size
    for offset in (size, size - 27):
        (torn.parent / f"torn.jsonl.torn-{offset}").symlink_to(outside)
    v2 = sessions_dir / "--w--" / "v2.jsonl"
    shutil.copyfile(PI_QUIRK_CASES / "19-v2-hookMessage.jsonl", v2)
    (v2.parent / ".v2.jsonl.migrating").symlink_to(outside)
    (v2.parent / "v2.jsonl.v2.bak").symlink_to(outside)
    for path in (torn, v2):
        sid = calls.result("session/open", {"path": str(path)})["sessionId"]
        calls.result("session/append", {"sessionId": sid, "entry": user_entry("x")})
        assert path.is_file() and not path.is_symlink()
    assert outside.read_bytes() == b"not the daemon's"


def test_listing_never_leaves_the_root(calls: Calls, sessions_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    secret = elsewhere / "secret.jsonl"
    secret.write_bytes(line({**SESSION_FILE_HEADER, "id": "secret"}) + line(plain_user("a0000001", None, "the secret")))
    (sessions_dir / "--linked-dir--").symlink_to(elsewhere, target_is_directory=True)
    inside = session_file(sessions_dir, "inside.jsonl", plain_user("a0000001", None))
    (inside.parent / "linked.jsonl").symlink_to(secret)
    os.link(secret, inside.parent / "hard.jsonl")
    listed = calls.result("session/list", {})["sessions"]
    assert [s["path"] for s in listed] == [str(inside)]
    assert [s["path"] for s in calls.result("session/list", {"cwd": "/w"})["sessions"]] == [str(inside)]
    assert calls.error("session/list", {"cwd": "/linked/dir"})["code"] == -32013
    error = calls.error("session/open", {"path": str(inside.parent / "hard.jsonl")})
    assert error["code"] == -32013  # a second name of a file that may lie outside
    assert secret.read_bytes().count(b"\n") == 2


def test_a_fifo_is_refused_not_waited_on(calls: Calls, sessions_dir: Path) -> None:
    session_file(sessions_dir, "real.jsonl")
    fifo = sessions_dir / "--w--" / "fifo.jsonl"
    os.mkfifo(fifo)
    assert calls.error("session/open", {"path": str(fifo)})["code"] == -32014
    assert [Path(s["path"]).name for s in calls.result("session/list", {})["sessions"]] == ["real.jsonl"]


def test_a_path_swapped_for_a_symlink_while_opening_never_opens_the_outside_file(
    calls: Calls, sessions_dir: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(line({**SESSION_FILE_HEADER, "id": "outside"}))
    inside = session_file(sessions_dir, "real.jsonl")
    flip = inside.parent / "flip.jsonl"
    stop = threading.Event()

    def flipper() -> None:
        swap = inside.parent / ".swap"
        while not stop.is_set():
            for target in (inside, outside):
                with_link = swap.with_suffix(".link")
                with_link.unlink(missing_ok=True)
                if target is inside:
                    shutil.copyfile(inside, swap)
                    swap.replace(flip)
                else:
                    with_link.symlink_to(outside)
                    with_link.replace(flip)

    thread = threading.Thread(target=flipper)
    thread.start()
    seen = set()
    try:
        for _ in range(300):
            answer = calls.answer("session/open", {"path": str(flip)})
            if "result" in answer:
                seen.add(answer["result"]["header"]["id"])
                calls.result("session/close", {"sessionId": answer["result"]["sessionId"]})
            else:
                seen.add(answer["error"]["code"])
    finally:
        stop.set()
        thread.join()
    assert "outside" not in seen and "beside-pi" in seen
    assert -32603 not in seen  # refused or opened, never an internal error
