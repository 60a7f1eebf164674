"""Codex CLI threads (`~/.codex/sessions`) read as pi sessions.

A thread's files are its first rollout and its rewind segments; a fork is its own thread whose
history starts with a prefix of another thread's. Each file is read as its whole history (its
base's lines before the branch point, then its own) through one `LineMapper`: the ids are
synthesized from (file, ordinal), so the base's entries come out the same in every history and
are kept once, and a segment's first entry hangs under the base's last entry before the branch
point. Files go base first and the live segment (the newest) last, so the leaf is the last entry.

What each line becomes (codex_lines.py):

| Codex line | pi entry |
|---|---|
| `session_meta` | `custom codex/session_meta` (the system prompt is in it); the header from the first one |
| `response_item` user message typed by the user | `message` user (`input_image` data URLs as images) |
| developer message; `<environment_context>` / AGENTS.md user items; the compaction summary item | `custom codex/developer`, `codex/context`, `codex/compaction_summary`: harness context pi supplies its own of |
| `reasoning`, assistant `message`, `function_call`, `custom_tool_call` up to the `token_usage_record` | one assistant `message` (openai-responses, pi-ai's block shapes, usage from the record) |
| `function_call_output`, `custom_tool_call_output` | `message` toolResult; `isError` from the command's event or its exit code line; details = the event |
| `turn_context` | `model_change` / `thinking_level_change` when the value changes, then `custom codex/turn_context` |
| `world_state` | `custom codex/world_state` |
| the summary call (`compaction_output`) + `compacted` | `compaction` (retain-none: `firstKeptEntryId` is its own id), usage = the summary call's |
| `event_msg` (UI copies, counters) | dropped; CommandExecution folded into the tool result, `token_count` into tokensBefore |
| `session_index.jsonl` names | `session_info`, placed among the lines by time |
| anything else | `custom codex/unknown:<kind>`, counted in `unknown_kinds` |
"""

from __future__ import annotations

from pathlib import Path

from . import AgentName, Provenance, ReadFile, Source, Translation
from .codex_files import SESSION_INDEX, Rollout, chain, lines_of, names_in, rollout_name, session_meta
from .codex_lines import Ids, LineMapper, iso_ms, time_key

_UNKNOWN = "codex/unknown:"
_FIRST_LINE_LIMIT = 1 << 22  # a session_meta line carries the system prompt (~20 KB); read at most this


def _sessions_dir(root: Path) -> Path:
    return root if root.name == "sessions" or not (root / "sessions").is_dir() else root / "sessions"


