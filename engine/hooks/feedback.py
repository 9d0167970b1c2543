"""Human review gates: ``classify-feedback`` and ``record-feedback`` (issue #2 §3).

The words a reviewer writes, matched case-insensitively at the start of a line (bullets,
quotes and ``**``/`` ` `` emphasis around the words are ignored):

* ``approved with comments`` / ``approve with comments`` / ``lgtm with comments``
  → ``approved-with-comments``
* ``changes requested`` / ``request changes`` / ``requested changes`` /
  ``requesting changes`` → ``changes-requested``
* ``approved`` / ``approve`` / ``lgtm`` → ``approved``

Quoted lines (``> approved``) never count.

One comment with several decisive lines reads as its most cautious one
(changes-requested, then approved-with-comments, then approved). Across comments the
latest decisive one wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.approvals import (
    CODEOWNERS_ALL_FILES,
    VIA_REPLY,
    Approval,
    GateApprovals,
    People,
    Refusal,
    Tally,
    evaluate,
    tally,
)
from engine.dispatch import record as agent_record
from engine.effects import PostComment
from engine.events import Decision
from engine.hooks.chat_decision import (
    decision_body,
    decision_text,
    from_chat,
    mirror_decision,
    surface_label,
)
from engine.hooks.common import (
    at_login,
    authorized_comments,
    event_comments,
    gate_people,
    gate_rule,
    is_self_authored,
    latest,
    team_lookup,
)
from engine.hooks.markers import with_self_marker
from engine.hooks.registry import HookContext, HookResult, hook
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED
from engine.ports import Comment, TrackerError
from engine.records import ReviewDecision
from engine.settings import normalize_login
from engine.visits import Visit

__all__ = [
    "Feedback", "classify_text", "latest_feedback", "classify_feedback", "record_feedback",
    "unauthorized_deciders", "event_decisions", "gate_tally", "GateCount",
]

# Bullets, emphasis and headings may precede the words; a quoted line ("> approved")
# is someone else's words and never counts.
_LEAD = r"^[\s*_`#-]*"
_END = r"(?![\w-])"  # the word ends here ("approvedly" or "approved-ish" do not count)
# An approval is said, not asked or hedged: the line ends there or goes on after a mark
# ("approved.", "LGTM, ship it", "approved 🎉"), never with a question mark or more words
# ("Approve?", "approve once CI is green", "LGTM except the schema", "Approved by whom?").
# A fresh-eyes trial; when unsure, the gate waits.
_SAID = _END + r"(?=[ \t]*(?:$|[^\w\s?]))"
_PATTERNS = (
    (
        CHANGES_REQUESTED,
        re.compile(_LEAD + r"(changes\s+requested|request(?:ed|ing)?\s+changes)" + _END),
    ),
    (
        APPROVED_WITH_COMMENTS,
        re.compile(_LEAD + r"(approved?|lgtm)\s+with\s+comments" + _SAID),
    ),
    (APPROVED, re.compile(_LEAD + r"(approved?|lgtm)" + _SAID)),
)


@dataclass(frozen=True)
class Feedback:
    """A classified review reply.

    Attributes:
        outcome: ``approved``, ``approved-with-comments`` or ``changes-requested``.
        comment: the comment that decided it.
    """

    outcome: str
    comment: Comment

    def decision(self, at: str) -> ReviewDecision:
        """The gate's :class:`~engine.records.ReviewDecision` (``by`` is ``@login``)."""
        return ReviewDecision(at_login(self.comment.author), at, self.outcome,
                              self.comment.url, self.comment.id)


def classify_text(body: str | None) -> str | None:
    """The outcome a comment body states, or None when it states none."""
    found = set()
    for line in (body or "").lower().splitlines():
        for outcome, pattern in _PATTERNS:
            if pattern.match(line):
                found.add(outcome)
                break  # the first (most specific) pattern on a line decides that line
    for outcome, _ in _PATTERNS:  # most cautious first
        if outcome in found:
            return outcome
    return None


def latest_feedback(ctx: HookContext) -> Feedback | None:
    """The latest decisive, authorized, non-self-authored comment of the event, or None
    (the plain ``authorizedUsers`` reading; the gate itself counts through
    :func:`gate_tally`)."""
    decisive = [c for c in authorized_comments(ctx) if classify_text(c.body)]
    chosen = latest(decisive)
    if chosen is None:
        return None
    outcome = classify_text(chosen.body)
    assert outcome is not None  # filtered above
    return Feedback(outcome, chosen)


# -- the gate's approvals (issue 11 §2) ----------------------------------------------------


