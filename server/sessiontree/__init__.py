"""sessiontree: one correct, fast session store for coding agents (pi's JSONL tree format)."""

__version__ = "0.1.0"  # pyproject.toml reads it from here
