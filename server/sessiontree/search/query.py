"""Queries: their syntax, the filters, ranking in bounded windows, cursors and snippets.

The syntax is FTS5's own: terms are ANDed, `"a phrase"`, `prefix*`, `AND`, `OR`, `NOT`,
`NEAR(a b, 5)`, parentheses, `^` for the first token. `plain` syntax quotes every
whitespace-separated term (a trailing `*` still asks for a prefix), so text typed into a search
box never is a syntax error. Either way the expression is rebuilt from its tokens and must be
self-contained (`expression.py`): the filters ANDed to it bind to all of it.

Filters by session, cwd, role and type are tokens ANDed into the match (see `text.py`); the time
range is checked on each match. Without `roles`, entries of the role `system` are left out (NOT
their role's token): pi repeats its whole prompt in every session. Ranking is bm25 (of the text) within windows of matches: the
newest `window` matches (by the order they were indexed, which follows the order they were
written; counted before the time range) are ranked first, then the next older window, and so
on. A query with fewer matches than a window (nearly every query) is ranked whole; one matching
half of a gigabyte of sessions costs a window's ranking, not a full sort. A cursor pins the
newest row of its first page, so entries indexed while a client pages do not shift the pages it
has not read yet (they show up in a new search).
"""

from __future__ import annotations

import base64
import hashlib
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from .. import jsonfmt
from ..errors import InvalidParams
from .database import TOKENIZER
from .expression import QuerySyntaxError, self_contained
from .model import Syntax
from .text import (
    CLOSE_MARK,
    META_MARK,
    OPEN_MARK,
    SYSTEM_ROLE,
    cwd_token,
    file_token,
    role_token,
    scrub,
    type_token,
)

MAX_LIMIT: Final = 500
SNIPPET_TOKENS: Final = 20
_CURSOR_VERSION: Final = 1
_WHITESPACE: Final = re.compile(r"\s+")


# --------------------------------------------------------------------------- the query


def compile_query(query: str, syntax: Syntax) -> str:
    """The FTS5 expression for `query`; InvalidParams when it is empty or not valid."""
    if syntax not in ("fts", "plain"):
        raise InvalidParams(f'invalid params for session/search: syntax must be "fts" or "plain", got {syntax!r}', field="syntax")
    if not isinstance(query, str) or not query.strip():
        raise InvalidParams("invalid params for session/search: the search query is empty", field="query")
    query = scrub(query).replace("\0", " ")  # the tokenizer cuts words at a NUL, as at a space
    expression = plain_expression(query) if syntax == "plain" else query
    try:
        expression = self_contained(expression)
    except QuerySyntaxError as exc:
        raise _syntax_error(query, str(exc)) from None
    _check_syntax(expression, query)
    return expression


def plain_expression(text: str) -> str:
    """Every term quoted (quotes inside doubled); `term*` stays a prefix query."""
    terms = []
    for word in text.split():
        stem = word.rstrip("*")
        suffix = "*" if stem and stem != word else ""
        terms.append('"' + (stem or word).replace('"', '""') + '"' + suffix)
    return " ".join(terms)


