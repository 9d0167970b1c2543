"""Renderers: the text table, the JSON shape and the Mermaid flowchart (issue #2 §7)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.graph.compiler import compile_file, compile_graph, shipped_graph_path
from engine.graph.model import Graph
from engine.graph.render import mermaid_ids, render_json, render_mermaid, render_text
from engine.hooks.registry import HookRegistry, HookResult

_CONTRACT = {
    "set-phase-label": (), "log-entry": (), "deliver-assignment": (), "request-review": (),
    "post-phase-selection": (), "classify-phase-selection": (), "classify-feedback": (),
    "record-feedback": (), "notify": ("event",),
    "validate-artifacts": ("validates", "sections", "locked", "checkmarks"),
    "post-quiz-attestation": ("node", "record", "on", "digest"), "quiz-attested": ("digest",),
}


def _noop(ctx: Any) -> HookResult:
    return HookResult.passed()


def _registry() -> HookRegistry:
    registry = HookRegistry()
    for name, params in _CONTRACT.items():
        registry.register(name, _noop, params)
    return registry


@pytest.fixture(scope="module")
def shipped() -> Graph:
    return compile_file(shipped_graph_path(), _registry())


@pytest.fixture
def awkward() -> Graph:
    """Ids a flowchart cannot take as they are: a reserved word, a digit first, a collision."""
    doc = {
        "version": 1, "name": "awkward", "start": "end",
        "nodes": [
            {"id": "end", "actor": "agent"},
            {"id": "2nd", "actor": "human", "skippable": True},
            {"id": "a-b", "actor": "code"},
            {"id": "a_b", "actor": "agent", "terminal": True},
        ],
        "edges": [
            {"from": "end", "to": "2nd", "on": "pass"},
            {"from": "2nd", "to": "a-b", "on": "approved"},
            {"from": "2nd", "to": "a-b", "on": "skipped"},
            {"from": "a-b", "to": "a_b", "on": "pass"},
            {"from": "a-b", "to": "a_b", "on": "pass"},
        ],
    }
    return compile_graph(doc, _registry())


# -- text ------------------------------------------------------------------------------
def test_text_lists_nodes_in_order_with_actor_flags_phase_and_edges(shipped: Graph) -> None:
    lines = render_text(shipped).splitlines()
    assert lines[0] == "pdlc-work-item-loop (version 1), start: phase-selection"
    assert lines[2].split() == ["#", "node", "actor", "flags", "phase", "edges"]
    rows = {line.split()[1]: line for line in lines[3:27]}
    assert list(rows) == [n.id for n in shipped.nodes]
    assert rows["phase-selection"].split()[:6] == [
        "1", "phase-selection", "human", "required", "phase-selection", "selected"
    ]
    assert "opt-in" in rows["design-critic-review"].split()
    assert rows["design-critic-review"].endswith("pass, skipped → test-planning")
    assert rows["spec-quiz"].endswith("pass, skipped → tasks-breakdown; stale → spec-explainer")
    assert rows["escalated"].split()[2:5] == ["human", "terminal", "escalated"]
    assert "  explainer: spec-explainer, spec-quiz, code-explainer, code-quiz" in lines


def test_text_shows_warnings(awkward: Graph) -> None:
    text = render_text(awkward)
    assert "warnings:" in text and "repeats (from a-b, on pass)" in text
    assert "skip sets: none" in text


# -- json ------------------------------------------------------------------------------
def test_json_shape(shipped: Graph) -> None:
    data = render_json(shipped)
    assert list(data) == ["version", "name", "start", "skipSets", "nodes", "edges"]
    assert json.loads(json.dumps(data)) == data
    assert data["skipSets"]["explainer"] == ["spec-explainer", "spec-quiz", "code-explainer",
                                             "code-quiz"]
    dcr = next(n for n in data["nodes"] if n["id"] == "design-critic-review")
    assert {k: dcr[k] for k in ("actor", "required", "skippable", "optIn", "terminal")} == {
        "actor": "agent", "required": False, "skippable": True, "optIn": True, "terminal": False
    }
    assert dcr["description"].startswith("a different model reviews the locked design.md")
    quiz = next(n for n in data["nodes"] if n["id"] == "spec-quiz")
    assert quiz["entry"][0]["with"]["on"] == "ticket"
    assert quiz["entry"][0]["with"]["digest"] == ["requirements.md|bugfix.md", "design.md",
                                                  "testing-plan.md"]
    assert data["edges"][0] == {"from": "phase-selection", "to": "brainstorming",
                                "on": "selected"}
    assert len(data["edges"]) == len(shipped.edges)


# -- mermaid ---------------------------------------------------------------------------
def test_mermaid_ids_are_safe_and_unique(awkward: Graph) -> None:
    ids = mermaid_ids(awkward)
    assert ids == {"end": "n_end", "2nd": "n_2nd", "a-b": "a_b", "a_b": "a_b_2"}
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v) for v in ids.values())


def test_mermaid_shapes_edges_and_classes(awkward: Graph) -> None:
    text = render_mermaid(awkward)
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '  n_end["end"]' in lines
    assert '  n_2nd{{"2nd"}}' in lines  # a human gate is a hexagon
    assert '  a_b[["a-b"]]' in lines  # code
    assert '  a_b_2(["a_b"])' in lines  # terminal
    assert "  n_2nd -->|approved / skipped| a_b" in lines
    assert "  a_b -->|pass / pass| a_b_2" in lines
    assert "  class n_2nd skippable" in lines
    assert "  class a_b_2 terminal" in lines


def test_mermaid_of_the_shipped_graph_sets_opt_in_and_skippable_apart(shipped: Graph) -> None:
    lines = render_mermaid(shipped).splitlines()
    assert '  design_critic_review["design-critic-review (opt-in)"]' in lines
    assert '  spec_quiz{{"spec-quiz"}}' in lines
    assert "  spec_quiz -->|stale| spec_explainer" in lines
    assert "  design -->|pass / skipped| design_critic_review" in lines
    gate = "  requirements_approval -->|approved / approved-with-comments / skipped| design"
    assert gate in lines
    classes = {line.split()[-1]: line.split()[1].split(",") for line in lines
               if line.startswith("  class ")}
    assert classes["optin"] == ["design_critic_review"]
    assert classes["required"] == ["phase_selection", "human_approval"]
    assert "spec_quiz" in classes["skippable"]
    assert "design_critic_review" not in classes["skippable"]
    assert {line.split()[1] for line in lines if line.startswith("  classDef ")} == {
        "required", "skippable", "optin", "terminal"
    }
    defined = {m.group(1) for line in lines if (m := re.match(r"  ([A-Za-z0-9_]+)[\[\{\(]", line))}
    used = set()
    for line in lines:
        if m := re.match(r"  ([A-Za-z0-9_]+) -\.?->?\|[^|]+\| ([A-Za-z0-9_]+)$", line):
            used |= {m.group(1), m.group(2)}
    assert used and used <= defined
