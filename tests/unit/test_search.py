"""The search index: what is indexed, queries, filters, paging, and keeping up with the files."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import InvalidParams, StorageError
from sessiontree.search import IndexDamaged, SearchIndex, index_path, plain_expression
from sessiontree.search import refresh as refresh_module
from sessiontree.search.database import SCHEMA_VERSION
from sessiontree.store import FileStorage, Session, confined, migrate_file
from sessiontree.tree.projection import walk_path
from support.messages import BASE_MS, assistant, entry, line, ts, user
from support.sessions import PI_QUIRK_CASES, write_session

PROJECT = "/home/user/project"
OTHER = "/home/user/other"


# --------------------------------------------------------------------------- builders


def message(entry_id: str, parent: str | None, second: int, **fields: Any) -> dict[str, Any]:
    body = {**fields, "timestamp": BASE_MS + second * 1000}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts(second), "message": body}




def append(path: Path, *entries: dict[str, Any]) -> bytes:
    data = b"".join(line(e) for e in entries)
    with open(path, "ab") as out:
        out.write(data)
    return data


def ids(page: Any) -> list[str]:
    return [hit.entry_id or "" for hit in page.hits]


def all_hits(index: SearchIndex, query: str, cursor: str | None = None, **options: Any) -> list[Any]:
    """Every hit, following cursors."""
    hits = []
    while True:
        page = index.search(query, cursor=cursor, **options)
        hits += page.hits
        cursor = page.cursor
        if cursor is None:
            return hits


def indexed_rows(index: SearchIndex) -> list[tuple[str, str | None, int]]:
    """(path, entry id, offset) of every indexed entry, from the database itself."""
    with sqlite3.connect(index.path) as db:
        return sorted(
            db.execute("SELECT f.path, e.entry_id, e.offset FROM entries e JOIN files f USING (file_id)").fetchall()
        )


def expected_rows(*paths: Path) -> list[tuple[str, str | None, int]]:
    """What a full index of these files holds: every whole entry line."""
    rows = []
    for path in paths:
        offset = 0
        for raw in path.read_bytes().split(b"\n")[:-1]:
            if offset:
                rows.append((str(path), json.loads(raw).get("id"), offset))
            offset += len(raw) + 1
    return sorted(rows)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "sessions"
    directory.mkdir()
    return directory.resolve()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[SearchIndex]:
    with SearchIndex(tmp_path / "cache" / "search.sqlite3") as opened:
        yield opened


# --------------------------------------------------------------------------- what is indexed


def every_shape() -> list[dict[str, Any]]:
    return [
        message("a1", None, 1, role="user", content="plain string question alpha"),
        message(
            "a2",
            "a1",
            2,
            role="user",
            content=[{"type": "text", "text": "block bravo"}, {"type": "image", "data": "zzimage"}],
        ),
        message(
            "a3",
            "a2",
            3,
            role="assistant",
            content=[
                {"type": "thinking", "thinking": "pondering charlie"},
                {"type": "text", "text": "answer delta"},
                {"type": "toolCall", "id": "c1", "name": "readtool", "arguments": {"path": "src/echo.py", "depth": 7}},
            ],
            provider="anthropic",
            model="m1",
        ),
        message(
            "a4",
            "a3",
            4,
            role="toolResult",
            toolCallId="c1",
            toolName="readtool",
            content=[{"type": "text", "text": "foxtrot output"}],
            isError=False,
        ),
        message(
            "a5",
            "a4",
            5,
            role="bashExecution",
            command="make golf",
            output="hotel done",
            exitCode=0,
            cancelled=False,
            truncated=False,
        ),
        message("a6", "a5", 6, role="custom", customType="note", content="india note", display=True),
        message("a7", "a6", 7, role="hookMessage", customType="hook", content="juliet hook", display=True),
        entry(
            "custom_message",
            "a8",
            "a7",
            8,
            customType="ext",
            content=[{"type": "text", "text": "kilo custom"}],
            display=True,
        ),
        entry("branch_summary", "a9", "a8", 9, fromId="a1", summary="lima branch summary"),
        entry("compaction", "b1", "a9", 10, summary="mike compacted", firstKeptEntryId="a9", tokensBefore=100),
        entry("custom", "b2", "b1", 11, customType="november", data={"state": {"word": "oscar"}}),
        entry("label", "b3", "b2", 12, targetId="a1", label="papa"),
        entry("session_info", "b4", "b3", 13, name="quebec"),
        entry("model_change", "b5", "b4", 14, provider="romeo", modelId="sierra"),
    ]


@pytest.mark.parametrize(
    ("word", "entry_id", "kind", "role"),
    [
        ("alpha", "a1", "message", "user"),
        ("bravo", "a2", "message", "user"),
        ("charlie", "a3", "message", "assistant"),
        ("delta", "a3", "message", "assistant"),
        ("readtool", "a3", "message", "assistant"),
        ("echo", "a3", "message", "assistant"),
        ("foxtrot", "a4", "message", "toolResult"),
        ("golf", "a5", "message", "bashExecution"),
        ("hotel", "a5", "message", "bashExecution"),
        ("india", "a6", "message", "custom"),
        ("juliet", "a7", "message", "custom"),  # v2's hookMessage is v3's custom
        ("kilo", "a8", "custom_message", "custom"),
        ("lima", "a9", "branch_summary", "branchSummary"),
        ("mike", "b1", "compaction", "compactionSummary"),
        ("november", "b2", "custom", None),
        ("oscar", "b2", "custom", None),
    ],
)
def test_every_message_shape_is_searchable(
    root: Path, index: SearchIndex, word: str, entry_id: str, kind: str, role: str | None
) -> None:
    path = write_session(root, PROJECT, "s", *every_shape())
    index.refresh(root)
    (hit,) = index.search(word).hits
    assert (hit.entry_id, hit.type, hit.role, hit.path, hit.session_id, hit.cwd) == (
        entry_id,
        kind,
        role,
        str(path),
        "id-s",
        PROJECT,
    )
    assert hit.marked().count(f"«{word}»") >= 1


@pytest.mark.parametrize("word", ["zzimage", "papa", "quebec", "romeo", "sierra", "path", "depth", "anthropic"])
def test_keys_images_labels_and_settings_are_not_text(root: Path, index: SearchIndex, word: str) -> None:
    write_session(root, PROJECT, "s", *every_shape())
    index.refresh(root)
    assert index.search(word).hits == []


def test_a_hit_carries_its_entry_and_a_one_line_snippet(root: Path, index: SearchIndex) -> None:
    text = "first line\nthe needle is here\n\n   and more   after it"
    path = write_session(root, PROJECT, "s", message("e1", None, 7, role="user", content=text))
    index.refresh(root)
    (hit,) = index.search("needle").hits
    assert hit.timestamp == ts(7) and hit.timestamp_ms == BASE_MS + 7000
    assert hit.offset == len(path.read_bytes().split(b"\n")[0]) + 1
    assert hit.parent_id is None and hit.score > 0
    assert hit.snippet == "first line the needle is here and more after it"
    assert hit.highlights == ((15, 21),) and hit.marked("[", "]") == "first line the [needle] is here and more after it"


def test_marker_characters_in_the_text_do_not_confuse_highlights(root: Path, index: SearchIndex) -> None:
    write_session(root, PROJECT, "s", message("e1", None, 1, role="user", content="a\x02b needle c\x03d"))
    index.refresh(root)
    (hit,) = index.search("needle").hits
    assert hit.marked() == "a b «needle» c d"


# --------------------------------------------------------------------------- queries


def test_ranking_puts_the_denser_match_first(root: Path, index: SearchIndex) -> None:
    filler = " ".join(["other"] * 60)
    write_session(
        root,
        PROJECT,
        "s",
        message("e1", None, 1, role="user", content=f"needle {filler}"),
        message("e2", "e1", 2, role="user", content="needle needle needle"),
        message("e3", "e2", 3, role="user", content=f"needle needle {filler}"),
    )
    index.refresh(root)
    page = index.search("needle")
    assert ids(page) == ["e2", "e3", "e1"]
    assert page.hits[0].score > page.hits[1].score > page.hits[2].score


def test_phrase_prefix_and_boolean_queries(root: Path, index: SearchIndex) -> None:
    write_session(
        root,
        PROJECT,
        "s",
        message("e1", None, 1, role="user", content="the session tree is here"),
        message("e2", "e1", 2, role="user", content="a tree of the session"),
        message("e3", "e2", 3, role="user", content="sessions and sessile things"),
    )
    index.refresh(root)
    assert ids(index.search('"session tree"')) == ["e1"]
    assert sorted(ids(index.search("session tree"))) == ["e1", "e2"]
    assert sorted(ids(index.search("sess*"))) == ["e1", "e2", "e3"]
    assert sorted(ids(index.search("session OR sessile"))) == ["e1", "e2", "e3"]
    assert ids(index.search("tree NOT here")) == ["e2"]
    assert ids(index.search("NEAR(session here, 2)")) == ["e1"]


def test_plain_syntax_quotes_every_term(root: Path, index: SearchIndex) -> None:
    write_session(root, PROJECT, "s", message("e1", None, 1, role="user", content='run foo-bar with "quotes" and NOT done'))
    index.refresh(root)
    assert plain_expression('foo-bar "quo* NOT') == '"foo-bar" """quo"* "NOT"'
    for text in ("foo-bar", "NOT", '"quotes', "foo-b*", "wit*", "RUN  done"):
        assert ids(index.search(text, syntax="plain")) == ["e1"], text
    for text in ("(", "*", '"', "run nothing"):  # punctuation alone matches nothing, never an error
        assert ids(index.search(text, syntax="plain")) == [], text