def _check_syntax(expression: str, query: str) -> None:
    """Parse the expression, as a search runs it, against an empty in-memory table of the same
    shape: any error there is the query's own, never the index's (which is not touched)."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute(f"CREATE VIRTUAL TABLE fts USING fts5(text, meta, tokenize='{TOKENIZER}')")
        probe.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (scoped(expression, Filters(), [0]),)).fetchall()
    except sqlite3.Error as exc:
        raise _syntax_error(query, str(exc)) from None
    finally:
        probe.close()


def _syntax_error(query: str, why: str) -> InvalidParams:
    hint = ' (quote terms with punctuation, e.g. "foo-bar", or use plain syntax)'
    return InvalidParams(f"invalid search query {query!r}: {why}{hint}", field="query", got=query)


# --------------------------------------------------------------------------- filters


@dataclass(frozen=True, slots=True)
class Filters:
    """What a hit must also be. `since_ms` is inclusive, `until_ms` exclusive; `session` is a
    session id (the header's) or a session file's path."""

    cwd: str | None = None
    session: str | None = None
    roles: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    @property
    def timed(self) -> bool:
        return self.since_ms is not None or self.until_ms is not None

    @property
    def empty(self) -> bool:
        """An empty list of roles or types: nothing can match."""
        return self.roles == () or self.types == ()

    def time_sql(self) -> tuple[str, list[Any]]:
        """The time range as conditions on `e` (entries); "" without one."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.since_ms is not None:
            clauses.append(" AND e.ts_ms >= ?")
            params.append(self.since_ms)
        if self.until_ms is not None:
            clauses.append(" AND e.ts_ms < ?")
            params.append(self.until_ms)
        return "".join(clauses), params


def scoped(expression: str, filters: Filters, file_ids: Sequence[int] | None) -> str:
    """The expression as it is run: ANDed with the tokens of the filters (the files of the
    session asked for, the cwd, roles, types) in the meta column, and held to the text column
    when it could match a meta token."""
    parts = [f"text : ( {expression} )" if META_MARK in expression else f"( {expression} )"]
    if file_ids is not None:
        parts.append(_any_of([file_token(file_id) for file_id in file_ids]))
    if filters.cwd is not None:
        parts.append(_any_of([cwd_token(filters.cwd)]))
    if filters.roles is not None:
        parts.append(_any_of([role_token(role) for role in filters.roles]))
    if filters.types is not None:
        parts.append(_any_of([type_token(kind) for kind in filters.types]))
    expression = " AND ".join(parts)
    if filters.roles is None:  # system prompts, repeated in every session, only when asked for
        expression += f" NOT {_any_of([role_token(SYSTEM_ROLE)])}"
    return expression


def _any_of(tokens: list[str]) -> str:
    return f"meta : ( {' OR '.join(tokens)} )"


def session_file_ids(db: sqlite3.Connection, session: str) -> list[int]:
    """The indexed files of a session id (several files may share one) or of a path."""
    return [
        row[0] for row in db.execute("SELECT file_id FROM files WHERE session_id = ? OR path = ?", (session, session))
    ]


def filters_of(
    cwd: str | None,
    session: str | None,
    roles: Sequence[str] | None,
    types: Sequence[str] | None,
    since_ms: int | None,
    until_ms: int | None,
) -> Filters:
    for name, text in (("cwd", cwd), ("session", session)):
        if text is not None and not isinstance(text, str):
            raise InvalidParams(f"invalid params for session/search: {name} must be a string, got {text!r}", field=name)
        _no_nul(name, text)
    for name, value in (("since_ms", since_ms), ("until_ms", until_ms)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidParams(f"invalid params for session/search: {name} must be an integer (Unix ms), got {value!r}", field=name)
    return Filters(scrub(cwd), scrub(session), _strings("roles", roles), _strings("types", types), since_ms, until_ms)


# The params of `session/search` as JSON: each field's JSON types (besides null, which for every
# optional field means "absent": the default). Checked before the params are structured, which
# would otherwise take a string for a list of its characters.
_WIRE_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "query": (str,),
    "syntax": (str,),
    "cwd": (str,),
    "session": (str,),
    "roles": (list,),
    "types": (list,),
    "since": (str,),
    "until": (str,),
    "limit": (int,),
    "cursor": (str,),
    "workDoneToken": (str, int),
}
_REQUIRED: Final = frozenset({"query"})


def check_wire_params(params: Any) -> Any:
    """`session/search`'s params with every null optional field left out (the default), or
    InvalidParams naming the first field of the wrong JSON type; anything not an object as it is
    (the structuring refuses it). One check for every store: it is the wire's."""
    if not isinstance(params, dict):
        return params
    checked = {}
    for name, value in params.items():
        allowed = _WIRE_TYPES.get(name)
        if allowed is None or (value is None and name not in _REQUIRED):
            if allowed is None:
                checked[name] = value  # an unknown field: the structuring says what it says of it
            continue
        if isinstance(value, bool) or not isinstance(value, allowed):
            kinds = " or ".join("a list of strings" if kind is list else _JSON_NAMES[kind] for kind in allowed)
            raise InvalidParams(f"invalid params for session/search: {name} must be {kinds}, got {value!r}", field=name, got=value)
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise InvalidParams(f"invalid params for session/search: {name} must be a list of strings, got {value!r}", field=name, got=value)
        checked[name] = value
    if checked.get("syntax", "fts") not in ("fts", "plain"):
        compile_query("", checked["syntax"])  # its error, naming the field
    if "query" not in checked:
        raise InvalidParams("invalid params for session/search: query is missing", field="query")
    return checked


_JSON_NAMES: Final = {str: "a string", int: "an integer"}


@dataclass(frozen=True, slots=True)
class Request:
    """A search request checked and compiled, as every store takes it."""

    expression: str
    filters: Filters
    key: str  # what a cursor must belong to
    position: Position | None  # where the page starts (None: the first page)


def request_of(
    query: str,
    syntax: Syntax,
    cwd: str | None,
    session: str | None,
    roles: Sequence[str] | None,
    types: Sequence[str] | None,
    since_ms: int | None,
    until_ms: int | None,
    limit: int,
    cursor: str | None,
) -> Request:
    """Check a search's params in one order for every store (the same bad input, the same error)."""
    expression = compile_query(query, syntax)
    filters = filters_of(cwd, session, roles, types, since_ms, until_ms)
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise InvalidParams(f"invalid params for session/search: limit must be an integer from 1 to {MAX_LIMIT}", field="limit")
    key = query_key(expression, filters)
    return Request(expression, filters, key, decode_cursor(cursor, key) if cursor is not None else None)


def _strings(name: str, values: Sequence[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    if not isinstance(values, list | tuple) or not all(isinstance(value, str) for value in values):
        raise InvalidParams(f"invalid params for session/search: {name} must be a list of strings, got {values!r}", field=name)
    for value in values:
        _no_nul(name, value)
    return tuple(scrub(value) for value in values)


def _no_nul(name: str, text: str | None) -> None:
    """A path, id, role or type never holds a NUL: one there is a mistake, not a filter matching nothing."""
    if text is not None and "\0" in text:
        raise InvalidParams(f"invalid params for session/search: {name} holds a NUL character", field=name, got=text)


# --------------------------------------------------------------------------- cursors


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page starts: in the window of matches with rowid in `[low, high]` (`low` None: not
    yet found), `offset` hits into its ranking."""

    high: int
    low: int | None
    offset: int


def query_key(expression: str, filters: Filters) -> str:
    """What a cursor must belong to: the same expression and filters."""
    return hashlib.blake2b(repr((expression, filters)).encode(), digest_size=8).hexdigest()


def encode_cursor(key: str, position: Position) -> str:
    payload = jsonfmt.dumps(
        {"v": _CURSOR_VERSION, "k": key, "h": position.high, "l": position.low, "o": position.offset}
    )
    return base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, key: str) -> Position:
    """The position a cursor names; InvalidParams for a cursor that is malformed or of another query."""
    try:
        payload = jsonfmt.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        assert isinstance(payload, dict) and payload.get("v") == _CURSOR_VERSION
        high, low, offset = payload["h"], payload["l"], payload["o"]
        assert all(type(v) is int and v >= 0 for v in (high, offset)) and (low is None or type(low) is int)
    except Exception:
        raise InvalidParams("invalid params for session/search: cursor is not one this search returned", field="cursor") from None
    if payload.get("k") != key:
        raise InvalidParams("invalid params for session/search: cursor belongs to another query or other filters", field="cursor")
    return Position(high, low, offset)


# --------------------------------------------------------------------------- ranking


def newest_rowid(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
    return row[0] if row else 0


def window_low(db: sqlite3.Connection, expression: str, high: int, window: int) -> int:
    """The lowest rowid of the `window` newest matches at or below `high` (the time range aside);
    0 when there are fewer: this window reaches the oldest match."""
    row = db.execute(
        "SELECT rowid FROM fts WHERE fts MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        (expression, high, window - 1),
    ).fetchone()
    return row[0] if row else 0


def ranked(
    db: sqlite3.Connection, expression: str, filters: Filters, high: int, low: int, count: int, offset: int
) -> list[tuple[int, float]]:
    """(rowid, bm25 of the text column) of `count` matches in `[low, high]`, best first, from `offset`."""
    where, params = filters.time_sql()
    source = "fts JOIN entries e ON e.rowid = fts.rowid" if filters.timed else "fts"
    return db.execute(
        f"SELECT fts.rowid, bm25(fts, 1.0, 0.0) AS score FROM {source}"
        f" WHERE fts MATCH ? AND fts.rowid BETWEEN ? AND ?{where}"
        " ORDER BY score, fts.rowid LIMIT ? OFFSET ?",
        (expression, low, high, *params, count, offset),
    ).fetchall()


_DETAILS: Final = f"""
SELECT fts.rowid, f.path, f.session_id, f.cwd, e.entry_id, e.parent_id, e.type, e.role, e.timestamp,
       e.ts_ms, e.offset, e.on_path, snippet(fts, 0, '{OPEN_MARK}', '{CLOSE_MARK}', '…', {SNIPPET_TOKENS})
FROM fts JOIN entries e ON e.rowid = fts.rowid JOIN files f ON f.file_id = e.file_id
WHERE fts MATCH ?
"""


def details(db: sqlite3.Connection, expression: str, rowids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """The columns and marked snippet of each of a page's hits, by rowid (a hit a refresh dropped
    meanwhile is missing). A match per hit seeks each term's doclist to the hit; but a prefix
    term's doclist is merged afresh by every match, so those pages take one match over the
    page's span (`+` keeps SQLite from running it once per IN value)."""
    if not rowids:
        return {}
    if "*" not in expression:
        found = (db.execute(_DETAILS + " AND fts.rowid = ?", (expression, rowid)).fetchone() for rowid in rowids)
        return {row[0]: row[1:] for row in found if row is not None}
    rows = db.execute(
        _DETAILS + f" AND fts.rowid BETWEEN ? AND ? AND +fts.rowid IN ({', '.join('?' * len(rowids))})",
        (expression, min(rowids), max(rowids), *rowids),
    )
    return {row[0]: row[1:] for row in rows}


# --------------------------------------------------------------------------- snippets


def split_snippet(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The snippet as one line of plain text, and where its highlights are (code points)."""
    folded = _WHITESPACE.sub(" ", marked).strip()
    text: list[str] = []
    highlights: list[tuple[int, int]] = []
    length = 0
    for number, piece in enumerate(re.split(f"[{OPEN_MARK}{CLOSE_MARK}]", folded)):
        if number % 2 and piece:
            highlights.append((length, length + len(piece)))
        text.append(piece)
        length += len(piece)
    return "".join(text), tuple(highlights)
