"""Reading the session as a tree: paths, the projection the model sees, the flat tree view."""

from .projection import (
    Context,
    ContextCache,
    ProjectedEntry,
    Projection,
    build_context,
    convert_to_llm,
    project_entries,
    uncached_cursor,
    walk_path,
)
from .tree import flat_tree

__all__ = [
    "Context",
    "ContextCache",
    "ProjectedEntry",
    "Projection",
    "build_context",
    "convert_to_llm",
    "flat_tree",
    "project_entries",
    "uncached_cursor",
    "walk_path",
]
