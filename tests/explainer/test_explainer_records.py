"""The evidence records (explainer design C6) as ``validate-artifacts`` checks them."""

from __future__ import annotations

import pytest

from engine.evidence import (
    DEPTH_QUESTIONS,
    RECORDS,
    EvidenceError,
    parse_record,
    render_record,
    validate_record,
)

PAGE = "docs/specs/issue-7/explainer/explainer.html"


def _exists(*paths: str):
    return lambda path: path in paths


def _record(section: str = "Spec explainer", depth: str = "standard", location: str = PAGE,
            published: str = "committed HTML", questions: str = "3") -> str:
    return (f"# Evidence\n\n## {section}\n\n| Field | Value |\n|---|---|\n| Depth | {depth} |\n"
            f"| Location | {location} |\n| Published as | {published} |\n"
            f"| Questions | {questions} |\n\n## Notes\n\n| Depth | deep |\n")


def test_the_record_kinds_and_the_ladder_are_the_designs() -> None:
    assert RECORDS == {
        "spec-explainer": ("evidence/spec-explainer.md", "Spec explainer"),
        "code-explainer": ("evidence/explainer.md", "Explainer"),
    }
    assert DEPTH_QUESTIONS == {"micro": 0, "standard": 3, "deep": 5}


def test_parse_reads_the_table_under_its_section_only() -> None:
    record = parse_record(_record(), "Spec explainer")
    assert (record.depth, record.location, record.published_as, record.questions) == (
        "standard", PAGE, "committed HTML", "3")
    assert record.question_count == 3


def test_parse_undoes_backticks_and_links() -> None:
    text = _record(location="[the page](https://example.com/a)", depth="`deep`")
    record = parse_record(text, "Spec explainer")
    assert (record.location, record.depth) == ("https://example.com/a", "deep")


def test_parse_refuses_a_record_without_its_section() -> None:
    with pytest.raises(EvidenceError, match="no '## Explainer' section"):
        parse_record(_record(), "Explainer")


def test_a_good_record_with_an_existing_path_validates() -> None:
    assert validate_record(_record(), "Spec explainer", _exists(PAGE)) == []


def test_a_good_record_with_a_url_validates_without_touching_the_repository() -> None:
    def never(path: str) -> bool:
        raise AssertionError("a URL must not be looked up as a path")

    text = _record(section="Explainer", depth="deep", questions="5",
                   location="https://claude.ai/code/artifact/abc", published="own artifact")
    assert validate_record(text, "Explainer", never) == []


def test_the_missing_section_is_a_problem() -> None:
    assert validate_record("# nothing here\n", "Explainer", _exists(PAGE)) == [
        "the evidence record has no '## Explainer' section"
    ]


def test_a_depth_off_the_ladder_is_a_problem() -> None:
    problems = validate_record(_record(depth="medium"), "Spec explainer", _exists(PAGE))
    assert problems == ["Depth 'medium' is not on the ladder (micro, standard, deep)"]


@pytest.mark.parametrize(("depth", "questions"), [("micro", "3"), ("standard", "5"),
                                                  ("deep", "3")])
def test_questions_not_matching_the_depth_is_a_problem(depth: str, questions: str) -> None:
    problems = validate_record(_record(depth=depth, questions=questions), "Spec explainer",
                               _exists(PAGE))
    expected = DEPTH_QUESTIONS[depth]
    assert problems == [f"Questions {questions} does not match depth {depth} "
                        f"(the ladder says {expected})"]


def test_non_numeric_questions_is_a_problem() -> None:
    problems = validate_record(_record(questions="three"), "Spec explainer", _exists(PAGE))
    assert problems == ["Questions 'three' is not a number (depth standard expects 3)"]


def test_a_location_that_does_not_exist_is_a_problem() -> None:
    problems = validate_record(_record(), "Spec explainer", _exists())
    assert problems == [f"Location {PAGE!r} is neither an http(s) URL nor an existing "
                        "repository path"]


@pytest.mark.parametrize("location", ["/etc/passwd", "../outside.html", "ftp://example.com/x",
                                      "javascript:alert(1)"])
def test_a_location_outside_the_repository_or_not_http_is_a_problem(location: str) -> None:
    problems = validate_record(_record(location=location), "Spec explainer",
                               lambda path: True)
    assert len(problems) == 1 and problems[0].startswith(f"Location {location!r} is neither")


def test_a_missing_location_and_publishing_row_are_problems() -> None:
    text = ("## Spec explainer\n\n| Field | Value |\n|---|---|\n| Depth | micro |\n"
            "| Questions | 0 |\n")
    assert validate_record(text, "Spec explainer", _exists(PAGE)) == [
        "Location is missing (an http(s) URL or a repository path)",
        "Published as missing is not one of: spec-chain artifact tab, own artifact, "
        "committed HTML",
    ]


def test_render_record_round_trips_through_validation() -> None:
    text = render_record("Explainer", "deep", PAGE, "committed HTML", 5)
    assert text.startswith("## Explainer\n\n| Field | Value |\n|---|---|\n| Depth | deep |\n")
    assert validate_record(text, "Explainer", _exists(PAGE)) == []


def test_render_record_refuses_a_pipe_in_a_value() -> None:
    with pytest.raises(EvidenceError, match="Location"):
        render_record("Explainer", "deep", "a|b", "committed HTML", 5)
