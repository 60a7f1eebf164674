"""Every custom method end to end over real stdio, through pytest-lsp, and every error code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from sessiontree.errors import ALL_ERRORS
from sessiontree.protocol import METHODS
from sessiontree.server import HANDLERS
from support.daemon import frame, info, request
from support.messages import user_entry
from support.timeouts import STARTUP_TIMEOUT

CWD = "/work/project"

def assistant(text: str) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "provider": "anthropic",
        "model": "claude",
        "api": "messages",
        "usage": {},
        "stopReason": "stop",
        "timestamp": 2,
    }
    return {"type": "message", "message": message}


async def call(client: LanguageClient, method: str, params: Any) -> Any:
    return await client.protocol.send_request_async(method, params)


async def failure(client: LanguageClient, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await call(client, method, params)
    return caught.value


async def new_session(client: LanguageClient, *entries: dict[str, Any]) -> tuple[str, list[str]]:
    """A created session holding `entries` in a line; returns its id and the entry ids."""
    session_id = (await call(client, "session/create", {"cwd": CWD}))["sessionId"]
    ids = []
    for entry in entries:
        ids.append((await call(client, "session/append", {"sessionId": session_id, "entry": entry}))["id"])
    return session_id, ids


def texts(context: dict[str, Any]) -> list[Any]:
    return [m.get("content") for m in context["messages"]]


def test_handlers_table_and_capabilities_agree() -> None:
    assert set(HANDLERS) == set(METHODS)


async def test_create_open_info_close(client: LanguageClient, sessions_dir: Path) -> None:
    created = await call(client, "session/create", {"cwd": CWD})
    path = Path(created["path"])
    assert path.is_file() and sessions_dir.resolve() in path.parents
    assert created["header"]["cwd"] == CWD
    session_id = created["sessionId"]
    state = await call(client, "session/info", {"sessionId": session_id})
    assert (state["sessionId"], state["entryCount"], state["leafId"]) == (session_id, 0, None)
    assert await call(client, "session/close", {"sessionId": session_id}) is None
    assert (await failure(client, "session/info", {"sessionId": session_id})).code == -32010
    opened = await call(client, "session/open", {"path": str(path)})
    assert (opened["sessionId"], opened["entryCount"], opened["warnings"]) == (session_id, 0, [])


async def test_append_context_and_tree(client: LanguageClient) -> None:
    session_id, (first,) = await new_session(client, user_entry("hello"))
    batch = await call(client, "session/append", {"sessionId": session_id, "entries": [assistant("hi"), user_entry("again")]})
    assert [a["parentId"] for a in batch["appended"]] == [first, batch["appended"][0]["id"]]
    assert batch["leafId"] == batch["appended"][1]["id"]

    context = await call(client, "session/context", {"sessionId": session_id})
    assert texts(context) == ["hello", [{"type": "text", "text": "hi"}], "again"]
    assert context["model"] == {"provider": "anthropic", "modelId": "claude"}
    assert context["leafId"] == batch["leafId"]

    earlier = await call(client, "session/context", {"sessionId": session_id, "leafId": first})
    assert texts(earlier) == ["hello"]
    assert (await call(client, "session/context", {"sessionId": session_id, "leafId": None}))["messages"] == []

    tree = await call(client, "session/tree", {"sessionId": session_id})
    assert [(n["depth"], n["role"], n["preview"]) for n in tree["nodes"]] == [
        (0, "user", "hello"),
        (1, "assistant", "hi"),
        (2, "user", "again"),
    ]
    assert tree["leafId"] == batch["leafId"]


async def test_context_in_llm_format(client: LanguageClient) -> None:
    session_id, (first,) = await new_session(client, user_entry("hello"))
    await call(client, "session/branch", {"sessionId": session_id, "entryId": first, "summary": "tried X"})
    llm = await call(client, "session/context", {"sessionId": session_id, "format": "llm"})
    assert [m["role"] for m in llm["messages"]] == ["user", "user"]
    assert "tried X" in llm["messages"][1]["content"][0]["text"]


async def test_entries_by_ids_path_and_cursor(client: LanguageClient) -> None:
    session_id, ids = await new_session(client, user_entry("a"), assistant("b"), user_entry("c"))
    by_id = await call(client, "session/entries", {"sessionId": session_id, "ids": [ids[1]]})
    assert [e["id"] for e in by_id["entries"]] == [ids[1]]
    path = await call(client, "session/entries", {"sessionId": session_id, "pathTo": ids[2]})
    assert [e["id"] for e in path["entries"]] == ids
    since = await call(client, "session/entries", {"sessionId": session_id, "since": ids[0]})
    assert [e["id"] for e in since["entries"]] == ids[1:]
    assert since["cursor"] == ids[2]


async def test_branch_moves_the_leaf_with_and_without_summary(client: LanguageClient) -> None:
    session_id, ids = await new_session(client, user_entry("a"), assistant("b"))
    moved = await call(client, "session/branch", {"sessionId": session_id, "entryId": ids[0]})
    assert moved == {"leafId": ids[0]}
    summarised = await call(client, "session/branch", {"sessionId": session_id, "entryId": ids[0], "summary": "s"})
    assert summarised["leafId"] == summarised["summaryEntryId"]
    reset = await call(client, "session/branch", {"sessionId": session_id, "entryId": None})
    assert reset == {"leafId": None}


async def test_fork_writes_a_new_session(client: LanguageClient) -> None:
    session_id, ids = await new_session(client, user_entry("a"), assistant("b"), user_entry("c"))
    forked = await call(client, "session/fork", {"sessionId": session_id, "entryId": ids[1]})
    assert forked["sessionId"] != session_id and Path(forked["path"]).is_file()
    context = await call(client, "session/context", {"sessionId": forked["sessionId"]})
    assert texts(context) == ["a", [{"type": "text", "text": "b"}]]


async def test_label_and_set_name(client: LanguageClient) -> None:
    session_id, (first,) = await new_session(client, user_entry("a"))
    labelled = await call(client, "session/label", {"sessionId": session_id, "targetId": first, "label": "start"})
    assert labelled["parentId"] == first
    named = await call(client, "session/setName", {"sessionId": session_id, "name": "  my session "})
    assert named["parentId"] == labelled["id"]
    assert (await call(client, "session/info", {"sessionId": session_id}))["name"] == "my session"
    tree = await call(client, "session/tree", {"sessionId": session_id})
    assert tree["nodes"][0]["label"] == "start"


async def test_list_reports_progress(client: LanguageClient) -> None:
    await new_session(client, user_entry("first question"))
    await new_session(client, user_entry("second question"))
    client.progress_reports["list-1"] = []  # a client-chosen token needs no create request
    listed = await call(client, "session/list", {"cwd": CWD, "workDoneToken": "list-1"})
    assert sorted(s["firstMessage"] for s in listed["sessions"]) == ["first question", "second question"]
    kinds = [report.kind for report in client.progress_reports["list-1"]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    everything = await call(client, "session/list", {})
    assert len(everything["sessions"]) == 2


async def test_open_warnings_are_also_logged(client: LanguageClient, sessions_dir: Path) -> None:
    path = sessions_dir / "torn.jsonl"
    header = {"type": "session", "version": 3, "id": "torn-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD}
    path.write_bytes(orjson.dumps(header) + b"\n" + b'{"type":"message","id":"aa')
    opened = await call(client, "session/open", {"path": str(path)})
    assert opened["warnings"], "a torn last line must be reported"
    logged = [m for m in client.log_messages if m.type == types.MessageType.Warning]
    assert [m.message for m in logged] == [f"{opened['path']}: {w['message']}" for w in opened["warnings"]]


# --------------------------------------------------------------------------- errors


async def _invalid_params(client: LanguageClient, root: Path) -> JsonRpcException:
    session_id, _ = await new_session(client)
    return await failure(client, "session/append", {"sessionId": session_id})


async def _session_not_found(client: LanguageClient, root: Path) -> JsonRpcException:
    return await failure(client, "session/info", {"sessionId": "nope"})


async def _entry_not_found(client: LanguageClient, root: Path) -> JsonRpcException:
    session_id, _ = await new_session(client, user_entry("a"))
    return await failure(client, "session/context", {"sessionId": session_id, "leafId": "ffffffff"})


async def _leaf_conflict(client: LanguageClient, root: Path) -> JsonRpcException:
    session_id, (first, _) = await new_session(client, user_entry("a"), assistant("b"))
    return await failure(client, "session/append", {"sessionId": session_id, "entry": user_entry("c"), "expectedLeafId": first})


async def _path_outside_root(client: LanguageClient, root: Path) -> JsonRpcException:
    return await failure(client, "session/open", {"path": str(root.parent / "elsewhere.jsonl")})


async def _not_a_session_file(client: LanguageClient, root: Path) -> JsonRpcException:
    (root / "notes.jsonl").write_text("hello\n")
    return await failure(client, "session/open", {"path": str(root / "notes.jsonl")})


async def _file_not_found(client: LanguageClient, root: Path) -> JsonRpcException:
    return await failure(client, "session/open", {"path": str(root / "missing.jsonl")})


async def _session_exists(client: LanguageClient, root: Path) -> JsonRpcException:
    await call(client, "session/create", {"cwd": CWD, "id": "same-id"})
    return await failure(client, "session/create", {"cwd": CWD, "id": "same-id"})


async def _storage_error(client: LanguageClient, root: Path) -> JsonRpcException:
    (root / "--blocked--").write_text("a file where the cwd's directory should be")
    return await failure(client, "session/create", {"cwd": "/blocked"})


async def _file_replaced(client: LanguageClient, root: Path) -> JsonRpcException:
    created = await call(client, "session/create", {"cwd": CWD})
    path = Path(created["path"])
    copy = path.with_name("copy.tmp")
    copy.write_bytes(path.read_bytes())
    copy.replace(path)
    return await failure(client, "session/info", {"sessionId": created["sessionId"]})


async def _compacted(client: LanguageClient) -> tuple[str, str, list[str]]:
    """A session of two turns compacted at its end; returns its id, the compaction's id and the turn ids."""
    session_id, ids = await new_session(client, user_entry("a " * 50), assistant("b " * 50), user_entry("c " * 50), assistant("d " * 50))
    settings = {"keepRecentTokens": 30}
    prepared = await call(client, "session/prepareCompaction", {"sessionId": session_id, "settings": settings})
    commit = {"sessionId": session_id, "leafId": prepared["leafId"], "summary": "s", "settings": settings}
    if "turnPrefixPrompt" in prepared:
        commit["turnPrefixSummary"] = "t"
    result = await call(client, "session/commitCompaction", commit)
    return session_id, result["entry"]["id"], ids


