"""session/search with a PostgreSQL store: the file store's hits from the same sessions, found by
PostgreSQL's full-text search over an index in the store that each search brings up to date."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import test_postgres_roles as roles  # the GRANT block of protocol.md, run as written

from sessiontree.backend.files import FileSearch
from sessiontree.backend.postgres import PostgresBackend
from sessiontree.backend.postgres import search as search_module
from sessiontree.backend.postgres.fts import tsvector, words
from sessiontree.backend.postgres.search import PostgresSearch
from sessiontree.backend.postgres.transfer import push
from sessiontree.errors import InvalidParams
from sessiontree.listing import session_files, subdirectories
from sessiontree.protocol import SearchParams
from sessiontree.search import SearchIndex, SearchPage
from sessiontree.service import ServiceConfig, SessionService
from support.daemon import daemon_pool, request, sessions_root
from support.messages import BASE_MS, entry, line, ts
from support.sessions import write_session

PROJECT = "/home/user/project"
OTHER = "/home/user/other"


# --------------------------------------------------------------------------- builders


def message(entry_id: str, parent: str | None, second: int, role: str, content: Any, **fields: Any) -> dict[str, Any]:
    body = {"role": role, "content": content, "timestamp": BASE_MS + second * 1000, **fields}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts(second), "message": body}




def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


def corpus(root: Path) -> None:
    """Sessions with every kind of text, in two projects."""
    write_session(
        root,
        PROJECT,
        "a",
        message("a1", None, 1, "user", "the session tree is here; please read src/echo.py"),
        message(
            "a2",
            "a1",
            2,
            "assistant",
            [
                {"type": "thinking", "thinking": "pondering the tree of sessions"},
                {"type": "text", "text": "A tree of the session, with café and naïve words"},
                {"type": "toolCall", "id": "c1", "name": "readtool", "arguments": {"path": "src/echo.py", "depth": 7}},
            ],
        ),
        message("a3", "a2", 3, "toolResult", text("def echo(x): return x  # foo-bar baz_qux 3.14"), toolCallId="c1"),
        message("a4", "a3", 4, "bashExecution", None, command="make golf", output="hotel done\nsessile things"),
        entry("branch_summary", "a5", "a2", 5, fromId="a3", summary="lima branch summary of the session"),
        entry("compaction", "a6", "a5", 6, summary="mike compacted tree", firstKeptEntryId="a5", tokensBefore=1),
        entry("custom", "a7", "a6", 7, customType="november", data={"state": {"word": "oscar"}}),
        entry("label", "a8", "a7", 8, targetId="a1", label="papa"),
        entry("custom_message", "a9", "a8", 9, customType="x", content=text("kilo custom TREE")),
    )
    write_session(
        root,
        PROJECT,
        "b",
        message("b1", None, 20, "user", "Sessions and sessile things, STRASSE and Straße"),
        message("b2", "b1", 21, "assistant", text("one two three four five six seven")),
        message("b3", "b2", 22, "user", "tree tree tree session session"),
        session_id="sid-b",
    )
    write_session(
        root,
        OTHER,
        "c",
        message("c1", None, 40, "user", "another project: the session tree, again"),
        message("c2", "c1", 41, "toolResult", text("résumé of the tool's output: Привет мир, 日本語")),
        message("c3", "c2", 42, "user", " ".join(f"w{n}" for n in range(40)) + " needle. " + "x " * 40 + "needle end"),
    )


# --------------------------------------------------------------------------- the two stores


class Stores:
    def __init__(self, root: Path, cache: Path, dsn: str, rank_window: int = 10_000) -> None:
        self.root = root
        self.files = FileSearch(SearchIndex(cache / "search.sqlite3", rank_window=rank_window), root)
        self.backend = PostgresBackend(root, dsn)
        self.backend.start()
        self.store = PostgresSearch(dsn, root, self.backend.connection, self.backend.db, rank_window=rank_window)

    def push_all(self) -> None:
        """Every session file into the store, in the order the file store's refresh reads them."""
        for path in session_files(self.root, [self.root / name for name in subdirectories(self.root)]):
            assert push(self.backend, path).outcome in ("created", "appended", "unchanged"), path

    def refresh(self) -> None:
        self.push_all()
        self.files.refresh()
        self.store.refresh()

    def close(self) -> None:
        self.files.close()
        self.store.close()
        self.backend.close()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    directory = tmp_path / "sessions"
    directory.mkdir()
    return directory.resolve()


