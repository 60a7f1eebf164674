"""protocol.md's least privileges are enough, and a role without them is told what to do.

The GRANT block is read from protocol.md ("The schema and its privileges") and run as written, with
the document's database and role names swapped for the test's: if the document leaves out a
privilege the daemon needs, these tests fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from sessiontree import protocol as p
from sessiontree.errors import StorageError
from sessiontree.service import ServiceConfig, SessionService

PROTOCOL_MD = Path(__file__).resolve().parents[2] / "protocol.md"


def documented_grants() -> list[str]:
    text = PROTOCOL_MD.read_text()
    section = text[text.index("### The schema and its privileges") :]
    block = re.search(r"```sql\n(.*?)```", section, re.S)
    assert block is not None, "protocol.md lost its GRANT block"
    return [statement.strip() for statement in block.group(1).split(";") if statement.strip()]


def _database(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute("SELECT current_database()").fetchone()
    assert row is not None
    return str(row[0])


def _role(dsn: str) -> str:
    """Roles belong to the whole server: one of the test's own, named after its database."""
    return f"agent_{_database(dsn)}"


def _as_role(dsn: str) -> str:
    return dsn.replace("postgresql://postgres@", f"postgresql://{_role(dsn)}@")


@pytest.fixture
def owner_dsn(pg_dsn: str) -> str:
    """The test's database (nobody but its owner may use it) and a login role with no privileges yet."""
    with psycopg.connect(pg_dsn, autocommit=True) as connection:
        if connection.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (_role(pg_dsn),)).fetchone() is None:
            connection.execute(f"CREATE ROLE {_role(pg_dsn)} LOGIN")
        connection.execute(f'REVOKE ALL ON DATABASE "{_database(pg_dsn)}" FROM PUBLIC')
        connection.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    return pg_dsn


def _grant_documented(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        for statement in documented_grants():
            statement = statement.replace("DATABASE sessions", f'DATABASE "{_database(dsn)}"')
            connection.execute(statement.replace(" agent", f" {_role(dsn)}").encode())


def _service(root: Path, dsn: str) -> SessionService:
    service = SessionService(ServiceConfig(sessions_dir=root, store=dsn))
    service.backend.start()
    return service


def test_a_role_with_the_documented_privileges_serves_every_kind_of_request(owner_dsn: str, tmp_path: Path) -> None:
    _service(tmp_path, owner_dsn).close_all()  # the owner makes the schema
    _grant_documented(owner_dsn)
    agent = _service(tmp_path, _as_role(owner_dsn))
    try:
        created = agent.create(p.CreateParams(cwd="/work/project"))
        message = {"role": "user", "content": "what the role may do", "timestamp": 1767225600000}
        agent.append(p.AppendParams(created.session_id, entry={"type": "message", "message": message}))
        agent.set_name(p.SetNameParams(created.session_id, "named"))
        agent.subscribe(p.SessionParams(created.session_id))
        listed = agent.list(p.ListParams())
        assert [(s.name, s.message_count, s.first_message) for s in listed.sessions] == [("named", 1, "what the role may do")]
        agent.close(p.SessionParams(created.session_id))
        reopened = agent.open(p.OpenParams(created.path))
        assert reopened.entry_count == 2
    finally:
        agent.close_all()


def test_a_role_that_may_not_make_the_schema_is_told_to_run_store_migrate(owner_dsn: str, tmp_path: Path) -> None:
    with psycopg.connect(owner_dsn, autocommit=True) as connection:
        connection.execute(f'GRANT CONNECT ON DATABASE "{_database(owner_dsn)}" TO {_role(owner_dsn)}')
    with pytest.raises(StorageError) as caught:
        _service(tmp_path, _as_role(owner_dsn))
    assert "sessiontree store migrate" in caught.value.message
