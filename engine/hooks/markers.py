"""Every wire marker loopgate writes into tracker comments, in one place.

Markers are HTML comments, invisible when GitHub renders the Markdown, that let loopgate
find its own comments again (idempotent posting) and let the poller and webhook router
recognise a quiz comment. The formats are the designs' wire formats, kept verbatim:

* ``<!-- the-loop:agent-comment -->`` — loopgate wrote this comment (:data:`SELF_MARKER`).
* ``<!-- the-loop:phase-selection -->`` — the phase-selection checklist (issue #2 §6).
* ``<!-- the-loop:quiz <node> digest=<hex12|-> -->`` — a quiz attestation comment
  (explainer design C3, "Data models").

loopgate's own additions in the same style:

* ``<!-- the-loop:assignment <node> entered=<enteredAt> -->`` — ``deliver-assignment``.
* ``<!-- the-loop:review-request <node> entered=<enteredAt> -->`` — ``request-review``.
* ``<!-- the-loop:selection-confirmation -->`` — the phase-selection confirmation.
* ``<!-- the-loop:entry <node> rev=<revision> -->`` — beside the assignment and review
  markers: the committed state revision the node entry started from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.ports import SELF_MARKER

__all__ = [
    "SELF_MARKER",
    "PHASE_SELECTION_MARKER",
    "CONFIRMATION_MARKER",
    "QUIZ_MARKER_PREFIX",
    "QuizMarker",
    "quiz_marker",
    "parse_quiz_markers",
    "has_quiz_marker",
    "assignment_prefix",
    "assignment_marker",
    "review_prefix",
    "review_marker",
    "entry_marker",
    "quiz_kind",
    "attestation_line",
    "attestation_ticked",
    "any_attestation_ticked",
    "with_self_marker",
]

PHASE_SELECTION_MARKER = "<!-- the-loop:phase-selection -->"
CONFIRMATION_MARKER = "<!-- the-loop:selection-confirmation -->"
#: What the poller and webhook router look for before parsing a quiz marker fully.
QUIZ_MARKER_PREFIX = "<!-- the-loop:quiz "

# Node ids are kebab-case; the digest is 12 lower-case hex characters or "-" (none).
_QUIZ_MARKER = re.compile(
    r"<!-- the-loop:quiz (?P<node>[a-z0-9][a-z0-9-]*) digest=(?P<digest>[0-9a-f]{12}|-) -->"
)
_NODE_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_DIGEST = re.compile(r"^(?:[0-9a-f]{12}|-)$")

# The attestation lines of design C3, one per quiz kind.
_ATTESTATION_TEXT = {
    "spec": "I have read the spec explainer and taken the spec quiz.",
    "code": "I have read the explainer and taken the code quiz.",
}


@dataclass(frozen=True)
class QuizMarker:
    """A parsed quiz marker.

    Attributes:
        node: the quiz node id (``spec-quiz``, ``code-quiz``).
        digest: the 12-hex spec digest, or ``-`` when the quiz has none.
    """

    node: str
    digest: str


def quiz_marker(node: str, digest: str | None) -> str:
    """The quiz marker for ``node`` and ``digest`` (design C3 wire format).

    Args:
        node: the quiz node id (kebab-case).
        digest: 12 lower-case hex characters, or None/``-`` for a quiz without digest.

    Returns:
        ``<!-- the-loop:quiz <node> digest=<hex12|-> -->``.

    Raises:
        ValueError: ``node`` is not kebab-case or ``digest`` is not 12 hex / ``-``.
    """
    value = digest or "-"
    if not _NODE_ID.match(node):
        raise ValueError(f"not a node id for a quiz marker: {node!r}")
    if not _DIGEST.match(value):
        raise ValueError(f"not a quiz digest (12 hex or '-'): {value!r}")
    return f"<!-- the-loop:quiz {node} digest={value} -->"


def parse_quiz_markers(body: str | None) -> list[QuizMarker]:
    """Every quiz marker in ``body``, in order of appearance."""
    return [QuizMarker(m["node"], m["digest"]) for m in _QUIZ_MARKER.finditer(body or "")]


def has_quiz_marker(body: str | None, node: str, digest: str) -> bool:
    """True when ``body`` carries the quiz marker of exactly ``node`` and ``digest``."""
    return QuizMarker(node, digest or "-") in parse_quiz_markers(body)


def assignment_prefix(node: str) -> str:
    """What every ``deliver-assignment`` marker of ``node`` starts with."""
    return f"<!-- the-loop:assignment {node} entered="


def _entry(entered_at: str, visit: int) -> str:
    # A visit past the first is named too: two entries within one clock second (a fast
    # walk back) are two visits and get two posts (issue 19 §2). The first visit's marker
    # keeps its old form, so comments posted before visits were kept still match.
    return f"{entered_at or '-'}" + (f" visit={visit}" if visit > 1 else "")


def assignment_marker(node: str, entered_at: str, visit: int = 1) -> str:
    """The ``deliver-assignment`` marker: one assignment per node entry (visit)."""
    return f"{assignment_prefix(node)}{_entry(entered_at, visit)} -->"


def review_prefix(node: str) -> str:
    """What every ``request-review`` marker of ``node`` starts with."""
    return f"<!-- the-loop:review-request {node} entered="


def review_marker(node: str, entered_at: str, visit: int = 1) -> str:
    """The ``request-review`` marker: one review request per node entry (visit)."""
    return f"{review_prefix(node)}{_entry(entered_at, visit)} -->"


def entry_marker(node: str, revision: int) -> str:
    """The committed state a node entry started from: ``<!-- the-loop:entry <node> rev=<R> -->``.

    A transaction that posted a comment and then never committed (the process was killed
    in between) is retried from the same committed revision with a new ``enteredAt``; this
    marker lets the retry find the comment the lost attempt posted.
    """
    return f"<!-- the-loop:entry {node} rev={revision} -->"


def quiz_kind(node: str) -> str:
    """``spec`` for the spec quiz (a node id starting ``spec-``), else ``code``.

    The kind picks the comment's wording and its attestation line (design C3).
    """
    return "spec" if node.startswith("spec-") else "code"


def attestation_line(kind: str, ticked: bool = False) -> str:
    """The attestation checkbox line for ``kind`` (``spec`` or ``code``).

    Raises:
        KeyError: for an unknown kind.
    """
    return f"- [{'x' if ticked else ' '}] {_ATTESTATION_TEXT[kind]}"


def _ticked_pattern(kind: str) -> re.Pattern[str]:
    # Anchored to a whole line (design "Security design": one anchored regex for the
    # attestation line), so the sentence quoted inside other text never counts.
    return re.compile(
        r"^[ \t]*[-*][ \t]+\[[xX]\][ \t]+" + re.escape(_ATTESTATION_TEXT[kind]) + r"[ \t]*\r?$",
        re.MULTILINE,
    )


_TICKED = {kind: _ticked_pattern(kind) for kind in _ATTESTATION_TEXT}


def attestation_ticked(body: str | None, kind: str) -> bool:
    """True when ``body`` has the ``kind`` attestation line on a line of its own, ticked.

    Raises:
        KeyError: for an unknown kind.
    """
    return bool(_TICKED[kind].search(body or ""))


def any_attestation_ticked(body: str | None) -> bool:
    """True when ``body`` has either attestation line ticked (the poller's candidate test)."""
    return any(pattern.search(body or "") for pattern in _TICKED.values())


_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def spoken_lines(body: str | None) -> list[str]:
    """The lines of ``body`` a person says in their own voice: quoted lines (``>``), fenced
    code blocks (``` or ~~~) and indented code (four spaces or a tab) left out, as GitHub's
    Markdown renders them apart. A keyword quoted from someone else, or shown as code, is
    no instruction (issue 19: a quoted ``the-loop execute`` executed)."""
    spoken: list[str] = []
    fenced = False
    for line in (body or "").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or line.startswith(("    ", "\t")) or line.lstrip().startswith(">"):
            continue
        spoken.append(line)
    return spoken


def says(body: str | None, keyword: str) -> bool:
    """True when a spoken line of ``body`` (:func:`spoken_lines`) contains ``keyword``,
    case-insensitively (an empty keyword is never said)."""
    wanted = keyword.strip().lower()
    return bool(wanted) and any(wanted in line.lower() for line in spoken_lines(body))


def with_self_marker(body: str, *markers: str) -> str:
    """``body`` followed by ``markers`` and :data:`SELF_MARKER`, one per line."""
    tail = "\n".join((*markers, SELF_MARKER))
    return f"{body.rstrip()}\n\n{tail}\n"