@pytest.fixture
def stores(root: Path, tmp_path: Path, pg_dsn: str) -> Iterator[Stores]:
    opened = Stores(root, tmp_path / "cache", pg_dsn)
    yield opened
    opened.close()


def found(page: SearchPage) -> list[tuple[str, str | None]]:
    return [(hit.path, hit.entry_id) for hit in page.hits]


def every_hit(index: Any, query: str, cursor: str | None = None, **options: Any) -> list[Any]:
    hits: list[Any] = []
    while True:
        page = index.search(query, cursor=cursor, **options)
        hits += page.hits
        cursor = page.cursor
        if cursor is None:
            return hits


# --------------------------------------------------------------------------- the same hits

QUERIES = [
    "tree",
    "TREE",
    "session tree",
    '"session tree"',
    '"tree of the session"',
    "sess*",
    "sessi* tree",
    '"the sess"*',
    "session OR sessile",
    "tree NOT here",
    "tree NOT session",
    "session OR tree NOT here",
    "tree AND (session OR sessile)",
    "(session OR sessile) NOT things",
    "one OR two three",
    "one two OR three",
    "NEAR(two five)",
    "NEAR(two five, 2)",
    "NEAR(two five, 1)",
    "NEAR(five two, 2)",
    'NEAR("one two" four, 1)',
    "NEAR(tree)",
    "^tree",
    "^another",
    "^the session",
    "text: tree",
    "meta: tree",
    "{text meta}: tree",
    "-meta: tree",
    "-text: tree",
    "text: (tree OR sessile)",
    "echo",
    "src",
    "readtool",
    "foo",
    "baz_qux",
    "baz",
    '"3.14"',
    "14",
    "cafe",
    "café",
    "naive",
    "resume",
    "straße",
    "strasse",
    "привет",
    "ПРИВЕТ",
    "日本語",
    "golf",
    "hotel",
    "lima",
    "mike",
    "november",
    "oscar",
    "kilo",
    "papa",
    "path",
    "depth",
    "needle",
    "w3*",
    '"(" tree',
    '"(" OR tree',
    'tree NOT "("',
    '"("',
    "x*",
    "nothing",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_same_entries_as_the_file_store(stores: Stores, root: Path, query: str) -> None:
    corpus(root)
    stores.refresh()
    expected = sorted(found(stores.files.search(query, limit=500)))
    assert sorted(found(stores.store.search(query, limit=500))) == expected


@pytest.mark.parametrize("query", ["foo-bar", "echo(x)", "tree NOT", '"session', "STRASSE   caf*", "(", "*", "naïve+"])
def test_plain_syntax_finds_the_same_entries(stores: Stores, root: Path, query: str) -> None:
    corpus(root)
    stores.refresh()
    expected = sorted(found(stores.files.search(query, syntax="plain", limit=500)))
    assert sorted(found(stores.store.search(query, syntax="plain", limit=500))) == expected


def test_ordered_by_recency_the_hits_come_in_the_same_order(root: Path, tmp_path: Path, pg_dsn: str) -> None:
    corpus(root)
    both = Stores(root, tmp_path / "cache", pg_dsn, rank_window=1)  # each window one hit: newest first
    try:
        both.refresh()
        for query, filters in (
            ("tree", {}),
            ("sess*", {}),
            ("session OR tree NOT here", {}),
            ("tree OR sess*", {"since_ms": BASE_MS + 3_000, "until_ms": BASE_MS + 41_000}),
        ):
            expected = found(stores_page(both.files, query, **filters))
            assert expected and found(stores_page(both.store, query, **filters)) == expected, query
    finally:
        both.close()


def stores_page(index: Any, query: str, **filters: Any) -> SearchPage:
    return SearchPage(every_hit(index, query, limit=3, **filters))


def test_a_hit_carries_what_the_file_stores_does(stores: Stores, root: Path) -> None:
    corpus(root)
    stores.refresh()
    for query in ("tree", "echo", '"session tree"', "needle", "sess*"):
        mine = {hit.entry_id: hit for hit in stores.store.search(query, limit=500).hits}
        for hit in stores.files.search(query, limit=500).hits:
            other = mine[hit.entry_id]
            assert (other.path, other.session_id, other.cwd, other.parent_id, other.type, other.role) == (
                hit.path, hit.session_id, hit.cwd, hit.parent_id, hit.type, hit.role,
            )
            assert (other.timestamp, other.timestamp_ms, other.offset, other.on_leaf_path) == (
                hit.timestamp, hit.timestamp_ms, hit.offset, hit.on_leaf_path,
            )
            assert other.score > 0
            assert (other.snippet, other.highlights) == (hit.snippet, hit.highlights), query


def test_a_long_text_gets_a_snippet_around_its_matches(stores: Stores, root: Path) -> None:
    corpus(root)
    stores.refresh()
    (hit,) = stores.store.search("needle").hits
    assert hit.snippet == "…w31 w32 w33 w34 w35 w36 w37 w38 w39 needle. x x x x x x x x x x…"
    assert [hit.snippet[start:end] for start, end in hit.highlights] == ["needle"]
    (hit,) = stores.store.search('"tree of the session"').hits
    assert hit.marked() == "pondering the tree of sessions A «tree of the session», with café and naïve words readtool src/echo.py 7"


@pytest.mark.parametrize("query", ["foo-bar", '"unterminated', "a AND", "NOT x", "*", "nosuchcolumn:x", "(a", "..."])
def test_a_syntax_error_reads_as_the_file_stores(stores: Stores, query: str) -> None:
    with pytest.raises(InvalidParams) as expected:
        stores.files.search(query)
    with pytest.raises(InvalidParams) as caught:
        stores.store.search(query)
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        expected.value.code, expected.value.message, expected.value.data,
    )


