"""Record the transcripts in this directory with `sessiontree serve --record`.

    python tests/transcripts/record.py            # every transcript
    python tests/transcripts/record.py errors     # one of them
    python tests/transcripts/record.py --doc      # protocol.md's examples

Each story below drives a fresh daemon with raw frames; the daemon's own `--record` file is
then stored as `<story>.jsonl`, the sessions root replaced by `${SESSIONS_DIR}`. A story that
needs files on disk before it starts (a file that is not a session, a damaged one) writes them
into `<story>.seed/` as well, and the replay copies that directory into its sessions root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from support.replay import DATA_HOME, PACE_SECONDS, SESSIONS_DIR_TOKEN, STEP_TIMEOUT  # noqa: E402

CWD = "/work/demo"
USER_TIME = 1735689600000  # the client's own message times: data, kept as sent


class Driver:
    """A recorded daemon driven with raw frames, waiting for each answer as a client would."""

    def __init__(self, root: Path, record: Path) -> None:
        command = [sys.executable, "-m", "sessiontree", "serve", "--sessions-dir", str(root), "--record", str(record)]
        env = {**os.environ, "XDG_DATA_HOME": str(root / DATA_HOME)}  # session/trash's trash, kept in the root
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0, env=env
        )
        self._next_id = 0

    # ----------------------------------------------------------------- wire

    def _read_message(self) -> Any:
        out = self.process.stdout
        assert out is not None
        header = out.readline()
        if not header:
            raise EOFError("the daemon closed its output")
        out.readline()
        return orjson.loads(out.read(int(header.split(b":")[1])))

    def send(self, *messages: Any, raw: bytes | None = None) -> dict[Any, Any]:
        """Write the messages (and a raw body) in one write; return the answers by id."""
        time.sleep(PACE_SECONDS)  # a gap on purpose: distinct ms times
        bodies = [orjson.dumps(m) for m in messages] + ([raw] if raw is not None else [])
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(b"Content-Length: %d\r\n\r\n%b" % (len(b), b) for b in bodies))
        waiting = [m["id"] for m in messages if _answered(m)] + ([None] if raw is not None else [])
        answers: dict[Any, Any] = {}
        deadline = time.monotonic() + STEP_TIMEOUT
        while any(w not in answers for w in waiting):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no answer to {waiting}")
            message = self._read_message()
            if "method" not in message:
                answers[message.get("id")] = message
        return answers

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def message(self, method: str, params: Any = None, *, notify: bool = False) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0"} if notify else {"jsonrpc": "2.0", "id": self.next_id()}
        message["method"] = method
        if params is not None:
            message["params"] = params
        return message

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """One request; its whole response (result or error)."""
        message = self.message(method, params)
        return self.send(message)[message["id"]]

    def result(self, method: str, params: Any = None) -> Any:
        response = self.call(method, params)
        assert "result" in response, response
        return response["result"]

    def error(self, method: str, params: Any, code: int) -> dict[str, Any]:
        response = self.call(method, params)
        assert response.get("error", {}).get("code") == code, response
        return response["error"]

    def notify(self, method: str, params: Any = None) -> None:
        self.send(self.message(method, params, notify=True))

    def call_answering(self, method: str, params: Any, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        """One request during which the daemon asks the client: `answer` gives each reply's result or error."""
        message = self.message(method, params)
        time.sleep(PACE_SECONDS)  # a gap on purpose: distinct ms times
        self._write(message)
        deadline = time.monotonic() + STEP_TIMEOUT
        while time.monotonic() < deadline:
            incoming = self._read_message()
            if "method" not in incoming and incoming.get("id") == message["id"]:
                return incoming
            if "method" in incoming and "id" in incoming:
                time.sleep(PACE_SECONDS)  # a gap on purpose: distinct ms times
                self._write({"jsonrpc": "2.0", "id": incoming["id"], **answer(incoming)})
        raise TimeoutError(f"no answer to {message['id']}")

    def _write(self, message: Any) -> None:
        body = orjson.dumps(message)
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))

    # ----------------------------------------------------------------- lifecycle

    def initialize(self, options: Any = None, capabilities: Any = None) -> Any:
        params: dict[str, Any] = {"processId": None, "capabilities": capabilities or {}}
        if options is not None:
            params["initializationOptions"] = options
        result = self.result("initialize", params)
        self.notify("initialized", {})
        return result

    def stop(self) -> int:
        self.result("shutdown")
        self.notify("exit")
        return self.process.wait(STEP_TIMEOUT)


