"""The PostgreSQL store against the file store, and sessions it holds against pi (the pinned 1.6.0).

Files into the store: every file of the conformance corpus (the files pi writes for the
generated scenarios, as many as test_pi_conformance.py runs, and every case of
tests/fixtures/pi-quirks) is pushed with `sessiontree push`. A service over the store must then
answer as a service over the original files does: open, info, entries, the tree, and the
context of every leaf (each entry, the default leaf, null) in both formats. In process for the
whole corpus; over stdio (`serve --store`) for a sample.

The store out to pi: a daemon serving the store writes sessions (scenario ops, and explicit
appends under a parentId, labels, names, a compaction and a branch summary committed, a fork);
`sessiontree pull` writes them back as JSONL, and pi must compute from those files what the
daemon answers for every leaf.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pi_harness import Daemon, RpcError, start_daemon
from test_pi_conformance import (
    BY_NAME,
    CASES,
    SCENARIOS,
    DaemonRun,
    Report,
    all_entries,
    compare_views,
    daemon_view,
    with_dirs,
)

from sessiontree import jsonfmt
from sessiontree import protocol as p
from sessiontree.errors import SessionTreeError
from sessiontree.server import HANDLERS
from sessiontree.service import ServiceConfig, SessionService

if TYPE_CHECKING:
    from pi_harness import PiDriver, Tally

    from support.postgres import Cluster

QUIRKS = sorted(path.name for path in CASES.glob("*.jsonl"))
NO_HEADER = {"05-no-header.jsonl", "06-header-not-first.jsonl", "08-empty.jsonl"}  # not sessions: a push refuses them
MIGRATED = {"17-v1.jsonl", "18-v1-malformed.jsonl", "19-v2-hookMessage.jsonl"}  # new ids on each side
STDIO_EVERY = 9  # the stdio pass takes every ninth scenario (and the quirk cases)
REVERSE_EVERY = 4  # the store daemon runs every fourth scenario for pi to read back
USER = {"role": "user", "content": [{"type": "text", "text": "question"}], "timestamp": 1735689600000}


def _assistant(text: str) -> dict[str, Any]:
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip
    return {
        "role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "stop",
        "timestamp": 1735689601000,
    }  # fmt: skip


# --------------------------------------------------------------------------- the daemon, in process


class InProcess:
    """A SessionService asked as a daemon is (method name, JSON params, JSON result)."""

    Error = RpcError

    def __init__(self, service: SessionService) -> None:
        self.service = service

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        parsed = p.parse_params(method, params or {})
        call = SessionService.open if method == "session/open" else HANDLERS[method].call
        try:
            result = call(self.service, parsed)
        except SessionTreeError as exc:
            raise RpcError(method, {"code": exc.code, "message": exc.message, "data": exc.data}) from None
        return json.loads(jsonfmt.dumps_wire(p.to_wire(result)))


def _serve(root: Path, dsn: str, log: Path) -> Daemon:
    """A daemon over stdio serving the store (its stderr to `log`)."""
    return start_daemon(root, log, "--store", dsn)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, timeout=120, check=False
    )


def _database(cluster: Cluster, name: str) -> str:
    return cluster.create_database(name)


# --------------------------------------------------------------------------- the corpus, pushed


@dataclass
class Corpus:
    root: Path
    dsn: str
    pushed: subprocess.CompletedProcess[str]
    files: InProcess
    store: InProcess

    def scenario_files(self, name: str) -> list[Path]:
        return sorted((self.root / "scenarios" / name).glob("*.jsonl"))


@pytest.fixture(scope="module")
def corpus(pi: PiDriver, postgres_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """pi writes the scenarios' files; the quirk cases are copied beside them; one push takes all."""
    root = tmp_path_factory.mktemp("store-corpus")
    results = pi.run([with_dirs(s, root / "scenarios" / s["name"]) for s in SCENARIOS])
    failed = [(r["name"], op["error"]) for r in results for op in r["results"] if "error" in op]
    assert not failed, f"pi failed ops: {failed[:5]}"
    (root / "quirks").mkdir()
    for case in QUIRKS:
        shutil.copyfile(CASES / case, root / "quirks" / case)
    dsn = _database(postgres_cluster, "store_conformance")
    pushed = _cli("push", str(root), "--store", dsn, "--sessions-dir", str(root))
    files = SessionService(ServiceConfig(root))
    store = SessionService(ServiceConfig(root, store=dsn))
    yield Corpus(root, dsn, pushed, InProcess(files), InProcess(store))
    files.close_all()
    store.close_all()