@pytest.mark.parametrize("query", ["NEAR(a b c)", "NEAR(a b, 101)"])
def test_what_postgresql_cannot_run_is_invalid_params(stores: Stores, query: str) -> None:
    with pytest.raises(InvalidParams, match="not supported by the PostgreSQL store") as caught:
        stores.store.search(query)
    assert caught.value.code == -32602 and caught.value.data["field"] == "query"


def test_filters_find_the_same_entries(stores: Stores, root: Path) -> None:
    corpus(root)
    stores.refresh()
    a_path = str(root / "--home-user-project--" / "a.jsonl")
    for filters in (
        {},
        {"cwd": PROJECT},
        {"cwd": OTHER},
        {"cwd": "/nowhere"},
        {"session": "sid-b"},
        {"session": a_path},
        {"session": "no-such-session"},
        {"roles": ["user"]},
        {"roles": ["assistant", "toolResult"]},
        {"roles": ["compactionSummary", "branchSummary", "custom"]},
        {"types": ["compaction", "custom_message"]},
        {"types": ["message"], "cwd": PROJECT, "roles": ["user"]},
        {"since_ms": BASE_MS + 5_000},
        {"until_ms": BASE_MS + 5_000},
        {"since_ms": BASE_MS + 3_000, "until_ms": BASE_MS + 22_000, "cwd": PROJECT},
        {"roles": []},
        {"types": []},
    ):
        for query in ("tree", "sess* OR tree"):
            expected = sorted(found(stores.files.search(query, limit=500, **filters)))
            assert sorted(found(stores.store.search(query, limit=500, **filters))) == expected, filters
    assert found(stores.store.search("tree", roles=["user"], cwd=PROJECT))  # not only empty pages