def _answered(message: Any) -> bool:
    return isinstance(message, dict) and "id" in message and "method" in message


# --------------------------------------------------------------------------- stories


def user(text: str, offset: int = 0) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": USER_TIME + offset}}


def assistant(text: str, offset: int = 0) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": 12, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 17},
            "stopReason": "stop",
            "timestamp": USER_TIME + offset,
        },
    }


SUMMARIZING: dict[str, Any] = {"experimental": {"sessiontree": {"summarize": True}}}


def summary_answer(request: dict[str, Any]) -> dict[str, Any]:
    """A client's model, briefly: one line per prompt it was sent."""
    params = request["params"]
    if params["kind"] == "branchSummary":
        return {"result": {"summary": "Looked at another answer."}}
    answer: dict[str, Any] = {"summary": "The user greeted and asked about the repository."}
    if "turnPrefixPrompt" in params["compaction"]:
        answer["turnPrefixSummary"] = "The turn began with a question."
    return {"result": answer}


def compaction(d: Driver, root: Path) -> None:
    """Token advice, prepare and commit, the daemon-driven round trips, conflicts and failures."""
    d.initialize(capabilities=SUMMARIZING)
    sid = d.result("session/create", {"cwd": CWD})["sessionId"]
    d.result("session/configure", {"sessionId": sid, "contextWindow": 600, "settings": {"reserveTokens": 200, "keepRecentTokens": 60}})
    ids = []
    for turn in range(3):
        ids.append(d.result("session/append", {"sessionId": sid, "entry": user(f"Question {turn}: " + "why " * 40, turn)})["id"])
        ids.append(d.result("session/append", {"sessionId": sid, "entry": assistant(f"Answer {turn}: " + "because " * 40, turn)})["id"])
    d.result("session/context", {"sessionId": sid, "tokens": True})
    settings = {"reserveTokens": 200, "keepRecentTokens": 60}
    prepared = d.result("session/prepareCompaction", {"sessionId": sid, "settings": settings, "customInstructions": "Keep names."})
    d.result("session/branch", {"sessionId": sid, "entryId": ids[1]})
    commit = {"sessionId": sid, "leafId": prepared["leafId"], "summary": "Too late.", "turnPrefixSummary": "x", "settings": settings}
    d.error("session/commitCompaction", commit, -32018)  # the prepared leaf is no longer on the path
    d.result("session/branch", {"sessionId": sid, "entryId": ids[-1]})
    d.result("session/append", {"sessionId": sid, "entry": user("Meanwhile.", 5)})
    d.result("session/commitCompaction", commit)  # the leaf moved on: still fits, the new entry is kept
    d.error("session/commitCompaction", commit | {"leafId": d.result("session/info", {"sessionId": sid})["leafId"]}, -32019)
    d.error("session/compact", {"sessionId": sid}, -32019)
    d.result("session/append", {"sessionId": sid, "entry": assistant("Understood. " + "so " * 60, 6)})
    # pi 1.6 summarises nothing that the kept part holds: a new turn leaves something before it.
    d.result("session/append", {"sessionId": sid, "entry": user("Question 3: " + "why " * 40, 7)})
    d.result("session/append", {"sessionId": sid, "entry": assistant("Answer 3: " + "because " * 40, 8)})
    answered = d.call_answering("session/compact", {"sessionId": sid, "settings": settings, "workDoneToken": "c1"}, summary_answer)
    assert "result" in answered, answered
    failing = d.call_answering(
        "session/navigate", {"sessionId": sid, "targetId": ids[2]}, lambda r: {"error": {"code": -32000, "message": "no model"}}
    )
    assert failing["error"]["code"] == -32021, failing
    d.result("session/prepareBranchSummary", {"sessionId": sid, "targetId": ids[1], "contextWindow": 2000, "reserveTokens": 1000})
    navigated = d.call_answering("session/navigate", {"sessionId": sid, "targetId": ids[1]}, summary_answer)
    assert "result" in navigated, navigated
    d.result("session/prepareBranchSummary", {"sessionId": sid, "targetId": ids[4]})
    d.result("session/commitBranchSummary", {"sessionId": sid, "targetId": ids[4], "summary": "Came back."})
    d.result("session/context", {"sessionId": sid, "contextWindow": 600})
    assert d.stop() == 0


