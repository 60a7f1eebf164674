"""A session as pi 1.6.0 writes one (/work/shared/pi-1.6.md §2.1 F1-F5, F10): a system message with
prompt sections and tool declarations, an assistant routed to another model (`responseModel`), a
tool result with usage, a `usage` entry (cache warming), a compaction and a branch summary with
usage, and context edits (one replacing a message, one hiding it)."""

from __future__ import annotations

from typing import Any

from support.messages import BASE_MS, entry, ts

HEADER: dict[str, Any] = {"type": "session", "version": 3, "id": "pi16-session", "timestamp": ts(0), "cwd": "/w"}


def usage(inp: float, out: float, read: float, write: float, cost: float) -> dict[str, Any]:
    """pi's Usage: tokens, and a cost split in proportion (the total is what pi adds up)."""
    return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": write,
            "totalTokens": inp + out + read + write,
            "cost": {"input": cost / 2, "output": cost / 2, "cacheRead": 0, "cacheWrite": 0, "total": cost}}


def _message(entry_id: str, parent: str | None, second: int, **message: Any) -> dict[str, Any]:
    return entry("message", entry_id, parent, second, message={**message, "timestamp": BASE_MS + second * 1000})


def system_message(entry_id: str, parent: str | None, second: int = 1) -> dict[str, Any]:
    tools = [{"name": name, "description": f"The {name} tool.", "parameters": {"type": "object", "properties": {
        "path": {"type": "string", "description": "x" * 200}}}} for name in ("read", "bash", "edit")]
    sections = {"preamble": "You are an expert coding assistant.", "cwd": "Current directory: /w",
                "skills": "<skills>none</skills>"}
    return _message(entry_id, parent, second, role="system", content="", sections=sections, toolsAdded=tools)


def assistant(entry_id: str, parent: str | None, second: int, figures: dict[str, Any], **more: Any) -> dict[str, Any]:
    content = [{"type": "text", "text": "done"}, {"type": "toolCall", "id": "t1", "name": "read",
                                                  "arguments": {"path": "a"}}]
    return _message(entry_id, parent, second, role="assistant", content=content, api="openai-completions",
                    provider=more.pop("provider", "anthropic"), model=more.pop("model", "claude-x"), usage=figures,
                    stopReason="toolUse", **more)


def session() -> list[dict[str, Any]]:
    """The entries, in file order: two branches from `b0000002`, the leaf on the second."""
    return [
        system_message("b0000001", None),
        _message("b0000002", "b0000001", 2, role="user", content=[{"type": "text", "text": "first question"}]),
        assistant("b0000003", "b0000002", 3, usage(10, 20, 30, 40, 1.0), provider="openrouter", model="auto",
                  responseModel="anthropic/claude-routed"),
        _message("b0000004", "b0000003", 4, role="toolResult", toolCallId="t1", toolName="read",
                 content=[{"type": "text", "text": "file body"}], isError=False, usage=usage(1, 2, 0, 0, 0.1)),
        {**entry("usage", "b0000005", "b0000004", 5), "kind": "cache_warm", "provider": "anthropic",
         "model": "claude-x", "usage": usage(100, 0, 0, 50, 0.2), "note": "cache warming"},
        entry("context_edit", "b0000006", "b0000005", 6, targetId="b0000004",
              replacement={"content": "file body (edited)"}),
        entry("context_edit", "b0000007", "b0000006", 7, targetId="b0000003", replacement=None),
        entry("compaction", "b0000008", "b0000007", 8, summary="The user asked a question.",
              firstKeptEntryId="b0000005", tokensBefore=5000, usage=usage(1000, 100, 0, 0, 0.5)),
        assistant("b0000009", "b0000008", 9, usage(3, 4, 5, 6, 0.25)),
        entry("branch_summary", "b000000a", "b0000002", 10, fromId="b0000009", summary="Tried reading a file.",
              usage=usage(5, 5, 0, 0, 0.05)),
        assistant("b000000b", "b000000a", 11, usage(7, 0, 0, 0, 0.0), model="claude-y"),
    ]


# What pi 1.6.0 counts for `session()`, read off dist/core/usage-totals.js and agent-session.js
# (getSessionStats: every entry's usage; getUsageCostBreakdown: keyed `provider/(responseModel ??
# model)`, tool results', compactions' and branch summaries' under "Tools/summaries", the entries
# with neither cost nor tokens left out).
PI_TOTAL_TOKENS = (10 + 20 + 30 + 40) + 3 + 150 + 1100 + (3 + 4 + 5 + 6) + 10 + 7
PI_TOTAL_COST = 1.0 + 0.1 + 0.2 + 0.5 + 0.25 + 0.05 + 0.0
PI_BREAKDOWN = {  # key: (tokens, cost)
    "openrouter/anthropic/claude-routed": (100, 1.0),
    "Tools/summaries": (3 + 1100 + 10, 0.1 + 0.5 + 0.05),
    "anthropic/claude-x": (150 + 18, 0.2 + 0.25),
    "anthropic/claude-y": (7, 0.0),
}
