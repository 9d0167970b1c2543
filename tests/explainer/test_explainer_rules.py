"""The content schema and the quiz rules (issue 5 §1): each refusal names rule and question."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.explainer.content import (
    ContentError,
    check_content,
    content_from_mapping,
    content_schema,
    load_content,
)
from tests.explainer.conftest import EXAMPLES, example


def _option(text: str, correct: bool = False) -> dict[str, Any]:
    return {"text": text, "feedback": f"feedback on {text}", "correct": correct}


def _question(correct_at: int, count: int = 3, source: str = "intuition") -> dict[str, Any]:
    return {"prompt": f"question with answer {correct_at}", "source": source,
            "options": [_option(f"option {i}", i == correct_at) for i in range(count)]}


def test_the_examples_pass_every_rule() -> None:
    assert check_content(example("spec")) == []
    assert check_content(example("code")) == []


def test_the_example_files_load_from_disk() -> None:
    spec = load_content(EXAMPLES / "spec.yaml")
    assert (spec.variant, spec.depth, len(spec.questions)) == ("spec", "standard", 3)
    assert spec.section_ids == ("background", "intuition", "risks")


def test_a_json_content_file_loads_like_yaml(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(example("spec")), "utf-8")
    assert load_content(path).data["workItem"] == "acme/widgets#42"


def test_the_schema_is_valid_draft_2020_12() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(content_schema())


@pytest.mark.parametrize(("depth", "count"), [("micro", 0), ("standard", 3), ("deep", 5)])
def test_questions_per_depth_on_the_ladder_pass(depth: str, count: int) -> None:
    data = example("spec")
    data["depth"] = depth
    data["quiz"]["questions"] = [_question(i % 3) for i in range(count)]
    assert check_content(data) == []


@pytest.mark.parametrize(("depth", "count", "expected"),
                         [("micro", 1, 0), ("standard", 2, 3), ("deep", 3, 5), ("standard", 5, 3)])
def test_questions_off_the_ladder_are_refused(depth: str, count: int, expected: int) -> None:
    data = example("spec")
    data["depth"] = depth
    data["quiz"]["questions"] = [_question(i % 3) for i in range(count)]
    assert check_content(data) == [
        f"quiz: questions per depth: {depth} needs exactly {expected} questions "
        f"(found {count}; micro 0, standard 3, deep 5)"
    ]


def test_two_correct_options_are_refused_naming_the_question() -> None:
    data = example("spec")
    data["quiz"]["questions"][1]["options"][2]["correct"] = True
    assert "question 2: exactly one option must be correct (found 2)" in check_content(data)


def test_no_correct_option_is_refused_naming_the_question() -> None:
    data = example("spec")
    for option in data["quiz"]["questions"][2]["options"]:
        option["correct"] = False
    assert "question 3: exactly one option must be correct (found 0)" in check_content(data)


@pytest.mark.parametrize("count", [2, 5])
def test_option_counts_outside_three_to_four_are_refused(count: int) -> None:
    data = example("spec")
    data["quiz"]["questions"][0] = _question(0, count=count)
    problems = check_content(data)
    assert f"question 1: each question has 3–4 options (found {count})" in problems


def test_an_option_without_feedback_is_refused_naming_question_and_option() -> None:
    data = example("spec")
    del data["quiz"]["questions"][1]["options"][0]["feedback"]
    assert check_content(data) == ["question 2, option A: each option has feedback (none given)"]


def test_empty_feedback_is_refused() -> None:
    data = example("spec")
    data["quiz"]["questions"][0]["options"][1]["feedback"] = "   "
    assert check_content(data) == ["question 1, option B: feedback: must not be empty"]


def test_unbalanced_correct_positions_are_refused_naming_the_question() -> None:
    data = example("spec")
    data["quiz"]["questions"] = [_question(0), _question(1), _question(0)]
    assert check_content(data) == [
        "question 3: correct positions must be balanced: position A is already correct "
        "in question(s) 1 (at most ⌈3/3⌉ = 1 per position)"
    ]


def test_balance_uses_the_largest_option_count_as_k() -> None:
    data = example("code")  # deep: 5 questions
    data["quiz"]["questions"] = [_question(p, count=4, source="code") for p in (0, 1, 2, 3, 1)]
    assert check_content(data) == []
    data["quiz"]["questions"][4] = _question(0, count=3, source="code")
    data["quiz"]["questions"][3] = _question(0, count=4, source="code")
    assert check_content(data) == [
        "question 5: correct positions must be balanced: position A is already correct "
        "in question(s) 1, 4 (at most ⌈5/4⌉ = 2 per position)"
    ]


@pytest.mark.parametrize("text", ["All of the above", "none of the above.", "Both of these"])
def test_all_or_none_of_the_above_options_are_refused(text: str) -> None:
    data = example("spec")
    data["quiz"]["questions"][0]["options"][2]["text"] = text
    problems = check_content(data)
    assert len(problems) == 1
    assert problems[0].startswith("question 1, option C: no \"all/none of the above\" options")


def test_a_question_whose_source_is_not_on_the_page_is_refused() -> None:
    data = example("spec")  # the spec example has no code section
    data["quiz"]["questions"][1]["source"] = "code"
    assert check_content(data) == [
        "question 2: every question is answerable from the page alone: source 'code' is not "
        "a section of this page (sections: background, intuition, risks)"
    ]


def test_an_unknown_source_id_is_refused() -> None:
    data = example("spec")
    data["quiz"]["questions"][0]["source"] = "appendix"
    assert check_content(data) == [
        "question 1: source 'appendix' is not a section id (background, intuition, code, risks)"
    ]


def test_a_question_without_source_is_refused() -> None:
    data = example("spec")
    del data["quiz"]["questions"][0]["source"]
    assert check_content(data) == ["question 1: 'source' is a required property"]


def _code_section() -> dict[str, Any]:
    return {"excerpts": [{"location": "design.md:12", "note": "the wire format",
                          "code": "<!-- the-loop:quiz spec-quiz digest=abc -->"}]}


def test_the_spec_variant_refuses_a_code_section_without_design_code() -> None:
    data = example("spec")
    data["sections"]["code"] = _code_section()
    assert check_content(data) == [
        "sections.code: the spec variant has no Code section unless the design has "
        "code-level detail (set designHasCode: true only when design.md does)"
    ]


def test_the_spec_variant_allows_code_when_the_design_has_code() -> None:
    data = example("spec")
    data["sections"]["code"] = _code_section()
    data["designHasCode"] = True
    assert check_content(data) == []


def test_the_code_variant_requires_a_code_section() -> None:
    data = example("code")
    del data["sections"]["code"]
    for question in data["quiz"]["questions"]:
        question["source"] = "intuition"
    assert check_content(data) == [
        "sections.code: the code variant needs a Code section with excerpts in execution order"
    ]


def test_an_excerpt_needs_file_and_line() -> None:
    data = example("code")
    data["sections"]["code"]["excerpts"][0]["location"] = "engine/evidence.py"
    assert check_content(data) == [
        "code excerpt 1: location 'engine/evidence.py' is not of the form file:line"
    ]


def test_file_plus_line_is_normalised_to_a_location() -> None:
    content = content_from_mapping(example("code"))
    excerpt = content.data["sections"]["code"]["excerpts"][1]
    assert excerpt["location"] == "engine/ports.py:110"
    assert "file" not in excerpt and "line" not in excerpt


def test_unknown_keys_are_refused() -> None:
    data = example("spec")
    data["sections"]["background"]["html"] = "<b>x</b>"
    assert check_content(data) == [
        "sections.background: Additional properties are not allowed ('html' was unexpected)"
    ]


def test_a_bad_work_item_is_refused() -> None:
    data = example("spec")
    data["workItem"] = "widgets#42"
    assert check_content(data) == ["workItem: 'widgets#42' is not of the form owner/repo#N"]


def test_several_violations_are_all_reported() -> None:
    data = example("spec")
    data["quiz"]["questions"][0]["options"][1]["correct"] = True
    data["quiz"]["questions"][2]["options"][0]["text"] = "None of the above"
    problems = check_content(data)
    assert "question 1: exactly one option must be correct (found 2)" in problems
    assert any(p.startswith("question 3, option A: no \"all/none") for p in problems)


def test_content_error_carries_every_problem() -> None:
    data = example("spec")
    data["depth"] = "deep"
    with pytest.raises(ContentError) as caught:
        content_from_mapping(data, "spec.yaml")
    assert caught.value.source == "spec.yaml"
    assert caught.value.problems[0].startswith("quiz: questions per depth: deep needs exactly 5")


def test_unparsable_yaml_is_refused_with_the_file_named(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("variant: [spec\n", "utf-8")
    with pytest.raises(ContentError) as caught:
        load_content(path)
    assert caught.value.source == str(path)
    assert caught.value.problems[0].startswith("not valid YAML")
