"""Codex rollout lines, in history order, as pi entries (the table is in codex.py).

One `LineMapper` reads one history (a file's base prefix, then its own lines) and chains the
entries it makes by order. The items of one model call are held until its `token_usage_record`
(or whatever ends the call) and become one assistant message; a compaction's summary call is held
until its `compacted` line. Nothing is emitted that a later line could change, so the entries made
from a prefix of the lines are a prefix of those made from all of them.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any, Final

import attrs

from ..entries import js_trim
from .codex_blocks import (
    assistant_blocks,
    is_error,
    texts,
    thinking_level,
    tool_result_content,
    usage_of,
    user_content,
)

# User-role items Codex writes itself (not typed by anyone): kept whole as `custom`, not sent.
_HARNESS_USER_PREFIXES: Final = (
    "<environment_context>",
    "# AGENTS.md instructions for ",
    "<user_instructions>",
    "<INSTRUCTIONS>",
)
COMPACTION_PREFIX: Final = (
    "Another language model started to solve this problem and produced a summary of its thinking process."
)
_SUMMARY_MARK: Final = "use the information in this summary to assist with your own analysis:\n"
# Items one model call writes; they become the blocks of one assistant message.
_CALL_ITEMS: Final = frozenset({"message", "reasoning", "function_call", "custom_tool_call", "local_shell_call"})
# Items a model call writes that have no pi block (server-side tools): kept as `custom` after its message.
_CALL_EXTRAS: Final = frozenset({"web_search_call", "image_generation_call", "tool_search_call"})
_OUTPUT_ITEMS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
# UI copies of items, counters and turn bookkeeping: what they say is in other lines.
_DROPPED_EVENTS: Final = frozenset({
    "task_started", "task_complete", "turn_started", "turn_complete", "token_count", "thread_settings_applied",
    "item_started", "item_completed", "user_message", "agent_message", "agent_reasoning",
    "agent_reasoning_raw_content", "agent_reasoning_section_break", "exec_command_begin", "exec_command_end",
    "exec_command_output_delta", "patch_apply_begin", "patch_apply_end", "context_compacted", "turn_diff",
    "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin", "web_search_end", "background_event",
})
_LINE_BREAKS: Final = re.compile(r"[\r\n]+")
_PROCESS_EXIT: Final = re.compile(r"^Process exited with code (-?\d+)$", re.MULTILINE)


def entry_id(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def iso_ms(value: Any) -> str:
    """An ISO time as pi writes it (milliseconds, `Z`); Codex's are that already, the index's have ns."""
    if not isinstance(value, str):
        return "1970-01-01T00:00:00.000Z"
    head, _, fraction = value.rstrip("Z").partition(".")
    return f"{head}.{(fraction + '000')[:3]}Z"


def unix_ms(value: str) -> int:
    """A message's `timestamp` (Unix ms) from a line's ISO time; 0 where the line's is not one."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return 0
    return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp() * 1000)


def time_key(value: str) -> tuple[str, str]:
    """Orders ISO times whose fractions have different lengths."""
    head, _, fraction = value.rstrip("Z").partition(".")
    return head, fraction.ljust(9, "0")


def exit_code(output: str) -> int | None:
    found = _PROCESS_EXIT.search(output)
    return int(found.group(1)) if found else None


@attrs.define
class _Call:
    """A model call's items, until it is closed."""

    key: str
    timestamp: str
    items: list[dict[str, Any]] = attrs.field(factory=list)
    extras: list[tuple[str, str, str, dict[str, Any]]] = attrs.field(factory=list)  # (key, time, customType, data)


@attrs.define
class _Summary:
    """A compaction's summary call, until its `compacted` line."""

    key: str
    timestamp: str
    message: dict[str, Any]
    usage: dict[str, Any] | None = None


