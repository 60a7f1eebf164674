"""Reading the session as a tree: paths, the projection the model sees, the flat tree view."""

from .projection import Context, ContextCache, build_context, convert_to_llm, walk_path
from .tree import flat_tree

__all__ = ["Context", "ContextCache", "build_context", "convert_to_llm", "flat_tree", "walk_path"]