@pytest.mark.parametrize("query", ["foo-bar", '"unterminated', "a AND", "NOT x", "*", "nosuchcolumn:x", "(a", "..."])
def test_a_query_syntax_error_is_invalid_params(root: Path, index: SearchIndex, query: str) -> None:
    write_session(root, PROJECT, "s", message("e1", None, 1, role="user", content="a x"))
    index.refresh(root)
    with pytest.raises(InvalidParams) as caught:
        index.search(query)
    assert caught.value.code == -32602 and caught.value.data["field"] == "query"
    assert query in caught.value.message and "plain syntax" in caught.value.message


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x", "syntax": "regex"}, "syntax"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 501}, "limit"),
        ({"query": "x", "limit": True}, "limit"),
        ({"query": "x", "roles": "user"}, "roles"),
        ({"query": "x", "types": [1]}, "types"),
        ({"query": "x", "since_ms": "yesterday"}, "since_ms"),
        ({"query": "x", "cwd": 3}, "cwd"),
        ({"query": "x", "cwd": "/home\0"}, "cwd"),
        ({"query": "x", "session": "id\0"}, "session"),
        ({"query": "x", "roles": ["user\0"]}, "roles"),
        ({"query": "x", "types": {"message": 1}}, "types"),
        ({"query": "x", "cursor": "not a cursor"}, "cursor"),
        ({"query": "x", "cursor": "eyJ2IjoxfQ"}, "cursor"),
    ],
)
def test_bad_params_are_invalid_params(index: SearchIndex, options: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        index.search(**options)
    assert caught.value.data["field"] == field


def test_filters_by_cwd_session_role_type_and_time(root: Path, index: SearchIndex) -> None:
    first = write_session(
        root,
        PROJECT,
        "one",
        message("p1", None, 10, role="user", content="needle one"),
        message("p2", "p1", 20, role="assistant", content=[{"type": "text", "text": "needle two"}]),
        entry("branch_summary", "p3", "p2", 30, fromId="p1", summary="needle three"),
    )
    write_session(root, PROJECT, "two", message("q1", None, 40, role="user", content="needle four"), session_id="sid-two")
    write_session(
        root,
        OTHER,
        "three",
        message("r1", None, 50, role="toolResult", content=[{"type": "text", "text": "needle five"}]),
    )
    index.refresh(root)

    def found(**filters: Any) -> list[str]:
        return sorted(ids(index.search("needle", **filters)))

    assert found() == ["p1", "p2", "p3", "q1", "r1"]
    assert found(cwd=PROJECT) == ["p1", "p2", "p3", "q1"]
    assert found(cwd=OTHER) == ["r1"]
    assert found(cwd="/nowhere") == []
    assert found(session="sid-two") == ["q1"]
    assert found(session=str(first)) == ["p1", "p2", "p3"]
    assert found(session="no-such-session") == []
    assert found(roles=["user"]) == ["p1", "q1"]
    assert found(roles=["assistant", "toolResult"]) == ["p2", "r1"]
    assert found(types=["branch_summary"]) == ["p3"]
    assert found(types=["message"], cwd=PROJECT, roles=["user"]) == ["p1", "q1"]
    assert found(since_ms=BASE_MS + 20_000) == ["p2", "p3", "q1", "r1"]
    assert found(until_ms=BASE_MS + 20_000) == ["p1"]
    assert found(since_ms=BASE_MS + 20_000, until_ms=BASE_MS + 40_001, cwd=PROJECT) == ["p2", "p3", "q1"]
    assert found(roles=[]) == found(types=[]) == found(roles=["nobody"]) == []


def test_the_filter_tokens_are_never_matched_by_a_query(root: Path, index: SearchIndex) -> None:
    write_session(root, PROJECT, "s", message("e1", None, 1, role="user", content="needle"))
    index.refresh(root)
    with sqlite3.connect(index.path) as db:
        (meta,) = db.execute("SELECT meta FROM fts").fetchone()
    tokens = meta.split()
    assert len(tokens) == 4 and all(token.startswith("\ue000") for token in tokens)
    for query in [*tokens, *(token[1:] for token in tokens), tokens[1][:3] + "*", "f*", "c*", "\ue000*", "meta:needle"]:
        assert index.search(query, syntax="plain").hits == [], query
        assert (
            query.startswith("meta:") or index.search(f'"{query.rstrip("*")}"' + "*" * query.endswith("*")).hits == []
        )
    assert ids(index.search("{text meta}: needle")) == ["e1"]


# --------------------------------------------------------------------------- paging


def many(root: Path, count: int, name: str = "s", word: str = "needle") -> Path:
    entries, parent = [], None
    for number in range(count):
        entry_id = f"{number:08x}"
        entries.append(message(entry_id, parent, number, role="user", content=f"{word} " + "x " * (number % 7)))
        parent = entry_id
    return write_session(root, PROJECT, name, *entries)


@pytest.mark.parametrize("window", [10_000, 7, 1])
def test_pages_cover_every_hit_once(tmp_path: Path, root: Path, window: int) -> None:
    many(root, 45)
    with SearchIndex(tmp_path / "search.sqlite3", rank_window=window) as index:
        index.refresh(root)
        pages, cursor = [], None
        while True:
            page = index.search("needle", limit=20, cursor=cursor)
            pages.append(page.hits)
            cursor = page.cursor
            if cursor is None:
                break
        assert [len(hits) for hits in pages] == [20, 20, 5]
        assert sorted(hit.entry_id or "" for hits in pages for hit in hits) == [f"{n:08x}" for n in range(45)]


def test_within_one_window_pages_follow_the_ranking(root: Path, index: SearchIndex) -> None:
    many(root, 45)
    index.refresh(root)
    whole = index.search("needle", limit=45)
    assert whole.cursor is None
    assert [hit.entry_id for hit in all_hits(index, "needle", limit=10)] == ids(whole)
    scores = [hit.score for hit in whole.hits]
    assert scores == sorted(scores, reverse=True)


def test_entries_indexed_while_paging_do_not_shift_the_pages(root: Path, index: SearchIndex) -> None:
    path = many(root, 30)
    index.refresh(root)
    first = index.search("needle", limit=10)
    append(
        path,
        *(message(f"n{n:07x}", "0000001d", 100 + n, role="user", content="needle needle needle") for n in range(5)),
    )
    index.refresh(root)
    rest = all_hits(index, "needle", limit=10, cursor=first.cursor)
    seen = ids(first) + [hit.entry_id or "" for hit in rest]
    assert sorted(seen) == [f"{n:08x}" for n in range(30)]
    assert len(index.search("needle", limit=100).hits) == 35


def test_a_cursor_belongs_to_its_query_and_filters(root: Path, index: SearchIndex) -> None:
    many(root, 30)
    index.refresh(root)
    cursor = index.search("needle", limit=10).cursor
    assert cursor is not None
    for other in ({"query": "other"}, {"query": "needle", "roles": ["user"]}, {"query": "needle", "syntax": "plain"}):
        with pytest.raises(InvalidParams, match="another query"):
            index.search(**{"limit": 10, **other}, cursor=cursor)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- keeping up with the files


def test_an_append_reads_only_the_new_bytes(root: Path, index: SearchIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    path = many(root, 200)
    index.refresh(root)
    old_size = path.stat().st_size
    added = append(path, message("new1", "000000c7", 500, role="user", content="freshword"))
    reads: list[tuple[int, int]] = []
    real_read = FileStorage.read

    def spy(self: FileStorage, offset: int, length: int) -> bytes:
        reads.append((offset, length))
        return real_read(self, offset, length)

    monkeypatch.setattr(FileStorage, "read", spy)
    stats = index.refresh(root)
    assert (stats.files_appended, stats.files_reindexed, stats.entries_added) == (1, 0, 1)
    assert stats.bytes_read == len(added)
    window = refresh_module.WINDOW
    assert all(end <= window or offset >= old_size - window for offset, end in ((o, o + n) for o, n in reads))
    assert sum(n for _, n in reads) <= len(added) + 4 * window  # the new lines, and the hashed windows
    assert ids(index.search("freshword")) == ["new1"]
    assert indexed_rows(index) == expected_rows(path)


def test_an_unchanged_file_is_not_opened(root: Path, index: SearchIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    many(root, 20)
    index.refresh(root)
    monkeypatch.setattr(confined, "open_file", lambda *a: pytest.fail("opened"))
    stats = index.refresh(root)
    assert (stats.files_seen, stats.files_unchanged, stats.bytes_read) == (1, 1, 0)


def test_an_unfinished_last_line_waits_until_it_is_complete(root: Path, index: SearchIndex) -> None:
    path = many(root, 3)
    whole = line(message("tail1", "00000002", 9, role="user", content="halfword arrives"))
    with open(path, "ab") as out:
        out.write(whole[:30])
    index.refresh(root)
    assert index.search("halfword").hits == []
    with open(path, "ab") as out:
        out.write(whole[30:])
    stats = index.refresh(root)
    assert (stats.files_appended, stats.entries_added, stats.bytes_read) == (1, 1, len(whole))
    assert ids(index.search("halfword")) == ["tail1"]
    assert indexed_rows(index) == expected_rows(path)


def test_a_header_being_written_is_read_once_complete(root: Path, index: SearchIndex) -> None:
    path = write_session(root, PROJECT, "s")
    content = path.read_bytes()
    path.write_bytes(content[:20])
    index.refresh(root)
    assert indexed_rows(index) == []
    path.write_bytes(content + line(message("e1", None, 1, role="user", content="late words")))
    index.refresh(root)
    assert ids(index.search("late")) == ["e1"]


def test_a_truncated_file_is_indexed_again(root: Path, index: SearchIndex) -> None:
    path = many(root, 10)
    index.refresh(root)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:5]) + b"\n")  # header and four entries: same inode, shorter
    stats = index.refresh(root)
    assert (stats.files_reindexed, stats.files_appended) == (1, 0)
    assert len(index.search("needle").hits) == 4
    assert indexed_rows(index) == expected_rows(path)


