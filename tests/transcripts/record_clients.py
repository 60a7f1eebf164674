"""Record a session of each client (Node library, Neovim plugin, Python example) as a transcript.

    python tests/transcripts/record_clients.py              # node, nvim and python
    python tests/transcripts/record_clients.py nvim python  # some of them

Each client runs its own short story (clients/node/scripts/record-session.mjs, needing
`npm run build` in clients/; clients/nvim/test/record.lua; clients/python/agent_loop.py) with
`SESSIONTREE_COMMAND` naming a daemon started with `--record`. The record is stored as
`<client>-client.jsonl` with the sessions root replaced by `${SESSIONS_DIR}`, as record.py does.

A real client sends its next request as soon as it has the answer, so two appends can fall in
the same millisecond and share a generated time, which a replay (paced a few milliseconds
apart) could never reproduce. The daemon is therefore started behind `pace`, a relay that
holds each client message until `PACE_SECONDS` after the daemon last spoke, as the replay does.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from record import tokenise  # noqa: E402

from support.replay import PACE_SECONDS  # noqa: E402

CLIENT_TIMEOUT = 120


def stories(root: Path) -> dict[str, list[str]]:
    return {
        "node": ["node", str(REPO / "clients" / "node" / "scripts" / "record-session.mjs")],
        "nvim": ["nvim", "--headless", "-u", "NONE", "-c", f"luafile {REPO / 'clients' / 'nvim' / 'test' / 'record.lua'}"],
        "python": [sys.executable, str(REPO / "clients" / "python" / "agent_loop.py"), "--sessions-dir", str(root), "--cwd", "/work/demo"],
    }


def record(name: str) -> Path:
    with tempfile.TemporaryDirectory(prefix="sessiontree-record-") as tmp:
        root = Path(os.path.realpath(tmp)) / "sessions"
        root.mkdir()
        raw = Path(tmp) / "record.jsonl"
        daemon = [sys.executable, "-m", "sessiontree", "serve", "--sessions-dir", str(root), "--record", str(raw)]
        command = [sys.executable, str(Path(__file__).resolve()), "pace", *daemon]
        env = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_PYTHON", "SESSIONTREE_SESSIONS_DIR")}
        env["SESSIONTREE_COMMAND"] = shlex.join(command)
        subprocess.run(stories(root)[name], env=env, cwd=tmp, check=True, timeout=CLIENT_TIMEOUT)
        lines = [tokenise(orjson.loads(line), str(root)) for line in raw.read_bytes().splitlines()]
    target = HERE / f"{name}-client.jsonl"
    target.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return target


# --------------------------------------------------------------------------- the pacing relay


def pace(command: list[str]) -> int:
    """Run the daemon; copy frames both ways, each client frame no sooner than PACE after the daemon's last."""
    daemon = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert daemon.stdin is not None and daemon.stdout is not None
    last_out = [time.monotonic()]

    def copy_out() -> None:
        assert daemon.stdout is not None
        while chunk := os.read(daemon.stdout.fileno(), 65536):
            last_out[0] = time.monotonic()
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
        # The daemon is done (after `exit`): so is the relay, with its status, without waiting
        # for the client to close our stdin (it waits for us to exit first).
        sys.stdout.buffer.flush()
        os._exit(daemon.wait())

    relay = threading.Thread(target=copy_out, daemon=True)
    relay.start()
    source = sys.stdin.buffer
    try:
        while header := _read_headers(source):
            length = int(next(v for k, v in header if k.lower() == b"content-length"))
            body = source.read(length)
            time.sleep(max(0.0, last_out[0] + PACE_SECONDS - time.monotonic()))  # a gap on purpose: distinct ms times
            daemon.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
    except BrokenPipeError:
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            daemon.stdin.close()
    code = daemon.wait()
    relay.join()
    return code


def _read_headers(source: object) -> list[tuple[bytes, bytes]]:
    headers: list[tuple[bytes, bytes]] = []
    while True:
        line = source.readline()  # type: ignore[attr-defined]
        if not line:
            return []
        if line in (b"\r\n", b"\n"):
            if headers:
                return headers
            continue
        key, _, value = line.partition(b":")
        headers.append((key.strip(), value.strip()))


def main(argv: list[str]) -> int:
    if argv[:1] == ["pace"]:
        return pace(argv[1:])
    names = argv or ["node", "nvim", "python"]
    for name in names:
        if name == "nvim" and shutil.which("nvim") is None:
            raise SystemExit("nvim is not installed")
        print(record(name).relative_to(REPO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
