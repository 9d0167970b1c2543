"""validate-artifacts (issue #2 §3)."""

from __future__ import annotations

import pytest

from engine.hooks.artifacts import front_matter, section_body, split_alternatives
from engine.records import Skip
from engine.state import NodeRecord
from tests.engine.test_hooks_support import REF, Harness, mini_graph

LOCKED_BRAINSTORM = (
    "---\nstatus: approved\n---\n# Brainstorm\n\n## Problem / opportunity\n\nSlow.\n"
)
REQUIREMENTS = "---\nstatus: approved\n---\n## Requirements\n\n1. It works.\n"
RECORD = """## Spec explainer

| Field | Value |
|---|---|
| Depth | standard |
| Location | https://example.com/artifact/1 |
| Published as | own artifact |
| Questions | 3 |
"""


def _validate(h: Harness, node: str, **kwargs):
    return h.run(node, "validate-artifacts", **kwargs)


def test_a_locked_artifact_with_its_sections_passes() -> None:
    h = Harness()
    h.artifacts.write(REF, "brainstorm.md", LOCKED_BRAINSTORM)
    result = _validate(h, "brainstorming")
    assert result.kind == "pass", result.reason


def test_a_missing_file_blocks_naming_it() -> None:
    result = _validate(Harness(), "brainstorming")
    assert result.kind == "block"
    assert result.reason == "missing brainstorm.md"
    assert result.data["retriable"] is True


@pytest.mark.parametrize(
    ("present", "kind", "reason"),
    [
        (["requirements.md"], "pass", None),
        (["bugfix.md"], "pass", None),
        ([], "block", "missing requirements.md or bugfix.md"),
        (
            ["requirements.md", "bugfix.md"],
            "block",
            "both requirements.md and bugfix.md exist; exactly one of them must",
        ),
    ],
)
def test_alternatives_need_exactly_one(present: list[str], kind: str, reason: str | None) -> None:
    h = Harness()
    for name in present:
        h.artifacts.write(REF, name, REQUIREMENTS)
    result = _validate(h, "requirements-definition")
    assert result.kind == kind
    if reason:
        assert result.reason == reason


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "---\nstatus: draft\n---\n## Problem / opportunity\nx\n",
            "front matter status is 'draft'",
        ),
        ("## Problem / opportunity\nx\n", "brainstorm.md has no YAML front matter"),
        ("---\nstatus: approved\n---\n## Other\nx\n", "no '## Problem / opportunity' section"),
        (
            "---\nstatus: approved\n---\n## Problem / opportunity\n<!-- todo -->\n\n# Next\nx\n",
            "section '## Problem / opportunity' is empty",
        ),
        ("  \n", "brainstorm.md is empty: nothing to check"),
    ],
)
def test_content_checks_block_naming_the_file(text: str, problem: str) -> None:
    h = Harness()
    h.artifacts.write(REF, "brainstorm.md", text)
    result = _validate(h, "brainstorming")
    assert result.kind == "block"
    assert problem in result.reason
    assert "brainstorm.md" in result.reason


def test_checkmarks_complete_needs_every_box_ticked() -> None:
    h = Harness()
    h.artifacts.write(REF, "tasks.md", "## Task list\n- [x] one\n- [ ] two\n* [ ] three\n")
    params = {"validates": "tasks.md", "checkmarks": "complete"}
    result = _validate(h, "implementation", params=params)
    assert (result.kind, result.reason) == ("block", "tasks.md has 2 unticked checkbox(es)")
    h.artifacts.write(REF, "tasks.md", "## Task list\n- [x] one\n- [X] two\n")
    assert _validate(h, "implementation", params=params).kind == "pass"
    h.artifacts.write(REF, "tasks.md", "## Task list\nnothing to tick\n")
    assert _validate(h, "implementation", params=params).reason == (
        "tasks.md has no checkboxes to check"
    )


def test_planned_absence_when_the_author_node_was_skipped() -> None:
    h = Harness()
    params = {"validates": "tasks.md", "checkmarks": "complete"}
    assert _validate(h, "implementation", params=params).reason == "missing tasks.md"
    h.state.nodes["tasks-breakdown"] = NodeRecord(outcome="skipped")
    assert _validate(h, "implementation", params=params).kind == "pass"


