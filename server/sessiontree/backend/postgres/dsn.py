"""A connection string as it may be shown: never with a secret in it.

A DSN can hold secrets in many places: `password`, `sslpassword` (and any other `*password*`
setting libpq may learn), the userinfo of a URI, its query, and `PGPASSWORD`. Whatever the daemon
shows (`data.store`, its log, `store migrate`, an error) is made from the parsed settings with
every such value left out, and any error text has the secrets replaced. A string libpq cannot parse
is never quoted: libpq's own message quotes the token it stopped at, which may be the password.
"""

from __future__ import annotations

import os
import re
from typing import Final
from urllib.parse import quote, unquote

import psycopg
from psycopg import conninfo

MASK: Final = "********"
UNREADABLE: Final = "(an unreadable connection string)"
_QUOTED = re.compile(r'"[^"]*"')
# For a string that cannot be parsed: what may be a secret, as best a pattern can tell.
_KEYWORD_SECRET = re.compile(r"[A-Za-z_]*password[A-Za-z_]*\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", re.IGNORECASE)
_QUERY_SECRET = re.compile(r"[?&][^=&#]*password[^=&#]*=([^&#]*)", re.IGNORECASE)
_USERINFO_SECRET = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^:@/?#]*:([^@/?#]*)@")


def is_secret(key: str) -> bool:
    return "password" in key.lower()


def settings(dsn: str) -> dict[str, str] | None:
    """libpq's reading of the string (URI or key=value), or None if it cannot read it."""
    try:
        return {key: str(value) for key, value in conninfo.conninfo_to_dict(dsn).items() if value is not None}
    except psycopg.Error:
        return None


def redacted(dsn: str) -> str:
    """Every setting but the secrets, as `key=value` words."""
    found = settings(dsn)
    if found is None:
        return UNREADABLE
    shown = {key: value for key, value in found.items() if not is_secret(key)}
    return " ".join(f"{key}={value}" for key, value in shown.items()) or "(libpq's defaults)"


def secrets(dsn: str) -> list[str]:
    """Every secret the string (or the environment) gives, in each form a message could hold it:
    as given, percent-decoded and percent-encoded. Longest first, so a secret holding another is
    replaced whole."""
    found = {os.environ.get("PGPASSWORD", "")}
    parsed = settings(dsn)
    if parsed is not None:
        found.update(value for key, value in parsed.items() if is_secret(key))
    for pattern in (_KEYWORD_SECRET, _QUERY_SECRET, _USERINFO_SECRET):
        for match in pattern.finditer(dsn):
            found.add(match.group(1).strip("'"))
    forms = {form for secret in found for form in (secret, unquote(secret), quote(secret, safe=""))}
    return sorted((form for form in forms if form), key=len, reverse=True)


def scrub(text: str, hidden: list[str]) -> str:
    for secret in hidden:
        text = text.replace(secret, MASK)
    return text


def unreadable(dsn: str) -> str | None:
    """Why libpq cannot parse the string (whatever its message quoted from it masked), or None."""
    try:
        conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        return _QUOTED.sub('"…"', " ".join(str(exc).split())) or "libpq cannot parse it"
    return None