def test_push_takes_every_session_file_of_the_corpus(corpus: Corpus) -> None:
    lines = corpus.pushed.stdout.splitlines()
    every = sorted(path.relative_to(corpus.root).as_posix() for path in corpus.root.rglob("*.jsonl"))
    assert len(every) > len(SCENARIOS) + len(QUIRKS)
    created = sorted(line.split()[2] for line in lines if line.startswith("+ created"))
    refused = sorted(line.split()[2].rstrip(":") for line in lines if line.startswith("! failed"))
    assert refused == sorted(f"quirks/{case}" for case in NO_HEADER), corpus.pushed.stdout
    assert created == sorted(set(every) - set(refused))
    assert corpus.pushed.returncode == 1  # the files without a header first


def _view(client: Any, path: Path) -> dict[str, Any]:
    """What a client sees of a session: its open result and every leaf's context, the tree, the entries
    (or the error of its open)."""
    try:
        opened = client.request("session/open", {"path": str(path)})
    except RpcError as exc:
        return {"refused": {"code": exc.code, "data": exc.data}}
    sid = opened["sessionId"]
    try:
        view = daemon_view(client, sid, [e["id"] for e in all_entries(client, sid)])
    finally:
        client.request("session/close", {"sessionId": sid})
    view["open"] = opened
    return _without_cursors(view)


def _without_cursors(value: Any) -> Any:
    """A context's `cursor` names the answering daemon's cache generation (protocol.md,
    session/context): two daemons, or one asked in another order, give others for the same context."""
    if isinstance(value, dict):
        return {key: _without_cursors(item) for key, item in value.items() if key != "cursor"}
    if isinstance(value, list):
        return [_without_cursors(item) for item in value]
    return value


def _compare(report: Report, expected: dict[str, Any], got: dict[str, Any], by_position: bool = False) -> int:
    """Two views must be equal to the byte (`by_position`: entries renamed by their places first,
    for migrated sessions whose new ids are random). Returns the leaves compared."""
    if "refused" in expected or "refused" in got:
        report.check("open ", expected.get("refused"), got.get("refused"))
        return 0
    if by_position:
        got = {k: v for k, v in got.items() if k != "open"}
        text = json.dumps(got)
        for ours, theirs in zip(got["entries"], expected["entries"], strict=False):
            text = text.replace(json.dumps(ours["id"]), json.dumps(theirs["id"]))
        got = json.loads(text)
    else:
        for key in ("sessionId", "path", "header", "leafId", "entryCount", "name", "warnings"):
            report.check(f"open.{key} ", expected["open"].get(key), got["open"].get(key))
    for key in ("leaf", "name", "entries", "tree"):
        report.check(f"{key} ", expected[key], got[key])
    report.check("context leaves ", sorted(expected["contexts"]["byLeaf"]), sorted(got["contexts"]["byLeaf"]))
    for leaf, context in expected["contexts"]["byLeaf"].items():
        report.check(f"context(leaf={leaf}) ", context, got["contexts"]["byLeaf"].get(leaf))
        report.check(f"llm context(leaf={leaf}) ", expected["llm"]["byLeaf"][leaf], got["llm"]["byLeaf"].get(leaf))
    report.check("context(default) ", expected["contexts"]["default"], got["contexts"]["default"])
    report.check("context(leaf=null) ", expected["contexts"]["null"], got["contexts"]["null"])
    report.check("llm context(default) ", expected["llm"]["default"], got["llm"]["default"])
    return len(expected["contexts"]["byLeaf"]) + 2


def _store_vs_files(corpus: Corpus, path: Path, report: Report, tally: Tally, direction: str, client: Any) -> None:
    report.where = path.relative_to(corpus.root).as_posix()
    before = len(report.lines)
    ours = _view(client, path)  # the store first: the file store migrates old files in place
    theirs = _view(corpus.files, path)
    leaves = _compare(report, theirs, ours, by_position=path.name in MIGRATED)
    tally.add(direction, leaves, len(report.lines) == before)


@pytest.mark.parametrize("name", list(BY_NAME))
def test_store_answers_as_the_files_pi_wrote(name: str, corpus: Corpus, tally: Tally) -> None:
    report = Report(name)
    paths = corpus.scenario_files(name)
    assert paths, "pi wrote the scenario's files"
    for path in paths:
        _store_vs_files(corpus, path, report, tally, "store vs files (in process): pi's files", corpus.store)
    report.assert_clean()