def event_decisions(ctx: HookContext) -> list[Approval]:
    """The event's decisions, oldest first: decisive replies that are not loopgate's own,
    or the chat surface's :class:`~engine.events.Decision` (issue 20 §1).

    A chat decision is recorded with its surface's ``via`` (``slack``) and no comment id
    (it exists only there), its words kept as :func:`~engine.hooks.chat_decision.
    decision_body`; otherwise it is decided exactly like a reply (issue 12 §1). Comments
    of a legacy event whose ``via`` names a chat surface are read the same way."""
    chat = ctx.event.get("decision")
    if isinstance(chat, Decision):
        if chat.node != ctx.node.id:
            return []
        return [Approval(normalize_login(chat.by), chat.outcome, ctx.now_iso(), chat.via,
                         "", None, decision_body(chat.outcome, chat.text))]
    via = str(ctx.event.get("via") or VIA_REPLY)
    chat_via = from_chat(via)
    out = []
    for c in event_comments(ctx):
        outcome = classify_text(c.body)
        if outcome and not is_self_authored(c, ctx.settings):
            out.append(Approval(normalize_login(c.author), outcome, c.created_at or ctx.now_iso(),
                                via if chat_via else VIA_REPLY, "" if chat_via else c.url,
                                None if chat_via else c.id, c.body))
    indexed = sorted(enumerate(out), key=lambda pair: (pair[1].at, pair[0]))
    return [a for _, a in indexed]


def _stored(ctx: HookContext) -> GateApprovals:
    # This entry's record: a re-entered gate (after changes requested) starts from zero.
    # Tied to the visit (issue 19 §2): two entries within one clock second stay apart; an
    # entry recorded before visits were kept has no ``visit``: its enteredAt decides.
    rec = ctx.state.nodes.get(ctx.node.id)
    entered = rec.entered_at if rec is not None else ""
    visit = ctx.state.visit(ctx.node.id)
    number = visit.number if visit is not None else 0
    entry = _recorded(ctx)
    if entry is not None and entry.belongs_to(entered, number):
        return GateApprovals(entered, number, entry.approvals, entry.refused, entry.earlier)
    return GateApprovals(entered, number)


def _recorded(ctx: HookContext) -> GateApprovals | None:
    # surface.approvals[node] as stored (the one reader: GateApprovals.from_json).
    return GateApprovals.from_json((ctx.state.surface.get("approvals") or {}).get(ctx.node.id))


@dataclass
class GateCount:
    """What :func:`gate_tally` found: the tally, the entry to store, who was refused now,
    and whether whose-work-it-is could not be read (the event must be offered again)."""

    tally: Tally
    entry: GateApprovals
    refused_now: list[Refusal]
    unverified: str = ""
    counted_now: list[Approval] = field(default_factory=list)
    earlier: list[dict[str, Any]] = field(default_factory=list)
    people: People | None = None  # whose work it is, when it was read


def _seen(entry: GateApprovals, decision: Approval) -> bool:
    if decision.comment_id is None:
        return _repeated(entry, decision)
    ids = {a.comment_id for a in entry.approvals} | {r.comment_id for r in entry.refused}
    return decision.comment_id in ids


def _repeated(entry: GateApprovals, decision: Approval) -> bool:
    # A chat click has no comment id: one that says again what the person's counted
    # decision says (a second click on Approve) changes nothing, so it is neither recorded
    # again nor mirrored on the issue a second time (issue 12 §1).
    for prior in entry.approvals:
        if prior.by == decision.by and prior.outcome == decision.outcome and (
                decision.outcome != APPROVED_WITH_COMMENTS or prior.body == decision.body):
            return True
    return False


def gate_tally(ctx: HookContext) -> GateCount:
    """Count the event's decisions into this gate entry's approvals under its rule
    (:func:`engine.approvals.evaluate` for each, oldest first). GitHub replies written
    before the gate's current visit began do not count (issue 19 §2, :func:`_this_visit`).

    Returns:
        A :class:`GateCount`; ``unverified`` says why nothing was counted when the work's
        authors could not be read (fail closed; the ingress retries); ``earlier`` lists
        ``{commentId, author, reason}`` for each reply of an earlier visit offered now for
        the first time during this visit (each is named once).
    """
    known = set(_stored(ctx).earlier)
    count = _gate_tally(ctx)
    fresh = [n for n in count.entry.earlier if n not in known]
    count.earlier = [_earlier_entry(ctx, n) for n in fresh]
    return count


