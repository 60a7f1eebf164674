"""The line format: JSON.stringify's output, JavaScript's trim, toISOString, entry checks."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.entries import build_line, iso_to_ms, js_trim, now_iso, validate_entry
from sessiontree.errors import InvalidParams
from sessiontree.jsonfmt import RawJson, dumps, dumps_wire, js_number, loads, loads_wire, raw_object
from sessiontree.tree.preview import preview_of_line

# Inputs and what node's JSON.stringify(JSON.parse(input)) printed for them.
NUMBERS = (
    "[1.0,1.5,1e-7,1e21,1e20,0.30000000000000004,-0.0,4.5e-6,123456789.125,1e-6,1.7976931348623157e308,"
    "5e-324,-2.5e-10,100.0,123e18,1.234e21,-0.001,2e-7,1.5e300]"
)
NODE_PRINTED = (
    "[1,1.5,1e-7,1e+21,100000000000000000000,0.30000000000000004,0,0.0000045,123456789.125,0.000001,"
    "1.7976931348623157e+308,5e-324,-2.5e-10,100,123000000000000000000,1.234e+21,-0.001,2e-7,1.5e+300]"
)


def test_numbers_are_spelled_as_javascript_spells_them() -> None:
    assert dumps(json.loads(NUMBERS)).decode() == NODE_PRINTED


def test_strings_are_escaped_as_javascript_escapes_them() -> None:
    value = {"a": "\x01\x1f\x7f\u2028 é 😀 \"\\/\n\t", "n": None, "b": [True, False], "lone": "x\ud83d"}
    assert dumps(value) == (
        '{"a":"\\u0001\\u001f\x7f\u2028 é 😀 \\"\\\\/\\n\\t","n":null,"b":[true,false],"lone":"x\\ud83d"}'
    ).encode()


def test_integers_beyond_2_53_are_rounded_as_javascript_reads_them() -> None:
    value = {"a": 9007199254740993, "b": 18446744073709551615, "c": 10**400, "safe": 9007199254740991}
    assert dumps(value) == b'{"a":9007199254740992,"b":18446744073709552000,"c":null,"safe":9007199254740991}'


def test_lone_surrogate_escapes_are_read_and_invalid_utf8_replaced() -> None:
    assert loads(b'{"a":"x\\ud83d"}') == {"a": "x\ud83d"}
    assert loads(b'"a\xc3n"') == "a\ufffdn"
    with pytest.raises(ValueError):
        loads_wire(b'"a\xc3n"')
    assert loads_wire(b'"\\udfff"') == "\udfff"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_numbers_read_back_as_the_same_double(value: float) -> None:
    assert float(js_number(value)) == value


def test_js_trim_strips_what_javascript_strips() -> None:
    assert js_trim("\ufeff\u00a0\u2028 name \u3000\t") == "name"
    assert js_trim("\x1cname\x85") == "\x1cname\x85"  # Python's strip() would remove these


def test_timestamps() -> None:
    assert iso_to_ms("2025-01-01T00:00:01.000Z") == 1735689601000
    assert iso_to_ms("not a time") is None and iso_to_ms(5) is None
    stamp = now_iso()
    assert len(stamp) == 24 and stamp.endswith("Z") and stamp[19] == "."


def test_build_line_uses_pi_key_order_and_keeps_unknown_keys_last() -> None:
    entry = {"extra": 1, "display": True, "content": "c", "customType": "t", "type": "custom_message"}
    assert list(build_line(entry, "abcd1234", None, "T")) == [
        "type", "customType", "content", "display", "id", "parentId", "timestamp", "extra",
    ]
    compaction = {"type": "compaction", "tokensBefore": 1, "firstKeptEntryId": "x", "summary": "s"}
    assert list(build_line(compaction, "i", "p", "T")) == [
        "type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore",
    ]


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"type": "message"}, "entry.message"),
        ({"type": "message", "message": {"content": "x"}}, "entry.message.role"),
        ({"type": "model_change", "provider": "p"}, "entry.modelId"),
        ({"type": "compaction", "summary": "s", "firstKeptEntryId": "x", "tokensBefore": True}, "entry.tokensBefore"),
        ({"type": "custom_message", "customType": "t", "content": 5, "display": True}, "entry.content"),
        ({"type": "label", "targetId": "x", "label": 3}, "entry.label"),
        ({"type": "session"}, "entry.type"),
        ({"type": "custom", "customType": "t", "timestamp": "x"}, "entry.timestamp"),
    ],
)
def test_invalid_entries_name_the_field(entry: dict, field: str) -> None:
    with pytest.raises(InvalidParams) as caught:
        validate_entry(entry)
    assert caught.value.data["field"] == field


def test_raw_json_goes_to_the_wire_unchanged_and_reads_like_a_dict() -> None:
    text = b'{"type":"custom","id":"a1b2c3d4","data":{"n":1.0,"s":"x\\ud83d"}}'
    raw = raw_object(text)
    assert isinstance(raw, RawJson)
    assert dumps_wire({"entries": [raw]}) == b'{"entries":[' + text + b"]}"  # 1.0 stays as it was written
    assert raw["id"] == "a1b2c3d4" and dict(raw) == loads(text) and raw == loads(text)
    broken = raw_object(b'{"t":"a\xc3n"}')
    assert broken == {"t": "a\ufffdn"} and not isinstance(broken, RawJson)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"type": "message", "message": {"role": "user", "content": "  many\n  spaces  "}}, "many spaces"),
        ({"type": "message", "message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hidden"}, {"type": "text", "text": "shown"},
            {"type": "toolCall", "name": "read", "arguments": {"path": "x"}}]}}, "shown [read]"),
        ({"type": "message", "message": {"role": "toolResult", "toolName": "bash", "content": [
            {"type": "text", "text": "y" * 500}]}}, "bash: " + "y" * 73 + "…"),
        ({"type": "message", "message": {"role": "bashExecution", "command": "ls -la"}}, "$ ls -la"),
        ({"type": "label", "targetId": "abc", "label": ""}, "abc: (cleared)"),
        ({"type": "message", "message": {"role": "user", "content": [{"type": "image", "data": "AAAA"}]}}, "[image]"),
        ({"type": "message", "message": {"role": "user", "content": "half \ud83d"}}, "half \ud83d"),
        ({"type": "future_type"}, None),
    ],
)
def test_previews(entry: dict, expected: str | None) -> None:
    assert preview_of_line(dumps(entry)) == expected