def _meta_on_disk(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as file:
            first = file.readline(_FIRST_LINE_LIMIT)
    except OSError:
        return {}
    return session_meta(next(lines_of(first if first.endswith(b"\n") else b""), None))


class CodexTranslator:
    agent: AgentName = "codex"

    def discover(self, root: Path) -> list[Source]:
        sessions = _sessions_dir(root)
        by_thread: dict[str, list[Path]] = {}
        for path in sorted(sessions.rglob("rollout-*.jsonl")):
            name = rollout_name(path)
            if name is not None and path.is_file():
                by_thread.setdefault(name.thread_id, []).append(path)
        index = sessions.parent / SESSION_INDEX
        extra = (index,) if index.is_file() else ()
        bases = {thread: self._fork_base(paths) for thread, paths in by_thread.items()}
        sources: dict[str, Source] = {}

        def source(thread: str, seen: frozenset[str] = frozenset()) -> Source:
            if thread not in sources:
                paths = sorted(by_thread[thread], key=lambda p: _order(p))
                files = tuple(paths)
                base = bases[thread]
                if base is not None and base in by_thread and base not in seen | {thread}:
                    files += tuple(f for f in source(base, seen | {thread}).files if f not in files and f not in extra)
                sources[thread] = Source("codex", paths[-1], thread, files + extra)
            return sources[thread]

        return [source(thread) for thread in sorted(by_thread)]

    @staticmethod
    def _fork_base(paths: list[Path]) -> str | None:
        """The thread a thread was forked from (its first file's base, when that is another thread)."""
        first = min(paths, key=_order)
        name = rollout_name(first)
        base = session_meta_base(_meta_on_disk(first))
        return base if base is not None and name is not None and base != name.thread_id else None

    def translate(self, source: Source, read: ReadFile) -> Translation:
        rollouts, index = [], b""
        for path in source.files:
            name = rollout_name(path)
            if name is not None:
                rollouts.append(Rollout(path, name, list(lines_of(read(path)))))
            elif path.name == SESSION_INDEX:
                index = read(path)
        thread = source.session_id.lower()
        # A file with no whole line yet is not part of the thread yet (not even its branch point is known).
        own = sorted((r for r in rollouts if r.name.thread_id == thread and r.lines), key=lambda r: r.name.order)
        names = names_in(index, thread)
        ids, seen = Ids(), set[str]()
        entries: list[dict[str, object]] = []
        unknown: dict[str, int] = {}
        leaf: str | None = None
        for number, rollout in enumerate(own):
            mapper = LineMapper(ids)
            names_left = _Names(names, ids, seen)
            for key, line in chain(rollout, rollouts):
                entries += names_left.before(mapper, str((line.value or {}).get("timestamp", "")))
                entries += _new(mapper.feed(key, line.ordinal, line.value, line.text), seen)
            later = own[number + 1] if number + 1 < len(own) else None
            # Names given before the next file began belong at the end of this one; the live file takes the rest.
            start = str((later.lines[0].value or {}).get("timestamp", "")) if later is not None else None
            entries += names_left.before(mapper, start)
            leaf = mapper.tail
        for entry in entries:
            kind = str(entry.get("customType", ""))
            if entry["type"] == "custom" and kind.startswith(_UNKNOWN):
                unknown[kind[len(_UNKNOWN):]] = unknown.get(kind[len(_UNKNOWN):], 0) + 1
        return Translation(
            header=self._header(own, source, thread),
            entries=entries,
            leaf_id=leaf,
            provenance=Provenance("codex", _version(own), str(source.path), thread),
            unknown_kinds=unknown,
            parent=self._parent(own, rollouts, source),
        )

    @staticmethod
    def _header(own: list[Rollout], source: Source, thread: str) -> dict[str, object]:
        first = own[0].meta if own else {}
        live = own[-1].meta if own else {}
        header: dict[str, object] = {
            "type": "session", "version": 3, "id": thread,
            "timestamp": iso_ms(first.get("timestamp")), "cwd": str(live.get("cwd") or first.get("cwd") or ""),
        }
        return header

    @staticmethod
    def _parent(own: list[Rollout], rollouts: list[Rollout], source: Source) -> Source | None:
        base = session_meta_base(own[0].meta) if own else None
        if base is None or base == source.session_id.lower():
            return None
        theirs = sorted((r for r in rollouts if r.name.thread_id == base), key=lambda r: r.name.order)
        if not theirs:
            return None
        mine = {r.path for r in own}
        files = tuple(f for f in source.files if f not in mine)
        return Source("codex", theirs[-1].path, base, files)


class _Names:
    """The thread's names (`session_index.jsonl`), placed among the lines by time. A name is placed
    once, by the first history that reaches it; the others pass it by without hanging anything under it."""

    def __init__(self, names: list[tuple[int, str, str]], ids: Ids, seen: set[str]) -> None:
        self.names, self.ids, self.seen, self.placed = names, ids, seen, 0

    def before(self, mapper: LineMapper, stamp: str | None) -> list[dict[str, object]]:
        """session_info entries for the names given before `stamp` (every one left for None)."""
        made: list[dict[str, object]] = []
        while self.placed < len(self.names) and (stamp is None or _earlier(self.names[self.placed][1], stamp)):
            number, updated, name = self.names[self.placed]
            self.placed += 1
            if self.ids.of(f"session_index:{number}") not in self.seen:
                made += _new(mapper.session_info(number, updated, name), self.seen)
        return made


def _earlier(updated: str, stamp: str) -> bool:
    return bool(stamp) and time_key(updated) < time_key(stamp)


def session_meta_base(meta: dict[str, object]) -> str | None:
    base = meta.get("history_base")
    thread = base.get("thread_id") if isinstance(base, dict) else meta.get("forked_from_id")
    return thread.lower() if isinstance(thread, str) else None


def _order(path: Path) -> tuple[int, str]:
    name = rollout_name(path)
    return name.order if name is not None else (2, path.name)


def _version(own: list[Rollout]) -> str | None:
    for rollout in reversed(own):
        version = rollout.meta.get("cli_version")
        if isinstance(version, str):
            return version
    return None


def _new(made: list[dict[str, object]], seen: set[str]) -> list[dict[str, object]]:
    """The entries not made before: a base's entries come out again in each history that holds them."""
    fresh = [entry for entry in made if entry["id"] not in seen]
    seen.update(str(entry["id"]) for entry in fresh)
    return fresh