def _gate_tally(ctx: HookContext) -> GateCount:
    # gate_tally's count, before the replies of an earlier visit are named.
    rule = gate_rule(ctx)
    entry = _stored(ctx)
    approvals = entry.approvals
    decisions, earlier = _this_visit(ctx, entry, [
        d for d in event_decisions(ctx) if not _seen(entry, d)])
    entry = replace(entry, earlier=tuple(earlier))
    changes: Approval | None = None
    refused: list[Refusal] = []
    counted: list[Approval] = []
    # all-files and agentAuthored decide with whose work it is, even on an empty event.
    if not decisions and rule.codeowners != CODEOWNERS_ALL_FILES and not rule.agent_approvals:
        return GateCount(tally(rule, approvals), entry, refused)
    try:
        people = gate_people(ctx, rule)
    except TrackerError as exc:
        return GateCount(tally(rule, approvals), entry, refused,
                         unverified=f"could not read who authored the work ({exc})")
    membership = team_lookup(ctx)
    if not decisions:  # issue 24: the owned files and the authorship may differ now
        return GateCount(tally(rule, approvals, people=people, membership=membership),
                         entry, refused, people=people)
    for decision in decisions:
        result = evaluate(rule, approvals, decision, authorized_users=ctx.settings.authorized_users,
                          people=people, membership=membership)
        if not result.verdict.allowed:
            refused.append(Refusal(decision.by, result.verdict.reason, decision.at, decision.via,
                                   decision.comment_id))
            continue
        counted.append(decision)
        approvals, changes = result.tally.approvals, result.tally.changes
    entry = replace(entry, approvals=tuple(approvals), refused=(*entry.refused, *refused))
    return GateCount(tally(rule, approvals, changes, people=people, membership=membership),
                     entry, refused, counted_now=counted, people=people)


def _this_visit(ctx: HookContext, entry: GateApprovals,
                decisions: list[Approval]) -> tuple[list[Approval], list[str]]:
    """Split ``decisions`` into those written during the gate's current visit and the
    ``by:commentId`` keys of GitHub replies written before it (issue 19 §2: a decision is
    bound to the visit it answered). A reply held back on an earlier visit (unverified,
    a failed lookup) and offered again must not decide a later one.

    Order: a reply counts when its comment id is above the visit's ``after_comment`` (the
    newest comment loopgate had been offered when the visit began; GitHub's comment ids
    increase, so no two clocks are compared). A later visit (2, 3, ...) with no such anchor
    (none seen yet, or begun before it was kept) falls back to ``created_at >=
    entered_at``, which assumes GitHub's clock is not behind loopgate's; a first visit with
    none counts every reply, as before. A chat click (no comment id) is bound to the
    visit by ``expectNode`` already and is kept. The keys returned extend
    ``entry.earlier`` (the caller stores them) so each is named once."""
    visit = ctx.state.visit(ctx.node.id)
    if visit is None:
        return decisions, list(entry.earlier)
    kept: list[Approval] = []
    earlier = list(entry.earlier)
    for d in decisions:
        if d.comment_id is None or _during(visit, d):
            kept.append(d)
            continue
        key = f"{d.by}:{d.comment_id}"
        if key not in earlier:
            earlier.append(key)
    return kept, earlier


def _during(visit: Visit, d: Approval) -> bool:
    """True when reply ``d`` may answer ``visit`` (see :func:`_this_visit`)."""
    return visit.takes_comment(d.comment_id, d.at)


def _earlier_entry(ctx: HookContext, key: str) -> dict[str, Any]:
    # The event log's graph.comment_not_counted shape; its reason reads "@alice's reply was
    # written during visit 1; not counted for visit 2".
    by, _, cid = key.rpartition(":")
    history = ctx.state.history(ctx.node.id)
    number = history[-1].number if history else 1
    when = "before this gate's visit"
    for v in history[:-1]:  # the latest earlier visit begun before the reply was written
        if v.after_comment and int(cid or 0) > v.after_comment or not v.after_comment:
            when = f"during visit {v.number}"
    return {"commentId": int(cid or 0), "author": by,
            "reason": f"@{by}'s reply was written {when}; not counted for visit {number}"}


def _mirror_chat(ctx: HookContext, counted: list[Approval]) -> None:
    # A counted chat decision exists only on its surface: the gate posts it on the issue
    # as a marked comment so the thread stays the record (issue 12 §1). A refused one is
    # said there already by _tell_refused.
    for a in counted:
        if from_chat(a.via):
            mirror_decision(ctx, a.outcome, a.by, decision_text(a.body), a.via)


def _refusal_note(reason: str) -> str:
    # The default wording of someone simply not on the list stays short.
    return "not authorized" if " is not among the approvers" in reason and ";" not in reason \
        else reason


