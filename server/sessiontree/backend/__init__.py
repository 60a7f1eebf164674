"""Where sessions are kept: files under the sessions root (the default), or PostgreSQL.

The service works on `Session`s over a `Storage`; a backend finds, makes, lists and lets go of
them. Both address a session by its path under the sessions root: in PostgreSQL that path, taken
relative to the root, is the session's name.
"""

from __future__ import annotations

import builtins  # `list` in the class body below is Backend.list
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from ..file_warning import FileWarning
from ..search import LeafPath, RefreshStats, SearchPage, Syntax
from ..session_summary import SessionSummary
from ..store import Session, Storage

Progress = Callable[[int, int], None]


class SearchIndex(Protocol):
    """Full-text search over the sessions of a store (protocol.md, `session/search`)."""

    def refresh(self, progress: Progress | None = None, cancelled: Callable[[], bool] | None = None) -> RefreshStats:
        """Bring the index up to date with the sessions; safe in a worker thread while searches go on."""

    def search(
        self,
        query: str,
        *,
        syntax: Syntax = "fts",
        cwd: str | None = None,
        session: str | None = None,
        roles: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
        since_ms: int | None = None,
        until_ms: int | None = None,
        limit: int = 20,
        cursor: str | None = None,
        leaf_path: LeafPath | None = None,
    ) -> SearchPage:
        """A page of hits, best first (InvalidParams for a query, filter or cursor not valid)."""

    def close(self) -> None: ...


class ChangeFeed(Protocol):
    """Word of other processes' appends, on a socket the daemon waits on."""

    def start(self) -> int:
        """Begin listening; the socket to wait on."""

    def drain(self) -> set[Path]:
        """The open sessions that were appended to since the last call."""

    def stop(self) -> None: ...


class Backend(Protocol):
    """What the service needs from the place sessions are kept."""

    root: Path
    shown: str  # where, for logs: never a password
    poll_seconds: float  # how often subscribed sessions are checked for other writers

    def start(self) -> None:
        """Reach the store now, so that a store that cannot be reached fails `initialize`."""

    def changes(self) -> ChangeFeed | None:
        """Notifications of other writers' appends, where the store sends them."""

    def resolve(self, path: str) -> Path:
        """The absolute path of an existing session; errors for one outside the root or missing."""

    def directory_for(self, cwd: str) -> Path:
        """pi's directory of a project's sessions."""

    def load(self, path: Path, warnings: list[FileWarning]) -> Session:
        """Open a session for reading and appending (migrated first if its format is older)."""

    def load_readonly(self, path: Path) -> Session | None:
        """Open a session only to read it; None when it is not there or not a session."""

    def create(self, directory: Path, name: str, chunks: Iterable[bytes]) -> tuple[Storage, Path]:
        """A new session of whole lines, never over an existing one, visible only once complete."""

    def release(self, session: Session, path: Path) -> None:
        """Let go of an open session (the file store saves its index sidecar first)."""

    def list(self, cwd: str | None, progress: Progress | None) -> list[SessionSummary]:
        """pi's session summaries, newest activity first."""

    def paths(self, cwd: str) -> builtins.list[Path]:
        """The sessions of one project."""

    def search_index(self) -> SearchIndex:
        """A full-text index of the sessions, for the caller to close (StorageError when there can be none)."""

    def close(self) -> None: ...