def compaction_without_summarizer(d: Driver, root: Path) -> None:
    """A client that did not announce summarize: the daemon never asks it."""
    d.initialize()
    sid = d.result("session/create", {"cwd": CWD})["sessionId"]
    d.result("session/append", {"sessionId": sid, "entry": user("Hello")})
    d.error("session/compact", {"sessionId": sid}, -32020)
    d.error("session/navigate", {"sessionId": sid, "targetId": "ffffffff"}, -32020)
    assert d.stop() == 0


def lifecycle(d: Driver, root: Path) -> None:
    """Before initialize, a failed and a good initialize, notifications, shutdown, after it, exit."""
    d.error("session/list", {}, -32002)
    d.notify("initialized", {})  # dropped before initialize
    d.error("initialize", {"processId": None, "capabilities": {}, "initializationOptions": {"durability": "often"}}, -32602)
    d.initialize({"durability": "os"})
    d.error("initialize", {"processId": None, "capabilities": {}}, -32600)  # only once
    d.notify("$/setTrace", {"value": "off"})
    d.notify("$/somethingUnknown", {"x": 1})  # unknown notifications are ignored
    d.call("session/list", {})
    d.result("shutdown")
    d.error("session/list", {}, -32600)  # nothing but exit after shutdown
    d.notify("exit")
    assert d.process.wait(STEP_TIMEOUT) == 0


def every_method(d: Driver, root: Path) -> None:
    """One session from create to close, through every method of the protocol."""
    d.initialize({"indexDir": f"{root}/.index"})  # the search index stays in the test's directory
    created = d.result("session/create", {"cwd": CWD})
    sid = created["sessionId"]
    first = d.result("session/append", {"sessionId": sid, "entry": user("What is in this repository?")})["id"]
    answer = d.result("session/append", {"sessionId": sid, "entry": assistant("A daemon for session files.", 1000)})["id"]
    d.result("session/append", {"sessionId": sid, "entry": {"type": "model_change", "provider": "openai", "modelId": "gpt-5"}})
    level = d.result("session/append", {"sessionId": sid, "entry": {"type": "thinking_level_change", "thinkingLevel": "high"}})
    note = {"type": "custom_message", "customType": "note", "content": "Remember the tests.", "display": True}
    d.result("session/append", {"sessionId": sid, "entries": [note], "expectedLeafId": level["id"]})
    d.result("session/label", {"sessionId": sid, "targetId": first, "label": "start"})
    d.result("session/setName", {"sessionId": sid, "name": "  Demo session  "})
    d.result("session/editContext", {"sessionId": sid, "targetId": answer, "replacement": {"content": "A daemon (edited)."}})
    d.result("session/subscribe", {"sessionId": sid})
    d.result("session/unsubscribe", {"sessionId": sid})
    d.result("session/context", {"sessionId": sid})
    d.result("session/context", {"sessionId": sid, "format": "llm"})
    d.result("session/context", {"sessionId": sid, "leafId": None})
    d.result("session/tree", {"sessionId": sid})
    d.result("session/entries", {"sessionId": sid, "ids": [first, answer]})
    d.result("session/entries", {"sessionId": sid, "pathTo": answer})
    page = d.result("session/entries", {"sessionId": sid, "since": None, "limit": 2})
    d.result("session/entries", {"sessionId": sid, "since": page["cursor"]})
    branched = d.result("session/branch", {"sessionId": sid, "entryId": first, "summary": "Tried a detour."})
    compaction = {"type": "compaction", "summary": "Asked about the repository.", "firstKeptEntryId": first, "tokensBefore": 1234}
    d.result("session/append", {"sessionId": sid, "entry": compaction, "expectedLeafId": branched["leafId"]})
    d.result("session/context", {"sessionId": sid})
    d.result("session/branch", {"sessionId": sid, "entryId": answer})
    d.result("session/branch", {"sessionId": sid, "entryId": None})
    d.result("session/append", {"sessionId": sid, "entry": user("A new root.", 2000), "parentId": None})
    d.result("session/label", {"sessionId": sid, "targetId": first})  # clears
    d.result("session/tree", {"sessionId": sid})
    d.result("session/export", {"sessionId": sid, "format": "html", "scope": "tree"})
    d.result("session/stats", {"sessionId": sid})
    d.result("session/stats", {"cwd": CWD})
    d.result("session/search", {"query": "repository", "cwd": CWD, "limit": 5})
    view = d.result("session/treeView", {"sessionId": sid, "limit": 3})
    d.result("session/treeView", {"sessionId": sid, "offset": 3, "limit": 3, "reveal": view["leafId"]})
    forked = d.result("session/fork", {"sessionId": sid, "entryId": answer})
    d.result("session/fork", {"sessionId": sid, "cwd": "/work/other"})
    d.result("session/info", {"sessionId": sid})
    d.result("session/info", {"sessionId": forked["sessionId"]})
    d.call("session/list", {"cwd": CWD, "workDoneToken": "list-1"})
    d.call("session/list", {})
    d.result("session/import", {"paths": ["/work/demo/not-an-agent-session.jsonl"]})  # reported in `failed`
    d.result("session/close", {"sessionId": forked["sessionId"]})
    d.result("session/open", {"path": forked["path"]})
    d.result("session/open", {"path": created["path"].removeprefix(str(root) + "/")})  # already open: same session
    d.result("session/archive", {"path": forked["path"]})  # open: closed, with session/didClose
    d.result("session/list", {"cwd": CWD, "archived": True})
    d.result("session/restore", {"path": forked["path"]})
    d.result("session/trash", {"path": forked["path"]})
    d.result("session/restore", {"path": forked["path"]})
    d.result("session/close", {"sessionId": sid})
    assert d.stop() == 0


