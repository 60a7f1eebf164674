"""The agents whose sessions the daemon can read: one translator per agent.

An agent missing from the table is simply absent: its folder is not listed, its paths stay outside
what the daemon opens, and `import` refuses them. Adding an agent is one line here.
"""

from __future__ import annotations

from . import AgentName, Translator
from .claude_code import ClaudeCodeTranslator
from .codex import CodexTranslator
from .codex_files import SESSION_INDEX

TRANSLATORS: dict[AgentName, Translator] = {"claude-code": ClaudeCodeTranslator(), "codex": CodexTranslator()}
# Files beside an agent's folder (not in it) that its translation reads: the only ones outside it.
NEIGHBOURS: dict[AgentName, tuple[str, ...]] = {"codex": (SESSION_INDEX,)}


def translator(agent: AgentName) -> Translator | None:
    """The agent's translator, or None when the daemon cannot read that agent's files."""
    return TRANSLATORS.get(agent)
