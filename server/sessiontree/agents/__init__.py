"""Other agents' sessions (Claude Code, Codex) read as pi sessions.

A translator turns one agent session's files into what pi 1.6 would have written for it: a header
and entries, in pi's shapes (../../protocol.md, "Other agents' sessions"). The daemon serves the
result read-only, as it serves a pi file, and `import` writes it out as a pi session.

Translation is prefix-stable: when the source files only grew, a later translation's entries
start with the earlier one's, unchanged and in the same order. So a live session is followed as a
pi file is (new entries at the end, nothing rewritten); what is not whole yet (an assistant
response whose lines are still being written) is held back until it is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs

AgentName = Literal["pi", "claude-code", "codex"]

# Reads a source file whole (the daemon reads through its confined, checked descriptors).
ReadFile = Callable[[Path], bytes]


@attrs.frozen
class Source:
    """One session of another agent, as found on disk."""

    agent: AgentName
    path: Path  # the file that names the session (Claude Code: `<id>.jsonl`; Codex: the thread's live segment)
    session_id: str  # the agent's own id for it
    files: tuple[Path, ...]  # every file its translation reads, `path` among them (Codex: the base chain too)


@attrs.frozen
class Provenance:
    """Where a translation came from: kept in an imported session's first `custom` entry."""

    agent: AgentName
    version: str | None  # the agent's version that wrote the source, where the files say
    source_file: str
    source_session_id: str


@attrs.define
class Translation:
    """A session of another agent in pi's shapes."""

    header: dict[str, Any]  # {type: "session", version: 3, id, timestamp, cwd[, parentSession]}
    entries: list[dict[str, Any]]  # pi entries in file order, each with type, id, parentId, timestamp
    leaf_id: str | None  # the leaf as the agent chooses it (pi's would be the last entry)
    provenance: Provenance
    # Line kinds the translator does not know, with how many of each: kept as `custom` entries, never fatal.
    unknown_kinds: dict[str, int] = attrs.field(factory=dict)
    # The source session this one was forked from or runs under (a sub-agent), where the files say.
    parent: Source | None = None


class Translator(Protocol):
    """One agent's files: where its sessions are, and each as pi entries."""

    agent: AgentName

    def discover(self, root: Path) -> list[Source]:
        """The sessions under one of the agent's folders (`~/.claude/projects`, `~/.codex/sessions`)."""

    def translate(self, source: Source, read: ReadFile) -> Translation:
        """The session as pi entries (prefix-stable, see the module's docstring)."""
