"""The explainer evidence records (explainer design C6).

An agent that publishes an explainer page writes one record beside the spec:
``evidence/spec-explainer.md`` (section ``## Spec explainer``) at ``spec-explainer`` and
``evidence/explainer.md`` (section ``## Explainer``) at ``code-explainer``. Each holds a
two-column table::

    ## Spec explainer

    | Field | Value |
    |---|---|
    | Depth | standard |
    | Location | docs/specs/issue-7/explainer/explainer.html |
    | Published as | committed HTML |
    | Questions | 3 |

``validate-artifacts`` calls :func:`validate_record`; ``post-quiz-attestation`` and
``loopgate briefing`` read ``Location`` through :func:`parse_record`. Pure: no I/O here,
the caller supplies the text and a ``path_exists`` callable.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from engine.errors import LoopgateError

__all__ = [
    "DEPTH_QUESTIONS",
    "PUBLISHED_AS",
    "RECORDS",
    "EvidenceError",
    "Record",
    "parse_record",
    "validate_record",
    "render_record",
    "record_kind",
    "assignment_lines",
    "is_url",
]

#: The depth ladder: depth -> number of quiz questions (explainer design C7, issue 5 §1).
DEPTH_QUESTIONS: dict[str, int] = {"micro": 0, "standard": 3, "deep": 5}

#: Record kinds: node id -> (path relative to the item's spec directory, section title).
RECORDS: dict[str, tuple[str, str]] = {
    "spec-explainer": ("evidence/spec-explainer.md", "Spec explainer"),
    "code-explainer": ("evidence/explainer.md", "Explainer"),
}

#: The publishing table's rows (design C7). loopgate itself only uses "committed HTML".
PUBLISHED_AS: tuple[str, ...] = ("spec-chain artifact tab", "own artifact", "committed HTML")

_FIELDS = {"depth": "Depth", "location": "Location", "published as": "Published as",
           "questions": "Questions"}
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"^\[[^\]]*\]\((?P<url>[^)\s]+)\)$")
# A repository path: plain characters only. It ends up in the quiz comment's copy-paste
# view commands (design C3), so no spaces, quotes, colons (``javascript:``) or shell syntax.
_SAFE_PATH = re.compile(r"^[A-Za-z0-9._@+~/-]+$")


class EvidenceError(LoopgateError):
    """An evidence record cannot be read: its section is missing (message names it)."""


@dataclass(frozen=True)
class Record:
    """One explainer record, as written (values are the table's raw cell text).

    Attributes:
        depth: ``micro``, ``standard`` or ``deep`` when valid ("" when the row is absent).
        location: an http(s) URL or a path relative to the repository root.
        published_as: one of :data:`PUBLISHED_AS` when valid.
        questions: the question count as written (e.g. ``"3"``).
    """

    depth: str
    location: str
    published_as: str
    questions: str

    @property
    def question_count(self) -> int | None:
        """``questions`` as an int, or None when it is not a non-negative integer."""
        text = self.questions.strip()
        return int(text) if text.isdigit() else None


def _section_lines(text: str, section: str) -> list[str] | None:
    """Lines under the heading ``section`` up to the next heading of the same or higher
    level, or None when no such heading exists. Headings match case-insensitively."""
    lines = text.replace("\r\n", "\n").split("\n")
    wanted = section.strip().lower()
    for index, line in enumerate(lines):
        match = _HEADING.match(line.strip())
        if match and match[2].strip().lower() == wanted:
            level = len(match[1])
            body: list[str] = []
            for later in lines[index + 1:]:
                other = _HEADING.match(later.strip())
                if other and len(other[1]) <= level:
                    break
                body.append(later)
            return body
    return None


def _cells(line: str) -> list[str] | None:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return None
    return [cell.strip() for cell in stripped.strip("|").split("|")]


def _clean_value(value: str) -> str:
    """Undo the Markdown a person may wrap a value in: backticks, ``<url>``, ``[t](url)``."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "`":
        value = value[1:-1].strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1].strip()
    link = _LINK.match(value)
    return link["url"] if link else value


def _table(lines: list[str]) -> dict[str, str]:
    """``field (lower-case) -> value`` from the rows of the first ``| Field | Value |``
    table; the separator row and unknown fields are ignored."""
    rows: dict[str, str] = {}
    for line in lines:
        cells = _cells(line)
        if cells is None or len(cells) < 2:
            continue
        key = cells[0].strip("*_ ").lower()
        if key in _FIELDS and key not in rows:
            rows[key] = _clean_value("|".join(cells[1:]))
    return rows


def parse_record(text: str, section: str) -> Record:
    """Read the ``| Field | Value |`` table under ``## <section>``.

    Args:
        text: the record file's text (Markdown).
        section: the section title without ``##``: ``Spec explainer`` or ``Explainer``
            (see :data:`RECORDS`).

    Returns:
        The record; a row that is absent reads as "".

    Raises:
        EvidenceError: the section heading is missing (the message names it).
    """
    lines = _section_lines(text, section)
    if lines is None:
        raise EvidenceError(f"the evidence record has no '## {section}' section")
    rows = _table(lines)
    return Record(
        depth=rows.get("depth", ""),
        location=rows.get("location", ""),
        published_as=rows.get("published as", ""),
        questions=rows.get("questions", ""),
    )


def is_url(value: str) -> bool:
    """True for an absolute ``http://`` or ``https://`` URL with a host."""
    parsed = urlparse(value.strip())
    return parsed.scheme in ("http", "https") and bool(parsed.netloc) and " " not in value


def _location_problem(location: str, path_exists: Callable[[str], bool]) -> str | None:
    if not location:
        return "Location is missing (an http(s) URL or a repository path)"
    if is_url(location):
        return None
    path = location[2:] if location.startswith("./") else location
    if not _SAFE_PATH.match(path) or path.startswith("/") or ".." in path.split("/"):
        return (f"Location {location!r} is neither an http(s) URL nor a path relative to "
                "the repository root")
    if not path_exists(path):
        return (f"Location {location!r} is neither an http(s) URL nor an existing "
                "repository path")
    return None


def _depth_problems(record: Record) -> list[str]:
    ladder = ", ".join(DEPTH_QUESTIONS)
    if record.depth not in DEPTH_QUESTIONS:
        shown = repr(record.depth) if record.depth else "missing"
        return [f"Depth {shown} is not on the ladder ({ladder})"]
    expected = DEPTH_QUESTIONS[record.depth]
    count = record.question_count
    if count is None:
        shown = repr(record.questions) if record.questions else "missing"
        return [f"Questions {shown} is not a number (depth {record.depth} expects {expected})"]
    if count != expected:
        return [f"Questions {count} does not match depth {record.depth} "
                f"(the ladder says {expected})"]
    return []


def validate_record(text: str, section: str, path_exists: Callable[[str], bool]) -> list[str]:
    """Check an explainer record against design C6 and the depth ladder.

    Args:
        text: the record file's text.
        section: ``Spec explainer`` or ``Explainer``.
        path_exists: answers whether a path relative to the repository root exists
            (``ArtifactStore.repo_path_exists`` bound to the work item).

    Returns:
        Problems, each naming the offending field and value; empty when the record is good.
    """
    try:
        record = parse_record(text, section)
    except EvidenceError as exc:
        return [str(exc)]
    problems = _depth_problems(record)
    location = _location_problem(record.location, path_exists)
    if location:
        problems.append(location)
    allowed = {p.lower() for p in PUBLISHED_AS}
    if record.published_as.lower() not in allowed:
        shown = repr(record.published_as) if record.published_as else "missing"
        problems.append(f"Published as {shown} is not one of: {', '.join(PUBLISHED_AS)}")
    return problems


def render_record(section: str, depth: str, location: str, published_as: str,
                  questions: int) -> str:
    """The record's Markdown, in the shape :func:`parse_record` reads.

    Args:
        section: ``Spec explainer`` or ``Explainer``.
        depth: a key of :data:`DEPTH_QUESTIONS`.
        location: an http(s) URL or a repository path.
        published_as: one of :data:`PUBLISHED_AS`.
        questions: the number of quiz questions on the page.

    Returns:
        The Markdown text, ending in a newline.

    Raises:
        EvidenceError: a value contains ``|`` or a newline (it would break the table).
    """
    values = {"Depth": depth, "Location": location, "Published as": published_as,
              "Questions": str(questions)}
    for name, value in values.items():
        if "|" in value or "\n" in value:
            raise EvidenceError(f"{name} {value!r} cannot go in a table cell ('|' or newline)")
    rows = "".join(f"| {name} | {value} |\n" for name, value in values.items())
    return f"## {section}\n\n| Field | Value |\n|---|---|\n{rows}"


def record_kind(validates: tuple[str, ...] | list[str]) -> str | None:
    """The :data:`RECORDS` kind (``spec-explainer`` / ``code-explainer``) whose record a
    node's ``validates`` names, or None when it names none."""
    for kind, (path, _section) in RECORDS.items():
        if path in validates:
            return kind
    return None


def assignment_lines(kind: str, spec_dir: str) -> list[str]:
    """What an explainer assignment says about its record (issue 14 §3): the record's
    exact table, the allowed depths with their question counts, the publishing values,
    and the render command, so a first claim can pass.

    Args:
        kind: a key of :data:`RECORDS`.
        spec_dir: the item's spec directory (``docs/specs/issue-7``).

    Returns:
        Markdown lines (a fenced example of the record, then bullets).
    """
    path, section = RECORDS[kind]
    page = f"{spec_dir}/explainer/explainer.html"
    content = f"{spec_dir}/explainer/{'spec' if kind == 'spec-explainer' else 'code'}.yaml"
    example = render_record(section, "standard", page, "committed HTML",
                            DEPTH_QUESTIONS["standard"]).rstrip("\n").splitlines()
    depths = ", ".join(f"`{d}` ({n} questions)" for d, n in DEPTH_QUESTIONS.items())
    published = ", ".join(f"`{p}`" for p in PUBLISHED_AS)
    return [
        f"- Render the page: `loopgate explainer render {content} --out {page}` "
        f"(check the content first: `loopgate explainer check {content}`)",
        f"- Then write the record `{spec_dir}/{path}`, exactly this table (your values):",
        "",
        "  ```markdown",
        *[f"  {line}".rstrip() for line in example],
        "  ```",
        "",
        f"- Depth: one of {depths}; Questions must match it",
        "- Location: the page, as a path in this repository or an http(s) URL",
        f"- Published as: one of {published}",
    ]
