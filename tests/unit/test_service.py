"""The session service: every protocol method's domain behaviour, over real files."""

from __future__ import annotations

import json
import os
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

from sessiontree import protocol as p
from sessiontree.errors import (
    EntryNotFound,
    FileNotFound,
    InvalidParams,
    NotASessionFile,
    PathOutsideRoot,
    SessionExists,
    SessionNotFound,
)
from sessiontree.paths import encode_cwd
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.store import FileStorage, Session
from support.equivalence import assert_indexed_alike
from support.sessions import PI_QUIRK_CASES

CWD = "/home/user/project"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "sessions"
    directory.mkdir()
    return directory


@pytest.fixture
def service(root: Path) -> SessionService:
    return SessionService(ServiceConfig(root))


def _msg(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": [{"type": "text", "text": text}], **extra}}


def _append(service: SessionService, sid: str, *entries: dict[str, Any], **kw: Any) -> p.AppendResult:
    result = None
    for entry in entries:
        result = service.append(p.AppendParams(sid, entry=entry, **kw))
    assert result is not None
    return result


def _texts(service: SessionService, sid: str, **kw: Any) -> list[str]:
    messages = service.context(p.ContextParams(sid, **kw)).messages
    return [m["content"][0]["text"] if "content" in m else m["summary"] for m in messages]


def _lines(path: str) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in Path(path).read_bytes().splitlines()]


def test_create_writes_the_header_where_pi_puts_it(service: SessionService, root: Path) -> None:
    created = service.create(p.CreateParams(CWD))
    path = Path(created.path)
    assert path.parent == root / "--home-user-project--"
    assert path.name.endswith(f"_{created.session_id}.jsonl")
    header = _lines(created.path)[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["id"] == created.session_id and header["version"] == 3
    assert created.session_id[14] == "7"  # a UUID version 7, as pi's


def test_create_with_an_id_and_parent_session(service: SessionService) -> None:
    created = service.create(p.CreateParams(CWD, id="my-session", parent_session="/x/y.jsonl"))
    assert created.session_id == "my-session"
    assert created.header["parentSession"] == "/x/y.jsonl"
    with pytest.raises(SessionExists):
        service.create(p.CreateParams(CWD, id="my-session"))
    with pytest.raises(InvalidParams):
        service.create(p.CreateParams(CWD, id="../evil"))


def test_an_acknowledged_append_is_in_the_file_at_once(service: SessionService) -> None:
    created = service.create(p.CreateParams(CWD))
    result = _append(service, created.session_id, _msg("user", "hello"))
    last = _lines(created.path)[-1]
    assert last["id"] == result.id and last["parentId"] is None and last["timestamp"] == result.timestamp
    assert result.leaf_id == result.id


def test_open_returns_the_same_session_for_the_same_file(service: SessionService, root: Path) -> None:
    created = service.create(p.CreateParams(CWD))
    opened = service.open(p.OpenParams(created.path))
    relative = service.open(p.OpenParams(os.path.relpath(created.path, root)))
    assert opened.session_id == relative.session_id == created.session_id


def test_paths_outside_the_root_are_refused(service: SessionService, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copyfile(PI_QUIRK_CASES / "01-valid.jsonl", outside)
    (root / "link.jsonl").symlink_to(outside)
    for path in (str(outside), "../elsewhere.jsonl", "link.jsonl"):
        with pytest.raises(PathOutsideRoot):
            service.open(p.OpenParams(path))
    with pytest.raises(FileNotFound):
        service.open(p.OpenParams("missing.jsonl"))


def test_a_file_that_is_not_a_session_is_refused_and_untouched(service: SessionService, root: Path) -> None:
    target = root / "05.jsonl"
    shutil.copyfile(PI_QUIRK_CASES / "05-no-header.jsonl", target)
    before = target.read_bytes()
    with pytest.raises(NotASessionFile):
        service.open(p.OpenParams(str(target)))
    assert target.read_bytes() == before


def test_unknown_session_and_unknown_leaf(service: SessionService) -> None:
    with pytest.raises(SessionNotFound):
        service.context(p.ContextParams("nope"))
    created = service.create(p.CreateParams(CWD))
    with pytest.raises(EntryNotFound):
        service.context(p.ContextParams(created.session_id, leaf_id="deadbeef"))


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"entry": {"type": "message", "message": {}}},
        {"entry": {"type": "message", "message": {"role": "compactionSummary"}}},
        {"entry": {"type": "nope"}},
        {"entry": {"type": "custom", "customType": "x", "id": "abcdabcd"}},
        {"entry": {"type": "label", "targetId": 5}},
        {"entries": []},
        {"entry": {"type": "custom", "customType": "x"}, "entries": [{"type": "custom", "customType": "x"}]},
    ],
)
def test_invalid_entries_are_rejected_and_nothing_is_written(service: SessionService, params: dict) -> None:
    created = service.create(p.CreateParams(CWD))
    before = Path(created.path).read_bytes()
    with pytest.raises(InvalidParams):
        service.append(p.AppendParams(created.session_id, **params))
    assert Path(created.path).read_bytes() == before