def _waiting_reason(ctx: HookContext, count: GateCount | None = None) -> str:
    rule = gate_rule(ctx)
    # Only who may still approve: someone already counted this visit cannot add a second
    # approval (the tally before the dash names them).
    approved = [a.by for a in count.tally.approvals] if count is not None else []
    who = rule.still_who(ctx.settings.authorized_users, approved)
    reason = (f"waiting for {who} to reply on {ctx.node.id}: "
              "approved, approved with comments, or changes requested" if who else
              f"waiting on {ctx.node.id}: everyone the rule names has approved and it asks "
              "for more approvals")
    if count is not None and (rule.approvals > 1 or count.tally.approvals):
        reason = f"{count.tally.summary()} — {reason}"
    refused: dict[str, str] = {}
    counted = {a.by for a in count.tally.approvals} if count is not None else set()
    for r in (count.entry.refused if count is not None else ()):
        if r.by not in counted:  # refused once, counted since (a lookup came back)
            refused[f"@{r.by or 'unknown'}"] = _refusal_note(r.reason)
    if refused:
        reason += " (ignored " + "; ".join(f"{who}: {why}" for who, why in sorted(
            refused.items())) + ")"
    return reason


def unauthorized_deciders(ctx: HookContext) -> list[str]:
    """Who, in the event, wrote a decisive reply without being authorized.

    Args:
        ctx: the hook's context (its event's comments and the settings).

    Returns:
        The sorted ``@login``s of the event's non-self-authored comments that state an
        outcome but whose author is not authorized (empty when there are none).
    """
    return sorted({
        at_login(c.author or "unknown")
        for c in event_comments(ctx)
        if classify_text(c.body) and not is_self_authored(c, ctx.settings)
        and not ctx.settings.is_authorized(c.author)
    })


def _tell_refused(ctx: HookContext, refused: list[Refusal]) -> None:
    # Issue 11: a refused approval is said on the thread, with the reason, once per reply.
    for r in refused:
        ctx.log("graph.approval_refused", {"node": ctx.node.id, "by": f"@{r.by}",
                                           "via": r.via, "reason": r.reason})
        body = (f"🚫 **Not counted — `{ctx.node.id}`**: the decision by @{r.by} "
                f"({surface_label(r.via) if from_chat(r.via) else 'reply'}) does not count: "
                f"{r.reason}.")
        key = r.comment_id if r.comment_id is not None else f"{r.via}-{r.at}"
        ctx.emit(PostComment(ctx.ref, with_self_marker(
            body, f"<!-- the-loop:approval-refused {ctx.node.id} {r.by} {key} -->")))


def _decision(ctx: HookContext, count: GateCount) -> ReviewDecision:
    chosen = count.tally.changes or count.tally.approvals[-1]
    return ReviewDecision(at_login(chosen.by), ctx.now_iso(), count.tally.outcome,
                          chosen.comment, chosen.comment_id or 0, via=chosen.via,
                          text=decision_text(chosen.body) if from_chat(chosen.via) else "",
                          approvers=tuple(at_login(a.by) for a in count.tally.approvals)
                          if count.tally.needed > 1 else ())


def _declined(ctx: HookContext, count: GateCount) -> HookResult | None:
    """A chat :class:`~engine.events.Decision` the rule refused: a wait carrying
    ``declined {by, reason}``, on which the runtime commits nothing (issue 20 §1: as the
    surface's own pre-check refused before, the click changes nothing and is said to the
    clicker only)."""
    if not isinstance(ctx.event.get("decision"), Decision) or not count.refused_now:
        return None
    r = count.refused_now[-1]
    return HookResult.wait(r.reason, declined={"by": r.by, "reason": r.reason})


