"""Compaction and branch summaries with the client's model in the loop (`session/compact`, `session/navigate`).

The daemon prepares what pi would summarise, sends it to the client as a
`sessiontree/summarize` request, waits for the text (reporting `$/progress` when the
client gave a token, bounded by a timeout) and commits it. Cancelling works both ways:
a `$/cancelRequest` for the client's request cancels the wait and is passed on to the
client's summarising as a `$/cancelRequest` of ours; a client that answers ours with
`RequestCancelled` cancels its own request. Nothing is appended unless the text arrives.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Final

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from . import protocol
from .errors import NothingToCompact, SessionTreeError, SummarizerUnavailable, SummaryFailed
from .protocol import UNSET, SummarizeParams, SummarizeResult, converter, to_wire
from .service import SessionService

SUMMARIZE: Final = "sessiontree/summarize"
CANCEL_REQUEST: Final = "$/cancelRequest"
REQUEST_CANCELLED: Final = -32800
DEFAULT_TIMEOUT_MS: Final = 300_000


class SummaryCancelled(SessionTreeError):
    """The client cancelled the summary it was asked for: the request ends as cancelled."""

    code = REQUEST_CANCELLED
    name = "RequestCancelled"


def can_summarize(capabilities: Any) -> bool:
    """`initialize` announced `capabilities.experimental.sessiontree.summarize: true`."""
    experimental = getattr(capabilities, "experimental", None)
    ours = experimental.get("sessiontree") if isinstance(experimental, dict) else None
    return isinstance(ours, dict) and ours.get("summarize") is True


class Summarizer:
    """Asks the client for summaries on behalf of one server."""

    def __init__(self, server: LanguageServer, service: SessionService) -> None:
        self.server = server
        self.service = service

    def _require_capability(self) -> None:
        if not can_summarize(self.server.protocol.client_capabilities):
            raise SummarizerUnavailable(
                "the client did not announce capabilities.experimental.sessiontree.summarize in initialize"
            )

    async def compact(self, params: protocol.CompactParams) -> protocol.CommitCompactionResult:
        self._require_capability()
        prepare = protocol.PrepareCompactionParams(params.session_id, UNSET, params.settings, params.custom_instructions)
        prepared = self.service.prepare_compaction(prepare)
        if prepared is None:
            raise NothingToCompact("nothing to compact: the path is empty or already ends in a compaction")
        request = SummarizeParams(params.session_id, "compaction", compaction=prepared)
        answer = await self._ask(request, params.timeout_ms, params.work_done_token)
        if prepared.turn_prefix_prompt is not None and answer.turn_prefix_summary is None:
            raise SummaryFailed("the client's answer lacks turnPrefixSummary for the split turn", reason="malformed")
        commit = protocol.CommitCompactionParams(
            params.session_id, prepared.leaf_id, answer.summary, answer.turn_prefix_summary, params.settings
        )
        return self.service.commit_compaction(commit)

    async def navigate(self, params: protocol.NavigateParams) -> protocol.CommitBranchSummaryResult:
        self._require_capability()
        shared = {"context_window": params.context_window, "reserve_tokens": params.reserve_tokens}
        prepare = protocol.PrepareBranchSummaryParams(
            params.session_id, params.target_id, UNSET, **shared,
            custom_instructions=params.custom_instructions, replace_instructions=params.replace_instructions,
        )
        prepared = self.service.prepare_branch_summary(prepare)
        summary = None
        if prepared.prompt is not None:  # pi asks no model when nothing is left to summarise
            request = SummarizeParams(params.session_id, "branchSummary", branch_summary=prepared)
            summary = (await self._ask(request, params.timeout_ms, params.work_done_token)).summary
        commit = protocol.CommitBranchSummaryParams(params.session_id, params.target_id, prepared.from_id, summary, **shared)
        return self.service.commit_branch_summary(commit)

    # ----------------------------------------------------------------- the round trip

    async def _ask(self, request: SummarizeParams, timeout_ms: int | None, token: int | str | None) -> SummarizeResult:
        timeout = (DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms) / 1000
        progress = self.server.work_done_progress
        if token is not None:
            progress.begin(token, types.WorkDoneProgressBegin(title="Waiting for the client's summary", cancellable=True))
        msg_id = str(uuid.uuid4())
        future = self.server.protocol.send_request(SUMMARIZE, to_wire(request), msg_id=msg_id)
        try:
            raw = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            self._withdraw(msg_id)
            raise SummaryFailed(f"no summary from the client within {timeout_ms} ms", reason="timeout") from None
        except asyncio.CancelledError:
            self._withdraw(msg_id)
            raise
        except JsonRpcException as exc:
            raise _client_error(exc) from None
        finally:
            if token is not None:
                progress.end(token, types.WorkDoneProgressEnd())
                progress.tokens.pop(token, None)
        return _answer(raw)

    def _withdraw(self, msg_id: str) -> None:
        """Stop waiting for our request and tell the client it may stop summarising."""
        self.server.protocol._request_futures.pop(msg_id, None)
        self.server.protocol.notify(CANCEL_REQUEST, types.CancelParams(id=msg_id))


def _client_error(exc: JsonRpcException) -> SessionTreeError:
    if exc.code == REQUEST_CANCELLED:
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
