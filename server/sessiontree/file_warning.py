"""What the store and the projections report about a file instead of repairing it."""

from __future__ import annotations

import attrs


@attrs.define
class FileWarning:
    """Something odd found in a file: reported, never repaired by deleting data."""

    kind: str
    message: str
    line: int | None = None
    entry_id: str | None = None
    path: str | None = None
