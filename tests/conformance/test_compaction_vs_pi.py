"""Compaction and branch summaries, differentially against the pinned pi's own functions.

Seeded sessions (`compaction_sessions.py`) are written once; `pi_compaction.mjs` evaluates
pi's estimateTokens, estimateContextTokens, estimateProjectedContextTokens, shouldCompact,
findCutPoint, prepareCompaction, compact, collectEntriesForBranchSummary,
prepareBranchEntries and generateBranchSummary on every leaf of them, with a stand-in model
that records each request, and writes the results with pi's own appendCompaction and
branchWithSummary into an in-memory twin of the session. The daemon's service must give
every field equal: token figures, cut points, preparations, the requests it hands the
client (texts, messages, reasoning level, no output cap), and the entries it stores from
the same answers (fields, values, key order).

    SESSIONTREE_COMPACTION_SESSIONS=60 pytest tests/conformance/test_compaction_vs_pi.py
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from compaction_sessions import SessionGrower
from pi_harness import Tally, js_json

from sessiontree import protocol as p
from sessiontree import summaries
from sessiontree.entries import iso_to_ms
from sessiontree.jsstring import js_len
from sessiontree.service import ServiceConfig, SessionService
from sessiontree.tree import build_context, walk_path
from sessiontree.tree.compaction import find_cut_point
from sessiontree.tree.tokens import estimate_tokens

HERE = Path(__file__).resolve().parent
HELPER = HERE / "pi_compaction.mjs"
SESSIONS = int(os.environ.get("SESSIONTREE_COMPACTION_SESSIONS", "10"))
SETTINGS = [
    {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 300},
    {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 2500},
    {"enabled": False, "reserveTokens": 16384, "keepRecentTokens": 20000},
]
WINDOWS = [4000, 30000, 200000]
CWD = "/home/user/project"


def answer_for(prompt: str) -> str:
    """The stand-in model's answer (pi_compaction.mjs's `answerFor`)."""
    digest = hashlib.sha256(prompt.encode("utf-16-le", "surrogatepass")).hexdigest()
    return f"summary of {js_len(prompt)} units, sha256 {digest}"


def usage_for(prompt: str) -> dict[str, Any]:
    """The stand-in model's usage (pi_compaction.mjs's `usageFor`)."""
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {"input": js_len(prompt), "output": 11, "cacheRead": 0, "cacheWrite": 0, "totalTokens": js_len(prompt) + 11, "cost": cost}


def combine_usage(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """pi's combineUsage for the stand-in's usages: what a client adds up for a split turn."""
    combined = {k: first[k] + second[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")}
    cost = {k: first["cost"][k] + second["cost"][k] for k in ("input", "output", "cacheRead", "cacheWrite", "total")}
    return {**combined, "cost": {**cost, "totalFromProvider": False}}


def call_of(prompt: p.SummaryPrompt) -> dict[str, Any]:
    """One request as the stand-in recorded it: pi passes the thinking level as `reasoning` to a
    reasoning model unless it is "off", sets no output cap and no `systemPrompt` field."""
    level = prompt.thinking_level
    system, user = prompt.messages
    if user["content"] == [{"type": "text", "text": prompt.prompt}]:  # recorded once, as the prompt
        user = {**user, "content": [{"type": "text", "text": "<prompt>"}]}
    return {
        "systemPrompt": prompt.system_prompt,
        "prompt": prompt.prompt,
        "messages": [system, user],
        "reasoning": level if level and level != "off" else None,
        "maxTokens": None,
        "hasSystemPromptField": False,
    }


def written(entry: dict[str, Any]) -> dict[str, Any]:
    """pi_compaction.mjs's `writtenOf`: the key order, and the fields less id, parent and time."""
    rest = {k: v for k, v in entry.items() if k not in ("id", "parentId", "timestamp")}
    if isinstance(rest.get("systemMessage"), dict):
        rest["systemMessage"] = {**rest["systemMessage"]}
        rest["systemMessage"]["timestamp"] -= iso_to_ms(entry["timestamp"])
    return {"keys": list(entry), **rest}


