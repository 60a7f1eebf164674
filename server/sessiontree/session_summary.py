"""One line of a session listing (listing.py reads it from the file's head)."""

from __future__ import annotations

import attrs

from .agents import AgentName


@attrs.define
class SessionSummary:
    path: str
    id: str
    cwd: str
    created: str
    modified: str
    message_count: int
    first_message: str
    name: str | None = None
    parent_session: str | None = None
    children: int | None = None  # listed sessions naming this one as their parentSession (listing.count_children)
    agent: AgentName = "pi"  # whose session: "pi", or another agent's read through its translator
