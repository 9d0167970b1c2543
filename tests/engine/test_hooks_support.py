"""A harness for calling hooks directly, and the tests of the in-memory tracker it uses.

Other ``test_hooks_*`` modules import :class:`Harness` from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.effects import Effect, EffectRow, Notify
from engine.graph.compiler import compile_graph, shipped_graph
from engine.graph.model import Graph, HookRef
from engine.hooks.registry import REGISTRY, HookContext, HookResult
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.perform import DONE_OUTCOME, apply_result, carry_out, notice_data
from engine.ports import Ports, TrackerError
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.state import ItemState, NodeRecord

REF = WorkItemRef("acme", "widgets", 7)
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def as_json_map(records: Mapping[str, Any]) -> dict[str, Any]:
    """``{node: record.to_json()}`` of a hook's ``skips``/``optIns`` (record types)."""
    return {k: v.to_json() for k, v in records.items()}


class FixedClock:
    """A clock stuck at :data:`NOW`."""

    def now(self) -> datetime:
        return NOW


class RecordingNotifier:
    """Records ``(ref, event, data)``; raises while ``fail`` is set."""

    def __init__(self) -> None:
        self.sent: list[tuple[WorkItemRef, str, dict[str, Any]]] = []
        self.fail = False

    def send(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        if self.fail:
            raise RuntimeError("notifier down")
        self.sent.append((ref, event, dict(data)))

    def events(self) -> list[str]:
        return [event for _, event, _ in self.sent]


@dataclass
class Harness:
    """Ports, settings and state for one work item; runs hooks like the runtime does."""

    graph: Graph = field(default_factory=shipped_graph)
    tracker: MemoryTracker = field(default_factory=MemoryTracker)
    artifacts: MemoryArtifactStore = field(default_factory=MemoryArtifactStore)
    notifier: RecordingNotifier = field(default_factory=RecordingNotifier)
    settings: EngineSettings = field(
        default_factory=lambda: EngineSettings(authorized_users=("alice", "@Bob"))
    )
    ref: WorkItemRef = REF
    state: ItemState = field(default_factory=lambda: ItemState(ref=REF, loop="pdlc-work-item-loop"))
    log: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: Effects a hook emitted and the harness has not carried out yet.
    queued: list[EffectRow] = field(default_factory=list)
    #: Every effect carried out, in order, with its outcome kind.
    performed: list[tuple[Effect, str]] = field(default_factory=list)

    def enter(self, node_id: str, at: str = "2026-03-01T11:00:00Z") -> None:
        """Mark ``node_id`` entered (what the runtime records before the entry chain)."""
        self.state.current_node = node_id
        self.state.nodes[node_id] = NodeRecord(entered_at=at)

    def hook_ref(self, node_id: str, name: str, chain: str) -> HookRef:
        """The node's chain entry for hook ``name`` (its ``with:`` params)."""
        node = self.graph.node(node_id)
        refs = [h for h in getattr(node, chain) if h.name == name]
        return refs[0] if refs else HookRef(name)

    def ctx(
        self,
        node_id: str,
        name: str,
        *,
        chain: str = "exit",
        event: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> HookContext:
        """A context for hook ``name`` at ``node_id`` (params from the graph unless given)."""
        node = self.graph.node(node_id)
        chosen = params if params is not None else self.hook_ref(node_id, name, chain).params
        return HookContext(
            ref=self.ref,
            graph=self.graph,
            node=node,
            params=chosen,
            state=self.state,
            event=event or {},
            ports=Ports(self.tracker, self.artifacts, self.notifier, FixedClock()),
            settings=self.settings,
            chain=chain,
            log=lambda kind, data: self.log.append((kind, dict(data))),
            emit=self._emit,
        )

    def _emit(self, effect: Effect) -> str:
        key = f"k{len(self.performed) + len(self.queued) + 1}"
        self.queued.append(EffectRow(len(self.performed) + len(self.queued) + 1, key,
                                     self.ref, effect))
        return key

    def perform(self) -> None:
        """Carry out the queued effects in order, as a performer does after commit, and
        record their results in the state's surface."""
        ports = Ports(self.tracker, self.artifacts, self.notifier, FixedClock())
        while self.queued:
            row = self.queued.pop(0)
            outcome = carry_out(row, ports, self.settings)
            apply_result(self.state.surface, row, outcome)
            if outcome.kind == DONE_OUTCOME and isinstance(row.effect, Notify):
                self.notifier.send(row.ref, row.effect.event,
                                   notice_data(row.effect, self.state.surface))
            self.performed.append((row.effect, outcome.kind))

    def run(self, node_id: str, name: str, **kwargs: Any) -> HookResult:
        """Run hook ``name``, merge its ``surface`` data into the state (as the runtime
        does right after each hook), then carry out the effects it emitted."""
        result = REGISTRY.get(name).fn(self.ctx(node_id, name, **kwargs))
        surface = result.data.get("surface")
        if isinstance(surface, Mapping):
            self.state.surface.update(surface)
        self.perform()  # after the "commit": what the hook emitted happens now
        return result

    def kinds(self) -> list[str]:
        """Logged event kinds, in order."""
        return [kind for kind, _ in self.log]


def mini_graph(**overrides: Any) -> Graph:
    """A small compiled graph: selection → a (skippable) → b (opt-in) → gate → done."""
    doc: dict[str, Any] = {
        "version": 1,
        "name": "mini",
        "start": "phase-selection",
        "skipSets": {},
        "nodes": [
            {
                "id": "phase-selection",
                "phase": "selection",
                "actor": "human",
                "required": True,
                "entry": ["post-phase-selection"],
                "exit": ["classify-phase-selection"],
            },
            {"id": "a", "phase": "alpha", "skippable": True, "produces": "a.md"},
            {"id": "b", "optIn": True, "description": "an extra look"},
            {"id": "gate", "actor": "human", "required": True, "exit": ["classify-feedback"]},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        "edges": [
            {"from": "phase-selection", "to": "a", "on": "selected"},
            {"from": "a", "to": "b", "on": "pass"},
            {"from": "a", "to": "b", "on": "skipped"},
            {"from": "b", "to": "gate", "on": "pass"},
            {"from": "b", "to": "gate", "on": "skipped"},
            {"from": "gate", "to": "done", "on": "approved"},
        ],
    }
    doc.update(overrides)
    return compile_graph(doc)


# -- MemoryTracker ------------------------------------------------------------------------
def test_memory_tracker_records_edits_oldest_first_with_latest_editor() -> None:
    tracker = MemoryTracker()
    comment = tracker.add_comment(REF, "hello")
    tracker.edit_comment(comment.id, "v2", "mallory", at="2026-01-02T00:00:00Z")
    tracker.edit_comment(comment.id, "v1", "alice", at="2026-01-01T12:00:00Z")
    edits = tracker.comment_edits([comment.id, 999])[comment.id]
    assert [e.editor for e in edits.edits] == ["alice", "mallory"]
    assert edits.editor == "mallory"
    assert edits.last_edited_at == "2026-01-02T00:00:00Z"
    assert edits.body == "v1"  # the body is the last one written
    assert edits.author == "loopgate-bot"
    assert 999 not in tracker.comment_edits([999])


def test_memory_tracker_outage_switches_raise_tracker_error() -> None:
    tracker = MemoryTracker()
    tracker.fail_next = 1
    with pytest.raises(TrackerError):
        tracker.list_comments(REF)
    assert tracker.list_comments(REF) == []
    tracker.down = True
    with pytest.raises(TrackerError):
        tracker.add_label(REF, "x")
    tracker.down = False
    tracker.failing = {"comment_edits"}
    with pytest.raises(TrackerError):
        tracker.comment_edits([1])
    assert tracker.labels(REF) == []


def test_memory_tracker_labels_prs_and_issue_info() -> None:
    tracker = MemoryTracker()
    tracker.add_label(REF, "bug")
    tracker.add_label(REF, "bug")
    tracker.remove_label(REF, "absent")
    assert tracker.labels(REF) == ["bug"]
    pr = tracker.add_pull_request(REF, 12, "feature/x")
    assert tracker.delivering_pull_requests(REF) == [pr]
    assert tracker.issue_info(REF).url == "https://github.com/acme/widgets/issues/7"
    other = tracker.add_comment_as(WorkItemRef("acme", "widgets", 12), "bob", "on the PR")
    assert other.issue_number == 12
    assert other.url.endswith(f"/issues/12#issuecomment-{other.id}")
