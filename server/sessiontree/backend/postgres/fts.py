"""Words, queries and snippets for search in PostgreSQL, cut as the file store's FTS5 index cuts them.

PostgreSQL's text search parser is not used, under any configuration: it keeps `src/echo.py`,
`foo-bar`, URLs and e-mail addresses as single lexemes, so a search for "echo" would not find a
tool call that read `src/echo.py`, as the file store's does. The words are cut here instead, as
FTS5's unicode61 tokenizer (`remove_diacritics 2`) cuts them: runs of letters, digits and
private-use characters (combining accents join the word they follow), lower-cased, with the
diacritics of Latin letters taken off. The indexer writes the tsvector itself, and a query's
terms become the same lexemes in a tsquery that is given as a literal, never parsed by a text
search configuration. Nothing is stemmed, as in FTS5 (and as PostgreSQL's 'simple' dictionary).

A tsvector holds positions up to 16,383, 256 of them per word, and about 1 MiB of distinct words:
longer texts are indexed as far as those limits allow (a later word still matches; a phrase
or NEAR past the 16,383rd word does not).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from ...errors import InvalidParams
from ...search.query import SNIPPET_TOKENS
from ...search.text import CLOSE_MARK, OPEN_MARK

# Letters and digits (`[^\W_]`), private use (a token character to unicode61), combining accents.
_PRIVATE: Final = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
WORD: Final = re.compile(f"(?:[^\\W_]|[{_PRIVATE}\u0300-\u036f])+")
FIRST: Final = "^"  # a lexeme no word can be, at position 1 of every text: `^word` is `'^' <-> 'word'`
MAX_POSITION: Final = 16_383
MAX_POSITIONS: Final = 256  # per lexeme
MAX_LEXEME_BYTES: Final = 2_046
MAX_VECTOR_BYTES: Final = 1_000_000  # below PostgreSQL's 1 MiB of lexemes and positions
MAX_NEAR: Final = 100


def _is_latin(char: str) -> bool:
    code = ord(char)
    return 0xC0 <= code < 0x250 or 0x1E00 <= code < 0x1F00


def fold(word: str) -> str:
    """A word as unicode61 keeps it: lower case, Latin letters without their diacritics."""
    word = word.lower()
    if word.isascii():
        return word
    kept = []
    for char in word:
        if "\u0300" <= char <= "\u036f":
            continue
        kept.append(unicodedata.normalize("NFD", char)[0] if _is_latin(char) else char)
    return "".join(kept)


def words(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, lexeme) of each word of `text`, in order."""
    for match in WORD.finditer(text):
        lexeme = fold(match.group())
        if lexeme:
            yield match.start(), match.end(), lexeme


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(text: str) -> str:
    """The tsvector literal of a text: `^` at position 1, its words from position 2."""
    positions: dict[str, list[int]] = {}
    size = 0
    position = 1
    for _, _, lexeme in words(text):
        position += 1
        found = positions.get(lexeme)
        if found is None:
            cost = len(lexeme.encode("utf-8", "surrogatepass")) + 8
            if cost > MAX_LEXEME_BYTES or size + cost > MAX_VECTOR_BYTES:
                continue
            size += cost
            positions[lexeme] = [min(position, MAX_POSITION)]
        elif len(found) < MAX_POSITIONS and found[-1] < MAX_POSITION:
            found.append(min(position, MAX_POSITION))
            size += 2
    if not positions:
        return ""
    return " ".join(
        [f"{_quoted(FIRST)}:1", *(f"{_quoted(lexeme)}:{','.join(map(str, at))}" for lexeme, at in positions.items())]
    )


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class Phrase:
    """Words in a row; `prefix[i]`: the i-th is a prefix. `first`: it must start the text."""

    lexemes: tuple[str, ...]
    prefix: tuple[bool, ...]
    first: bool = False

    def tsquery(self) -> str:
        parts = [_quoted(FIRST)] if self.first else []
        parts += [_quoted(lexeme) + (":*" if prefix else "") for lexeme, prefix in zip(self.lexemes, self.prefix, strict=True)]
        return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


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
        node = self.and_()
        while self.peek() == "OR":
            self.take()
            node = _or(node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.peek() == "AND":
            self.take()
            node = _and([node, self.not_()])
        return node

    def not_(self) -> Node:
        node = self.primary()
        while self.peek() == "NOT":
            self.take()
            self._negated += 1
            right = self.primary()
            self._negated -= 1
            node = _not(node, right)
        return node

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
        return "(" + " | ".join(pairs) + ")"


def _and(items: list[Node]) -> Node:
    kept = [item for item in items if not isinstance(item, _Empty)]
    if not kept:
        return EMPTY
    if any(isinstance(item, _Nothing) for item in kept):
        return NOTHING
    return kept[0] if len(kept) == 1 else "(" + " & ".join(str(item) for item in kept) + ")"


def _or(left: Node, right: Node) -> Node:
    if isinstance(left, _Empty):
        return right
    if isinstance(right, _Empty):
        return left
    if isinstance(left, _Nothing):
        return right
    if isinstance(right, _Nothing):
        return left
    return f"({left} | {right})"


def _not(left: Node, right: Node) -> Node:
    if isinstance(left, _Empty | _Nothing) or isinstance(right, _Empty | _Nothing):
        return left
    return f"({left} & !{right})"


def compile_expression(query: str, expression: str) -> Compiled:
    """An FTS5 expression (already checked by SQLite: see `search.query.compile_query`) as
    tsqueries; InvalidParams for what PostgreSQL cannot run (NEAR of more than two phrases)."""
    parser = _Parser(query, expression)
    node = parser.parse()
    if not isinstance(node, str):
        return Compiled(None, None, [])
    unique = list(dict.fromkeys(parser.phrases))
    rank = " | ".join(phrase.tsquery() for phrase in unique) or None
    return Compiled(node, rank, unique)


# --------------------------------------------------------------------------- snippets


def _matches(phrase: Phrase, found: list[tuple[int, int, str]], at: int) -> bool:
    if phrase.first and at != 0:
        return False
    if at + len(phrase.lexemes) > len(found):
        return False
    for offset, (lexeme, prefix) in enumerate(zip(phrase.lexemes, phrase.prefix, strict=True)):
        word = found[at + offset][2]
        if not (word.startswith(lexeme) if prefix else word == lexeme):
            return False
    return True


def _sentence_starts(text: str, found: list[tuple[int, int, str]]) -> list[int]:
    """The words that begin a sentence: the first, and any after a `.` or `:` (FTS5's rule)."""
    starts = [0]
    for number in range(1, len(found)):
        between = text[found[number - 1][1] : found[number][0]]
        if "." in between or ":" in between:
            starts.append(number)
    return starts


def marked_snippet(text: str, phrases: list[Phrase], tokens: int = SNIPPET_TOKENS) -> str:
    """FTS5's snippet(): up to `tokens` words around the best cluster of matches, each phrase
    instance between OPEN_MARK and CLOSE_MARK, `…` where the text was cut."""
    found = list(words(text))
    if not found:
        return text
    hits: list[tuple[int, int]] = []  # (word number, phrase number)
    spans: list[list[int]] = []  # [first, last] word of each phrase instance, overlapping ones merged
    for number, phrase in enumerate(phrases):
        for at in range(len(found)):
            if _matches(phrase, found, at):
                hits.append((at, number))
                spans.append([at, at + len(phrase.lexemes) - 1])
    hits.sort()
    merged: list[list[int]] = []
    for span in sorted(spans):
        if merged and span[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span[1])
        else:
            merged.append(span)
    opens = {first for first, _ in merged}
    closes = {last for _, last in merged}
    start = _best_start(text, found, hits, tokens)
    stop = min(len(found), start + tokens)
    inside = any(first < start <= last for first, last in merged)  # a phrase cut by the window's start
    out = ["…"] if start else []
    at = found[start][0] if start else 0
    for number in range(start, stop):
        begin, end, _ = found[number]
        out.append(text[at:begin])
        if number in opens or (number == start and inside):
            out.append(OPEN_MARK)
        out.append(text[begin:end])
        if number in closes or (number == stop - 1 and any(first <= number < last for first, last in merged)):
            out.append(CLOSE_MARK)
        at = end
    out.append(text[at:] if stop == len(found) else "…")
    return "".join(out)


def _best_start(text: str, found: list[tuple[int, int, str]], hits: list[tuple[int, int]], tokens: int) -> int:
    """Where the snippet starts: the window with the most different phrases (then the most
    matches), preferring a sentence's start, as FTS5 scores them."""
    if len(found) <= tokens or not hits:
        return 0

    def score(start: int) -> int:
        seen: set[int] = set()
        total = 0
        for at, phrase in hits:
            if start <= at < start + tokens:
                total += 1 if phrase in seen else 1000
                seen.add(phrase)
        return total

    def centred(at: int) -> int:
        inside = [hit for hit, _ in hits if at <= hit < at + tokens]
        first, last = inside[0], inside[-1]
        start = first - (tokens - (last - first + 1)) // 2
        return max(0, min(start, len(found) - tokens))

    best, best_score = 0, -1
    starts = _sentence_starts(text, found)
    for at, _ in hits:
        candidate = centred(at)
        if (value := score(candidate)) > best_score:
            best, best_score = candidate, value
        sentence = max(s for s in starts if s <= at)
        if sentence < at and (value := score(sentence) + (120 if sentence == 0 else 100)) > best_score:
            best, best_score = sentence, value
    return best
