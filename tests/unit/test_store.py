"""The session store: scanning, torn tails, appending, following other writers."""

from __future__ import annotations

import json

import pytest

from sessiontree.errors import EntryNotFound, FileReplaced, LeafConflict, NotASessionFile, ReadOnlySession, StorageError
from sessiontree.store import FileStorage, MemoryStorage, Session
from support.equivalence import assert_indexed_alike
from support.messages import assistant, line, user
from support.sessions import (
    HEADER,
    StorageFactory,
    contents,
    other_writer_appends,
    other_writer_truncates,
    session_bytes,
)

VALID = session_bytes(user("e0000001", None, "q1"), assistant("e0000002", "e0000001", "a1"))


def test_open_indexes_entries_and_sets_the_leaf_to_the_last_entry(make_storage: StorageFactory) -> None:
    session = Session.load(make_storage(VALID))
    assert session.header == HEADER
    assert [node.id for node in session.index.nodes] == ["e0000001", "e0000002"]
    assert session.index.leaf_id == "e0000002"
    assert session.index.get("e0000002").role == "assistant"
    assert session.warnings == []


def test_payloads_are_decoded_from_the_file_on_demand(make_storage: StorageFactory) -> None:
    session = Session.load(make_storage(VALID))
    node = session.index.get("e0000001")
    assert session.entry(node) == user("e0000001", None, "q1")


@pytest.mark.parametrize("data", [b"", b"\n\n", line(user("e0000001", None, "q")), b"garbage\n"])
def test_a_file_without_a_header_is_refused_and_left_untouched(make_storage: StorageFactory, data: bytes) -> None:
    storage = make_storage(data)
    with pytest.raises(NotASessionFile):
        Session.load(storage)
    assert contents(storage) == data


def test_an_unfinished_last_line_is_reported_and_left_in_place(make_storage: StorageFactory) -> None:
    torn = line(user("e0000003", "e0000002", "q2"))[:40]
    storage = make_storage(VALID + torn)
    session = Session.load(storage)
    assert contents(storage) == VALID + torn  # its writer may still be writing it: never cut
    assert [w.kind for w in session.warnings] == ["torn-tail"]
    assert session.warnings[0].line == 4
    assert session.index.leaf_id == "e0000002"


def test_an_unfinished_line_that_its_writer_completes_is_taken_in(make_storage: StorageFactory) -> None:
    whole = line(user("e0000003", "e0000002", "q2"))
    storage = make_storage(VALID + whole[:40])
    session = Session.load(storage)
    assert session.refresh() == []  # still unfinished: not read as an entry, not cut
    other_writer_appends(storage, whole[40:])
    assert [node.id for node in session.refresh()] == ["e0000003"]
    assert session.index.leaf_id == "e0000003"
    assert contents(storage) == VALID + whole


def test_the_append_after_a_torn_line_starts_on_a_fresh_line(make_storage: StorageFactory) -> None:
    torn = b'{"type":"message","id":"e00'
    storage = make_storage(VALID + torn)
    session = Session.load(storage)
    session.append([{"type": "message", "message": {"role": "user", "content": "again"}}])
    assert contents(storage).startswith(VALID + torn + b"\n")  # kept, ended by a line end
    reopened = Session.load(make_storage(contents(storage)))
    assert [(w.kind, w.line) for w in reopened.warnings] == [("malformed", 4)]
    assert [n.id for n in reopened.index.nodes][:2] == ["e0000001", "e0000002"]
    assert len(reopened.index) == 3


def test_lines_another_writer_appends_between_our_read_and_write_keep_their_place() -> None:
    """pi's line lands after our refresh and before our write: both are read where they are."""
    storage = MemoryStorage(VALID)
    session = Session.load(storage)
    theirs = line(user("e0000009", "e0000002", "from pi"))
    storage.before_append = lambda s: (s.data.extend(theirs), setattr(s, "before_append", None))
    written, others = session.append([{"type": "message", "message": {"role": "user", "content": "ours"}}])
    assert [node.id for node in others] == ["e0000009"]
    assert session.index.leaf_id == written[0].node.id and written[0].node.parent_id == "e0000002"
    assert session.entry(session.index.get("e0000009")) == user("e0000009", "e0000002", "from pi")
    assert session.entry(written[0].node)["message"]["content"] == "ours"
    assert session.refresh() == []  # our own line is not taken for a foreign one
    reopened = Session.load(MemoryStorage(bytes(storage.data)))
    assert reopened.warnings == []
    assert [n.id for n in reopened.index.nodes] == [n.id for n in session.index.nodes]