@hook("classify-feedback")
def classify_feedback(ctx: HookContext) -> HookResult:
    """Route a human gate by its approvals under the gate's rule (issue 11 §2).

    Each decision of the event (thread replies; a chat surface's click) is authorized by
    :func:`engine.approvals.evaluate` and recorded in ``surface.approvals[node]``
    (``{enteredAt, visit, approvals: [{by, at, via, outcome, ...}], refused: [...]}``,
    one per visit to the gate, issue 19 §2); a refusal
    is logged and said on the thread with its reason. The latest counted
    ``changes-requested`` decides at once (the count resets); otherwise the gate passes
    once ``approvals`` distinct people approved.

    Returns:
        pass with ``outcome`` and ``decision {by, at, outcome, comment, commentId}``, or
        wait naming the tally and who is awaited (``unverified`` when whose work it is
        could not be read).
    """
    count = gate_tally(ctx)
    for e in count.earlier:
        ctx.log("graph.comment_not_counted", {"node": ctx.node.id, **e})
    note = f" ({'; '.join(e['reason'] for e in count.earlier)})" if count.earlier else ""
    if count.unverified:
        return HookResult.wait(f"{_waiting_reason(ctx, count)}{note} ({count.unverified})",
                               unverified=True)
    declined = _declined(ctx, count)
    if declined is not None:
        return declined
    _tell_refused(ctx, count.refused_now)
    _mirror_chat(ctx, count.counted_now)
    surface = {"approvals": {**(ctx.state.surface.get("approvals") or {}),
                             ctx.node.id: count.entry.to_json()}}
    if count.people is not None and gate_rule(ctx).agent_approvals:
        # Issue 24 §2: what the pull requests said, for `check` and the details page.
        surface["agent"] = agent_record(count.people)
    if not count.tally.passed:
        return HookResult.wait(_waiting_reason(ctx, count) + note, surface=surface)
    # A counted changes-requested resets the count; record-feedback still reads the outcome.
    changes = count.tally.changes
    done = replace(count.entry, approvals=() if changes else count.entry.approvals,
                   changes_requested=changes)
    surface["approvals"][ctx.node.id] = done.to_json()
    decision = _decision(ctx, count)
    return HookResult.passed(
        f"{count.tally.outcome} by {decision.by}"
        + (f" ({count.tally.summary()})" if count.tally.needed > 1 else ""),
        outcome=count.tally.outcome, decision=decision, surface=surface)


@hook("record-feedback")
def record_feedback(ctx: HookContext) -> HookResult:
    """On ``approved-with-comments`` append each counted reply with comments, attributed,
    to ``state.surface["reviewComments"]`` (append-only; loopgate has no repository write
    access, so the comments live with the item's state).

    It reads what ``classify-feedback`` recorded before it in the chain; without that
    (the hook alone), the event's latest authorized reply. Other outcomes pass
    unchanged; with no decision it waits like ``classify-feedback`` (it never passes a
    gate on its own).
    """
    entries = _commented_approvals(ctx)
    if entries is None:
        return HookResult.wait(_waiting_reason(ctx))
    outcome, commented = entries
    if outcome != APPROVED_WITH_COMMENTS:
        return HookResult.passed(outcome=outcome)
    existing = [dict(e) for e in ctx.state.surface.get("reviewComments") or ()]
    known = {_entry_key(e) for e in existing}
    new = [e for e in commented if _entry_key(e) not in known]
    if not new:
        return HookResult.passed("review comments already recorded", outcome=outcome)
    return HookResult.passed(
        "recorded review comments by " + ", ".join(e["by"] for e in new),
        outcome=outcome,
        surface={"reviewComments": [*existing, *new]},
    )


def _entry_key(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    # A reply is known by its comment id; a chat decision has none (it exists only on its
    # surface), so by its gate, person and time — else every later chat entry would read
    # as the first one's.
    cid = entry.get("commentId")
    if cid:
        return ("comment", cid)
    return ("chat", entry.get("node"), entry.get("by"), entry.get("at"))


def _commented_approvals(ctx: HookContext) -> tuple[str, list[dict[str, Any]]] | None:
    # (outcome, review-comment entries) of the decided gate, or None when undecided.
    # classify-feedback recorded this entry's approvals just before (same chain).
    entry = _stored(ctx)
    raw = _recorded(ctx)
    if raw is not None and raw.changes_requested is not None and raw.belongs_to(
            entry.entered_at, entry.visit or 0):
        # A counted changes-requested decided it, by whoever the rule allows (a team
        # member is not in authorizedUsers: the fallback below would not see them).
        return CHANGES_REQUESTED, []
    if entry.approvals:
        rule = gate_rule(ctx)
        approvals = list(entry.approvals)
        t = tally(rule, approvals)
        if not t.passed:
            return None
        return t.outcome, [_review_entry(ctx, a) for a in approvals
                           if a.outcome == APPROVED_WITH_COMMENTS]
    feedback = latest_feedback(ctx)
    if feedback is None:
        return None
    c = feedback.comment
    return feedback.outcome, [{"node": ctx.node.id, "by": at_login(c.author),
                               "at": c.created_at or ctx.now_iso(), "comment": c.url,
                               "commentId": c.id, "body": c.body}]


def _review_entry(ctx: HookContext, a: Approval) -> dict[str, Any]:
    return {"node": ctx.node.id, "by": at_login(a.by), "at": a.at, "comment": a.comment,
            "commentId": a.comment_id, "body": a.body}