@pytest.mark.parametrize("case", QUIRKS)
def test_store_answers_as_the_quirk_files(case: str, corpus: Corpus, tally: Tally) -> None:
    path = corpus.root / "quirks" / case
    if case in NO_HEADER:  # refused by both: the file store on open, the store on push
        with pytest.raises(RpcError) as refused:
            corpus.files.request("session/open", {"path": str(path)})
        assert refused.value.data["error"] == "NotASessionFile"
        with pytest.raises(RpcError) as missing:
            corpus.store.request("session/open", {"path": str(path)})
        assert missing.value.data["error"] == "FileNotFound"
        return
    report = Report(case)
    _store_vs_files(corpus, path, report, tally, "store vs files (in process): quirk cases", corpus.store)
    report.assert_clean()


def test_store_over_stdio_answers_as_the_files(corpus: Corpus, tally: Tally, tmp_path: Path) -> None:
    """`serve --store`: the same answers over the wire (a sample of the corpus)."""
    sample = [path for name in list(BY_NAME)[::STDIO_EVERY] for path in corpus.scenario_files(name)]
    sample += [corpus.root / "quirks" / case for case in QUIRKS if case not in NO_HEADER | MIGRATED]
    daemon = _serve(corpus.root, corpus.dsn, tmp_path / "stderr.log")
    report = Report("stdio")
    try:
        for path in sample:
            _store_vs_files(corpus, path, report, tally, "store vs files (serve --store over stdio)", daemon)
    finally:
        daemon.close()
    report.assert_clean()


# --------------------------------------------------------------------------- the daemon writes the store, pi reads the pull


class StoreRun(DaemonRun):
    """A scenario run by a daemon that keeps its sessions in PostgreSQL: there are no files to
    read, so what DaemonRun reads from them is asked of the daemon."""

    def _header_of(self, sid: str, path: str) -> dict[str, Any]:
        header: dict[str, Any] = self.daemon.request("session/info", {"sessionId": sid})["header"]
        return header

    def op_createBranchedSession(self, op: dict[str, Any]) -> Any:
        known = {e["id"] for e in all_entries(self.daemon, self.sid)}
        res = self.daemon.request("session/fork", {"sessionId": self.sid, "entryId": op["leafId"]})
        value = self._new_file(res["sessionId"], res["path"])
        self.id_script.extend(e["id"] for e in all_entries(self.daemon, res["sessionId"]) if e["id"] not in known)
        value["leaf"] = self.op_leaf(op)
        return value

    def op_inspect(self, op: dict[str, Any]) -> Any:
        index = self.files.index(op["path"])
        sid = self.reopen(index)
        view = daemon_view(self.daemon, sid, self._ids(sid))
        view["file"] = op["path"]
        return view