def test_an_append_glued_onto_a_line_another_writer_left_unfinished_is_written_again() -> None:
    storage = MemoryStorage(VALID)
    session = Session.load(storage)
    torn = line(user("e0000009", "e0000002", "from pi"))[:30]
    storage.before_append = lambda s: (s.data.extend(torn), setattr(s, "before_append", None))
    entries = [{"type": "custom", "customType": "one"}, {"type": "custom", "customType": "two"}]
    written, _ = session.append(entries)
    assert [w.kind for w in session.warnings] == ["torn-line-fenced"]
    assert [session.entry(a.node)["customType"] for a in written] == ["one", "two"]
    reopened = Session.load(MemoryStorage(bytes(storage.data)))
    assert reopened.index.leaf_id == written[-1].node.id
    assert reopened.index.get(written[0].node.id) is not None
    assert reopened.entry(reopened.index.get(written[-1].node.id))["parentId"] == written[0].node.id


def test_a_complete_last_line_without_line_end_is_kept_and_fenced(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID.rstrip(b"\n"))
    session = Session.load(storage)
    assert session.index.leaf_id == "e0000002" and session.warnings == []
    session.append([{"type": "message", "message": {"role": "user", "content": "next"}}])
    data = contents(storage)
    assert data.startswith(VALID) and data.endswith(b"\n")
    assert len(Session.load(make_storage(data)).index) == 3


def test_malformed_middle_lines_are_reported_and_never_removed(make_storage: StorageFactory) -> None:
    data = session_bytes(user("e0000001", None, "q1")) + b"{not json\n\x00\x00\x00\n" + line(
        assistant("e0000002", "e0000001", "a1")
    )
    storage = make_storage(data)
    session = Session.load(storage)
    assert [(w.kind, w.line) for w in session.warnings] == [("malformed", 3), ("malformed", 4)]
    session.append([{"type": "message", "message": {"role": "user", "content": "next"}}])
    assert contents(storage).startswith(data)


def test_bom_and_crlf_files_are_read(make_storage: StorageFactory) -> None:
    """Read, but read-only: pi does not open a file that starts with a byte order mark."""
    data = b"\xef\xbb\xbf" + VALID.replace(b"\n", b"\r\n")
    storage = make_storage(data)
    session = Session.load(storage)
    assert session.header["id"] == HEADER["id"]
    assert session.index.leaf_id == "e0000002" and [w.kind for w in session.warnings] == ["read-only"]
    assert session.entry(session.index.get("e0000001"))["id"] == "e0000001"
    with pytest.raises(ReadOnlySession):
        session.append([{"type": "custom", "customType": "x"}])
    assert contents(storage) == data


def test_append_writes_one_line_per_entry_in_pi_key_order(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID)
    session = Session.load(storage)
    written, others = session.append(
        [{"type": "custom", "data": {"k": 1}, "customType": "ext"}, {"type": "label", "targetId": "e0000001", "label": "x"}]
    )
    assert others == []
    lines = contents(storage)[len(VALID) :].splitlines()
    first, second = (json.loads(raw) for raw in lines)
    assert list(first) == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert list(second) == ["type", "id", "parentId", "timestamp", "targetId", "label"]
    assert first["parentId"] == "e0000002" and second["parentId"] == first["id"]
    assert session.index.leaf_id == second["id"]
    assert session.index.labels["e0000001"] == ("x", second["timestamp"])
    assert [a.node.id for a in written] == [first["id"], second["id"]]


