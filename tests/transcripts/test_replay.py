"""Replay every recorded transcript in this directory against a fresh daemon."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessiontree.errors import ALL_ERRORS, FileReplaced, StoreUnavailable
from sessiontree.protocol import METHODS
from support.replay import load_transcript, replay

HERE = Path(__file__).parent
TRANSCRIPTS = sorted(HERE.glob("*.jsonl"))

# Codes of protocol.md's table that a client can provoke (-32603 is a bug by definition; FileReplaced
# takes another program changing the file mid-conversation, StoreUnavailable a daemon started on a
# PostgreSQL store that is down: tests/e2e provokes both).
PROVOKABLE_CODES = {-32700, -32600, -32601, -32602, -32002, -32800} | {
    cls.code for cls in ALL_ERRORS if cls not in (FileReplaced, StoreUnavailable)
}


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.stem for p in TRANSCRIPTS])
def test_transcript_replays(path: Path) -> None:
    seed = path.with_suffix(".seed")
    lines = load_transcript(path)
    result = replay(lines, seed=seed if seed.is_dir() else None, name=path.name)
    assert len(result.received) == sum(line["dir"] == "out" for line in lines)


def _all_lines() -> list[dict]:
    return [line for path in TRANSCRIPTS for line in load_transcript(path)]


def test_transcripts_call_every_method() -> None:
    called = {line["msg"].get("method") for line in _all_lines() if line["dir"] == "in" and isinstance(line["msg"], dict)}
    assert set(METHODS) | {"initialize", "initialized", "shutdown", "exit", "$/cancelRequest"} <= called


def test_transcripts_answer_every_method_successfully() -> None:
    """Each method appears at least once with a result, not only with errors."""
    requests: dict[tuple[str, object], str] = {}
    succeeded: set[str] = set()
    for path in TRANSCRIPTS:
        for line in load_transcript(path):
            msg = line["msg"]
            if not isinstance(msg, dict):
                continue
            if line["dir"] == "in" and "method" in msg and "id" in msg:
                requests[(path.name, msg["id"])] = msg["method"]
            elif line["dir"] == "out" and "result" in msg:
                succeeded.add(requests.get((path.name, msg.get("id")), ""))
    assert set(METHODS) - succeeded == set()


def test_transcripts_provoke_every_error_code() -> None:
    codes = {line["msg"]["error"]["code"] for line in _all_lines() if line["dir"] == "out" and "error" in (line["msg"] or {})}
    assert PROVOKABLE_CODES - codes == set()


def test_transcripts_cover_notifications_and_request_after_shutdown() -> None:
    lines = load_transcript(HERE / "lifecycle.jsonl")
    shutdown = next(i for i, line in enumerate(lines) if line["dir"] == "in" and line["msg"].get("method") == "shutdown")
    after = [line["msg"] for line in lines[shutdown + 1 :] if line["dir"] == "out" and "error" in line["msg"]]
    assert [m["error"]["code"] for m in after] == [-32600]
    sent = {line["msg"].get("method") for line in _all_lines() if line["dir"] == "out" and isinstance(line["msg"], dict)}
    assert "window/logMessage" in sent


def test_transcripts_hide_the_recording_directory() -> None:
    for path in TRANSCRIPTS:
        assert not re.search(r"sessiontree-record-", path.read_text()), path.name
