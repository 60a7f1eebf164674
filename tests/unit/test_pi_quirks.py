"""Every damaged or unusual file pi was observed on, against sessiontree's documented policy.

The cases are pi's (`tests/fixtures/pi-quirks`, from the project's pi-quirks notes); each row says
what opening gives (or the error), the leaf, the default context's roles, the tree and the warnings.
Files are opened from a copy and must be unchanged afterwards unless the policy says otherwise.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree import protocol as p
from sessiontree.errors import NotASessionFile, ReadOnlySession
from sessiontree.service import ServiceConfig, SessionService
from support.sessions import PI_QUIRK_CASES

U, A, C = "user", "assistant", "custom"
LINEAR4 = ["e0000001", "e0000002", "e0000003", "e0000004"]

# case: (leaf, default-context roles, tree as ids in order, open warnings, context/tree warnings)
CASES: dict[str, tuple[str | None, list[str], list[str], list[str], list[str]]] = {
    "01-valid": ("e0000004", [U, A, U, A], LINEAR4, [], []),
    "02-malformed-middle": ("e0000004", [U, A, U, A], LINEAR4, ["malformed"], []),
    "03-malformed-middle-chain": ("e0000005", [A, U], ["e0000001", "e0000002", "e0000004", "e0000005"], ["malformed"], []),
    "04-truncated-last": ("e0000003", [U, A, U], LINEAR4[:3], ["torn-tail"], []),
    "07-bom": ("e0000004", [U, A, U, A], LINEAR4, ["read-only"], []),
    "09-header-only": (None, [], [], [], []),
    "10-duplicate-id-exact": ("e0000004", [U, A, U, A], LINEAR4, ["duplicate-id"], []),
    "11-duplicate-id-conflict": ("e0000004", [U, A, U], LINEAR4, ["duplicate-id"], []),
    "12-duplicate-id-tree-cycle": ("e0000004", [U, A, U], ["e0000001", "e0000003", "e0000002", "e0000004"], ["duplicate-id"], ["cycle", "cycle"]),
    "13-orphan": ("e0000004", [U, A], LINEAR4, [], []),
    "14-cycle": ("e0000004", [A, U, A], LINEAR4, [], ["cycle", "cycle"]),
    "15-self-parent": ("e0000003", [A, U], LINEAR4[:3], [], ["cycle"]),
    "16-label-unknown-target": ("e0000003", [U, A, U], ["e0000001", "e0000002", "l0000001", "l0000002", "e0000003"], ["label-unknown-target"], []),
    "20-unknown-type": ("e0000002", [U, A], ["e0000001", "f0000001", "e0000002"], [], []),
    "21-message-without-message": ("e0000004", [U, A, A], LINEAR4, [], ["message-without-message"]),
    "22-compaction-unknown-firstkept": ("e0000005", ["compactionSummary", U], ["e0000001", "e0000002", "e0000003", "e0000004", "c0000001", "e0000005"], [], []),
    "23-two-headers": ("f0000002", [U, A], ["e0000001", "e0000002", "f0000001", "f0000002"], ["extra-header"], []),
    "24-crlf": ("e0000004", [U, A, U, A], LINEAR4, [], []),
    "25-missing-parentId-key": ("e0000004", [U, A], LINEAR4, [], []),
    "26-missing-id-last": ("e0000001", [U], ["e0000001"], ["malformed"], []),
    "27-no-assistant": ("e0000001", [U], ["e0000001"], [], []),
    "28-label-on-path": ("e0000004", [U, A, U, A], ["e0000001", "e0000002", "l0000001", "e0000003", "e0000004"], [], []),
    "29-long-header": ("e0000002", [U, A], ["e0000001", "e0000002"], [], []),
}
REFUSED = ["05-no-header", "06-header-not-first", "08-empty"]
MIGRATED = {"17-v1": ["compactionSummary", U, A, U], "18-v1-malformed": ["compactionSummary", U, A, U], "19-v2-hookMessage": [U, A, C, U]}


@pytest.fixture
def service(tmp_path: Path) -> SessionService:
    return SessionService(ServiceConfig(tmp_path))


def _copy(case: str, tmp_path: Path) -> Path:
    target = tmp_path / "proj" / f"{case}.jsonl"
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(PI_QUIRK_CASES / f"{case}.jsonl", target)
    return target


def _roles(context: p.ContextResult) -> list[Any]:
    return [m.get("role") for m in context.messages]


@pytest.mark.parametrize("case", sorted(CASES))
def test_case(case: str, service: SessionService, tmp_path: Path) -> None:
    leaf, roles, tree, open_warnings, read_warnings = CASES[case]
    path = _copy(case, tmp_path)
    before = path.read_bytes()
    opened = service.open(p.OpenParams(str(path)))
    context = service.context(p.ContextParams(opened.session_id))
    result = service.tree(p.TreeParams(opened.session_id))
    assert opened.leaf_id == leaf
    assert _roles(context) == roles
    assert [n.id for n in result.nodes] == tree
    assert [w.kind for w in opened.warnings] == open_warnings
    assert sorted(w.kind for w in context.warnings + result.warnings) == read_warnings
    assert path.read_bytes() == before  # an unfinished last line too: its writer may still be writing


@pytest.mark.parametrize("case", REFUSED)
def test_not_a_session_file_is_refused_untouched(case: str, service: SessionService, tmp_path: Path) -> None:
    path = _copy(case, tmp_path)
    before = path.read_bytes()
    with pytest.raises(NotASessionFile):
        service.open(p.OpenParams(str(path)))
    assert path.read_bytes() == before


@pytest.mark.parametrize("case", sorted(MIGRATED))
def test_old_versions_are_migrated_with_a_backup(case: str, service: SessionService, tmp_path: Path) -> None:
    path = _copy(case, tmp_path)
    before = path.read_bytes()
    opened = service.open(p.OpenParams(str(path)))
    assert opened.warnings[0].kind == "migrated"
    assert Path(opened.warnings[0].path or "").read_bytes() == before
    assert _roles(service.context(p.ContextParams(opened.session_id))) == MIGRATED[case]


def test_every_case_file_is_covered() -> None:
    names = {f.stem for f in PI_QUIRK_CASES.glob("*.jsonl")}
    assert names == set(CASES) | set(REFUSED) | set(MIGRATED)


def test_torn_then_append_keeps_both_appends(service: SessionService, tmp_path: Path) -> None:
    """pi's S1: pi glues the first append onto the torn line and loses it; here both survive."""
    path = _copy("04-truncated-last", tmp_path)
    sid = service.open(p.OpenParams(str(path))).session_id
    for text in ("first append", "second append"):
        message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
        service.append(p.AppendParams(sid, entry={"type": "message", "message": message}))
    service.close(p.SessionParams(sid))
    reopened = service.open(p.OpenParams(str(path)))
    assert [w.kind for w in reopened.warnings] == ["malformed"]  # the torn line, kept and ended
    texts = [m["content"][0]["text"] for m in service.context(p.ContextParams(reopened.session_id)).messages]
    assert texts == ["first question", "first answer", "second question", "first append", "second append"]


