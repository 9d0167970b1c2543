"""Quiz attestations bound to the visit they answer (issue 19 §2, the gap its review found:
review replies were visit-bound, quiz ticks and typed lines were not).

A quiz node re-entered (visit 2, 3, ...: sent back by ``changes requested`` upstream, or
moved back by an operator) with the same digest found its earlier visit's quiz comment by
its marker, reused it, and counted a tick on it: the box ticked during visit 1, or an
un-tick/re-tick of that old box, passed visit 2 without anybody attesting to what visit 2
asks. Now:

- ``surface.quiz[node]`` records the ``visit`` it was posted for, and ``earlier``: the ids
  of the quiz comments of earlier visits;
- entering a later visit posts a new quiz comment (an earlier visit's is never reused);
- a tick on an earlier visit's comment does not count, and the wait and the thread say why;
- a typed attestation line counts only when written during the visit (its comment id is
  above the visit's ``after_comment``; without that anchor, on a later visit, written at or
  after the visit's ``entered_at``), as review replies are (engine.hooks.feedback).

Pure; used by :mod:`engine.hooks.quiz`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.hooks.registry import HookContext
from engine.ports import Comment

__all__ = ["visit_number", "entry_is_current", "earlier_ids", "written_during",
           "posted_for", "earlier_quiz_ids", "earlier_posting",
           "earlier_comment_reason", "earlier_line_reason"]


def visit_number(ctx: HookContext, node: str) -> int:
    """The number of ``node``'s current visit (1, 2, ...; 0 when the state keeps none)."""
    visit = ctx.state.visit(node)
    return visit.number if visit is not None else 0


def _entry_visit(entry: Mapping[str, Any]) -> int:
    try:
        return int(entry.get("visit") or 0)
    except (TypeError, ValueError):
        return 0


def posted_for(entry: Mapping[str, Any], current: int) -> bool:
    """True when quiz entry ``entry`` (``surface.quiz[node]``) was posted for visit
    ``current`` (1, 2, ...; 0 when the state keeps none). An entry written before visits
    were recorded in it counts as the first visit's: on a later visit a new quiz comment is
    posted (fail closed)."""
    recorded = _entry_visit(entry)
    return recorded == current or (recorded == 0 and current <= 1)


def entry_is_current(ctx: HookContext, node: str, entry: Mapping[str, Any]) -> bool:
    """True when quiz entry ``entry`` was posted for ``node``'s current visit
    (:func:`posted_for`)."""
    return posted_for(entry, visit_number(ctx, node))


def _ids(values: Any) -> list[int]:
    out = []
    for value in values or ():
        raw = value.get("id") if isinstance(value, Mapping) else value
        if isinstance(raw, int) and not isinstance(raw, bool):
            out.append(raw)
    return out


def earlier_quiz_ids(entry: Mapping[str, Any], current: int) -> list[int]:
    """The ids of the quiz comments posted for visits before ``current``: those ``entry``
    already names as ``earlier``, plus its own comments when it is an earlier visit's."""
    found = _ids(entry.get("earlier"))
    if entry and not posted_for(entry, current):
        found += [i for i in _ids(entry.get("comments")) if i not in found]
    return found


def earlier_ids(ctx: HookContext, node: str, entry: Mapping[str, Any]) -> list[int]:
    """:func:`earlier_quiz_ids` for ``node``'s current visit."""
    return earlier_quiz_ids(entry, visit_number(ctx, node))


def earlier_posting(entry: Mapping[str, Any], current: int) -> list[str]:
    """The effect keys of quiz posts queued for visits before ``current`` and not recorded
    as posted (a post whose answer was lost: GitHub may have created the comment, and its
    row is retried). ``entry`` (``surface.quiz[node]``) names them as ``earlierPosting``,
    plus its own ``posting`` when it is an earlier visit's. A comment carrying one of their
    markers is an earlier visit's, whatever its id: the visit's ``after_comment`` counts
    only the comments offered to loopgate, never its own."""
    found = [str(k) for k in entry.get("earlierPosting") or ()]
    if entry and not posted_for(entry, current):
        found += [str(k) for k in entry.get("posting") or () if str(k) not in found]
    return found


def written_during(ctx: HookContext, node: str, comment: Comment) -> bool:
    """True when ``comment`` may answer ``node``'s current visit: its id is above the
    visit's ``after_comment``; without that anchor, a first visit takes every comment and a
    later one those created at or after it was entered (engine.hooks.feedback's rule). A
    Slack click (comment id 0: no GitHub comment) is bound to the visit by the event's
    ``expectNode`` and the card's own check, and is kept, as feedback keeps it."""
    visit = ctx.state.visit(node)
    return visit is None or visit.takes_comment(comment.id, comment.created_at)


def earlier_comment_reason(node: str, comment_id: int, visit: int) -> str:
    """Why a tick on an earlier visit's quiz comment does not count (one line)."""
    return (f"comment {comment_id} is the {node} quiz comment of an earlier visit; a tick "
            f"there does not count for visit {visit}: tick the new quiz comment")


def earlier_line_reason(visit: int) -> str:
    """Why a typed attestation line written before the visit does not count."""
    return f"it was written before visit {visit} began; reply again with the line"
