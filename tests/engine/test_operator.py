"""engine.operator (issue 19 §5): when the selection counts as made, which human gates a
skip or a forced move would walk around, and how a confirmation reply is read."""

from __future__ import annotations

from engine.graph.compiler import shipped_graph
from engine.operator import confirm_ids, force_passes, guarded_skips, request_marker, selection_made
from engine.refs import WorkItemRef
from engine.state import ItemState, NodeRecord

GRAPH = shipped_graph()
REF = WorkItemRef("acme", "widgets", 7)


def _state(current: str, passed: dict[str, str] | None = None) -> ItemState:
    state = ItemState(ref=REF, loop=GRAPH.name)
    state.current_node = current
    state.nodes[current] = NodeRecord(entered_at="2026-03-01T11:00:00Z")
    for node_id, outcome in (passed or {}).items():
        state.nodes[node_id] = NodeRecord(entered_at="2026-03-01T10:00:00Z",
                                          exited_at="2026-03-01T10:30:00Z", outcome=outcome)
    return state


def test_the_selection_is_made_once_the_walk_left_it_and_stays_made() -> None:
    assert not selection_made(GRAPH, ItemState(ref=REF, loop=GRAPH.name))  # not started
    assert not selection_made(GRAPH, _state("phase-selection"))
    assert selection_made(GRAPH, _state("brainstorming", {"phase-selection": "selected"}))
    back = _state("phase-selection", {"brainstorming": "pass"})  # forced back to it
    assert selection_made(GRAPH, back)


def test_only_human_nodes_are_guarded_and_only_after_the_selection() -> None:
    nodes = {"design": "design", "spec-quiz": "explainer", "code-quiz": "explainer"}
    before = _state("phase-selection")
    assert guarded_skips(GRAPH, before, nodes) == {}
    after = _state("brainstorming", {"phase-selection": "selected"})
    assert guarded_skips(GRAPH, after, nodes) == {"spec-quiz": "explainer",
                                                  "code-quiz": "explainer"}


def test_a_forced_move_names_every_unpassed_human_gate_before_its_target() -> None:
    state = _state("implementation", {"phase-selection": "selected",
                                      "requirements-approval": "approved",
                                      "design-approval": "changes-requested",
                                      "spec-quiz": "pass"})
    assert force_passes(GRAPH, state, "complete") == ["design-approval", "code-quiz",
                                                      "human-approval"]
    assert force_passes(GRAPH, state, "complete", ["code-quiz"]) == ["design-approval",
                                                                     "human-approval"]
    assert force_passes(GRAPH, state, "escalated") == []  # giving up passes nothing
    rework = _state("human-approval", {"phase-selection": "selected",
                                       "requirements-approval": "approved",
                                       "design-approval": "approved", "spec-quiz": "pass"})
    assert force_passes(GRAPH, rework, "implementation") == []
    assert force_passes(GRAPH, _state("phase-selection"), "complete") == []  # before it


def test_confirm_lines_are_read_at_line_start_and_never_quoted() -> None:
    body = ("Looks fine.\nthe-loop confirm 3F9A1C2E\n  The-Loop  confirm `0badc0de`\n"
            "> the-loop confirm 11111111\nplease the-loop confirm 22222222\n"
            "the-loop confirm 3f9a1c2e")
    assert confirm_ids(body) == ["3f9a1c2e", "0badc0de"]
    assert confirm_ids(None) == [] and confirm_ids("the-loop confirm 123") == []
    # Shown as code, fenced or indented, it confirms nothing either (a fresh-eyes trial).
    assert confirm_ids("```\nthe-loop confirm ba0a5605\n```\nNo, do not do this.") == []
    assert confirm_ids("~~~\nthe-loop confirm ba0a5605\n~~~") == []
    assert confirm_ids("Example:\n\n    the-loop confirm ba0a5605\n") == []
    assert confirm_ids("```\nx\n```\nthe-loop confirm ba0a5605") == ["ba0a5605"]
    assert request_marker("3f9a1c2e") == "<!-- the-loop:operator-request 3f9a1c2e -->"
