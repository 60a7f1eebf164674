"""Deterministic generator of realistic pi v3 sessions for the benchmarks.

A session is a series of agent turns (a user message, assistant messages with
text, tool calls and usage, tool results of 200-4,000 characters), with a branch
every ~50 entries (the leaf moves back, sometimes with a branch summary), a
compaction every ~2,000, labels, model and thinking-level changes, custom
entries and custom messages. Everything derives from the seed: the same seed
gives the same bytes.

Usage: python tests/benchmarks/generate.py OUT_DIR [--sizes 1000,10000] [--seed 1] [--list 2000]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

START = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
CWD = "/bench/project"
LIST_CWD = "/bench/list"
# pi's directory names for the two cwds (the cwd without its leading slash, "/" as "-")
PROJECT_DIR = "--bench-project--"
LIST_DIR = "--bench-list--"
# pi reads a session file into one JavaScript string: V8 caps strings at 2^29-24
# characters (~512 MiB), so the largest sessions use a compact size profile.
COMPACT_FROM = 300_000

WORDS = [
    "the", "a", "to", "of", "and", "in", "is", "it", "for", "that", "this", "with", "on", "be",
    "as", "are", "not", "we", "by", "file", "function", "test", "value", "error", "return",
    "import", "class", "config", "should", "will", "can", "now", "then", "first", "next", "update",
    "fix", "check", "run", "build", "session", "tree", "entry", "leaf", "parent", "branch",
    "context", "model", "tool", "result", "message", "user", "assistant", "index", "offset",
    "line", "byte", "read", "write", "append", "lock", "path", "fork", "label", "compaction",
    "summary", "token", "cache",
]
CODE = [
    "def handle(self, request):",
    "    return self.service.dispatch(request)",
    "import { readFileSync } from 'node:fs';",
    "const entries = lines.map((l) => JSON.parse(l));",
    "    if node.parent_id is None:",
    "        roots.append(node)",
    "export function buildIndex(entries: Entry[]): Index {",
    "  for (const e of entries) byId.set(e.id, e);",
    "FAILED tests/unit/test_store.py::test_append - AssertionError",
    "total 48K drwxr-xr-x 5 user user 4.0K src",
    "    raise StorageError(f'could not write {path}')",
    "}",
]
TOOLS = ("read", "bash", "edit", "write", "grep")


@dataclass(frozen=True)
class Profile:
    """Character counts: tool results and assistant text, per size class."""

    result_min: int
    result_max: int
    text_max: int
    user_max: int
    aside_max: int  # thinking, edited code, branch summaries


FULL = Profile(200, 4000, 2400, 1000, 6000)
COMPACT = Profile(30, 300, 100, 80, 120)


class Corpus:
    """Pre-built prose and code; texts are random slices, which is fast and deterministic."""

    def __init__(self, rng: random.Random) -> None:
        self.prose = " ".join(rng.choice(WORDS) for _ in range(120_000))
        self.code = "\n".join(rng.choice(CODE) for _ in range(40_000))

    def text(self, rng: random.Random, size: int) -> str:
        start = rng.randrange(0, len(self.prose) - size - 1)
        return self.prose[start : start + size]

    def code_text(self, rng: random.Random, size: int) -> str:
        start = rng.randrange(0, len(self.code) - size - 1)
        return self.code[start : start + size]


def log_uniform(rng: random.Random, low: int, high: int) -> int:
    """Sizes skewed to small, as real tool outputs are."""
    return int(low * (high / low) ** rng.random())


class SessionWriter:
    """Builds one session's lines, keeping the current path so branches and labels point into it."""

    def __init__(self, seed: int, corpus: Corpus, profile: Profile, session_id: str, cwd: str) -> None:
        self.rng = random.Random(seed)
        self.corpus = corpus
        self.profile = profile
        self.session_id = session_id
        self.cwd = cwd
        self.clock = START + timedelta(days=self.rng.randrange(0, 300))
        self.path: list[str] = []  # ids from the root to the leaf
        self.ids: set[str] = set()
        self.count = 0
        self.call_seq = 0

    # ----------------------------------------------------------- primitives

    def _tick(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randrange(5, 40_000))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"

    def _ms(self) -> int:
        return int(self.clock.timestamp() * 1000)

    def _aside(self, low: int, high: int) -> int:
        high = min(high, self.profile.aside_max)
        return log_uniform(self.rng, min(low, high // 2), high)

    def _new_id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def _entry(self, type_: str, fields: dict[str, Any], before: dict[str, Any] | None = None) -> bytes:
        """One line in pi's key order: own fields set before the ids, then ids, then the rest."""
        entry_id = self._new_id()
        line: dict[str, Any] = {"type": type_, **(before or {})}
        line.update(id=entry_id, parentId=self.path[-1] if self.path else None, timestamp=self._tick())
        line.update(fields)
        self.path.append(entry_id)
        self.count += 1
        return orjson.dumps(line)

    # ----------------------------------------------------------- entry kinds

    def header(self) -> bytes:
        stamp = self.clock.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        return orjson.dumps({"type": "session", "version": 3, "id": self.session_id, "timestamp": stamp, "cwd": self.cwd})

    def user(self) -> bytes:
        size = log_uniform(self.rng, 20, self.profile.user_max)
        self._tick()
        message = {"role": "user", "content": [{"type": "text", "text": self.corpus.text(self.rng, size)}], "timestamp": self._ms()}
        return self._entry("message", {"message": message})

    def assistant(self, tool: str | None) -> bytes:
        content: list[dict[str, Any]] = []
        if self.rng.random() < 0.3:
            content.append({"type": "thinking", "thinking": self.corpus.text(self.rng, self._aside(40, 600))})
        content.append({"type": "text", "text": self.corpus.text(self.rng, log_uniform(self.rng, 20, self.profile.text_max))})
        if tool is not None:
            self.call_seq += 1
            content.append({"type": "toolCall", "id": f"toolu_{self.call_seq:08d}", "name": tool, "arguments": self._arguments(tool)})
        tokens_in = self.rng.randrange(2_000, 150_000)
        tokens_out = self.rng.randrange(20, 2_000)
        usage = {
            "input": tokens_in,
            "output": tokens_out,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": tokens_in + tokens_out,
            "cost": {"input": round(tokens_in * 3e-6, 6), "output": round(tokens_out * 15e-6, 6), "cacheRead": 0, "cacheWrite": 0, "total": round(tokens_in * 3e-6 + tokens_out * 15e-6, 6)},
        }
        message = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": usage,
            "stopReason": "toolUse" if tool else "stop",
            "timestamp": self._ms(),
        }
        return self._entry("message", {"message": message})

    def _arguments(self, tool: str) -> dict[str, Any]:
        path = f"src/{self.rng.choice(WORDS)}/{self.rng.choice(WORDS)}.py"
        if tool == "bash":
            return {"command": f"pytest -q tests/{self.rng.choice(WORDS)}"}
        if tool == "edit":
            old = self.corpus.code_text(self.rng, self._aside(30, 400))
            return {"path": path, "oldText": old, "newText": old + "\n    pass"}
        if tool == "write":
            return {"path": path, "content": self.corpus.code_text(self.rng, self._aside(100, 1500))}
        if tool == "grep":
            return {"pattern": self.rng.choice(WORDS), "path": "src"}
        return {"path": path}

    def tool_result(self, tool: str) -> bytes:
        low, high = self.profile.result_min, self.profile.result_max
        # half skewed to short outputs, half spread evenly up to long file reads
        size = log_uniform(self.rng, low, high) if self.rng.random() < 0.5 else self.rng.randrange(low, high)
        message = {
            "role": "toolResult",
            "toolCallId": f"toolu_{self.call_seq:08d}",
            "toolName": tool,
            "content": [{"type": "text", "text": self.corpus.code_text(self.rng, size)}],
            "isError": self.rng.random() < 0.05,
            "timestamp": self._ms(),
        }
        return self._entry("message", {"message": message})

    def model_change(self) -> bytes:
        model = self.rng.choice(["claude-sonnet-4-5", "claude-opus-4-1", "gpt-5", "gemini-2.5-pro"])
        return self._entry("model_change", {"provider": "anthropic" if model.startswith("claude") else "other", "modelId": model})

    def thinking_change(self) -> bytes:
        return self._entry("thinking_level_change", {"thinkingLevel": self.rng.choice(["off", "low", "medium", "high"])})

    def custom(self) -> bytes:
        data = {"todos": [self.corpus.text(self.rng, 40) for _ in range(self.rng.randrange(1, 6))], "done": self.rng.randrange(0, 5)}
        return self._entry("custom", {}, before={"customType": "todo-state", "data": data})

    def custom_message(self) -> bytes:
        before = {"customType": "reminder", "content": self.corpus.text(self.rng, log_uniform(self.rng, 40, 400)), "display": True}
        return self._entry("custom_message", {}, before=before)

    def label(self) -> bytes:
        target = self.path[-self.rng.randrange(1, min(len(self.path), 200) + 1)]
        return self._entry("label", {"targetId": target, "label": self.rng.choice(["checkpoint", "good", "todo", "bug"])})

    def session_info(self) -> bytes:
        return self._entry("session_info", {"name": f"bench {self.corpus.text(self.rng, 24).strip()}"})

    def compaction(self) -> bytes:
        # Keep roughly the last turn or two: firstKeptEntryId is a recent entry of the path.
        kept = self.path[-min(len(self.path), self.rng.randrange(8, 40))]
        details = {"readFiles": [f"src/{w}.py" for w in self.rng.sample(WORDS, 6)], "modifiedFiles": [f"src/{w}.py" for w in self.rng.sample(WORDS, 3)]}
        fields = {
            "summary": self.corpus.text(self.rng, self._aside(1500, 6000)),
            "firstKeptEntryId": kept,
            "tokensBefore": self.rng.randrange(120_000, 190_000),
            "details": details,
        }
        return self._entry("compaction", fields)

    def branch(self) -> bytes | None:
        """Move the leaf back 2-20 entries; half the time pi's branchWithSummary writes a summary."""
        back = min(len(self.path) - 1, self.rng.randrange(2, 21))
        if back <= 0:
            return None
        del self.path[-back:]
        if self.rng.random() < 0.5:
            return None
        return self._entry("branch_summary", {"fromId": self.path[-1], "summary": self.corpus.text(self.rng, self._aside(200, 1500))})

    # ----------------------------------------------------------- the session

    def lines(self, entries: int) -> Iterator[bytes]:
        """The header, then `entries` entry lines."""
        yield self.header()
        yield self.session_info()
        next_branch = self.rng.randrange(30, 70)
        next_compaction = self.rng.randrange(1500, 2500)
        while self.count < entries:
            if self.count >= next_branch:
                next_branch = self.count + self.rng.randrange(30, 70)
                line = self.branch()
                if line is not None:
                    yield line
                continue
            if self.count >= next_compaction and len(self.path) > 50:
                next_compaction = self.count + self.rng.randrange(1500, 2500)
                yield self.compaction()
                continue
            yield from self._occasional()
            yield from self._turn()
        # the tail may overshoot by a turn: the caller cuts at `entries`

    def _occasional(self) -> Iterator[bytes]:
        roll = self.rng.random()
        if roll < 0.015:
            yield self.model_change()
        elif roll < 0.025:
            yield self.thinking_change()
        elif roll < 0.085:
            yield self.custom()
        elif roll < 0.10:
            yield self.custom_message()
        elif roll < 0.11 and len(self.path) > 1:
            yield self.label()

    def _turn(self) -> Iterator[bytes]:
        yield self.user()
        for _ in range(self.rng.choice((0, 1, 1, 2, 2, 3, 4, 6))):
            tool = self.rng.choice(TOOLS)
            yield self.assistant(tool)
            yield self.tool_result(tool)
        yield self.assistant(None)


def session_id_for(seed: int) -> str:
    rng = random.Random(seed * 7919 + 17)
    hexes = f"{rng.getrandbits(128):032x}"
    return f"{hexes[:8]}-{hexes[8:12]}-7{hexes[13:16]}-8{hexes[17:20]}-{hexes[20:]}"


def write_session(path: Path, entries: int, seed: int, corpus: Corpus, cwd: str = CWD) -> int:
    """Write a session of exactly `entries` entry lines; returns its size in bytes."""
    profile = COMPACT if entries >= COMPACT_FROM else FULL
    writer = SessionWriter(seed, corpus, profile, session_id_for(seed), cwd)
    path.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with open(path, "wb") as out:
        for number, line in enumerate(writer.lines(entries)):
            if number > entries:
                break
            out.write(line + b"\n")
            size += len(line) + 1
    return size


def list_sizes(rng: random.Random, count: int) -> list[int]:
    """Mixed sizes: mostly short sessions, some long, a few very long."""
    sizes = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.75:
            sizes.append(rng.randrange(4, 60))
        elif roll < 0.97:
            sizes.append(rng.randrange(60, 600))
        else:
            sizes.append(rng.randrange(600, 3000))
    return sizes


def write_list_dir(directory: Path, count: int, seed: int, corpus: Corpus) -> int:
    """`count` sessions of mixed sizes in one directory (pi's per-cwd layout); returns total bytes."""
    rng = random.Random(seed)
    total = 0
    for number, entries in enumerate(list_sizes(rng, count)):
        file_seed = seed * 100_003 + number
        name = f"2026-01-{1 + number % 28:02d}T10-00-{number % 60:02d}-000Z_{session_id_for(file_seed)}.jsonl"
        total += write_session(directory / name, entries, file_seed, corpus, LIST_CWD)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--list", type=int, default=2000, help="sessions in the listing directory (0: none)")
    args = parser.parse_args(argv)
    corpus = Corpus(random.Random(args.seed))
    for size in (int(s) for s in args.sizes.split(",") if s):
        path = args.out / f"{size}.jsonl"
        print(f"{path}: {write_session(path, size, args.seed + size, corpus) / 1e6:.1f} MB", file=sys.stderr)
    if args.list:
        directory = args.out / "list" / LIST_DIR
        print(f"{directory}: {write_list_dir(directory, args.list, args.seed, corpus) / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