async def _summary_conflict(client: LanguageClient, root: Path) -> JsonRpcException:
    session_id, ids = await new_session(client, user_entry("a"), assistant("b"), user_entry("c"))
    await call(client, "session/branch", {"sessionId": session_id, "entryId": ids[0]})
    params = {"sessionId": session_id, "targetId": ids[0], "fromId": ids[2], "summary": "left c"}
    return await failure(client, "session/commitBranchSummary", params)


async def _nothing_to_compact(client: LanguageClient, root: Path) -> JsonRpcException:
    session_id, compaction, _ = await _compacted(client)
    return await failure(client, "session/commitCompaction", {"sessionId": session_id, "leafId": compaction, "summary": "x"})


async def _summarizer_unavailable(client: LanguageClient, root: Path) -> JsonRpcException:
    session_id, _ = await new_session(client, user_entry("a"))
    return await failure(client, "session/compact", {"sessionId": session_id})


async def _summary_failed(client: LanguageClient, root: Path) -> JsonRpcException:
    """The fixture's client cannot summarise, so the failure is provoked in-process."""
    from sessiontree.client_summary import _client_error
    from sessiontree.rpc.endpoint import ResponseError

    error = _client_error(ResponseError(code=-32000, message="no model"))
    return JsonRpcException.from_error(types.ResponseError(code=error.code, message=error.message, data=error.data))


