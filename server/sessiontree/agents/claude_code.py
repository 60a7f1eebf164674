"""Claude Code (2.1.x) sessions read as pi sessions.

A session is `projects/<slug>/<sessionId>.jsonl`, a sub-agent `projects/<slug>/<sessionId>/subagents/
agent-<id>.jsonl` (a session of its own). A file holds tree entries (`uuid`/`parentUuid`: user,
assistant, system, attachment) and metadata lines without a uuid (last-prompt, custom-title, …).

The lines are read in file order and each becomes pi entries as soon as it is whole, so a longer file
only adds entries at the end (prefix-stable):
- one response is written as one line per content block, chained and sharing `message.id`: it is
  held until a line of something else follows or the response shows it ended, then becomes one pi
  assistant message whose id is the last line's uuid;
- an entry whose parent has not been read yet (the terminal UI flushes its first turn out of order)
  waits until it is;
- a compact_boundary waits for its summary: the two become one pi compaction.
Metadata lines are `custom` entries on a chain of their own (a second root), so they neither sit on
the conversation's path nor branch it; custom-title becomes `session_info`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import msgspec

from . import AgentName, Provenance, ReadFile, Source, Translation
from . import claude_code_shapes as shapes

AGENT: Final = "claude-code"
CUSTOM_PREFIX = "claude-code/"

# Tree entry kinds (`uuid` + `parentUuid`) and metadata kinds (no uuid) Claude Code 2.1 writes or its
# loader reads; anything else is an unknown kind, kept and counted.
TREE_KINDS = frozenset({"user", "assistant", "system", "attachment", "progress"})
METADATA_KINDS = frozenset(
    {
        "last-prompt", "queue-operation", "custom-title", "agent-name", "ai-title", "mode",
        "permission-mode", "file-history-snapshot", "summary", "tag", "relocated", "agent-color",
        "agent-setting", "isolation-latch", "worktree-state", "pr-link", "bridge-session",
        "attribution-snapshot", "content-replacement", "fork-context-ref", "marble-origami-commit",
        "marble-origami-snapshot", "marble-origami-reset",
    }
)  # fmt: skip
EPOCH = "1970-01-01T00:00:00.000Z"
_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]*")  # a file name of the folder, nothing more


class ClaudeCodeTranslator:
    """Claude Code's sessions under a `projects` folder, each as pi entries."""

    agent: AgentName = AGENT

    def discover(self, root: Path) -> list[Source]:
        projects = root / "projects" if (root / "projects").is_dir() else root
        found: list[Source] = []
        for main in sorted(projects.glob("*/*.jsonl")):
            found.append(_main_source(main))
        for sub in sorted(projects.glob("*/*/subagents/agent-*.jsonl")):
            found.append(_subagent_source(sub))
        return found

    def translate(self, source: Source, read: ReadFile) -> Translation:
        lines = list(_lines(read(source.path)))
        reader = _Reader()
        for number, line in lines:
            reader.feed(number, line)
        first = next((line for _, line in lines if "uuid" in line and shapes.iso(line.get("timestamp"))), None)
        header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": source.session_id,
            "timestamp": shapes.iso(first.get("timestamp")) if first else EPOCH,
            "cwd": str(first.get("cwd", "")) if first else "",
        }
        versions = [line["version"] for _, line in lines if isinstance(line.get("version"), str)]
        provenance = Provenance(AGENT, versions[-1] if versions else None, str(source.path), source.session_id)
        return Translation(
            header=header,
            entries=reader.entries,
            leaf_id=reader.leaf([line for _, line in lines]),
            provenance=provenance,
            unknown_kinds=dict(reader.unknown_kinds),
            parent=_parent_of(source, [line for _, line in lines]),
        )


def _main_source(path: Path) -> Source:
    return Source(AGENT, path, path.stem, (path,))


def _subagent_source(path: Path) -> Source:
    return Source(AGENT, path, path.stem.removeprefix("agent-"), (path,))