# --------------------------------------------------------------------------- paging


def many(root: Path, count: int, name: str = "s", word: str = "needle") -> Path:
    entries, parent = [], None
    for number in range(count):
        entry_id = f"{number:08x}"
        entries.append(message(entry_id, parent, number, "user", f"{word} " + "x " * (number % 7)))
        parent = entry_id
    return write_session(root, PROJECT, name, *entries)


@pytest.mark.parametrize("window", [10_000, 7, 1])
def test_pages_cover_every_hit_once(root: Path, tmp_path: Path, pg_dsn: str, window: int) -> None:
    many(root, 45)
    both = Stores(root, tmp_path / "cache", pg_dsn, rank_window=window)
    try:
        both.refresh()
        pages, cursor = [], None
        while True:
            page = both.store.search("needle", limit=20, cursor=cursor)
            pages.append([hit.entry_id for hit in page.hits])
            cursor = page.cursor
            if cursor is None:
                break
        assert [len(hits) for hits in pages] == [20, 20, 5]
        assert sorted(entry_id or "" for hits in pages for entry_id in hits) == [f"{n:08x}" for n in range(45)]
    finally:
        both.close()


def test_within_one_window_pages_follow_the_ranking(stores: Stores, root: Path) -> None:
    many(root, 45)
    stores.refresh()
    whole = stores.store.search("needle", limit=45)
    assert whole.cursor is None and len(whole.hits) == 45
    assert [hit.entry_id for hit in every_hit(stores.store, "needle", limit=10)] == [h.entry_id for h in whole.hits]
    scores = [hit.score for hit in whole.hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]


def test_entries_indexed_while_paging_do_not_shift_the_pages(stores: Stores, root: Path) -> None:
    path = many(root, 30)
    stores.refresh()
    first = stores.store.search("needle", limit=10)
    with open(path, "ab") as out:
        for n in range(5):
            out.write(line(message(f"n{n:07x}", "0000001d", 100 + n, "user", "needle needle needle")))
    stores.refresh()
    rest = every_hit(stores.store, "needle", limit=10, cursor=first.cursor)
    seen = [hit.entry_id for hit in first.hits] + [hit.entry_id for hit in rest]
    assert sorted(seen) == [f"{n:08x}" for n in range(30)]
    assert len(stores.store.search("needle", limit=100).hits) == 35


def test_a_cursor_belongs_to_its_query_and_filters(stores: Stores, root: Path) -> None:
    many(root, 30)
    stores.refresh()
    cursor = stores.store.search("needle", limit=10).cursor
    assert cursor is not None
    for other in ({"query": "other"}, {"query": "needle", "roles": ["user"]}, {"query": "needle", "syntax": "plain"}):
        with pytest.raises(InvalidParams, match="another query"):
            stores.store.search(**{"limit": 10, **other}, cursor=cursor)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- keeping up with the store


def store_rows(dsn: str) -> list[tuple[int, int, str | None]]:
    with psycopg.connect(dsn) as connection:
        return [
            (int(sid), int(off), entry_id)
            for sid, off, entry_id in connection.execute("SELECT sid, off, entry_id FROM sessiontree.texts ORDER BY seq")
        ]


def test_a_refresh_indexes_only_what_was_added(stores: Stores, root: Path, pg_dsn: str) -> None:
    corpus(root)
    stores.push_all()
    first = stores.store.refresh()
    assert (first.files_seen, first.files_reindexed, first.files_unchanged, first.entries_added) == (3, 3, 0, 15)
    again = stores.store.refresh()
    assert (again.files_seen, again.files_unchanged, again.entries_added, again.bytes_read) == (3, 3, 0, 0)

    storage = stores.backend.load(root / "--home-user-project--" / "b.jsonl", [])
    added = line(message("b4", "b3", 23, "user", "a fresh zebra"))
    storage.storage.append(added)
    before = store_rows(pg_dsn)
    grown = stores.store.refresh()
    assert (grown.files_appended, grown.files_unchanged, grown.entries_added, grown.bytes_read) == (1, 2, 1, len(added))
    assert store_rows(pg_dsn)[: len(before)] == before and len(store_rows(pg_dsn)) == len(before) + 1
    assert [hit.entry_id for hit in stores.store.search("zebra").hits] == ["b4"]
    stores.backend.release(storage, root / "--home-user-project--" / "b.jsonl")


