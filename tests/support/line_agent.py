"""A small agent session format for testing the serving of other agents' sessions, and its
translator (the real ones, Claude Code's and Codex's, live in the package).

A session is a `.jsonl` file anywhere under the agent's folder:
    {"session": ID, "cwd": DIR, "ts": ISO}                     first line
    {"id": ID, "parent": ID|null, "role": "user"|"assistant", "text": TEXT, "ts": ISO}
    {"leaf": ID}                                                the agent's current leaf
    {"title": NAME}                                             the session's name
A line not ended yet is held back (as an agent's half-written line is), so translations are
prefix-stable while the file only grows.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from sessiontree.agents import AgentName, Provenance, ReadFile, Source, Translation


class LineTranslator:
    def __init__(self, agent: AgentName = "claude-code") -> None:
        self.agent: AgentName = agent
        self.translated = 0  # how often translate ran (the listing caches summaries)

    def discover(self, root: Path) -> list[Source]:
        found = []
        for path in sorted(root.rglob("*.jsonl")):
            with path.open("rb") as file:
                first = file.readline()
            try:
                session_id = json.loads(first)["session"]
            except (ValueError, KeyError, TypeError):
                continue
            found.append(Source(self.agent, path, session_id, (path,)))
        return found

    def translate(self, source: Source, read: ReadFile) -> Translation:
        self.translated += 1
        lines = read(source.path).split(b"\n")[:-1]  # the last piece has no line end yet
        meta = json.loads(lines[0])
        header = {"type": "session", "version": 3, "id": meta["session"], "timestamp": meta["ts"], "cwd": meta["cwd"]}
        entries: list[dict[str, Any]] = []
        leaf = None
        for raw in lines[1:]:
            line = json.loads(raw)
            if "leaf" in line:
                leaf = line["leaf"]
            elif "title" in line:
                parent = entries[-1]["id"] if entries else None
                entries.append({"type": "session_info", "id": f"t{len(entries)}", "parentId": parent,
                                "timestamp": meta["ts"], "name": line["title"]})
            else:
                entries.append(_message(line))
        provenance = Provenance(self.agent, "1.0", str(source.path), meta["session"])
        return Translation(header, entries, leaf if leaf is not None else (entries[-1]["id"] if entries else None), provenance)


def _message(line: dict[str, Any]) -> dict[str, Any]:
    ms = int(datetime.fromisoformat(line["ts"].replace("Z", "+00:00")).timestamp() * 1000)
    if line["role"] == "user":
        message: dict[str, Any] = {"role": "user", "content": line["text"], "timestamp": ms}
    else:
        message = {
            "role": "assistant", "content": [{"type": "text", "text": line["text"]}], "api": "anthropic-messages",
            "provider": "anthropic", "model": "test-model", "stopReason": "stop", "timestamp": ms,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        }
    return {"type": "message", "id": line["id"], "parentId": line["parent"], "timestamp": line["ts"], "message": message}


def session_lines(session_id: str, cwd: str, *turns: tuple[str, str | None, str, str]) -> str:
    """A file's text: the first line, then (id, parent, role, text) per message."""
    out = [json.dumps({"session": session_id, "cwd": cwd, "ts": "2026-12-01T10:00:00.000Z"})]
    for number, (entry_id, parent, role, text) in enumerate(turns):
        ts = f"2026-12-01T10:{number + 1:02d}:00.000Z"
        out.append(json.dumps({"id": entry_id, "parent": parent, "role": role, "text": text, "ts": ts}))
    return "\n".join(out) + "\n"


def turn_line(entry_id: str, parent: str | None, role: str, text: str, minute: int) -> str:
    ts = f"2026-12-01T11:{minute:02d}:00.000Z"
    return json.dumps({"id": entry_id, "parent": parent, "role": role, "text": text, "ts": ts}) + "\n"
