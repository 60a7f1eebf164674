"""The daemon against pi 1.6.0's own SessionManager.

Forward: pi writes session files (seeded ids and clock), the daemon opens them;
every context (each entry as leaf, the default leaf, leaf null), the tree, the
entries and the name must equal what pi computes from the same file.

Reverse: the daemon performs the same operations; pi opens the daemon's files
and must compute what the daemon reports. Then pi replays the operations with the
daemon's ids and timestamps scripted in: its files must be byte-identical to the
daemon's and its answers equal.

Files pi 0.x wrote (its v1/v2 formats, the quirk cases, a corpus pi 0.73.1 itself wrote) are read by
pi 1.6.0 as by the daemon; what pi refuses or writes on open is checked against protocol.md's
"Deliberate differences from pi".
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sessiontree.tree.system_state import current_system_message


def _load_scenarios() -> Any:
    """scenarios.py by path: a bare `import scenarios` could pick up another test dir's module."""
    spec = importlib.util.spec_from_file_location("sessiontree_conformance_scenarios", Path(__file__).with_name("scenarios.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


_scenarios = _load_scenarios()
ALL_OPS, all_scenarios, ops_used = _scenarios.ALL_OPS, _scenarios.all_scenarios, _scenarios.ops_used

CASES = Path(__file__).resolve().parent.parent / "fixtures" / "pi-quirks"  # pi-quirks/cases, as committed
SCENARIO_COUNT = int(os.environ.get("SESSIONTREE_CONFORMANCE_SCENARIOS", "100"))
SCENARIOS = all_scenarios(SCENARIO_COUNT)
BY_NAME = {s["name"]: s for s in SCENARIOS}
ENTRY_OPS = {
    "appendMessage", "appendThinkingLevelChange", "appendModelChange", "appendCompaction", "appendCustomEntry",
    "appendCustomMessageEntry", "appendSessionInfo", "appendLabelChange", "branchWithSummary", "appendUsage",
    "appendContextEdit",
}  # fmt: skip
if TYPE_CHECKING:  # conftest is not importable by name when several test dirs have one
    from pi_harness import Daemon, PiDriver, Tally

TREE_KEYS = ("id", "parentId", "type", "timestamp", "depth", "childCount", "label", "labelTimestamp")


# --------------------------------------------------------------------------- comparing


def norm(value: Any) -> Any:
    """Absent and null are the same (pi drops undefined, the daemon may send null)."""
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [norm(v) for v in value]
    return value


def first_diff(expected: Any, got: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, as `path: expected X, got Y`."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in list(expected) + [k for k in got if k not in expected]:
            if key not in got:
                return f"{path}.{key}: missing (expected {_short(expected[key])})"
            if key not in expected:
                return f"{path}.{key}: unexpected {_short(got[key])}"
            diff = first_diff(expected[key], got[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(expected, list) and isinstance(got, list):
        for i, (e, g) in enumerate(zip(expected, got, strict=False)):  # the common items; the lengths below
            diff = first_diff(e, g, f"{path}[{i}]")
            if diff:
                return diff
        if len(expected) != len(got):
            return f"{path}: length {len(got)}, expected {len(expected)}"
        return None
    if _kind(expected) is float and _kind(got) is float:
        equal = _same_double(expected, got)  # JSON numbers are doubles on pi's side
    else:
        equal = expected == got and _kind(expected) is _kind(got)
    if not equal:
        return f"{path or '.'}: expected {_short(expected)}, got {_short(got)}"
    return None


def _kind(value: Any) -> type:
    """JSON's kinds: 10**20 and 1e20 are one number (JavaScript has no int/float split)."""
    return float if isinstance(value, int | float) and not isinstance(value, bool) else type(value)


def _same_double(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except OverflowError:
        return a == b


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 160 else text[:157] + "..."


def context_view(ctx: dict[str, Any] | None) -> Any:
    if ctx is None or "error" in ctx:
        return ctx
    return norm({"messages": ctx.get("messages"), "thinkingLevel": ctx.get("thinkingLevel"), "model": ctx.get("model")})


def tree_view(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [norm({k: n.get(k) for k in TREE_KEYS}) for n in nodes]


@dataclass
class Report:
    """Mismatches of one test, each saying where, what was expected and what came back."""

    where: str
    lines: list[str] = field(default_factory=list)

    def check(self, what: str, expected: Any, got: Any) -> bool:
        diff = first_diff(expected, got)
        if diff:
            self.lines.append(f"{self.where} {what}{diff}")
        return diff is None

    def fail(self, what: str) -> None:
        self.lines.append(f"{self.where} {what}")

    def assert_clean(self) -> None:
        shown = self.lines[:40]
        more = f"\n... and {len(self.lines) - 40} more" if len(self.lines) > 40 else ""
        assert not self.lines, f"{len(self.lines)} mismatches with pi:\n" + "\n".join(shown) + more


# --------------------------------------------------------------------------- the daemon's view of a file


def all_entries(daemon: Daemon, sid: str) -> list[dict[str, Any]]:
    return daemon.request("session/entries", {"sessionId": sid, "since": None})["entries"]


def daemon_view(daemon: Daemon, sid: str, entry_ids: list[str], llm: bool = True) -> dict[str, Any]:
    """What pi's driver calls `inspect`, asked of the daemon (the session as it is now)."""
    info = daemon.request("session/info", {"sessionId": sid})
    default = _ask(daemon, "session/context", {"sessionId": sid})
    context = lambda **leaf: _ask(daemon, "session/context", {"sessionId": sid, **leaf})  # noqa: E731
    view = {
        "leaf": info.get("leafId"),
        "name": info.get("name"),
        "entries": all_entries(daemon, sid),
        "contexts": {
            "byLeaf": {i: context(leafId=i) for i in entry_ids},
            "default": {"leafId": default.get("leafId"), "context": default},
            "null": context(leafId=None),
        },
        "tree": daemon.request("session/tree", {"sessionId": sid})["nodes"],
    }
    if llm:
        messages = lambda **leaf: context(format="llm", **leaf).get("messages")  # noqa: E731
        view["llm"] = {"byLeaf": {i: messages(leafId=i) for i in entry_ids}, "default": messages()}
    return view


def _ask(daemon: Daemon, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A result, or the error as a value: one refused leaf must not hide the others."""
    try:
        return daemon.request(method, params)
    except daemon.Error as exc:
        return {"error": str(exc)}


def compare_views(report: Report, pi_view: dict[str, Any], ours: dict[str, Any], ids: dict[str, str] | None = None) -> int:
    """Compare a pi `inspect` with a daemon view; `ids` maps pi ids to ours. Returns leaves compared."""
    ids = ids or {}
    m = lambda i: ids.get(i, i)  # noqa: E731
    report.check("leaf ", m(pi_view["leaf"]) if pi_view["leaf"] else None, ours["leaf"])
    report.check("name ", pi_view["name"], ours["name"])
    report.check("entries ", norm(_map_ids(pi_view["entries"], ids)), norm(ours["entries"]))
    pi_ctx = pi_view["contexts"]
    leaves = 0
    for pi_id, ctx in pi_ctx["byLeaf"].items():
        got = ours["contexts"]["byLeaf"].get(m(pi_id))
        report.check(f"context(leaf={pi_id}) ", context_view(_map_ids(ctx, ids)), context_view(got))
        leaves += 1
    default = ours["contexts"]["default"]
    report.check("context(default) leafId ", m(pi_ctx["default"]["leafId"]), default["leafId"])
    report.check("context(default) ", context_view(_map_ids(pi_ctx["default"]["context"], ids)), context_view(default["context"]))
    report.check("context(leaf=null) ", context_view(pi_ctx["null"]), context_view(ours["contexts"]["null"]))
    report.check("tree ", tree_view(_map_ids(pi_view["tree"], ids)), tree_view(ours["tree"]))
    if "llm" in pi_view:  # pi's convertToLlm against format "llm"
        for pi_id, msgs in pi_view["llm"]["byLeaf"].items():
            report.check(f"llm context(leaf={pi_id}) ", norm(msgs), norm(ours["llm"]["byLeaf"].get(m(pi_id))))
        report.check("llm context(default) ", norm(pi_view["llm"]["default"]), norm(ours["llm"]["default"]))
    return leaves + 2


def _map_ids(value: Any, ids: dict[str, str]) -> Any:
    """Rename entry ids (for migrated files, whose ids are random on both sides)."""
    if not ids:
        return value
    if isinstance(value, dict):
        return {k: (ids.get(v, v) if k in ("id", "parentId", "targetId", "firstKeptEntryId", "fromId") and isinstance(v, str) else _map_ids(v, ids)) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_ids(v, ids) for v in value]
    return value


def open_and_compare(daemon: Daemon, path: str, pi_view: dict[str, Any], report: Report) -> int:
    opened = daemon.request("session/open", {"path": path})
    sid = opened["sessionId"]
    try:
        report.check("open.leafId ", pi_view["leaf"], opened.get("leafId"))
        report.check("open.name ", pi_view["name"], opened.get("name"))
        report.check("open.entryCount ", len(pi_view["entries"]), opened.get("entryCount"))
        report.check("open.header ", norm(pi_view["header"]), norm(opened.get("header")))
        before = len(report.lines)
        ours = daemon_view(daemon, sid, [e["id"] for e in pi_view["entries"]])
        leaves = compare_views(report, pi_view, ours)
        if len(report.lines) > before and opened.get("warnings"):
            report.fail(f"(the daemon's warnings on open: {_short(opened['warnings'])[:600]})")
        return leaves
    finally:
        daemon.request("session/close", {"sessionId": sid})


# --------------------------------------------------------------------------- forward: pi writes, the daemon reads


def with_dirs(scenario: dict[str, Any], session_dir: Path) -> dict[str, Any]:
    ops = [dict(op, sessionDir=str(session_dir)) if op["op"] in ("create", "forkFrom") else op for op in scenario["ops"]]
    return dict(scenario, ops=ops)


@pytest.fixture(scope="module")
def forward(pi: PiDriver, sessions_root: Path) -> dict[str, dict[str, Any]]:
    batch = [with_dirs(s, sessions_root / "pi" / s["name"]) for s in SCENARIOS]
    return {r["name"]: r for r in pi.run(batch)}


def test_scenarios_cover_every_operation() -> None:
    assert ops_used(SCENARIOS) == ALL_OPS - _scenarios.TEST_OPS


def test_driver_is_repeatable(pi: PiDriver, tmp_path: Path) -> None:
    """Seeded ids, session ids and clock: two runs in different places give the same answers."""
    runs = [pi.run([with_dirs(BY_NAME["tour"], tmp_path / str(i))]) for i in range(2)]
    texts = [json.dumps(run).replace(str(tmp_path / str(i)), "DIR") for i, run in enumerate(runs)]
    assert texts[0] == texts[1]


def test_pi_runs_every_scenario_without_error(forward: dict[str, dict[str, Any]]) -> None:
    errors = [(name, r["op"], r["error"]) for name, run in forward.items() for r in run["results"] if "error" in r]
    assert not errors


@pytest.mark.parametrize("name", list(BY_NAME))
def test_daemon_reads_pi_files(name: str, forward: dict[str, dict[str, Any]], daemon: Daemon, tally: Tally) -> None:
    report = Report(name)
    inspects = [r["value"] for r in forward[name]["results"] if r["op"] == "inspect"]
    assert inspects and all(v["raw"] for v in inspects), "pi wrote every file of the scenario"
    for k, view in enumerate(inspects):
        before = len(report.lines)
        report.where = f"{name} pi-file#{k}"
        leaves = open_and_compare(daemon, view["file"], view, report)
        tally.add("forward (pi writes, daemon reads)", leaves, len(report.lines) == before)
        if Path(view["file"]).read_text(encoding="utf-8") != view["raw"]:
            report.fail("the daemon changed a v3 file it only opened")
    report.assert_clean()


# --------------------------------------------------------------------------- reverse: the daemon writes, pi reads and replays


@dataclass
class DaemonRun:
    """Runs a scenario's ops through the daemon, recording what pi needs to replay them."""

    daemon: Daemon
    created: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    sids: dict[int, str] = field(default_factory=dict)  # file index -> open session
    current: int = -1
    results: list[dict[str, Any]] = field(default_factory=list)
    id_script: list[str] = field(default_factory=list)
    session_id_script: list[str] = field(default_factory=list)
    clock_script: list[str] = field(default_factory=list)
    id_marks: list[int] = field(default_factory=list)  # len(id_script) before each op

    @property
    def sid(self) -> str:
        return self.sids[self.current]

    def resolve(self, value: Any) -> Any:
        """Refs to what this run created; an op after a refused append may point past the end."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, dict):
            if "$ref" in value:
                return self.created[value["$ref"]]
            if "$file" in value:
                return self.files[value["$file"]]
            return {k: self.resolve(v) for k, v in value.items()}
        return value

    def run(self, ops: list[dict[str, Any]]) -> None:
        for raw in ops:
            self.id_marks.append(len(self.id_script))
            try:
                op = self.resolve(raw)
                self.results.append({"op": op["op"], "value": self.apply(op)})
            except (self.daemon.Error, IndexError, ValueError) as exc:  # IndexError: a ref to an entry the daemon refused
                self.results.append({"op": raw["op"], "error": f"{type(exc).__name__}: {exc}"})

    # ---- ops

    def apply(self, op: dict[str, Any]) -> Any:
        kind = op["op"]
        if kind in ENTRY_OPS:
            return self._append(op)
        handler = getattr(self, "op_" + kind)
        return handler(op)

    def _append(self, op: dict[str, Any]) -> str:
        kind = op["op"]
        base = {"sessionId": self.sid}
        if kind == "appendSessionInfo":
            res = self.daemon.request("session/setName", dict(base, name=op["name"]))
        elif kind == "appendLabelChange":
            params = dict(base, targetId=op["targetId"])
            if "label" in op:
                params["label"] = op["label"]
            res = self.daemon.request("session/label", params)
        elif kind == "appendContextEdit":
            res = self.daemon.request("session/editContext", dict(base, targetId=op["targetId"], replacement=op["replacement"]))
        elif kind == "branchWithSummary":
            params = dict(base, entryId=op["id"], summary=op["summary"])
            params.update({k: op[k] for k in ("details", "fromHook", "usage") if k in op})
            branched = self.daemon.request("session/branch", params)
            entry = self.daemon.request("session/entries", dict(base, ids=[branched["summaryEntryId"]]))["entries"][0]
            res = {"id": entry["id"], "timestamp": entry["timestamp"]}
        elif kind == "appendCompaction":
            # pi's appendCompaction stores the prompt and tools in force (the replay of the path's
            # system messages) as `systemMessage`; a client of session/append sends it.
            entry = entry_of(op)
            messages = self.daemon.request("session/context", base)["messages"] if self.leaf_now() else []
            if system := current_system_message(messages):
                entry["systemMessage"] = {k: v for k, v in system.items() if k != "timestamp"}  # the compaction's time
            res = self.daemon.request("session/append", dict(base, entry=entry))
        else:
            res = self.daemon.request("session/append", dict(base, entry=entry_of(op)))
        self.created.append(res["id"])
        self.id_script.append(res["id"])
        self.clock_script.append(res["timestamp"])
        return res["id"]

    def _header_of(self, sid: str, path: str) -> dict[str, Any]:
        """The new session's header, as the file holds it."""
        header: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8").split("\n", 1)[0])
        return header

    def _new_file(self, sid: str, path: str) -> dict[str, Any]:
        header = self._header_of(sid, path)
        self.session_id_script.append(header["id"])
        self.clock_script.append(header["timestamp"])
        self.files.append(path)
        self.current = len(self.files) - 1
        self.sids[self.current] = sid
        return {"file": path, "sessionId": header["id"], "header": header}

    def op_create(self, op: dict[str, Any]) -> Any:
        res = self.daemon.request("session/create", {"cwd": op["cwd"]})
        return self._new_file(res["sessionId"], res["path"])

    def op_createBranchedSession(self, op: dict[str, Any]) -> Any:
        source = Path(self.files[self.current]).read_text(encoding="utf-8")
        known = {json.loads(line).get("id") for line in source.split("\n")[1:] if line.strip()}
        res = self.daemon.request("session/fork", {"sessionId": self.sid, "entryId": op["leafId"]})
        value = self._new_file(res["sessionId"], res["path"])
        lines = [line for line in Path(res["path"]).read_text(encoding="utf-8").split("\n")[1:] if line]
        # pi draws fresh ids only for the label entries it re-creates at the end.
        self.id_script.extend(e["id"] for e in map(json.loads, lines) if e["id"] not in known)
        value["leaf"] = self.op_leaf(op)
        return value

    def op_forkFrom(self, op: dict[str, Any]) -> Any:
        source = self.files.index(op["path"])
        res = self.daemon.request("session/fork", {"sessionId": self.sids[source], "cwd": op["cwd"]})
        return self._new_file(res["sessionId"], res["path"])

    def reopen(self, index: int) -> str:
        """pi's open: a fresh view of the file, leaf at its last entry."""
        if index in self.sids:
            self.daemon.request("session/close", {"sessionId": self.sids[index]})
        self.sids[index] = self.daemon.request("session/open", {"path": self.files[index]})["sessionId"]
        return self.sids[index]

    def op_open(self, op: dict[str, Any]) -> Any:
        index = self.files.index(op["path"])
        self.reopen(index)
        self.current = index
        return {"file": op["path"], "leaf": self.op_leaf(op)}

    def op_branch(self, op: dict[str, Any]) -> Any:
        return self.daemon.request("session/branch", {"sessionId": self.sid, "entryId": op["id"]})["leafId"]

    def op_resetLeaf(self, op: dict[str, Any]) -> Any:
        self.daemon.request("session/branch", {"sessionId": self.sid, "entryId": None})
        return None

    def op_setClock(self, op: dict[str, Any]) -> Any:
        return None  # the daemon's clock is its own; the replay scripts pi's

    def op_file(self, op: dict[str, Any]) -> Any:
        return self.files[self.current]

    def op_files(self, op: dict[str, Any]) -> Any:
        return list(self.files)

    def op_leaf(self, op: dict[str, Any]) -> Any:
        return self.leaf_now()

    def leaf_now(self) -> str | None:
        leaf: str | None = self.daemon.request("session/info", {"sessionId": self.sid}).get("leafId")
        return leaf

    def op_name(self, op: dict[str, Any]) -> Any:
        return self.daemon.request("session/info", {"sessionId": self.sid}).get("name")

    def _ids(self, sid: str) -> list[str]:
        return [e["id"] for e in all_entries(self.daemon, sid)]

    def op_contexts(self, op: dict[str, Any]) -> Any:
        return daemon_view(self.daemon, self.sid, self._ids(self.sid), llm=False)["contexts"]

    def op_tree(self, op: dict[str, Any]) -> Any:
        return self.daemon.request("session/tree", {"sessionId": self.sid})["nodes"]

    def op_entries(self, op: dict[str, Any]) -> Any:
        return all_entries(self.daemon, self.sid)

    def op_inspect(self, op: dict[str, Any]) -> Any:
        index = self.files.index(op["path"])
        sid = self.reopen(index)
        view = daemon_view(self.daemon, sid, self._ids(sid))
        view["file"] = op["path"]
        view["raw"] = Path(op["path"]).read_text(encoding="utf-8")
        return view


def entry_of(op: dict[str, Any]) -> dict[str, Any]:
    """The entry pi's append method would build, minus id/parentId/timestamp, in pi's key order."""
    kind = op["op"]
    pick = lambda *keys: {k: op[k] for k in keys if k in op}  # noqa: E731
    if kind == "appendMessage":
        return {"type": "message", "message": op["message"]}
    if kind == "appendThinkingLevelChange":
        return {"type": "thinking_level_change", "thinkingLevel": op["thinkingLevel"]}
    if kind == "appendModelChange":
        return {"type": "model_change", "provider": op["provider"], "modelId": op["modelId"]}
    if kind == "appendCompaction":
        return {"type": "compaction", **pick("summary", "firstKeptEntryId", "tokensBefore", "details", "usage", "fromHook")}
    if kind == "appendUsage":
        return {"type": "usage", **pick("kind", "provider", "model", "usage", "note")}
    if kind == "appendCustomEntry":
        return {"type": "custom", **pick("customType", "data")}
    if kind == "appendCustomMessageEntry":
        return {"type": "custom_message", **pick("customType", "content", "display", "details")}
    raise ValueError(kind)


@dataclass
class ReverseRun:
    run: DaemonRun
    read_back: list[dict[str, Any]]  # pi's inspect of each daemon file
    replay: dict[str, Any]  # pi's run of the same ops with the daemon's ids and times


@pytest.fixture(scope="module")
def reverse(pi: PiDriver, daemon: Daemon, sessions_root: Path) -> dict[str, ReverseRun]:
    runs: dict[str, DaemonRun] = {}
    for scenario in SCENARIOS:
        run = DaemonRun(daemon)
        run.run(scenario["ops"])
        runs[scenario["name"]] = run
    batch: list[dict[str, Any]] = []
    for name, run in runs.items():
        batch.append({"name": "read:" + name, "ops": [{"op": "inspect", "path": f} for f in run.files]})
        replay = with_dirs(BY_NAME[name], sessions_root / "replay" / name)
        replay.update(
            name="replay:" + name,
            idScript=run.id_script,
            sessionIdScript=run.session_id_script,
            clock=dict(replay["clock"], script=run.clock_script),
        )
        batch.append(replay)
    out = {r["name"]: r for r in pi.run(batch)}
    return {
        name: ReverseRun(run, [r["value"] for r in out["read:" + name]["results"]], out["replay:" + name])
        for name, run in runs.items()
    }


@pytest.mark.parametrize("name", list(BY_NAME))
def test_pi_reads_daemon_files(name: str, reverse: dict[str, ReverseRun], tally: Tally) -> None:
    rev = reverse[name]
    report = Report(name)
    errors = [r for r in rev.run.results if "error" in r]
    for r in errors:
        report.fail(f"daemon refused {r['op']}: {r['error']}")
    ours = [r["value"] for r in rev.run.results if r["op"] == "inspect" and "value" in r]
    # strict=False: a refused op (reported above) leaves a view out of `ours`
    for k, (pi_view, our_view) in enumerate(zip(rev.read_back, ours, strict=False)):
        report.where = f"{name} daemon-file#{k}"
        before = len(report.lines)
        if pi_view.get("raw") != our_view["raw"]:
            report.fail("pi rewrote the daemon's file on open (it only does that for old versions or no header)")
        leaves = compare_views(report, pi_view, our_view)
        tally.add("reverse (daemon writes, pi reads)", leaves, not errors and len(report.lines) == before)
    report.assert_clean()


def _paths_to_placeholders(raw: str, files: list[str]) -> str:
    for k, path in enumerate(files):
        raw = raw.replace(json.dumps(path, ensure_ascii=False), f'"$file{k}"')
    return raw


@pytest.mark.parametrize("name", list(BY_NAME))
def test_daemon_files_match_pi_replay(name: str, reverse: dict[str, ReverseRun], tally: Tally) -> None:
    """Same ops, same ids and times: pi's bytes and answers must be the daemon's. (pi 0.73.1 made
    the entries below the label entries a fork drops orphan roots; 1.6 re-parents them, as the
    daemon does, so every file is compared whole.)"""
    rev = reverse[name]
    report = Report(name)
    if any("error" in r for r in rev.run.results):
        pytest.skip("the daemon refused an op (reported by test_pi_reads_daemon_files)")
    replay = rev.replay
    pi_files = replay["files"]
    pi_raws = [Path(p).read_text(encoding="utf-8") if Path(p).exists() else "" for p in pi_files]
    for i, r in enumerate(replay["results"]):
        if "error" in r:
            report.fail(f"pi replay failed at op#{i} {r['op']}: {r['error']}")
    # strict=False: a replay pi failed (reported above) leaves files out of `pi_raws`
    for k, (pi_raw, our_path) in enumerate(zip(pi_raws, rev.run.files, strict=False)):
        report.where = f"{name} file#{k}"
        expected = _paths_to_placeholders(pi_raw, pi_files)
        got = _paths_to_placeholders(Path(our_path).read_text(encoding="utf-8"), rev.run.files)
        tally.byte_files += 1
        if expected == got:
            tally.byte_identical += 1
            continue
        report_line_diffs(report, expected.split("\n"), got.split("\n"))
    compare_probes(report, name, replay["results"], rev.run.results)
    report.assert_clean()


def _pairs(line: str) -> Any:
    try:
        return json.loads(line, object_pairs_hook=list)
    except json.JSONDecodeError:
        return None


def report_line_diffs(report: Report, expected: list[str], got: list[str]) -> None:
    """The first differing line of each kind: number spelling only (same values, same key
    order) or anything else; so one kind of difference does not hide the other."""
    if len(expected) != len(got):
        report.fail(f"{len(got)} lines, pi wrote {len(expected)}")
    seen: set[str] = set()
    for i, (e, g) in enumerate(zip(expected, got, strict=False)):  # the common lines; the counts above
        if e == g:
            continue
        kind = "number spelling" if _pairs(e) is not None and _pairs(e) == _pairs(g) else "content"
        if kind in seen:
            continue
        seen.add(kind)
        at = next((j for j, (a, b) in enumerate(zip(e, g, strict=False)) if a != b), min(len(e), len(g)))
        start = max(0, at - 80)
        report.fail(
            f"line {i + 1} differs from pi's ({kind}) at column {at + 1}:\n"
            f"    pi:     …{e[start : at + 80]}\n    daemon: …{g[start : at + 80]}"
        )


def compare_probes(report: Report, name: str, pi_results: list[dict[str, Any]], ours: list[dict[str, Any]]) -> None:
    """Probe answers along the way."""
    for i, (p, o) in enumerate(zip(pi_results, ours, strict=True)):
        op = p["op"]
        report.where = f"{name} op#{i} {op}"
        if "value" not in p or "value" not in o:
            continue
        if op in ENTRY_OPS or op in ("leaf", "branch", "name"):
            report.check("", p["value"], o["value"])
        elif op == "contexts":
            pv, ov = p["value"], o["value"]
            report.check("leaf ids ", sorted(pv["byLeaf"]), sorted(ov["byLeaf"]))
            for leaf, ctx in pv["byLeaf"].items():
                report.check(f"(leaf={leaf}) ", context_view(ctx), context_view(ov["byLeaf"].get(leaf)))
            report.check("(default) leafId ", pv["default"]["leafId"], ov["default"]["leafId"])
            report.check("(default) ", context_view(pv["default"]["context"]), context_view(ov["default"]["context"]))
        elif op == "tree":
            report.check("", tree_view(p["value"]), tree_view(o["value"]))
        elif op == "entries":
            report.check("", norm(p["value"]), norm(o["value"]))


LIST_KEYS = ("id", "cwd", "name", "parentSession", "created", "modified", "messageCount", "firstMessage")


def test_session_list_matches_pi(reverse: dict[str, ReverseRun], pi: PiDriver, daemon: Daemon) -> None:
    """session/list over the daemon's files against pi's SessionManager.list of the same directory."""
    report = Report("session/list")
    by_cwd: dict[str, Path] = {}
    for rev in reverse.values():
        for result in rev.run.results:
            if result["op"] in ("create", "forkFrom", "createBranchedSession") and "value" in result:
                by_cwd[result["value"]["header"]["cwd"]] = Path(result["value"]["file"]).parent
    assert by_cwd, "the reverse runs created files"
    ops = [{"op": "list", "cwd": cwd, "sessionDir": str(directory)} for cwd, directory in by_cwd.items()]
    pi_lists = [r["value"] for r in pi.run([{"name": "list", "ops": ops}])[0]["results"]]
    for (cwd, _), pi_list in zip(by_cwd.items(), pi_lists, strict=True):
        ours = {s["path"]: s for s in daemon.request("session/list", {"cwd": cwd})["sessions"]}
        assert pi_list, f"pi lists no session for {cwd}"
        report.check(f"cwd={cwd} paths ", sorted(s["path"] for s in pi_list), sorted(ours))
        for item in pi_list:
            report.where = f"session/list {Path(item['path']).name}"
            got = ours.get(item["path"], {})
            report.check("", norm({k: item[k] for k in LIST_KEYS}), norm({k: got.get(k) for k in LIST_KEYS}))
        report.check(f"cwd={cwd} order ", [s["path"] for s in pi_list], [s["path"] for s in daemon.request("session/list", {"cwd": cwd})["sessions"]])
    report.assert_clean()


def test_session_list_of_every_cwd_matches_pi(reverse: dict[str, ReverseRun], pi: PiDriver, daemon: Daemon, sessions_root: Path, tmp_path: Path) -> None:
    """session/list without a cwd against pi's SessionManager.listAll of the same root (pi's agent
    directory's `sessions`, a link to it): the same sessions in the same order (ties in `modified`:
    the file written last first, then by name). The daemon also lists a file that starts with a byte
    order mark, and the sessions of nested folders (sub-agents'), which pi leaves out (protocol.md's
    differences)."""
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "sessions").symlink_to(sessions_root, target_is_directory=True)
    ops = [{"op": "listAll"}]
    pi_list = pi.run([{"name": "listAll", "ops": ops}], env={"PI_CODING_AGENT_DIR": str(agent)})[0]["results"][0]["value"]
    ours = [
        s
        for s in daemon.request("session/list", {})["sessions"]
        if not Path(s["path"]).read_bytes().startswith(b"\xef\xbb\xbf") and Path(s["path"]).parent.parent == sessions_root
    ]
    assert len(pi_list) > 50
    view = lambda s, prefix: norm({"path": s["path"].removeprefix(prefix), **{k: s.get(k) for k in LIST_KEYS}})  # noqa: E731
    report = Report("session/list (every cwd)")
    report.check("", [view(s, str(agent / "sessions")) for s in pi_list], [view(s, str(sessions_root)) for s in ours])
    report.assert_clean()


# --------------------------------------------------------------------------- documented differences, asserted as documented


def test_documented_api_differences(pi: PiDriver, daemon: Daemon, tmp_path: Path) -> None:
    """protocol.md: pi accepts an unknown firstKeptEntryId and falls back to the last entry for an
    unknown leaf; the daemon answers -32011 to both."""
    user = {"role": "user", "content": "q", "timestamp": 1}
    ops = [
        {"op": "create", "cwd": "/p", "sessionDir": str(tmp_path)},
        {"op": "appendMessage", "message": user},
        {"op": "appendCompaction", "summary": "s", "firstKeptEntryId": "nope0000", "tokensBefore": 1},
    ]
    pi_results = pi.run([{"name": "api", "ops": ops}])[0]["results"]
    assert all("value" in r for r in pi_results), "pi accepts an unknown firstKeptEntryId"
    sid = daemon.request("session/create", {"cwd": "/p"})["sessionId"]
    daemon.request("session/append", {"sessionId": sid, "entry": {"type": "message", "message": user}})
    compaction = {"type": "compaction", "summary": "s", "firstKeptEntryId": "nope0000", "tokensBefore": 1}
    for method, params in [
        ("session/append", {"sessionId": sid, "entry": compaction}),
        ("session/context", {"sessionId": sid, "leafId": "nope0000"}),
    ]:
        with pytest.raises(daemon.Error) as refused:
            daemon.request(method, params)
        assert refused.value.code == -32011, method
    daemon.request("session/close", {"sessionId": sid})


# --------------------------------------------------------------------------- migration and the quirk cases pi reads sanely

MIGRATION_CASES = ["17-v1.jsonl", "18-v1-malformed.jsonl", "19-v2-hookMessage.jsonl"]
# Cases where protocol.md says "as pi" for what a reader sees (contexts, tree, entries).
READ_AS_PI_CASES = [
    "01-valid.jsonl", "02-malformed-middle.jsonl", "03-malformed-middle-chain.jsonl", "04-truncated-last.jsonl",
    "09-header-only.jsonl", "13-orphan.jsonl", "16-label-unknown-target.jsonl",
    "20-unknown-type.jsonl", "22-compaction-unknown-firstkept.jsonl", "23-two-headers.jsonl", "24-crlf.jsonl",
    "25-missing-parentId-key.jsonl", "27-no-assistant.jsonl", "28-label-on-path.jsonl", "29-long-header.jsonl",
]  # fmt: skip


# Files pi 1.6 does not open as sessions (it throws and leaves them alone): the daemon refuses the
# first two too (-32014); the BOM file it shows read-only (protocol.md, "Deliberate differences").
PI_REFUSES_CASES = ["05-no-header.jsonl", "06-header-not-first.jsonl", "07-bom.jsonl"]
# The parent cycles (12, 14, 15) are left out of every pi run: pi's walk never ends (1.6 dies of heap
# exhaustion, 0.73.1 hangs).


@pytest.fixture(scope="module")
def case_results(pi: PiDriver, sessions_root: Path) -> dict[str, dict[str, Any]]:
    """pi's inspect of a private copy of each case, one op each ({value} or {error}: a case pi
    refuses fails only itself), and the copy's bytes afterwards (pi rewrites v1/v2 files in place,
    ends a torn last line, writes a header into an empty file)."""
    batch, copies = [], {}
    for case in MIGRATION_CASES + READ_AS_PI_CASES + PI_REFUSES_CASES + ["08-empty.jsonl"]:
        copy = copies[case] = sessions_root / "cases-pi" / case
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CASES / case, copy)
        batch.append({"name": case, "ops": [{"op": "inspect", "path": str(copy)}]})
    results = {r["name"]: dict(r["results"][0]) for r in pi.run(batch)}
    for case, result in results.items():
        result["after"] = copies[case].read_bytes()
    return results


@pytest.fixture(scope="module")
def case_views(case_results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {case: r["value"] for case, r in case_results.items() if "value" in r}


def test_pi_reads_the_read_as_pi_cases(case_results: dict[str, dict[str, Any]]) -> None:
    refused = {case: r["error"] for case, r in case_results.items() if "error" in r and case in READ_AS_PI_CASES + MIGRATION_CASES}
    assert not refused


@pytest.mark.parametrize("case", READ_AS_PI_CASES)
def test_daemon_reads_quirk_cases_as_pi(case: str, case_views: dict[str, Any], daemon: Daemon, sessions_root: Path, tally: Tally) -> None:
    copy = sessions_root / "cases-daemon" / case
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CASES / case, copy)
    report = Report(case)
    leaves = open_and_compare(daemon, str(copy), case_views[case], report)
    tally.add("quirk cases read as pi", leaves, not report.lines)
    report.assert_clean()


@pytest.mark.parametrize("case", PI_REFUSES_CASES)
def test_files_pi_refuses(case: str, case_results: dict[str, dict[str, Any]], pi: PiDriver, daemon: Daemon, sessions_root: Path) -> None:
    """pi throws and leaves the file alone; so does the daemon, but for the BOM file, which it shows
    read-only: what pi reads once the mark is gone, appends refused (-32024), the file unchanged."""
    pi_result = case_results[case]
    assert "not a valid pi session" in pi_result.get("error", ""), pi_result
    assert pi_result["after"] == (CASES / case).read_bytes(), "pi changed a file it refused"
    copy = sessions_root / "cases-refused" / case
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CASES / case, copy)
    if case != "07-bom.jsonl":
        with pytest.raises(daemon.Error) as refused:
            daemon.request("session/open", {"path": str(copy)})
        assert refused.value.code == -32014
    else:
        unmarked = copy.with_name("07-unmarked.jsonl")
        unmarked.write_bytes(copy.read_bytes().removeprefix(b"\xef\xbb\xbf"))
        # pi's view of the same lines without the mark
        pi_view = pi.run([{"name": case, "ops": [{"op": "inspect", "path": str(unmarked)}]}])[0]["results"][0]["value"]
        report = Report(case)
        opened = daemon.request("session/open", {"path": str(copy)})
        try:
            assert [w["kind"] for w in opened["warnings"]] == ["read-only"]
            compare_views(report, pi_view, daemon_view(daemon, opened["sessionId"], [e["id"] for e in pi_view["entries"]]))
            user = {"role": "user", "content": "one more", "timestamp": 1}
            with pytest.raises(daemon.Error) as refused:
                daemon.request("session/append", {"sessionId": opened["sessionId"], "entry": {"type": "message", "message": user}})
            assert refused.value.code == -32024 and refused.value.data["path"] == str(copy)
        finally:
            daemon.request("session/close", {"sessionId": opened["sessionId"]})
        report.assert_clean()
    assert copy.read_bytes() == (CASES / case).read_bytes()


def test_files_pi_writes_on_open_the_daemon_leaves_alone(case_results: dict[str, dict[str, Any]], daemon: Daemon, sessions_root: Path) -> None:
    """protocol.md's differences: pi ends a torn last line with "\n" on every load and writes a header
    into an empty file; the daemon opens (or refuses) without writing a byte."""
    torn, empty = case_results["04-truncated-last.jsonl"], case_results["08-empty.jsonl"]
    original = (CASES / "04-truncated-last.jsonl").read_bytes()
    assert not original.endswith(b"\n") and torn["after"] == original + b"\n"
    assert empty["after"].startswith(b'{"type":"session"') and not (CASES / "08-empty.jsonl").read_bytes()
    for case in ("04-truncated-last.jsonl", "08-empty.jsonl"):
        copy = sessions_root / "cases-untouched" / case
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CASES / case, copy)
        try:
            daemon.request("session/close", {"sessionId": daemon.request("session/open", {"path": str(copy)})["sessionId"]})
        except daemon.Error as exc:
            assert case == "08-empty.jsonl" and exc.code == -32014
        assert copy.read_bytes() == (CASES / case).read_bytes(), case


PI0_FILES = Path(__file__).resolve().parent.parent / "fixtures" / "pi-0.73.1"  # written by pi 0.73.1 itself


def test_pi_reads_pi0_files_as_the_daemon(pi: PiDriver, daemon: Daemon, sessions_root: Path, tally: Tally) -> None:
    """Files pi 0.73.1 wrote keep their contexts: pi 1.6.0 reads every leaf, the tree, the entries and
    the name of each as the daemon does, and neither changes a byte of them."""
    originals = sorted(PI0_FILES.glob("*/*.jsonl"))
    assert len(originals) >= 20
    copies = []
    for original in originals:
        copy = sessions_root / "pi0" / original.parent.name / original.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(original, copy)
        copies.append(copy)
    batch = [{"name": str(c), "ops": [{"op": "inspect", "path": str(c)}]} for c in copies]
    views = {r["name"]: r["results"][0] for r in pi.run(batch)}
    report = Report("pi 0.73.1 files")
    for original, copy in zip(originals, copies, strict=True):
        report.where = f"{original.parent.name}/{original.name}"
        before = len(report.lines)
        if "error" in views[str(copy)]:
            report.fail(f"pi 1.6.0 refuses it: {views[str(copy)]['error']}")
            continue
        leaves = open_and_compare(daemon, str(copy), views[str(copy)]["value"], report)
        if copy.read_bytes() != original.read_bytes():
            report.fail("changed by reading it")
        tally.add("pi 0.73.1's files (pi 1.6.0 reads, daemon reads)", leaves, len(report.lines) == before)
    report.assert_clean()


DUPLICATE_ID_CASES = ["10-duplicate-id-exact.jsonl", "11-duplicate-id-conflict.jsonl"]


@pytest.mark.parametrize("case", DUPLICATE_ID_CASES)
def test_daemon_reads_duplicate_ids_as_documented(case: str, pi: PiDriver, daemon: Daemon, sessions_root: Path, tally: Tally) -> None:
    """The later line wins in lookups as in pi (same contexts); the tree shows each id once."""
    copy = sessions_root / "cases-dup" / case
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CASES / case, copy)
    pi_view = pi.run([{"name": case, "ops": [{"op": "inspect", "path": str(copy)}]}])[0]["results"][0]["value"]
    report = Report(case)
    opened = daemon.request("session/open", {"path": str(copy)})
    try:
        ours = daemon_view(daemon, opened["sessionId"], list(pi_view["contexts"]["byLeaf"]))
    finally:
        daemon.request("session/close", {"sessionId": opened["sessionId"]})
    for leaf, ctx in pi_view["contexts"]["byLeaf"].items():
        report.check(f"context(leaf={leaf}) ", context_view(ctx), context_view(ours["contexts"]["byLeaf"][leaf]))
    report.check("context(default) ", context_view(pi_view["contexts"]["default"]["context"]), context_view(ours["contexts"]["default"]["context"]))
    tree_ids = [n["id"] for n in ours["tree"]]
    report.check("tree ids (each once) ", sorted(set(e["id"] for e in pi_view["entries"])), sorted(tree_ids))
    tally.add("duplicate ids (contexts as pi)", len(pi_view["contexts"]["byLeaf"]) + 1, not report.lines)
    report.assert_clean()


@pytest.mark.parametrize("case", MIGRATION_CASES)
def test_daemon_migrates_like_pi(case: str, case_views: dict[str, Any], daemon: Daemon, pi: PiDriver, sessions_root: Path, tally: Tally) -> None:
    """v1 ids are random on both sides: entries are matched by position."""
    copy = sessions_root / "migrate-daemon" / case
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CASES / case, copy)
    pi_view = case_views[case]
    report = Report(case)
    opened = daemon.request("session/open", {"path": str(copy)})
    sid = opened["sessionId"]
    try:
        entries = all_entries(daemon, sid)
        report.check("entry count ", len(pi_view["entries"]), len(entries))
        ids = {p["id"]: o["id"] for p, o in zip(pi_view["entries"], entries, strict=False)}  # counts checked above
        ours = daemon_view(daemon, sid, [e["id"] for e in entries])
        leaves = compare_views(report, pi_view, ours, ids)
    finally:
        daemon.request("session/close", {"sessionId": sid})
    migrated = copy.read_text(encoding="utf-8")
    report.check("header version ", 3, json.loads(migrated.split("\n", 1)[0]).get("version"))
    backups = list(copy.parent.glob(copy.stem + "*.bak")) + list(copy.parent.glob(copy.name + "*.bak"))
    if not any(b.read_bytes() == (CASES / case).read_bytes() for b in backups):
        report.fail("no .bak copy of the original next to the migrated file (protocol.md)")
    report.check("migrated lines (ids by position) ", _canonical_lines(pi_view["raw"], ids), _canonical_lines(migrated, {}))
    # pi must take the daemon's migrated file as current: no second rewrite, same answers.
    read_back = pi.run([{"name": case, "ops": [{"op": "inspect", "path": str(copy)}]}])[0]["results"][0]["value"]
    if read_back["raw"] != migrated:
        report.fail("pi rewrote the daemon's migrated file: it does not consider it current")
    leaves += open_and_compare(daemon, str(copy), read_back, report)
    tally.add("v1/v2 migration", leaves, not report.lines)
    report.assert_clean()


def _canonical_lines(raw: str, ids: dict[str, str]) -> list[Any]:
    """Each line as [its keys in order, its value with ids renamed]. Unparsable lines are skipped:
    pi deletes them in a migration, the daemon keeps them (a documented difference)."""
    out = []
    for line in filter(None, raw.split("\n")):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        out.append([list(value), _map_ids(value, ids)])
    return out
