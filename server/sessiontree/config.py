"""The daemon's settings: every field has a default, so `ServerConfig()` is a working daemon.

The sessions root is resolved late, at `initialize`, because the client may name it in
`initializationOptions`; the order of precedence is `--sessions-dir` > `$SESSIONTREE_SESSIONS_DIR`
> `initializationOptions.sessionsDir` > `~/.pi/agent/sessions`. Index sidecars go to
`initializationOptions.indexDir`, else `$XDG_CACHE_HOME/sessiontree/index` (`~/.cache/...`);
`"indexDir": false` turns them off. Sessions are kept in files under the root unless a PostgreSQL
store is named (`--store` > `$SESSIONTREE_STORE` > `initializationOptions.store`).
Other agents' session folders are read beside it: `--claude-code-dir` > `$SESSIONTREE_CLAUDE_CODE_DIR`
> `initializationOptions.agents["claude-code"]` > `$CLAUDE_CONFIG_DIR/projects` (`~/.claude/projects`),
and the same for Codex (`--codex-dir`, `$SESSIONTREE_CODEX_DIR`, `$CODEX_HOME/sessions`, `~/.codex/sessions`);
`off` (or `false` in the options) leaves an agent out.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from .agents import AgentName
from .errors import InvalidParams
from .store import Durability

SESSIONS_DIR_ENV: Final = "SESSIONTREE_SESSIONS_DIR"
STORE_ENV: Final = "SESSIONTREE_STORE"
DEFAULT_SESSIONS_DIR: Final = Path("~/.pi/agent/sessions")
AGENT_DIR_ENV: Final[dict[AgentName, str]] = {
    "claude-code": "SESSIONTREE_CLAUDE_CODE_DIR",
    "codex": "SESSIONTREE_CODEX_DIR",
}
OFF: Final = "off"  # as a folder: leave that agent out
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
    agent_dirs: tuple[tuple[AgentName, str], ...] = ()  # other agents' folders given as flags (`off`: none)


@attrs.frozen
class InitOptions:
    """The `initializationOptions` the daemon understands; unknown keys are ignored."""

    sessions_dir: str | None = None
    durability: Durability | None = None
    index_dir: str | bool | None = None  # False: no sidecars; None: the default place
    store: str | None = None
    agents: dict[AgentName, str | bool] = attrs.field(factory=dict)  # a folder, or False: left out


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
    agents = _agents_option(raw.get("agents"))
    return InitOptions(sessions_dir=sessions_dir, durability=durability, index_dir=index_dir, store=store, agents=agents)


def _agents_option(raw: Any) -> dict[AgentName, str | bool]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _bad_option(".agents", "expected an object", raw)
    agents: dict[AgentName, str | bool] = {}
    for agent in AGENT_DIR_ENV:
        value = raw.get(agent)
        if value is None:
            continue
        if value is not False and (not isinstance(value, str) or not value):
            raise _bad_option(f'.agents["{agent}"]', "expected a non-empty string or false", value)
        agents[agent] = value
    return agents


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


def _default_agent_dir(agent: AgentName, env: Mapping[str, str]) -> Path:
    if agent == "claude-code":
        return Path(env.get("CLAUDE_CONFIG_DIR") or "~/.claude") / "projects"
    return Path(env.get("CODEX_HOME") or "~/.codex") / "sessions"


def resolve_agent_dirs(
    flags: tuple[tuple[AgentName, str], ...], env: Mapping[str, str], options: InitOptions
) -> dict[AgentName, Path]:
    """Each agent's folder of sessions: flag > environment > initializationOptions > the agent's own
    default; an agent given `off` (or `false`) is left out."""
    given = dict(flags)
    folders: dict[AgentName, Path] = {}
    for agent, variable in AGENT_DIR_ENV.items():
        option = options.agents.get(agent)
        chosen = given.get(agent) or env.get(variable) or option
        if chosen is False or chosen == OFF:
            continue
        path = Path(chosen) if isinstance(chosen, str) else _default_agent_dir(agent, env)
        folders[agent] = path.expanduser().resolve()
    return folders
