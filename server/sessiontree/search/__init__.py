"""Full-text search over the message text of every session under the sessions root.

The index is a cache derived from the session files (SQLite FTS5, in the cache directory beside
the index sidecars), brought up to date incrementally by `SearchIndex.refresh` and queried by
`SearchIndex.search`. See `index.py` for the API, `refresh.py` for how changes are detected,
`query.py` for the query syntax, ranking and cursors, `text.py` for what is indexed.

    index = SearchIndex(index_path(index_dir, root))  # one database per sessions root
    index.refresh(root, progress=report, cancelled=asked_to_stop)  # in a worker thread: searches go on
    page = index.search('"session tree" sess*', cwd="/home/me/project", limit=20)
    page = index.search("typed text", syntax="plain", cursor=page.cursor, leaf_path=open_leaf_paths.get)

Errors are the daemon's own: `InvalidParams` (-32602) for a query, filter or cursor that is
not valid, `StorageError` (-32017) when the database cannot be written at all. A damaged or
outdated database found at open (its layout, SQLite's `quick_check`) is rebuilt, never an error;
damage a search meets is `IndexDamaged` (a StorageError), never an empty page, and the next
refresh rebuilds the index.
"""

from .index import RANK_WINDOW, IndexDamaged, LeafPath, SearchIndex, index_path
from .model import RefreshStats, SearchHit, SearchPage, Syntax
from .query import plain_expression

__all__ = [
    "RANK_WINDOW",
    "IndexDamaged",
    "LeafPath",
    "RefreshStats",
    "SearchHit",
    "SearchIndex",
    "SearchPage",
    "Syntax",
    "index_path",
    "plain_expression",
]