def test_an_unfinished_last_line_waits_until_it_is_complete(stores: Stores, root: Path) -> None:
    path = write_session(root, PROJECT, "s", message("e1", None, 1, "user", "first words"))
    stores.push_all()
    stores.store.refresh()
    storage = stores.backend.load(path, [])
    whole = line(message("e2", "e1", 2, "user", "second zebra"))
    storage.storage.append(whole[:30])
    assert stores.store.refresh().entries_added == 0
    assert stores.store.search("zebra").hits == []
    assert stores.store.refresh().files_unchanged == 1  # nothing new: not read again
    storage.storage.append(whole[30:])
    assert stores.store.refresh().entries_added == 1
    assert [hit.entry_id for hit in stores.store.search("zebra").hits] == ["e2"]
    stores.backend.release(storage, path)


def test_a_session_no_longer_served_leaves_the_index(stores: Stores, root: Path, pg_dsn: str) -> None:
    corpus(root)
    stores.refresh()
    with psycopg.connect(pg_dsn, autocommit=True) as connection:  # as a migration keeps the original
        connection.execute(
            "UPDATE sessiontree.sessions SET name = name || '.v2.bak' WHERE name LIKE '%%/b.jsonl'"
        )
        connection.execute("DELETE FROM sessiontree.sessions WHERE name LIKE '%%/c.jsonl'")
    stats = stores.store.refresh()
    assert (stats.files_seen, stats.files_removed) == (1, 1)  # the deleted one went by itself
    assert {hit.path.rsplit("/", 1)[1] for hit in stores.store.search("tree", limit=100).hits} == {"a.jsonl"}
    with psycopg.connect(pg_dsn) as connection:
        assert connection.execute("SELECT count(DISTINCT sid) FROM sessiontree.texts").fetchone() == (1,)


def test_rows_rewritten_shorter_are_indexed_afresh(stores: Stores, root: Path, pg_dsn: str) -> None:
    path = write_session(root, PROJECT, "s", message("e1", None, 1, "user", "old words"), message("e2", "e1", 2, "user", "more"))
    stores.refresh()
    header = path.read_bytes().split(b"\n")[0] + b"\n"
    new = header + line(message("f1", None, 1, "user", "new"))
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        connection.execute("DELETE FROM sessiontree.lines")
        connection.execute("INSERT INTO sessiontree.lines (sid, off, data) SELECT sid, 0, %s FROM sessiontree.sessions", (header,))
        connection.execute(
            "INSERT INTO sessiontree.lines (sid, off, data) SELECT sid, %s, %s FROM sessiontree.sessions",
            (len(header), new[len(header) :]),
        )
        connection.execute("UPDATE sessiontree.sessions SET size = %s", (len(new),))
    stats = stores.store.refresh()
    assert (stats.files_reindexed, stats.entries_added) == (1, 1)
    assert stores.store.search("old").hits == [] and [h.entry_id for h in stores.store.search("new").hits] == ["f1"]


