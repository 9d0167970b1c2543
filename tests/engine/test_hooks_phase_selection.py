"""post-phase-selection and classify-phase-selection (issue #2 §6, opt-in design, explainer
design C2)."""

from __future__ import annotations

import pytest

from engine.effects import MAX_BODY, effect_marker
from engine.graph.compiler import shipped_graph
from engine.hooks.markers import CONFIRMATION_MARKER, PHASE_SELECTION_MARKER, SELF_MARKER
from engine.hooks.phase_selection import (
    CHECKLIST_BUDGET,
    EXPLAINER_ROW,
    OPTIONAL_HEADING,
    SETTINGS_HEADING,
    Row,
    checklist_rows,
    confirmation_text,
    frozen_graph,
    parse_rows,
    parse_selection,
    render_checklist,
    reply_body,
    selection_from_rows,
)
from engine.ports import Comment
from engine.settings import EngineSettings
from engine.state import NodeRecord
from tests.engine.test_hooks_support import REF, Harness, as_json_map, mini_graph

EXPLAINER_NODES = ["spec-explainer", "spec-quiz", "code-explainer", "code-quiz"]


def _posted(h: Harness) -> Comment:
    h.enter("phase-selection")
    result = h.run("phase-selection", "post-phase-selection", chain="entry")
    assert result.kind == "pass"
    return next(c for c in h.tracker.comments_on(REF) if PHASE_SELECTION_MARKER in c.body)


def _reply(h: Harness, author: str, body: str) -> Comment:
    return h.tracker.add_comment_as(REF, author, body)


def _classify(h: Harness, *comments: Comment, **event):
    return h.run(
        "phase-selection", "classify-phase-selection", event={"comments": list(comments), **event}
    )


def _confirmation(h: Harness) -> str:
    found = [c.body for c in h.tracker.comments_on(REF) if CONFIRMATION_MARKER in c.body]
    assert len(found) == 1
    return found[0]


# -- the checklist ------------------------------------------------------------------------
def test_checklist_is_posted_once() -> None:
    h = Harness()
    _posted(h)
    again = h.run("phase-selection", "post-phase-selection", chain="entry")
    assert again.kind == "pass"
    marked = [c for c in h.tracker.comments_on(REF) if PHASE_SELECTION_MARKER in c.body]
    assert len(marked) == 1
    assert h.state.surface["phaseSelection"]["commentId"] == marked[0].id


def test_checklist_names_the_execute_keyword() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice",), execute_keyword="Go Now"))
    body = _posted(h).body
    assert "reply **`Go Now`** to start" in body


def test_checklist_ticks_default_on_rows_and_hides_explainer_nodes() -> None:
    body = _posted(Harness()).body
    lines = body.splitlines()
    for node in [
        "brainstorming",
        "requirements-definition",
        "requirements-approval",
        "design",
        "test-planning",
        "design-approval",
        "tasks-breakdown",
        "implementation",
        "verification",
        "self-review",
        "critic-review",
        "security-review",
        "evidence",
        "capability-docs",
        "reviewer-briefing",
    ]:
        # Each row carries its one-line description beside it (issue 12 §4).
        description = shipped_graph().node(node).description
        assert description
        assert f"- [x] {node} — {description}" in lines
    for node in EXPLAINER_NODES:
        assert not any(node in line and "[" in line for line in lines), node


def test_checklist_offers_opt_in_rows_unticked_with_description() -> None:
    body = _posted(Harness()).body
    assert OPTIONAL_HEADING in body
    assert (
        "- [ ] design-critic-review — a different model reviews the locked design.md against "
        "the requirements, before the testing plan and task DAG are derived from it"
    ) in body.splitlines()
    assert "- [x] design-critic-review" not in body


def test_checklist_lists_protected_nodes_as_plain_bullets() -> None:
    lines = _posted(Harness()).body.splitlines()
    assert "- phase-selection" in lines
    assert "- human-approval" in lines
    assert "- complete" not in lines  # terminal nodes are not phases to run


