"""The daemon's settings: every field has a default, so `ServerConfig()` is a working daemon.

The sessions root is resolved late, at `initialize`, because the client may name it in
`initializationOptions`; the order of precedence is `--sessions-dir` > `$SESSIONTREE_SESSIONS_DIR`
> `initializationOptions.sessionsDir` > `~/.pi/agent/sessions`. Index sidecars go to
`initializationOptions.indexDir`, else `$XDG_CACHE_HOME/sessiontree/index` (`~/.cache/...`);
`"indexDir": false` turns them off. Sessions are kept in files under the root unless a PostgreSQL
store is named (`--store` > `$SESSIONTREE_STORE` > `initializationOptions.store`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from .errors import InvalidParams
from .store import Durability

SESSIONS_DIR_ENV: Final = "SESSIONTREE_SESSIONS_DIR"
STORE_ENV: Final = "SESSIONTREE_STORE"
DEFAULT_SESSIONS_DIR: Final = Path("~/.pi/agent/sessions")
DEFAULT_MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024  # 64 MiB: far above any real entry


@attrs.frozen
class ServerConfig:
    """What `sessiontree serve` was started with. `None` means "not given on the command line"."""

    sessions_dir: Path | None = None
    durability: Durability | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    debug: bool = False  # tracebacks in the `data` of internal errors
    record: Path | None = None  # JSONL transcript of every message in both directions
    store: str | None = None  # a PostgreSQL connection string; None: the session files


@attrs.frozen
class InitOptions:
    """The `initializationOptions` the daemon understands; unknown keys are ignored."""

    sessions_dir: str | None = None
    durability: Durability | None = None
    index_dir: str | bool | None = None  # False: no sidecars; None: the default place
    store: str | None = None


def parse_init_options(raw: Any) -> InitOptions:
    """Check `initializationOptions`, or raise InvalidParams naming the bad field."""
    if raw is None:
        return InitOptions()
    if not isinstance(raw, dict):
        raise _bad_option("", "expected an object", raw)
    sessions_dir = raw.get("sessionsDir")
    if sessions_dir is not None and (not isinstance(sessions_dir, str) or not sessions_dir):
        raise _bad_option(".sessionsDir", "expected a non-empty string", sessions_dir)
    durability = raw.get("durability")
    if durability not in (None, "os", "fsync"):
        raise _bad_option(".durability", 'expected "os" or "fsync"', durability)
    index_dir = raw.get("indexDir")
    if index_dir is not None and index_dir is not False and (not isinstance(index_dir, str) or not index_dir):
        raise _bad_option(".indexDir", "expected a non-empty string or false", index_dir)
    store = raw.get("store")
    if store is not None and (not isinstance(store, str) or not store):
        raise _bad_option(".store", "expected a non-empty string (a PostgreSQL connection string)", "…")
    return InitOptions(sessions_dir=sessions_dir, durability=durability, index_dir=index_dir, store=store)


def _bad_option(suffix: str, expected: str, value: Any) -> InvalidParams:
    field = f"initializationOptions{suffix}"
    return InvalidParams(f"invalid params for initialize: {field}: {expected}, got {value!r}", field=field)


def resolve_sessions_dir(flag: Path | None, env: Mapping[str, str], options: InitOptions) -> Path:
    """Apply the precedence flag > environment > initializationOptions > default."""
    chosen = flag or env.get(SESSIONS_DIR_ENV) or options.sessions_dir or DEFAULT_SESSIONS_DIR
    return Path(chosen).expanduser().resolve()


def resolve_store(flag: str | None, env: Mapping[str, str], options: InitOptions) -> str | None:
    """Where sessions are kept: flag > environment > initializationOptions > the files (None)."""
    return flag or env.get(STORE_ENV) or options.store or None


def resolve_durability(flag: Durability | None, options: InitOptions) -> Durability:
    """Apply the precedence flag > initializationOptions > "os"."""
    return flag or options.durability or "os"


def resolve_index_dir(env: Mapping[str, str], options: InitOptions) -> Path | None:
    """Where index sidecars go: `indexDir`, else the user's cache directory; None when turned off."""
    if options.index_dir is False:
        return None
    if isinstance(options.index_dir, str):
        return Path(options.index_dir).expanduser().resolve()
    cache = env.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(cache) / "sessiontree" / "index"
