"""The values compaction and branch summaries are configured by and produce, as pi has them.

The projections compute them (tree/tokens, tree/compaction, tree/summary_text) and the wire
carries them unchanged, so they live here, below both.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define
class CompactionSettings:
    """pi's compaction settings (its defaults)."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


@attrs.define
class CompactionAdvice:
    """Whether pi would compact the context now, and the figures it decides on."""

    context_tokens: float | int
    context_window: int
    threshold: int
    should_compact: bool


@attrs.define
class SummaryPrompt:
    """One model call as pi 1.6.0 makes it: a system prompt and one user message of text.

    `messages` is the same request as pi-ai's normalizeContext gives it (a leading system
    message, then the user message); `system_prompt` and `prompt` are its two texts, for
    clients that send a system field. pi sets no output cap (the model's own limit applies)
    and passes the session's thinking level as the reasoning effort of a reasoning model.
    """

    system_prompt: str
    prompt: str
    conversation_text: str
    messages: list[dict[str, Any]]
    thinking_level: str | None = None


@attrs.define
class FileOperations:
    read: list[Any]
    written: list[Any]
    edited: list[Any]
