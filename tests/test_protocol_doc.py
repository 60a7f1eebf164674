"""protocol.md, the wire-types table and the daemon must agree; the document's examples must replay.

The methods documented (`### session/...`), `protocol.METHODS`, the handlers the daemon registers
and the methods it advertises in `initialize` must be the same set; every domain error must be in
the error table under its name; every params field must be named in its method's section; and the
`*Example*` blocks, read in document order, are one story replayed against a fresh daemon.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from sessiontree.errors import ALL_ERRORS
from sessiontree.protocol import METHODS, NOTIFICATIONS, to_camel
from support.replay import INITIALIZE, Daemon, replay

PROTOCOL_MD = Path(__file__).resolve().parent.parent / "protocol.md"
DOC_ROOT = "/home/user/.pi/agent/sessions"  # how the sessions root is shown in the examples
_SECTION_RE = re.compile(r"^### (session/\S+)\n(.*?)(?=^#{2,3} |\Z)", re.M | re.S)
_EXAMPLE_RE = re.compile(r"^\*Example\*\n(.*)", re.M | re.S)
_JSON_BLOCK_RE = re.compile(r"^```json\n(.*?)^```", re.M | re.S)
_ERROR_ROW_RE = re.compile(r"^\| (-\d+) \| (\w+) \|", re.M)



def all_sections() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _SECTION_RE.finditer(PROTOCOL_MD.read_text())}


def sections() -> dict[str, str]:
    """The requests' sections (a notification's section opens with `*Notification*`)."""
    return {name: body for name, body in all_sections().items() if not body.lstrip().startswith("*Notification*")}


def notification_sections() -> dict[str, str]:
    return {name: body for name, body in all_sections().items() if body.lstrip().startswith("*Notification*")}


def example_messages(body: str) -> list[Any]:
    example = _EXAMPLE_RE.search(body)
    return [orjson.loads(block) for block in _JSON_BLOCK_RE.findall(example.group(1))] if example else []


def advertised_methods() -> list[str]:
    """What a live daemon lists under capabilities.experimental.sessiontree.methods."""
    daemon = Daemon(Path("/nonexistent-sessiontree-root"))  # initialize never touches the root
    try:
        daemon.write([orjson.dumps(INITIALIZE | {"params": {"processId": None, "capabilities": {}}})])
        answer = daemon.next()
    finally:
        daemon.kill()
    assert isinstance(answer, dict) and "result" in answer, answer
    return answer["result"]["capabilities"]["experimental"]["sessiontree"]["methods"]


def registered_methods() -> set[str]:
    """The `session/*` methods of the daemon's handler table."""
    from sessiontree.server import HANDLERS

    return {name for name in HANDLERS if name.startswith("session/")}


# --------------------------------------------------------------------------- methods


def test_documented_methods_match_the_wire_types_table() -> None:
    assert sorted(sections()) == sorted(METHODS)


def test_documented_notifications_match_the_wire_types_table() -> None:
    assert sorted(notification_sections()) == sorted(NOTIFICATIONS)


@pytest.mark.parametrize("method", sorted(NOTIFICATIONS))
def test_every_notification_field_is_documented(method: str) -> None:
    body = notification_sections()[method]
    missing = [to_camel(f.name) for f in attrs.fields(NOTIFICATIONS[method]) if not re.search(rf"\b{to_camel(f.name)}\??:", body)]
    assert missing == [], f"{method}: fields not named in its section of protocol.md"


def test_registered_handlers_match_the_wire_types_table() -> None:
    assert registered_methods() == set(METHODS)


def test_advertised_methods_match_the_document() -> None:
    assert advertised_methods() == sorted(sections())


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_params_field_is_documented(method: str) -> None:
    body = sections()[method]
    missing = [to_camel(f.name) for f in attrs.fields(METHODS[method].params) if not re.search(rf"\b{to_camel(f.name)}\??:", body)]
    assert missing == [], f"{method}: params not named in its section of protocol.md"


# --------------------------------------------------------------------------- errors


def test_every_domain_error_is_in_the_error_table() -> None:
    table = {int(code): name for code, name in _ERROR_ROW_RE.findall(PROTOCOL_MD.read_text())}
    assert {cls.code: cls.name for cls in ALL_ERRORS}.items() <= table.items()


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_has_an_example(method: str) -> None:
    messages = example_messages(sections()[method])
    requests = [m for m in messages if "method" in m and "id" in m]
    answered = {m["id"] for m in messages if "method" not in m}
    assert any(m["method"] == method for m in requests), f"{method} has no example request"
    assert {m["id"] for m in requests} == answered, f"{method}: every example request needs its response"


def doc_transcript() -> list[dict[str, Any]]:
    """The examples in document order, as transcript lines: requests in, the rest out."""
    lines = []
    asked: set[Any] = set()  # ids of the daemon's requests to the client
    for body in sections().values():
        for message in example_messages(body):
            if "method" in message and "id" in message and str(message["method"]).startswith("sessiontree/"):
                asked.add(message["id"])
                direction = "out"
            elif "method" in message and "id" in message:
                direction = "in"
            else:
                direction = "in" if message.get("id") in asked else "out"
            lines.append({"dir": direction, "msg": message})
    return lines


def test_examples_replay_against_the_daemon() -> None:
    lines = doc_transcript()
    assert sum(line["dir"] == "in" for line in lines) >= len(METHODS) - 1
    result = replay(lines, placeholder=DOC_ROOT, handshake=True, name="protocol.md examples")
    assert result.exit_code == 0


def test_a_drifted_example_fails() -> None:
    lines = doc_transcript()
    answer = next(line["msg"] for line in lines if line["dir"] == "out" and "leafId" in (line["msg"].get("result") or {}))
    answer["result"]["leafId"] = "0000beef"
    with pytest.raises(AssertionError, match=r"\$\.result\.leafId"):
        replay(lines, placeholder=DOC_ROOT, handshake=True, name="protocol.md examples")
