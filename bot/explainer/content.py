"""Explainer content files: loading, schema validation and the quiz rules (issue 5 §1).

An agent writes a content file (YAML or JSON) and loopgate renders the page from it, so
no raw markup from a ticket or a diff ever reaches the page. The shape is checked by
``templates/explainer/content.schema.json``; the rules below need more than one value at
a time and are checked here. Every refusal names the rule and where it was broken,
e.g. ``question 2: exactly one option must be correct (found 2)``.

The quiz rules (also the checklist in ``templates/reference/explainer.md``):

1. Questions per depth: micro 0, standard 3, deep 5 (:data:`engine.evidence.DEPTH_QUESTIONS`).
2. Each question has 3 or 4 options.
3. Exactly one option of each question is correct.
4. Each option has feedback.
5. The author fixes the correct position and balances it: no position (A, B, C, D) is
   correct more often than ⌈N/k⌉ times, N = number of questions, k = the largest number
   of options any question has (with mixed 3- and 4-option quizzes the larger k gives the
   stricter bound, and it is always satisfiable for N ≤ 5).
6. No "all of the above" / "none of the above" (nor both/neither, above/below) options.
7. Every question is answerable from the page alone. Operationally: each question names
   a ``source``, the id of a section of the same page (``background``, ``intuition``,
   ``code``, ``risks``) that holds its answer, and that section must be present.
8. The spec variant has no Code section unless the design has code-level detail
   (``designHasCode: true``); the code variant must have one.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from engine.errors import LoopgateError
from engine.evidence import DEPTH_QUESTIONS

__all__ = [
    "SECTION_IDS",
    "SECTION_TITLES",
    "LETTERS",
    "Content",
    "ContentError",
    "ContentParseError",
    "content_schema",
    "check_content",
    "content_from_mapping",
    "load_content",
    "parse_text",
]

#: Section ids in page order (a question's ``source`` names one of them).
SECTION_IDS: tuple[str, ...] = ("background", "intuition", "code", "risks")
#: Headings of the section contract (explainer design C7).
SECTION_TITLES: dict[str, str] = {
    "background": "Background",
    "intuition": "Intuition",
    "code": "Code",
    "risks": "Risks & limits",
}
#: Option letters by position.
LETTERS = "ABCD"

_ALL_OR_NONE = re.compile(
    r"\b(all|none|both|neither)\s+of\s+(the\s+)?(above|below|these|those)\b", re.IGNORECASE
)


class ContentError(LoopgateError):
    """A content file was refused.

    Attributes:
        source: the file (or label) the content came from.
        problems: one line per violated rule, each naming the rule and where.
    """

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(problems))
        self.source = source
        self.problems = problems


class ContentParseError(ContentError):
    """A content file that does not parse as YAML/JSON (one problem).

    Attributes:
        line: 1-based line of the problem (0 when the parser gave none).
        column: 1-based column (0 when unknown).
    """

    def __init__(self, source: str, problem: str, line: int, column: int) -> None:
        super().__init__(source, [problem])
        self.line = line
        self.column = column

    def located(self) -> str:
        """``<file>:<line>:<column>: <problem>``, the one line a person needs."""
        where = f"{self.source}:{self.line}:{self.column}" if self.line else self.source
        return f"{where}: {self.problems[0]}"


@lru_cache(maxsize=1)
def content_schema() -> dict[str, Any]:
    """The content JSON Schema (package data ``templates/explainer/content.schema.json``)."""
    text = resources.files("templates").joinpath("explainer/content.schema.json").read_text(
        "utf-8"
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass(frozen=True)
class Content:
    """One validated content file, normalised.

    Normalisation: every code excerpt carries ``location`` as ``file:line`` (``file`` +
    ``line`` are folded into it), every option carries ``correct`` as a bool, and
    ``designHasCode`` is present.

    Attributes:
        data: the normalised mapping (what the page embeds for re-rendering).
        source: where it came from, for messages.
    """

    data: dict[str, Any]
    source: str = "content"

    @property
    def variant(self) -> str:
        """``spec`` or ``code``."""
        return str(self.data["variant"])

    @property
    def depth(self) -> str:
        """``micro``, ``standard`` or ``deep``."""
        return str(self.data["depth"])

    @property
    def work_item(self) -> str:
        """``owner/repo#N``."""
        return str(self.data["workItem"])

    @property
    def title(self) -> str:
        """The page title the content gives."""
        return str(self.data["title"])

    @property
    def questions(self) -> list[dict[str, Any]]:
        """The quiz questions in order."""
        return list(self.data["quiz"]["questions"])

    @property
    def section_ids(self) -> tuple[str, ...]:
        """The sections present, in page order."""
        return tuple(s for s in SECTION_IDS if s in self.data["sections"])


