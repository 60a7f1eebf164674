"""UNSET: a field the client did not send, as distinct from an explicit null.

`MaybeId` fields (a leaf, a parent, a cursor) tell the two apart: absent means "the current
leaf", null means "no entry" (pi's `resetLeaf`). The store and the summaries take them as they
come, so the sentinel belongs to the domain; the wire types only carry it.
"""

from __future__ import annotations

import enum
from typing import Final


class _Unset(enum.Enum):
    """One member, so that `value is UNSET` narrows `MaybeId` for the type checker."""

    UNSET = object()  # no JSON value: were it ever encoded, the encoder would refuse it

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset.UNSET
MaybeId = str | None | _Unset