def errors(d: Driver, root: Path) -> None:
    """Every error code of protocol.md's table that a client can provoke."""
    d.initialize()
    d.send(raw=b'{"jsonrpc":"2.0","id":%d,"method":' % d.next_id())  # -32700
    d.send({"id": d.next_id(), "method": "session/list", "params": {}})  # -32600: no jsonrpc
    d.send([{"jsonrpc": "2.0", "id": d.next_id(), "method": "session/list"}])  # -32600: a batch
    d.send({"jsonrpc": "2.0", "id": d.next_id(), "method": "session/list", "params": 5})  # -32600: params
    d.error("session/frobnicate", {}, -32601)
    d.error("session/info", {}, -32602)
    d.error("session/info", {"sessionId": 7}, -32602)
    sid = d.result("session/create", {"cwd": CWD, "id": "errors-demo"})["sessionId"]
    d.error("session/append", {"sessionId": sid, "entry": {"type": "message", "message": {}}}, -32602)
    bad_batch = [user("one"), user("two", 1), {"type": "nonsense"}]
    d.error("session/append", {"sessionId": sid, "entries": bad_batch}, -32602)
    d.error("session/append", {"sessionId": sid, "entry": user("x"), "entries": [user("y")]}, -32602)
    d.error("session/fork", {"sessionId": sid}, -32602)
    slow = d.message("session/list", {})
    cancel = d.message("$/cancelRequest", {"id": slow["id"]}, notify=True)
    answers = d.send(slow, cancel)  # one write: the request is cancelled before it runs
    assert answers[slow["id"]]["error"]["code"] == -32800, answers
    d.error("session/info", {"sessionId": "no-such-session"}, -32010)
    d.error("session/context", {"sessionId": sid, "leafId": "ffffffff"}, -32011)
    entry = d.result("session/append", {"sessionId": sid, "entry": user("hello")})
    d.error("session/label", {"sessionId": sid, "targetId": "0badc0de", "label": "x"}, -32011)
    d.error("session/append", {"sessionId": sid, "entry": user("late", 1), "expectedLeafId": None}, -32012)
    d.error("session/setName", {"sessionId": sid, "name": "n", "expectedLeafId": "abcdef12"}, -32012)
    d.result("session/setName", {"sessionId": sid, "name": "n", "expectedLeafId": entry["id"]})
    d.error("session/open", {"path": "../outside.jsonl"}, -32013)
    d.error("session/open", {"path": "notes.jsonl"}, -32014)
    d.error("session/open", {"path": "--work-demo--/missing.jsonl"}, -32015)
    d.error("session/create", {"cwd": CWD, "id": "errors-demo"}, -32016)
    d.error("session/create", {"cwd": "/work/dangling"}, -32013)  # its directory is a symlink: never followed
    d.error("session/create", {"cwd": "/work/blocked"}, -32017)  # a file stands where its directory goes
    d.error("session/restore", {"path": "--work-demo--/.archive/taken.jsonl"}, -32025)  # the name is taken
    bom = d.result("session/open", {"path": "--work-demo--/bom.jsonl"})["sessionId"]  # pi does not open it
    d.error("session/append", {"sessionId": bom, "entry": user("refused")}, -32024)
    assert d.stop() == 0