def test_a_file_rewritten_in_place_at_the_same_size_is_indexed_again(root: Path, index: SearchIndex) -> None:
    path = many(root, 200)
    index.refresh(root)
    data = path.read_bytes()
    middle = data.index(b"needle", len(data) // 2)
    info = path.stat()
    with open(path, "r+b") as out:  # the same inode, size and hashed windows; only the middle differs
        out.seek(middle)
        out.write(b"thread")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    stats = index.refresh(root)
    assert stats.files_reindexed == 1
    assert len(index.search("thread").hits) == 1 and len(all_hits(index, "needle")) == 199


def test_a_file_renamed_over_is_indexed_again(root: Path, index: SearchIndex) -> None:
    path = many(root, 5)
    index.refresh(root)
    replacement = path.with_name("new.tmp")
    replacement.write_bytes(path.read_bytes().replace(b"needle", b"pinned"))
    os.replace(replacement, path)
    stats = index.refresh(root)
    assert stats.files_reindexed == 1
    assert index.search("needle").hits == [] and len(index.search("pinned").hits) == 5
    assert indexed_rows(index) == expected_rows(path)


def test_a_file_that_grew_with_other_bytes_before_is_indexed_again(root: Path, index: SearchIndex) -> None:
    path = many(root, 5)
    index.refresh(root)
    path.write_bytes(
        path.read_bytes().replace(b"needle", b"pinned") + line(message("z", None, 99, role="user", content="more"))
    )
    stats = index.refresh(root)
    assert (stats.files_reindexed, stats.files_appended) == (1, 0)
    assert index.search("needle").hits == [] and len(index.search("pinned").hits) == 5


def test_a_file_migrated_by_the_daemon_is_indexed_again(root: Path, index: SearchIndex) -> None:
    directory = root / "--home-user-project--"
    directory.mkdir()
    path = directory / "old.jsonl"
    shutil.copyfile(PI_QUIRK_CASES / "19-v2-hookMessage.jsonl", path)
    index.refresh(root)
    before = sorted((hit.entry_id, hit.role) for hit in all_hits(index, "hook*"))
    storage = FileStorage(path)
    try:
        with storage.lock():
            migrate_file(root, path, storage, 2)
    finally:
        storage.close()
    stats = index.refresh(root)
    assert stats.files_reindexed == 1
    after = sorted((hit.entry_id, hit.role) for hit in all_hits(index, "hook*") if hit.path == str(path))
    assert after == before and after and all(role == "custom" for _, role in after if role != "user")
    assert {Path(p).name for p, _, _ in indexed_rows(index)} == {"old.jsonl"}  # the .v2.bak is not a .jsonl


def test_a_deleted_file_leaves_the_index(root: Path, index: SearchIndex) -> None:
    kept = many(root, 3, name="kept")
    gone = many(root, 3, name="gone", word="doomed")
    index.refresh(root)
    gone.unlink()
    stats = index.refresh(root)
    assert stats.files_removed == 1
    assert index.search("doomed").hits == []
    assert indexed_rows(index) == expected_rows(kept)


def test_refreshing_named_files_only(root: Path, index: SearchIndex) -> None:
    one = many(root, 2, name="one")
    two = many(root, 2, name="two", word="second")
    stats = index.refresh(root, files=[one])
    assert stats.files_seen == 1 and index.search("second").hits == []
    index.refresh(root)
    two.unlink()
    append(one, message("x1", "00000001", 50, role="user", content="later"))
    stats = index.refresh(root, files=[one, two])
    assert (stats.files_appended, stats.files_removed) == (1, 1)
    assert indexed_rows(index) == expected_rows(one)


def test_files_the_daemon_would_not_serve_are_not_indexed(root: Path, index: SearchIndex, tmp_path: Path) -> None:
    served = many(root, 2, name="served")
    directory = served.parent
    (directory / "notes.jsonl").write_text(
        '{"type":"note"}\n{"type":"message","id":"x","message":{"role":"user","content":"needle"}}\n'
    )
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(served.read_bytes())
    (directory / "link.jsonl").symlink_to(outside)
    linked_dir = root / "--linked--"
    linked_dir.symlink_to(directory)
    hard = many(root, 2, name="hard")
    index.refresh(root)
    assert {hit.path for hit in index.search("needle").hits} == {str(served), str(hard)}
    os.link(hard, tmp_path / "second-name.jsonl")  # now it has a name outside the root
    stats = index.refresh(root)
    assert stats.files_removed == 1
    assert {hit.path for hit in index.search("needle").hits} == {str(served)}


def test_lines_another_process_appends_are_picked_up(root: Path, index: SearchIndex) -> None:
    path = many(root, 3)
    index.refresh(root)
    data = line(message("ext1", "00000002", 40, role="assistant", content=[{"type": "text", "text": "written by pi"}]))
    code = f"import sys\nwith open(sys.argv[1], 'ab') as f:\n    f.write({data!r})\n"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    stats = index.refresh(root)
    assert (stats.files_appended, stats.entries_added) == (1, 1)
    (hit,) = index.search("pi").hits
    assert (hit.entry_id, hit.role, hit.on_leaf_path) == ("ext1", "assistant", True)


def test_damaged_lines_are_skipped_and_the_rest_indexed(root: Path, index: SearchIndex) -> None:
    path = many(root, 2)
    append(path, message("ok1", "00000001", 9, role="user", content="after damage"))
    data = path.read_bytes().split(b"\n")
    data.insert(2, b'{"type":"message","id":"brok')
    data.insert(3, b"\xff\xfe not json")
    path.write_bytes(b"\n".join(data))
    index.refresh(root)
    assert ids(index.search("damage")) == ["ok1"] and len(index.search("needle").hits) == 2


def test_odd_strings_and_numbers_never_break_a_refresh(root: Path, index: SearchIndex) -> None:
    path = many(root, 1)
    with open(path, "ab") as out:  # half an emoji as JavaScript writes it, and a time past any date
        out.write(b'{"type":"message","id":"s1","parentId":null,"timestamp":"x","message":{"role":"user",')
        out.write(b'"content":"split \\ud83d emoji","timestamp":1e300}}\n')
    append(path, message("after", None, 5, role="user", content="still indexed"))
    (root / "--home-user-project--" / os.fsdecode(b"\xff.jsonl")).write_bytes(path.read_bytes())
    index.refresh(root)
    (hit,) = index.search("emoji").hits
    assert (hit.entry_id, hit.timestamp_ms, hit.snippet) == ("s1", None, "split \ufffd\ufffd\ufffd emoji")
    assert ids(index.search("still")) == ["after"]
    assert ids(index.search("\ud83d emoji", syntax="plain")) == ["s1"]  # U+FFFD is no token
    assert index.search("emoji", cwd="\udcff", session="\udcff").hits == []


def test_a_version_1_file_is_searchable_before_it_is_migrated(root: Path, index: SearchIndex) -> None:
    directory = root / "--home-user-project--"
    directory.mkdir()
    shutil.copyfile(PI_QUIRK_CASES / "17-v1.jsonl", directory / "old.jsonl")
    index.refresh(root)
    hits = all_hits(index, "v1")
    assert hits and all(hit.entry_id is None and not hit.on_leaf_path for hit in hits)


def test_an_index_that_cannot_be_made_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StorageError):
        SearchIndex(tmp_path / "file" / "search.sqlite3")


