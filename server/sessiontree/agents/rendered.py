"""A translation as the bytes pi would have written: the header line, then one line per entry."""

from __future__ import annotations

from typing import Any

from .. import jsonfmt
from ..entries import build_line
from . import Translation


def header_line(translation: Translation) -> bytes:
    return jsonfmt.dumps(translation.header) + b"\n"


def entry_line(entry: dict[str, Any]) -> bytes:
    """One entry in pi's key order (as pi's appendEntry writes it)."""
    fields = {key: value for key, value in entry.items() if key not in ("id", "parentId", "timestamp")}
    built = build_line(fields, entry["id"], entry.get("parentId"), entry["timestamp"])
    return jsonfmt.dumps(built) + b"\n"


def lines(translation: Translation, start: int = 0) -> list[bytes]:
    """The entry lines from the `start`th entry on."""
    return [entry_line(entry) for entry in translation.entries[start:]]