def open_warnings(d: Driver, root: Path) -> None:
    """A damaged file: its warnings come back in the result and as window/logMessage."""
    d.initialize()
    opened = d.result("session/open", {"path": "--work-demo--/damaged.jsonl"})
    d.result("session/tree", {"sessionId": opened["sessionId"]})
    d.result("session/append", {"sessionId": opened["sessionId"], "entry": user("after the repair", 4000)})
    d.result("session/entries", {"sessionId": opened["sessionId"], "since": None})
    assert d.stop() == 0


_HEADER = '{"type":"session","version":3,"id":"damaged-demo","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work/demo"}'
_DAMAGED = "\n".join(
    [
        _HEADER,
        '{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
        '"message":{"role":"user","content":"hi","timestamp":1735689601000}}',
        "this line is not JSON",
        _HEADER,
        '{"type":"label","id":"b2c3d4e5","parentId":"a1b2c3d4","timestamp":"2025-01-01T00:00:02.000Z",'
        '"targetId":"99999999","label":"lost"}',
        '{"type":"message","id":"a1b2c3d4","parentId":"b2c3d4e5","timestamp":"2025-01-01T00:00:03.000Z",'
        '"message":{"role":"user","content":"again","timestamp":1735689603000}}',
        '{"type":"message","id":"c3d4',  # torn: no line end
    ]
)

@dataclass(frozen=True)
class Symlink:
    target: str


# Files on disk before a story starts, relative to the sessions root; stored as `<story>.seed/`.
SEEDS: dict[str, dict[str, str | Symlink]] = {
    "errors": {
        "notes.jsonl": '{"hello":"world"}\n',
        "--work-dangling--": Symlink("nowhere"),
        "--work-blocked--": "a file where a directory should be\n",
        "--work-demo--/bom.jsonl": '\ufeff{"type":"session","version":3,"id":"bom","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/demo"}\n',
        "--work-demo--/taken.jsonl": '{"type":"session","version":3,"id":"taken","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/demo"}\n',
        "--work-demo--/.archive/taken.jsonl": '{"type":"session","version":3,"id":"archived","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/demo"}\n',
    },
    "open-warnings": {"--work-demo--/damaged.jsonl": _DAMAGED},
}


STORIES: dict[str, Callable[[Driver, Path], None]] = {
    "lifecycle": lifecycle,
    "every-method": every_method,
    "errors": errors,
    "open-warnings": open_warnings,
    "compaction": compaction,
    "compaction-without-summarizer": compaction_without_summarizer,
}


# --------------------------------------------------------------------------- storing