def test_a_batch_is_one_chain_written_at_once(service: SessionService) -> None:
    created = service.create(p.CreateParams(CWD))
    result = service.append(p.AppendParams(created.session_id, entries=[_msg("user", "a"), _msg("assistant", "b")]))
    assert result.appended is not None
    first, second = result.appended
    assert first.parent_id is None and second.parent_id == first.id
    assert result.id == second.id == result.leaf_id


def test_branch_moves_the_leaf_and_reset_starts_a_new_root(service: SessionService) -> None:
    sid = service.create(p.CreateParams(CWD)).session_id
    first = _append(service, sid, _msg("user", "q1"))
    _append(service, sid, _msg("assistant", "a1"))
    assert service.branch(p.BranchParams(sid, first.id)).leaf_id == first.id
    _append(service, sid, _msg("user", "q1b"))
    assert _texts(service, sid) == ["q1", "q1b"]
    assert service.branch(p.BranchParams(sid, None)).leaf_id is None
    assert _append(service, sid, _msg("user", "fresh")).parent_id is None
    with pytest.raises(EntryNotFound):
        service.branch(p.BranchParams(sid, "deadbeef"))


def test_branch_with_summary_appends_a_branch_summary_at_the_target(service: SessionService) -> None:
    """pi 1.6's branchWithSummary: `fromId` is the leaf that was left (`leafId ?? "root"`)."""
    sid = service.create(p.CreateParams(CWD)).session_id
    first = _append(service, sid, _msg("user", "q1"))
    left = _append(service, sid, _msg("assistant", "a1"))
    result = service.branch(p.BranchParams(sid, first.id, summary="tried X", details={"k": 1}))
    entry = service.entries(p.EntriesParams(sid, ids=[result.summary_entry_id])).entries[0]
    assert entry["parentId"] == first.id and entry["fromId"] == left.id
    assert list(entry) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details"]
    assert _texts(service, sid) == ["q1", "tried X"]
    root = service.branch(p.BranchParams(sid, None, summary="from the top"))
    root_entry = service.entries(p.EntriesParams(sid, ids=[root.summary_entry_id])).entries[0]
    assert root_entry["fromId"] == result.summary_entry_id and root_entry["parentId"] is None
    service.branch(p.BranchParams(sid, None))  # no leaf: pi writes "root"
    empty = service.branch(p.BranchParams(sid, first.id, summary="from nothing"))
    assert service.entries(p.EntriesParams(sid, ids=[empty.summary_entry_id])).entries[0]["fromId"] == "root"


def test_branch_with_summary_stores_its_usage(service: SessionService) -> None:
    """pi 1.6's branchWithSummary takes the summarising call's usage and stores it on the entry,
    between details and fromHook."""
    sid = service.create(p.CreateParams(CWD)).session_id
    first = _append(service, sid, _msg("user", "q1"))
    _append(service, sid, _msg("assistant", "a1"))
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
             "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}}
    params = p.parse_params("session/branch", {"sessionId": sid, "entryId": first.id, "summary": "s",
                                               "details": {"k": 1}, "usage": usage, "fromHook": True})
    result = service.branch(params)
    entry = service.entries(p.EntriesParams(sid, ids=[result.summary_entry_id])).entries[0]
    assert entry["usage"] == usage
    assert list(entry)[4:] == ["fromId", "summary", "details", "usage", "fromHook"]
    assert _lines(service.info(p.SessionParams(sid)).path)[-1]["usage"] == usage


