"""One open session file: scan on open, take in other writers' lines, append under a lock."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from itertools import accumulate
from pathlib import Path
from typing import Any, Final, NamedTuple

import msgspec

from .. import jsonfmt
from ..context_edits import checked_replacement, kind_of_line
from ..entries import (
    Either,
    Node,
    SkeletonError,
    build_line,
    decode_skeleton,
    new_entry_id,
    node_of_fields,
    now_iso,
    skeleton_columns,
    skeletons,
)
from ..errors import (
    EntryNotFound,
    FileReplaced,
    LeafConflict,
    NotASessionFile,
    ReadOnlySession,
    SessionTreeError,
    StorageError,
)
from ..file_warning import FileWarning
from ..unset import UNSET, MaybeId
from . import sidecar
from .fork_plan import ForkPlan
from .index import SessionIndex
from .lines import BOM, CHUNK, LineBlocks, LineReader
from .packed_columns import BlockColumns
from .scan_worker import ScanWorker
from .storage import Storage

log = logging.getLogger(__name__)
_HEADER_CHUNK = 64 * 1024  # what is read to find the header; the entries are read in big blocks
_SCAN_CHUNK = CHUNK  # bytes read at a time by a scan (a longer line is read whole)
_WRITE_TRIES = 3  # an append spoiled by another writer's unfinished line is written again, so often
# An unfinished last line may be another program's big write still under way: before fencing it,
# the append re-checks the file this often, until the line ends or has not grown for _QUIET (a
# writer that died), for at most _UNFINISHED_WAIT in all. Appends with no such line never wait.
_UNFINISHED_POLL, _QUIET, _UNFINISHED_WAIT = 0.001, 0.005, 0.05
WRITE_WARNINGS: Final = frozenset({"torn-line-fenced", "empty-line-fenced"})  # what an append did to the file
# Why a session is shown but not written to (ReadOnlySession's `reason`, protocol.md "Errors"):
READ_ONLY_REASONS = (
    "byte-order-mark",  # pi does not open the file as a session
    "permission",  # the daemon may not write the file (its mode, its owner; EACCES/EPERM)
    "read-only-filesystem",  # the file lies on a read-only mount (EROFS)
    "view",  # opened to be viewed (the CLI's read commands): never written to
    "another-agent",  # another agent's session, read through its translator: never written to
)


class _Id(msgspec.Struct):
    id: Any = None


_id_only = msgspec.json.Decoder(_Id).decode  # validates the whole line, builds only its id


class _MessageText(msgspec.Struct):
    id: Any = None
    message: msgspec.Raw = msgspec.Raw()


_message_and_id = msgspec.json.Decoder(_MessageText).decode  # validates the line, keeps the message as text


def _message_text(node: Node, line: bytes | memoryview) -> jsonfmt.RawJson | None:
    """The message of a `message` entry's line as its own text, if it can go to the wire as it is;
    None for a line that must be decoded (and checked) the careful way."""
    try:
        found = _message_and_id(line)
    except (msgspec.MsgspecError, RecursionError):  # not JSON, a lone surrogate: the careful way
        return None
    text = bytes(found.message)
    if found.id != node.id or text[:1] != b"{":
        return None
    message = jsonfmt.raw_object(text)
    return message if type(message) is jsonfmt.RawJson else None  # broken UTF-8: decoded with the line


class AppendRequest(NamedTuple):
    """One append of `Session.append_many`: its entries, parent, expected leaf and their sources."""

    entries: list[dict[str, Any]]
    parent: MaybeId = UNSET
    expected_leaf: MaybeId = UNSET
    sources: Sequence[str] | None = None


class Appended:
    """An entry this daemon wrote: its index node and the exact object it wrote."""

    __slots__ = ("entry", "node")

    def __init__(self, node: Node, entry: dict[str, Any]) -> None:
        self.node = node
        self.entry = entry


def _parse_header(line: bytes) -> dict[str, Any] | None:
    """The header object, None for a line that is not JSON; NotASessionFile for any other object."""
    try:
        value = jsonfmt.loads(line)
    except jsonfmt.JSONDecodeError:
        return None
    if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
        return value
    raise NotASessionFile("the first line is not a session header", found=_describe(value))


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return f"an object of type {value.get('type')!r}"
    return f"a JSON {type(value).__name__}"


class Session:
    """The file and its index. Every read of the file starts where the last one ended."""

    def __init__(self, storage: Storage, header: dict[str, Any]) -> None:
        self.storage = storage
        self.header = header
        self.index = SessionIndex()
        self.warnings: list[FileWarning] = []
        self.end = 0  # every byte before this has been taken in
        self.unterminated = False  # the file does not end with "\n" at `end`
        self._line_no = 0
        self.size_seen = 0  # the file's size at the last refresh (exact while the lock is held)
        self.sidecar_covers = -1  # bytes the index sidecar describes, if it was loaded or saved
        self.fenced = False  # an append ended another writer's torn line: a scan would now see it
        self._unfinished_at = -1  # the file's size when its last line was last found unfinished
        self.read_only: str | None = None  # why appends are refused (shown, never written to)
        self.read_only_reason: str | None = None  # the same as a code: READ_ONLY_REASONS
        self.read_only_data: dict[str, str] = {}  # more for the refusal's `data` (another agent's name)

    # ------------------------------------------------------------------ loading

    @classmethod
    def load(cls, storage: Storage, sidecar_file: Path | None = None) -> Session:
        """Scan the file once (or only what follows the part a matching index sidecar covers).
        An unfinished last line is left where it is: its writer may still be writing it."""
        with storage.lock():
            restored = cls._from_sidecar(storage, sidecar_file) if sidecar_file is not None else None
            size = storage.size()
            session: Session | None
            if restored is not None:
                session = restored
            else:
                header_reader = LineReader(storage, 0, size, chunk=_HEADER_CHUNK)
                session, skipped = cls._find_header(storage, iter(header_reader))
                if session is None:
                    session = cls._header_from_tail(storage, header_reader)
                    session.warnings[:0] = skipped
                    session._finish(header_reader, at_open=True)
                    session._refuse_writes_if_pi_would_not_open()
                    return session
                session.warnings[:0] = skipped
            with _collector_paused():
                blocks = session._scan_to(size)
            session._finish(blocks, at_open=True)
            session._refuse_writes_if_pi_would_not_open()
        return session

    def _refuse_writes_if_pi_would_not_open(self) -> None:
        """pi (since 0.78) reads a file that starts with a byte order mark as no session at all. The
        daemon still shows it, but appending would grow a file pi refuses: it is read-only, said so
        on open, and a fork copies it into a file pi reads."""
        if self.storage.read(0, len(BOM)) != BOM:
            return
        self.refuse_writes(
            "byte-order-mark",
            "the file starts with a UTF-8 byte order mark, which pi does not open as a session",
            FileWarning(
                "read-only",
                "line 1 starts with a UTF-8 byte order mark: pi does not open the file as a session, so the"
                " daemon shows it but refuses appends (-32024); session/fork copies it into a file pi opens",
                line=1,
            ),
        )

    def refuse_writes(self, reason: str, why: str, warning: FileWarning | None) -> None:
        """Show the session but refuse every append with -32024 (`reason`: one of READ_ONLY_REASONS);
        the first reason found is the one given, and `warning` is said once."""
        if self.read_only is None:
            self.read_only, self.read_only_reason = why, reason
        if warning is not None and not any(w.kind == "read-only" for w in self.warnings):
            self.warnings.insert(0, warning)

    def _scan_to(self, size: int) -> LineBlocks:
        """Take in the whole lines from `end` to `size`, a big file's later part decoded by a
        scan worker meanwhile; returns the last reader (its tail: for `_finish`)."""
        worker = ScanWorker.start_for(self.storage, self.end, size)
        if worker is not None:
            with worker:
                self._take_in_blocks(LineBlocks(self.storage, self.end, worker.start, _SCAN_CHUNK))
                if self.end == worker.start:  # else the file shrank: scanned alone from here
                    for block in worker.blocks():
                        if block.offset != self.end:
                            break
                        self._take_in_columns(block)
            log.debug(
                "%s: a scan worker took bytes %d to %d of %d%s",
                self.storage.name, worker.start, worker.stopped_at, size, f" ({worker.failure})" if worker.failure else "",
            )
        blocks = LineBlocks(self.storage, self.end, size, _SCAN_CHUNK)
        self._take_in_blocks(blocks)
        return blocks

    def _take_in_blocks(self, blocks: LineBlocks) -> None:
        for offset, block, ends in blocks:
            self._take_in_block(offset, block, ends)

    def _take_in_columns(self, block: BlockColumns) -> None:
        """A block of lines a scan worker decoded, as `_take_in_block` takes them in."""
        count = len(block.ids)
        first = self._line_no + 1
        self.index.add_block(block, range(first, first + count), self.warnings)
        self._line_no += count
        self.end, self.unterminated = block.end, False

    @classmethod
    def _from_sidecar(cls, storage: Storage, sidecar_file: Path) -> Session | None:
        snapshot = sidecar.load(sidecar_file, storage.stat(), storage.read)  # type: ignore[attr-defined]
        if snapshot is None:
            return None
        session = cls(storage, snapshot.header)
        session.index = snapshot.index
        session.index.leaf_id = None
        if len(snapshot.index):  # as a scan leaves it: the last entry in file order
            session.index.leaf_id = snapshot.index.ids[-1]
        session.warnings = snapshot.warnings
        session._line_no = snapshot.line_no
        session.end = session.sidecar_covers = snapshot.covered
        return session

    def save_sidecar(self, sidecar_file: Path) -> bool:
        """Save the index for the next open, unless the sidecar is current or this session's state
        is not what a scan would find (a torn line was fenced, the file ends mid-line)."""
        with self.storage.lock():
            if self.sidecar_covers == self.end or self.unterminated or self.fenced:
                return False
            sidecar.save(
                sidecar_file,
                self.index,
                self.header,
                self.warnings,
                self._line_no,
                self.end,
                self.storage.stat(),  # type: ignore[attr-defined]
                self.storage.read,
            )
            self.sidecar_covers = self.end
        return True

    @classmethod
    def _find_header(cls, storage: Storage, lines: Iterator[tuple[int, bytes]]) -> tuple[Session | None, list[FileWarning]]:
        skipped: list[FileWarning] = []
        for line_no, (offset, line) in enumerate(lines, start=1):
            end = offset + len(line) + 1
            if offset == 0 and line.startswith(BOM):
                line = line[len(BOM) :]
            if not line.strip():
                continue
            header = _parse_header(line)
            if header is None:
                skipped.append(FileWarning("malformed", f"line {line_no} is not valid JSON; skipped", line=line_no))
                continue
            session = cls(storage, header)
            session._line_no = line_no
            session.end = end
            return session, skipped
        return None, skipped

    @classmethod
    def _header_from_tail(cls, storage: Storage, reader: LineReader) -> Session:
        """A file whose only header line lacks its final newline is still a session."""
        tail = reader.tail[len(BOM) :] if reader.tail_offset == 0 and reader.tail.startswith(BOM) else reader.tail
        header = _parse_header(tail) if tail.strip() else None
        if header is None:
            raise NotASessionFile("the file holds no session header", path=storage.name)
        session = cls(storage, header)
        session.end = reader.tail_offset + len(reader.tail)
        session.unterminated = True
        reader.tail = b""
        reader.tail_offset = session.end
        return session

    def _take_in_block(self, offset: int, block: bytes, ends: list[int]) -> None:
        """`_take_in` as an open does it, the leaf at the last entry, for a block of whole lines
        (`ends`: where each ends in `block`): the lines in pi's usual shape (one entry each) are
        decoded in one go and indexed as columns; any other line (blank, malformed, a second
        header, odd field types) the careful way, one at a time, in its place."""
        view = memoryview(block)
        starts = [0, *[end + 1 for end in ends[:-1]]]
        done = 0
        while done < len(ends):
            decoded = skeletons(view, starts, ends, done)
            if decoded:
                count = len(decoded)
                first = self._line_no + 1
                line_offsets = [offset + start for start in starts[done : done + count]]
                lengths = [end - start for start, end in zip(starts[done : done + count], ends[done : done + count], strict=True)]
                ids, parents, kinds, stamps, settings = skeleton_columns(decoded)
                self.index.add_columns(
                    ids, parents, kinds, stamps, line_offsets, lengths, settings, range(first, first + count), self.warnings
                )
                self._line_no += count
                done += count
            if done < len(ends):  # the line the quick way refused: as one line is taken in
                start = starts[done]
                self._take_in_line(offset + start, block[start : ends[done]])
                done += 1
        self.end, self.unterminated = offset + ends[-1] + 1, False

    def _take_in_line(self, offset: int, line: bytes) -> None:
        self._line_no += 1
        node = None
        if line[:1] == b"{":
            with suppress(SkeletonError):
                node = decode_skeleton(line, offset, len(self.index))
        if node is None or node.type == "session":  # blank, malformed, a second header: the careful way
            node = self._decode(offset, line)
            if node is None:
                return
        self.index.add_all([node], [self._line_no], self.warnings)

    def _take_in(self, lines: Iterable[tuple[int, bytes]], follow_leaf: bool) -> list[Node]:
        """Index complete lines (after the header)."""
        added: list[Node] = []
        for offset, line in lines:
            self._line_no += 1
            node = self._decode(offset, line)
            if node is not None:
                self.index.add(node, self._line_no, self.warnings, follow_leaf)
                added.append(node)
            self.end = offset + len(line) + 1
            self.unterminated = False
        return added

    def _decode(self, offset: int, line: bytes) -> Node | None:
        if not line.strip():
            return None
        try:
            node = decode_skeleton(line, offset, len(self.index))
        except SkeletonError as exc:
            self.warnings.append(FileWarning("malformed", f"line {self._line_no}: {exc}; skipped", line=self._line_no))
            return None
        if node.type == "session":
            self.warnings.append(
                FileWarning("extra-header", f"line {self._line_no} is a second session header; ignored", line=self._line_no)
            )
            return None
        return node

    def _finish(self, reader: LineReader | LineBlocks, at_open: bool) -> list[Node]:
        """Deal with bytes after the last line end: a complete entry, blanks, or an unfinished line.

        An unfinished line is never cut, moved or taken in: pi appends without a lock, a big
        line is visible half-written for a moment, and a truncate would also remove whatever
        whole lines were appended since. It is read again once the file grows, and an append
        of ours starts on a fresh line after it."""
        tail, offset = reader.tail, reader.tail_offset
        if not tail:
            return []
        if not tail.strip():
            self.end, self.unterminated = offset + len(tail), True
            return []
        try:
            node = decode_skeleton(tail, offset, len(self.index))
        except SkeletonError:
            self._unfinished_at = offset + len(tail)
            if at_open:
                line = self._line_no + 1
                self.warnings.append(
                    FileWarning(
                        "torn-tail",
                        f"line {line} has no line end yet ({len(tail)} bytes): another program may still be"
                        " writing it; left as it is, and the next append starts on a fresh line",
                        line=line,
                    )
                )
            return []
        self._line_no += 1
        self.index.add(node, self._line_no, self.warnings, follow_leaf=not at_open)
        self.end, self.unterminated = offset + len(tail), True
        return [node]

    @classmethod
    def adopt(cls, storage: Storage, header_line: bytes, plan: ForkPlan, source: Session) -> Session:
        """A session over a file this process has just written from `plan` (after `header_line`):
        copied lines are indexed from `source`'s columns, so the file need not be scanned again."""
        session = cls(storage, jsonfmt.loads(header_line))
        session.index = SessionIndex.sharing_tables(source.index) if plan.path else SessionIndex()
        session.end = len(header_line) + 1
        session._line_no = 1
        copied: list[int] = []  # copied entries not indexed yet, in order
        for part in plan.parts:
            if isinstance(part, bytes):
                session._adopt_copies(source, copied, plan.path)
                copied = []
                session._add_line(decode_skeleton(part, session.end, len(session.index)))
                session.end += len(part) + 1
            else:
                copied += part.seqs
        session._adopt_copies(source, copied, plan.path)
        return session

    def _adopt_copies(self, source: Session, seqs: list[int], path: bool) -> None:
        """Index the copies of `source`'s entries `seqs`, written from `self.end` on."""
        if not seqs:
            return
        lengths = source.index.lengths
        offsets = list(accumulate((lengths[seq] + 1 for seq in seqs[:-1]), initial=self.end))
        self.end = offsets[-1] + lengths[seqs[-1]] + 1
        if path and not len(self.index):  # the path's first entry: its parent (none, or missing) is its own
            self._add_line(source.index.node(seqs[0]).moved(offsets[0], 0))
            seqs, offsets = seqs[1:], offsets[1:]
        if path and seqs and self.index.extend_path(source.index, seqs, offsets):  # each the child of the one before
            self._line_no += len(seqs)
            return
        for seq, offset in zip(seqs, offsets, strict=True):
            self._add_line(source.index.node(seq).moved(offset, len(self.index)))

    def _add_line(self, node: Node) -> None:
        self._line_no += 1
        self.index.add(node, self._line_no, self.warnings)

    # ------------------------------------------------------------------ following other writers

    def refresh(self, limit: int | None = None) -> list[Node]:
        """Take in complete lines other processes appended since the last read; with `limit`, stop
        after the line that passes that many bytes (the rest waits for the next call)."""
        size = self.size_seen = self.storage.size()
        if self.storage.replaced():
            raise FileReplaced(
                "the session file was replaced by another program (renamed over, deleted or made a link); open it again",
                path=self.storage.name,
            )
        if size == self.end or size == self._unfinished_at:  # nothing new, or the same unfinished line
            return []
        if size < self.end or not self._still_ends_where_we_left():
            raise FileReplaced(
                "the session file was rewritten or truncated by another program; open it again",
                path=self.storage.name,
                size=size,
                expected=self.end,
            )
        reader = LineReader(self.storage, self.end, size)
        added = self._take_in(reader if limit is None else _until(reader, self.end + limit), follow_leaf=True)
        return added + self._finish(reader, at_open=False) if reader.done else added

    def _still_ends_where_we_left(self) -> bool:
        if self.end == 0 or self.unterminated:
            return True
        return self.storage.read(self.end - 1, 1) == b"\n"

    # ------------------------------------------------------------------ appending

    def append(
        self,
        entries: list[dict[str, Any]],
        parent: MaybeId = UNSET,
        expected_leaf: MaybeId = UNSET,
        sources: Sequence[str] | None = None,
        took_in: Callable[[list[Node], str | None], None] | None = None,
    ) -> tuple[list[Appended], list[Node]]:
        """Write entries as a chain below `parent` (default: the leaf) in one write.

        `sources` names where each entry came from in the request (`entry`, `entries[2]`,
        or `""` when the entry's fields are the params), so errors name the client's field.
        `took_in(nodes, leaf before)` hears of other writers' entries as they are taken in,
        before anything is checked or written. Returns what was written and those entries.
        Nothing is written if a check fails.
        """
        outcomes, others = self.append_many([AppendRequest(entries, parent, expected_leaf, sources)], took_in)
        outcome = outcomes[0]
        if isinstance(outcome, SessionTreeError):
            raise outcome
        return outcome, others

    def append_many(
        self,
        requests: Sequence[AppendRequest],
        took_in: Callable[[list[Node], str | None], None] | None = None,
    ) -> tuple[list[list[Appended] | SessionTreeError], list[Node]]:
        """`append` for several requests in turn, written with one write (and one sync).

        Each request is checked as if those before it had been written (its default parent and
        `expectedLeafId` are the leaf they leave); one that fails a check gets its error and writes
        nothing, and the others go on. Returns, per request, what it wrote or its error (a failed
        write fails every request that was to be written), and other writers' entries taken in."""
        if self.read_only is not None:
            refused = ReadOnlySession(
                f"the session is read-only: {self.read_only}", path=self.storage.name, reason=self.read_only_reason,
                **self.read_only_data,
            )
            return [refused for _ in requests], []
        with self.storage.lock():
            leaf_before = self.index.leaf_id
            others = self.refresh()
            if self.size_seen > self.end and self._unfinished_line_grew():
                others += self.refresh()
            if others and took_in is not None:
                took_in(others, leaf_before)
            leaf = self.index.leaf_id
            fresh: set[str] = set()  # ids given in this call: known to the requests after
            taken = Either(self.index.by_id, fresh)
            lines: list[dict[str, Any]] = []
            planned: list[int | SessionTreeError] = []  # per request: where its lines end, or its error
            for request in requests:
                entries, parent = request.entries, request.parent
                try:
                    self._check(entries, parent, request.expected_leaf, request.sources or _default_sources(len(entries)), leaf, taken, lines)
                except SessionTreeError as exc:
                    planned.append(exc)
                    continue
                parent_id = leaf if parent is UNSET else parent
                for entry in entries:
                    entry_id = new_entry_id(taken)
                    fresh.add(entry_id)
                    lines.append(build_line(entry, entry_id, parent_id, now_iso()))
                    parent_id = entry_id
                leaf = parent_id
                planned.append(len(lines))
            written: list[Appended] = []
            between: list[Node] = []
            if lines:
                try:
                    written, between = self._write(lines)
                except SessionTreeError as exc:
                    return [exc if isinstance(outcome, int) else outcome for outcome in planned], others
            if between and took_in is not None:
                took_in(between, leaf_before)
        outcomes: list[list[Appended] | SessionTreeError] = []
        done = 0
        for outcome in planned:
            if isinstance(outcome, int):
                outcomes.append(written[done:outcome])
                done = outcome
            else:
                outcomes.append(outcome)
        return outcomes, others + between

    def append_built(self, lines: list[dict[str, Any]]) -> list[Appended]:
        """Lines already built (ids and parents given: an import), written in one write under the
        lock after taking in what other writers appended."""
        if self.read_only is not None:
            raise ReadOnlySession(f"the session is read-only: {self.read_only}", path=self.storage.name)
        with self.storage.lock():
            self.refresh()
            written, _ = self._write(lines)
        return written

    def check_leaf(self, expected_leaf: MaybeId, leaf: MaybeId = UNSET) -> None:
        """`expectedLeafId`: a stale view of the session becomes an error, not a silent fork.
        (`leaf`: the leaf to compare with, when not the index's.)"""
        if leaf is UNSET:
            leaf = self.index.leaf_id
        if expected_leaf is not UNSET and expected_leaf != leaf:
            raise LeafConflict(
                f"the leaf is {_shown(leaf)}, not {_shown(expected_leaf)}",
                currentLeafId=leaf,
                expectedLeafId=expected_leaf,
            )

    def _check(
        self,
        entries: list[dict[str, Any]],
        parent: MaybeId,
        expected_leaf: MaybeId,
        sources: Sequence[str],
        leaf: str | None,
        known: Either,
        planned: list[dict[str, Any]],
    ) -> None:
        """`planned`: the lines earlier requests of the same call will write (ids given)."""
        self.check_leaf(expected_leaf, leaf)
        if isinstance(parent, str):
            _require_in(known, parent, "parentId")
        for entry, source in zip(entries, sources, strict=True):
            prefix = f"{source}." if source else ""
            if entry["type"] == "label":
                _require_in(known, entry["targetId"], f"{prefix}targetId")
            elif entry["type"] == "compaction" and entry.get("firstKeptEntryId") is not None:
                _require_in(known, entry["firstKeptEntryId"], f"{prefix}firstKeptEntryId")
            elif entry["type"] == "context_edit":
                self._check_context_edit(entry, leaf if parent is UNSET else parent, planned, f"{prefix}targetId")

    def _check_context_edit(self, entry: dict[str, Any], parent: str | None, planned: list[dict[str, Any]], field: str) -> None:
        """pi's appendContextEdit checks: the target exists, is on the path of the entry the edit is
        appended below, and is editable. Stores the replacement as pi writes it."""
        target = entry["targetId"]
        pending = {line["id"]: line for line in planned}
        node = self.index.get(target)
        if target in pending:
            kind = kind_of_line(pending[target])
        elif node is not None:
            kind = (node.type, node.role)
        else:
            raise EntryNotFound(f"entry {target} not found ({field})", entryId=target, field=field)
        entry["replacement"] = checked_replacement(entry, kind, self._on_path(target, parent, pending), field)

    def _on_path(self, target: str, leaf: str | None, pending: dict[str, dict[str, Any]]) -> bool:
        """Whether `target` is on the path from the root to `leaf` (lines not yet written first)."""
        while leaf is not None and leaf in pending:
            if leaf == target:
                return True
            parent = pending[leaf].get("parentId")
            leaf = parent if isinstance(parent, str) else None
        node = self.index.get(leaf) if leaf is not None else None
        if node is None:
            return False
        ids = self.index.ids
        return any(ids[seq] == target for seq in self.index.walk(node.seq)[0])

    def move_leaf(self, entry_id: str | None) -> None:
        """pi's branch (an id) and resetLeaf (None): only the in-memory leaf moves."""
        if entry_id is not None:
            self.require(entry_id, "entryId")
        self.index.leaf_id = entry_id

    def require(self, entry_id: str, field: str) -> Node:
        node = self.index.get(entry_id)
        if node is None:
            raise EntryNotFound(f"entry {entry_id} not found ({field})", entryId=entry_id, field=field)
        return node

    def _unfinished_line_grew(self) -> bool:
        """The file ends with an unfinished line: wait (briefly) while it grows. A big `write` of
        another program becomes visible while it runs, and ours would land after the whole of it,
        so a line end of ours put before it now would follow its own: an empty line. True when
        the file grew since the last read (read it again)."""
        size, start = self.size_seen, time.monotonic()
        quiet_since, quiet_looks = start, 0
        while True:
            time.sleep(_UNFINISHED_POLL)
            now = time.monotonic()
            if (grown := self.storage.size()) != size:
                size, quiet_since, quiet_looks = grown, now, 0
                if self.storage.read(size - 1, 1) == b"\n":
                    break
            else:  # still: a writer that died, or one this busy machine has not run for a while
                quiet_looks += 1
                if quiet_looks >= 2 and now - quiet_since >= _QUIET:
                    break
            if now - start >= _UNFINISHED_WAIT:
                break
        return size != self.size_seen

    def _write(self, lines: list[dict[str, Any]]) -> tuple[list[Appended], list[Node]]:
        """Write the lines (built, ids given) in one write; returns them and other writers' entries
        that landed between the refresh and the write (they come first in the file)."""
        encoded = [jsonfmt.dumps(line) for line in lines]
        body = b"\n".join(encoded) + b"\n"
        others: list[Node] = []
        for _ in range(_WRITE_TRIES):
            fence = b"\n" if self.size_seen > self.end or self.unterminated else b""
            try:
                start = self.storage.append(fence + body)
            except OSError as exc:
                raise StorageError(
                    f"could not write to the session file: {exc.strerror or exc}", path=self.storage.name
                ) from None
            glued = self._take_in_before(start, fence, others)
            if not glued:
                return self._index_written(lines, encoded, start + len(fence)), others
            self._skip_spoiled(start + len(fence) + len(body), len(encoded))
        raise StorageError(
            "another program kept leaving unfinished lines where this append was written; nothing was acknowledged",
            path=self.storage.name,
        )

    def _take_in_before(self, start: int, fence: bytes, others: list[Node]) -> bool:
        """Take in what lies between our last read and our write at `start` (an unfinished line
        we fenced, or lines another writer appended in the gap). True when our first line was
        glued onto another writer's unfinished line instead (it wrote one in the gap)."""
        if start == self.end and not fence:
            return False
        reader = LineReader(self.storage, self.end, start)
        others += self._take_in(reader, follow_leaf=False)
        if not reader.tail:
            if fence and start > 0 and self.storage.read(start - 1, 1) == b"\n":
                self._fenced_a_finished_line(start)
            return False
        self._line_no += 1
        if not fence:
            return True
        self.fenced = True
        self.warnings.append(
            FileWarning(
                "torn-line-fenced",
                f"line {self._line_no} was unfinished when appending; kept and ended with a line end",
                line=self._line_no,
            )
        )
        self.end, self.unterminated = start + len(fence), False
        return False

    def _fenced_a_finished_line(self, start: int) -> None:
        """Our fence followed a line end: the unfinished line was still being written (and
        outlasted the wait), and its writer ended it before our write landed. The fence is an
        empty line now; nothing is lost, but a strict JSONL reader refuses the file: say so."""
        self._line_no += 1
        self.warnings.append(
            FileWarning(
                "empty-line-fenced",
                f"line {self._line_no} is empty: another program was still writing the line before it when"
                " appending, and the line end put before the append followed that line's own",
                line=self._line_no,
            )
        )
        self.end, self.unterminated = start + 1, False

    def _skip_spoiled(self, end: int, count: int) -> None:
        """Our lines up to `end` continue another writer's unfinished line: the first is lost in
        it, the rest are written again (same ids; the later copy wins). Skip the spoiled copy."""
        self._line_no += count - 1
        self.fenced = True
        self.warnings.append(
            FileWarning(
                "torn-line-fenced",
                f"line {self._line_no - count + 1} was left unfinished by another program while appending;"
                " the append was written again on a fresh line",
                line=self._line_no - count + 1,
            )
        )
        self.end = self.size_seen = end
        self.unterminated = False

    def _index_written(self, lines: list[dict[str, Any]], encoded: list[bytes], offset: int) -> list[Appended]:
        written = []
        for line, raw in zip(lines, encoded, strict=True):
            self._line_no += 1
            node = node_of_fields(line, offset, len(raw), len(self.index))  # no need to decode what was just encoded
            self.index.add(node, self._line_no, self.warnings)
            written.append(Appended(node, line))
            offset += len(raw) + 1
        self.end, self.unterminated = offset, False
        return written

    # ------------------------------------------------------------------ reading payloads

    def entry(self, node: Node) -> dict[str, Any]:
        """The full entry of a node, decoded from the file."""
        return self._entry_from(node, self.raw(node))

    def messages_or_entries(self, nodes: list[Node]) -> list[jsonfmt.RawJson | dict[str, Any]]:
        """For a `message` entry whose message can go to the wire as it is written (the line
        valid JSON and UTF-8, the message an object), that message as its text, not decoded;
        for any other node the whole entry (`entry`). What a context needs, read at once."""
        found: list[jsonfmt.RawJson | dict[str, Any]] = []
        for node, line in self._lines_of(nodes):
            text = _message_text(node, line) if node.type == "message" else None
            found.append(text if text is not None else self._entry_from(node, line))
        return found

    def _lines_of(self, nodes: list[Node]) -> Iterator[tuple[Node, memoryview]]:
        """Each node's line; lines that follow one another in the file are read together (a
        path's entries mostly do), so a context costs a few reads, not one per message."""
        at = 0
        while at < len(nodes):
            first, end = nodes[at], at + 1
            stop = first.offset + first.length + 1
            while end < len(nodes) and nodes[end].offset == stop and stop - first.offset < _SCAN_CHUNK:
                stop = nodes[end].offset + nodes[end].length + 1
                end += 1
            view = memoryview(self.storage.read(first.offset, stop - 1 - first.offset))
            for node in nodes[at:end]:
                start = node.offset - first.offset
                yield node, view[start : start + node.length]
            at = end

    def _entry_from(self, node: Node, raw: bytes | memoryview) -> dict[str, Any]:
        try:
            value = jsonfmt.loads(raw)
        except jsonfmt.JSONDecodeError:
            value = None
        if not isinstance(value, dict) or value.get("id") != node.id:
            raise self._changed_in_place(node)
        return value

    def raw(self, node: Node) -> bytes:
        return self.storage.read(node.offset, node.length)

    def raw_entry(self, node: Node) -> jsonfmt.RawJson | dict[str, Any]:
        """The entry as its own bytes, to pass on without decoding (decoded on first read); checked
        first, since bytes rewritten in place by another program must not reach the wire."""
        raw = self.raw(node).rstrip(b"\r")
        try:
            same = _id_only(raw).id == node.id
        except (msgspec.MsgspecError, RecursionError):  # what the fast decoder refuses, the entry's own way
            return self.entry(node)
        if not same:
            raise self._changed_in_place(node)
        return jsonfmt.raw_object(raw)

    def _changed_in_place(self, node: Node) -> FileReplaced:
        return FileReplaced(
            f"entry {node.id} is no longer where it was in the session file: another program rewrote the file;"
            " open it again",
            path=self.storage.name,
            entryId=node.id,
        )

    def close(self) -> None:
        self.storage.close()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """A scan makes millions of small objects and no cycles: the cycle collector, run every few
    hundred allocations, would only walk the growing columns again and again (a third of a
    1,000,000-entry scan). Paused for the scan, unless something else paused it already."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _until(lines: Iterable[tuple[int, bytes]], stop: int) -> Iterator[tuple[int, bytes]]:
    """The lines up to the one that reaches `stop`."""
    for offset, line in lines:
        yield offset, line
        if offset + len(line) >= stop:
            return


def _require_in(known: Either, entry_id: str, field: str) -> None:
    if entry_id not in known:
        raise EntryNotFound(f"entry {entry_id} not found ({field})", entryId=entry_id, field=field)


def _shown(entry_id: str | None) -> str:
    return "null" if entry_id is None else entry_id


def _default_sources(count: int) -> list[str]:
    return ["entry"] if count == 1 else [f"entries[{position}]" for position in range(count)]

