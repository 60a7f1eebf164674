"""Compaction and branch summaries with the client's model in the loop (`session/compact`, `session/navigate`).

The daemon prepares what pi would summarise, sends it to the client as a
`sessiontree/summarize` request, waits for the text (reporting `$/progress` when the
client gave a token, bounded by a timeout) and commits it. Cancelling works both ways:
a `$/cancelRequest` for the client's request cancels the wait and is passed on to the
client's summarising as a `$/cancelRequest` of ours; a client that answers ours with
`RequestCancelled` cancels its own request. Nothing is appended unless the text arrives.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

from . import protocol
from .errors import NothingToCompact, SessionTreeError, SummarizerUnavailable, SummaryFailed
from .protocol import UNSET, SummarizeParams, SummarizeResult, converter, to_wire
from .rpc.codes import ErrorCode
from .rpc.endpoint import ResponseError
from .rpc.lsp import LspServer
from .service import SessionService

SUMMARIZE: Final = "sessiontree/summarize"
DEFAULT_TIMEOUT_MS: Final = 300_000
T = TypeVar("T")
# Runs a service call in a session's lane (server.py, lanes.py), when the store's calls may wait.
InLane = Callable[[str | None, Callable[[], Any]], Awaitable[Any]]


class SummaryCancelled(SessionTreeError):
    """The client cancelled the summary it was asked for: the request ends as cancelled."""

    code = ErrorCode.REQUEST_CANCELLED
    name = "RequestCancelled"


def can_summarize(capabilities: dict[str, Any]) -> bool:
    """`initialize` announced `capabilities.experimental.sessiontree.summarize: true`."""
    experimental = capabilities.get("experimental")
    ours = experimental.get("sessiontree") if isinstance(experimental, dict) else None
    return isinstance(ours, dict) and ours.get("summarize") is True


class Summarizer:
    """Asks the client for summaries on behalf of one daemon."""

    def __init__(
        self, peer: LspServer, service: SessionService, client_capabilities: dict[str, Any], in_lane: InLane | None = None
    ) -> None:
        self.peer = peer
        self.service = service
        self.client_capabilities = client_capabilities
        self.in_lane = in_lane

    async def _call(self, session_id: str, call: Callable[[], T]) -> T:
        return call() if self.in_lane is None else await self.in_lane(session_id, call)

    def _require_capability(self) -> None:
        if not can_summarize(self.client_capabilities):
            raise SummarizerUnavailable(
                "the client did not announce capabilities.experimental.sessiontree.summarize in initialize"
            )

    async def compact(self, params: protocol.CompactParams) -> protocol.CommitCompactionResult:
        self._require_capability()
        prepare = protocol.PrepareCompactionParams(params.session_id, UNSET, params.settings, params.custom_instructions)
        prepared = await self._call(params.session_id, lambda: self.service.prepare_compaction(prepare))
        if prepared is None:
            raise NothingToCompact(
                "nothing to compact: the path is empty, ends in a compaction, or has no message before the kept part"
            )
        request = SummarizeParams(params.session_id, "compaction", compaction=prepared)
        answer = await self._ask(request, params.timeout_ms, params.work_done_token)
        if prepared.turn_prefix_prompt is not None and answer.turn_prefix_summary is None:
            raise SummaryFailed("the client's answer lacks turnPrefixSummary for the split turn", reason="malformed")
        commit = protocol.CommitCompactionParams(
            params.session_id, prepared.leaf_id, answer.summary, answer.turn_prefix_summary, params.settings,
            usage=answer.usage,
        )
        return await self._call(params.session_id, lambda: self.service.commit_compaction(commit))

    async def navigate(self, params: protocol.NavigateParams) -> protocol.CommitBranchSummaryResult:
        self._require_capability()
        window, reserve = params.context_window, params.reserve_tokens
        prepare = protocol.PrepareBranchSummaryParams(
            params.session_id, params.target_id, UNSET, window, reserve,
            custom_instructions=params.custom_instructions, replace_instructions=params.replace_instructions,
        )
        prepared = await self._call(params.session_id, lambda: self.service.prepare_branch_summary(prepare))
        summary = usage = None
        if prepared.prompt is not None:  # pi asks no model when nothing is left to summarise
            request = SummarizeParams(params.session_id, "branchSummary", branch_summary=prepared)
            answer = await self._ask(request, params.timeout_ms, params.work_done_token)
            summary, usage = answer.summary, answer.usage
        commit = protocol.CommitBranchSummaryParams(
            params.session_id, params.target_id, prepared.from_id, summary, context_window=window, reserve_tokens=reserve,
            usage=usage,
        )
        return await self._call(params.session_id, lambda: self.service.commit_branch_summary(commit))

    # ----------------------------------------------------------------- the round trip

    async def _ask(self, request: SummarizeParams, timeout_ms: int | None, token: int | str | None) -> SummarizeResult:
        timeout = (DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms) / 1000
        progress = self.peer.progress(token) if token is not None else None
        if progress is not None:
            progress.begin("Waiting for the client's summary", cancellable=True)
        try:
            # A timeout or a cancelled request withdraws ours: the client is sent $/cancelRequest.
            raw = await self.peer.call(SUMMARIZE, to_wire(request), timeout)
        except TimeoutError:
            raise SummaryFailed(f"no summary from the client within {timeout_ms} ms", reason="timeout") from None
        except ResponseError as exc:
            raise _client_error(exc) from None
        finally:
            if progress is not None:
                progress.end()
        return _answer(raw)


def _client_error(exc: ResponseError) -> SessionTreeError:
    if exc.code == ErrorCode.REQUEST_CANCELLED:
        return SummaryCancelled("the client cancelled the summary")
    error = {"code": exc.code, "message": exc.message}
    return SummaryFailed(f"the client could not summarise: {exc.message}", reason="error", clientError=error)


def _answer(raw: Any) -> SummarizeResult:
    try:
        if not isinstance(raw, dict):
            raise ValueError("the result is not an object")
        return converter.structure(raw, SummarizeResult)
    except Exception as exc:  # cattrs reports every field problem in one group
        raise SummaryFailed(f"the client's summary is malformed: {exc}", reason="malformed") from None
