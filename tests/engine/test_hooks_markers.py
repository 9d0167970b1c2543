"""The wire markers (engine.hooks.markers) and the quiz record's Location reader."""

from __future__ import annotations

import pytest

from engine.hooks.markers import (
    SELF_MARKER,
    QuizMarker,
    any_attestation_ticked,
    attestation_line,
    attestation_ticked,
    has_quiz_marker,
    parse_quiz_markers,
    quiz_kind,
    quiz_marker,
    with_self_marker,
)
from engine.hooks.quiz import record_location
from engine.ports import SELF_MARKER as PORTS_SELF_MARKER


def test_self_marker_is_the_ports_marker() -> None:
    assert SELF_MARKER == PORTS_SELF_MARKER == "<!-- the-loop:agent-comment -->"


def test_quiz_marker_round_trips() -> None:
    marker = quiz_marker("spec-quiz", "0123456789ab")
    assert marker == "<!-- the-loop:quiz spec-quiz digest=0123456789ab -->"
    assert quiz_marker("code-quiz", None) == "<!-- the-loop:quiz code-quiz digest=- -->"
    body = f"text\n{marker}\n{quiz_marker('code-quiz', '-')}"
    assert parse_quiz_markers(body) == [
        QuizMarker("spec-quiz", "0123456789ab"),
        QuizMarker("code-quiz", "-"),
    ]
    assert has_quiz_marker(body, "spec-quiz", "0123456789ab")
    assert not has_quiz_marker(body, "spec-quiz", "ffffffffffff")


@pytest.mark.parametrize(("node", "digest"), [("Spec Quiz", "-"), ("spec-quiz", "XYZ")])
def test_quiz_marker_refuses_bad_parts(node: str, digest: str) -> None:
    with pytest.raises(ValueError, match="quiz"):
        quiz_marker(node, digest)


def test_attestation_lines_are_anchored_per_kind() -> None:
    assert quiz_kind("spec-quiz") == "spec" and quiz_kind("code-quiz") == "code"
    ticked = attestation_line("spec", ticked=True)
    assert ticked == "- [x] I have read the spec explainer and taken the spec quiz."
    assert attestation_ticked(f"intro\r\n{ticked}\r\n", "spec")
    assert attestation_ticked(ticked.replace("[x]", "[X]").replace("- ", "* ", 1), "spec")
    assert not attestation_ticked(attestation_line("spec"), "spec")
    assert not attestation_ticked(f"quote: {ticked}", "spec")
    assert not attestation_ticked(f"{ticked} (not really)", "spec")
    assert not attestation_ticked(ticked, "code")
    assert any_attestation_ticked(attestation_line("code", ticked=True))


def test_with_self_marker_appends_markers_last() -> None:
    body = with_self_marker("hello\n\n", "<!-- the-loop:x -->")
    assert body == f"hello\n\n<!-- the-loop:x -->\n{SELF_MARKER}\n"


def test_record_location_reads_the_row_for_any_record_name() -> None:
    text = "| Field | Value |\n|---|---|\n| **Location** | `docs/x.html` |\n"
    assert record_location(text, "evidence/other.md") == "docs/x.html"
    assert record_location("no table", "evidence/other.md") == ""
