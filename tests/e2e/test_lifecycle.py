"""initialize / shutdown / exit, the sessions root, exit codes, --record and stdout hygiene."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree.protocol import FORMAT_VERSION, METHODS, PROTOCOL_VERSION
from support.daemon import RawDaemon, answered, frame, info, request
from support.messages import line, user
from support.sessions import session_bytes
from support.timeouts import STARTUP_TIMEOUT

NOT_INITIALIZED, INVALID_REQUEST, INVALID_PARAMS, NOT_FOUND = -32002, -32600, -32602, -32010
EXIT = {"jsonrpc": "2.0", "method": "exit"}
SHUTDOWN = request("down", "shutdown")
INITIALIZE = request(0, "initialize", {"processId": None, "capabilities": {}})


def test_initialize_advertises_the_protocol(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    result = start_daemon("--sessions-dir", str(sessions_dir)).initialize()
    assert result["capabilities"]["experimental"] == {
        "sessiontree": {
            "protocolVersion": PROTOCOL_VERSION,
            "formatVersion": FORMAT_VERSION,
            "methods": sorted(METHODS),
        }
    }
    assert result["serverInfo"]["name"] == "sessiontree"
    assert result["serverInfo"]["version"]


def test_requests_before_initialize_get_32002_and_notifications_nothing(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    daemon.send(
        frame(info(1))
        + frame(request(2, "session/nope", {}))
        + frame(request(3, "shutdown"))
        + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        + frame({"jsonrpc": "2.0", "id": 4})  # an invalid envelope is still -32600
    )
    assert answered([daemon.next() for _ in range(4)]) == [
        (1, NOT_INITIALIZED),
        (2, NOT_INITIALIZED),
        (3, NOT_INITIALIZED),
        (4, INVALID_REQUEST),
    ]
    daemon.initialize()
    assert daemon.answers_before_probe() == []


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"processId": None}, "capabilities"),
        ({"processId": None, "capabilities": {}, "initializationOptions": 5}, "initializationOptions"),
        ({"processId": None, "capabilities": {}, "initializationOptions": {"sessionsDir": 5}}, "initializationOptions.sessionsDir"),
        ({"processId": None, "capabilities": {}, "initializationOptions": {"durability": "never"}}, "initializationOptions.durability"),
        ({"processId": None, "capabilities": {}, "initializationOptions": {"indexDir": True}}, "initializationOptions.indexDir"),
        ({"processId": None, "capabilities": {}, "initializationOptions": {"indexDir": ""}}, "initializationOptions.indexDir"),
    ],
)
def test_bad_initialize_params_are_32602_and_initialize_can_be_retried(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, params: dict[str, Any], field: str
) -> None:
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    response = daemon.call(request(1, "initialize", params))
    assert response["error"]["code"] == INVALID_PARAMS
    assert field in response["error"]["message"]
    assert daemon.call(info(2))["error"]["code"] == NOT_INITIALIZED
    daemon.initialize()
    assert daemon.answers_before_probe() == []


def test_exit_after_shutdown_exits_0(daemon: RawDaemon) -> None:
    assert daemon.call(SHUTDOWN) == {"jsonrpc": "2.0", "id": "down", "result": None}
    daemon.send(frame(info(1)) + frame({"jsonrpc": "2.0", "method": "foo/bar"}) + frame(EXIT))
    assert answered([daemon.next()]) == [(1, INVALID_REQUEST)]
    assert daemon.wait() == 0


def test_exit_without_shutdown_exits_1(daemon: RawDaemon) -> None:
    daemon.send_message(EXIT)
    assert daemon.wait() == 1


def test_exit_before_initialize_exits_1(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    daemon.send_message(EXIT)
    assert daemon.wait() == 1


def test_nothing_after_exit_is_handled(daemon: RawDaemon) -> None:
    daemon.send(frame(SHUTDOWN) + frame(EXIT) + frame(info(1)))
    assert answered([daemon.next()]) == [("down", None)]
    assert daemon.wait() == 0
    assert daemon.messages.empty()


@pytest.mark.parametrize(("shutdown", "code"), [(False, 1), (True, 0)])
def test_stdin_eof_exits(daemon: RawDaemon, shutdown: bool, code: int) -> None:
    if shutdown:
        daemon.call(SHUTDOWN)
    daemon.close_stdin()
    assert daemon.wait() == code
    if not shutdown:
        assert "without shutdown" in daemon.stderr


def _created_path(daemon: RawDaemon) -> Path:
    response = daemon.call(request(1, "session/create", {"cwd": "/work/project"}))
    return Path(response["result"]["path"])


@pytest.mark.parametrize("winner", ["flag", "env", "options", "default"])
def test_sessions_root_precedence(start_daemon: Callable[..., RawDaemon], tmp_path: Path, winner: str) -> None:
    dirs = {name: tmp_path / name for name in ("flag", "env", "options", "home")}
    order = ["flag", "env", "options", "default"]
    present = order[order.index(winner) :]
    args = ["--sessions-dir", str(dirs["flag"])] if "flag" in present else []
    env = {"HOME": str(dirs["home"])}
    env["SESSIONTREE_SESSIONS_DIR"] = str(dirs["env"]) if "env" in present else ""
    options = {"sessionsDir": str(dirs["options"])} if "options" in present else None
    daemon = start_daemon(*args, env=env)
    daemon.initialize(options)
    expected = dirs["home"] / ".pi" / "agent" / "sessions" if winner == "default" else dirs[winner]
    assert expected.resolve() in _created_path(daemon).parents


def test_durability_comes_from_initialization_options(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    daemon.initialize({"durability": "fsync"})
    assert _created_path(daemon).is_file()
    daemon.close_stdin()
    daemon.wait()
    assert "durability fsync" in daemon.stderr


def test_record_writes_every_message_in_both_directions(start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    daemon = start_daemon("--sessions-dir", str(sessions_dir), "--record", str(record))
    daemon.initialize()
    daemon.call(info(1))
    daemon.send(frame(b"{oops") + frame(SHUTDOWN))
    daemon.next(), daemon.next()
    daemon.send_message(EXIT)
    assert daemon.wait() == 0
    lines = [orjson.loads(line) for line in record.read_bytes().splitlines()]
    ins = [line for line in lines if line["dir"] == "in"]
    outs = [line for line in lines if line["dir"] == "out"]
    assert [line["msg"] and line["msg"]["method"] for line in ins] == [
        "initialize", "initialized", "session/info", None, "shutdown", "exit"
    ]
    assert ins[3]["raw"] == "{oops" and "rejected" in ins[3]
    assert [line["msg"]["id"] for line in outs] == [0, 1, None, "down"]
    assert outs[2]["msg"]["error"]["code"] == -32700
    # An answer is recorded after the message it answers; times only grow.
    assert lines.index(outs[1]) > lines.index(ins[2])
    times = [line["t"] for line in lines]
    assert times == sorted(times) and all(isinstance(t, float) for t in times)


def test_print_in_a_handler_goes_to_stderr_not_the_wire(sessions_dir: Path) -> None:
    script = (
        "import sys\n"
        "from sessiontree import cli, server\n"
        "real = server.HANDLERS['session/info']\n"
        "stray = lambda service, params: print('stray output') or real.call(service, params)\n"
        "server.HANDLERS['session/info'] = server.Handler(real.params, stray)\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    body = frame(INITIALIZE) + frame(info(1)) + frame(SHUTDOWN) + frame(EXIT)
    done = subprocess.run(
        [sys.executable, "-c", script, "serve", "--sessions-dir", str(sessions_dir)],
        input=body,
        capture_output=True,
        timeout=STARTUP_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert b"stray output" not in done.stdout
    assert "stray output" in done.stderr.decode()
    assert done.stdout.count(b"Content-Length: ") == 3
    assert b'"code":-32010' in done.stdout


def test_exits_when_the_parent_process_is_gone(start_daemon: Callable[..., RawDaemon], sessions_dir: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", "pass"])
    parent.wait()
    daemon = start_daemon("--sessions-dir", str(sessions_dir))
    daemon.call(request(0, "initialize", {"processId": parent.pid, "capabilities": {}}), STARTUP_TIMEOUT)
    assert daemon.wait(timeout=6) == 1
    assert f"parent process {parent.pid} is gone" in daemon.stderr


def _big_session(sessions_dir: Path, entries: int) -> Path:
    path = sessions_dir / "big.jsonl"
    rows = [line(user(f"e{n:07d}", f"e{n - 1:07d}" if n else None, f"q{n}")) for n in range(entries)]
    path.write_bytes(session_bytes() + b"".join(rows))
    return path


@pytest.mark.parametrize("index_dir", ["sidecars", False])
def test_close_and_shutdown_save_the_index_sidecar_where_indexdir_says(
    start_daemon: Callable[..., RawDaemon], sessions_dir: Path, tmp_path: Path, index_dir: str | bool
) -> None:
    path = _big_session(sessions_dir, 1000)
    where = tmp_path / "sidecars"
    saved: list[tuple[int, int]] = []
    for run in range(2):  # the second run opens from the sidecar the first one saved
        daemon = start_daemon("--sessions-dir", str(sessions_dir))
        daemon.initialize({"indexDir": str(where) if index_dir else False})
        opened = daemon.call(request(1, "session/open", {"path": str(path)}))["result"]
        assert (opened["entryCount"], opened["leafId"]) == (1000, "e0000999")
        if run == 0:
            daemon.call(request(2, "session/close", {"sessionId": opened["sessionId"]}))
        else:
            daemon.call(SHUTDOWN)
        sidecars = list(where.glob("*"))
        assert [p.suffix for p in sidecars] == ([".idx"] if index_dir else [])
        saved += [(p.stat().st_ino, p.stat().st_mtime_ns) for p in sidecars]
    if index_dir:  # the second daemon used the sidecar and, with nothing new, left it as it was
        assert saved[0] == saved[1]


def test_with_tracing_on_each_answer_is_followed_by_its_time_in_the_daemon(daemon: RawDaemon) -> None:
    created = daemon.call(request(1, "session/create", {"cwd": "/p"}))["result"]
    daemon.send_message({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "messages"}})
    daemon.send_message(request(2, "session/info", {"sessionId": created["sessionId"]}))
    answer, trace = daemon.next(), daemon.next()
    assert answer["id"] == 2 and "result" in answer
    assert trace["method"] == "$/logTrace"
    assert re.fullmatch(r"session/info 2: answered in \d+\.\d{3} ms", trace["params"]["message"])
    daemon.send_message({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}})
    assert daemon.answers_before_probe() == []  # no more traces
