"""The index sidecar: a reopen restores what a scan finds, and a sidecar that no longer
matches its file is never used."""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from sessiontree.config import InitOptions, parse_init_options, resolve_index_dir
from sessiontree.errors import NotASessionFile
from sessiontree.file_warning import FileWarning
from sessiontree.protocol import ContextParams, ForkParams, OpenParams, SessionParams, to_wire
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.store import FileStorage, Session, sidecar
from sessiontree.store.sidecar import MAGIC, sidecar_path
from sessiontree.tree import flat_tree
from support.equivalence import assert_indexed_alike
from support.messages import line, user
from support.scan_cases import QUIRK_FILES, chain, damaged_mix
from support.sessions import session_bytes


def scanned(path: Path) -> Session:
    return Session.load(FileStorage(path))


def reopened(path: Path, side: Path) -> Session:
    return Session.load(FileStorage(path), side)


@pytest.mark.parametrize("source", QUIRK_FILES, ids=lambda path: path.name)
def test_a_reopen_from_the_sidecar_sees_what_a_scan_sees(tmp_path: Path, source: Path) -> None:
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    side = tmp_path / "index" / "s.idx"
    first = scanned(path)
    if first.unterminated:
        assert not first.save_sidecar(side)  # a file ending mid-line is not described
        return
    assert first.save_sidecar(side)
    restored = reopened(path, side)
    assert restored.sidecar_covers == restored.end  # it was used
    assert_indexed_alike(restored, scanned(path))


def test_entries_appended_after_the_save_are_scanned(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(40)))
    side = tmp_path / "s.idx"
    session = scanned(path)
    session.save_sidecar(side)
    with path.open("ab") as out:  # another writer, after the save
        out.write(b"".join(line(entry) for entry in chain(10, start=40)))
    restored = reopened(path, side)
    assert restored.sidecar_covers < restored.end == path.stat().st_size
    assert_indexed_alike(restored, scanned(path))
    assert restored.index.leaf_id == "e0000049"


def test_appends_through_the_session_are_saved_on_the_next_save(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(20)))
    side = tmp_path / "s.idx"
    session = scanned(path)
    assert session.save_sidecar(side)
    assert not session.save_sidecar(side)  # already current
    session.append([{"type": "message", "message": {"role": "user", "content": "more"}}])
    session.append([{"type": "label", "targetId": "e0000003", "label": "here"}])
    assert session.save_sidecar(side)
    restored = reopened(path, side)
    assert restored.sidecar_covers == restored.end
    assert_indexed_alike(restored, scanned(path))


def _saved(tmp_path: Path, count: int = 30) -> tuple[Path, Path]:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(count)))
    side = tmp_path / "s.idx"
    assert scanned(path).save_sidecar(side)
    return path, side


def _not_used(path: Path, side: Path) -> None:
    restored = reopened(path, side)
    assert restored.sidecar_covers == -1
    assert_indexed_alike(restored, scanned(path))


def test_a_file_rewritten_in_place_is_scanned(tmp_path: Path) -> None:
    path, side = _saved(tmp_path)
    data = path.read_bytes()
    stat = path.stat()
    path.write_bytes(data.replace(b"text 12", b"TEXT 12"))  # same length, new content
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    _not_used(path, side)


def test_a_change_near_the_end_is_caught_by_the_tail_hash_even_with_the_old_mtime(tmp_path: Path) -> None:
    path, side = _saved(tmp_path)
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"text 28", b"text 99"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _not_used(path, side)


def test_a_truncated_file_is_scanned(tmp_path: Path) -> None:
    path, side = _saved(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-3]))
    _not_used(path, side)


def test_a_replaced_file_is_scanned(tmp_path: Path) -> None:
    path, side = _saved(tmp_path)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(path.read_bytes() + line(user("e9999999", "e0000029", "more")))
    os.replace(replacement, path)  # a new inode: another file under the old name
    _not_used(path, side)


def test_an_edit_in_the_unhashed_middle_is_caught_by_the_mtime(tmp_path: Path) -> None:
    path, side = _saved(tmp_path, count=3000)  # > 2 * 64 KiB: most of the middle is not hashed
    data = path.read_bytes()
    middle = len(data) // 2
    edited = data[:middle] + data[middle:].replace(b"text 2000", b"TEXT 2000", 1)
    assert edited != data and len(edited) == len(data)
    path.write_bytes(edited)
    _not_used(path, side)