def test_labels_and_names(service: SessionService) -> None:
    sid = service.create(p.CreateParams(CWD)).session_id
    first = _append(service, sid, _msg("user", "q1"))
    service.label(p.LabelParams(sid, first.id, "start"))
    node = next(n for n in service.tree(p.TreeParams(sid)).nodes if n.id == first.id)
    assert node.label == "start"
    cleared = service.label(p.LabelParams(sid, first.id, ""))
    assert _lines(service.info(p.SessionParams(sid)).path)[-1]["label"] == ""
    assert cleared.leaf_id == cleared.id
    with pytest.raises(EntryNotFound):
        service.label(p.LabelParams(sid, "zzzzzzzz", "ghost"))
    service.set_name(p.SetNameParams(sid, "\ufeff\u00a0 My session \u3000"))
    assert service.info(p.SessionParams(sid)).name == "My session"
    assert _lines(service.info(p.SessionParams(sid)).path)[-1]["name"] == "My session"
    service.set_name(p.SetNameParams(sid, "   "))
    assert service.info(p.SessionParams(sid)).name is None


def test_entries_by_ids_path_and_cursor(service: SessionService) -> None:
    sid = service.create(p.CreateParams(CWD)).session_id
    a = _append(service, sid, _msg("user", "a"))
    b = _append(service, sid, _msg("assistant", "b"))
    c = _append(service, sid, _msg("user", "c"), parent_id=a.id)
    assert [e["id"] for e in service.entries(p.EntriesParams(sid, path_to=c.id)).entries] == [a.id, c.id]
    everything = service.entries(p.EntriesParams(sid, since=None))
    assert [e["id"] for e in everything.entries] == [a.id, b.id, c.id] and everything.cursor == c.id
    page = service.entries(p.EntriesParams(sid, since=a.id, limit=1))
    assert [e["id"] for e in page.entries] == [b.id] and page.cursor == b.id
    done = service.entries(p.EntriesParams(sid, since=c.id))
    assert done.entries == [] and done.cursor == c.id
    with pytest.raises(InvalidParams):
        service.entries(p.EntriesParams(sid))


def test_fork_of_a_path_re_parents_past_label_entries(service: SessionService, root: Path) -> None:
    target = root / "proj" / "28.jsonl"
    target.parent.mkdir()
    shutil.copyfile(PI_QUIRK_CASES / "28-label-on-path.jsonl", target)
    sid = service.open(p.OpenParams(str(target))).session_id
    before = _texts(service, sid)
    forked = service.fork(p.ForkParams(sid, entry_id="e0000004"))
    assert Path(forked.path).parent == target.parent
    lines = _lines(forked.path)
    assert lines[0]["parentSession"] == str(target)
    assert [e["type"] for e in lines[1:]] == ["message"] * 4 + ["label"]
    assert lines[3]["parentId"] == "e0000002"  # was the dropped label entry l0000001
    assert lines[-1]["targetId"] == "e0000001" and lines[-1]["timestamp"] == "2025-01-01T00:00:03.000Z"
    original = (PI_QUIRK_CASES / "28-label-on-path.jsonl").read_bytes().splitlines()
    assert Path(forked.path).read_bytes().splitlines()[1:3] == original[1:3]  # copied, not re-serialized
    assert _texts(service, forked.session_id) == before


def test_fork_into_another_cwd_copies_every_entry(service: SessionService, root: Path) -> None:
    sid = service.create(p.CreateParams(CWD)).session_id
    _append(service, sid, _msg("user", "a"), _msg("assistant", "b"))
    forked = service.fork(p.ForkParams(sid, cwd="/other"))
    assert Path(forked.path).parent == root / encode_cwd("/other")
    assert _lines(forked.path)[0]["cwd"] == "/other"
    assert len(_lines(forked.path)) == 3


def test_list_summarizes_sessions_newest_first(service: SessionService) -> None:
    first = service.create(p.CreateParams(CWD)).session_id
    _append(service, first, _msg("user", "the first question", timestamp=1000), _msg("assistant", "x", timestamp=2000))
    service.set_name(p.SetNameParams(first, "named"))
    second = service.create(p.CreateParams(CWD)).session_id
    _append(service, second, _msg("user", "newer", timestamp=5000))
    service.create(p.CreateParams("/elsewhere"))
    progress: list[tuple[int, int]] = []
    listed = service.list(p.ListParams(cwd=CWD), progress=lambda done, total: progress.append((done, total)))
    assert [s.id for s in listed.sessions] == [second, first]
    summary = listed.sessions[1]
    assert (summary.first_message, summary.message_count, summary.name) == ("the first question", 2, "named")
    assert summary.modified == "1970-01-01T00:00:02.000Z"
    assert progress[-1] == (2, 2)
    assert len(service.list(p.ListParams()).sessions) == 3


