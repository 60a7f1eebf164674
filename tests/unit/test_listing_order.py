"""session/list orders sessions as pi 1.6's picker does: newest activity first, ties in file-name
order descending, names compared as JavaScript's `localeCompare` compares them (ICU's collation)."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree import protocol as p
from sessiontree.listing import collation_key
from sessiontree.service import ServiceConfig, SessionService
from support.sessions import write_session

# Sorted by Node 22's `names.sort((a, b) => a.localeCompare(b))` (ICU, locale en-US). "ab" and
# "a\x01b" are equal to ICU (it ignores most controls).
LOCALE_ORDER = [
    "\t.jsonl", " x", "_", "-", "0", "9z", "a_b.jsonl", "a-b.jsonl", "a.jsonl", "A.jsonl", "ab", "a\x01b",
    "ab.jsonl", "B.jsonl", "z0", "Z0",
]  # fmt: skip


def test_the_key_sorts_as_locale_compare() -> None:
    shuffled = sorted(LOCALE_ORDER, reverse=True)
    assert [collation_key(n) for n in sorted(shuffled, key=collation_key)] == [collation_key(n) for n in LOCALE_ORDER]
    assert collation_key("ab") == collation_key("a\x01b")


def test_ties_in_modified_fall_in_reverse_file_name_order(tmp_path: Path) -> None:
    """Header-only sessions with one timestamp: `modified` ties everywhere."""
    names = ["a_b", "a-b", "a", "A", "ab", "B", "2025-01-01T00-00-00-000Z_x", "z0", "Z0"]
    for name in names:
        write_session(tmp_path, "/w", name)
    service = SessionService(ServiceConfig(tmp_path))
    listed = [Path(s.path).stem for s in service.list(p.ListParams(cwd="/w")).sessions]
    assert listed == ["Z0", "z0", "B", "ab", "A", "a", "a-b", "a_b", "2025-01-01T00-00-00-000Z_x"]


def test_ties_across_every_cwd_fall_newest_file_first(tmp_path: Path) -> None:
    """pi 1.6's listAll orders the files by modification time, then name, both descending, before
    its stable sort by `modified`."""
    paths = {name: write_session(tmp_path, cwd, name) for cwd, name in [("/a", "b"), ("/b", "a"), ("/c", "c"), ("/d", "d")]}
    for seconds, name in enumerate(["c", "a", "d"]):
        os.utime(paths[name], (1_700_000_000 + seconds, 1_700_000_000 + seconds))
    os.utime(paths["b"], (1_700_000_001, 1_700_000_001))  # a's time: then by name, b before a
    service = SessionService(ServiceConfig(tmp_path))
    listed = [Path(s.path).stem for s in service.list(p.ListParams()).sessions]
    assert listed == ["d", "b", "a", "c"]