def test_two_refreshes_at_once_index_each_entry_once(
    stores: Stores, root: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in "pqr":
        many(root, 300, name=name)
    stores.push_all()
    monkeypatch.setattr(search_module, "BATCH_BYTES", 2000)  # many small transactions, to interleave
    others = [PostgresSearch(pg_dsn, root, stores.backend.connection, stores.backend.db) for _ in range(2)]
    start = threading.Barrier(2)
    results: list[Any] = []

    def refresh(index: PostgresSearch) -> None:
        start.wait()
        results.append(index.refresh())

    threads = [threading.Thread(target=refresh, args=(index,)) for index in others]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for index in others:
        index.close()
    rows = store_rows(pg_dsn)
    assert len(rows) == 900 and len(set(rows)) == 900
    assert sum(stats.entries_added for stats in results) == 900
    assert len(stores.store.search("needle", limit=500).hits) == 500


def test_the_first_refresh_reads_a_session_the_second_sees_unchanged(stores: Stores, root: Path) -> None:
    corpus(root)
    stores.push_all()
    other = PostgresSearch(stores.backend.db.dsn, root, stores.backend.connection, stores.backend.db)
    try:
        assert other.refresh().entries_added == 15
        assert stores.store.refresh().files_unchanged == 3  # the index is the store's, not the daemon's
    finally:
        other.close()


def test_a_cancelled_refresh_keeps_what_it_indexed(stores: Stores, root: Path, pg_dsn: str) -> None:
    corpus(root)
    stores.push_all()
    asked = iter([False, True])
    stats = stores.store.refresh(cancelled=lambda: next(asked, True))
    assert stats.cancelled and stats.files_seen == 1
    assert stores.store.refresh().files_seen == 3
    assert len(store_rows(pg_dsn)) == 15


# --------------------------------------------------------------------------- the leaf's path


def branched(root: Path) -> Path:
    return write_session(
        root,
        PROJECT,
        "t",
        message("r", None, 1, "user", "needle root"),
        message("x1", "r", 2, "user", "needle left"),
        message("y1", "r", 3, "user", "needle right"),
        message("y2", "y1", 4, "user", "needle right again"),
    )


def test_hits_say_whether_they_are_on_the_path_of_the_last_entry(stores: Stores, root: Path) -> None:
    branched(root)
    stores.refresh()
    on_path = {hit.entry_id: hit.on_leaf_path for hit in stores.store.search("needle").hits}
    assert on_path == {"r": True, "x1": False, "y1": True, "y2": True}
    assert on_path == {hit.entry_id: hit.on_leaf_path for hit in stores.files.search("needle").hits}


def test_an_open_sessions_own_leaf_decides(stores: Stores, root: Path) -> None:
    path = branched(root)
    stores.refresh()
    leaf = {str(path): {"r", "x1"}}
    hits = stores.store.search("needle", leaf_path=leaf.get).hits
    assert {hit.entry_id: hit.on_leaf_path for hit in hits} == {"r": True, "x1": True, "y1": False, "y2": False}


# --------------------------------------------------------------------------- words


def test_words_are_cut_as_fts5_cuts_them() -> None:
    assert [word for _, _, word in words("src/echo.py foo-bar Café e\u0301te x_y 3.14 \ue000k")] == [
        "src", "echo", "py", "foo", "bar", "cafe", "ete", "x", "y", "3", "14", "\ue000k",
    ]
    assert tsvector("") == ""
    assert tsvector("b a b") == "'^':1 'b':2,4 'a':3"


def test_a_huge_text_is_indexed_within_postgresqls_limits(stores: Stores, root: Path) -> None:
    huge = " ".join(f"word{n}" for n in range(200_000)) + " " + "same " * 20_000 + "tailword"
    write_session(root, PROJECT, "h", message("h1", None, 1, "toolResult", text(huge)), message("h2", "h1", 2, "user", "tailword"))
    stores.refresh()
    assert {hit.entry_id for hit in stores.store.search("word7").hits} == {"h1"}
    assert {hit.entry_id for hit in stores.store.search("tailword").hits} >= {"h2"}


# --------------------------------------------------------------------------- over stdio


def test_a_daemon_with_a_store_answers_search_from_the_database(tmp_path: Path, pg_dsn: str) -> None:
    with daemon_pool() as start:
        daemon = start("--sessions-dir", str(sessions_root(tmp_path)), "--store", pg_dsn)
        # The store needs no cache directory for its index. Start-up is bound apart from answers.
        init = {"processId": None, "capabilities": {}, "initializationOptions": {"indexDir": False}}
        daemon.send_message(request(0, "initialize", init))
        assert "result" in daemon.next(60.0)
        daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        created = daemon.call(request(1, "session/create", {"cwd": PROJECT}))["result"]
        session_id = created["sessionId"]
        for number, words_ in enumerate(["a zebra crossing", "the zebra again and more"]):
            entry_ = {"type": "message", "message": {"role": "user", "content": words_, "timestamp": BASE_MS}}
            answer = daemon.call(request(10 + number, "session/append", {"sessionId": session_id, "entry": entry_}))
            assert "result" in answer, answer

        first = daemon.call(request(2, "session/search", {"query": "zebra", "session": session_id}))["result"]
        assert sorted(hit["snippet"] for hit in first["hits"]) == ["a zebra crossing", "the zebra again and more"]
        hit = first["hits"][0]
        assert (hit["path"], hit["sessionId"], hit["cwd"], hit["type"], hit["role"]) == (
            created["path"], session_id, PROJECT, "message", "user",
        )
        assert hit["onLeafPath"] is True and hit["highlights"] and hit["score"] > 0
        assert (first["indexed"]["filesReindexed"], first["indexed"]["entriesAdded"]) == (1, 2)

        again = daemon.call(request(3, "session/search", {"query": "cross*", "syntax": "plain"}))["result"]
        assert [hit["snippet"] for hit in again["hits"]] == ["a zebra crossing"]
        assert (again["indexed"]["filesUnchanged"], again["indexed"]["entriesAdded"]) == (1, 0)

        bad = daemon.call(request(4, "session/search", {"query": "foo-bar"}))
        assert bad["error"]["code"] == -32602 and "plain syntax" in bad["error"]["message"]


# --------------------------------------------------------------------------- least privileges


@pytest.fixture
def owner_dsn(pg_dsn: str) -> str:
    """As test_postgres_roles: the test's database for its owner alone, and a role with no privileges."""
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        if connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (roles._role(pg_dsn),)).fetchone() is None:
            connection.execute(f"CREATE ROLE {roles._role(pg_dsn)} LOGIN")
        connection.execute(f'REVOKE ALL ON DATABASE "{roles._database(pg_dsn)}" FROM PUBLIC')
    return pg_dsn