def test_a_bom_file_is_shown_but_never_written(service: SessionService, tmp_path: Path) -> None:
    """pi 1.6 does not open a file that starts with a byte order mark: the daemon shows it and says
    it is read-only, refuses every append (-32024, nothing written), and a fork copies it into a
    file without the mark."""
    path = _copy("07-bom", tmp_path)
    before = path.read_bytes()
    opened = service.open(p.OpenParams(str(path)))
    sid = opened.session_id
    assert opened.warnings[0].kind == "read-only" and opened.warnings[0].line == 1
    message = {"role": "user", "content": "more", "timestamp": 1}
    writes = [
        lambda: service.append(p.AppendParams(sid, entry={"type": "message", "message": message})),
        lambda: service.append(p.AppendParams(sid, entries=[{"type": "custom", "customType": "x"}] * 2)),
        lambda: service.label(p.LabelParams(sid, "e0000001", "here")),
        lambda: service.set_name(p.SetNameParams(sid, "a name")),
        lambda: service.branch(p.BranchParams(sid, "e0000002", summary="left behind")),
    ]
    for write in writes:
        with pytest.raises(ReadOnlySession) as refused:
            write()
        assert refused.value.code == -32024 and refused.value.data["path"] == str(path)
    assert path.read_bytes() == before
    service.branch(p.BranchParams(sid, "e0000002"))  # moving the leaf writes nothing: allowed
    assert service.info(p.SessionParams(sid)).leaf_id == "e0000002"
    forked = service.fork(p.ForkParams(sid, cwd="/elsewhere"))
    assert not Path(forked.path).read_bytes().startswith(b"\xef\xbb\xbf")
    assert service.append(p.AppendParams(forked.session_id, entry={"type": "message", "message": message})).id
    service.close(p.SessionParams(sid))
    assert path.read_bytes() == before
    reopened = service.open(p.OpenParams(str(path)))  # read-only again (from the index sidecar too)
    with pytest.raises(ReadOnlySession):
        service.append(p.AppendParams(reopened.session_id, entry={"type": "message", "message": message}))

