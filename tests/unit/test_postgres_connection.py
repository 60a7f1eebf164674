"""The store's connection: libpq's ways of naming a server work, and a password is never shown."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest

from sessiontree.backend.postgres.database import Database
from sessiontree.backend.postgres.dsn import redacted
from sessiontree.errors import StoreUnavailable
from support.daemon import RawDaemon, request
from support.postgres import Cluster, running_cluster
from support.sessions import descriptors_past_1024


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://agent:s3cret@db.example:5433/sessions?sslmode=verify-full",
        "host=db.example port=5433 dbname=sessions user=agent password=s3cret sslmode=verify-full",
        "postgresql://agent@db.example:5433/sessions?sslmode=verify-full&sslpassword=s3cret&password=s3cret",
        "host=db.example port=5433 dbname=sessions user=agent sslpassword='s3cret' sslmode=verify-full",
    ],
)
def test_the_shown_store_has_every_setting_but_the_password(dsn: str) -> None:
    shown = redacted(dsn)
    assert "s3cret" not in shown and "password" not in shown
    for part in ("host=db.example", "port=5433", "dbname=sessions", "user=agent", "sslmode=verify-full"):
        assert part in shown


def test_an_unreadable_connection_string_is_not_echoed() -> None:
    assert redacted("host='s3cret") == "(an unreadable connection string)"


def test_pg_environment_variables_name_the_server(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = urlparse(pg_dsn)
    monkeypatch.setenv("PGHOST", parse_qs(url.query)["host"][0])
    monkeypatch.setenv("PGUSER", "postgres")
    db = Database(f"dbname={url.path.lstrip('/')}")
    try:
        row = db.connection().execute("SELECT current_user").fetchone()
        assert row == ("postgres",)
    finally:
        db.close()


def test_a_connection_on_a_descriptor_past_1024_is_checked_and_used(pg_dsn: str) -> None:
    """A daemon with many sessions open holds descriptors past 1024, where `select` cannot look."""
    held = descriptors_past_1024()
    db = Database(pg_dsn)
    try:
        assert db.connection().pgconn.socket > 1024
        assert db.connection().execute("SELECT 1").fetchone() == (1,)
        assert db.connection().execute("SELECT 2").fetchone() == (2,)  # the idle check ran in between
    finally:
        db.close()
        for fd in held:
            os.close(fd)


def test_a_password_from_the_environment_never_reaches_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "s3cret-from-env")
    db = Database(f"postgresql://agent:s3cret-in-dsn@/sessions?host={tmp_path}")
    with pytest.raises(StoreUnavailable) as caught:
        db.connection()
    assert "s3cret" not in caught.value.message and "s3cret" not in str(caught.value.data)
    # and the scrubbing itself, on a message that does carry both
    message = db.scrub(psycopg.OperationalError("auth failed for s3cret-in-dsn and s3cret-from-env"))
    assert "s3cret" not in message


# ---------------------------------------------------------------------- a server that asks for a password

SECRET = "s3cret-Pw-73"


@pytest.fixture(scope="module")
def locked() -> Iterator[Cluster]:
    """A server of this module's own where every connection must give the password (scram-sha-256)."""
    with running_cluster(password=SECRET) as cluster:
        yield cluster


@pytest.fixture
def pgpass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A password file as libpq reads it (private to its owner), named by $PGPASSFILE."""
    path = tmp_path / "pgpass"
    path.write_text(f"*:*:*:postgres:{SECRET}\n")
    path.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(path))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    return path


def test_the_password_comes_from_the_password_file(locked: Cluster, pgpass: Path) -> None:
    db = Database(locked.dsn())  # no password in the connection string
    try:
        assert db.connection().execute("SELECT current_user").fetchone() == ("postgres",)
    finally:
        db.close()


def test_no_password_and_a_wrong_one_are_clear_errors_that_never_show_it(
    locked: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    with pytest.raises(StoreUnavailable) as missing:
        Database(locked.dsn()).connection()
    assert "password" in missing.value.message
    wrong = locked.dsn().replace("postgres@", "postgres:Wr0ng-Pw-99@")
    with pytest.raises(StoreUnavailable) as refused:
        Database(wrong).connection()
    assert "password authentication failed" in refused.value.message
    for error in (missing.value, refused.value):
        assert "Wr0ng" not in error.message + str(error.data) and SECRET not in error.message + str(error.data)


def test_a_daemon_started_with_the_store_reads_the_password_file(locked: Cluster, pgpass: Path, tmp_path: Path) -> None:
    daemon = RawDaemon("--sessions-dir", str(tmp_path / "sessions"), "--store", locked.dsn())
    try:
        daemon.send_message(request(0, "initialize", {"processId": None, "capabilities": {}}))
        assert "result" in daemon.next(60.0)  # start-up (a connection, the schema made) bound apart from answers
        created = daemon.call(request(1, "session/create", {"cwd": "/work/project"}))
        assert "result" in created, created
    finally:
        daemon.kill()
    assert SECRET not in daemon.stderr


def test_every_form_of_a_secret_is_taken_out_of_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiontree.backend.postgres.dsn import scrub, secrets

    monkeypatch.setenv("PGPASSWORD", "env-s3cret")
    hidden = secrets("postgresql://agent:p%40ss@db.example/sessions?sslpassword=k3y-pass")
    message = "failed for agent with p@ss, p%40ss, k3y-pass and env-s3cret"
    assert scrub(message, hidden) == "failed for agent with ********, ********, ******** and ********"
    broken = secrets("host=db password=tok3n sslpassword 'k3y")  # unparsable: found by pattern
    assert "tok3n" in broken


def test_connect_timeout_is_given_only_where_nothing_sets_it() -> None:
    from sessiontree.backend.postgres.bounds import CONNECT_TIMEOUT, connect_arguments

    assert connect_arguments({}, {}) == {"connect_timeout": CONNECT_TIMEOUT}
    assert connect_arguments({"connect_timeout": "3"}, {}) == {}  # the string's own wins
    assert connect_arguments({}, {"PGCONNECT_TIMEOUT": "3"}) == {}