# --- schema errors -> messages that name the question and the rule -------------------


def _where(path: list[Any]) -> str:
    """A readable location for a schema error path."""
    if len(path) >= 3 and path[:2] == ["quiz", "questions"] and isinstance(path[2], int):
        where = f"question {path[2] + 1}"
        rest = path[3:]
        if len(rest) >= 2 and rest[0] == "options" and isinstance(rest[1], int):
            letter = LETTERS[rest[1]] if rest[1] < len(LETTERS) else str(rest[1] + 1)
            where += f", option {letter}"
            rest = rest[2:]
        return where + "".join(f": {p}" for p in rest)
    if len(path) >= 4 and path[:3] == ["sections", "code", "excerpts"]:
        return f"code excerpt {path[3] + 1}" + "".join(f": {p}" for p in path[4:])
    text = ""
    for part in path:
        text += f" item {part + 1}" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(top level)"


def _correct_count(options: Any) -> int:
    if not isinstance(options, list):
        return 0
    return sum(1 for o in options if isinstance(o, Mapping) and o.get("correct") is True)


def _schema_message(error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    where, owner, last = _where(path), _where(path[:-1]), (path[-1:] or [None])[0]
    validator = error.validator
    if last == "options" and validator in ("minItems", "maxItems"):
        return f"{owner}: each question has 3–4 options (found {len(error.instance)})"
    if last == "options" and validator in ("contains", "minContains", "maxContains"):
        found = _correct_count(error.instance)
        return f"{owner}: exactly one option must be correct (found {found})"
    if validator == "required" and "option" in where and "'feedback'" in error.message:
        return f"{where}: each option has feedback (none given)"
    if validator == "enum" and last == "source":
        return (f"{owner}: source {error.instance!r} is not a section id "
                f"({', '.join(SECTION_IDS)})")
    if validator == "oneOf" and where.startswith("code excerpt"):
        return f"{where}: give either location 'file:line' or file and line"
    if validator == "pattern" and last == "location":
        return f"{owner}: location {error.instance!r} is not of the form file:line"
    if path == ["workItem"] and validator == "pattern":
        return f"workItem: {error.instance!r} is not of the form owner/repo#N"
    if validator == "minLength" or (validator == "pattern" and error.validator_value == r"\S"):
        return f"{where}: must not be empty"
    return f"{where}: {error.message}"


def _schema_problems(data: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(content_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    return list(dict.fromkeys(_schema_message(e) for e in errors))  # unique, in order


# --- the quiz rules -----------------------------------------------------------------


def _questions(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    quiz = data.get("quiz")
    questions = quiz.get("questions") if isinstance(quiz, Mapping) else None
    if not isinstance(questions, list):
        return []
    return [q if isinstance(q, Mapping) else {} for q in questions]


def _options(question: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    options = question.get("options")
    if not isinstance(options, list):
        return []
    return [o if isinstance(o, Mapping) else {} for o in options]


def _rule_depth(data: Mapping[str, Any]) -> list[str]:
    depth = data.get("depth")
    if depth not in DEPTH_QUESTIONS:
        return []
    expected, found = DEPTH_QUESTIONS[depth], len(_questions(data))
    if found == expected:
        return []
    return [f"quiz: questions per depth: {depth} needs exactly {expected} questions "
            f"(found {found}; micro 0, standard 3, deep 5)"]


def _rule_balance(data: Mapping[str, Any]) -> list[str]:
    questions = _questions(data)
    sizes = [len(_options(q)) for q in questions if len(_options(q)) in (3, 4)]
    if not sizes:
        return []
    total, k = len(questions), max(sizes)
    limit = math.ceil(total / k)
    seen: dict[int, list[int]] = {}
    problems = []
    for number, question in enumerate(questions, start=1):
        flags = [o.get("correct") is True for o in _options(question)]
        if flags.count(True) != 1:
            continue
        position = flags.index(True)
        seen.setdefault(position, []).append(number)
        if len(seen[position]) == limit + 1:
            earlier = ", ".join(str(n) for n in seen[position][:-1])
            problems.append(
                f"question {number}: correct positions must be balanced: position "
                f"{LETTERS[position]} is already correct in question(s) {earlier} "
                f"(at most ⌈{total}/{k}⌉ = {limit} per position)"
            )
    return problems


def _rule_all_or_none(data: Mapping[str, Any]) -> list[str]:
    problems = []
    for number, question in enumerate(_questions(data), start=1):
        for index, option in enumerate(_options(question)):
            text = option.get("text")
            match = _ALL_OR_NONE.search(text) if isinstance(text, str) else None
            if match and index < len(LETTERS):
                problems.append(f"question {number}, option {LETTERS[index]}: no "
                                f"\"all/none of the above\" options (found {match[0]!r})")
    return problems


def _rule_distinct_options(data: Mapping[str, Any]) -> list[str]:
    problems = []
    for number, question in enumerate(_questions(data), start=1):
        texts = [str(o.get("text", "")).strip().lower() for o in _options(question)]
        duplicates = sorted({t for t in texts if t and texts.count(t) > 1})
        if duplicates:
            problems.append(f"question {number}: two options have the same text "
                            f"({duplicates[0]!r})")
    return problems


def _present_sections(data: Mapping[str, Any]) -> list[str]:
    sections = data.get("sections")
    if not isinstance(sections, Mapping):
        return []
    return [s for s in SECTION_IDS if isinstance(sections.get(s), Mapping)]


def _rule_sources(data: Mapping[str, Any]) -> list[str]:
    present = _present_sections(data)
    problems = []
    for number, question in enumerate(_questions(data), start=1):
        source = question.get("source")
        if source in SECTION_IDS and source not in present:
            problems.append(f"question {number}: every question is answerable from the page "
                            f"alone: source {source!r} is not a section of this page "
                            f"(sections: {', '.join(present) or 'none'})")
    return problems


def _rule_code_section(data: Mapping[str, Any]) -> list[str]:
    has_code = "code" in _present_sections(data)
    variant = data.get("variant")
    if variant == "spec" and has_code and data.get("designHasCode") is not True:
        return ["sections.code: the spec variant has no Code section unless the design has "
                "code-level detail (set designHasCode: true only when design.md does)"]
    if variant == "code" and not has_code:
        return ["sections.code: the code variant needs a Code section with excerpts in "
                "execution order"]
    if variant == "code" and "designHasCode" in data:
        return ["designHasCode: applies to the spec variant only"]
    return []


_RULES = (_rule_depth, _rule_balance, _rule_all_or_none, _rule_distinct_options,
          _rule_sources, _rule_code_section)


def check_content(data: Any) -> list[str]:
    """Every problem with a content mapping: the schema first, then the quiz rules.

    Args:
        data: the parsed content file.

    Returns:
        One message per violation, each naming the rule and the question or field;
        empty when the content may be rendered.
    """
    problems = _schema_problems(data)
    if not isinstance(data, Mapping):
        return problems
    for rule in _RULES:
        problems.extend(p for p in rule(data) if p not in problems)
    return problems


def _normalise(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(data))  # a deep, JSON-clean copy
    if out["variant"] == "spec":
        out.setdefault("designHasCode", False)
    for excerpt in out["sections"].get("code", {}).get("excerpts", []):
        if "location" not in excerpt:
            excerpt["location"] = f"{excerpt.pop('file')}:{excerpt.pop('line')}"
    for question in out["quiz"]["questions"]:
        for option in question["options"]:
            option["correct"] = option.get("correct") is True
    return out


def content_from_mapping(data: Any, source: str = "content") -> Content:
    """Validate a parsed content mapping and return it normalised.

    Args:
        data: the parsed YAML/JSON.
        source: a label for messages (usually the file path).

    Returns:
        The :class:`Content`.

    Raises:
        ContentError: with every violated rule.
    """
    problems = check_content(data)
    if problems:
        raise ContentError(source, problems)
    return Content(_normalise(data), source)


def parse_text(text: str, source: str = "content") -> Any:
    """Parse YAML or JSON text (JSON is YAML; a ``.json`` source is read as strict JSON).

    Raises:
        ContentError: the text does not parse.
    """
    try:
        if source.endswith(".json"):
            return json.loads(text)
        return yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise ContentParseError(source, f"not valid JSON: {exc.msg}", exc.lineno,
                                exc.colno) from None
    except yaml.YAMLError as exc:
        # PyYAML's own text is a multi-line dump naming "<unicode string>" (issue 23 §3):
        # keep its problem and context, and the position of the problem.
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        detail = f"{problem} ({context})" if context else str(problem)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        raise ContentParseError(source, f"not valid YAML: {detail}", line, column) from None


def load_content(path: str | Path) -> Content:
    """Read, parse and validate a content file.

    Args:
        path: a ``.yaml``/``.yml`` or ``.json`` file.

    Returns:
        The validated :class:`Content`.

    Raises:
        ContentError: unreadable, unparsable, or breaking a rule (all problems listed).
    """
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise ContentParseError(str(file), f"not UTF-8 text (byte {exc.start})", 0, 0) from None
    except OSError as exc:
        raise ContentParseError(str(file), f"cannot read: {exc.strerror or exc}", 0, 0) from None
    return content_from_mapping(parse_text(text, str(file)), str(file))