def plain(value: Any) -> Any:
    """JSON as both sides see it: attrs objects unstructured, NaN as null (lone surrogates kept)."""
    return _nan_to_none(p.to_wire(value))


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def _settings(raw: dict[str, Any]) -> p.CompactionSettings:
    return p.CompactionSettings(raw["enabled"], raw["reserveTokens"], raw["keepRecentTokens"])


@dataclass
class Case:
    file: Path
    entries: list[dict[str, Any]]
    custom_instructions: str | None
    branches: list[dict[str, Any]]


def _branches(rng: random.Random, ids: list[str]) -> list[dict[str, Any]]:
    pairs = []
    for _ in range(12):
        pair: dict[str, Any] = {"from": rng.choice(ids), "to": rng.choice(ids)}
        pair["contextWindow"] = rng.choice((None, 2500, 6000, 60000))
        pair["reserveTokens"] = rng.choice((None, 1000, 16384))
        if rng.random() < 0.3:
            pair["customInstructions"] = "Keep the file names."
            pair["replaceInstructions"] = rng.random() < 0.5
        pairs.append(pair)
    return pairs


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    root = tmp_path_factory.mktemp("compaction") / "sessions"
    directory = root / "--home-user-project--"
    directory.mkdir(parents=True)
    made = []
    for number in range(SESSIONS):
        rng = random.Random(1000 + number)
        entries = SessionGrower(1000 + number).grow(rng.randint(8, 30))
        header = {"type": "session", "version": 3, "id": f"compaction-{number}", "timestamp": "2025-01-01T00:00:00.000Z"}
        path = directory / f"2025-01-01T00-00-00-000Z_compaction-{number}.jsonl"
        path.write_bytes(b"".join(js_json(line) + b"\n" for line in [header | {"cwd": CWD}, *entries]))
        custom = "Focus on the tests." if number % 3 == 0 else None
        made.append(Case(path, entries, custom, _branches(rng, [e["id"] for e in entries])))
    return made


