"""The shipped graph ``pdlc-work-item-loop`` (issue #2 §3; explainer design C1; opt-in design)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from engine.graph import compiler
from engine.graph.compiler import compile_file, shipped_graph, shipped_graph_path
from engine.graph.model import Graph, Node
from engine.hooks.registry import REGISTRY, HookRegistry, HookResult, HookSpec

#: The hook contract the shipped graph is written against: name -> accepted `with:` keys.
HOOK_CONTRACT: dict[str, tuple[str, ...]] = {
    "set-phase-label": (),
    "log-entry": (),
    "deliver-assignment": (),
    "request-review": (),
    "post-phase-selection": (),
    "classify-phase-selection": (),
    "classify-feedback": (),
    "record-feedback": (),
    "notify": ("event",),
    "validate-artifacts": ("validates", "sections", "locked", "checkmarks"),
    "post-quiz-attestation": ("node", "record", "on", "digest"),
    "quiz-attested": ("digest",),
}

NODE_ORDER = [
    "phase-selection", "brainstorming", "requirements-definition", "requirements-approval",
    "design", "design-critic-review", "test-planning", "design-approval", "spec-explainer",
    "spec-quiz", "tasks-breakdown", "implementation", "verification", "self-review",
    "critic-review", "security-review", "code-explainer", "evidence", "capability-docs",
    "reviewer-briefing", "code-quiz", "human-approval", "complete", "escalated",
]
EXPLAINER = ["spec-explainer", "spec-quiz", "code-explainer", "code-quiz"]
SPEC_DIGEST = ("requirements.md|bugfix.md", "design.md", "testing-plan.md")
DCR_DESCRIPTION = (
    "a different model reviews the locked design.md against the requirements, before the "
    "testing plan and task DAG are derived from it"
)


def _noop(ctx: Any) -> HookResult:
    return HookResult.passed()


@pytest.fixture(scope="module")
def graph() -> Graph:
    """The shipped file compiled against the hook contract (independent of engine.hooks)."""
    registry = HookRegistry()
    for name, params in HOOK_CONTRACT.items():
        registry.register(name, _noop, params)
    return compile_file(shipped_graph_path(), registry)


@pytest.fixture
def complete_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process-wide REGISTRY after ``import engine.hooks``; a contract hook not written
    yet is stood in for by a no-op (removed again afterwards), and the cache is cleared."""
    import engine.hooks  # noqa: F401

    for name, params in HOOK_CONTRACT.items():
        if name not in REGISTRY:
            monkeypatch.setitem(REGISTRY._specs, name, HookSpec(name, _noop, frozenset(params)))
    shipped_graph.cache_clear()
    yield
    shipped_graph.cache_clear()


