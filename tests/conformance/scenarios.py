"""Deterministic scenarios for the pi conformance tests.

A scenario is a JSON object `{name, seed, clock, ops}` that `pi_driver.mjs` runs
against pi's SessionManager and `test_pi_conformance.py` runs against the daemon.
Ops name entries by reference: `{"$ref": i}` is the id of the i-th entry the
scenario created (in op order), `{"$file": k}` the k-th session file (create,
createBranchedSession, forkFrom each add one). Both sides resolve references
the same way, so one op list drives both.

The generator keeps a small model of pi's session tree so that it only asks for
things pi accepts (branch targets in the current session, compaction
`firstKeptEntryId` on the path, forks of paths holding an assistant message, so
that pi writes the file at once).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Op = dict[str, Any]
Scenario = dict[str, Any]

CWD = "/home/user/project"
OTHER_CWD = "/home/user/other project/ü"

# Texts pi must write byte for byte: non-ASCII, escapes, controls, U+2028.
TEXTS = [
    "hello",
    "Write a function that adds two numbers.",
    "naïve café – “quotes” and 'apostrophes'",
    "日本語のテキスト 🚀 emoji 👩‍💻",
    'backslash \\ "double quotes" / slash',
    "line one\nline two\n\ttabbed\r\ncrlf",
    "controls \u0000 \u0001 \u001f \u007f \b \f",
    "separators \u2028 \u2029 and \u00a0 nbsp \ufeff bom",
    "",
    "   ",
    "x" * 300,
]

# Names for appendSessionInfo: pi stores name.trim() (JavaScript's trim).
NAMES = [
    "Refactor the parser",
    "",
    "   ",
    "  padded  ",
    "名前 セッション",
    "\ufeffbom padded\ufeff",
    "\u00a0no-break padded\u00a0",
    "\u2003em space\u3000",
    "\u200bzero width (not trimmed)\u200b",
    "\u180emongolian vowel separator\u180e",
    "\x1cinformation separators (not trimmed by JS)\x1f",
    "\x85next line\x85",
    "\t\ntabs and newlines\r\n",
]

LABELS = ["checkpoint", "before refactor", "ラベル", "  spaced  ", "\ufefflabel"]
# Costs that JavaScript and Python print differently (1e-05 vs 0.00001).
COSTS = [0, 0.0015, 0.00001, 0.0000045, 1e-7, 12.5, 0.1 + 0.2, 123456789.125]
# Tool declarations as pi 1.x persists them in system messages (`toolsAdded`: name, description,
# JSON-schema parameters).
TOOLS = [
    {"name": "read", "description": "Read the contents of a file.",
     "parameters": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string", "description": "Path to the file"}, "offset": {"type": "number"}}}},
    {"name": "bash", "description": "Execute a bash command in the working directory.",
     "parameters": {"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}, "timeout": {"type": "number", "description": "Seconds"}}}},
    {"name": "edit", "description": "Make precise file edits — exact text replacement.",
     "parameters": {"type": "object", "required": ["path", "edits"], "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {"type": "object"}}}}},
]  # fmt: skip
SECTIONS = {
    "preamble": "You are a coding assistant running inside pi, a coding agent harness.",
    "tools": "<tools>\n- read: Read file contents\n- bash: Execute bash commands\n</tools>",
    "cwd": "<cwd>/home/user/project</cwd>",
}
# Later system messages patch sections by name (null removes one), add or remove tools, or add text.
SYSTEM_PATCHES: list[dict[str, Any]] = [
    {"sections": {"cwd": "<cwd>/home/user/project/src</cwd>"}},
    {"sections": {"skills": "<skills>\n- release: cut a release\n</skills>"}},
    {"sections": {"skills": None, "tools": "<tools>\n- read: Read file contents\n</tools>"}},
    {"toolsAdded": [TOOLS[2]]},
    {"toolsRemoved": [{"name": "bash"}], "sections": {"tools": "<tools>\n- read\n- edit\n</tools>"}},
    {"content": "Answer in English.", "sections": {}},
    {"content": [{"type": "text", "text": "Prefer small diffs."}]},
]


def usage_of(rng: random.Random) -> dict[str, Any]:
    cost = [rng.choice(COSTS) for _ in range(5)]
    return {
        "input": rng.randrange(0, 200_000), "output": rng.randrange(0, 8000), "cacheRead": rng.randrange(0, 1000),
        "cacheWrite": 0, "totalTokens": rng.randrange(0, 210_000),
        "cost": dict(zip(["input", "output", "cacheRead", "cacheWrite", "total"], cost, strict=True)),
    }  # fmt: skip


PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


# --------------------------------------------------------------------------- pi's tree, modelled


@dataclass(eq=False)
class SimEntry:
    ref: int | None  # index into the scenario's created ids; None: pi made it without telling us
    parent: SimEntry | None
    type: str
    role: str | None = None


@dataclass
class SimSession:
    file: int
    entries: list[SimEntry] = field(default_factory=list)
    leaf: SimEntry | None = None
    labels: dict[int, str] = field(default_factory=dict)  # target ref -> label, in pi's Map order

    def path(self, entry: SimEntry | None) -> list[SimEntry]:
        """Root-to-entry path as pi walks it: a parent outside this session ends it."""
        members = set(map(id, self.entries))
        out: list[SimEntry] = []
        while entry is not None and id(entry) in members:
            out.append(entry)
            entry = entry.parent
        return out[::-1]

    def referable(self) -> list[SimEntry]:
        return [e for e in self.entries if e.ref is not None]


@dataclass
class Builder:
    rng: random.Random
    legacy: bool = False  # pi 0.x's operations only: no system messages, context edits, usage
    ops: list[Op] = field(default_factory=list)
    created: int = 0
    sessions: list[SimSession] = field(default_factory=list)  # one per file, in file order
    current: SimSession | None = None
    msg_clock: int = 1735689600000

    # ---- plumbing

    def _append(self, op: Op, type_: str, role: str | None = None) -> SimEntry:
        assert self.current is not None
        entry = SimEntry(self.created, self.current.leaf, type_, role)
        self.created += 1
        self.current.entries.append(entry)
        self.current.leaf = entry
        self.ops.append(op)
        return entry

    def _ts(self) -> int:
        self.msg_clock += self.rng.choice([1, 1000, 1500, 60_000])
        return self.msg_clock

    def _text(self) -> str:
        return self.rng.choice(TEXTS)

    def _pick(self, entries: list[SimEntry]) -> SimEntry:
        return self.rng.choice(entries)

    # ---- messages

    def user(self) -> SimEntry:
        kind = self.rng.random()
        if kind < 0.5:
            content: Any = self._text()
        elif kind < 0.85:
            content = [{"type": "text", "text": self._text()}]
        else:
            content = [
                {"type": "text", "text": "look at this"},
                {"type": "image", "data": PNG_1PX, "mimeType": "image/png"},
            ]
        return self.message({"role": "user", "content": content, "timestamp": self._ts()})

    def assistant(self, tool_call: bool = False) -> SimEntry:
        blocks: list[dict[str, Any]] = []
        if self.rng.random() < 0.4:
            blocks.append({"type": "thinking", "thinking": "Let me think… " + self._text(), "thinkingSignature": "sig=="})
        blocks.append({"type": "text", "text": self._text()})
        if tool_call:
            blocks.append(
                {
                    "type": "toolCall",
                    "id": f"toolu_{self.rng.randrange(16**8):08x}",
                    "name": self.rng.choice(["read", "bash", "edit"]),
                    "arguments": {"path": "src/main.py", "limit": self.rng.randrange(1, 500), "nested": {"a": [1, None, True]}},
                }
            )
        cost = [self.rng.choice(COSTS) for _ in range(5)]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": blocks,
            "api": "anthropic-messages",
            "provider": self.rng.choice(["anthropic", "openai", "google"]),
            "model": self.rng.choice(["claude-sonnet-4-5", "gpt-5", "gemini-2.5-pro"]),
            "usage": {
                "input": self.rng.randrange(0, 200_000),
                "output": self.rng.randrange(0, 8000),
                "cacheRead": self.rng.randrange(0, 1000),
                "cacheWrite": 0,
                "totalTokens": self.rng.randrange(0, 210_000),
                "cost": dict(zip(["input", "output", "cacheRead", "cacheWrite", "total"], cost, strict=True)),
            },
            "stopReason": "toolUse" if tool_call else self.rng.choice(["stop", "stop", "length", "error", "aborted"]),
            "timestamp": self._ts(),
        }
        if message["stopReason"] == "error":
            message["errorMessage"] = "529 overloaded_error: Overloaded"
        return self.message(message)

    def tool_result(self) -> SimEntry:
        message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": f"toolu_{self.rng.randrange(16**8):08x}",
            "toolName": self.rng.choice(["read", "bash", "edit"]),
            "content": [{"type": "text", "text": self._text()}],
            "isError": self.rng.random() < 0.2,
            "timestamp": self._ts(),
        }
        if self.rng.random() < 0.5:
            message["details"] = {"diff": "--- a\n+++ b\n", "exitCode": 0}
        if self.rng.random() < 0.15:
            message["content"].append({"type": "image", "data": PNG_1PX, "mimeType": "image/png"})
        return self.message(message)

    def bash(self) -> SimEntry:
        message: dict[str, Any] = {
            "role": "bashExecution",
            "command": self.rng.choice(["ls -la", "echo 'hi'", "false", "cat ünïcode.txt"]),
            "output": self.rng.choice(["", "total 0\n", "a\nb\n", "😀"]),
            "exitCode": self.rng.choice([0, 1, 127, None]),
            "cancelled": self.rng.random() < 0.2,
            "truncated": self.rng.random() < 0.3,
            "timestamp": self._ts(),
        }
        if message["truncated"]:
            message["fullOutputPath"] = "/tmp/pi-bash-output-1.log"
        if self.rng.random() < 0.4:
            message["excludeFromContext"] = self.rng.random() < 0.7
        return self.message(message)

    def custom_role(self) -> SimEntry:
        """A `custom` message stored as a message entry (what v2 hookMessages migrate to)."""
        message: dict[str, Any] = {
            "role": "custom",
            "customType": "hook",
            "content": self._text() if self.rng.random() < 0.5 else [{"type": "text", "text": self._text()}],
            "display": self.rng.random() < 0.5,
            "timestamp": self._ts(),
        }
        if self.rng.random() < 0.5:
            message["details"] = {"from": "hook"}
        return self.message(message)

    def system(self, first: bool = False) -> SimEntry:
        """A system message: the whole prompt and tools first, later a patch of them."""
        message: dict[str, Any] = {"role": "system", "content": ""}
        if first:
            message.update(sections=dict(SECTIONS), toolsAdded=TOOLS[:2])
        else:
            message.update(self.rng.choice(SYSTEM_PATCHES))
        message["timestamp"] = self._ts()
        return self.message(message)

    def context_edit(self) -> SimEntry | None:
        """pi's appendContextEdit on an editable entry of the active branch: hide or replace it."""
        assert self.current is not None
        path = self.current.path(self.current.leaf)
        editable = [
            e for e in path
            if e.ref is not None and (e.type == "custom_message" or (e.type == "message" and e.role in ("user", "assistant", "toolResult")))
        ]  # fmt: skip
        if not editable:
            return None
        target = self._pick(editable)
        kind = self.rng.random()
        replacement: dict[str, Any] | None
        if kind < 0.35:
            replacement = None
        elif kind < 0.75:
            replacement = {"content": "(redacted) " + self._text()}
        else:
            replacement = {"content": [{"type": "text", "text": "replaced: " + self._text()}]}
            if self.rng.random() < 0.3:
                replacement["content"].append({"type": "image", "data": PNG_1PX, "mimeType": "image/png"})
        op: Op = {"op": "appendContextEdit", "targetId": {"$ref": target.ref}, "replacement": replacement}
        return self._append(op, "context_edit")

    def usage(self) -> SimEntry:
        """A usage entry (cache warming, accounting): not part of the context."""
        op: Op = {"op": "appendUsage", "kind": self.rng.choice(["cache_warm", "title"]),
                  "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage_of(self.rng)}  # fmt: skip
        if self.rng.random() < 0.4:
            op["note"] = self.rng.choice(["warm-up before idle timeout", ""])
        return self._append(op, "usage")

    def message(self, message: dict[str, Any]) -> SimEntry:
        return self._append({"op": "appendMessage", "message": message}, "message", message["role"])

    # ---- other entry types

    def thinking(self) -> SimEntry:
        level = self.rng.choice(["off", "minimal", "low", "medium", "high", "xhigh"])
        return self._append({"op": "appendThinkingLevelChange", "thinkingLevel": level}, "thinking_level_change")

    def model(self) -> SimEntry:
        provider, model = self.rng.choice([("anthropic", "claude-opus-4-1"), ("openai", "gpt-5-mini"), ("ollama", "qwen3:8b")])
        return self._append({"op": "appendModelChange", "provider": provider, "modelId": model}, "model_change")

    def compaction(self) -> SimEntry | None:
        assert self.current is not None
        on_path = [e for e in self.current.path(self.current.leaf) if e.ref is not None]
        if not on_path:
            return None
        op: Op = {
            "op": "appendCompaction",
            "summary": "## Goal\n" + self._text(),
            "firstKeptEntryId": {"$ref": self._pick(on_path).ref},
            "tokensBefore": self.rng.randrange(1000, 200_000),
        }
        if self.rng.random() < 0.5:
            op["details"] = {"readFiles": ["a.py", "ü.md"], "modifiedFiles": []}
        if self.rng.random() < 0.3:
            op["fromHook"] = self.rng.random() < 0.5
        if not self.legacy and self.rng.random() < 0.5:
            op["usage"] = usage_of(self.rng)  # pi 1.x: what the summary cost
        return self._append(op, "compaction")

    def custom(self) -> SimEntry:
        op: Op = {"op": "appendCustomEntry", "customType": self.rng.choice(["my-ext", "todo-state", "ext/ünï"])}
        choice = self.rng.random()
        if choice < 0.7:
            op["data"] = self.rng.choice([{"count": 3, "items": ["a", None]}, [1, 2, 3], "text", 0, False, None])
        return self._append(op, "custom")

    def custom_message(self) -> SimEntry:
        content: Any
        if self.rng.random() < 0.5:
            content = self._text()
        else:
            content = [{"type": "text", "text": self._text()}]
            if self.rng.random() < 0.3:
                content.append({"type": "image", "data": PNG_1PX, "mimeType": "image/png"})
        op: Op = {
            "op": "appendCustomMessageEntry",
            "customType": self.rng.choice(["reminder", "hook-note"]),
            "content": content,
            "display": self.rng.random() < 0.6,
        }
        if self.rng.random() < 0.5:
            op["details"] = self.rng.choice([{"source": "hook", "n": 1.5}, ["x"], "d", None])
        return self._append(op, "custom_message")

    def name(self) -> SimEntry:
        return self._append({"op": "appendSessionInfo", "name": self.rng.choice(NAMES)}, "session_info")

    def label(self) -> SimEntry:
        assert self.current is not None
        target = self._pick(self.current.referable())
        op: Op = {"op": "appendLabelChange", "targetId": {"$ref": target.ref}}
        kind = self.rng.random()
        if kind < 0.65:
            op["label"] = self.rng.choice(LABELS)
        elif kind < 0.85:
            op["label"] = ""  # cleared, written as "label":""
        # else: no label key at all, also a clear
        entry = self._append(op, "label")
        assert target.ref is not None
        self.current.labels.pop(target.ref, None)  # pi's Map: delete, then set at the end
        if op.get("label"):
            self.current.labels[target.ref] = op["label"]
        return entry

    # ---- leaf moves and sessions

    def branch(self) -> None:
        assert self.current is not None
        target = self._pick(self.current.referable())
        self.current.leaf = target
        self.ops.append({"op": "branch", "id": {"$ref": target.ref}})

    def reset_leaf(self) -> None:
        assert self.current is not None
        self.current.leaf = None
        self.ops.append({"op": "resetLeaf"})

    def branch_with_summary(self) -> SimEntry:
        assert self.current is not None
        target = None if self.rng.random() < 0.25 else self._pick(self.current.referable())
        self.current.leaf = target
        op: Op = {
            "op": "branchWithSummary",
            "id": None if target is None else {"$ref": target.ref},
            "summary": self.rng.choice(["We tried X; it failed because Y.", "", "要約 ✓"]),
        }
        if self.rng.random() < 0.5:
            op["details"] = {"readFiles": ["x.ts"], "modifiedFiles": ["y.ts"]}
        if self.rng.random() < 0.3:
            op["fromHook"] = True
        if not self.legacy and self.rng.random() < 0.5:
            op["usage"] = usage_of(self.rng)  # pi 1.x: what the summary cost (session/branch's usage)
        return self._append(op, "branch_summary")

    def create(self, cwd: str = CWD) -> None:
        self.current = SimSession(file=len(self.sessions))
        self.sessions.append(self.current)
        self.ops.append({"op": "create", "cwd": cwd})

    def fork_leaf_candidates(self) -> list[SimEntry]:
        assert self.current is not None
        return [
            e
            for e in self.current.referable()
            if any(p.role == "assistant" for p in self.current.path(e))
        ]

    def create_branched_session(self) -> bool:
        assert self.current is not None
        candidates = self.fork_leaf_candidates()
        if not candidates:
            return False
        leaf = self._pick(candidates)
        path = self.current.path(leaf)
        kept = [e for e in path if e.type != "label"]
        new = SimSession(file=len(self.sessions), entries=list(kept))
        kept_refs = {e.ref for e in kept}
        parent: SimEntry | None = kept[-1] if kept else None
        for target, text in self.current.labels.items():
            if target in kept_refs:
                parent = SimEntry(None, parent, "label")
                new.entries.append(parent)
                new.labels[target] = text
        new.leaf = new.entries[-1] if new.entries else None
        self.sessions.append(new)
        self.current = new
        self.ops.append({"op": "createBranchedSession", "leafId": {"$ref": leaf.ref}})
        return True

    def fork_from(self) -> None:
        source = self.rng.choice(self.sessions)
        new = SimSession(file=len(self.sessions), entries=list(source.entries), labels=dict(source.labels))
        new.leaf = new.entries[-1] if new.entries else None
        self.sessions.append(new)
        self.current = new
        self.ops.append({"op": "forkFrom", "path": {"$file": source.file}, "cwd": OTHER_CWD})

    def reopen(self) -> None:
        """pi's open: the leaf becomes the file's last entry."""
        session = self.rng.choice(self.sessions)
        session.leaf = session.entries[-1] if session.entries else None
        self.current = session
        self.ops.append({"op": "open", "path": {"$file": session.file}})

    def set_clock(self) -> None:
        """Jump the clock (back or forth): children whose times disagree with file order."""
        second = self.rng.randrange(0, 3600)
        self.ops.append({"op": "setClock", "at": f"2025-01-01T{second // 60 // 60:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"})


# --------------------------------------------------------------------------- generation

STEP_WEIGHTS: list[tuple[str, int]] = [
    ("user", 14),
    ("assistant", 14),
    ("tool_turn", 6),
    ("bash", 4),
    ("custom_role", 1),
    ("thinking", 3),
    ("model", 3),
    ("compaction", 3),
    ("custom", 3),
    ("custom_message", 4),
    ("name", 3),
    ("label", 5),
    ("branch", 6),
    ("reset_leaf", 1),
    ("branch_with_summary", 3),
    ("create_branched_session", 2),
    ("fork_from", 1),
    ("reopen", 1),
    ("set_clock", 1),
    ("probe", 2),
    ("system_patch", 2),
    ("context_edit", 4),
    ("usage", 2),
]


def _step(b: Builder, kind: str) -> None:
    actions: dict[str, Callable[[], Any]] = {
        "user": b.user,
        "assistant": b.assistant,
        "tool_turn": lambda: (b.assistant(tool_call=True), b.tool_result()),
        "bash": b.bash,
        "custom_role": b.custom_role,
        "thinking": b.thinking,
        "model": b.model,
        "compaction": b.compaction,
        "custom": b.custom,
        "custom_message": b.custom_message,
        "name": b.name,
        "label": b.label,
        "branch": b.branch,
        "reset_leaf": b.reset_leaf,
        "branch_with_summary": b.branch_with_summary,
        "create_branched_session": b.create_branched_session,
        "fork_from": b.fork_from,
        "reopen": b.reopen,
        "set_clock": b.set_clock,
        "system_patch": b.system,
        "context_edit": b.context_edit,
        "usage": b.usage,
        "probe": lambda: b.ops.extend([{"op": "leaf"}, {"op": "contexts"}]),
    }
    actions[kind]()


def finish(b: Builder) -> None:
    """Probe the final in-memory state, then every file as pi opens it."""
    b.ops.extend([{"op": "leaf"}, {"op": "name"}, {"op": "contexts"}, {"op": "tree"}, {"op": "files"}])
    b.ops.extend({"op": "inspect", "path": {"$file": s.file}} for s in b.sessions)


PI1_STEPS = {"system_patch", "context_edit", "usage"}


def generate(seed: int, steps: int | None = None, legacy: bool = False) -> Scenario:
    """A random scenario; `legacy`: with pi 0.x's operations only (what 0.73.1 can write)."""
    rng = random.Random(seed)
    b = Builder(rng, legacy=legacy)
    b.create()
    if not legacy and rng.random() < 0.75:  # pi 1.x persists the prompt and tools first; 0.x sessions have none
        b.system(first=True)
    # pi 0.x writes nothing before the first assistant message: start with a turn.
    b.user()
    b.assistant()
    kinds = [k for k, _ in STEP_WEIGHTS if not (legacy and k in PI1_STEPS)]
    weights = [w for k, w in STEP_WEIGHTS if not (legacy and k in PI1_STEPS)]
    for _ in range(steps if steps is not None else rng.randrange(15, 45)):
        _step(b, rng.choices(kinds, weights)[0])
    finish(b)
    step_ms = rng.choice([1, 1, 1000, 0])  # 0: equal timestamps, the tree keeps file order
    return {"name": f"random-{seed}", "seed": seed, "clock": {"start": "2025-01-01T00:00:00.000Z", "stepMs": step_ms}, "ops": b.ops}


def tour() -> Scenario:
    """Every op and variant at least once, in a fixed order."""
    b = Builder(random.Random(0))
    b.create()
    b.system(first=True)
    b.user()
    b.assistant()
    b.thinking()
    b.model()
    b.assistant(tool_call=True)
    b.tool_result()
    b.bash()
    b.custom_role()
    b.message({"role": "bashExecution", "command": "secret", "output": "x", "exitCode": 0, "cancelled": False, "truncated": False, "excludeFromContext": True, "timestamp": b._ts()})
    first = b.user()
    b.custom()
    b._append({"op": "appendCustomEntry", "customType": "no-data"}, "custom")
    b.ops.extend([{"op": "file"}, {"op": "entries"}])
    b._append({"op": "appendCustomMessageEntry", "customType": "s", "content": "string content", "display": True}, "custom_message")
    b._append({"op": "appendCustomMessageEntry", "customType": "b", "content": [{"type": "text", "text": "blocks"}, {"type": "image", "data": PNG_1PX, "mimeType": "image/png"}], "display": False, "details": {"k": [1, 2]}}, "custom_message")
    for name in NAMES:
        b._append({"op": "appendSessionInfo", "name": name}, "session_info")
        b.ops.append({"op": "name"})
    assert first.ref is not None
    for label in ["one", "two", "", "three", None, "four"]:
        op: Op = {"op": "appendLabelChange", "targetId": {"$ref": first.ref}}
        if label is not None:
            op["label"] = label
        b._append(op, "label")
        b.ops.append({"op": "tree"})
    b.current.labels[first.ref] = "four"  # type: ignore[union-attr]
    for patch in SYSTEM_PATCHES:
        b.message({"role": "system", "content": "", **patch, "timestamp": b._ts()})
    b._append({"op": "appendUsage", "kind": "cache_warm", "provider": "anthropic", "model": "m", "usage": usage_of(b.rng), "note": "n"}, "usage")
    for replacement in [None, {"content": "a string"}, {"content": [{"type": "text", "text": "blocks"}]}]:
        for target in b.current.path(b.current.leaf)[:12]:  # type: ignore[union-attr]
            if target.type == "message" and target.role in ("user", "assistant", "toolResult"):
                b._append({"op": "appendContextEdit", "targetId": {"$ref": target.ref}, "replacement": replacement}, "context_edit")
    b.ops.append({"op": "contexts"})
    b.compaction()
    b._append({"op": "appendCompaction", "summary": "with usage", "firstKeptEntryId": {"$ref": first.ref}, "tokensBefore": 5, "usage": usage_of(b.rng)}, "compaction")
    b.user()
    b.assistant()
    b.branch()
    b.user()
    b.reset_leaf()
    b.user()
    b.assistant()
    b._append({"op": "branchWithSummary", "id": None, "summary": "from the root"}, "branch_summary")
    b.current.leaf = b.current.entries[-1]  # type: ignore[union-attr]
    b._append({"op": "branchWithSummary", "id": {"$ref": first.ref}, "summary": "", "details": {"a": 1}, "fromHook": False}, "branch_summary")
    b.assistant()
    b.ops.append({"op": "contexts"})
    b.set_clock()
    b.user()
    b.assistant()
    b.create_branched_session()
    b.user()
    b.fork_from()
    b.assistant()
    b.reopen()
    b.user()
    finish(b)
    return {"name": "tour", "seed": 0, "clock": {"start": "2025-01-01T00:00:00.000Z", "stepMs": 1}, "ops": b.ops}


def label_fork() -> Scenario:
    """A fork of a path that holds label entries (pi orphans the entries below them)."""
    b = Builder(random.Random(7))
    b.create()
    u = b.user()
    b.assistant()
    b._append({"op": "appendLabelChange", "targetId": {"$ref": u.ref}, "label": "start"}, "label")
    b.user()
    last = b.assistant()
    b.ops.append({"op": "createBranchedSession", "leafId": {"$ref": last.ref}})
    b.ops.append({"op": "leaf"})
    b.ops.append({"op": "contexts"})
    b.sessions.append(SimSession(file=1))
    finish(b)
    return {"name": "label-fork", "seed": 7, "clock": {"start": "2025-01-01T00:00:00.000Z", "stepMs": 1}, "ops": b.ops}


def edge_strings() -> Scenario:
    """Lone surrogates (a text cut inside an emoji): JSON.stringify writes them as \\udXXX escapes."""
    b = Builder(random.Random(11))
    b.create()
    u = b.message({"role": "user", "content": "cut inside an emoji: \ud83d", "timestamp": b._ts()})
    b.message({"role": "assistant", "content": [{"type": "text", "text": "low half \ude00 alone"}], "api": "anthropic-messages", "provider": "anthropic", "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": b._ts()})
    b.message({"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": [{"type": "text", "text": "truncated output \ud83d"}], "isError": False, "timestamp": b._ts()})
    b._append({"op": "appendSessionInfo", "name": "name \udfff"}, "session_info")
    b._append({"op": "appendLabelChange", "targetId": {"$ref": u.ref}, "label": "label \ud800"}, "label")
    b.custom_message()
    finish(b)
    return {"name": "edge-strings", "seed": 11, "clock": {"start": "2025-01-01T00:00:00.000Z", "stepMs": 1}, "ops": b.ops}


def leniency() -> Scenario:
    """Unusual calls pi accepts: labels on labels, blank names and summaries, equal timestamps.
    (An unknown firstKeptEntryId is a documented difference, tested on its own.)"""
    b = Builder(random.Random(13))
    b.create()
    b.user()
    b.assistant()
    b.user()
    label = b._append({"op": "appendLabelChange", "targetId": {"$ref": 0}, "label": "first"}, "label")
    b._append({"op": "appendLabelChange", "targetId": {"$ref": label.ref}, "label": "label on a label"}, "label")
    b._append({"op": "appendSessionInfo", "name": ""}, "session_info")
    b._append({"op": "branchWithSummary", "id": None, "summary": ""}, "branch_summary")
    b._append({"op": "appendCompaction", "summary": "", "firstKeptEntryId": {"$ref": 0}, "tokensBefore": 0}, "compaction")
    b.assistant()
    finish(b)
    return {"name": "leniency", "seed": 13, "clock": {"start": "2025-01-01T00:00:00.000Z", "stepMs": 0}, "ops": b.ops}


# Numbers JavaScript and Python spell or round differently.
EDGE_NUMBERS: dict[str, Any] = {
    "integralFloat": 3.0, "negZero": -0.0, "tiny": 5e-324, "big": 1e21, "huge": 1.5e300, "small": 1.5e-7,
    "decimal": 0.0000045, "unsafeInt": 2**53 + 1, "int20": 10**20, "int64": 2**64, "neg": -123.456e-10,
}  # fmt: skip


def edge_numbers() -> Scenario:
    b = Builder(random.Random(12))
    b.create()
    b.user()
    b.message({"role": "assistant", "content": [{"type": "toolCall", "id": "t", "name": "calc", "arguments": EDGE_NUMBERS}], "api": "anthropic-messages", "provider": "anthropic", "model": "m", "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": dict(EDGE_NUMBERS)}, "stopReason": "toolUse", "timestamp": b._ts()})
    b._append({"op": "appendCustomEntry", "customType": "numbers", "data": EDGE_NUMBERS}, "custom")
    b._append({"op": "appendCompaction", "summary": "s", "firstKeptEntryId": {"$ref": 0}, "tokensBefore": 2**53 + 1, "details": EDGE_NUMBERS}, "compaction")
    finish(b)
    return {"name": "edge-numbers", "seed": 12, "clock": {"start": "2025-01-01T00:00:00.000Z", "stepMs": 1}, "ops": b.ops}