# --------------------------------------------------------------------------- cancelling and consistency


def test_a_cancelled_refresh_leaves_a_consistent_index(
    root: Path, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_module, "_FLUSH_BYTES", 2000)  # many batches per file
    monkeypatch.setattr(refresh_module, "_COMMIT_BYTES", 4000)
    paths = [many(root, 60, name=f"s{n}") for n in range(3)]
    asked = 0

    def cancelled() -> bool:
        nonlocal asked
        asked += 1
        return asked > 4

    stats = index.refresh(root, cancelled=cancelled)
    assert stats.cancelled
    partial = indexed_rows(index)
    assert 0 < len(partial) < len(expected_rows(*paths))
    for path in {row[0] for row in partial}:  # each file indexed up to a line end, no entry twice
        mine = [row for row in partial if row[0] == path]
        assert mine == expected_rows(Path(path))[: len(mine)]
    stats = index.refresh(root)
    assert not stats.cancelled and stats.files_appended >= 1
    assert indexed_rows(index) == expected_rows(*paths)
    assert len(all_hits(index, "needle")) == 180


def test_an_error_mid_refresh_keeps_what_was_committed(
    root: Path, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [many(root, 5, name=f"s{n}") for n in range(3)]
    real = refresh_module.Refresher._refresh_file
    calls = 0

    def failing(self: Any, path: Path, known: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt  # a crash in the middle of the batch
        real(self, path, known)

    monkeypatch.setattr(refresh_module.Refresher, "_refresh_file", failing)
    with pytest.raises(KeyboardInterrupt):
        index.refresh(root)
    monkeypatch.undo()
    assert indexed_rows(index) in ([], expected_rows(*paths[:2]))  # a batch is all or nothing
    index.refresh(root)
    assert indexed_rows(index) == expected_rows(*paths)


def test_progress_reports_each_file(root: Path, index: SearchIndex) -> None:
    for n in range(3):
        many(root, 2, name=f"s{n}")
    seen: list[tuple[int, int]] = []
    index.refresh(root, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_a_search_while_another_thread_refreshes(
    root: Path, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_module, "_COMMIT_BYTES", 2000)
    for n in range(20):
        many(root, 50, name=f"s{n:02d}")
    errors: list[BaseException] = []

    def refresh() -> None:
        try:
            index.refresh(root)
        except BaseException as exc:  # reported below
            errors.append(exc)

    worker = threading.Thread(target=refresh)
    worker.start()
    counts = []
    while worker.is_alive():
        counts.append(len(index.search("needle", limit=500).hits))
    worker.join()
    assert not errors
    assert counts == sorted(counts)  # only ever whole batches, growing
    assert len(all_hits(index, "needle", limit=500)) == 1000


def test_two_indexes_on_one_database_do_not_index_twice(root: Path, tmp_path: Path) -> None:
    paths = [many(root, 20, name=f"s{n}") for n in range(4)]
    database = tmp_path / "shared.sqlite3"
    with SearchIndex(database) as first, SearchIndex(database) as second:
        first.refresh(root)
        append(paths[0], message("n1", "00000013", 99, role="user", content="both"))
        second.refresh(root)
        first.refresh(root)
        assert indexed_rows(first) == expected_rows(*paths)


# --------------------------------------------------------------------------- the database file


def test_the_index_is_private(tmp_path: Path, root: Path) -> None:
    many(root, 3)
    directory = tmp_path / "cache" / "sessiontree"
    old_umask = os.umask(0o022)
    try:
        with SearchIndex(directory / "search.sqlite3") as index:
            index.refresh(root)
            index.search("needle")
            made = [directory / name for name in os.listdir(directory)]
            assert {p.name for p in made} >= {"search.sqlite3", "search.sqlite3-wal", "search.sqlite3-shm"}
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700
            assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in made)
    finally:
        os.umask(old_umask)


def test_a_loose_directory_and_file_are_made_private(tmp_path: Path) -> None:
    directory = tmp_path / "loose"
    directory.mkdir(mode=0o755)
    (directory / "search.sqlite3").touch(mode=0o644)
    os.chmod(directory / "search.sqlite3", 0o644)
    with SearchIndex(directory / "search.sqlite3"):
        pass
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "search.sqlite3").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "damage", ["garbage", "truncated", "zeroed-page", "zeroed-block", "cut-short", "other-schema", "other-layout"]
)
def test_a_damaged_or_foreign_database_is_rebuilt(tmp_path: Path, root: Path, damage: str) -> None:
    path = many(root, 40)
    database = tmp_path / "search.sqlite3"
    with SearchIndex(database) as index:
        index.refresh(root)
    data = database.read_bytes()
    if damage == "garbage":
        database.write_bytes(b"this is not a database at all" * 100)
    elif damage == "truncated":
        database.write_bytes(data[:1000])
    elif damage == "zeroed-page":
        database.write_bytes(data[:4096] + b"\0" * (len(data) - 4096))
    elif damage == "zeroed-block":  # queries may read it as no rows, without an error
        database.write_bytes(data[: len(data) // 2] + b"\0" * 8192 + data[len(data) // 2 + 8192 :])
    elif damage == "cut-short":
        database.write_bytes(data[: len(data) - 8192])
    elif damage == "other-schema":
        with sqlite3.connect(database) as db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION + 1),))
    else:
        database.unlink()
        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE something(x)")
    with SearchIndex(database) as index:
        stats = index.refresh(root)
        assert stats.rebuilt  # said so
        assert len(all_hits(index, "needle")) == 40
        assert indexed_rows(index) == expected_rows(path)