@pytest.fixture(scope="module")
def store_daemon(postgres_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("store-daemon-root")
    dsn = _database(postgres_cluster, "store_written")
    daemon = _serve(root, dsn, tmp_path_factory.mktemp("store-daemon-log") / "stderr.log")
    daemon.dsn = dsn  # type: ignore[attr-defined]
    yield daemon
    daemon.close()


def _pull(daemon: Daemon, into: Path, names: list[str]) -> list[Path]:
    """`sessiontree pull` of the daemon's sessions (paths under its root) into another root."""
    relative = [Path(name).relative_to(daemon.sessions_dir).as_posix() for name in names]
    # `--` first: pi's directory names begin with "--", which argparse would take for options
    pulled = _cli("pull", "--store", daemon.dsn, "--sessions-dir", str(into), "--", *relative)  # type: ignore[attr-defined]
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    lines = pulled.stdout.splitlines()
    assert len(lines) == len(relative) and all(
        line.startswith(f"+ created   {r} (") for line, r in zip(lines, relative, strict=True)
    ), pulled.stdout
    return [into / r for r in relative]


def _pi_reads(
    pi: PiDriver, report: Report, tally: Tally, files: list[Path], views: list[dict[str, Any]], label: str
) -> None:
    """pi's inspect of each pulled file against the daemon's view of the session."""
    pulled = [path.read_bytes() for path in files]
    read = pi.run([{"name": label, "ops": [{"op": "inspect", "path": str(path)} for path in files]}])[0]["results"]
    for k, (result, ours, raw) in enumerate(zip(read, views, pulled, strict=True)):
        report.where = f"{label} pulled#{k}"
        before = len(report.lines)
        if "error" in result:
            report.fail(f"pi could not open the pulled file: {result['error']}")
            continue
        pi_view = result["value"]
        if pi_view["raw"].encode("utf-8") != raw:
            report.fail("pi rewrote the pulled file on open")
        leaves = compare_views(report, pi_view, ours)
        tally.add("store written by the daemon, pulled, read by pi", leaves, len(report.lines) == before)


REVERSE = [s["name"] for s in SCENARIOS[::REVERSE_EVERY]]


@pytest.mark.parametrize("name", REVERSE)
def test_pi_reads_pulled_sessions_the_daemon_wrote(
    name: str, store_daemon: Daemon, pi: PiDriver, tally: Tally, tmp_path: Path
) -> None:
    run = StoreRun(store_daemon)
    run.run(BY_NAME[name]["ops"])
    report = Report(name)
    refused = [f"{r['op']}: {r['error']}" for r in run.results if "error" in r]
    for error in refused:
        report.fail(f"the daemon refused {error}")
    views = [r["value"] for r in run.results if r["op"] == "inspect" and "value" in r]
    for sid in run.sids.values():
        store_daemon.request("session/close", {"sessionId": sid})
    assert views and len(views) == len(run.files)
    files = _pull(store_daemon, tmp_path / "pulled", [view["file"] for view in views])
    _pi_reads(pi, report, tally, files, views, name)
    report.assert_clean()


def test_pi_reads_pulled_explicit_writes(store_daemon: Daemon, pi: PiDriver, tally: Tally, tmp_path: Path) -> None:
    """Appends under an explicit parentId, labels, a name, a committed compaction and branch
    summary, and a fork, written into the store by the daemon, pulled, opened by pi."""
    d = store_daemon
    created = d.request("session/create", {"cwd": "/home/user/store project"})
    sid = created["sessionId"]
    append = lambda entry, **extra: d.request("session/append", {"sessionId": sid, "entry": entry, **extra})["id"]  # noqa: E731
    message = lambda m: {"type": "message", "message": m}  # noqa: E731
    first = append(message(USER))
    answer = append(message(_assistant("first answer")))
    second = append(message(dict(USER, content=[{"type": "text", "text": "follow-up"}])))
    append(message(_assistant("second answer")))
    # A branch by explicit parentId: a sibling of `second`, and its reply.
    other = append(message(dict(USER, content=[{"type": "text", "text": "another way"}])), parentId=answer)
    append(message(_assistant("the other answer")))
    append({"type": "model_change", "provider": "openai", "modelId": "gpt-5"}, parentId=other)
    append({"type": "thinking_level_change", "thinkingLevel": "high"})
    d.request("session/label", {"sessionId": sid, "targetId": first, "label": "start"})
    d.request("session/label", {"sessionId": sid, "targetId": second, "label": "fork point"})
    d.request("session/label", {"sessionId": sid, "targetId": first})  # cleared again
    d.request("session/setName", {"sessionId": sid, "name": "  A store session  "})
    for k in range(4):
        append(message(dict(USER, content=[{"type": "text", "text": f"more {k} " + "words " * 200}])))
        append(message(_assistant(f"reply {k} " + "text " * 200)))
    leaf = d.request("session/info", {"sessionId": sid})["leafId"]
    settings = {"enabled": True, "reserveTokens": 100, "keepRecentTokens": 300}
    prepared = d.request("session/prepareCompaction", {"sessionId": sid, "settings": settings})
    assert prepared is not None, "the session is long enough to compact"
    d.request(
        "session/commitCompaction", {"sessionId": sid, "leafId": leaf, "summary": "what happened", "settings": settings}
    )
    append(message(dict(USER, content=[{"type": "text", "text": "after the compaction"}])))
    branched = d.request("session/branch", {"sessionId": sid, "entryId": second, "summary": "left the other way"})
    assert branched.get("summaryEntryId")
    append(message(_assistant("back on the first way")))
    forked = d.request("session/fork", {"sessionId": sid, "entryId": other})
    views, paths = [], []
    for session, path in ((sid, created["path"]), (forked["sessionId"], forked["path"])):
        views.append(daemon_view(d, session, [e["id"] for e in all_entries(d, session)]))
        paths.append(path)
        d.request("session/close", {"sessionId": session})
    kinds = {e["type"] for e in views[0]["entries"]}
    assert {"message", "label", "session_info", "compaction", "branch_summary", "model_change"} <= kinds
    report = Report("explicit")
    _pi_reads(pi, report, tally, _pull(d, tmp_path / "pulled", paths), views, "explicit")
    report.assert_clean()
