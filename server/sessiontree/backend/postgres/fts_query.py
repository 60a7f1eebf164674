"""FTS5's query syntax as a PostgreSQL tsquery: phrases, prefixes, AND / OR / NOT, NEAR, `^` and
column filters, parsed as SQLite parses them (a query SQLite refuses never gets here), over the
words fts.py cuts. The tsquery is given to PostgreSQL as a literal, never parsed by a text search
configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ...errors import InvalidParams
from .fts import MAX_NEAR, Phrase, words


class _Empty:
    """A phrase without a word (`"("`): FTS5 leaves it out of the expression around it."""


class _Nothing:
    """What matches no entry: a column filter that leaves out the text."""


EMPTY: Final = _Empty()
NOTHING: Final = _Nothing()
Node = str | _Empty | _Nothing  # a tsquery, or one of the two


@dataclass(slots=True)
class Compiled:
    """A query as PostgreSQL runs it: `match` (None: nothing can match), `rank` (its positive
    phrases, ORed: ts_rank of a query with NOT ranks every hit alike), and the phrases a snippet
    highlights."""

    match: str | None
    rank: str | None
    phrases: list[Phrase]


_SPACE: Final = frozenset(" \t\n\r\f\v")
_PUNCTUATION: Final = frozenset("(){}:,+*-^")
_COLUMNS: Final = ("text", "meta")  # the file store's FTS5 columns; only `text` holds words


def _bareword(char: str) -> bool:
    return ord(char) >= 0x80 or (char.isascii() and (char.isalnum() or char in "_\x1a"))


def _lex(expression: str) -> list[tuple[str, str]]:
    """FTS5's tokens: (kind, text); kind is a punctuation character, `"` (a quoted string, its
    quotes undone), `w` (a bareword) or AND/OR/NOT."""
    tokens: list[tuple[str, str]] = []
    at = 0
    while at < len(expression):
        char = expression[at]
        if char in _SPACE:
            at += 1
        elif char in _PUNCTUATION:
            tokens.append((char, char))
            at += 1
        elif char == '"':
            end = at + 1
            text = []
            while end < len(expression):
                if expression[end] == '"':
                    if expression[end + 1 : end + 2] == '"':
                        text.append('"')
                        end += 2
                        continue
                    break
                text.append(expression[end])
                end += 1
            tokens.append(('"', "".join(text)))
            at = end + 1
        else:
            end = at
            while end < len(expression) and _bareword(expression[end]):
                end += 1
            if end == at:
                raise _unsupported(expression, f"the character {char!r}")
            word = expression[at:end]
            tokens.append((word if word in ("AND", "OR", "NOT") else "w", word))
            at = end
    return tokens


def _unsupported(query: str, what: str) -> InvalidParams:
    return InvalidParams(
        f"invalid search query {query!r}: {what} is not supported by the PostgreSQL store (use plain syntax)",
        field="query",
        got=query,
    )


class _Parser:
    """FTS5's grammar, for expressions SQLite has already accepted: OR binds loosest, then AND,
    then NOT; words side by side are ANDed tighter than any of them."""

    def __init__(self, query: str, expression: str) -> None:
        self.query = query
        self.tokens = _lex(expression)
        self.at = 0
        self.phrases: list[Phrase] = []  # every phrase not under a NOT's right side
        self._negated = 0

    def peek(self, ahead: int = 0) -> str | None:
        at = self.at + ahead
        return self.tokens[at][0] if at < len(self.tokens) else None

    def take(self, kind: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens) or (kind is not None and self.tokens[self.at][0] != kind):
            raise _unsupported(self.query, "this query")
        self.at += 1
        return self.tokens[self.at - 1]

    def parse(self) -> Node:
        node = self.or_()
        if self.at != len(self.tokens):
            raise _unsupported(self.query, "this query")
        return node

    def or_(self) -> Node:
        items = [self.and_()]
        while self.peek() == "OR":
            self.take()
            items.append(self.and_())
        return _or(items)

    def and_(self) -> Node:
        items = [self.not_()]
        while self.peek() == "AND":
            self.take()
            items.append(self.not_())
        return _and(items)

    def not_(self) -> Node:
        node = self.primary()
        negated: list[Node] = []
        while self.peek() == "NOT":
            self.take()
            self._negated += 1
            negated.append(self.primary())
            self._negated -= 1
        return _not(node, negated) if negated else node

    def primary(self) -> Node:
        if self.peek() == "(":
            self.take()
            node = self.or_()
            self.take(")")
            return node
        if self._at_columns():
            keep = self.columns()
            if self.peek() == "(":
                self.take()
                node = self.or_()
                self.take(")")
                return node if keep else NOTHING
            first = self.nearset()
            items = [first if keep else NOTHING]
        else:
            items = [self.nearset()]
        while self.peek() in ("w", '"', "^", "-", "{"):
            items.append(self.columns_then_nearset() if self._at_columns() else self.nearset())
        return _and(items)

    def _at_columns(self) -> bool:
        kind = self.peek()
        return kind in ("-", "{") or (kind in ("w", '"') and self.peek(1) == ":")

    def columns(self) -> bool:
        """A column filter and its colon; whether it keeps the text column."""
        exclude = self.peek() == "-"
        if exclude:
            self.take()
        names = []
        if self.peek() == "{":
            self.take()
            while self.peek() != "}":
                names.append(self.take()[1].lower())
            self.take("}")
        else:
            names.append(self.take()[1].lower())
        self.take(":")
        if any(name not in _COLUMNS for name in names):
            raise _unsupported(self.query, "a column other than text")
        return ("text" in names) != exclude

    def columns_then_nearset(self) -> Node:
        keep = self.columns()
        node = self.nearset()
        return node if keep else NOTHING

    def nearset(self) -> Node:
        if self.peek() == "^":
            self.take()
            phrase = self.phrase(first=True)
            return self._note(phrase)
        if self.peek() == "w" and self.peek(1) == "(":  # SQLite took it: the word is NEAR
            return self.near()
        return self._note(self.phrase())

    def _note(self, phrase: Phrase | _Empty) -> Node:
        if isinstance(phrase, _Empty):
            return EMPTY
        if not self._negated:
            self.phrases.append(phrase)
        return phrase.tsquery()

    def phrase(self, first: bool = False) -> Phrase | _Empty:
        lexemes: list[str] = []
        prefix: list[bool] = []
        while True:
            kind, text = self.take()
            if kind not in ("w", '"'):
                raise _unsupported(self.query, "this query")
            found = [lexeme for _, _, lexeme in words(text)]
            star = self.peek() == "*"
            if star:
                self.take()
            lexemes += found
            prefix += [False] * len(found)
            if star and found:
                prefix[-1] = True
            if self.peek() != "+":
                break
            self.take()
        if not lexemes:
            return EMPTY
        return Phrase(tuple(lexemes), tuple(prefix), first)

    def near(self) -> Node:
        self.take("w")
        self.take("(")
        phrases: list[Phrase] = []
        while self.peek() in ("w", '"'):
            found = self.phrase()
            if isinstance(found, Phrase):
                phrases.append(found)
        distance = 10
        if self.peek() == ",":
            self.take()
            distance = int(self.take("w")[1])
        self.take(")")
        if len(phrases) > 2:
            raise _unsupported(self.query, "NEAR of more than two phrases")
        if distance > MAX_NEAR:
            raise _unsupported(self.query, f"a NEAR distance over {MAX_NEAR}")
        if not self._negated:
            self.phrases += phrases
        if not phrases:
            return EMPTY
        if len(phrases) == 1:
            return phrases[0].tsquery()
        one, other = phrases[0].tsquery(), phrases[1].tsquery()
        pairs = [f"{a} <{gap}> {b}" for gap in range(1, distance + 2) for a, b in ((one, other), (other, one))]
        return balanced(pairs, "|")


def balanced(items: list[str], operator: str) -> str:
    """`items` joined by `operator` as a balanced tree: PostgreSQL parses and runs a tsquery
    recursively, and a chain of thousands of terms nested one in the next overflows its stack."""
    if len(items) == 1:
        return items[0]
    middle = len(items) // 2
    return f"({balanced(items[:middle], operator)} {operator} {balanced(items[middle:], operator)})"


def _and(items: list[Node]) -> Node:
    kept = [item for item in items if not isinstance(item, _Empty)]
    if not kept:
        return EMPTY
    if any(isinstance(item, _Nothing) for item in kept):
        return NOTHING
    return balanced([str(item) for item in kept], "&")


def _or(items: list[Node]) -> Node:
    """Empty and Nothing add no match to the others (all Empty: Empty; else all Nothing: Nothing)."""
    kept = [item for item in items if isinstance(item, str)]
    if kept:
        return balanced(kept, "|")
    return NOTHING if any(isinstance(item, _Nothing) for item in items) else EMPTY


def _not(left: Node, negated: list[Node]) -> Node:
    """`left NOT a NOT b…`: an Empty or Nothing on the right takes nothing away."""
    if isinstance(left, _Empty | _Nothing):
        return left
    return balanced([left, *(f"!{item}" for item in negated if isinstance(item, str))], "&")


def compile_expression(query: str, expression: str) -> Compiled:
    """An FTS5 expression (already checked by SQLite: see `search.query.compile_query`) as
    tsqueries; InvalidParams for what PostgreSQL cannot run (NEAR of more than two phrases)."""
    parser = _Parser(query, expression)
    node = parser.parse()
    if not isinstance(node, str):
        return Compiled(None, None, [])
    unique = list(dict.fromkeys(parser.phrases))
    rank = balanced([phrase.tsquery() for phrase in unique], "|") if unique else None
    return Compiled(node, rank, unique)


# --------------------------------------------------------------------------- snippets