def _parent_of(source: Source, lines: list[dict[str, Any]]) -> Source | None:
    """A sub-agent's session: `<slug>/<sessionId>/subagents/agent-<id>.jsonl` runs under `<slug>/<sessionId>.jsonl`.
    A `/branch` copy names the session it was copied from in each copied line's `forkedFrom`."""
    if source.path.parent.name == "subagents" and source.path.name.startswith("agent-"):
        session_dir = source.path.parent.parent
        return _main_source(session_dir.parent / f"{session_dir.name}.jsonl")
    for line in lines:
        forked = line.get("forkedFrom")
        session_id = forked.get("sessionId") if isinstance(forked, dict) else None
        if isinstance(session_id, str) and _SESSION_ID.fullmatch(session_id) and session_id != source.session_id:
            return _main_source(source.path.parent / f"{session_id}.jsonl")
    return None


def _lines(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each whole line (1-based number, value); a line still being written (no newline yet) is not read.
    A line that is not a JSON object is kept as `{"type": "<unreadable>", "text": …}`."""
    whole = data[: data.rfind(b"\n") + 1]
    for number, raw in enumerate(whole.split(b"\n")[:-1], 1):
        if not raw.strip():
            continue
        try:
            value = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            value = None
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            value = {"type": "<unreadable>", "text": raw.decode("utf-8", "replace")}
        yield number, value


@attrs.define
class _Group:
    """The lines of one response read so far."""

    message_id: str
    lines: list[dict[str, Any]]


@attrs.define
class _Emitted:
    """A response already written as one entry: its lines, for a branch off a middle line."""

    lines: list[dict[str, Any]]
    parent_id: str | None
    whole_id: str  # the entry of the whole response


@attrs.define
class _Unit:
    """What becomes entries together once its parent is there: a line, a response, or a compaction."""

    parent_uuid: str | None
    lines: list[dict[str, Any]]
    kind: Literal["line", "response", "compaction"]


class _Reader:
    """Claude Code's lines, fed in file order, as pi entries appended in the order they become whole."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.unknown_kinds: dict[str, int] = {}
        self._ids: dict[str, str | None] = {}  # a Claude Code uuid -> the pi id its children hang under
        self._seen: set[str] = set()  # every tree uuid read
        self._waiting: dict[str, list[_Unit]] = {}  # parent uuid -> units waiting for it
        self._group: _Group | None = None
        self._responses: dict[str, _Emitted] = {}  # a middle line's uuid -> its response, for branches
        self._boundaries: dict[str, dict[str, Any]] = {}  # compact_boundary uuid -> line, until its summary
        self._tool_names: dict[str, str] = {}
        self._last_time: str | None = None
        self._metadata_parent: str | None = None
        self._untimed: list[tuple[int, dict[str, Any], str]] = []  # (line number, line, custom name) until a time

    # Reading -------------------------------------------------------------------------------------

    def feed(self, number: int, line: dict[str, Any]) -> None:
        kind, uuid = line["type"], line.get("uuid")
        if kind == "assistant" and isinstance(uuid, str) and uuid not in self._seen:
            self._feed_assistant(line)
        else:
            self._close_group()
            if isinstance(uuid, str) and uuid not in self._seen:
                self._feed_tree_line(line)
            elif isinstance(uuid, str):  # a node written twice: the copy kept, off the tree
                self._untimed.append((number, line, "duplicate"))
            else:
                self._feed_metadata(number, line)
        self._last_time = shapes.iso(line.get("timestamp")) or self._last_time
        self._flush_untimed()

    def _feed_assistant(self, line: dict[str, Any]) -> None:
        self._seen.add(line["uuid"])
        self._note_tool_calls(line)
        message_id = str(shapes.message_of(line).get("id", line["uuid"]))
        group = self._group
        if group and group.message_id == message_id and line.get("parentUuid") == group.lines[-1]["uuid"]:
            group.lines.append(line)
        else:
            self._close_group()
            group = self._group = _Group(message_id, [line])
        if shapes.response_ended(group.lines):
            self._close_group()

    def _close_group(self) -> None:
        if self._group is not None:
            lines, self._group = self._group.lines, None
            self._submit(_Unit(_parent_uuid(lines[0]), lines, "response"))

    def _feed_tree_line(self, line: dict[str, Any]) -> None:
        uuid = line["uuid"]
        self._seen.add(uuid)
        kind = line["type"]
        if kind not in TREE_KINDS:
            self._count_unknown(kind)
        if kind == "system" and line.get("subtype") == "compact_boundary":
            self._boundaries[uuid] = line
            return
        parent = _parent_uuid(line)
        if line.get("isCompactSummary") is True and parent in self._boundaries:
            boundary = self._boundaries.pop(parent)
            self._submit(_Unit(self._compaction_parent(boundary), [boundary, line], "compaction"))
            return
        self._submit(_Unit(parent, [line], "line"))

    def _compaction_parent(self, boundary: dict[str, Any]) -> str | None:
        """The leaf the compaction summarised, where this file holds it (a fork's copy does not)."""
        logical = boundary.get("logicalParentUuid")
        return logical if isinstance(logical, str) and logical in self._seen else None

    def _note_tool_calls(self, line: dict[str, Any]) -> None:
        for block in shapes.blocks_of(line):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self._tool_names[str(block.get("id", ""))] = str(block.get("name", ""))

    def _count_unknown(self, kind: str) -> None:
        self.unknown_kinds[kind] = self.unknown_kinds.get(kind, 0) + 1

    # The tree ------------------------------------------------------------------------------------

    def _submit(self, unit: _Unit) -> None:
        """Write the unit's entries now if its parent is there, else when it comes."""
        parent = unit.parent_uuid
        if parent is not None and parent not in self._ids and not self._branch_off_middle(parent):
            self._waiting.setdefault(parent, []).append(unit)
            return
        ready = [unit]
        while ready:
            current = ready.pop(0)
            uuids = self._write(current, self._ids[current.parent_uuid] if current.parent_uuid else None)
            for uuid in uuids:
                for waiting in self._waiting.pop(uuid, []):
                    if uuid in self._ids or self._branch_off_middle(uuid):
                        ready.append(waiting)
                    else:
                        self._waiting.setdefault(uuid, []).append(waiting)

    def _branch_off_middle(self, uuid: str) -> bool:
        """Something hangs off a middle line of a response already written whole: write the response
        up to that line beside it, as the branch's parent (a copy; the whole one stays)."""
        response = self._responses.pop(uuid, None)
        if response is None or uuid in self._ids:
            return False
        cut = next(i for i, line in enumerate(response.lines) if line["uuid"] == uuid) + 1
        head = response.lines[:cut]
        self._append(_message_entry(uuid, response.parent_id, head[-1], shapes.assistant_message(head)))
        self._ids[uuid] = uuid
        return True

    def _write(self, unit: _Unit, parent_id: str | None) -> list[str]:
        """Append the unit's entries under `parent_id`; returns the uuids now resolved."""
        if unit.kind == "response":
            return self._write_response(unit.lines, parent_id)
        if unit.kind == "compaction":
            return self._write_compaction(unit.lines[0], unit.lines[1], parent_id)
        line = unit.lines[0]
        uuid = line["uuid"]
        if line["type"] == "progress":  # legacy: skipped by Claude Code's loader, its children re-parented
            self._ids[uuid] = parent_id
            return [uuid]
        for entry in self._line_entries(line, parent_id):
            self._append(entry)
        self._ids[uuid] = uuid
        return [uuid]

    def _write_response(self, lines: list[dict[str, Any]], parent_id: str | None) -> list[str]:
        last = lines[-1]["uuid"]
        self._append(_message_entry(last, parent_id, lines[-1], shapes.assistant_message(lines)))
        self._ids[last] = last
        for line in lines[:-1]:  # resolved when something hangs off one (a branch) or it is the leaf
            self._responses[line["uuid"]] = _Emitted(lines, parent_id, last)
        return [line["uuid"] for line in lines]

    def pi_id(self, uuid: str) -> str | None:
        """The entry a Claude Code uuid was written as (a middle line of a response: the whole response)."""
        if uuid in self._ids:
            return self._ids[uuid]
        response = self._responses.get(uuid)
        return response.whole_id if response else None

    def _write_compaction(self, boundary: dict[str, Any], summary: dict[str, Any], parent_id: str | None) -> list[str]:
        metadata = boundary.get("compactMetadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        segment = metadata.get("preservedSegment")
        head = segment.get("headUuid") if isinstance(segment, dict) else None
        kept = self.pi_id(head) if isinstance(head, str) else None
        entry = _entry("compaction", summary["uuid"], parent_id, summary)
        entry["summary"] = shapes.summary_text(summary)
        # pi keeps head..compaction after the summary: Claude Code's preserved segment. With no head in
        # this file (a fork's copy), pi keeps only the summary and what follows, as Claude Code does.
        entry["firstKeptEntryId"] = kept or (head if isinstance(head, str) else summary["uuid"])
        pre = metadata.get("preTokens")
        entry["tokensBefore"] = pre if isinstance(pre, int | float) and not isinstance(pre, bool) else 0
        entry["details"] = metadata
        self._append(entry)
        self._ids[boundary["uuid"]] = self._ids[summary["uuid"]] = summary["uuid"]
        return [boundary["uuid"], summary["uuid"]]

    def _line_entries(self, line: dict[str, Any], parent_id: str | None) -> list[dict[str, Any]]:
        """The entries of one user, system or attachment line (or one of an unknown kind), the last
        with the line's uuid as id."""
        kind, uuid = line["type"], line["uuid"]
        if kind == "user":
            return self._user_entries(line, parent_id)
        if kind == "attachment":
            attachment = line.get("attachment")
            name = attachment.get("type") if isinstance(attachment, dict) else None
            return [_custom(uuid, parent_id, line, f"attachment/{name or 'unknown'}")]
        if kind == "system":
            return [_custom(uuid, parent_id, line, f"system/{line.get('subtype') or 'unknown'}")]
        return [_custom(uuid, parent_id, line, f"unknown:{kind}")]

    def _user_entries(self, line: dict[str, Any], parent_id: str | None) -> list[dict[str, Any]]:
        uuid, time = line["uuid"], _time_of(line)
        stamp = shapes.ms(time)
        if shapes.is_meta(line) and not shapes.tool_results(line):
            message_entry = _entry("custom_message", uuid, parent_id, line)
            content = shapes.user_content(shapes.message_of(line).get("content"))
            message_entry.update(customType=CUSTOM_PREFIX + "meta", content=content, display=False)
            return [message_entry]
        results = shapes.tool_results(line)
        text = shapes.user_content(shapes.message_of(line).get("content"))
        if not results or text:
            results_then_text: list[dict[str, Any] | None] = [*results, None]
        else:
            results_then_text = list(results)
        out: list[dict[str, Any]] = []
        for index, block in enumerate(results_then_text):
            own = uuid if index == len(results_then_text) - 1 else f"{uuid}:{index}"
            under = out[-1]["id"] if out else parent_id
            if block is None:
                message = {"role": "user", "content": text, "timestamp": stamp}
            else:
                name = self._tool_names.get(str(block.get("tool_use_id", "")), "")
                details = line.get("toolUseResult") if len(results) == 1 else None
                message = shapes.tool_result_message(block, name, details, stamp)
            out.append(_message_entry(own, under, line, message))
        return out

    def _append(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)

    # Metadata ------------------------------------------------------------------------------------

    def _feed_metadata(self, number: int, line: dict[str, Any]) -> None:
        kind = line["type"]
        if kind not in METADATA_KINDS:
            self._count_unknown(kind)
        self._untimed.append((number, line, kind if kind in METADATA_KINDS else f"unknown:{kind}"))

    def _flush_untimed(self) -> None:
        """Write metadata lines once a time is known for them (their own, or the last line's before)."""
        if self._last_time is None:
            return
        for number, line, name in self._untimed:
            entry_id = f"claude-code-line-{number}"
            time = shapes.iso(line.get("timestamp")) or self._last_time
            self._append(_metadata_entry(entry_id, self._metadata_parent, time, line, name))
            self._metadata_parent = entry_id
        self._untimed.clear()

    # The leaf ------------------------------------------------------------------------------------

    def leaf(self, lines: list[dict[str, Any]]) -> str | None:
        """Claude Code's leaf (its loader's rule), as the pi id of the entry written for it."""
        by_uuid = {line["uuid"]: line for line in lines if isinstance(line.get("uuid"), str)}
        chosen = _leaf_uuid(lines, by_uuid)
        seen: set[str] = set()
        while chosen is not None and chosen not in seen:
            seen.add(chosen)
            line = by_uuid.get(chosen)
            written = self.pi_id(chosen)
            if line is not None and line["type"] in ("user", "assistant") and written:
                return written
            chosen = _parent_uuid(line) if line is not None else None
        return None


def _leaf_uuid(lines: list[dict[str, Any]], by_uuid: dict[str, dict[str, Any]]) -> str | None:
    """L = the last last-prompt's leafUuid (an explicit one wins), O = the last non-sidechain tree
    entry (in a sub-agent's file, where all are sidechain: the last); L unless O descends from it."""
    prompts = [line for line in lines if line["type"] == "last-prompt" and isinstance(line.get("leafUuid"), str)]
    explicit = [line for line in prompts if line.get("explicit") is True]
    if explicit:
        return str(explicit[-1]["leafUuid"])
    tree = [line for line in lines if isinstance(line.get("uuid"), str)]
    main = [line for line in tree if line.get("isSidechain") is not True] or tree
    last = main[-1]["uuid"] if main else None
    chosen = prompts[-1]["leafUuid"] if prompts else None
    if chosen is None or chosen not in by_uuid or (last is not None and _descends(last, chosen, by_uuid)):
        return last
    return str(chosen)


def _descends(node: str, ancestor: str, by_uuid: dict[str, dict[str, Any]]) -> bool:
    seen: set[str] = set()
    current: str | None = node
    while current is not None and current not in seen:
        if current == ancestor:
            return True
        seen.add(current)
        line = by_uuid.get(current)
        current = _parent_uuid(line) if line is not None else None
    return False


def _parent_uuid(line: dict[str, Any]) -> str | None:
    parent = line.get("parentUuid")
    return parent if isinstance(parent, str) else None


def _time_of(line: dict[str, Any]) -> str:
    return shapes.iso(line.get("timestamp")) or EPOCH


def _entry(kind: str, entry_id: str, parent_id: str | None, line: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": _time_of(line)}


def _message_entry(
    entry_id: str, parent_id: str | None, line: dict[str, Any], message: dict[str, Any]
) -> dict[str, Any]:
    entry = _entry("message", entry_id, parent_id, line)
    entry["message"] = message
    return entry


def _custom(entry_id: str, parent_id: str | None, line: dict[str, Any], name: str) -> dict[str, Any]:
    entry = _entry("custom", entry_id, parent_id, line)
    entry.update(customType=CUSTOM_PREFIX + name, data=line)
    return entry


def _metadata_entry(entry_id: str, parent_id: str | None, time: str, line: dict[str, Any], name: str) -> dict[str, Any]:
    kind = line["type"]
    title = line.get("customTitle")
    if kind == "custom-title" and isinstance(title, str):
        return {"type": "session_info", "id": entry_id, "parentId": parent_id, "timestamp": time, "name": title}
    return {
        "type": "custom",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": time,
        "customType": CUSTOM_PREFIX + name,
        "data": line,
    }
