"""What of an entry is searchable: its role and its text, per pi's message shapes.

Only words a person would look for are indexed: message text and thinking, a tool call's name
and argument values, tool results, bash commands and their output, custom messages, branch and
compaction summaries, and the replacement content of a `context_edit` (pi 1.6: what the model
sees instead of its target). JSON keys are left out on purpose (every `read` call has a `path`; a
search for "path" should not find them all), and so are images, usage (`usage` entries have no
text) and signatures. A `system` message (pi 1.6: the whole prompt, its sections and the tools'
declarations, repeated in every session) is indexed under the role `system`, which a search
leaves out unless its `roles` ask for it (see query.py); a compaction's `systemMessage` is not
indexed (it repeats them).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator
from typing import Any, Final

# The snippet markers used inside SQLite; any in the text itself are blanked so a snippet's
# highlights can be found again without ambiguity.
OPEN_MARK: Final = "\x02"
CLOSE_MARK: Final = "\x03"
_BLANK_MARKS: Final = str.maketrans({OPEN_MARK: " ", CLOSE_MARK: " "})

# The role of pi's system messages: indexed, but searched only when asked for by name.
SYSTEM_ROLE: Final = "system"

# Entry types whose own fields hold text, and the role their message takes in a context.
_SUMMARY_ROLES: Final = {"branch_summary": "branchSummary", "compaction": "compactionSummary"}


def role_and_text(entry: dict[str, Any]) -> tuple[str | None, str]:
    """The role an entry shows as (a message's role; `custom`, `branchSummary`,
    `compactionSummary` for the entry types that become such messages) and its searchable text
    ("" when it has none)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None, ""
        role = message.get("role")
        role = "custom" if role == "hookMessage" else role  # v2's name for it; v3 after migration
        return (role if isinstance(role, str) else None), _join(_message_parts(message))
    if kind in _SUMMARY_ROLES:
        return _SUMMARY_ROLES[kind], _join(_strings(entry.get("summary")))
    if kind == "custom_message":
        return "custom", _join(_content_parts(entry.get("content")))
    if kind == "custom":
        return None, _join([*_strings(entry.get("customType")), *_values(entry.get("data"))])
    if kind == "context_edit":
        replacement = entry.get("replacement")  # null: the target is left out, no text
        content = replacement.get("content") if isinstance(replacement, dict) else None
        return None, _join(_assistant_parts(content))  # text, thinking, tool calls: any target's blocks
    return None, ""


def _join(parts: Iterator[str] | list[str]) -> str:
    text = "\n".join(parts)
    if OPEN_MARK in text or CLOSE_MARK in text:  # rare: a scan in C first, the translation only then
        text = text.translate(_BLANK_MARKS)
    return text


def _message_parts(message: dict[str, Any]) -> Iterator[str]:
    role = message.get("role")
    if role == "assistant":
        yield from _assistant_parts(message.get("content"))
    elif role == "bashExecution":
        yield from _strings(message.get("command"))
        yield from _strings(message.get("output"))
    elif role in ("branchSummary", "compactionSummary"):
        yield from _strings(message.get("summary"))
    elif role == "system":  # the prompt, its named sections (null removes one), the tools added
        yield from _content_parts(message.get("content"))
        yield from _values(message.get("sections"))
        yield from _values(message.get("toolsAdded"))
    else:  # user, toolResult, custom and roles pi may add: their content
        yield from _content_parts(message.get("content"))


def _assistant_parts(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield from _strings(block.get("text"))
        elif kind == "thinking":
            yield from _strings(block.get("thinking"))
        elif kind == "toolCall":
            yield from _strings(block.get("name"))
            yield from _values(block.get("arguments"))


def _content_parts(content: Any) -> Iterator[str]:
    """A string, or the text of text blocks (images carry none)."""
    if isinstance(content, str):
        yield content
        return
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "text":
            yield from _strings(block.get("text"))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value


def _values(value: Any) -> list[str]:
    """The strings and numbers inside a JSON value, keys left out; iterative, so any depth is safe."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            found.append(str(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def scrub(value: Any) -> Any:
    """A string with each lone surrogate (JavaScript writes half an emoji as `\\ud83d`; Python
    reads it so) replaced by U+FFFD, since SQLite stores only UTF-8; anything else as it is."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


# --------------------------------------------------------------------------- filter tokens
# Each row's `meta` column holds one token per thing a search filters on (file, cwd, role, type),
# so filters are intersected inside FTS5 like any term: a search in one session reads that
# session's doclist, not every match. A hash keeps any cwd or type a single token. Every token
# starts with a private-use character (a token character to FTS5, never folded, never typed):
# a query without one cannot match a meta token, so it needs no column filter (which would make
# FTS5 read positions for every candidate).

META_MARK: Final = "\ue000"


def file_token(file_id: int) -> str:
    return f"{META_MARK}f{file_id}"


def cwd_token(cwd: str) -> str:
    return f"{META_MARK}c{_digest(cwd)}"


def role_token(role: str) -> str:
    return f"{META_MARK}r{_digest(role)}"


def type_token(kind: str) -> str:
    return f"{META_MARK}t{_digest(kind)}"


def meta_text(file_id: int, cwd: str | None, role: str | None, kind: str | None) -> str:
    tokens = [file_token(file_id), cwd_token(cwd or "")]
    if role is not None:
        tokens.append(role_token(role))
    if kind is not None:
        tokens.append(type_token(kind))
    return " ".join(tokens)


@functools.lru_cache(maxsize=4096)  # a few cwds, roles and types, over and over
def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
