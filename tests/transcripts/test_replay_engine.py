"""The replay engine must fail when the daemon's answers differ: tampered transcripts prove it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from support.replay import Normaliser, ReplayMismatch, load_transcript, replay, steps_of

HERE = Path(__file__).parent
ROOT = "/tmp/replay-root"


def _lines(name: str) -> list[dict[str, Any]]:
    return load_transcript(HERE / f"{name}.jsonl")


def _out_index(lines: list[dict[str, Any]], predicate: Any) -> int:
    return next(i for i, line in enumerate(lines) if line["dir"] == "out" and predicate(line["msg"]))


def _result_of(lines: list[dict[str, Any]], method: str, nth: int = 0) -> int:
    """The line index of the answer to the nth request of `method`."""
    ids = [line["msg"]["id"] for line in lines if line["dir"] == "in" and isinstance(line["msg"], dict) and line["msg"].get("method") == method and "id" in line["msg"]]
    return _out_index(lines, lambda m: m.get("id") == ids[nth] and "method" not in m)


# --------------------------------------------------------------------------- against the daemon


def test_a_changed_value_fails_with_its_path() -> None:
    lines = copy.deepcopy(_lines("every-method"))
    index = _result_of(lines, "session/setName")
    lines[index]["msg"]["result"]["parentId"] = None
    with pytest.raises(ReplayMismatch) as failure:
        replay(lines, name="tampered")
    assert f"transcript line {index + 1}" in str(failure.value)
    assert "$.result.parentId: expected null, got" in str(failure.value)


def test_a_generated_id_swapped_for_another_fails() -> None:
    """Two different recorded ids cannot stand for one replayed id, nor one for two."""
    lines = copy.deepcopy(_lines("every-method"))
    first = lines[_result_of(lines, "session/append", 0)]["msg"]["result"]["id"]
    second = lines[_result_of(lines, "session/append", 1)]["msg"]["result"]
    second["parentId"] = "0123abcd"  # well-formed, generated-looking, but not the first entry's id
    assert first != "0123abcd"
    with pytest.raises(ReplayMismatch, match=r"already stands for the recorded '[0-9a-f]{8}', here for '0123abcd'"):
        replay(lines, name="tampered")


def test_a_missing_notification_fails() -> None:
    lines = copy.deepcopy(_lines("open-warnings"))
    del lines[_out_index(lines, lambda m: m.get("method") == "window/logMessage")]
    with pytest.raises(ReplayMismatch, match=r"\$\.params\.message: expected"):
        replay(lines, seed=HERE / "open-warnings.seed", name="tampered")


def test_an_unrecorded_answer_fails() -> None:
    lines = copy.deepcopy(_lines("lifecycle"))
    del lines[max(i for i, line in enumerate(lines) if line["dir"] == "out")]  # the answer after shutdown
    with pytest.raises(ReplayMismatch, match="does not have"):
        replay(lines, name="tampered")


def test_an_untampered_transcript_replays() -> None:
    lines = _lines("lifecycle")
    result = replay(lines, name="lifecycle")
    assert result.exit_code == 0
    assert result.sent == sum(line["dir"] == "in" for line in lines)


# --------------------------------------------------------------------------- the normaliser alone


def test_tokens_inside_paths_and_messages_bind_consistently() -> None:
    norm = Normaliser("${ROOT}", ROOT)
    uuid_a, uuid_b = "01a22b05-47c1-7c82-b492-71b77adc71b9", "01a22b06-0000-7000-8000-000000000001"
    recorded = {"path": "${ROOT}/--x--/2026-11-30T05-54-56-158Z_" + uuid_a + ".jsonl", "sessionId": uuid_a}
    replayed = {"path": f"{ROOT}/--x--/2027-01-01T00-00-00-001Z_{uuid_b}.jsonl", "sessionId": uuid_b}
    assert norm.compare(recorded, replayed) == []
    problems = norm.compare({"sessionId": uuid_a}, {"sessionId": "01a22b06-0000-7000-8000-000000000002"})
    assert problems and "was replayed as" in problems[0]


def test_requests_are_translated_through_the_bijection() -> None:
    norm = Normaliser("${ROOT}", ROOT)
    assert norm.compare({"id": "aaaaaaaa", "timestamp": 1764482096158}, {"id": "bbbbbbbb", "timestamp": 1800000000000}) == []
    sent = norm.request({"entryId": "aaaaaaaa", "path": "${ROOT}/a", "note": "see aaaaaaaa", "timestamp": 1764482096158})
    assert sent == {"entryId": "bbbbbbbb", "path": f"{ROOT}/a", "note": "see bbbbbbbb", "timestamp": 1800000000000}
    # A value the client made up stands for itself, and then nothing else may claim it.
    assert norm.request({"leafId": "ffffffff"}) == {"leafId": "ffffffff"}
    assert norm.compare("cccccccc", "ffffffff") != []


def test_clock_readings_match_by_form_since_one_request_may_or_may_not_share_a_millisecond() -> None:
    norm = Normaliser("${ROOT}", ROOT)
    recorded = [{"timestamp": "2026-12-02T00:12:12.489Z"}, {"timestamp": "2026-12-02T00:12:12.489Z"}]
    replayed = [{"timestamp": "2026-12-02T03:20:15.128Z"}, {"timestamp": "2026-12-02T03:20:15.129Z"}]
    assert norm.compare(recorded, replayed) == []
    assert norm.compare({"timestamp": 1764482096158}, {"timestamp": 1800000000000}) == []
    assert norm.compare({"timestamp": 1764482096158}, {"timestamp": 1800000000001}) == []
    # The form is still checked, and the first pairing is what a later request is sent with.
    assert norm.compare({"t": "2026-12-02T00:12:12.489Z"}, {"t": "2026-12-02 03:20"}) != []
    assert norm.request({"note": "at 2026-12-02T00:12:12.489Z"}) == {"note": "at 2026-12-02T03:20:15.128Z"}


def test_plain_values_and_shapes_are_compared_exactly() -> None:
    norm = Normaliser("${ROOT}", ROOT)
    assert norm.compare({"a": 1}, {"a": 1.0}) == ["$.a: expected 1, got 1.0"]
    assert norm.compare({"a": [1, 2]}, {"a": [1]})[0].startswith("$.a: expected 2 items, got 1")
    assert norm.compare({"a": 1}, {"b": 1}) == ["$.a: missing (expected 1)", "$.b: unexpected (got 1)"]
    assert norm.compare({"count": 5}, {"count": 6}) == ["$.count: expected 5, got 6"]  # not a time: not mapped


def test_steps_follow_the_recorded_interleaving() -> None:
    lines = [
        {"dir": "in", "msg": {"id": 1}},
        {"dir": "in", "msg": {"method": "$/cancelRequest"}},
        {"dir": "out", "msg": {"id": 1}},
        {"dir": "in", "msg": {"id": 2}},
        {"dir": "out", "msg": {"method": "window/logMessage"}},
        {"dir": "out", "msg": {"id": 2}},
    ]
    steps = steps_of(lines)
    assert [(len(s.sent), len(s.expected)) for s in steps] == [(2, 1), (1, 2)]
