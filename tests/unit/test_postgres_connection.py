"""The store's connection: libpq's ways of naming a server work, and a password is never shown."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest

from sessiontree.backend.postgres.database import Database, redacted
from sessiontree.errors import StoreUnavailable


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://agent:s3cret@db.example:5433/sessions?sslmode=verify-full",
        "host=db.example port=5433 dbname=sessions user=agent password=s3cret sslmode=verify-full",
    ],
)
def test_the_shown_store_has_every_setting_but_the_password(dsn: str) -> None:
    shown = redacted(dsn)
    assert "s3cret" not in shown
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


def test_a_password_from_the_environment_never_reaches_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASSWORD", "s3cret-from-env")
    db = Database(f"postgresql://agent:s3cret-in-dsn@/sessions?host={tmp_path}")
    with pytest.raises(StoreUnavailable) as caught:
        db.connection()
    assert "s3cret" not in caught.value.message and "s3cret" not in str(caught.value.data)
    # and the scrubbing itself, on a message that does carry both
    message = db.scrub(psycopg.OperationalError("auth failed for s3cret-in-dsn and s3cret-from-env"))
    assert "s3cret" not in message
