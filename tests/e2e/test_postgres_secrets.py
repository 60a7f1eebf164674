"""No secret a connection string holds is ever shown: not in `data.store`, the daemon's log,
`store migrate`'s output, an error about a string libpq cannot parse, nor a `--record`ing (which
is readable by its owner only). Over stdio and the command line, as users meet them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from support.daemon import RawDaemon, request

PASSWORD = "pw-in-userinfo"
SSL_PASSWORD = "pw-for-the-key"
QUERY_PASSWORD = "pw-in-query"
STARTUP_SECONDS = 60.0
SECRETS = (PASSWORD, SSL_PASSWORD, QUERY_PASSWORD)
# Strings libpq cannot parse whose errors quote the very token that holds a secret.
UNPARSABLE = [
    f"host=/nowhere password={PASSWORD} sslpassword=x {SSL_PASSWORD}",
    f"postgresql://someone:{PASSWORD}@[nowhere/db",
    f"postgresql://someone@/db?host=/nowhere&sslpassword={SSL_PASSWORD}%zz",
    f"postgresql://someone:{PASSWORD}%zz@/db?host=/nowhere",
]


def with_secrets(pg_dsn: str) -> str:
    """The test's database, reached as before (trust: the passwords are ignored), with a password
    in the userinfo and an sslpassword in the query (used only with a client key; kept meanwhile)."""
    return pg_dsn.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@") + f"&sslpassword={SSL_PASSWORD}"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_STORE", "PGPASSWORD")}
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def initialize(daemon: RawDaemon, params: dict[str, Any]) -> dict[str, Any]:
    """The answer to `initialize`, bound as start-up is (a fresh database gets its schema first)."""
    daemon.send_message(request(0, "initialize", {"processId": None, "capabilities": {}, **params}))
    answer = daemon.next(STARTUP_SECONDS)
    if "result" in answer:
        daemon.send_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return answer


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_store_migrate_shows_the_store_without_its_secrets(pg_dsn: str) -> None:
    done = cli("store", "migrate", "--store", with_secrets(pg_dsn))
    assert done.returncode == 0, done.stderr
    assert "schema version" in done.stdout and "sslpassword" not in done.stdout
    assert_no_secret(done.stdout + done.stderr)


@pytest.mark.parametrize("dsn", UNPARSABLE)
def test_a_connection_string_libpq_cannot_parse_is_never_quoted(dsn: str, tmp_path: Path) -> None:
    for command in (["store", "migrate"], ["pull", "--sessions-dir", str(tmp_path)]):
        done = cli(*command, "--store", dsn)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "connection string cannot be read" in done.stderr
        assert "Traceback" not in done.stderr
        assert_no_secret(done.stdout + done.stderr)


def test_the_daemon_log_and_data_store_hold_no_secret(start_daemon: Any, sessions_dir: Path, pg_dsn: str) -> None:
    daemon: RawDaemon = start_daemon("--sessions-dir", str(sessions_dir), "--store", with_secrets(pg_dsn))
    assert "result" in initialize(daemon, {})
    created = daemon.call(request(1, "session/create", {"cwd": "/home/user/project"}))
    assert "result" in created, created
    missing = daemon.call(request(2, "session/open", {"path": str(sessions_dir / "--x--" / "none.jsonl")}))
    assert "error" in missing
    daemon.close_stdin()
    daemon.wait()
    assert "PostgreSQL store" in daemon.stderr  # the start-up line is there, without the secrets
    assert_no_secret(daemon.stderr + orjson.dumps(missing).decode())


@pytest.mark.parametrize("dsn", ["good", *UNPARSABLE])
def test_a_recording_is_private_and_holds_no_secret(
    dsn: str, start_daemon: Any, sessions_dir: Path, pg_dsn: str, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    store = with_secrets(pg_dsn) + f"&password={QUERY_PASSWORD}" if dsn == "good" else dsn
    daemon: RawDaemon = start_daemon("--sessions-dir", str(sessions_dir), "--record", str(record))
    answer = initialize(daemon, {"initializationOptions": {"store": store}})
    if dsn == "good":
        assert "result" in answer, answer
    else:
        assert "connection string cannot be read" in answer["error"]["message"], answer
    broken = b'{"jsonrpc":"2.0","method":"x","params":{"initializationOptions":{"store":"%s"}}' % PASSWORD.encode()
    daemon.send(b"Content-Length: %d\r\n\r\n%s" % (len(broken), broken))  # not JSON (a brace short): kept raw
    assert daemon.next()["error"]["code"] == -32700
    daemon.close_stdin()
    daemon.wait()
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    recorded = record.read_text()
    assert '"initialize"' in recorded
    assert_no_secret(recorded + daemon.stderr + orjson.dumps(answer).decode())
