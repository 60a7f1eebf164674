"""The session file: scanning, indexing, appending under a lock, migration."""

from .index import SessionIndex
from .migrate import file_version, migrate_file
from .session import WRITE_WARNINGS, Appended, AppendRequest, Session
from .storage import Durability, FileStorage, MemoryStorage, Storage

__all__ = [
    "WRITE_WARNINGS",
    "AppendRequest",
    "Appended",
    "Durability",
    "FileStorage",
    "MemoryStorage",
    "Session",
    "SessionIndex",
    "Storage",
    "file_version",
    "migrate_file",
]
