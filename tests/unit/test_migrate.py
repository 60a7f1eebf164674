"""v1/v2 migration: pi's rules, written atomically, original kept, malformed lines kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sessiontree.file_warning import FileWarning
from sessiontree.store import FileStorage, Session, file_version, migrate_file
from support.sessions import PI_QUIRK_CASES


def _copy(case: str, tmp_path: Path) -> Path:
    target = tmp_path / case
    shutil.copyfile(PI_QUIRK_CASES / case, target)
    return target


def _version(path: Path) -> int | None:
    storage = FileStorage(path, writable=False)
    try:
        return file_version(storage)
    finally:
        storage.close()


def _migrate(path: Path, version: int) -> FileWarning:
    """As the daemon does it: under the file's lock, the sessions root being the file's directory."""
    storage = FileStorage(path)
    try:
        with storage.lock():
            return migrate_file(path.parent, path, storage, version)
    finally:
        storage.close()


def test_v1_gets_ids_a_chain_and_first_kept_entry_id_in_pi_key_order(tmp_path: Path) -> None:
    path = _copy("17-v1.jsonl", tmp_path)
    original = path.read_bytes()
    assert _version(path) == 1
    warning = _migrate(path, 1)
    assert warning.kind == "migrated"
    assert (tmp_path / "17-v1.jsonl.v1.bak").read_bytes() == original
    lines = [json.loads(raw) for raw in path.read_bytes().splitlines()]
    header, entries = lines[0], lines[1:]
    assert list(header)[-1] == "version" and header["version"] == 3
    assert all(list(e)[-2:] == ["id", "parentId"] for e in entries if e["type"] != "compaction")
    assert [e["parentId"] for e in entries] == [None] + [e["id"] for e in entries[:-1]]
    compaction = next(e for e in entries if e["type"] == "compaction")
    assert list(compaction)[-3:] == ["id", "parentId", "firstKeptEntryId"]
    assert "firstKeptEntryIndex" not in compaction
    q2 = next(e for e in entries if e.get("message", {}).get("content", [{}])[0].get("text") == "v1 q2")
    assert compaction["firstKeptEntryId"] == q2["id"]
    assert _version(path) == 3


def test_v1_migration_keeps_malformed_lines(tmp_path: Path) -> None:
    path = _copy("18-v1-malformed.jsonl", tmp_path)
    broken = [raw for raw in path.read_bytes().splitlines() if not raw.startswith(b"{") or not raw.endswith(b"}")]
    assert broken
    _migrate(path, 1)
    assert all(raw in path.read_bytes().splitlines() for raw in broken)
    session = Session.load(FileStorage(path))
    assert [w.kind for w in session.warnings] == ["malformed"]


def test_v2_changes_only_the_version_and_hook_message_roles(tmp_path: Path) -> None:
    path = _copy("19-v2-hookMessage.jsonl", tmp_path)
    before = path.read_bytes().splitlines()
    _migrate(path, 2)
    after = path.read_bytes().splitlines()
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert changed[0] == (before[0], before[0].replace(b'"version":2', b'"version":3'))
    assert [new for _, new in changed[1:]] == [old.replace(b'"role":"hookMessage"', b'"role":"custom"') for old, _ in changed[1:]]
    assert len(changed) == 2


def test_a_second_migration_never_overwrites_an_earlier_backup(tmp_path: Path) -> None:
    path = _copy("19-v2-hookMessage.jsonl", tmp_path)
    (tmp_path / "19-v2-hookMessage.jsonl.v2.bak").write_bytes(b"older backup")
    _migrate(path, 2)
    assert (tmp_path / "19-v2-hookMessage.jsonl.v2.bak").read_bytes() == b"older backup"
    assert (tmp_path / "19-v2-hookMessage.jsonl.v2.bak.1").exists()
    assert not list(tmp_path.glob(".*migrating"))


@pytest.mark.parametrize("planted", [".{name}.migrating", "{name}.v2.bak"])
def test_a_symlink_planted_at_a_name_migration_makes_is_never_followed(tmp_path: Path, planted: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    path = _copy("19-v2-hookMessage.jsonl", root)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not yours")
    link = root / planted.format(name=path.name)
    link.symlink_to(outside)
    _migrate(path, 2)
    assert outside.read_bytes() == b"not yours"
    assert link.is_symlink()  # left as it was found
    assert not path.is_symlink() and _version(path) == 3
    backups = sorted(root.glob(f"{path.name}.v2.bak*"))
    assert [b.read_bytes() for b in backups if not b.is_symlink()] == [(PI_QUIRK_CASES / path.name).read_bytes()]
    assert not [p for p in root.glob(".*.migrating*") if not p.is_symlink()]