def test_damage_found_by_a_search_is_repaired_by_the_next_refresh(tmp_path: Path, root: Path) -> None:
    many(root, 300)
    database = tmp_path / "search.sqlite3"
    with SearchIndex(database) as index:
        index.refresh(root)
        index._db.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = database.stat().st_size
        with open(database, "r+b") as out:  # clobber every page but the first: the FTS index with them
            out.seek(4096)
            out.write(os.urandom(size - 4096))
        index._db.generation += 1  # a fresh reading connection: no page of the old file cached
        with pytest.raises(IndexDamaged):  # never a silent empty page
            index.search("needle")
        stats = index.refresh(root)
        assert stats.rebuilt and len(all_hits(index, "needle", limit=500)) == 300


def test_an_index_of_another_root_starts_afresh(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    many(first, 2, word="alpha")
    many(second, 2, word="bravo")
    with SearchIndex(tmp_path / "search.sqlite3") as index:
        index.refresh(first)
        stats = index.refresh(second)
        assert stats.rebuilt
        assert index.search("alpha").hits == [] and len(index.search("bravo").hits) == 2
    assert index_path(tmp_path, first) != index_path(tmp_path, second)
    assert index_path(tmp_path, first).parent == tmp_path


# --------------------------------------------------------------------------- the leaf's path


def branched(root: Path) -> Path:
    """root r1 -> r2 -> r3 (needle) and a branch r2 -> b1 -> b2 (needle), written last."""
    return write_session(
        root,
        PROJECT,
        "s",
        user("r1", None, "needle root", 1),
        assistant("r2", "r1", "needle answer", 2),
        user("r3", "r2", "needle old branch", 3),
        user("b1", "r2", "needle new branch", 4),
        assistant("b2", "b1", "needle leaf", 5),
    )


def on_path(index: SearchIndex) -> dict[str | None, bool]:
    return {hit.entry_id: hit.on_leaf_path for hit in all_hits(index, "needle")}


def test_hits_say_whether_they_are_on_the_path_of_the_last_entry(root: Path, index: SearchIndex) -> None:
    path = branched(root)
    index.refresh(root)
    assert on_path(index) == {"r1": True, "r2": True, "r3": False, "b1": True, "b2": True}
    assert index.path_from_last_entry(str(path)) == {"r1", "r2", "b1", "b2"}
    append(path, user("r4", "r3", "needle back on the old branch", 6))  # pi continued the other branch
    index.refresh(root)
    assert on_path(index) == {"r1": True, "r2": True, "r3": True, "b1": False, "b2": False, "r4": True}
    append(path, entry("label", "l1", "r4", 7, targetId="r1", label="x"), user("n1", None, "needle new root", 8))
    index.refresh(root)
    assert on_path(index) == {"r1": False, "r2": False, "r3": False, "b1": False, "b2": False, "r4": False, "n1": True}
    assert index.path_from_last_entry(str(path)) == {"n1"}


def test_an_open_sessions_own_leaf_decides(root: Path, index: SearchIndex) -> None:
    path = branched(root)
    index.refresh(root)
    page = index.search("needle", leaf_path=lambda p: {"r1", "r2", "r3"} if p == str(path) else None)
    assert {hit.entry_id: hit.on_leaf_path for hit in page.hits} == {
        "r1": True,
        "r2": True,
        "r3": True,
        "b1": False,
        "b2": False,
    }


@pytest.mark.parametrize(
    "case", sorted(p.name for p in PI_QUIRK_CASES.glob("*.jsonl") if not p.name.startswith(("17", "18")))
)
def test_the_path_matches_the_daemons_own_walk(root: Path, index: SearchIndex, case: str) -> None:
    """Every damaged shape pi knows (orphans, cycles, repeated ids, torn lines): the flags and the
    helper agree with the path the daemon walks from the leaf it loads, appended line by line."""
    directory = root / "--home-user-project--"
    directory.mkdir()
    path = directory / case
    data = (PI_QUIRK_CASES / case).read_bytes()
    for end in [n + 1 for n, byte in enumerate(data) if byte == ord("\n")] + [len(data)]:
        path.write_bytes(data[:end])
        index.refresh(root)
    storage = FileStorage(path, writable=False)
    try:
        session = Session.load(storage)
        expected = {node.id for node in walk_path(session.index, session.index.leaf_id)}
    except Exception:  # not a session the daemon opens
        return
    finally:
        storage.close()
    assert index.path_from_last_entry(str(path)) == expected
    with sqlite3.connect(index.path) as db:
        flagged = {row[0] for row in db.execute("SELECT entry_id FROM entries WHERE on_path = 1")}
    assert flagged == expected


# --------------------------------------------------------------------------- a query stays inside its group


@pytest.mark.parametrize(
    "query",
    ["x ) OR ( x", "x )\0 ) OR ( x", "( x", "x )", '"x ) OR ( x', "x\x0c", "NEAR(x y) ) OR (x"],
)
def test_a_query_that_leaves_its_group_is_refused(root: Path, index: SearchIndex, query: str) -> None:
    write_session(root, PROJECT, "s", message("e1", None, 1, role="user", content="x y"))
    index.refresh(root)
    with pytest.raises(InvalidParams) as caught:
        index.search(query, cwd="/elsewhere")
    assert caught.value.data["field"] == "query"


def test_a_nul_in_a_query_is_a_space(root: Path, index: SearchIndex) -> None:
    write_session(root, PROJECT, "s", message("e1", None, 1, role="user", content="x y"))
    index.refresh(root)
    for syntax in ("fts", "plain"):
        assert ids(index.search("x\0y", syntax=syntax)) == ["e1"]
        assert ids(index.search('"x\0y"', syntax="fts")) == ["e1"]
        assert index.search("x )\0", syntax="plain", cwd="/elsewhere").hits == []


def test_closing_while_another_thread_refreshes_stops_it_first(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_module, "_COMMIT_BYTES", 2000)
    for n in range(20):
        many(root, 50, name=f"s{n:02d}")
    database = tmp_path / "search.sqlite3"
    for _ in range(5):
        database.unlink(missing_ok=True)
        index = SearchIndex(database)
        under_way = threading.Event()
        outcome: list[Any] = []

        def refresh(index: SearchIndex = index, under_way: threading.Event = under_way, out: list[Any] = outcome) -> None:
            try:
                out.append(index.refresh(root, progress=lambda done, total: under_way.set()))
            except BaseException as exc:  # reported below
                out.append(exc)

        worker = threading.Thread(target=refresh)
        worker.start()
        assert under_way.wait(30)
        index.close()  # returns only once the refresh let go of the connection
        assert not worker.is_alive() or worker.join(30) is None
        assert len(outcome) == 1 and not isinstance(outcome[0], BaseException), outcome
        with SearchIndex(database) as again:  # what was committed is whole; the rest follows
            again.refresh(root)
            assert len(all_hits(again, "needle", limit=500)) == 1000


# --------------------------------------------------------------------------- pi 1.6 entries


def _pi16_session(root: Path) -> Path:
    system = {
        "role": "system",
        "content": "You are a coding agent. needle in the prompt",
        "sections": {"preamble": "needle preamble", "cwd": None},
        "toolsAdded": [{"name": "read", "description": "needle read files", "parameters": {"type": "object"}}],
        "toolsRemoved": [],
        "timestamp": BASE_MS,
    }
    return write_session(
        root,
        PROJECT,
        "pi16",
        {"type": "message", "id": "sys1", "parentId": None, "timestamp": ts(0), "message": system},
        message("u1", "sys1", 1, role="user", content="needle from the user"),
        entry("context_edit", "ce1", "u1", 2, targetId="u1", replacement={"content": "redacted replacement words"}),
        entry("context_edit", "ce2", "ce1", 3, targetId="u1", replacement=None),
        {
            **entry("usage", "us1", "ce2", 4, provider="anthropic", model="claude-warmer", note="needle warm note"),
            "kind": "cache_warm",
            "usage": {"input": 1, "output": 2},
        },
    )


def test_system_prompts_are_searched_only_when_their_role_is_asked_for(root: Path, index: SearchIndex) -> None:
    _pi16_session(root)
    index.refresh(root)
    assert ids(index.search("needle")) == ["u1"]  # every session repeats its prompt: not in a plain search
    assert ids(index.search("preamble OR read")) == []
    assert ids(index.search("needle", roles=["system"])) == ["sys1"]
    assert sorted(ids(index.search("needle", roles=["system", "user"]))) == ["sys1", "u1"]
    for words in ("prompt", "preamble", "files"):  # content, sections and the tools' declarations
        assert ids(index.search(words, roles=["system"])) == ["sys1"], words
    assert ids(index.search("needle", types=["message"])) == ["u1"]


def test_a_context_edits_replacement_is_its_text(root: Path, index: SearchIndex) -> None:
    _pi16_session(root)
    index.refresh(root)
    page = index.search("redacted replacement")
    assert ids(page) == ["ce1"] and page.hits[0].type == "context_edit" and page.hits[0].role is None
    assert ids(index.search("redacted", types=["context_edit"])) == ["ce1"]


def test_usage_entries_are_not_indexed(root: Path, index: SearchIndex) -> None:
    _pi16_session(root)
    index.refresh(root)
    for words in ("warm", "claude", "anthropic", "cache_warm"):
        assert index.search(words, syntax="plain").hits == [], words
        assert index.search(words, syntax="plain", roles=["system", "user"]).hits == [], words
