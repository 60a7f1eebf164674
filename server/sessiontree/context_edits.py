"""Context edits as pi 1.6's appendContextEdit writes them: which entries may be edited, and the
replacement as it is stored. (How an edit changes a context: `tree.projection`.)"""

from __future__ import annotations

from typing import Any, Final

from .errors import InvalidParams

_EDITABLE_ROLES: Final = frozenset({"user", "assistant", "toolResult"})
_BLOCK_ROLES: Final = frozenset({"assistant", "toolResult"})


def editable(type_: str, role: str | None) -> bool:
    """An entry whose model-visible content an edit may replace: a user, assistant or toolResult
    message, or a custom_message (summaries, compactions and system messages are not)."""
    return type_ == "custom_message" or (type_ == "message" and role in _EDITABLE_ROLES)


def checked_replacement(entry: dict[str, Any], kind: tuple[str, str | None], on_branch: bool, field: str) -> Any:
    """The replacement to write for a context_edit whose target is of `kind` (type, role) and is
    (or not) on the branch the edit is appended to; raises as pi's appendContextEdit throws. A
    string replacement of an assistant or toolResult message becomes one text block, as pi stores it."""
    target = entry["targetId"]
    if not on_branch:
        raise InvalidParams(
            f"entry {target} is not on the branch the edit is appended to ({field})", field=field, entryId=target
        )
    type_, role = kind
    if not editable(type_, role):
        shown = f"a {role} message" if type_ == "message" else f"a {type_} entry"
        raise InvalidParams(
            f"entry {target} is {shown}: only user, assistant and toolResult messages and custom_message entries"
            f" can be edited ({field})",
            field=field,
            entryId=target,
        )
    replacement = entry["replacement"]
    if replacement is not None and role in _BLOCK_ROLES and isinstance(replacement.get("content"), str):
        return {"content": [{"type": "text", "text": replacement["content"]}]}  # pi keeps nothing else
    return replacement


def kind_of_line(line: dict[str, Any]) -> tuple[str, str | None]:
    """(type, message role) of an entry not yet in the index (written earlier in the same call)."""
    message = line.get("message")
    role = message.get("role") if line.get("type") == "message" and isinstance(message, dict) else None
    return str(line.get("type")), role if isinstance(role, str) else None