def test_append_ids_are_8_hex_and_unique(make_storage: StorageFactory) -> None:
    session = Session.load(make_storage(VALID))
    written, _ = session.append([{"type": "custom", "customType": "x"}] * 50)
    ids = [a.node.id for a in written]
    assert len(set(ids) | {"e0000001", "e0000002"}) == 52
    assert all(len(i) == 8 and int(i, 16) >= 0 and i == i.lower() for i in ids)


def test_explicit_parent_appends_elsewhere_and_moves_the_leaf(make_storage: StorageFactory) -> None:
    session = Session.load(make_storage(VALID))
    written, _ = session.append([{"type": "custom", "customType": "x"}], parent="e0000001")
    assert written[0].node.parent_id == "e0000001"
    assert session.index.leaf_id == written[0].node.id
    root, _ = session.append([{"type": "custom", "customType": "x"}], parent=None)
    assert root[0].node.parent_id is None


@pytest.mark.parametrize(
    ("entry", "parent", "expected", "error"),
    [
        ({"type": "custom", "customType": "x"}, "nope0000", None, EntryNotFound),
        ({"type": "label", "targetId": "nope0000", "label": "x"}, None, None, EntryNotFound),
        ({"type": "compaction", "summary": "s", "firstKeptEntryId": "nope", "tokensBefore": 1}, None, None, EntryNotFound),
        ({"type": "custom", "customType": "x"}, None, "e0000001", LeafConflict),
    ],
)
def test_rejected_appends_write_nothing(
    make_storage: StorageFactory, entry: dict, parent: str | None, expected: str | None, error: type
) -> None:
    from sessiontree.protocol import UNSET

    storage = make_storage(VALID)
    session = Session.load(storage)
    with pytest.raises(error):
        session.append([entry], parent=parent if parent else UNSET, expected_leaf=expected if expected else UNSET)
    assert contents(storage) == VALID
    assert session.index.leaf_id == "e0000002" and len(session.index) == 2


def test_leaf_conflict_carries_the_current_leaf(make_storage: StorageFactory) -> None:
    session = Session.load(make_storage(VALID))
    with pytest.raises(LeafConflict) as caught:
        session.append([{"type": "custom", "customType": "x"}], expected_leaf="e0000001")
    assert caught.value.data["currentLeafId"] == "e0000002"


def test_entries_appended_by_another_writer_are_taken_in(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID)
    session = Session.load(storage)
    storage.append(line(user("e0000003", "e0000002", "from elsewhere")))
    storage.append(line(user("e0000004", "e0000001", "a branch elsewhere")))
    added = session.refresh()
    assert [n.id for n in added] == ["e0000003", "e0000004"]
    assert session.index.leaf_id == "e0000003"  # followed the tip, not the other branch


def test_an_append_takes_in_other_writers_first_and_checks_ids_against_them(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID)
    session = Session.load(storage)
    storage.append(line(user("e0000003", "e0000002", "from elsewhere")))
    written, others = session.append([{"type": "custom", "customType": "x"}])
    assert [n.id for n in others] == ["e0000003"]
    assert written[0].node.parent_id == "e0000003"


def test_a_partial_line_from_another_writer_is_fenced_not_lost(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID)
    session = Session.load(storage)
    storage.append(b'{"type":"message","id":"half')
    assert session.refresh() == []  # it may still be being written
    session.append([{"type": "custom", "customType": "x"}])
    data = contents(storage)
    assert b'{"type":"message","id":"half\n' in data
    assert [w.kind for w in session.warnings] == ["torn-line-fenced"]
    assert len(Session.load(make_storage(data)).index) == 3


def test_a_file_rewritten_under_us_is_an_error_not_a_misread(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID)
    session = Session.load(storage)
    other_writer_truncates(storage, 10)
    with pytest.raises(FileReplaced):
        session.refresh()