def _hooks(chain: tuple[Any, ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(h.name, dict(h.params)) for h in chain]


def _forward(graph: Graph, node: Node) -> str:
    edge = graph.route(node.id, "pass") or graph.route(node.id, "approved")
    assert edge is not None, node.id
    return edge.target


# -- shape -----------------------------------------------------------------------------
def test_nodes_are_declared_in_the_issue_order(graph: Graph) -> None:
    assert [n.id for n in graph.ordered()] == NODE_ORDER
    assert (graph.name, graph.version, graph.start) == ("pdlc-work-item-loop", 1, "phase-selection")
    assert graph.warnings == ()


def test_only_phase_selection_and_human_approval_are_required(graph: Graph) -> None:
    assert [n.id for n in graph.nodes if n.required] == ["phase-selection", "human-approval"]
    assert [n.id for n in graph.protected()] == ["phase-selection", "human-approval"]
    for node in graph.nodes:
        if not node.required and not node.terminal:
            assert node.skippable, node.id


def test_terminal_nodes_are_complete_and_a_human_escalated(graph: Graph) -> None:
    assert [n.id for n in graph.nodes if n.terminal] == ["complete", "escalated"]
    assert graph.node("escalated").actor == "human"
    assert not graph.node("complete").skippable and not graph.node("escalated").skippable


def test_skip_sets(graph: Graph) -> None:
    assert dict(graph.skip_sets) == {
        "spec-chain": ("brainstorming", "requirements-definition", "requirements-approval",
                       "design", "test-planning", "design-approval", "tasks-breakdown"),
        "review-chain": ("self-review", "critic-review", "security-review", "evidence",
                         "capability-docs", "reviewer-briefing"),
        "explainer": tuple(EXPLAINER),
    }


def test_every_skippable_nodes_skipped_edge_goes_where_its_pass_edge_goes(graph: Graph) -> None:
    for node in graph.nodes:
        if node.skippable:
            skipped = graph.route(node.id, "skipped")
            assert skipped is not None, node.id
            assert skipped.target == _forward(graph, node), node.id


def test_walking_forward_visits_every_non_terminal_node_in_order(graph: Graph) -> None:
    walk, current = [], graph.route("phase-selection", "selected").target
    while not graph.node(current).terminal:
        walk.append(current)
        current = _forward(graph, graph.node(current))
    assert ["phase-selection", *walk, current] == NODE_ORDER[:-1]


# -- gates -----------------------------------------------------------------------------
def test_phase_selection_chains_and_route(graph: Graph) -> None:
    node = graph.node("phase-selection")
    assert (node.actor, node.phase) == ("human", "phase-selection")
    assert [h.name for h in node.entry] == [
        "set-phase-label", "log-entry", "post-phase-selection", "deliver-assignment"
    ]
    assert [h.name for h in node.exit] == ["classify-phase-selection"]
    assert [(e.target, e.outcome) for e in graph.edges if e.source == node.id] == [
        ("brainstorming", "selected")
    ]


@pytest.mark.parametrize(
    ("gate", "forward", "author"),
    [
        ("requirements-approval", "design", "requirements-definition"),
        ("design-approval", "spec-explainer", "design"),
        ("human-approval", "complete", "implementation"),
    ],
)
def test_human_gates_route_approvals_forward_and_changes_back(
    graph: Graph, gate: str, forward: str, author: str
) -> None:
    node = graph.node(gate)
    assert (node.actor, node.session) == ("human", "inherit")
    assert graph.route(gate, "approved").target == forward
    assert graph.route(gate, "approved-with-comments").target == forward
    assert graph.route(gate, "changes-requested").target == author
    assert [h.name for h in node.exit] == ["classify-feedback", "record-feedback"]
    names = [h.name for h in node.entry]
    assert names[0] == "log-entry" and names[-1] == "deliver-assignment"
    assert "request-review" in names


def test_agent_nodes_deliver_assignments_and_gate_on_artifacts(graph: Graph) -> None:
    for node in graph.nodes:
        if node.actor != "agent":
            continue
        entry = [h.name for h in node.entry]
        assert entry[-1] == "deliver-assignment", node.id
        assert ("set-phase-label" in entry) == bool(node.phase), node.id
        assert node.exit and all(h.name == "validate-artifacts" for h in node.exit), node.id


def test_authored_artifacts_and_their_checks(graph: Graph) -> None:
    produces = {n.id: n.produces for n in graph.nodes if n.produces}
    assert produces == {
        "brainstorming": (("brainstorm.md",),),
        "requirements-definition": (("requirements.md", "bugfix.md"),),
        "design": (("design.md",),),
        "test-planning": (("testing-plan.md",),),
        "tasks-breakdown": (("tasks.md",),),
        "reviewer-briefing": (("pr-briefing.md",),),
    }
    for node_id in ("requirements-definition", "design", "test-planning", "tasks-breakdown"):
        assert graph.node(node_id).exit[0].params["locked"] is True, node_id
    assert _hooks(graph.node("implementation").exit) == [
        ("validate-artifacts", {"validates": "tasks.md", "checkmarks": "complete"}),
        ("validate-artifacts", {"validates": "execution-log.md", "sections": ("Implementation",)}),
    ]


@pytest.mark.parametrize(
    ("node_id", "section"),
    [
        ("verification", "Verification"),
        ("self-review", "Self review"),
        ("critic-review", "Critic review"),
        ("security-review", "Security review"),
        ("evidence", "Evidence"),
        ("capability-docs", "Capability docs"),
        ("design-critic-review", "Design critic review"),
    ],
)
def test_review_nodes_each_own_a_section_of_the_execution_log(
    graph: Graph, node_id: str, section: str
) -> None:
    assert _hooks(graph.node(node_id).exit) == [
        ("validate-artifacts", {"validates": "execution-log.md", "sections": (section,)})
    ]


# -- phases ----------------------------------------------------------------------------
def _label_while_at(graph: Graph, node_id: str) -> str:
    """The loop:<phase> label an item walked forward carries while it is at ``node_id``."""
    label, current = "", graph.start
    while True:
        label = graph.node(current).phase or label
        if current == node_id:
            return label
        edge = graph.route(current, "selected") or graph.route(current, "pass") or graph.route(
            current, "approved"
        )
        current = edge.target


def test_label_reads_test_planning_at_the_spec_quiz_and_needs_review_at_the_code_quiz(
    graph: Graph,
) -> None:
    assert _label_while_at(graph, "spec-quiz") == "test-planning"
    assert _label_while_at(graph, "code-quiz") == "needs-review"
    phaseless = [n.id for n in graph.nodes if not n.phase]
    assert phaseless == [
        "requirements-approval", "design-critic-review", "design-approval", "spec-explainer",
        "spec-quiz", "critic-review", "security-review", "code-explainer", "code-quiz",
        "human-approval",
    ]


# -- the explainer nodes (design C1) ---------------------------------------------------
def test_spec_explainer_per_c1(graph: Graph) -> None:
    node = graph.node("spec-explainer")
    assert (node.actor, node.session, node.command, node.phase) == ("agent", "new", "explain", "")
    assert _hooks(node.entry) == [("deliver-assignment", {})]
    assert _hooks(node.exit) == [
        ("validate-artifacts",
         {"validates": "evidence/spec-explainer.md", "sections": ("Spec explainer",)})
    ]
    assert graph.route("spec-explainer", "pass").target == "spec-quiz"
    assert graph.route("spec-explainer", "skipped").target == "spec-quiz"


def test_spec_quiz_per_c1(graph: Graph) -> None:
    node = graph.node("spec-quiz")
    assert (node.actor, node.session, node.phase) == ("human", "inherit", "")
    assert _hooks(node.entry) == [
        ("post-quiz-attestation", {"node": "spec-quiz", "record": "evidence/spec-explainer.md",
                                   "on": "ticket", "digest": SPEC_DIGEST}),
        ("notify", {"event": "quiz-pending"}),
    ]
    assert _hooks(node.exit) == [("quiz-attested", {"digest": SPEC_DIGEST})]
    assert graph.route("spec-quiz", "pass").target == "tasks-breakdown"
    assert graph.route("spec-quiz", "skipped").target == "tasks-breakdown"
    assert graph.route("spec-quiz", "stale").target == "spec-explainer"


def test_code_explainer_per_c1(graph: Graph) -> None:
    node = graph.node("code-explainer")
    assert (node.actor, node.session, node.command, node.phase) == ("agent", "new", "explain", "")
    assert _hooks(node.entry) == [("deliver-assignment", {})]
    assert _hooks(node.exit) == [
        ("validate-artifacts", {"validates": "evidence/explainer.md", "sections": ("Explainer",)})
    ]
    assert graph.route("code-explainer", "pass").target == "evidence"
    assert graph.route("code-explainer", "skipped").target == "evidence"


def test_code_quiz_per_c1(graph: Graph) -> None:
    node = graph.node("code-quiz")
    assert (node.actor, node.session, node.phase) == ("human", "inherit", "")
    assert _hooks(node.entry) == [
        ("post-quiz-attestation", {"node": "code-quiz", "record": "evidence/explainer.md",
                                   "on": "pull-requests", "digest": ("@pull-request-heads",)}),
        ("notify", {"event": "quiz-pending"}),
    ]
    # Issue 19 §3: the quiz covers the delivering pull requests' heads; a push is stale.
    assert _hooks(node.exit) == [("quiz-attested", {"digest": ("@pull-request-heads",)})]
    assert graph.route("code-quiz", "stale").target == "code-explainer"
    assert graph.route("code-quiz", "pass").target == "human-approval"
    assert graph.route("code-quiz", "skipped").target == "human-approval"


def test_explainer_nodes_are_skippable_and_not_opt_in(graph: Graph) -> None:
    for node_id in EXPLAINER:
        node = graph.node(node_id)
        assert node.skippable and not node.opt_in and not node.required, node_id


@pytest.mark.parametrize("outcome", ["pass", "skipped"])
def test_old_edges_now_run_through_the_explainer_nodes(graph: Graph, outcome: str) -> None:
    gate_out = "approved" if outcome == "pass" else "skipped"
    assert graph.route("design-approval", gate_out).target == "spec-explainer"
    assert graph.route("spec-explainer", outcome).target == "spec-quiz"
    assert graph.route("spec-quiz", outcome).target == "tasks-breakdown"
    assert graph.route("security-review", outcome).target == "code-explainer"
    assert graph.route("code-explainer", outcome).target == "evidence"
    assert graph.route("reviewer-briefing", outcome).target == "code-quiz"
    assert graph.route("code-quiz", outcome).target == "human-approval"


# -- the opt-in design-critic-review ---------------------------------------------------
def test_design_critic_review_is_opt_in_with_its_description(graph: Graph) -> None:
    node = graph.node("design-critic-review")
    assert (node.actor, node.opt_in, node.skippable, node.required) == (
        "agent", True, True, False
    )
    assert node.description == DCR_DESCRIPTION
    assert (node.stage, node.phase) == ("critic-review", "")
    assert [n.id for n in graph.opt_in_nodes()] == ["design-critic-review"]
    assert all("design-critic-review" not in members for members in graph.skip_sets.values())
    for outcome in ("pass", "skipped"):
        assert graph.route("design", outcome).target == "design-critic-review"
        assert graph.route("design-critic-review", outcome).target == "test-planning"


# -- skip tokens -----------------------------------------------------------------------
def test_expand_skip_tokens_sets_first_first_token_wins_and_opt_in_refused(graph: Graph) -> None:
    accepted, rejected = graph.expand_skip_tokens(
        ["spec-quiz", "explainer", "review-chain", "design-critic-review", "bogus",
         "human-approval"]
    )
    assert accepted == {
        "spec-quiz": "spec-quiz",
        "spec-explainer": "explainer", "code-explainer": "explainer", "code-quiz": "explainer",
        "self-review": "review-chain", "critic-review": "review-chain",
        "security-review": "review-chain", "evidence": "review-chain",
        "capability-docs": "review-chain", "reviewer-briefing": "review-chain",
    }
    assert rejected == ["design-critic-review", "bogus", "human-approval"]
    assert "opt-in phase" in graph.skip_token_refusal("design-critic-review")
    assert "says nothing" in graph.skip_token_refusal("design-critic-review")
    assert graph.skip_token_refusal("human-approval") == "'human-approval' is not skippable"
    assert "neither a node nor a skip set" in graph.skip_token_refusal("bogus")
    accepted, rejected = graph.expand_skip_tokens(["design-critic-review"], allow_opt_in=True)
    assert (accepted, rejected) == ({"design-critic-review": "design-critic-review"}, [])


# -- the real registry, immutability and the cache -------------------------------------
@pytest.mark.usefixtures("complete_registry")
def test_shipped_graph_compiles_against_the_registry_and_is_cached() -> None:
    first = shipped_graph()
    assert first is shipped_graph("pdlc-work-item-loop")
    assert [n.id for n in first.nodes] == NODE_ORDER
    assert compiler.DEFAULT_GRAPH == "pdlc-work-item-loop"


@pytest.mark.usefixtures("complete_registry")
def test_shipped_graph_is_immutable() -> None:
    compiled = shipped_graph()
    with pytest.raises(dataclasses.FrozenInstanceError):
        compiled.start = "complete"  # type: ignore[misc]
    with pytest.raises(TypeError):
        compiled.skip_sets["explainer"] = ()  # type: ignore[index]
    with pytest.raises(TypeError):
        compiled.node("spec-quiz").entry[0].params["on"] = "pull-requests"  # type: ignore[index]


def test_registered_shipped_hooks_accept_the_contract_parameters() -> None:
    """Each shipped hook that exists already accepts the `with:` keys the graph uses."""
    import engine.hooks  # noqa: F401

    for name, params in HOOK_CONTRACT.items():
        if name in REGISTRY:
            assert set(params) <= REGISTRY.get(name).params, name
