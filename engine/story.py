"""The thread tells the story (issue 23 §2): one line on the issue when a gate passes
(an approval, a quiz attestation, the phase selection) and when the item completes, naming
who and the next step.

Pure text builders; the runtime emits them as ``PostComment`` effects, so they are posted
after commit, exactly once (the effect key's marker), and each carries a marker of its own
per visit (``<!-- the-loop:gate-passed <node> visit=<n> -->``, ``<!-- the-loop:completed
-->``) plus loopgate's self marker, so no gate ever reads them as a person's answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.effects import Notify
from engine.hooks.markers import with_self_marker
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED, SELECTED
from engine.refs import WorkItemRef
from engine.visits import Visit

__all__ = ["announces", "gate_passed_marker", "gate_passed_comment", "COMPLETED_MARKER",
           "completed_comment", "SELF_CONFIRMING_HOOKS", "AUTHOR_NOTICE", "author_passed",
           "author_completed"]

#: The notifier event that DMs the work item's author (issue 24 §3): a gate passed, or
#: the item is complete. Emitted with the thread's story line, so once per visit.
AUTHOR_NOTICE = "author-update"

#: Exit hooks that post their own confirmation when their gate passes (the phase
#: selection's "✅ Phase selection recorded by …"): their gates get no second line.
SELF_CONFIRMING_HOOKS = ("classify-phase-selection",)

#: The completion line's marker (one per item: an item completes once).
COMPLETED_MARKER = "<!-- the-loop:completed -->"
_WORDS = {APPROVED: "approved", APPROVED_WITH_COMMENTS: "approved with comments",
          SELECTED: "phases selected"}


def announces(visit: Visit | None) -> bool:
    """True when ``visit`` passed its gate with a person's decision (not ``changes
    requested``: the reviewer's own reply says that, and the assignment that follows)."""
    return (visit is not None and visit.decision is not None and bool(visit.decision.by)
            and visit.outcome != CHANGES_REQUESTED and not visit.open)


def gate_passed_marker(node_id: str, visit: int) -> str:
    """``<!-- the-loop:gate-passed <node> visit=<n> -->``."""
    return f"<!-- the-loop:gate-passed {node_id} visit={visit} -->"


def _what(visit: Visit) -> str:
    decision = visit.decision
    doc: Mapping[str, Any] = decision.document if decision is not None else {}
    if doc.get("attestedBy"):
        return "attested"
    outcome = (decision.outcome if decision is not None else "") or visit.outcome
    return _WORDS.get(outcome, outcome or "passed")


def gate_passed_comment(node_id: str, visit: Visit, next_step: str) -> str:
    """The line for a passed gate, markers included.

    Args:
        node_id: the gate.
        visit: its visit that passed (with the decision).
        next_step: what happens now, one sentence (:func:`next_step` of the runtime's
            settled walk), e.g. "Next: `design` — write design.md."

    Returns:
        ``✅ `node` passed — approved by @bob (visit 2). <next_step>`` plus markers.
    """
    who = visit.decision.by if visit.decision is not None else "someone"
    again = f" (visit {visit.number})" if visit.number > 1 else ""
    line = f"✅ `{node_id}` passed — {_what(visit)} by {who}{again}. {next_step}".rstrip()
    return with_self_marker(line, gate_passed_marker(node_id, visit.number))


def completed_comment(ref: WorkItemRef) -> str:
    """The line for a completed item, markers included."""
    return with_self_marker(f"🏁 {ref} is complete: every gate on its walk passed.",
                            COMPLETED_MARKER)


def author_passed(ref: WorkItemRef, node_id: str, visit: Visit, next_node: str,
                  next_description: str, complete: bool) -> Notify:
    """The author's DM for a passed gate (issue 24 §3).

    Args:
        ref: the work item.
        node_id: the gate that passed.
        visit: its visit that passed (with the decision).
        next_node: the node the walk goes to ("" when none).
        next_description: that node's description.
        complete: the walk ends there (the DM also says the item is complete; no second
            one follows).

    Returns:
        A :class:`~engine.effects.Notify` of :data:`AUTHOR_NOTICE` with data ``{kind:
        "gate-passed", node, visit, what, by, nextNode, nextDescription, complete}``.
    """
    who = visit.decision.by if visit.decision is not None else ""
    return Notify(ref, AUTHOR_NOTICE, {
        "kind": "gate-passed", "node": node_id, "visit": visit.number, "what": _what(visit),
        "by": who, "nextNode": next_node, "nextDescription": next_description,
        "complete": complete})


def author_completed(ref: WorkItemRef, node_id: str) -> Notify:
    """The author's DM for a completed item (``{kind: "complete", node, visit: 1}``)."""
    return Notify(ref, AUTHOR_NOTICE, {"kind": "complete", "node": node_id, "visit": 1})