def test_an_entry_rewritten_in_place_is_an_error_not_invalid_json_on_the_wire(make_storage: StorageFactory) -> None:
    storage = make_storage(VALID)
    if not isinstance(storage, FileStorage | MemoryStorage):
        pytest.skip("a store's rows are only ever added (bytes once read are cached): no rewrite to notice")
    session = Session.load(storage)
    node = session.index.get("e0000001")
    other_writer_truncates(storage, node.offset)
    other_writer_appends(storage, b"x" * node.length + VALID[node.offset + node.length :])
    assert session.refresh() == []  # same length, still ends a line where we left: unnoticed so far
    with pytest.raises(FileReplaced):
        session.raw_entry(node)
    with pytest.raises(FileReplaced):
        session.entry(node)


class _FullDisk(MemoryStorage):
    def append(self, data: bytes) -> int:
        raise OSError(28, "No space left on device")


def test_a_failed_write_fails_the_call_and_leaves_the_state_unchanged() -> None:
    storage = _FullDisk(VALID)
    session = Session.load(storage)
    with pytest.raises(StorageError):
        session.append([{"type": "custom", "customType": "x"}])
    assert session.index.leaf_id == "e0000002" and len(session.index) == 2
    assert bytes(storage.data) == VALID


def test_duplicate_ids_later_line_wins_and_is_reported(make_storage: StorageFactory) -> None:
    data = session_bytes(user("e0000001", None, "q1"), user("e0000001", None, "q1 again"))
    session = Session.load(make_storage(data))
    assert session.entry(session.index.get("e0000001"))["message"]["content"][0]["text"] == "q1 again"
    assert [w.kind for w in session.warnings] == ["duplicate-id"]


def test_second_header_is_ignored_and_reported(make_storage: StorageFactory) -> None:
    data = session_bytes(user("e0000001", None, "q1")) + line({**HEADER, "id": "other"}) + line(user("e2", None, "q"))
    session = Session.load(make_storage(data))
    assert session.header["id"] == HEADER["id"]
    assert [n.id for n in session.index.nodes] == ["e0000001", "e2"]
    assert [w.kind for w in session.warnings] == ["extra-header"]


@pytest.mark.parametrize("prefix", [b"", b"\xef\xbb\xbf"])
def test_a_header_only_file_is_read_once(make_storage: StorageFactory, prefix: bytes) -> None:
    storage = make_storage(prefix + line(HEADER))
    session = Session.load(storage)
    warned = ["read-only"] if prefix else []  # pi does not open a file with a byte order mark
    assert session.refresh() == [] and [w.kind for w in session.warnings] == warned
    if prefix:
        with pytest.raises(ReadOnlySession):
            session.append([{"type": "custom", "customType": "x"}])
        assert session.refresh() == [] and [w.kind for w in session.warnings] == warned
        assert contents(storage) == prefix + line(HEADER)
        return
    session.append([{"type": "custom", "customType": "x"}])
    assert session.refresh() == [] and session.warnings == []
    assert len(Session.load(make_storage(contents(storage))).index) == 1


def test_errors_name_the_field_as_the_request_spelled_it(make_storage: StorageFactory) -> None:
    session = Session.load(make_storage(VALID))
    label = {"type": "label", "targetId": "nope0000", "label": "x"}
    for sources, field in ([None, "entry.targetId"], [[""], "targetId"]):
        with pytest.raises(EntryNotFound) as caught:
            session.append([label], sources=sources)
        assert caught.value.data["field"] == field
    with pytest.raises(EntryNotFound) as caught:
        session.append([{"type": "custom", "customType": "x"}, label])
    assert caught.value.data["field"] == "entries[1].targetId"
    with pytest.raises(LeafConflict) as conflict:
        session.append([{"type": "custom", "customType": "x"}], expected_leaf=None)
    assert conflict.value.message == "the leaf is e0000002, not null"


def test_warnings_at_open_are_in_line_order(make_storage: StorageFactory) -> None:
    first = user("e0000001", None, "q1")
    data = session_bytes(first, first, user("e0000002", "e0000001", "q2")) + b"not json\n" + line(user("e0000002", None, "q3"))
    session = Session.load(make_storage(data))
    assert [(w.kind, w.line) for w in session.warnings] == [("duplicate-id", 3), ("malformed", 5), ("duplicate-id", 6)]


