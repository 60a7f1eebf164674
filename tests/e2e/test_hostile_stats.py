"""session/stats over stdio on files whose usage numbers are hostile: numbers beyond a double,
sums that overflow, strings, booleans, null. Stats answer: what is a finite number is counted, what
is not is skipped and counted as skipped; no internal error, no null where a number is documented."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from support.daemon import Calls

HEADER = {"type": "session", "version": 3, "id": "hostile-usage", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def _assistant(n: int, usage: str) -> str:
    """An assistant line whose `usage` is the JSON text `usage`, spelled as a hostile writer would."""
    message = json.dumps({"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "read",
                                                            "arguments": {}}],
                          "provider": "p", "model": "m", "timestamp": 1767225600000 + n})
    parent = json.dumps(f"{n - 1:08x}" if n > 1 else None)
    return (f'{{"type":"message","id":"{n:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z",'
            f'"message":{message[:-1]},"usage":{usage}}}}}')


HOSTILE_USAGES = [
    # input beyond a double (JavaScript: Infinity), -0, a boolean; cost: a string, null, false, 1e309
    '{"input":' + "9" * 400 + ',"output":5,"cacheRead":-0,"cacheWrite":true,'
    '"cost":{"input":"NaN","output":0.5,"cacheRead":null,"cacheWrite":false,"total":1e309}}',  # 6 skipped
    '"lots"',  # not an object: 1 skipped
    '{"input":1.7e308,"output":1,"cost":{"total":1.7e308}}',
    '{"input":1.7e308,"output":1,"cost":{"total":1.7e308}}',  # would overflow both sums: 2 skipped
    '{"input":7,"cost":[1]}',  # cost not an object: 1 skipped
    '{"input":18446744073709551616,"output":-1e-320}',  # 2^64 and a subnormal: both finite, counted
]


def _numbers(figures: Any, where: str = "") -> list[tuple[str, Any]]:
    """Every leaf value under a Usage object, with where it is."""
    if isinstance(figures, dict):
        return [pair for key, value in figures.items() for pair in _numbers(value, f"{where}.{key}")]
    return [(where, figures)]


def _all_finite_numbers(result: dict[str, Any]) -> None:
    for figures in (result["tree"], result.get("path")):
        if figures is None:
            continue
        for usage in [figures["usage"], *figures["byModel"].values(), *figures["byDay"].values()]:
            for where, value in _numbers(usage):
                assert type(value) in (int, float) and math.isfinite(value), (where, value)


def test_hostile_usage_numbers_are_skipped_and_counted_for_a_session_and_its_project(
    calls: Calls, sessions_dir: Path
) -> None:
    directory = sessions_dir / "--w--"
    directory.mkdir()
    lines = [json.dumps(HEADER)] + [_assistant(n, usage) for n, usage in enumerate(HOSTILE_USAGES, start=1)]
    path = directory / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (directory / "other.jsonl").write_text(path.read_text().replace("hostile-usage", "another"))
    sid = calls.result("session/open", {"path": str(path)})["sessionId"]

    result = calls.result("session/stats", {"sessionId": sid})
    _all_finite_numbers(result)
    usage = result["tree"]["usage"]
    assert usage["assistantMessages"] == 6 and usage["skipped"] == 10 and usage["usages"] == 5
    assert usage["tokens"]["input"] == 1.7e308 + 7 + 2**64 and usage["tokens"]["output"] == 7
    assert usage["cost"]["output"] == 0.5 and usage["cost"]["total"] == 1.7e308
    assert result["tree"]["toolCalls"] == {"read": 6}
    assert result["path"]["usage"] == usage

    project = calls.result("session/stats", {"cwd": "/w"})
    _all_finite_numbers(project)
    assert project["sessions"] == 2 and project["tree"]["usage"]["assistantMessages"] == 12
    # the second file's 1.7e308s overflow the project's sums: skipped too, and counted
    assert project["tree"]["usage"]["skipped"] == 2 * 10 + 2 and project["tree"]["usage"]["tokens"]["output"] == 14