@pytest.mark.parametrize("path", ["a\x00b.jsonl", "line\nbreak.jsonl", "tab\there.jsonl", "del\x7f.jsonl", "half\ud800.jsonl"])
def test_paths_with_control_characters_are_refused(service: SessionService, path: str) -> None:
    with pytest.raises(InvalidParams):
        service.open(p.OpenParams(path))
    with pytest.raises(InvalidParams):
        service.create(p.CreateParams(path))


def test_odd_but_printable_names_inside_the_root_work(service: SessionService, root: Path) -> None:
    odd = root / "proj" / "spaces & ünïcödé — 'quotes' \"double\" $HOME;rm.jsonl"
    odd.parent.mkdir()
    shutil.copyfile(PI_QUIRK_CASES / "01-valid.jsonl", odd)
    assert service.open(p.OpenParams(str(odd))).leaf_id == "e0000004"
    created = service.create(p.CreateParams("C:\\Users\\me\\..\\project: two"))
    assert Path(created.path).parent.parent == root


# Files whose every entry can be forked from: damaged trees included.
FORKABLE = ["01-valid", "10-duplicate-id-exact", "11-duplicate-id-conflict", "13-orphan", "14-cycle", "15-self-parent",
            "16-label-unknown-target", "22-compaction-unknown-firstkept", "24-crlf", "25-missing-parentId-key", "28-label-on-path"]


@pytest.mark.parametrize("name", FORKABLE)
def test_a_fork_is_indexed_exactly_as_a_scan_of_its_file_would_index_it(service: SessionService, root: Path, name: str) -> None:
    target = root / "proj" / f"{name}.jsonl"
    target.parent.mkdir()
    shutil.copyfile(PI_QUIRK_CASES / f"{name}.jsonl", target)
    opened = service.open(p.OpenParams(str(target)))
    index = service._get(opened.session_id).session.index
    forks = [p.ForkParams(opened.session_id, entry_id=entry_id) for entry_id in index.by_id]
    for fork in [*forks, p.ForkParams(opened.session_id, cwd="/elsewhere")]:
        forked = service.fork(fork)
        scanned = Session.load(FileStorage(Path(forked.path)))
        assert_indexed_alike(service._get(forked.session_id).session, scanned)
        service.close(p.SessionParams(forked.session_id))


def test_the_tree_on_the_wire_follows_appends_and_labels(service: SessionService, root: Path) -> None:
    import orjson

    from sessiontree.jsonfmt import dumps_wire

    def wire_tree(svc: SessionService, sid: str) -> dict[str, Any]:
        return orjson.loads(dumps_wire(p.to_wire(svc.tree(p.TreeParams(sid)))))

    created = service.create(p.CreateParams(CWD))
    sid = created.session_id
    first = _append(service, sid, _msg("user", "a"))
    assert [n["id"] for n in wire_tree(service, sid)["nodes"]] == [first.id]
    cached = wire_tree(service, sid)  # the cached form, sent again: what a cold build sends
    fresh = SessionService(ServiceConfig(root))
    assert cached == wire_tree(fresh, fresh.open(p.OpenParams(created.path)).session_id)
    second = _append(service, sid, _msg("assistant", "b"))
    service.label(p.LabelParams(sid, first.id, "start"))
    nodes = wire_tree(service, sid)["nodes"]
    assert [n["id"] for n in nodes][:2] == [first.id, second.id] and nodes[0]["label"] == "start"
    service.branch(p.BranchParams(sid, first.id))
    assert wire_tree(service, sid)["leafId"] == first.id  # the leaf is not part of the cached nodes


