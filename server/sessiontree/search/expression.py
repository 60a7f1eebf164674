"""A user's query as one self-contained FTS5 expression, so that the filters ANDed after it bind
to all of it.

A search runs `( query ) AND meta : ( filter tokens )`. Spliced in as text, a query could close
the parenthesis it is put in (`x ) OR ( x` makes `( x ) OR ( x ) AND meta : …`, and AND binds
tighter than OR), or end the expression early with a NUL (FTS5 reads the match as a C string).
So the query is cut into tokens exactly as FTS5's lexer cuts them (`fts5ExprGetToken`), its
parentheses must pair up among themselves, and the expression is rebuilt from those tokens: what
goes into the match is only ever whole tokens of the query, inside a group it cannot leave.
"""

from __future__ import annotations

from typing import Final

_SPACE: Final = frozenset(" \t\n\r")  # FTS5's whitespace (not \f or \v: those are syntax errors there)
_PUNCTUATION: Final = frozenset("(){}:,+*-^")


class QuerySyntaxError(ValueError):
    """The query is not one FTS5 expression standing on its own; the message says why."""


def _bareword(char: str) -> bool:
    """FTS5's bareword characters: ASCII letters, digits, `_`, 0x1A, and everything past ASCII."""
    return ord(char) >= 0x80 or (char.isascii() and (char.isalnum() or char in "_\x1a"))


def tokens(query: str) -> list[str]:
    """The query's tokens as FTS5 cuts them, each as written (a quoted string with its quotes);
    QuerySyntaxError for a character FTS5 has no token for, an unterminated string, or a NUL
    (where FTS5 would stop reading)."""
    found: list[str] = []
    at, end = 0, len(query)
    while at < end:
        char = query[at]
        if char in _SPACE:
            at += 1
            continue
        if char in _PUNCTUATION:
            stop = at + 1
        elif char == '"':
            stop = _string_end(query, at)
        elif _bareword(char):
            stop = at + 1
            while stop < end and _bareword(query[stop]):
                stop += 1
        else:
            shown = "NUL" if char == "\0" else repr(char)
            raise QuerySyntaxError(f"syntax error near {shown}")
        found.append(query[at:stop])
        at = stop
    return found


def _string_end(query: str, start: int) -> int:
    """Where the quoted string opened at `start` ends (past its closing quote; `""` is a quote)."""
    at = start + 1
    while True:
        close = query.find('"', at)
        nul = query.find("\0", at, close if close >= 0 else len(query))
        if close < 0 or nul >= 0:
            raise QuerySyntaxError("unterminated string")
        if query[close + 1 : close + 2] != '"':
            return close + 1
        at = close + 2


def self_contained(query: str) -> str:
    """The query rebuilt from its tokens, one space apart; QuerySyntaxError unless every `(`
    is closed by a `)` of the query and no `)` closes what the query did not open."""
    parts = tokens(query)
    depth = 0
    for token in parts:
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise QuerySyntaxError("a ')' closes no '(' of the query")
    if depth:
        raise QuerySyntaxError("a '(' is not closed")
    return " ".join(parts)
