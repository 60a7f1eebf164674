"""How the entries pi 1.6 writes look in tree views: system messages, context edits and usage
entries previewed as what they are; context edits rows of their own, usage entries folded."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessiontree.store import MemoryStorage, Session
from sessiontree.tree.folded import FoldedTree
from sessiontree.tree.preview import preview_of_line
from support.messages import entry, user
from support.sessions import session_bytes

TOOLS = [{"name": "read", "description": "Read a file " * 40, "parameters": {"type": "object", "properties": {}}}]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"type": "message", "message": {"role": "system", "content": "You are a coding agent.\n\nBe brief.", "toolsAdded": TOOLS}},
         "system: You are a coding agent. Be brief."),
        ({"type": "message", "message": {"role": "system", "content": "", "sections": {"cwd": "/w", "skills": None}, "toolsAdded": TOOLS}},
         "system: sections cwd, skills"),
        ({"type": "message", "message": {"role": "system", "content": None}}, "system:"),
        ({"type": "context_edit", "targetId": "1a2b3c4d", "replacement": None}, "hides 1a2b3c4d"),
        ({"type": "context_edit", "targetId": "1a2b3c4d", "replacement": {"content": [{"type": "text", "text": "short\n answer"}]}},
         "edits 1a2b3c4d: short answer"),
        ({"type": "context_edit", "targetId": "1a2b3c4d", "replacement": {"content": "x" * 100}}, "edits 1a2b3c4d: " + "x" * 63 + "…"),
        ({"type": "usage", "kind": "cache_warm", "provider": "anthropic", "model": "claude-sonnet", "usage": {"input": 1}},
         "usage cache_warm claude-sonnet"),
    ],
)
def test_previews_of_the_new_kinds(line: dict[str, Any], expected: str) -> None:
    assert preview_of_line(json.dumps(line).encode()) == expected


def test_context_edits_are_rows_and_usage_entries_fold_into_runs() -> None:
    chain = [user("a0000000", None, "q0", 0)]
    for seq in range(1, 12):
        parent = chain[-1]["id"]
        if seq == 4:
            chain.append(entry("context_edit", f"a{seq:07d}", parent, seq, targetId="a0000000", replacement=None))
        elif seq in (2, 8):
            chain.append({**entry("usage", f"a{seq:07d}", parent, seq), "kind": "cache_warm", "provider": "p", "model": "m", "usage": {}})
        else:
            chain.append(user(f"a{seq:07d}", parent, f"q{seq}", seq))
    tree = FoldedTree(Session.load(MemoryStorage(session_bytes(*chain))).index)
    assert [(row.first, row.last) for row in tree.rows] == [(0, 0), (1, 3), (4, 4), (5, 10), (11, 11)]