def test_checklist_has_the_settings_row_and_ends_with_markers() -> None:
    body = _posted(Harness()).body
    assert SETTINGS_HEADING in body
    assert "**Default:** yes, already ticked." in body
    assert EXPLAINER_ROW in body.splitlines()
    # The performer adds its row's idempotency marker inside the trailing marker block.
    assert body.rstrip().endswith(
        f"{PHASE_SELECTION_MARKER}\n{effect_marker('k1')}\n{SELF_MARKER}")


def test_checklist_without_explainer_set_or_opt_ins_has_neither_section() -> None:
    graph = mini_graph(
        nodes=[
            {"id": "phase-selection", "actor": "human", "required": True},
            {"id": "a", "skippable": True},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        edges=[
            {"from": "phase-selection", "to": "a", "on": "selected"},
            {"from": "a", "to": "done", "on": "pass"},
            {"from": "a", "to": "done", "on": "skipped"},
        ],
    )
    body = render_checklist(graph, EngineSettings())
    assert SETTINGS_HEADING not in body
    assert "explainer" not in body
    assert OPTIONAL_HEADING not in body
    assert "- [x] a" in body.splitlines()


def test_checklist_post_failure_is_retried_not_lost() -> None:
    h = Harness()
    h.tracker.down = True
    h.enter("phase-selection")
    result = h.run("phase-selection", "post-phase-selection", chain="entry")
    assert result.kind == "pass"
    assert h.kinds() == ["graph.hook_degraded"]  # the scan; the post is the performer's
    assert h.tracker.comments_on(REF) == []
    assert [(e.kind, o) for e, o in h.performed] == [("post-comment", "retry"),
                                                     ("notify", "done")]


def test_checklist_rows_split_the_graph() -> None:
    rows = checklist_rows(mini_graph())
    assert [n.id for n in rows.default_on] == ["a"]
    assert [n.id for n in rows.opt_in] == ["b"]
    assert [n.id for n in rows.protected] == ["phase-selection", "gate"]
    assert rows.explainer is False


# -- the gate: who may answer ---------------------------------------------------------------
def test_unauthorized_reply_never_selects() -> None:
    h = Harness()
    _posted(h)
    reply = _reply(h, "mallory", "the-loop execute\n- [ ] brainstorming")
    result = _classify(h, reply)
    assert result.kind == "wait"
    assert "@mallory" in result.reason and "not authorized" in result.reason
    assert not [c for c in h.tracker.comments_on(REF) if CONFIRMATION_MARKER in c.body]


def test_reply_without_keyword_waits() -> None:
    h = Harness()
    _posted(h)
    result = _classify(h, _reply(h, "alice", "looks good, go ahead"))
    assert result.kind == "wait"
    assert "`the-loop execute`" in result.reason


def test_a_quoted_or_code_block_keyword_executes_nothing() -> None:
    # Issue 19 (a fresh-eyes trial): "> the-loop execute … No! Do not execute yet" executed.
    h = Harness()
    _posted(h)
    for body in ("bob wrote:\n> the-loop execute\n\nNo! Do not execute yet.",
                 "To run it, reply:\n```\nthe-loop execute\n```\nbut not yet.",
                 "Shown as code:\n\n    the-loop execute\n"):
        result = _classify(h, _reply(h, "alice", body))
        assert result.kind == "wait", body
        assert "`the-loop execute`" in result.reason
    assert _classify(h, _reply(h, "alice", "Fine by me.\nthe-loop execute")).kind == "pass"


def test_self_authored_and_empty_author_comments_never_count() -> None:
    h = Harness(settings=EngineSettings(authorized_users=("alice", ""), bot_login="loopgate-bot"))
    _posted(h)
    forged = _reply(h, "alice", f"the-loop execute\n{SELF_MARKER}")
    bot = _reply(h, "loopgate-bot", "the-loop execute")
    ghost = _reply(h, "", "the-loop execute")
    assert _classify(h, forged, bot, ghost).kind == "wait"


def test_keyword_and_login_match_case_insensitively() -> None:
    h = Harness()  # authorized: alice, @Bob
    _posted(h)
    result = _classify(h, _reply(h, "BOB", "The-Loop EXECUTE please"))
    assert result.kind == "pass"
    assert result.data["outcome"] == "selected"
    assert result.data["decision"].to_json()["by"] == "@BOB"


# -- the gate: what is selected ------------------------------------------------------------
def test_tick_in_place_plus_bare_keyword_reply_selects_via_checklist() -> None:
    h = Harness()
    checklist = _posted(h)
    edited = checklist.body.replace("- [x] brainstorming", "- [ ] brainstorming").replace(
        "- [ ] design-critic-review", "- [x] design-critic-review"
    )
    h.tracker.edit_comment(checklist.id, edited, "alice")
    result = _classify(h, _reply(h, "alice", "the-loop execute"))
    assert result.kind == "pass"
    assert result.data["decision"].to_json()["via"] == "checklist"
    assert as_json_map(result.data["skips"]) == {
        "brainstorming": {
            "via": "selection",
            "token": "brainstorming",
            "by": "@alice",
            "reason": "",
        }
    }
    assert as_json_map(result.data["optIns"]) == {
        "design-critic-review": {"via": "selection", "by": "@alice"}}
    text = _confirmation(h)
    assert "Skipped by @alice: `brainstorming`." in text
    assert "Also running: `design-critic-review`." in text


def test_checklist_in_reply_wins_via_reply() -> None:
    h = Harness()
    checklist = _posted(h)
    h.tracker.edit_comment(
        checklist.id, checklist.body.replace("- [x] design\n", "- [ ] design\n"), "alice"
    )
    reply = _reply(h, "alice", "the-loop execute\r\n- [ ] test-planning\r\n- [x] design\r\n")
    result = _classify(h, reply)
    assert result.data["decision"].to_json()["via"] == "reply"
    assert list(result.data["skips"]) == ["test-planning"]
    text = _confirmation(h)
    assert "Not running (offered, not selected): `design-critic-review`." in text


def test_latest_decisive_comment_wins() -> None:
    h = Harness()
    _posted(h)
    first = h.tracker.add_comment_as(
        REF, "alice", "the-loop execute\n- [ ] design", at="2026-03-01T10:00:00Z"
    )
    second = h.tracker.add_comment_as(
        REF, "bob", "the-loop execute\n- [ ] verification", at="2026-03-01T10:05:00Z"
    )
    chatter = h.tracker.add_comment_as(REF, "alice", "thanks!", at="2026-03-01T10:06:00Z")
    result = _classify(h, second, first, chatter)
    assert list(result.data["skips"]) == ["verification"]
    assert result.data["decision"].to_json()["by"] == "@bob"


def test_unticking_a_protected_phase_is_refused_and_said() -> None:
    h = Harness()
    _posted(h)
    result = _classify(
        h, _reply(h, "alice", "the-loop execute\n- [ ] human-approval\n- [x] design")
    )
    assert result.kind == "pass"
    assert result.data["refused"] == ["human-approval"]
    assert "human-approval" not in result.data["skips"]
    assert result.data["decision"].to_json()["refused"] == ["human-approval"]
    assert "Refused: `human-approval` — protected phases always run." in _confirmation(h)


def test_explainer_row_unticked_skips_all_four_nodes_with_token_explainer() -> None:
    h = Harness()
    _posted(h)
    result = _classify(h, _reply(h, "alice", "the-loop execute\n- [ ] `explainer`"))
    assert as_json_map(result.data["skips"]) == {
        node: {"via": "selection", "token": "explainer", "by": "@alice", "reason": ""}
        for node in EXPLAINER_NODES
    }
    assert result.data["decision"].to_json()["explainer"] is False
    text = _confirmation(h)
    lines = [line for line in text.splitlines() if line.startswith("Explainer and quizzes")]
    assert lines == [
        "Explainer and quizzes: off, as declared by @alice — spec-explainer, spec-quiz, "
        "code-explainer, code-quiz skipped"
    ]


def test_explainer_row_absent_keeps_them_on() -> None:
    h = Harness()
    _posted(h)
    result = _classify(h, _reply(h, "alice", "the-loop execute\n- [ ] brainstorming"))
    assert result.data["decision"].to_json()["via"] == "reply"
    assert not set(EXPLAINER_NODES) & set(result.data["skips"])
    assert result.data["decision"].to_json()["explainer"] is True
    lines = [ln for ln in _confirmation(h).splitlines() if ln.startswith("Explainer and quizzes")]
    assert lines == ["Explainer and quizzes: on"]


def test_tracker_outage_leaves_the_gate_waiting() -> None:
    h = Harness()
    _posted(h)
    reply = _reply(h, "alice", "the-loop execute")
    h.tracker.down = True
    result = _classify(h, reply)
    assert result.kind == "wait"
    assert "could not read the phase-selection checklist" in result.reason
    assert "skips" not in result.data


def test_unreadable_checklist_means_the_full_default_process() -> None:
    h = Harness()
    h.enter("phase-selection")  # no checklist was ever posted
    result = _classify(h, _reply(h, "alice", "the-loop execute"))
    assert result.kind == "pass"
    assert result.data["decision"].to_json()["via"] == "default"
    assert as_json_map(result.data["skips"]) == {} and as_json_map(result.data["optIns"]) == {}
    assert result.data["decision"].to_json()["explainer"] is True


def test_a_look_alike_checklist_does_not_replace_the_posted_one() -> None:
    h = Harness()
    checklist = _posted(h)
    fake = checklist.body.replace("- [x] design\n", "- [ ] design\n")
    _reply(h, "mallory", fake)
    result = _classify(h, _reply(h, "alice", "the-loop execute"))
    assert result.data["decision"].to_json()["via"] == "checklist"
    assert as_json_map(result.data["skips"]) == {}


def test_selection_cannot_skip_or_select_nodes_already_entered() -> None:
    h = Harness()
    _posted(h)
    h.state.nodes["brainstorming"] = NodeRecord(entered_at="2026-03-01T09:00:00Z", outcome="pass")
    h.state.nodes["design-critic-review"] = NodeRecord(entered_at="2026-03-01T09:30:00Z")
    body = "the-loop execute\n- [ ] brainstorming\n- [ ] design\n- [x] design-critic-review"
    result = _classify(h, _reply(h, "alice", body))
    assert list(result.data["skips"]) == ["design"]
    assert as_json_map(result.data["optIns"]) == {}
    assert (
        "Not changed (already entered): `brainstorming`, `design-critic-review`."
        in _confirmation(h)
    )


def test_confirmation_failure_still_selects() -> None:
    h = Harness()
    _posted(h)
    reply = _reply(h, "alice", "the-loop execute\n- [ ] design")
    h.tracker.failing = {"add_comment"}
    result = _classify(h, reply)
    assert result.kind == "pass"
    assert list(result.data["skips"]) == ["design"]
    # The confirmation is an effect: its failed post waits for a retry, it is not lost.
    assert ("post-comment", "retry") in [(e.kind, o) for e, o in h.performed]


def test_slack_event_records_via_slack() -> None:
    h = Harness()
    _posted(h)
    result = _classify(h, _reply(h, "alice", "the-loop execute\n- [x] design"), via="slack")
    assert result.data["decision"].to_json()["via"] == "slack"


def test_decision_carries_the_frozen_graph() -> None:
    h = Harness()
    _posted(h)
    reply = _reply(h, "alice", "the-loop execute\n- [ ] brainstorming")
    decision = _classify(h, reply).data["decision"].to_json()
    assert decision["at"] == "2026-03-01T12:00:00Z"
    assert decision["comment"] == reply.url and decision["commentId"] == reply.id
    nodes = {n["id"]: n for n in decision["frozenGraph"]["nodes"]}
    assert decision["frozenGraph"]["loop"] == "pdlc-work-item-loop"
    assert decision["frozenGraph"]["workItem"] == "acme/widgets#7"
    assert nodes["brainstorming"] == {
        "id": "brainstorming",
        "phase": "brainstorming",
        "skipped": True,
        "selectable": True,
        "optIn": False,
    }
    assert nodes["design-critic-review"]["skipped"] is True
    assert nodes["design-critic-review"]["optIn"] is True
    assert nodes["human-approval"]["selectable"] is False


# -- pure parsing -------------------------------------------------------------------------
def test_parse_accepts_star_bullets_capital_x_backticks_and_crlf() -> None:
    graph = mini_graph()
    text = "* [X] `b`\r\n-  [ ]  a \r\n- [ ] gate\r\n- [ ] nonsense\r\n"
    selection = parse_selection(text, graph)
    assert selection.skips == ["a"]
    assert selection.opt_ins == ["b"]
    assert selection.refused == ["gate"]
    assert selection.readable is True


def test_parse_ignores_unknown_tokens_and_reads_absent_rows_as_default() -> None:
    graph = mini_graph()
    assert parse_selection("- [ ] nothing-here\n- [x] other", graph).readable is False
    selection = parse_selection("- [x] a", graph)
    assert selection.skips == [] and selection.opt_ins == [] and selection.explainer_on


@pytest.mark.parametrize("hidden", [
    "<!-- - [x] a -->",
    "<!--\n- [x] a\n-->",
    "  <!-- notes\n- [x] a\n  done -->",
    "```\n- [x] a\n```",
    "~~~~ markdown\n- [x] a\n~~~\n- [x] a\n~~~~",
    "```\n- [x] a",  # a fence never closed runs to the end
    "<!-- never closed\n- [x] a",
])
def test_rows_in_html_comments_and_fences_are_not_rows(hidden: str) -> None:
    graph = mini_graph()
    text = f"- [ ] a\r\n{hidden}\n"
    assert parse_rows(text) == [Row("a", False)]
    assert parse_selection(text, graph).skips == ["a"]


def test_rows_after_a_closed_comment_or_fence_count_again() -> None:
    text = "<!--\n- [ ] a\n-->\n```py\n- [ ] b\n```\n- [x] c <!-- inline -->\n- [ ] d"
    assert parse_rows(text) == [Row("c", True), Row("d", False)]
    assert parse_rows("``` inline ``` code\n- [ ] a") == [Row("a", False)]


def test_explainer_member_rows_are_not_phase_rows() -> None:
    graph = Harness().graph
    selection = selection_from_rows([Row("spec-quiz", False), Row("explainer", True)], graph)
    assert selection.skips == [] and selection.explainer_on is True


def test_reply_body_round_trips_through_the_parser() -> None:
    h = Harness()
    selection = parse_selection(
        "- [ ] design\n- [x] design-critic-review\n- [ ] explainer", h.graph
    )
    again = parse_selection(reply_body(h.graph, h.settings, selection), h.graph)
    assert again == selection
    assert reply_body(h.graph, h.settings, selection).startswith("the-loop execute\n")


def test_unknown_rows_of_a_reply_are_named_in_the_confirmation() -> None:
    h = Harness()
    _posted(h)
    reply = _reply(h, "alice", "the-loop execute\n- [ ] no-such-phase\n- [ ] design\n"
                               "- [x] spec-quiz\n- [x] no-such-phase")
    result = _classify(h, reply)
    assert result.kind == "pass"
    assert list(result.data["skips"]) == ["design"]
    lines = _confirmation(h).split("\n\n")
    assert "ignored: no-such-phase — not a phase of this loop" in lines
    assert "ignored: spec-quiz — not a row of this checklist" in lines
    assert sum("no-such-phase" in line for line in lines) == 1


def test_unknown_rows_of_a_bare_reply_are_named_beside_the_checklist_selection() -> None:
    h = Harness()
    _posted(h)
    result = _classify(h, _reply(h, "alice", "the-loop execute\n- [ ] no-such-phase"))
    assert result.data["decision"].to_json()["via"] == "checklist"
    assert "ignored: no-such-phase — not a phase of this loop" in _confirmation(h)


def test_a_selection_without_unknown_rows_reports_none() -> None:
    graph = mini_graph()
    assert parse_selection("- [ ] a\n- [x] b", graph).unknown == []
    text = confirmation_text(graph, parse_selection("- [ ] a", graph), "alice", via="reply")
    assert "ignored:" not in text


def test_confirmation_text_default_process_and_frozen_graph_of_unselected_opt_in() -> None:
    graph = mini_graph()
    selection = parse_selection("", graph)
    text = confirmation_text(graph, selection, "alice", via="default")
    assert "Skipped: none." in text
    assert "Not running (offered, not selected): `b`." in text
    assert "Explainer and quizzes" not in text
    frozen = frozen_graph(graph, REF, skipped=[], opt_ins=[])
    b = next(n for n in frozen["nodes"] if n["id"] == "b")
    assert b == {"id": "b", "phase": "", "skipped": True, "selectable": True, "optIn": True}


def test_a_checklist_too_long_for_github_is_shortened_keeping_every_row_and_marker() -> None:
    # Issue 10 §2: a body over GitHub's 65,536 characters is never sent; descriptions give
    # way, rows and markers stay.
    opt_ins = [{"id": f"extra-{i}", "optIn": True, "description": f"{i} " + "why " * 2000}
               for i in range(20)]
    nodes = [{"id": "phase-selection", "actor": "human", "required": True},
             *opt_ins, {"id": "done", "actor": "code", "terminal": True}]
    chain = ["phase-selection", *(n["id"] for n in opt_ins), "done"]
    edges = [{"from": a, "to": b, "on": on} for a, b in zip(chain, chain[1:], strict=False)
             for on in (("selected",) if a == "phase-selection" else ("pass", "skipped"))]
    graph = mini_graph(nodes=nodes, edges=edges)
    full = sum(len(n["description"]) for n in opt_ins)
    assert full > MAX_BODY
    body = render_checklist(graph, EngineSettings())
    assert len(body) <= CHECKLIST_BUDGET < MAX_BODY
    assert [r.token for r in parse_rows(body)] == [n["id"] for n in opt_ins]
    assert body.rstrip().endswith(f"{PHASE_SELECTION_MARKER}\n{SELF_MARKER}")
    assert "- [ ] extra-7 — 7 why why" in body  # shortened, not dropped


def test_a_checklist_that_fits_keeps_its_descriptions_whole() -> None:
    graph = mini_graph()
    body = render_checklist(graph, EngineSettings())
    assert "- [ ] b — an extra look" in body.splitlines()


def test_the_explainer_default_line_counts_and_names_the_nodes_the_skip_set_turns_off() -> None:
    from engine.graph.model import EXPLAINER_SET
    from engine.hooks.phase_selection import settings_default_line

    graph = shipped_graph()
    members = list(graph.skip_sets[EXPLAINER_SET])
    assert members == EXPLAINER_NODES  # four nodes, not "all three"
    body = _posted(Harness()).body
    assert ("**Default:** yes, already ticked. Untick it to skip all 4: `spec-explainer`, "
            "`spec-quiz`, `code-explainer`, `code-quiz`.") in body.splitlines()
    assert "all three" not in body

    two = mini_graph(
        nodes=[
            {"id": "phase-selection", "actor": "human", "required": True},
            {"id": "x", "skippable": True},
            {"id": "y", "skippable": True},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        edges=[
            {"from": "phase-selection", "to": "x", "on": "selected"},
            {"from": "x", "to": "y", "on": "pass"},
            {"from": "x", "to": "y", "on": "skipped"},
            {"from": "y", "to": "done", "on": "pass"},
            {"from": "y", "to": "done", "on": "skipped"},
        ],
        skipSets={EXPLAINER_SET: ["x", "y"]},
    )
    assert settings_default_line(two) == (
        "**Default:** yes, already ticked. Untick it to skip all 2: `x`, `y`.")