async def _store_unavailable(client: LanguageClient, root: Path) -> JsonRpcException:
    """A daemon of its own, named a store no server listens for: `initialize` says so."""
    from support.daemon import STARTUP_TIMEOUT, RawDaemon, request

    daemon = RawDaemon("--sessions-dir", str(root), "--store", f"postgresql://agent:s3cret-pw@/sessions?host={root}/no-server")
    try:
        initialize = request(0, "initialize", {"processId": None, "capabilities": {}})
        error = daemon.call(initialize, STARTUP_TIMEOUT)["error"]
    finally:
        daemon.kill()
    assert "s3cret" not in error["message"] and "s3cret" not in str(error["data"])
    return JsonRpcException.from_error(types.ResponseError(code=error["code"], message=error["message"], data=error["data"]))


async def _read_only_session(client: LanguageClient, root: Path) -> JsonRpcException:
    """A file that starts with a byte order mark: shown, never written to."""
    path = root / "--bom--" / "bom.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\xef\xbb\xbf{"type":"session","version":3,"id":"bom","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/b"}\n')
    opened = await call(client, "session/open", {"path": str(path)})
    return await failure(client, "session/append", {"sessionId": opened["sessionId"], "entry": user_entry("x")})


async def _name_taken(client: LanguageClient, root: Path) -> JsonRpcException:
    """An archived session restored onto a name another file took meanwhile."""
    session_id, _ = await new_session(client, user_entry("a"))
    path = (await call(client, "session/info", {"sessionId": session_id}))["path"]
    archived = (await call(client, "session/archive", {"path": path}))["movedTo"]
    Path(path).write_text("another file\n")
    return await failure(client, "session/restore", {"path": archived})


