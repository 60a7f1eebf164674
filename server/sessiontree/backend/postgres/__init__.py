"""The PostgreSQL store (`sessiontree serve --store postgresql://…`): needs psycopg 3."""

from .backend import PostgresBackend
from .database import Database
from .dsn import redacted
from .schema import VERSION, migrate

__all__ = ["VERSION", "Database", "PostgresBackend", "migrate", "redacted"]