def all_scenarios(count: int = 40, base_seed: int = 1000, long: int = 3) -> list[Scenario]:
    """The tour, the label fork, `long` scenarios of 200 steps and `count` ordinary ones."""
    fixed = [tour(), label_fork(), leniency(), edge_strings(), edge_numbers()]
    longs = [dict(generate(base_seed - 1 - i, steps=200), name=f"long-{base_seed - 1 - i}") for i in range(long)]
    return fixed + longs + [generate(base_seed + i) for i in range(count)]


def ops_used(scenarios: list[Scenario]) -> set[str]:
    return {op["op"] for s in scenarios for op in s["ops"]}


ALL_OPS = {
    "create", "open", "appendMessage", "appendThinkingLevelChange", "appendModelChange", "appendCompaction",
    "appendCustomEntry", "appendCustomMessageEntry", "appendSessionInfo", "appendLabelChange", "branch",
    "resetLeaf", "branchWithSummary", "createBranchedSession", "forkFrom", "file", "leaf", "contexts",
    "tree", "entries", "inspect", "files", "name", "setClock", "list", "listAll", "appendUsage", "appendContextEdit",
}
# Ops the tests add themselves (they need the daemon's directories).
TEST_OPS = {"list", "listAll"}  # fmt: skip


if __name__ == "__main__":
    import json
    import sys

    json.dump(all_scenarios(int(sys.argv[1]) if len(sys.argv) > 1 else 40), sys.stdout)
