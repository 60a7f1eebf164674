"""Seeded session files for comparing compaction and branch summaries with pi.

Each session is a tree grown by random operations: turns with many tool calls (so that
cut points split turns), long tool results (cut at 2000 characters when serialized),
images, bash executions (some excluded from the context), custom messages, thinking,
aborted and failed replies, usage without `totalTokens` or without figures at all, branch moves with and without
summaries, and repeated compactions whose `firstKeptEntryId` and `details` vary. As pi 1.x writes them: a system
message first (the prompt, its sections and the tool declarations) and later ones patching sections and tools,
context edits that hide or replace an earlier message (among them a failed reply hidden right after it, as pi's
overflow recovery does), `usage` entries, and all-zero usage.
"""

from __future__ import annotations

import random
from typing import Any

TOOLS = ("read", "write", "edit", "bash", "grep")
WORDS = ("alpha", "beta", "gamma", "δέλτα", "emoji😀", "日本語", "path/to/file", "x" * 40, "\ttab", "q\"uote")
IMAGE = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
SECTIONS = ("preamble", "cwd", "skills", "10", "2")  # integer-like names: JavaScript orders them first
EDITABLE_ROLES = ("user", "assistant", "toolResult")


class SessionGrower:
    """Grows one session: entries as pi writes them, with their own ids and clock."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.clock = 0
        self.tool_calls = 0

    # ----------------------------------------------------------------- basics

    def _time(self) -> tuple[str, int]:
        self.clock += self.rng.choice((1, 1, 2, 30))
        seconds = self.clock
        iso = f"2025-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}.000Z"
        return iso, 1735689600000 + seconds * 1000

    def _add(self, entry: dict[str, Any], parent: str | bool | None = False) -> str:
        entry_id = f"{len(self.entries) + 1:08x}"
        iso, _ = self._time()
        parent_id = self.leaf if parent is False else parent
        self.entries.append({"type": entry.pop("type"), "id": entry_id, "parentId": parent_id, "timestamp": iso, **entry})
        self.leaf = entry_id
        return entry_id

    def text(self, low: int, high: int) -> str:
        words: list[str] = []
        target = self.rng.randint(low, high)
        while sum(len(w) + 1 for w in words) < target:
            words.append(self.rng.choice(WORDS))
        return " ".join(words)

    def _message(self, message: dict[str, Any]) -> str:
        message["timestamp"] = self._time()[1]
        return self._add({"type": "message", "message": message})

    # ----------------------------------------------------------------- messages

    def user(self) -> None:
        if self.rng.random() < 0.5:
            content: Any = self.text(5, 600)
        else:
            content = [{"type": "text", "text": self.text(5, 300)}]
            if self.rng.random() < 0.4:
                content.append(IMAGE)
            if self.rng.random() < 0.3:
                content.append({"type": "text", "text": self.text(1, 50)})
        self._message({"role": "user", "content": content})

    def _arguments(self, name: str) -> dict[str, Any]:
        args: dict[str, Any] = {}
        if name != "grep" or self.rng.random() < 0.5:
            args["path"] = self.rng.choice(("src/a.py", "src/b.py", "README.md", "docs/日本.md", "z😀.txt", ""))
        if self.rng.random() < 0.4:
            args["content"] = self.text(10, 400)
        if self.rng.random() < 0.2:
            args.update({"10": 1.5, "2": [True, None, {"k": "v"}], "limit": 100})
        return args

    def _usage(self) -> dict[str, Any]:
        if self.rng.random() < 0.05:  # a provider that reported nothing: pi 1.6 skips it
            return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
        parts = {k: self.rng.randint(0, 4000) for k in ("input", "output", "cacheRead", "cacheWrite")}
        total = sum(parts.values()) if self.rng.random() < 0.8 else 0
        odd = self.rng.random()
        if odd < 0.05:
            return {}  # truthy in JavaScript: its figures are NaN
        if odd < 0.1:
            del parts["cacheWrite"]
        return {**parts, "totalTokens": total}

    def assistant(self, calls: int) -> list[tuple[str, str]]:
        content: list[dict[str, Any]] = []
        if self.rng.random() < 0.4:
            content.append({"type": "thinking", "thinking": self.text(5, 500)})
        if self.rng.random() < 0.8:
            content.append({"type": "text", "text": self.text(1, 800)})
        made = []
        for _ in range(calls):
            name = self.rng.choice(TOOLS)
            self.tool_calls += 1
            call_id = f"call_{self.tool_calls}"
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": self._arguments(name)})
            made.append((call_id, name))
        stop = "toolUse" if calls else self.rng.choice(("stop", "stop", "stop", "aborted", "error", "length"))
        message: dict[str, Any] = {"role": "assistant", "content": content, "api": "anthropic-messages"}
        message.update(provider="anthropic", model=self.rng.choice(("m1", "m2")), usage=self._usage(), stopReason=stop)
        if stop == "error":
            message["errorMessage"] = "overloaded"
        self._message(message)
        return made

    def tool_result(self, call_id: str, name: str) -> None:
        size = self.rng.choice((20, 200, 2500, 6000))
        content: list[dict[str, Any]] = [{"type": "text", "text": self.text(size // 2, size)}]
        if self.rng.random() < 0.15:
            content.append(IMAGE)
        message = {"role": "toolResult", "toolCallId": call_id, "toolName": name, "content": content}
        self._message({**message, "isError": self.rng.random() < 0.1})

    def turn(self) -> None:
        self.user()
        for _ in range(self.rng.choice((0, 1, 2, 4, 8))):
            for call_id, name in self.assistant(self.rng.randint(1, 3)):
                self.tool_result(call_id, name)
        self.assistant(0)

    def bash(self) -> None:
        message = {"role": "bashExecution", "command": self.rng.choice(("ls", "make test", "git status"))}
        message.update(output=self.text(0, 900), exitCode=self.rng.choice((0, 1, None)), cancelled=False)
        message["truncated"] = False
        if self.rng.random() < 0.3:
            message["excludeFromContext"] = True
        self._message(message)

    def custom_message(self) -> None:
        content: Any = self.text(5, 300)
        if self.rng.random() < 0.5:
            content = [{"type": "text", "text": content}] + ([IMAGE] if self.rng.random() < 0.5 else [])
        self._add({"type": "custom_message", "customType": "note", "content": content, "display": True})

    # ----------------------------------------------------------------- pi 1.x entries

    def _tool(self, name: str) -> dict[str, Any]:
        schema = {"type": "object", "properties": {"path": {"type": "string", "description": self.text(5, 80)}}}
        return {"name": name, "description": f"The {name} tool. " + self.text(10, 200), "parameters": schema}

    def system(self, first: bool = False) -> None:
        """The first request's prompt and tools, or a later patch of sections and tools."""
        message: dict[str, Any] = {"role": "system", "content": self.text(20, 400) if first else ""}
        names = SECTIONS if first else self.rng.sample(SECTIONS, 2)
        message["sections"] = {name: (None if not first and self.rng.random() < 0.3 else self.text(5, 300)) for name in names}
        tools = TOOLS if first else self.rng.sample(TOOLS, 1)
        if first or self.rng.random() < 0.5:
            message["toolsAdded"] = [self._tool(name) for name in tools]
        if not first and self.rng.random() < 0.3:
            message["toolsRemoved"] = [{"name": self.rng.choice(TOOLS)}]
        self._message(message)

    def _editable(self) -> list[dict[str, Any]]:
        return [
            e for e in self._path()
            if e["type"] == "custom_message" or (e["type"] == "message" and e["message"]["role"] in EDITABLE_ROLES)
        ]

    def context_edit(self, target: dict[str, Any] | None = None) -> None:
        """pi's appendContextEdit: hide a message of the path (null) or replace its content."""
        targets = self._editable()
        if target is None and not targets:
            return
        chosen = target or self.rng.choice(targets)
        replacement: Any = None
        if target is None and self.rng.random() < 0.6:
            text = "(redacted) " + self.text(0, 200)
            replacement = {"content": text if self.rng.random() < 0.5 else [{"type": "text", "text": text}]}
        self._add({"type": "context_edit", "targetId": chosen["id"], "replacement": replacement})

    def failed_reply(self) -> None:
        """An overflowing reply that pi's recovery hides before it compacts."""
        self.user()
        self.assistant(0)
        self.context_edit(self.entries[-1])

    def usage_entry(self) -> None:
        usage = {k: self.rng.randint(0, 900) for k in ("input", "output", "cacheRead", "cacheWrite")}
        entry = {"type": "usage", "kind": "cache_warm", "provider": "anthropic", "model": "m1", "usage": usage}
        self._add(entry)

    # ----------------------------------------------------------------- tree moves and summaries

    def _path(self) -> list[dict[str, Any]]:
        by_id = {e["id"]: e for e in self.entries}
        path, node = [], by_id.get(self.leaf or "")
        while node is not None:
            path.append(node)
            node = by_id.get(node["parentId"] or "")
        return path[::-1]

    def _details(self) -> dict[str, Any]:
        files = ["src/a.py", "src/c.py", "notes.md", "Zeta.md", "éclair.txt"]
        return {"readFiles": self.rng.sample(files, 2), "modifiedFiles": self.rng.sample(files, 1)}

    def compaction(self) -> None:
        path = self._path()
        if not path:
            return
        kept = self.rng.choice(path[len(path) // 2 :])["id"] if self.rng.random() < 0.9 else "ffffffff"
        entry: dict[str, Any] = {"type": "compaction", "summary": "Earlier: " + self.text(10, 400)}
        entry.update(firstKeptEntryId=kept, tokensBefore=self.rng.randint(1000, 90000))
        if self.rng.random() < 0.7:
            entry["details"] = self._details()
        entry["fromHook"] = self.rng.random() < 0.2
        self._add(entry)

    def branch(self, summarize: bool) -> None:
        if not self.entries:
            return
        target = self.rng.choice(self.entries)["id"]
        if not summarize:
            self.leaf = target
            return
        entry: dict[str, Any] = {"type": "branch_summary", "fromId": target, "summary": self.text(0, 300)}
        if self.rng.random() < 0.6:
            entry["details"] = self._details()
        entry["fromHook"] = self.rng.random() < 0.2
        self._add(entry, parent=target)

    def settings_entry(self) -> None:
        kind = self.rng.choice(("model", "thinking", "label", "name", "custom"))
        if kind == "model":
            self._add({"type": "model_change", "provider": "openai", "modelId": "gpt-5"})
        elif kind == "thinking":
            self._add({"type": "thinking_level_change", "thinkingLevel": "high"})
        elif kind == "label" and self.entries:
            self._add({"type": "label", "targetId": self.rng.choice(self.entries)["id"], "label": "mark"})
        elif kind == "name":
            self._add({"type": "session_info", "name": "demo"})
        else:
            self._add({"type": "custom", "customType": "state", "data": {"n": 1}})

    def grow(self, operations: int) -> list[dict[str, Any]]:
        actions = [
            (self.turn, 10),
            (self.bash, 2),
            (self.custom_message, 1),
            (self.compaction, 2),
            (lambda: self.branch(False), 1),
            (lambda: self.branch(True), 1),
            (self.settings_entry, 2),
            (self.system, 1),
            (self.context_edit, 2),
            (self.failed_reply, 1),
            (self.usage_entry, 1),
        ]
        functions, weights = zip(*actions, strict=True)
        if self.rng.random() < 0.8:  # pi 1.x sessions begin with the first request's system message
            self.system(first=True)
        self.turn()
        for _ in range(operations):
            self.rng.choices(functions, weights)[0]()
        return self.entries
