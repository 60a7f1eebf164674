"""The search index's results: what a refresh did, and a page of hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Syntax = Literal["fts", "plain"]


@dataclass(slots=True)
class RefreshStats:
    """What one refresh did. `bytes_read` counts the bytes of lines read to index them (not the
    few KiB read to check that a file is unchanged)."""

    files_seen: int = 0
    files_unchanged: int = 0
    files_appended: int = 0  # read from where the last refresh stopped
    files_reindexed: int = 0  # read from the start: new, replaced, rewritten, truncated, migrated
    files_removed: int = 0  # gone, or no longer a file the daemon would serve
    entries_added: int = 0
    bytes_read: int = 0
    cancelled: bool = False
    rebuilt: bool = False  # the database was damaged or of another layout, and made afresh


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching entry. `snippet` is plain text (whitespace runs folded to one space, `…`
    where text was cut); `highlights` are the `[start, end)` ranges of matched tokens in it, in
    code points. `score` is bm25's, higher is better. `on_leaf_path`: the entry is on the path
    from the session's current leaf to the root."""

    path: str
    session_id: str
    cwd: str
    entry_id: str | None  # None only in a version 1 file, whose entries get ids when it is migrated
    parent_id: str | None
    type: str
    role: str | None
    timestamp: str | None
    timestamp_ms: int | None
    offset: int
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    score: float
    on_leaf_path: bool

    def marked(self, open: str = "«", close: str = "»") -> str:
        """The snippet with each highlight between `open` and `close`."""
        out: list[str] = []
        at = 0
        for start, end in self.highlights:
            out += [self.snippet[at:start], open, self.snippet[start:end], close]
            at = end
        out.append(self.snippet[at:])
        return "".join(out)


@dataclass(frozen=True, slots=True)
class SearchPage:
    """Hits, best first, and the cursor for the next page (None: no more)."""

    hits: list[SearchHit] = field(default_factory=list)
    cursor: str | None = None