ERROR_CASES = {
    "InvalidParams": _invalid_params,
    "SessionNotFound": _session_not_found,
    "EntryNotFound": _entry_not_found,
    "LeafConflict": _leaf_conflict,
    "PathOutsideRoot": _path_outside_root,
    "NotASessionFile": _not_a_session_file,
    "FileNotFound": _file_not_found,
    "SessionExists": _session_exists,
    "StorageError": _storage_error,
    "SummaryConflict": _summary_conflict,
    "NothingToCompact": _nothing_to_compact,
    "SummarizerUnavailable": _summarizer_unavailable,
    "SummaryFailed": _summary_failed,
    "FileReplaced": _file_replaced,
    "StoreUnavailable": _store_unavailable,
    "ReadOnlySession": _read_only_session,
    "NameTaken": _name_taken,
}


def test_every_domain_error_has_a_case() -> None:
    assert set(ERROR_CASES) == {cls.name for cls in ALL_ERRORS}


@pytest.mark.parametrize(
    "error",
    list(ALL_ERRORS),
    ids=lambda cls: cls.name,
)
async def test_domain_errors_keep_code_message_and_data(client: LanguageClient, sessions_dir: Path, error: type) -> None:
    exc = await ERROR_CASES[error.name](client, sessions_dir.resolve())
    assert exc.code == error.code
    assert exc.message
    assert exc.data["error"] == error.name


@pytest.mark.parametrize("debug", [False, True])
def test_unexpected_failures_are_32603_with_a_traceback_only_when_debugging(sessions_dir: Path, debug: bool) -> None:
    script = (
        "import sys\n"
        "from sessiontree import cli, server\n"
        "def broken(service, params):\n"
        "    raise RuntimeError('disk on fire')\n"
        "server.HANDLERS['session/info'] = server.Handler(server.HANDLERS['session/info'].params, broken)\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    body = frame(request(0, "initialize", {"processId": None, "capabilities": {}})) + frame(info(1))
    body += frame(request(2, "shutdown")) + frame({"jsonrpc": "2.0", "method": "exit"})
    args = ["serve", "--sessions-dir", str(sessions_dir)] + (["--debug"] if debug else [])
    done = subprocess.run([sys.executable, "-c", script, *args], input=body, capture_output=True, timeout=STARTUP_TIMEOUT)
    assert done.returncode == 0, done.stderr
    answer = orjson.loads(done.stdout.split(b"\r\n\r\n")[2].split(b"Content-Length")[0])
    assert answer["id"] == 1
    assert answer["error"]["code"] == -32603
    assert "disk on fire" in answer["error"]["message"]
    assert ("traceback" in answer["error"]["data"]) is debug
