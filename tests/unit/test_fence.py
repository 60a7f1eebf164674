"""The line end an append puts before another writer's unfinished line (the fence).

pi writes each line with one `write`; a big one becomes visible while it runs, so the file seems to
end mid-line for a moment. An append waits for such a line to end before fencing it, and says so
when its fence still followed the other writer's own line end (an empty line).
"""

from __future__ import annotations

from sessiontree.store import MemoryStorage, Session
from support.messages import assistant, line, user
from support.sessions import session_bytes

VALID = session_bytes(user("e0000001", None, "q1"), assistant("e0000002", "e0000001", "a1"))
THEIRS = line(user("e0000009", "e0000002", "from pi " + "x" * 4000))


class WriteUnderWay(MemoryStorage):
    """Another program's line becomes visible a part at each look at the size (once `steps` are
    set), as a big write does while it runs."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.steps: list[bytes] = []

    def size(self) -> int:
        if self.steps:
            self.data += self.steps.pop(0)
        return len(self.data)


def test_a_line_still_being_written_is_waited_for_not_fenced() -> None:
    storage = WriteUnderWay(VALID + THEIRS[:100])
    session = Session.load(storage)
    assert [w.kind for w in session.warnings] == ["torn-tail"]
    # The append's first look finds more of the line, the next one all of it (one look is always taken).
    storage.steps = [THEIRS[100:2000], THEIRS[2000:]]
    written, others = session.append([{"type": "custom", "customType": "ours"}])
    assert [node.id for node in others] == ["e0000009"]  # taken in whole, before ours
    assert written[0].node.parent_id == "e0000009"
    assert bytes(storage.data) == VALID + THEIRS + line(session.entry(written[0].node))  # no fence, no empty line
    assert [w.kind for w in session.warnings] == ["torn-tail"]


def test_a_fence_that_follows_the_other_writers_line_end_is_reported() -> None:
    storage = MemoryStorage(VALID + THEIRS[:100])
    session = Session.load(storage)
    # The line stays as it is while the append waits, and is finished just before our write lands.
    storage.before_append = lambda s: (s.data.extend(THEIRS[100:]), setattr(s, "before_append", None))
    written, others = session.append([{"type": "custom", "customType": "ours"}])
    assert [node.id for node in others] == ["e0000009"]
    lines = bytes(storage.data).split(b"\n")
    empty = lines.index(b"") + 1
    assert empty == 5  # header, two entries, theirs, then the fence
    warning = session.warnings[-1]
    assert (warning.kind, warning.line) == ("empty-line-fenced", empty)
    # The session counts the empty line as a scan would: later lines have the same numbers.
    storage.data += b"not json\n"
    session.refresh()
    reopened = Session.load(MemoryStorage(bytes(storage.data)))
    assert [(w.kind, w.line) for w in reopened.warnings] == [("malformed", 7)]
    assert (session.warnings[-1].kind, session.warnings[-1].line) == ("malformed", 7)
    assert [node.id for node in reopened.index.nodes] == [node.id for node in session.index.nodes]
    assert written[0].node.id in {node.id for node in reopened.index.nodes}
