"""pi's session algorithms written as plainly as possible, to check the engine against.

Everything here works on whole entries held in memory, re-derives everything on each
call and follows pi's JavaScript line by line (buildSessionContext, getTree); the
engine under test indexes skeletons, reads payloads lazily and caches. Small inputs only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso).timestamp() * 1000 + 0.5)


def _path(entries: list[dict[str, Any]], leaf: str | None) -> list[dict[str, Any]]:
    by_id = {entry["id"]: entry for entry in entries}
    path: list[dict[str, Any]] = []
    current = by_id.get(leaf) if leaf is not None else None
    while current is not None:
        path.insert(0, current)
        current = by_id.get(current["parentId"]) if current.get("parentId") else None
    return path


def _as_message(entry: dict[str, Any]) -> dict[str, Any] | None:
    if entry["type"] == "message":
        return entry["message"]
    if entry["type"] == "custom_message":
        fields = {k: entry[k] for k in ("customType", "content", "display", "details") if k in entry}
        return {"role": "custom", **fields, "timestamp": _ms(entry["timestamp"])}
    if entry["type"] == "branch_summary" and entry.get("summary"):
        return {"role": "branchSummary", "summary": entry["summary"], "fromId": entry["fromId"], "timestamp": _ms(entry["timestamp"])}
    return None


def build_context(entries: list[dict[str, Any]], leaf: str | None) -> dict[str, Any]:
    path = _path(entries, leaf)
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    for entry in path:
        if entry["type"] == "thinking_level_change":
            thinking = entry["thinkingLevel"]
        elif entry["type"] == "model_change":
            model = {"provider": entry["provider"], "modelId": entry["modelId"]}
        elif entry["type"] == "message" and entry["message"]["role"] == "assistant":
            model = {"provider": entry["message"]["provider"], "modelId": entry["message"]["model"]}
        elif entry["type"] == "compaction":
            compaction = entry
    if compaction is None:
        emitted = path
        messages: list[Any] = []
    else:
        at = next(i for i, e in enumerate(path) if e["id"] == compaction["id"])
        ids = [e["id"] for e in path[:at]]
        start = ids.index(compaction["firstKeptEntryId"]) if compaction["firstKeptEntryId"] in ids else at
        emitted = path[start:at] + path[at + 1 :]
        summary = {"role": "compactionSummary", "summary": compaction["summary"],
                   "tokensBefore": compaction["tokensBefore"], "timestamp": _ms(compaction["timestamp"])}
        messages = [summary]
    messages += [m for m in map(_as_message, emitted) if m is not None]
    return {"messages": messages, "thinkingLevel": thinking, "model": model}


def tree_order(entries: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """getTree, flattened depth-first: (id, depth). Assumes unique ids and no cycles."""
    ids = {entry["id"] for entry in entries}
    children: dict[str, list[dict[str, Any]]] = {entry["id"]: [] for entry in entries}
    roots = []
    for entry in entries:
        parent = entry.get("parentId")
        if parent is None or parent == entry["id"] or parent not in ids:
            roots.append(entry)
        else:
            children[parent].append(entry)
    out: list[tuple[str, int]] = []

    def visit(entry: dict[str, Any], depth: int) -> None:
        out.append((entry["id"], depth))
        for child in sorted(children[entry["id"]], key=lambda e: _ms(e["timestamp"])):
            visit(child, depth + 1)

    for root in roots:
        visit(root, 0)
    return out


def labels(entries: list[dict[str, Any]]) -> dict[str, str]:
    current: dict[str, str] = {}
    for entry in entries:
        if entry["type"] == "label":
            if entry.get("label"):
                current[entry["targetId"]] = entry["label"]
            else:
                current.pop(entry["targetId"], None)
    return current