def test_an_edit_that_changes_a_length_and_then_an_append_are_caught_by_the_tail(tmp_path: Path) -> None:
    path, side = _saved(tmp_path, count=3000)
    data = path.read_bytes()
    middle = len(data) // 2
    edited = data[:middle] + data[middle:].replace(b"text 2000", b"text 20000", 1)
    assert len(edited) == len(data) + 1
    path.write_bytes(edited + line(user("e9999999", "e0002999", "more")))
    _not_used(path, side)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-1],  # cut short
        lambda data: data[:-100] + bytes([data[-100] ^ 1]) + data[-99:],  # one bit in the columns
        lambda data: data.replace(b'"format":1', b'"format":9'),  # a future version
        lambda data: b"not a sidecar at all",
        lambda data: b"",
        lambda data: MAGIC + b"\xff\xff\xff\x7f{",  # a length past the end
        lambda data: MAGIC + (2).to_bytes(4, "little") + b"[]",  # metadata of the wrong shape
    ],
    ids=["truncated", "bit-flip", "future-format", "foreign", "empty", "bad-length", "bad-metadata"],
)
def test_a_damaged_sidecar_is_never_trusted(tmp_path: Path, damage) -> None:
    path, side = _saved(tmp_path)
    side.write_bytes(damage(side.read_bytes()))
    _not_used(path, side)


def test_metadata_that_lies_about_the_entries_is_refused(tmp_path: Path) -> None:
    """A sidecar whose checksum holds but whose parts disagree (written by a buggy or hostile
    program) is refused rather than served."""
    path, side = _saved(tmp_path)
    data = side.read_bytes()
    start = len(MAGIC) + 4
    length = int.from_bytes(data[len(MAGIC) : start], "little")
    meta = json.loads(data[start : start + length])
    meta["count"] += 1
    encoded = json.dumps(meta).encode()
    side.write_bytes(MAGIC + len(encoded).to_bytes(4, "little") + encoded + data[start + length :])
    _not_used(path, side)


def test_an_unfinished_line_after_the_covered_part_is_reported_as_on_any_open(tmp_path: Path) -> None:
    path, side = _saved(tmp_path)
    with path.open("ab") as out:
        out.write(line(user("e0000100", "e0000029", "cut"))[:25])
    before = path.read_bytes()
    restored = reopened(path, side)
    assert restored.sidecar_covers == restored.end
    assert [w.kind for w in restored.warnings] == ["torn-tail"]
    assert path.read_bytes() == before


# --------------------------------------------------------------------------- the service


def _service(tmp_path: Path, index_dir: Path | None, min_entries: int = 0) -> SessionService:
    return SessionService(ServiceConfig(tmp_path, index_dir=index_dir, index_min_entries=min_entries))


def test_closing_saves_the_sidecar_and_the_next_open_uses_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(50)))
    index_dir = tmp_path / "index"
    service = _service(tmp_path, index_dir)
    opened = service.open(OpenParams(str(path)))
    first_context = service.context(_context_params(opened.session_id))
    service.close(SessionParams(opened.session_id))
    assert sidecar_path(index_dir, path).exists()
    again = _service(tmp_path, index_dir)
    reopened_result = again.open(OpenParams(str(path)))
    assert again._sessions[reopened_result.session_id].session.sidecar_covers > 0
    assert (reopened_result.leaf_id, reopened_result.entry_count) == (opened.leaf_id, opened.entry_count)
    # The cursor names the answering service's cache generation: another service's differs.
    assert attrs.evolve(again.context(_context_params(reopened_result.session_id)), cursor="") == attrs.evolve(
        first_context, cursor=""
    )


def _context_params(session_id: str) -> ContextParams:
    return ContextParams(session_id=session_id)


def test_small_sessions_and_a_turned_off_index_write_no_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(5)))
    index_dir = tmp_path / "index"
    for service in (_service(tmp_path, index_dir, min_entries=6), _service(tmp_path, None)):
        opened = service.open(OpenParams(str(path)))
        service.close_all()
        assert opened.entry_count == 5
    assert not index_dir.exists()


def test_a_sidecar_that_cannot_be_written_does_not_fail_the_close(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(5)))
    blocked = tmp_path / "index"
    blocked.write_text("a file where the directory should be")
    service = _service(tmp_path, blocked)
    opened = service.open(OpenParams(str(path)))
    service.close(SessionParams(opened.session_id))
    assert not service._sessions
    assert path.read_bytes() == session_bytes(*chain(5))


