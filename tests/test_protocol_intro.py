"""protocol.md's "A minimal session": its frames are exact (each `Content-Length` is its body's
length in bytes), and sent to a fresh daemon they get the answers the document shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from support.replay import replay

PROTOCOL_MD = Path(__file__).resolve().parent.parent / "protocol.md"
DOC_ROOT = "/home/user/.pi/agent/sessions"  # how the sessions root is shown in the examples
_SECTION_RE = re.compile(r"^## A minimal session\n(.*?)(?=^## )", re.M | re.S)
_BLOCK_RE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
_FRAME_RE = re.compile(r"\AContent-Length: (\d+)\\r\\n\n\\r\\n\n(.*)\n\Z", re.S)


def blocks() -> list[tuple[str, str]]:
    section = _SECTION_RE.search(PROTOCOL_MD.read_text())
    assert section, "protocol.md has no section `## A minimal session`"
    return [(kind, text) for kind, text in _BLOCK_RE.findall(section.group(1))]


def frames_and_answers() -> list[dict[str, Any]]:
    """The section as transcript lines: the client's frames in, the daemon's answers out."""
    lines = []
    for kind, text in blocks():
        if kind == "json":
            lines.append({"dir": "out", "msg": orjson.loads(text)})
            continue
        frame = _FRAME_RE.match(text)
        assert frame, f"not a frame as the section writes them:\n{text}"
        length, body = int(frame.group(1)), frame.group(2)
        assert length == len(body.encode()), f"Content-Length {length}, but the body is {len(body.encode())} bytes: {body}"
        lines.append({"dir": "in", "msg": orjson.loads(body)})
    return lines


def test_the_minimal_session_covers_the_lifecycle() -> None:
    sent = [line["msg"].get("method") for line in frames_and_answers() if line["dir"] == "in"]
    assert sent == ["initialize", "initialized", "session/create", "session/append", "session/context", "shutdown", "exit"]
    assert "capabilities" in frames_and_answers()[0]["msg"]["params"]


def test_the_minimal_session_replays_against_the_daemon() -> None:
    result = replay(frames_and_answers(), placeholder=DOC_ROOT, name="protocol.md, A minimal session")
    assert result.exit_code == 0 and result.sent == 7
