"""A session's name in the store, checked before it becomes a path.

Any role that may write the store may write any name, so a name read from it is untrusted: one
with `..`, an absolute path, an empty or `.` component, a control character or an over-long part
would reach outside the sessions root (or corrupt what is printed). Such a name is refused where
it is read; the other sessions are served as usual.
"""

from __future__ import annotations

import re
from typing import Final

from ...errors import StorageError

MAX_PART_BYTES: Final = 255  # NAME_MAX of the file systems a root lies on
MAX_NAME_BYTES: Final = 4000  # below PATH_MAX with room for the root
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def problem(name: str) -> str | None:
    """Why `name` cannot be a path below the root, or None when it can."""
    if not name:
        return "it is empty"
    if _UNSAFE.search(name):
        return "it holds a control character or a lone surrogate"
    if name.startswith("/"):
        return "it is an absolute path"
    if len(name.encode()) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes"
    for part in name.split("/"):
        if not part:
            return "it has an empty component"
        if part in (".", ".."):
            return f"it has a '{part}' component"
        if len(part.encode()) > MAX_PART_BYTES:
            return f"a component is longer than {MAX_PART_BYTES} bytes"
    return None


def shown(name: str) -> str:
    """The name as it may be printed: escaped when it holds anything a terminal would act on."""
    return ascii(name) if _UNSAFE.search(name) else name


def checked(name: str) -> str:
    """`name` if it is a safe path below the root; StorageError saying why it is not."""
    reason = problem(name)
    if reason is not None:
        raise StorageError(
            f"the store holds a session named {shown(name)}, which is not a path below the sessions root"
            f" ({reason}); it is left alone",
            storeName=shown(name),
        )
    return name


def is_safe(name: str) -> bool:
    return problem(name) is None