def test_the_index_dir_defaults_to_the_user_cache_and_can_be_moved_or_turned_off() -> None:
    assert resolve_index_dir({"XDG_CACHE_HOME": "/c"}, InitOptions()) == Path("/c/sessiontree/index")
    assert resolve_index_dir({}, InitOptions()) == Path.home() / ".cache" / "sessiontree" / "index"
    assert resolve_index_dir({}, parse_init_options({"indexDir": "/x/y"})) == Path("/x/y")
    assert resolve_index_dir({"XDG_CACHE_HOME": "/c"}, parse_init_options({"indexDir": False})) is None


@pytest.fixture(scope="module")
def realistic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4,500-entry session from the benchmark's generator: branches, branch summaries, two
    compactions, labels, model and thinking changes, custom entries, names."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import generate

    path = tmp_path_factory.mktemp("realistic") / "s.jsonl"
    generate.write_session(path, 4500, 7, generate.Corpus(random.Random(7)))
    return path


def test_a_realistic_session_reopens_from_its_sidecar_as_scanned(realistic: Path, tmp_path: Path) -> None:
    side = tmp_path / "s.idx"
    assert scanned(realistic).save_sidecar(side)
    restored = reopened(realistic, side)
    assert restored.sidecar_covers == restored.end
    assert_indexed_alike(restored, scanned(realistic))


def test_forks_of_a_realistic_session_are_indexed_as_scanned(realistic: Path, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "p").mkdir(parents=True)
    shutil.copyfile(realistic, root / "p" / "s.jsonl")
    service = _service(root, None)
    opened = service.open(OpenParams(str(root / "p" / "s.jsonl")))
    index = service._sessions[opened.session_id].session.index
    assert {"compaction", "label", "model_change", "branch_summary"} <= {index.type_of(seq) for seq in range(len(index))}
    for seq in range(0, len(index), 450):
        forked = service.fork(ForkParams(opened.session_id, entry_id=index.ids[seq]))
        adopted = service._sessions[forked.session_id].session
        assert_indexed_alike(adopted, scanned(Path(forked.path)))
        service.close(SessionParams(forked.session_id))


def _followed_and_scanned(path: Path, data: bytes) -> tuple[Session, Session]:
    """A session that opened `path` holding only its header and took in the rest of `data` as
    another writer's lines, and a fresh scan of the whole (leaves aligned: a follower's leaf moves
    only along its branch)."""
    header_end = data.index(b"\n") + 1 if b"\n" in data else len(data)
    path.write_bytes(data[:header_end])
    try:
        follower = scanned(path)
    except NotASessionFile:
        pytest.skip("the header is not on the first line: nothing to follow from")
    path.write_bytes(data)
    follower.refresh()
    scan = scanned(path)
    if scan.unterminated or follower.end != scan.end or any(w.kind == "torn-tail" for w in scan.warnings):
        pytest.skip("an unfinished last line: reported at open, silently waited for by a follower")
    follower.index.leaf_id = scan.index.leaf_id
    return follower, scan


@pytest.mark.parametrize("source", QUIRK_FILES, ids=lambda path: path.name)
def test_lines_taken_in_one_by_one_are_indexed_as_at_open(tmp_path: Path, source: Path) -> None:
    """Open indexes a chunk of lines at a time; taking in another writer's lines goes one by one.
    Both must build the same index (the leaf aside: a follower's leaf moves only along its branch)."""
    data = source.read_bytes()
    follower, scan = _followed_and_scanned(tmp_path / source.name, data)
    assert_indexed_alike(follower, scan)


def test_sidecars_are_private_to_their_user(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(*chain(5)))
    side = tmp_path / "cache" / "index" / "s.idx"
    assert scanned(path).save_sidecar(side)
    assert (side.stat().st_mode & 0o777, side.parent.stat().st_mode & 0o777) == (0o600, 0o700)


def _rewrite(side: Path, change_meta: Any = None) -> None:
    """Change a sidecar's metadata as a buggy writer would, keeping its checksum right."""
    data = side.read_bytes()
    start = len(MAGIC) + 4
    length = int.from_bytes(data[len(MAGIC) : start], "little")
    meta = json.loads(data[start : start + length])
    if change_meta is not None:
        change_meta(meta)
    encoded = json.dumps(meta).encode()
    side.write_bytes(MAGIC + len(encoded).to_bytes(4, "little") + encoded + data[start + length :])