def tokenise(value: Any, root: str) -> Any:
    """The transcript with the recording's sessions root replaced by the placeholder token."""
    if isinstance(value, dict):
        return {k: tokenise(v, root) for k, v in value.items()}
    if isinstance(value, list):
        return [tokenise(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, SESSIONS_DIR_TOKEN)
    return value


def record(name: str, out_dir: Path = HERE) -> Path:
    with tempfile.TemporaryDirectory(prefix="sessiontree-record-") as tmp:
        root = Path(os.path.realpath(tmp)) / "sessions"
        seed = out_dir / f"{name}.seed"
        shutil.rmtree(seed, ignore_errors=True)
        for relative, text in SEEDS.get(name, {}).items():
            for base in (root, seed):
                _write_seed(base / relative, text)
        root.mkdir(exist_ok=True)
        record_file = Path(tmp) / "record.jsonl"
        driver = Driver(root, record_file)
        try:
            STORIES[name](driver, root)
        finally:
            if driver.process.poll() is None:
                driver.process.kill()
        lines = [tokenise(orjson.loads(line), str(root)) for line in record_file.read_bytes().splitlines()]
    target = out_dir / f"{name}.jsonl"
    target.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return target


def _write_seed(path: Path, content: str | Symlink) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, Symlink):
        path.symlink_to(content.target)
    else:
        path.write_text(content, encoding="utf-8")


# --------------------------------------------------------------------------- protocol.md's examples

PROTOCOL_MD = HERE.parent.parent / "protocol.md"
DOC_ROOT = "/home/user/.pi/agent/sessions"  # how the sessions root is shown in protocol.md
DOC_CWD = "/home/user/project"
_EXAMPLE_RE = re.compile(r"\n\*Example\*\n.*?(?=\n#{2,3} |\Z)", re.S)


def doc_story(d: Driver, root: Path) -> list[str]:
    """One story through the sections of protocol.md, in document order; returns each call's section."""
    sections: list[str] = []

    def call(section: str, method: str, params: Any) -> Any:
        sections.append(section)
        return d.result(method, params)

    d.initialize({"indexDir": f"{root}/.index"}, capabilities=SUMMARIZING)
    created = call("session/create", "session/create", {"cwd": DOC_CWD})
    sid = created["sessionId"]
    call("session/open", "session/open", {"path": created["path"]})
    call("session/close", "session/close", {"sessionId": sid})
    call("session/close", "session/open", {"path": created["path"]})  # back again, same id
    call("session/info", "session/info", {"sessionId": sid})
    call("session/list", "session/list", {"cwd": DOC_CWD})
    # No agent folder is set here: the path is reported in `failed`, the way any path that fails is.
    call("session/import", "session/import", {"paths": [f"{DOC_CWD}/notes.jsonl"]})
    appended = call("session/append", "session/append", {"sessionId": sid, "entry": user("Hello"), "context": {}})
    first = appended["id"]
    call("session/context", "session/context", {"sessionId": sid})
    call("session/context", "session/context", {"sessionId": sid, "since": appended["context"]["cursor"]})
    call("session/tree", "session/tree", {"sessionId": sid})
    call("session/treeView", "session/treeView", {"sessionId": sid, "limit": 50})
    call("session/export", "session/export", {"sessionId": sid, "format": "markdown"})
    call("session/stats", "session/stats", {"sessionId": sid})
    call("session/search", "session/search", {"query": "hello", "cwd": DOC_CWD})
    call("session/entries", "session/entries", {"sessionId": sid, "since": None, "limit": 10})
    call("session/branch", "session/branch", {"sessionId": sid, "entryId": first, "summary": "Tried another way."})
    forked = call("session/fork", "session/fork", {"sessionId": sid, "entryId": first})["path"]
    call("session/label", "session/label", {"sessionId": sid, "targetId": first, "label": "start"})
    call("session/setName", "session/setName", {"sessionId": sid, "name": "Greeting"})
    edit = {"sessionId": sid, "targetId": first, "replacement": {"content": "Hello there"}}
    call("session/editContext", "session/editContext", edit)
    settings = {"reserveTokens": 100, "keepRecentTokens": 10}
    call("session/configure", "session/configure", {"sessionId": sid, "contextWindow": 120, "settings": settings})
    reply = assistant("Hi! This repository holds a daemon for session files.", 1000)
    call("session/configure", "session/append", {"sessionId": sid, "entry": reply})
    prepared = call("session/prepareCompaction", "session/prepareCompaction", {"sessionId": sid, "settings": settings})
    commit = {"sessionId": sid, "leafId": prepared["leafId"], "settings": settings}
    if "historyPrompt" in prepared:
        commit["summary"] = "The user said hello."
    if "turnPrefixPrompt" in prepared:  # the reply alone fills keepRecentTokens: the turn is split
        commit["turnPrefixSummary"] = "The user said hello."
    call("session/commitCompaction", "session/commitCompaction", commit)
    question = "What does it do, and how do I run it on my own sessions?"  # alone over keepRecentTokens
    call("session/compact", "session/append", {"sessionId": sid, "entry": user(question, 2000)})
    sections.append("session/compact")
    compacted = d.call_answering("session/compact", {"sessionId": sid, "settings": settings}, summary_answer)
    assert "result" in compacted, compacted
    target = {"sessionId": sid, "targetId": first}
    call("session/prepareBranchSummary", "session/prepareBranchSummary", target)
    call("session/commitBranchSummary", "session/commitBranchSummary", target | {"summary": "Asked what it does."})
    sections.append("session/navigate")
    navigated = d.call_answering("session/navigate", {"sessionId": sid, "targetId": compacted["result"]["leafId"]}, summary_answer)
    assert "result" in navigated, navigated
    call("session/subscribe", "session/subscribe", {"sessionId": sid})
    call("session/unsubscribe", "session/unsubscribe", {"sessionId": sid})
    trashed = call("session/trash", "session/trash", {"path": forked})
    call("session/trash", "session/restore", {"path": trashed["movedTo"]})
    archived = call("session/archive", "session/archive", {"path": forked})
    call("session/restore", "session/restore", {"path": archived["movedTo"]})
    assert d.stop() == 0
    return sections


