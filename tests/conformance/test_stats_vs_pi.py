"""session/stats against pi 1.6.0's own usage accounting (dist/core/usage-totals.js): on a session
with every kind of usage pi 1.6.0 writes, the daemon's totals and per-model figures are pi's.

Runs when tests/conformance/node_modules holds @earendil-works/pi-coding-agent (1.6.0 or later)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pi_harness import Daemon

from support import pi16_entries as pi16
from support.messages import line

HERE = Path(__file__).resolve().parent
USAGE_TOTALS = HERE / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "core" / "usage-totals.js"


def _pi_figures() -> dict[str, object]:
    if shutil.which("node") is None:
        pytest.fail("node is required for the pi conformance suite (Node 20+)")
    if not USAGE_TOTALS.exists():
        pytest.skip(f"pi 1.6.0 is not installed under {HERE / 'node_modules'}")
    ran = subprocess.run(["node", str(HERE / "pi_usage_totals.mjs"), str(USAGE_TOTALS)],
                         input=json.dumps(pi16.session()), capture_output=True, text=True, timeout=60, check=True)
    figures: dict[str, object] = json.loads(ran.stdout)
    return figures


def test_stats_count_usage_as_pi_does(daemon: Daemon, sessions_root: Path) -> None:
    pi = _pi_figures()
    path = sessions_root / "--w--" / "stats-vs-pi16.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(line(pi16.HEADER) + b"".join(line(e) for e in pi16.session()))
    sid = daemon.request("session/open", {"path": str(path)})["sessionId"]
    try:
        tree = daemon.request("session/stats", {"sessionId": sid})["tree"]
    finally:
        daemon.request("session/close", {"sessionId": sid})
    assert tree["usage"]["tokens"]["total"] == pi["tokens"]
    assert tree["usage"]["cost"]["total"] == pytest.approx(pi["cost"])
    by_model = {key: (u["tokens"]["total"], u["cost"]["total"]) for key, u in tree["byModel"].items()
                if u["tokens"]["total"] or u["cost"]["total"]}  # pi leaves out keys with neither
    assert isinstance(pi["breakdown"], list)
    assert set(by_model) == {row["key"] for row in pi["breakdown"]}
    for row in pi["breakdown"]:
        assert by_model[row["key"]][0] == row["tokens"] and by_model[row["key"]][1] == pytest.approx(row["cost"])
