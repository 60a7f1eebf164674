"""Damaged files always load: everything complete before the damage is there, nothing dropped silently.

A file cut at every byte of its last two records, garbage and NUL runs in the middle, a split
UTF-8 sequence, CRLF line ends: the store loads each, indexes every complete entry, reports the
rest, and never changes the file (an unfinished last line may still be being written).
"""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.store import MemoryStorage, Session
from support.messages import assistant, line, user
from support.sessions import session_bytes

ENTRIES = [user("e0000001", None, "q1"), assistant("e0000002", "e0000001", "a1 ünïcødé"), user("e0000003", "e0000002", "q2")]
DATA = session_bytes(*ENTRIES)
LAST_TWO_START = len(DATA) - len(line(ENTRIES[1])) - len(line(ENTRIES[2]))


def _complete_ids(data: bytes) -> list[str]:
    """The entries a reader must find in `data`: whole lines, or a last line that is whole JSON."""
    ids = []
    for entry in ENTRIES:
        raw = line(entry)
        position = data.find(raw[:-1])
        if position >= 0 and position + len(raw) - 1 <= len(data):
            ids.append(entry["id"])
    return ids


@pytest.mark.parametrize("cut", range(LAST_TWO_START, len(DATA) + 1))
def test_a_file_cut_at_any_byte_of_its_last_two_records_loads(cut: int) -> None:
    storage = MemoryStorage(DATA[:cut])
    session = Session.load(storage)
    assert [node.id for node in session.index.nodes] == _complete_ids(DATA[:cut])
    assert bytes(storage.data) == DATA[:cut]
    assert all(w.kind == "torn-tail" for w in session.warnings)
    torn = len(session.warnings)
    written, _ = session.append([{"type": "custom", "customType": "after"}])
    assert bytes(storage.data).startswith(DATA[:cut])
    reopened = Session.load(MemoryStorage(bytes(storage.data)))
    assert [w.kind for w in reopened.warnings] == ["malformed"] * torn  # the fenced line
    assert reopened.index.nodes[-1].id == written[0].node.id


DAMAGE: dict[str, tuple[bytes, list[str], list[str]]] = {
    # name: (file, entry ids found, warning kinds)
    "garbage line": (
        session_bytes(ENTRIES[0]) + b"}{ not json at all\n" + line(ENTRIES[1]),
        ["e0000001", "e0000002"],
        ["malformed"],
    ),
    "NUL run as a line": (
        session_bytes(ENTRIES[0]) + b"\x00" * 4096 + b"\n" + line(ENTRIES[1]),
        ["e0000001", "e0000002"],
        ["malformed"],
    ),
    "NUL run as the tail": (session_bytes(ENTRIES[0]) + b"\x00" * 512, ["e0000001"], ["torn-tail"]),
    "NULs inside a line": (
        session_bytes(ENTRIES[0]) + line(ENTRIES[1])[:30] + b"\x00" * 16 + line(ENTRIES[1])[46:] + line(ENTRIES[2]),
        ["e0000001", "e0000003"],
        ["malformed"],
    ),
    "split UTF-8 sequence": (  # read as Node reads it: the broken sequence becomes U+FFFD
        session_bytes(ENTRIES[0]) + line(ENTRIES[1]).replace("ü".encode(), "ü".encode()[:1]) + line(ENTRIES[2]),
        ["e0000001", "e0000002", "e0000003"],
        [],
    ),
    "split UTF-8 sequence in an id": (
        session_bytes(ENTRIES[0]) + line({**ENTRIES[1], "id": "e00000é2"}).replace("é".encode(), b"\xc3") + line(ENTRIES[2]),
        ["e0000001", "e00000\ufffd2", "e0000003"],
        [],
    ),
    "CRLF line ends": (DATA.replace(b"\n", b"\r\n"), ["e0000001", "e0000002", "e0000003"], []),
    "two lines glued by a writer without a line end": (
        session_bytes(ENTRIES[0]) + line(ENTRIES[1])[:-1] + line(ENTRIES[2]),
        ["e0000001"],
        ["malformed"],
    ),
    "blank and whitespace lines": (
        session_bytes(ENTRIES[0]) + b"\n   \n\t\r\n" + line(ENTRIES[1]),
        ["e0000001", "e0000002"],
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damage_in_the_middle_is_reported_and_the_file_left_alone(name: str) -> None:
    data, ids, kinds = DAMAGE[name]
    storage = MemoryStorage(data)
    session = Session.load(storage)
    assert [node.id for node in session.index.nodes] == ids
    assert [w.kind for w in session.warnings] == kinds
    assert bytes(storage.data) == data


def _entry(session: Session, entry_id: str) -> dict[str, Any]:
    node = session.index.get(entry_id)
    assert node is not None
    return session.entry(node)


def test_invalid_utf8_is_replaced_as_node_replaces_it() -> None:
    data, _, _ = DAMAGE["split UTF-8 sequence"]
    session = Session.load(MemoryStorage(data))
    assert _entry(session, "e0000002")["message"]["content"][0]["text"] == "a1 \ufffdnïcødé"


def test_payloads_of_entries_after_damage_are_read_from_the_right_bytes() -> None:
    data, _, _ = DAMAGE["NUL run as a line"]
    session = Session.load(MemoryStorage(data))
    assert _entry(session, "e0000002") == ENTRIES[1]
