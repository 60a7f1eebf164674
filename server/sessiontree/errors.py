"""Domain errors, each with the JSON-RPC error code documented in protocol.md.

The domain raises these; the server turns them into JSON-RPC error responses
(`code`, `message`, `data`) without knowing any domain detail.
"""

from __future__ import annotations

from typing import Any


class SessionTreeError(Exception):
    """Base class: a failure the client caused or must know about, with a stable code."""

    code: int = -32603
    name: str = "InternalError"

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = {"error": self.name, **data}


class InvalidParams(SessionTreeError):
    """Params that are well-formed JSON but not acceptable (JSON-RPC -32602)."""

    code = -32602
    name = "InvalidParams"


class SessionNotFound(SessionTreeError):
    code = -32010
    name = "SessionNotFound"


class EntryNotFound(SessionTreeError):
    code = -32011
    name = "EntryNotFound"


class LeafConflict(SessionTreeError):
    code = -32012
    name = "LeafConflict"


class PathOutsideRoot(SessionTreeError):
    code = -32013
    name = "PathOutsideRoot"


class NotASessionFile(SessionTreeError):
    code = -32014
    name = "NotASessionFile"


class FileNotFound(SessionTreeError):
    code = -32015
    name = "FileNotFound"


class SessionExists(SessionTreeError):
    code = -32016
    name = "SessionExists"


class StorageError(SessionTreeError):
    """The disk refused a write or a read (full, read-only, I/O error)."""

    code = -32017
    name = "StorageError"


class SummaryConflict(SessionTreeError):
    """The path changed since the summary was prepared so that it no longer fits."""

    code = -32018
    name = "SummaryConflict"


class NothingToCompact(SessionTreeError):
    """The path is empty or already ends in a compaction (pi: "Already compacted")."""

    code = -32019
    name = "NothingToCompact"


class SummarizerUnavailable(SessionTreeError):
    """The client did not announce in `initialize` that it can summarise."""

    code = -32020
    name = "SummarizerUnavailable"


class SummaryFailed(SessionTreeError):
    """The client's summary did not come: an error answer, a malformed one, or none in time."""

    code = -32021
    name = "SummaryFailed"


class FileReplaced(SessionTreeError):
    """Another program replaced, truncated or rewrote the open session's file: open it again."""

    code = -32022
    name = "FileReplaced"


class StoreUnavailable(SessionTreeError):
    """The PostgreSQL store could not be reached, or the connection was lost: nothing half-written,
    and the next request connects again."""

    code = -32023
    name = "StoreUnavailable"


class ReadOnlySession(SessionTreeError):
    """A session the daemon shows but does not write to: pi would not take the file for a session
    (it starts with a byte order mark), so an append would grow a file pi refuses to open."""

    code = -32024
    name = "ReadOnlySession"


class NameTaken(SessionTreeError):
    """A session would be moved (trashed, archived, restored) to a name another file has: names are
    never replaced, so nothing was moved."""

    code = -32025
    name = "NameTaken"


ALL_ERRORS: tuple[type[SessionTreeError], ...] = (
    InvalidParams,
    SessionNotFound,
    EntryNotFound,
    LeafConflict,
    PathOutsideRoot,
    NotASessionFile,
    FileNotFound,
    SessionExists,
    StorageError,
    SummaryConflict,
    NothingToCompact,
    SummarizerUnavailable,
    SummaryFailed,
    FileReplaced,
    StoreUnavailable,
    ReadOnlySession,
    NameTaken,
)