def test_planned_absence_for_a_declared_skip_not_yet_reached() -> None:
    h = Harness()
    h.state.skips["tasks-breakdown"] = Skip("selection", "tasks-breakdown")
    assert _validate(h, "implementation", params={"validates": "tasks.md"}).kind == "pass"


def test_a_forged_skip_on_a_required_node_excuses_nothing() -> None:
    graph = mini_graph(
        nodes=[
            {"id": "phase-selection", "actor": "human", "required": True, "produces": "p.md"},
            {"id": "a", "skippable": True, "validates": "p.md"},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        edges=[
            {"from": "phase-selection", "to": "a", "on": "selected"},
            {"from": "a", "to": "done", "on": "pass"},
            {"from": "a", "to": "done", "on": "skipped"},
        ],
    )
    h = Harness(graph=graph)
    h.state.skips["phase-selection"] = Skip("forged", "phase-selection")
    assert _validate(h, "a").reason == "missing p.md"


def test_a_check_with_nothing_to_read_blocks() -> None:
    h = Harness()
    result = _validate(h, "verification", params={"sections": ["Verification"]})
    assert result.kind == "block"
    assert "has checks but no artifact to read" in result.reason


def test_an_unreadable_store_waits() -> None:
    h = Harness()
    h.artifacts.fail = True
    result = _validate(h, "brainstorming")
    assert result.kind == "wait"
    assert "could not read brainstorm.md" in result.reason


def test_explainer_records_are_validated_by_the_evidence_rules() -> None:
    h = Harness()
    h.artifacts.write(REF, "evidence/spec-explainer.md", RECORD)
    assert _validate(h, "spec-explainer").kind == "pass"
    h.artifacts.write(REF, "evidence/spec-explainer.md", RECORD.replace("| 3 |", "| 4 |"))
    result = _validate(h, "spec-explainer")
    assert result.kind == "block"
    assert "evidence/spec-explainer.md: Questions 4 does not match depth standard" in result.reason


def test_a_repo_path_location_must_exist() -> None:
    h = Harness()
    record = RECORD.replace(
        "https://example.com/artifact/1", "docs/specs/issue-7/explainer/explainer.html"
    ).replace("own artifact", "committed HTML")
    h.artifacts.write(REF, "evidence/spec-explainer.md", record)
    assert _validate(h, "spec-explainer").kind == "block"
    h.artifacts.write(REF, "explainer/explainer.html", "<html></html>")
    assert _validate(h, "spec-explainer").kind == "pass"


def test_helpers_parse_front_matter_sections_and_alternatives() -> None:
    assert front_matter("---\nstatus: approved\nn: 1\n---\nbody") == {"status": "approved", "n": 1}
    assert front_matter("no front matter") is None
    assert front_matter("---\n: : bad\n---\n") is None
    assert section_body("## A\nx\n### sub\ny\n## B\nz", "a") == "x\n### sub\ny"
    assert split_alternatives(["a.md|b.md", "c.md"]) == [("a.md", "b.md"), ("c.md",)]
    assert split_alternatives(None) == []
    with pytest.raises(ValueError, match="not an artifact name"):
        split_alternatives([""])


# -- reviewer-briefing: the unfilled template is refused (issue 23, "Smaller") -----------------
def _briefing_template() -> str:
    from jinja2 import Environment

    from tests.conftest import REPO_ROOT

    source = (REPO_ROOT / "templates" / "pr-briefing.md").read_text("utf-8")
    return Environment(trim_blocks=True, lstrip_blocks=True).from_string(source).render(
        item=str(REF), spec_dir="docs/specs/issue-7", explainer_location=None, rows=[])


def test_the_briefing_template_with_its_placeholders_unfilled_is_refused() -> None:
    h = Harness()
    h.artifacts.write(REF, "pr-briefing.md", _briefing_template())
    result = _validate(h, "reviewer-briefing")
    assert result.kind == "block"
    assert result.reason == (
        "pr-briefing.md: section '## What changed' is empty; "
        "pr-briefing.md: section '## Where to look closely' is empty; "
        "pr-briefing.md: section '## Risks and how they were checked' is empty")


def test_the_briefing_with_every_section_filled_in_passes() -> None:
    h = Harness()
    filled = _briefing_template().replace("<!--", "Filled in. <!--")
    h.artifacts.write(REF, "pr-briefing.md", filled)
    assert _validate(h, "reviewer-briefing").kind == "pass"