def test_a_fork_keeps_what_a_compaction_kept_from_a_dropped_label(service: SessionService) -> None:
    """Labels are left out of a fork; a compaction that kept from a label entry keeps from the
    entry after it instead, so the fork's context is the original's."""
    sid = service.create(p.CreateParams(CWD)).session_id
    first = _append(service, sid, _msg("user", "before"))
    label = service.label(p.LabelParams(sid, first.id, "here"))
    kept = _append(service, sid, _msg("user", "kept"))
    compaction = {"type": "compaction", "summary": "s", "firstKeptEntryId": label.id, "tokensBefore": 7}
    leaf = _append(service, sid, compaction, _msg("assistant", "after")).id
    original = service.context(p.ContextParams(sid))
    forked = service.fork(p.ForkParams(sid, entry_id=leaf))
    assert [m.get("role") for m in original.messages] == ["compactionSummary", "user", "assistant"]
    assert service.context(p.ContextParams(forked.session_id)).messages == original.messages
    lines = [json.loads(line) for line in Path(forked.path).read_text().splitlines()]
    assert [e["firstKeptEntryId"] for e in lines if e["type"] == "compaction"] == [kept.id]


def test_the_context_on_the_wire_after_appends_is_what_a_fresh_open_sends(service: SessionService, root: Path) -> None:
    """The leaf's context keeps each message's JSON between answers; it must stay the JSON of
    the messages, odd numbers and lone surrogates included."""
    from sessiontree.jsonfmt import dumps_wire

    def wire(svc: SessionService, sid: str) -> Any:
        answer = json.loads(dumps_wire(p.to_wire(svc.context(p.ContextParams(sid)))))
        del answer["cursor"]  # names the answering service's cache generation: another service's differs
        return answer

    created = service.create(p.CreateParams(CWD))
    sid = created.session_id
    wire(service, sid)  # cached from here on, then extended by each append
    for text in ["one", "two \ud83d", "three"]:
        _append(service, sid, _msg("user", text, timestamp=1.5, n=2**60))
        fresh = SessionService(ServiceConfig(root))
        assert wire(service, sid) == wire(fresh, fresh.open(p.OpenParams(created.path)).session_id)
        fresh.close_all()
    assert [m["content"][0]["text"] for m in wire(service, sid)["messages"]] == ["one", "two \ud83d", "three"]


def test_a_fork_ends_every_line_even_when_the_source_file_does_not(service: SessionService, root: Path) -> None:
    from support.messages import assistant, user
    from support.sessions import session_bytes

    target = root / "proj" / "unended.jsonl"
    target.parent.mkdir()
    target.write_bytes(session_bytes(user("e0000001", None, "q"), assistant("e0000002", "e0000001", "a")).rstrip(b"\n"))
    sid = service.open(p.OpenParams(str(target))).session_id
    forked = service.fork(p.ForkParams(sid, entry_id="e0000002"))
    data = Path(forked.path).read_bytes()
    assert data.endswith(b"}\n") and b"}{" not in data and len(data.splitlines()) == 3
    assert_indexed_alike(service._get(forked.session_id).session, Session.load(FileStorage(Path(forked.path))))


def test_appends_that_arrived_together_are_answered_as_if_sent_one_by_one(service: SessionService) -> None:
    """The batch handler of session/append: params that do not parse, an unknown session and a
    request asking for advice (answered alone, at its own leaf) each take their place in the run."""
    from sessiontree.server import HANDLERS, bind_batch

    sid = service.create(p.CreateParams(CWD)).session_id
    other = service.create(p.CreateParams(CWD)).session_id
    daemon = types.SimpleNamespace(service=service, lanes=None)  # the file store's daemon: no lanes
    run = bind_batch("session/append", HANDLERS["session/append"].batch, daemon)  # type: ignore[arg-type]
    user = _msg("user", "hi")
    outcomes = run([
        {"sessionId": sid, "entry": user},
        {"sessionId": sid, "entry": user, "parentId": 5},  # does not parse
        {"sessionId": sid, "entry": user, "contextWindow": 1000},
        {"sessionId": "nope", "entry": user},
        {"sessionId": other, "entry": user},
        {"sessionId": sid, "entries": [user, user]},
    ])
    first, bad, advised, unknown, elsewhere, pair = outcomes
    assert isinstance(bad, InvalidParams) and isinstance(unknown, SessionNotFound)
    assert advised["parentId"] == first["id"] and "compaction" in advised
    assert elsewhere["parentId"] is None
    assert [a["parentId"] for a in pair["appended"]] == [advised["id"], pair["appended"][0]["id"]]
    assert service.info(p.SessionParams(sid)).entry_count == 4
    opened = service._get(sid)
    assert_indexed_alike(opened.session, Session.load(FileStorage(opened.path)))