@pytest.mark.parametrize(
    "change",
    [
        lambda meta: meta.update(warnings=[{"kind": 5}]),
        lambda meta: meta.update(warnings=[{"kind": "malformed", "message": "m", "entryId": 5}]),
        lambda meta: meta.update(orphans=[[10_000, "x"]]),
        lambda meta: meta.update(kinds="not a table"),
        lambda meta: meta.update(codecs=["lines", "morse"]),
    ],
    ids=["warning-of-the-wrong-shape", "warning-entry-id-not-a-string", "orphan-past-the-end", "kinds-not-a-table", "unknown-codec"],
)
def test_a_sidecar_with_a_checksum_that_holds_but_odd_metadata_is_refused(tmp_path: Path, change: Any) -> None:
    path, side = _saved(tmp_path)
    _rewrite(side, change_meta=change)
    _not_used(path, side)


def test_warnings_are_kept_under_the_keys_the_wire_gives_them() -> None:
    """The sidecar has its own codec, writing what the wire's converter wrote before it: sidecars
    saved by earlier daemons read the same."""
    for warning in (FileWarning("duplicate-id", "seen twice", 3, "e1", "/s.jsonl"), FileWarning("malformed", "bad")):
        assert sidecar._warning_json(warning) == to_wire(warning)
        assert sidecar._warning(to_wire(warning)) == warning


def test_the_rewrite_helper_leaves_a_usable_sidecar_when_it_changes_nothing(tmp_path: Path) -> None:
    path, side = _saved(tmp_path)
    _rewrite(side)
    assert reopened(path, side).sidecar_covers > 0


def _forward_refs() -> bytes:
    """A label before its target, and nothing else odd: a block of it takes the quick way."""
    entries = chain(12)
    entries.insert(3, {"type": "label", "id": "lab1", "parentId": "e0000002", "timestamp": "2026-01-01T00:00:00.000Z", "targetId": "e0000009", "label": "x"})
    header = json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"}).encode()
    return b"\n".join([header, *(line(entry).rstrip(b"\n") for entry in entries)]) + b"\n"


@pytest.mark.parametrize("chunk", [1, 7, 100, 1000, 1 << 23])
@pytest.mark.parametrize("source", [*QUIRK_FILES, "mix", "forward"], ids=lambda source: getattr(source, "name", source))
def test_a_scan_in_blocks_of_any_size_indexes_as_line_by_line(tmp_path: Path, source: Any, chunk: int, monkeypatch) -> None:
    """A scan decodes a block of lines at once and indexes them as columns; any block boundary,
    and any line it refuses, must leave the index a follower taking the lines one by one builds."""
    from sessiontree.store import session as session_module

    data = damaged_mix() if source == "mix" else _forward_refs() if source == "forward" else source.read_bytes()
    monkeypatch.setattr(session_module, "_SCAN_CHUNK", chunk)
    follower, scan = _followed_and_scanned(tmp_path / "s.jsonl", data)
    assert_indexed_alike(follower, scan)
    assert follower.warnings == scan.warnings


@pytest.mark.parametrize("window", [1, 300, 1 << 23])
def test_previews_read_in_blocks_are_those_of_each_line_and_the_tree_wire_is_the_converters(
    realistic: Path, tmp_path: Path, window: int, monkeypatch
) -> None:
    """A first tree reads the previews of many lines at once and writes its wire form itself:
    the same previews as one line at a time, the same JSON as the protocol's converter."""
    from sessiontree import protocol
    from sessiontree.tree import preview as preview_module
    from sessiontree.tree.preview import preview_of_line, previews_of_lines
    from sessiontree.tree.tree import tree_wire

    monkeypatch.setattr(preview_module, "_WINDOW", window)
    for path in [realistic, *QUIRK_FILES]:
        try:
            session = scanned(path)
        except NotASessionFile:
            continue
        index, read = session.index, session.storage.read
        seqs = [*range(len(index))[::3], len(index) - 1] if len(index) else []
        seqs = sorted(set(seqs))
        expected = [preview_of_line(read(index.offsets[seq], index.lengths[seq])) for seq in seqs]
        assert previews_of_lines(read, index.offsets, index.lengths, seqs) == expected
        nodes = flat_tree(index, lambda seq, index=index, read=read: preview_of_line(read(index.offsets[seq], index.lengths[seq])), [])
        assert tree_wire(nodes) == protocol.to_wire(list(nodes))