def test_the_documented_privileges_are_enough_to_search(owner_dsn: str, root: Path) -> None:
    corpus(root)
    owner = PostgresBackend(root, owner_dsn)
    for path in sorted(root.rglob("*.jsonl")):
        push(owner, path)  # the owner makes the schema and the sessions
    roles._grant_documented(owner_dsn)
    agent = SessionService(ServiceConfig(sessions_dir=root, store=roles._as_role(owner_dsn)))
    try:
        agent.backend.start()
        indexed = agent.refresh_search()
        result = agent.search(SearchParams("tree", roles=["user"]), indexed)
        assert (indexed.files_reindexed, len(result.hits)) == (3, 3)
        with owner.db.errors(), owner.connection().transaction():  # as a migration keeps the original
            owner.connection().execute("UPDATE sessiontree.sessions SET name = name || '.v2.bak' WHERE name LIKE '%%/b.jsonl'")
        assert agent.refresh_search().files_removed == 1  # a DELETE from the index
    finally:
        agent.close_all()
        owner.close()


@pytest.mark.parametrize("query", ["needle", "needle gamma", '"needle gamma"', "ne*", "alpha OR gamma"])
def test_a_word_repeated_thousands_of_times_gets_the_file_stores_snippet(stores: Stores, root: Path, query: str) -> None:
    body = "alpha " * 2_000 + "needle. beta " + "needle gamma " * 3_000 + "end"
    write_session(root, PROJECT, "r", message("r1", None, 1, "user", body))
    stores.refresh()
    (expected,) = stores.files.search(query).hits
    (hit,) = stores.store.search(query).hits
    assert (hit.snippet, hit.highlights) == (expected.snippet, expected.highlights)