@pytest.fixture(scope="module")
def pi_results(cases: list[Case], tmp_path_factory: pytest.TempPathFactory, node: str) -> list[dict[str, Any]]:
    request = [
        {
            "file": str(case.file),
            "leaves": [e["id"] for e in case.entries],
            "settings": SETTINGS,
            "windows": WINDOWS,
            "customInstructions": case.custom_instructions,
            "branches": case.branches,
        }
        for case in cases
    ]
    script = tmp_path_factory.mktemp("pi-compaction") / "cases.json"
    script.write_bytes(js_json(request))
    proc = subprocess.run([node, str(HELPER), str(script)], capture_output=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def service(cases: list[Case]) -> SessionService:
    return SessionService(ServiceConfig(sessions_dir=cases[0].file.parent.parent))


# --------------------------------------------------------------------------- per leaf


def _leaf_problems(service: SessionService, sid: str, case: Case, theirs: dict[str, Any]) -> list[str]:
    opened = service._get(sid)
    session, leaf = opened.session, theirs["leaf"]
    problems: list[str] = []

    def check(what: str, ours: Any, pis: Any) -> None:
        if plain(ours) != pis:
            problems.append(f"leaf {leaf}: {what}: ours {str(plain(ours))[:400]} pi {str(pis)[:400]}")

    built = build_context(session.index, leaf, session.entry)
    messages = built.messages
    check("thinkingLevel", built.thinking_level, theirs["thinkingLevel"])
    check("estimateTokens", [estimate_tokens(m) for m in messages], theirs["estimates"])
    context = service.context(p.ContextParams(session_id=sid, leaf_id=leaf, tokens=True))
    check("estimateContextTokens", context.tokens, theirs["contextTokens"])
    check("estimateProjectedContextTokens", summaries.projected_tokens(opened, built), theirs["projectedTokens"])
    decisions = [summaries.advice(opened, built, w, _settings(s)).should_compact for s in SETTINGS for w in WINDOWS]
    check("shouldCompact", decisions, theirs["shouldCompact"])
    path = [session.entry(node) for node in walk_path(session.index, leaf)]
    for raw, cut, prepared in zip(SETTINGS, theirs["cuts"], theirs["preparations"], strict=True):
        ours_cut = find_cut_point(path, 0, len(path), raw["keepRecentTokens"])
        check("findCutPoint", [ours_cut.first_kept_index, ours_cut.turn_start_index, ours_cut.is_split_turn],
              [cut["firstKeptEntryIndex"], cut["turnStartIndex"], cut["isSplitTurn"]])
        problems += _preparation_problems(service, sid, case, leaf, raw, prepared, check)
    return problems


def _preparation_problems(
    service: SessionService, sid: str, case: Case, leaf: str, raw: dict[str, Any], theirs: dict[str, Any], check: Any
) -> list[str]:
    settings = _settings(raw)
    params = p.PrepareCompactionParams(sid, leaf, settings, case.custom_instructions)
    ours = service.prepare_compaction(params)
    pis = theirs["preparation"]
    if ours is None or pis is None:
        check("prepareCompaction", ours, pis)
        return []
    mine = plain(ours)
    fields = ["firstKeptEntryId", "messagesToSummarize", "turnPrefixMessages", "isSplitTurn", "tokensBefore", "fileOps", "settings"]
    check("prepareCompaction", {k: mine.get(k) for k in [*fields, "previousSummary"]}, {k: pis.get(k) for k in [*fields, "previousSummary"]})
    if "error" in theirs:
        return [f"leaf {leaf}: pi's compact failed: {theirs['error']}"]
    prompts = [x for x in (ours.history_prompt, ours.turn_prefix_prompt) if x is not None]
    check("prompts", [call_of(x) for x in prompts], theirs["value"]["calls"])
    service.branch(p.BranchParams(sid, leaf))
    history = answer_for(ours.history_prompt.prompt) if ours.history_prompt else None
    prefix = answer_for(ours.turn_prefix_prompt.prompt) if ours.turn_prefix_prompt else None
    usages = [usage_for(x.prompt) for x in prompts]
    usage = combine_usage(*usages) if len(usages) == 2 else usages[0]
    committed = service.commit_compaction(p.CommitCompactionParams(sid, leaf, history, prefix, settings, usage=usage))
    entry = committed.entry
    stored = {k: entry.get(k) for k in ("summary", "firstKeptEntryId", "tokensBefore", "details", "usage")}
    check("compact", stored, theirs["value"]["result"])
    check("appendCompaction", written(entry), theirs["written"])
    return []


# --------------------------------------------------------------------------- per branch move


def _branch_problems(service: SessionService, sid: str, theirs: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    where = f"branch {theirs['from']} -> {theirs['to']}"

    def check(what: str, ours: Any, pis: Any) -> None:
        if plain(ours) != pis:
            problems.append(f"{where}: {what}: ours {str(plain(ours))[:400]} pi {str(pis)[:400]}")

    shared = {"context_window": theirs.get("contextWindow"), "reserve_tokens": theirs.get("reserveTokens")}
    prepared = service.prepare_branch_summary(
        p.PrepareBranchSummaryParams(
            sid, theirs["to"], theirs["from"], **shared,
            custom_instructions=theirs.get("customInstructions"), replace_instructions=theirs.get("replaceInstructions"),
        )
    )
    check("collectEntriesForBranchSummary", [prepared.entry_ids, prepared.common_ancestor_id], [theirs["entryIds"], theirs["commonAncestorId"]])
    check("prepareBranchEntries", [prepared.messages, prepared.file_ops, prepared.total_tokens],
          [theirs["messages"], theirs["fileOps"], theirs["totalTokens"]])
    check("prompt", [call_of(x) for x in [prepared.prompt] if x], theirs["calls"])
    service.branch(p.BranchParams(sid, theirs["from"]))
    answer = answer_for(prepared.prompt.prompt) if prepared.prompt else None
    usage = usage_for(prepared.prompt.prompt) if prepared.prompt else None
    committed = service.commit_branch_summary(
        p.CommitBranchSummaryParams(sid, theirs["to"], theirs["from"], answer, **shared, usage=usage)
    )
    generated = theirs["generated"]["value"]
    if generated is None:
        check("no summary", committed.entry, None)
    else:
        entry = committed.entry or {}
        details = entry.get("details") or {}
        ours = {"summary": entry.get("summary"), "readFiles": details.get("readFiles"), "modifiedFiles": details.get("modifiedFiles")}
        pis = {"summary": generated["summary"], "readFiles": generated.get("readFiles", []), "modifiedFiles": generated.get("modifiedFiles", [])}
        check("generateBranchSummary", ours, pis)
        check("branchWithSummary", written(entry), theirs["written"])
    return problems


def test_compaction_matches_pi(cases: list[Case], pi_results: list[dict[str, Any]], service: SessionService, tally: Tally) -> None:
    problems: list[str] = []
    for case, theirs in zip(cases, pi_results, strict=True):
        sid = service.open(p.OpenParams(str(case.file))).session_id
        found = [x for leaf in theirs["leaves"] for x in _leaf_problems(service, sid, case, leaf)]
        tally.add("compaction (leaves x 3 settings)", len(theirs["leaves"]), not found)
        problems += found
    assert problems == [], "\n".join(problems[:20])


def test_branch_summaries_match_pi(cases: list[Case], pi_results: list[dict[str, Any]], service: SessionService, tally: Tally) -> None:
    problems: list[str] = []
    for case, theirs in zip(cases, pi_results, strict=True):
        sid = service.open(p.OpenParams(str(case.file))).session_id
        found = [x for branch in theirs["branches"] for x in _branch_problems(service, sid, branch)]
        tally.add("branch summaries (moves)", len(theirs["branches"]), not found)
        problems += found
    assert problems == [], "\n".join(problems[:20])


def test_generated_sessions_cover_the_hard_cases(pi_results: list[dict[str, Any]]) -> None:
    """Split turns, repeated compactions and summaries from an earlier compaction all occur."""
    preparations = [x["preparation"] for r in pi_results for leaf in r["leaves"] for x in leaf["preparations"]]
    present = [x for x in preparations if x]
    assert sum(x["isSplitTurn"] for x in present) >= 20
    assert sum("previousSummary" in x for x in present) >= 20
    assert sum(bool(x["fileOps"]["edited"]) for x in present) >= 20
    assert sum(x is None for x in preparations) >= 5  # paths ending in a compaction
    budgets_hit = [b for r in pi_results for b in r["branches"] if len(b["messages"]) < len(b["entryIds"])]
    assert budgets_hit


def test_generated_sessions_cover_pi_1_x_entries(pi_results: list[dict[str, Any]]) -> None:
    """System checkpoints, usage estimates set aside by an edit or compaction, nothing to summarise
    on a path that does not end in a compaction, and usage on written branch summaries all occur."""
    leaves = [leaf for r in pi_results for leaf in r["leaves"]]
    written = [x["written"] for leaf in leaves for x in leaf["preparations"] if x.get("written")]
    assert sum("systemMessage" in x for x in written) >= 20
    assert sum("systemMessage" not in x for x in written) >= 20
    assert sum(leaf["projectedTokens"] != leaf["contextTokens"] for leaf in leaves) >= 20
    nothing = [x for leaf in leaves for x in leaf["preparations"] if x["preparation"] is None]
    assert len(nothing) >= 20
    branches = [b["written"] for r in pi_results for b in r["branches"] if b.get("written")]
    assert sum("usage" in x for x in branches) >= 5
