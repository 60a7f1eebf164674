"""Full-text search over the message text of every session under the sessions root.

The index is a cache derived from the session files (SQLite FTS5, in the cache directory beside
the index sidecars), brought up to date incrementally by `SearchIndex.refresh` and queried by
`SearchIndex.search`. See `index.py` for the API, `refresh.py` for how changes are detected,
`query.py` for the query syntax, ranking and cursors, `text.py` for what is indexed.
"""

from .index import RANK_WINDOW, LeafPath, SearchIndex, index_path
from .model import RefreshStats, SearchHit, SearchPage, Syntax
from .query import plain_expression

__all__ = [
    "RANK_WINDOW",
    "LeafPath",
    "RefreshStats",
    "SearchHit",
    "SearchIndex",
    "SearchPage",
    "Syntax",
    "index_path",
    "plain_expression",
]
