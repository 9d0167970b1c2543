"""The phase-selection card, its state reading, and the read-only rewrite (pure blocks)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack.blocks import ids
from bot.slack.blocks.card import (
    MAX_BLOCKS,
    card_rows,
    confirmation_lines,
    phase_selection_card,
    phase_selection_node_id,
    selection_from_state,
    state_rows,
    status_card,
    truncate,
)
from engine.graph.compiler import compile_graph, shipped_graph
from engine.hooks.phase_selection import parse_selection, reply_body
from engine.ports import IssueInfo
from engine.settings import EngineSettings
from tests.bot.conftest import EXPLAINER_NODES, REF, state_values

INFO = IssueInfo(REF, "Add a <widget> & more", "https://github.com/acme/widgets/issues/7", "carol")
DEFAULT_ON = (
    "brainstorming", "requirements-definition", "requirements-approval", "design",
    "test-planning", "design-approval", "tasks-breakdown", "implementation", "verification",
    "self-review", "critic-review", "security-review", "evidence", "capability-docs",
    "reviewer-briefing",
)  # fmt: skip


def _dicts(blocks: list[Any]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


def _checkbox_elements(blocks: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [el for b in blocks if str(b.get("block_id", "")).startswith(prefix)
            for el in b["elements"] if el["type"] == "checkboxes"]


def test_card_for_the_shipped_graph_ticks_defaults_offers_opt_ins_and_the_explainer() -> None:
    blocks = _dicts(phase_selection_card(shipped_graph(), INFO))

    assert len(blocks) <= MAX_BLOCKS
    assert blocks[0] == {"type": "header", "text": {"type": "plain_text",
                                                    "text": "Phase selection · acme/widgets#7"}}
    assert blocks[1]["text"]["text"] == (
        "*<https://github.com/acme/widgets/issues/7|acme/widgets#7>* "
        "Add a &lt;widget&gt; &amp; more")
    phases = _checkbox_elements(blocks, ids.BLOCK_PHASES)
    # One element per stage (issue 12 §4), each under its stage's name.
    assert [len(el["options"]) for el in phases] == [1, 2, 1, 2, 1, 1, 1, 6]
    stages = [b["elements"][0]["text"] for b in blocks if b["type"] == "context"][:8]
    assert stages == ["*Brainstorming*", "*Requirements*", "*Design*", "*Test planning*",
                      "*Tasks*", "*Implementation*", "*Verification*", "*Needs review*"]
    values = [o["value"] for el in phases for o in el["options"]]
    assert values == list(DEFAULT_ON)
    for el in phases:  # every default-on row ticked
        assert el["initial_options"] == el["options"]
    [opt_in] = _checkbox_elements(blocks, ids.BLOCK_OPT_INS)
    assert [o["value"] for o in opt_in["options"]] == ["design-critic-review"]
    assert "initial_options" not in opt_in
    description = opt_in["options"][0]["description"]["text"]
    assert description.startswith("a different model reviews the locked design.md")
    assert len(description) == 75 and description.endswith("…")
    [settings] = _checkbox_elements(blocks, ids.BLOCK_SETTINGS)
    assert [o["value"] for o in settings["options"]] == ["explainer"]
    assert settings["initial_options"] == settings["options"]
    assert not set(EXPLAINER_NODES) & set(values)


def test_card_repeats_truncated_descriptions_in_full_and_names_protected_nodes() -> None:
    text = str(_dicts(phase_selection_card(shipped_graph(), INFO)))

    assert ("before the testing plan and task DAG are derived from it") in text
    assert "Always run (protected, cannot be unticked): phase-selection, human-approval" in text


def test_card_execute_button_is_primary_with_a_confirm_dialog_naming_the_item() -> None:
    blocks = _dicts(phase_selection_card(shipped_graph(), INFO))

    [button] = [el for b in blocks if b["type"] == "actions" for el in b["elements"]
                if el["type"] == "button"]
    assert button["action_id"] == ids.ACTION_EXECUTE
    assert button["style"] == "primary"
    assert button["value"] == "acme/widgets#7"
    assert button["confirm"]["title"]["text"] == "Execute phase selection?"
    assert "acme/widgets#7" in button["confirm"]["text"]["text"]


@pytest.mark.parametrize("revision", [0, 3])
def test_every_block_id_carries_the_revision(revision: int) -> None:
    blocks = _dicts(phase_selection_card(shipped_graph(), INFO, revision=revision))

    block_ids = [b["block_id"] for b in blocks if "block_id" in b]
    assert block_ids and all(f".r{revision}." in bid for bid in block_ids)
    assert len(block_ids) == len(set(block_ids))


def _wide_graph(n: int) -> Any:
    nodes = [{"id": "start", "actor": "human", "required": True}]
    edges = []
    previous = "start"
    for i in range(n):
        node_id = f"phase-{i:02d}"
        nodes.append({"id": node_id, "actor": "agent", "skippable": True,
                      "description": "x" * 100})
        edges.append({"from": previous, "to": node_id, "on": "pass"})
        if previous != "start":
            edges.append({"from": previous, "to": node_id, "on": "skipped"})
        previous = node_id
    nodes.append({"id": "done", "actor": "code", "terminal": True})
    edges += [{"from": previous, "to": "done", "on": "pass"},
              {"from": previous, "to": "done", "on": "skipped"}]
    return compile_graph({"version": 1, "name": "wide", "start": "start", "skipSets": {},
                          "nodes": nodes, "edges": edges})


def test_sixty_node_graph_splits_checkboxes_by_ten_within_fifty_blocks() -> None:
    blocks = _dicts(phase_selection_card(_wide_graph(60), INFO))

    assert len(blocks) <= MAX_BLOCKS
    phases = _checkbox_elements(blocks, ids.BLOCK_PHASES)
    assert [len(el["options"]) for el in phases] == [10] * 6
    for el in phases:
        for option in el["options"]:
            assert len(option["text"]["text"]) <= 75
            assert len(option["description"]["text"]) <= 75
            assert len(option["value"]) <= 150


def test_a_graph_too_large_for_one_message_gets_a_compact_card() -> None:
    blocks = _dicts(phase_selection_card(_wide_graph(480), INFO))

    assert len(blocks) == 3
    assert "more than one Slack message can hold" in blocks[2]["text"]["text"]


def test_untouched_blocks_keep_their_defaults() -> None:
    graph = shipped_graph()

    selection = selection_from_state(graph, {})

    assert selection.skips == [] and selection.opt_ins == [] and selection.explainer_on
    rows = {r.token: r.ticked for r in state_rows(graph, {})}
    assert rows["design-critic-review"] is False and rows["explainer"] is True
    assert all(rows[n] for n in DEFAULT_ON)


def test_state_of_one_chunk_does_not_touch_the_other_chunks() -> None:
    graph = shipped_graph()
    # Only the last phase chunk (stage "Needs review") is in the state, "evidence" unticked.
    values = state_values(phases={7: ["self-review", "critic-review", "security-review",
                                      "capability-docs", "reviewer-briefing"]},
                          opt_ins=["design-critic-review"])

    selection = selection_from_state(graph, values)

    assert selection.skips == ["evidence"]
    assert selection.opt_ins == ["design-critic-review"]
    assert selection.explainer_on is True


def test_a_value_from_another_group_is_ignored() -> None:
    # "brainstorming" arriving in the opt-in block cannot opt anything in or out.
    values = state_values(opt_ins=["brainstorming"], explainer=False)

    selection = selection_from_state(shipped_graph(), values)

    assert selection.opt_ins == [] and selection.skips == []
    assert selection.explainer_on is False


def test_reply_built_from_the_state_parses_back_to_the_same_selection() -> None:
    graph = shipped_graph()
    values = state_values(phases={0: ["design", "implementation"]}, opt_ins=[], explainer=False)
    selection = selection_from_state(graph, values)

    body = reply_body(graph, EngineSettings(), selection)

    assert body.startswith("the-loop execute\n")
    assert parse_selection(body, graph) == selection


def test_status_card_is_read_only_with_the_confirmation_lines_and_fresh_ids() -> None:
    graph = shipped_graph()
    decision = {"by": "@alice", "via": "slack", "at": "2026-03-01T12:00:00Z",
                "skips": ["brainstorming", *EXPLAINER_NODES], "optIns": ["design-critic-review"],
                "refused": [], "explainer": False}

    blocks = _dicts(status_card(graph, INFO, current_node="requirements-definition",
                                status="running", decision=decision, revision=2))

    assert not [b for b in blocks if b["type"] == "actions"]
    assert all(".r2." in b["block_id"] for b in blocks if "block_id" in b)
    text = "\n".join(b.get("text", {}).get("text", "") for b in blocks)
    assert "*Now:* `requirements-definition` (running)" in text
    assert "✅ *Phase selection recorded* by @alice — from Slack." in text
    assert "Skipped by @alice: `brainstorming`." in text
    assert "Also running: `design-critic-review`." in text
    assert ("Explainer and quizzes: off, as declared by @alice — spec-explainer, spec-quiz, "
            "code-explainer, code-quiz skipped") in text


def test_confirmation_lines_say_when() -> None:
    text = confirmation_lines(shipped_graph(), {"by": "@carol", "via": "reply",
                                                "at": "2026-03-01T12:00:00Z"})

    assert text.splitlines()[0] == ("✅ *Phase selection recorded* by @carol — from the "
                                    "checklist in the reply.")
    assert "Explainer and quizzes: on" in text
    assert text.endswith("Executed at 2026-03-01T12:00:00Z.")


def test_card_rows_match_the_github_checklist_sections() -> None:
    rows = card_rows(shipped_graph())

    assert [n.id for n in rows.default_on] == list(DEFAULT_ON)
    assert [n.id for n in rows.opt_in] == ["design-critic-review"]
    assert rows.explainer_nodes == EXPLAINER_NODES
    assert phase_selection_node_id(shipped_graph()) == "phase-selection"


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("short", 75, "short"), ("a" * 80, 75, "a" * 74 + "…"), ("two  spaces\nline", 75,
                                                               "two spaces line"),
])
def test_truncate(text: str, limit: int, expected: str) -> None:
    assert truncate(text, limit) == expected


def test_every_node_of_the_shipped_graph_has_a_one_line_description_shown_on_the_card() -> None:
    # Issue 12 §4: a newcomer reads what each row means; text within 75, full text in the
    # option's description.
    graph = shipped_graph()
    assert all(n.description and "\n" not in n.description for n in graph.ordered())
    blocks = _dicts(phase_selection_card(graph, INFO))
    options = {o["value"]: o for el in _checkbox_elements(blocks, ids.BLOCK_PHASES)
               for o in el["options"]}
    assert options["requirements-approval"]["text"]["text"] == (
        "requirements-approval — a person approves the requirements or requests changes"[:74]
        .rstrip() + "…")
    assert options["requirements-approval"]["description"]["text"] == (
        "a person approves the requirements or requests changes")
    assert options["evidence"]["text"]["text"] == (
        "evidence — collect the evidence that each requirement is met")
    for option in options.values():
        node = graph.node(option["value"])
        assert len(option["text"]["text"]) <= 75
        assert option["description"]["text"] == node.description  # the full text
