"""Words and snippets for search in PostgreSQL, cut as the file store's FTS5 index cuts them (the
queries are fts_query.py's).

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

import bisect
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

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
MAX_SNIPPET_WORK: Final = 1_000_000  # places a snippet checks for phrases, per entry


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


class _Words:
    """Where each word of a text stands, for finding a phrase's first word without a scan."""

    def __init__(self, found: list[tuple[int, int, str]]) -> None:
        self.at: dict[str, list[int]] = {}
        for number, (_, _, lexeme) in enumerate(found):
            self.at.setdefault(lexeme, []).append(number)
        self.sorted = sorted(self.at)

    def starts(self, phrase: Phrase) -> Iterator[int]:
        """The word numbers the phrase's first word matches, in order for an exact word."""
        first, prefix = phrase.lexemes[0], phrase.prefix[0]
        if not prefix:
            yield from self.at.get(first, ())
            return
        for index in range(bisect.bisect_left(self.sorted, first), len(self.sorted)):
            lexeme = self.sorted[index]
            if not lexeme.startswith(first):
                return
            yield from self.at[lexeme]


def phrase_hits(found: list[tuple[int, int, str]], phrases: list[Phrase], budget: int = MAX_SNIPPET_WORK) -> list[tuple[int, int]]:
    """(word number, phrase number) of every phrase instance, sorted; the phrases' first words are
    looked up, not scanned for, and no more than `budget` places are checked in all: a text with a
    word repeated 30,000 times costs as many steps, not their square."""
    words_at = _Words(found)
    hits: list[tuple[int, int]] = []
    for number, phrase in enumerate(phrases):
        for at in words_at.starts(phrase):
            budget -= len(phrase.lexemes)
            if budget < 0:
                hits.sort()
                return hits
            if _matches(phrase, found, at):
                hits.append((at, number))
    hits.sort()
    return hits


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
    hits = phrase_hits(found, phrases)  # (word number, phrase number)
    spans = sorted([at, at + len(phrases[number].lexemes) - 1] for at, number in hits)
    merged: list[list[int]] = []  # [first, last] word of each phrase instance, overlapping ones merged
    for span in spans:
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


_FEW_PHRASES: Final = 8


def _any_within(places: list[int], start: int, stop: int) -> bool:
    index = bisect.bisect_left(places, start)
    return index < len(places) and places[index] < stop


def _best_start(text: str, found: list[tuple[int, int, str]], hits: list[tuple[int, int]], tokens: int) -> int:
    """Where the snippet starts: the window with the most different phrases (then the most
    matches), preferring a sentence's start, as FTS5 scores them. Each window is scored from the
    hits inside it (found by bisection), each start once."""
    if len(found) <= tokens or not hits:
        return 0
    positions = [at for at, _ in hits]
    by_phrase: dict[int, list[int]] = {}
    for at, phrase in hits:
        by_phrase.setdefault(phrase, []).append(at)
    few = len(by_phrase) <= _FEW_PHRASES
    scores: dict[int, int] = {}

    def score(start: int) -> int:
        """1000 for each phrase in the window, 1 for each further match of one."""
        if start not in scores:
            low, high = bisect.bisect_left(positions, start), bisect.bisect_left(positions, start + tokens)
            if few:  # each phrase looked up: a window full of one word costs no loop over it
                distinct = sum(1 for places in by_phrase.values() if _any_within(places, start, start + tokens))
            else:
                distinct = len({hits[index][1] for index in range(low, high)})
            scores[start] = 1000 * distinct + (high - low - distinct)
        return scores[start]

    def centred(at: int) -> int:
        last = positions[bisect.bisect_left(positions, at + tokens) - 1]
        start = at - (tokens - (last - at + 1)) // 2
        return max(0, min(start, len(found) - tokens))

    best, best_score = 0, -1
    starts = _sentence_starts(text, found)
    for at in dict.fromkeys(positions):  # each place once: the same candidates, in the same order
        candidate = centred(at)
        if (value := score(candidate)) > best_score:
            best, best_score = candidate, value
        sentence = starts[bisect.bisect_right(starts, at) - 1]
        if sentence < at and (value := score(sentence) + (120 if sentence == 0 else 100)) > best_score:
            best, best_score = sentence, value
    return best
