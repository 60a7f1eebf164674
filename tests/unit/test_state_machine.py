"""A hypothesis state machine: random sessions built through the service, checked against a model.

Rules append, branch (with and without a summary), label, name, compact, fork, reopen and crash
(a new service over the same files, without closing anything). After every step the daemon's
context, tree, labels, leaf and name must equal what pi's algorithms, applied plainly to the
acknowledged entries, give (`support.oracle`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from sessiontree import protocol as p
from sessiontree.entries import js_trim
from sessiontree.service import ServiceConfig, SessionService
from support import oracle

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
ROLES = st.sampled_from(["user", "assistant", "toolResult", "bashExecution"])


def _message(role: str, text: str) -> dict[str, Any]:
    if role == "assistant":
        return {"role": role, "content": [{"type": "text", "text": text}], "provider": "p", "model": f"m-{len(text)}",
                "usage": {"totalTokens": 1}, "stopReason": "stop", "timestamp": 1}
    if role == "toolResult":
        return {"role": role, "toolCallId": "c", "toolName": "read", "content": [{"type": "text", "text": text}],
                "isError": False, "timestamp": 1}
    if role == "bashExecution":
        return {"role": role, "command": text, "output": "", "exitCode": 0, "cancelled": False, "truncated": False,
                "timestamp": 1}
    return {"role": role, "content": text, "timestamp": 1}


class SessionModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="sessiontree-model-"))
        self.service = SessionService(ServiceConfig(self.root))
        created = self.service.create(p.CreateParams(cwd="/model"))
        self.sid, self.path = created.session_id, created.path
        self.entries: list[dict[str, Any]] = []  # every acknowledged entry, in file order
        self.leaf: str | None = None
        self.name: str | None = None

    def teardown(self) -> None:
        self.service.close_all()
        shutil.rmtree(self.root, ignore_errors=True)

    # ----------------------------------------------------------------- helpers

    def _ids(self) -> list[str]:
        return [entry["id"] for entry in self.entries]

    def _acknowledge(self, entry: dict[str, Any], result: p.AppendResult) -> None:
        self.entries.append({**entry, "id": result.id, "parentId": result.parent_id, "timestamp": result.timestamp})
        self.leaf = result.leaf_id
        assert self.leaf == result.id

    def _append(self, entry: dict[str, Any], **kw: Any) -> None:
        self._acknowledge(entry, self.service.append(p.AppendParams(self.sid, entry=entry, **kw)))

    # ----------------------------------------------------------------- rules

    @rule(role=ROLES, text=TEXT, where=st.sampled_from(["leaf", "earlier", "root"]), pick=st.integers(0, 10**6))
    def append_message(self, role: str, text: str, where: str, pick: int) -> None:
        entry = {"type": "message", "message": _message(role, text)}
        if where == "earlier" and self.entries:
            self._append(entry, parent_id=self._ids()[pick % len(self.entries)])
        elif where == "root":
            self._append(entry, parent_id=None)
        else:
            self._append(entry)

    @rule(level=st.sampled_from(["off", "low", "high"]), provider=st.sampled_from(["a", "b"]))
    def change_settings(self, level: str, provider: str) -> None:
        self._append({"type": "thinking_level_change", "thinkingLevel": level})
        self._append({"type": "model_change", "provider": provider, "modelId": level})

    @rule(text=TEXT, display=st.booleans())
    def custom_entries(self, text: str, display: bool) -> None:
        self._append({"type": "custom_message", "customType": "ext", "content": text, "display": display})
        self._append({"type": "custom", "customType": "state", "data": {"t": text}})

    @precondition(lambda self: self.entries)
    @rule(pick=st.integers(0, 10**6), label=st.one_of(st.none(), st.just(""), TEXT))
    def label(self, pick: int, label: str | None) -> None:
        target = self._ids()[pick % len(self.entries)]
        result = self.service.label(p.LabelParams(self.sid, target, label))
        entry: dict[str, Any] = {"type": "label", "targetId": target}
        if label is not None:
            entry["label"] = label
        self._acknowledge(entry, result)

    @rule(name=TEXT)
    def set_name(self, name: str) -> None:
        result = self.service.set_name(p.SetNameParams(self.sid, name))
        folded = js_trim(re.sub(r"[\r\n]+", " ", name))  # pi 1.6's appendSessionInfo folds line breaks
        self._acknowledge({"type": "session_info", "name": folded}, result)
        self.name = folded or None

    @rule(pick=st.integers(0, 10**6), reset=st.booleans(), summary=st.one_of(st.none(), TEXT))
    def branch(self, pick: int, reset: bool, summary: str | None) -> None:
        target = None if reset or not self.entries else self._ids()[pick % len(self.entries)]
        result = self.service.branch(p.BranchParams(self.sid, target, summary=summary))
        if summary is None:
            self.leaf = target
        else:
            # pi 1.6: fromId is the leaf whose path was left (0.73.1 wrote the target)
            entry = {"type": "branch_summary", "fromId": self.leaf or "root", "summary": summary}
            self.entries.append({**entry, "id": result.summary_entry_id, "parentId": target,
                                 "timestamp": self._timestamp_of(result.summary_entry_id)})
            self.leaf = result.leaf_id
        assert result.leaf_id == self.leaf

    def _timestamp_of(self, entry_id: str | None) -> str:
        found = self.service.entries(p.EntriesParams(self.sid, ids=[entry_id] if entry_id else []))
        return found.entries[0]["timestamp"]

    @precondition(lambda self: self.leaf is not None)
    @rule(pick=st.integers(0, 10**6), summary=TEXT)
    def compact(self, pick: int, summary: str) -> None:
        path = [e["id"] for e in oracle._path(self.entries, self.leaf)]
        entry = {"type": "compaction", "summary": summary, "firstKeptEntryId": path[pick % len(path)], "tokensBefore": 7}
        self._append(entry)

    @precondition(lambda self: self.entries)
    @rule(pick=st.integers(0, 10**6))
    def fork(self, pick: int) -> None:
        target = self._ids()[pick % len(self.entries)]
        forked = self.service.fork(p.ForkParams(self.sid, entry_id=target))
        context = self.service.context(p.ContextParams(forked.session_id))
        expected = oracle.build_context(self.entries, target)
        assert (context.messages, context.thinking_level, context.model) == (
            expected["messages"], expected["thinkingLevel"], expected["model"])
        self.service.close(p.SessionParams(forked.session_id))

    @rule(crash=st.booleans())
    def reopen(self, crash: bool) -> None:
        if crash:  # the old service is abandoned as a killed daemon would leave it
            self.service = SessionService(ServiceConfig(self.root))
        else:
            self.service.close(p.SessionParams(self.sid))
        opened = self.service.open(p.OpenParams(self.path))
        assert opened.warnings == []
        self.leaf = self.entries[-1]["id"] if self.entries else None  # pi: the last entry

    # ----------------------------------------------------------------- invariants

    @invariant()
    def context_is_pis(self) -> None:
        context = self.service.context(p.ContextParams(self.sid))
        expected = oracle.build_context(self.entries, self.leaf)
        assert context.messages == expected["messages"]
        assert (context.thinking_level, context.model) == (expected["thinkingLevel"], expected["model"])

    @invariant()
    def tree_is_pis(self) -> None:
        tree = self.service.tree(p.TreeParams(self.sid))
        assert [(n.id, n.depth) for n in tree.nodes] == oracle.tree_order(self.entries)
        assert {n.id: n.label for n in tree.nodes if n.label} == oracle.labels(self.entries)
        assert tree.leaf_id == self.leaf

    @invariant()
    def file_holds_exactly_the_acknowledged_entries(self) -> None:
        found = self.service.entries(p.EntriesParams(self.sid, since=None)).entries
        assert found == self.entries
        assert self.service.info(p.SessionParams(self.sid)).name == self.name


TestSessionModel = SessionModel.TestCase
TestSessionModel.settings = settings(
    max_examples=40, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