# --------------------------------------------------------------------------- several appends, one write


def test_appends_in_one_call_are_checked_in_turn_and_a_failed_one_writes_nothing(make_storage: StorageFactory) -> None:
    """`append_many`: each request as if those before it were written (the leaf they leave is the
    next one's default parent and expected leaf); one that fails a check fails alone."""
    from sessiontree.protocol import UNSET
    from sessiontree.store import AppendRequest

    storage = make_storage(VALID)
    session = Session.load(storage)
    custom = {"type": "custom", "customType": "x"}
    outcomes, others = session.append_many(
        [
            AppendRequest([custom]),
            AppendRequest([custom], expected_leaf="e0000002"),  # stale: the first moved the leaf
            AppendRequest([custom], parent="nope0000"),
            AppendRequest([{"type": "label", "targetId": "nope0000", "label": "x"}]),
            AppendRequest([custom, {"type": "label", "targetId": "e0000001", "label": "y"}]),
            AppendRequest([custom], parent="e0000001"),
            AppendRequest([custom], expected_leaf=UNSET),
        ]
    )
    assert others == []
    first, stale, no_parent, no_target, pair, branch, last = outcomes
    assert isinstance(stale, LeafConflict) and stale.data["currentLeafId"] == first[0].node.id
    assert isinstance(no_parent, EntryNotFound) and isinstance(no_target, EntryNotFound)
    assert first[0].node.parent_id == "e0000002"
    assert pair[0].node.parent_id == first[0].node.id and pair[1].node.parent_id == pair[0].node.id
    assert branch[0].node.parent_id == "e0000001" and last[0].node.parent_id == branch[0].node.id
    written = [a.node.id for a in (*first, *pair, *branch, *last)]
    lines = [json.loads(raw) for raw in contents(storage)[len(VALID) :].splitlines()]
    assert [entry["id"] for entry in lines] == written  # the requests' lines, in their order, nothing else
    assert session.index.leaf_id == written[-1]
    assert_indexed_alike(session, Session.load(make_storage(contents(storage))))


def test_a_failed_request_checked_against_the_ids_given_before_it_in_the_same_call(make_storage: StorageFactory) -> None:
    from sessiontree.store import AppendRequest

    session = Session.load(make_storage(VALID))
    (first,), _ = session.append_many([AppendRequest([{"type": "custom", "customType": "x"}])])
    [first_node] = [a.node for a in first]
    outcomes, _ = session.append_many(
        [AppendRequest([{"type": "custom", "customType": "x"}]), AppendRequest([{"type": "custom", "customType": "y"}], expected_leaf=first_node.id)]
    )
    assert isinstance(outcomes[1], LeafConflict)  # the leaf is the entry the first request wrote


def test_appends_in_one_call_are_one_write_and_one_fsync(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from sessiontree.store import AppendRequest

    path = tmp_path / "s.jsonl"
    path.write_bytes(VALID)
    session = Session.load(FileStorage(path, durability="fsync"))
    calls: list[str] = []
    real_write, real_fsync = os.write, os.fsync
    monkeypatch.setattr(os, "write", lambda fd, data: calls.append("write") or real_write(fd, data))
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append("fsync") or real_fsync(fd))
    outcomes, _ = session.append_many([AppendRequest([{"type": "custom", "customType": str(n)}]) for n in range(20)])
    assert calls == ["write", "fsync"]
    assert len(path.read_text().splitlines()) == 2 + 1 + 20
    assert all(len(outcome) == 1 for outcome in outcomes)


def test_a_failed_write_fails_every_request_it_carried_and_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.store import AppendRequest

    storage = MemoryStorage(VALID)
    session = Session.load(storage)

    def full(data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(storage, "append", full)
    custom = {"type": "custom", "customType": "x"}
    outcomes, _ = session.append_many([AppendRequest([custom]), AppendRequest([custom], parent="nope0000"), AppendRequest([custom])])
    assert [type(outcome) for outcome in outcomes] == [StorageError, EntryNotFound, StorageError]
    assert contents(storage) == VALID and len(session.index) == 2