@attrs.define
class Ids:
    """Synthesized entry ids, stable for a (file key, ordinal, n); a hash collision gets the long form."""

    owners: dict[str, str] = attrs.field(factory=dict)

    def of(self, key: str) -> str:
        short = entry_id(key)
        owner = self.owners.setdefault(short, key)
        if owner == key:
            return short
        return hashlib.sha256(key.encode()).hexdigest()


@attrs.define
class LineMapper:
    ids: Ids
    tail: str | None = None  # the entry the next one hangs under
    provider: str = "openai"
    model: str | None = None
    effort: str | None = None
    context_tokens: int = 0  # the last token_count's context size: a compaction's tokensBefore
    calls: dict[str, tuple[str, str]] = attrs.field(factory=dict)  # call_id -> (pi tool call id, name)
    executions: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # call_id -> CommandExecution
    call: _Call | None = None
    summary: _Summary | None = None
    user_entries: list[tuple[str, str | None]] = attrs.field(factory=list)  # (user entry, its parent): rollbacks
    _made: list[dict[str, Any]] = attrs.field(factory=list)

    # ---- entries -------------------------------------------------------------------------

    def emit(self, key: str, timestamp: str, kind: str, **fields: Any) -> dict[str, Any]:
        entry = {"type": kind, "id": self.ids.of(key), "parentId": self.tail, "timestamp": iso_ms(timestamp), **fields}
        self.tail = entry["id"]
        self._made.append(entry)
        return entry

    def custom(self, key: str, timestamp: str, custom_type: str, data: Any) -> None:
        self.emit(key, timestamp, "custom", customType=custom_type, data=data)

    def session_info(self, number: int, updated_at: str, name: str) -> list[dict[str, Any]]:
        # pi 1.6 writes a name with its line breaks made spaces, trimmed.
        self.emit(f"session_index:{number}", updated_at, "session_info", name=js_trim(_LINE_BREAKS.sub(" ", name)))
        return self.take()

    def take(self) -> list[dict[str, Any]]:
        made, self._made = self._made, []
        return made

    def message(self, key: str, timestamp: str, message: dict[str, Any]) -> dict[str, Any]:
        return self.emit(key, timestamp, "message", message=message)

    # ---- lines ---------------------------------------------------------------------------

    def feed(self, file_key: str, ordinal: int, value: dict[str, Any] | None, text: bytes = b"") -> list[dict[str, Any]]:
        """The entries that this line completes (often none, or some held earlier)."""
        key = f"{file_key}:{ordinal}"
        if value is None:  # not a JSON object: its text is kept
            self._unknown(key, "1970-01-01T00:00:00.000Z", "unparsable", {"line": text.decode("utf-8", "replace")})
            return self.take()
        kind, raw = value.get("type"), value.get("payload")
        stamp = value.get("timestamp")
        timestamp = stamp if isinstance(stamp, str) else "1970-01-01T00:00:00.000Z"
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if self.summary is not None and kind not in ("token_usage_record", "event_msg", "compacted"):
            self._unfinished_summary()
        if handler is None:
            self._unknown(key, timestamp, str(kind), value)
        else:
            handler(self, key, timestamp, payload, value)
        return self.take()

    def _unfinished_summary(self) -> None:
        """A summary call no `compacted` line followed: kept (and its usage counted) as a `custom`."""
        held, self.summary = self.summary, None
        if held is not None:
            data = {"message": held.message, "usage": held.usage}
            stamp = held.timestamp
            self.custom(f"{held.key}:summary", stamp, "codex/unfinished_compaction", data)

    def _unknown(self, key: str, timestamp: str, kind: str, value: Any) -> None:
        """Kept whole; the translation counts these by their customType."""
        self.custom(key, timestamp, f"codex/unknown:{kind}", value)

    def _session_meta(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        if isinstance(payload.get("model_provider"), str):
            self.provider = payload["model_provider"]
        self.custom(key, timestamp, "codex/session_meta", payload)

    def _turn_context(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        self.close_call()
        model = payload.get("model")
        if isinstance(model, str) and model != self.model:
            self.model = model
            self.emit(f"{key}:model", timestamp, "model_change", provider=self.provider, modelId=model)
        mode = payload.get("collaboration_mode")
        settings = mode.get("settings") if isinstance(mode, dict) else None
        effort = settings.get("reasoning_effort") if isinstance(settings, dict) else payload.get("effort")
        level = thinking_level(effort)
        if level is not None and level != self.effort:
            self.effort = level
            self.emit(f"{key}:effort", timestamp, "thinking_level_change", thinkingLevel=level)
        self.custom(key, timestamp, "codex/turn_context", payload)

    def _world_state(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        self.custom(key, timestamp, "codex/world_state", payload)

    def _token_usage_record(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        if self.summary is not None and self.summary.usage is None:
            self.summary.usage = payload
            return
        if self.call is None:  # a call that wrote no item: its usage still counts
            self.call = _Call(key, timestamp)
        self.close_call(payload)

    def _event(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        event = _name(payload.get("type"))
        if event == "token_count":
            self._token_count(payload)
        elif event == "item_completed":
            item = payload.get("item")
            if isinstance(item, dict) and item.get("type") == "CommandExecution" and isinstance(item.get("id"), str):
                self.executions[item["id"]] = item
        elif event == "exec_command_end" and isinstance(payload.get("call_id"), str):
            self.executions.setdefault(payload["call_id"], payload)  # legacy files
        elif event == "thread_rolled_back":
            self._rolled_back(payload)
        elif event not in _DROPPED_EVENTS:
            self._unknown(key, timestamp, f"event_msg/{event}", value)

    def _token_count(self, payload: dict[str, Any]) -> None:
        info = payload.get("info")
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        if not isinstance(last, dict):
            return
        if self.call is not None and self.call.items:  # legacy files: no token_usage_record, this closes the call
            self.close_call({"usage": last})
        total = last.get("total_tokens")
        if self.summary is None and isinstance(total, int) and total > 0:
            self.context_tokens = total

    def _rolled_back(self, payload: dict[str, Any]) -> None:
        """Legacy rollback of the last N user turns: later entries hang where the first of them did."""
        turns = payload.get("num_turns")
        self.close_call()
        if isinstance(turns, int) and 0 < turns <= len(self.user_entries):
            self.tail = self.user_entries[-turns][1]
            del self.user_entries[-turns:]

    def _compacted(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        self.close_call()
        raw = payload.get("message")
        text = raw if isinstance(raw, str) else ""
        held = self.summary
        summary = _summary_text(held.message if held else None, text)
        details = {k: v for k, v in payload.items() if k != "message"}
        fields: dict[str, Any] = {"summary": summary, "tokensBefore": self.context_tokens, "details": details}
        if held is not None:
            details["summaryMessage"] = held.message
        if held is not None and held.usage is not None:
            fields["usage"] = usage_of(held.usage)
        own = self.ids.of(key)
        self.emit(key, timestamp, "compaction", firstKeptEntryId=own, **fields)  # pi's retain-none: its own id
        self.summary = None

    def _response_item(self, key: str, timestamp: str, payload: dict[str, Any], value: dict[str, Any]) -> None:
        item_type = _name(payload.get("type"))
        raw = value.get("metadata")
        metadata: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if item_type == "message" and payload.get("role") == "assistant" and metadata.get("compaction_output"):
            self.close_call()
            self.summary = _Summary(key, timestamp, payload)
        elif item_type == "message" and payload.get("role") in ("user", "developer"):
            self.close_call()
            self._user_side(key, timestamp, payload)
        elif item_type in _CALL_ITEMS and (item_type != "message" or payload.get("role") == "assistant"):
            if self.call is None:
                self.call = _Call(key, timestamp)
            self.call.items.append(payload)
        elif item_type in _OUTPUT_ITEMS:
            self.close_call()
            self._tool_result(key, timestamp, payload)
        elif item_type in _CALL_EXTRAS or item_type == "ghost_snapshot":
            self._beside_call(key, timestamp, f"codex/{item_type}", payload, item_type != "ghost_snapshot")
        else:
            self._beside_call(key, timestamp, f"codex/unknown:response_item/{item_type}", value, False)

    def _beside_call(self, key: str, timestamp: str, custom_type: str, data: dict[str, Any], from_model: bool) -> None:
        """A `custom` that must not split a model call in two: held with the call while one is open."""
        if self.call is None and from_model:
            self.call = _Call(key, timestamp)
        if self.call is not None:
            self.call.extras.append((f"{key}:beside", timestamp, custom_type, data))
        else:
            self.custom(key, timestamp, custom_type, data)

    def _user_side(self, key: str, timestamp: str, item: dict[str, Any]) -> None:
        role = item.get("role")
        text = "".join(texts(item.get("content")))
        if role == "developer":
            self.custom(key, timestamp, "codex/developer", item)
        elif text.startswith(COMPACTION_PREFIX):
            self.custom(key, timestamp, "codex/compaction_summary", item)
        elif text.lstrip().startswith(_HARNESS_USER_PREFIXES):
            self.custom(key, timestamp, "codex/context", item)
        else:
            parent = self.tail
            entry = self.message(key, timestamp, {"role": "user", "content": user_content(item), "timestamp": unix_ms(timestamp)})
            self.user_entries.append((entry["id"], parent))

    def _tool_result(self, key: str, timestamp: str, item: dict[str, Any]) -> None:
        raw = item.get("call_id")
        call_id = raw if isinstance(raw, str) else ""
        tool_id, name = self.calls.get(call_id, (call_id, ""))
        content, text = tool_result_content(item.get("output"))
        execution = self.executions.pop(call_id, None)
        message: dict[str, Any] = {"role": "toolResult", "toolCallId": tool_id, "toolName": name, "content": content}
        if execution is not None:
            message["details"] = execution
        message["isError"] = is_error(execution, exit_code(text))
        message["timestamp"] = unix_ms(timestamp)
        self.message(key, timestamp, message)

    def close_call(self, record: dict[str, Any] | None = None) -> None:
        """The held model call as one assistant message (usage from its record, zeros without one)."""
        call, self.call = self.call, None
        if call is None:
            return
        content = assistant_blocks(call.items)
        for block in content:
            if block["type"] == "toolCall":
                self.calls[block["id"].split("|")[0]] = (block["id"], block["name"])
        message: dict[str, Any] = {
            "role": "assistant", "content": content, "api": "openai-responses", "provider": self.provider,
            "model": self.model or "",
        }
        if record is not None and isinstance(record.get("response_id"), str):
            message["responseId"] = record["response_id"]
        message["usage"] = usage_of(record)
        message["stopReason"] = "toolUse" if any(b["type"] == "toolCall" for b in content) else "stop"
        message["timestamp"] = unix_ms(call.timestamp)
        self.message(call.key, call.timestamp, message)
        for key, timestamp, custom_type, data in call.extras:
            self.custom(key, timestamp, custom_type, data)


def _name(value: Any) -> str:
    """A `type` field as a name (`?` when it is not a string)."""
    return value if isinstance(value, str) else "?"


def _summary_text(held: dict[str, Any] | None, compacted: str) -> str:
    """The model's summary: the summary call's text, or the `compacted` message without its preamble."""
    if held is not None:
        parts = texts(held.get("content"))
        if any(parts):
            return "".join(parts)
    if compacted.startswith(COMPACTION_PREFIX) and _SUMMARY_MARK in compacted:
        return compacted.split(_SUMMARY_MARK, 1)[1]
    return compacted


_HANDLERS: Final = {
    "session_meta": LineMapper._session_meta,
    "turn_context": LineMapper._turn_context,
    "world_state": LineMapper._world_state,
    "token_usage_record": LineMapper._token_usage_record,
    "event_msg": LineMapper._event,
    "compacted": LineMapper._compacted,
    "response_item": LineMapper._response_item,
}