def _doc_json(message: Any) -> str:
    """Short messages on one line; longer ones indented, so the document stays readable."""
    line = orjson.dumps(message).decode()
    if len(line) <= 130:
        return line
    return orjson.dumps(message, option=orjson.OPT_INDENT_2).decode()


def record_doc_examples() -> dict[str, list[Any]]:
    """Run the story; every session/* message in the order it was sent, grouped by section."""
    with tempfile.TemporaryDirectory(prefix="sessiontree-record-") as tmp:
        root = Path(os.path.realpath(tmp)) / "sessions"
        root.mkdir()
        record_file = Path(tmp) / "record.jsonl"
        driver = Driver(root, record_file)
        try:
            sections = iter(doc_story(driver, root))
        finally:
            if driver.process.poll() is None:
                driver.process.kill()
        examples: dict[str, list[Any]] = {}
        section = ""
        for raw in record_file.read_bytes().splitlines():
            line = orjson.loads(raw)
            msg = line["msg"]
            if line["dir"] == "in" and str(msg.get("method", "")).startswith("session/"):
                section = next(sections)
            elif line["dir"] == "in" and "method" in msg:
                section = ""  # the lifecycle around the story is not an example
            if section:
                examples.setdefault(section, []).append(tokenise(msg, str(root)))
    return {name: [_relabel(m) for m in messages] for name, messages in examples.items()}


def _relabel(message: Any) -> Any:
    return orjson.loads(orjson.dumps(message).decode().replace(SESSIONS_DIR_TOKEN, DOC_ROOT))


def write_doc_examples(path: Path = PROTOCOL_MD) -> None:
    """Put (or replace) an `*Example*` subsection at the end of each `### session/...` section."""
    examples = record_doc_examples()
    text = _EXAMPLE_RE.sub("", path.read_text())
    for section, messages in examples.items():
        blocks = "\n\n".join(f"```json\n{_doc_json(m)}\n```" for m in messages)
        start = text.index(f"\n### {section}\n")
        end = re.compile(r"\n#{2,3} ").search(text, start + 1)
        cut = end.start() if end else len(text)
        text = text[:cut].rstrip("\n") + f"\n\n*Example*\n\n{blocks}\n" + text[cut:]
    path.write_text(text)


def main(argv: list[str]) -> int:
    if argv == ["--doc"]:
        write_doc_examples()
        print(f"wrote the examples of {PROTOCOL_MD.name}")
        return 0
    names = argv or list(STORIES)
    for name in names:
        path = record(name)
        print(f"recorded {path.relative_to(HERE.parent.parent)}: {len(path.read_bytes().splitlines())} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
