"""Another agent's session as a read-only `Storage`: the bytes are its translation written as pi
would write it, growing as the agent appends to its files. `Session`, its index and every
projection then run over it unchanged, as they do over a pi file.

The source is translated again whenever one of its files changed (size, time or inode). The new
translation must start with the old one's entries unchanged (translations are prefix-stable while
a source only grows); otherwise the source was rewritten and the storage reports itself replaced,
which the session answers with FileReplaced (-32022), as for a pi file rewritten in place.
"""

from __future__ import annotations

import contextlib

from ..errors import ReadOnlySession, SessionTreeError
from . import AgentName, ReadFile, Source, Translation, Translator, rendered
from .files import shrank, stamp


class TranslationStorage:
    """The pi JSONL bytes of one source session, read-only; followed as its files grow."""

    def __init__(self, source: Source, translator: Translator, read: ReadFile) -> None:
        self.source = source
        self.name = str(source.path)
        self.agent: AgentName = source.agent
        self._translator = translator
        self._read = read
        self._stamp = stamp(source.files)
        translation = translator.translate(source, read)
        self.translation = translation
        self._data = bytearray(rendered.header_line(translation))
        self._data += b"".join(rendered.lines(translation))
        self._replaced = False

    @property
    def leaf_id(self) -> str | None:
        return self.translation.leaf_id

    def size(self) -> int:
        self._follow()
        return len(self._data)

    def read(self, offset: int, length: int) -> bytes:
        return bytes(self._data[offset : offset + length])

    def append(self, data: bytes) -> int:
        raise ReadOnlySession(
            f"{self.name} is a {self.agent} session: the daemon never writes to another agent's files",
            path=self.name,
            agent=self.agent,
        )

    def replaced(self) -> bool:
        self._follow()
        return self._replaced

    def lock(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _follow(self) -> None:
        """Translate again if the files changed; take the new entries in if the old ones still lead."""
        if self._replaced:
            return
        now = stamp(self.source.files)
        if now == self._stamp:
            return
        if now is None or self._stamp is None or shrank(self._stamp, now):
            self._replaced = True
            return
        try:
            translation = self._translator.translate(self.source, self._read)
        except (OSError, ValueError, SessionTreeError):  # gone or cut short meanwhile: as a replaced file
            self._replaced = True
            return
        if not _continues(self.translation, translation):
            self._replaced = True
            return
        self._data += b"".join(rendered.lines(translation, len(self.translation.entries)))
        self.translation, self._stamp = translation, now


def _continues(old: Translation, new: Translation) -> bool:
    """Whether `new` is `old` with entries added at the end (the header unchanged)."""
    count = len(old.entries)
    return old.header == new.header and len(new.entries) >= count and new.entries[:count] == old.entries
