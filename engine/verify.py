"""``loopgate verify``: re-derive each gate's verdict from GitHub's own records and compare
it with loopgate's (issue 22 §3).

An auditor should need no trust in loopgate's database. So for every gate of the item's
current visits this module takes what loopgate recorded (the visit's decision, the
approvals the gate counted, the quiz attestation, the heads the vouching gates covered)
and asks the tracker what it holds *now*: the comment the decision names (its author,
its text, and, through the edit history, whether anybody else edited it — the rule of
:mod:`engine.authorship`), the quiz comment's edit history (the rule of
:mod:`engine.hooks.quiz`: loopgate's own, current, ticked comment whose latest editor is
an authorized person), that each decision's comment was written during the visit it is
recorded for (:meth:`engine.visits.Visit.takes_comment`, the gates' own rule, issue 19 §2),
that a decision made in Slack has loopgate's own unedited echo on the thread (the
``the-loop:slack-decision`` mirror of an approval, the selection confirmation of an
Execute click), the gate's approval rule over the decisions that stand
(:func:`engine.approvals.evaluate`), and the delivering pull requests' heads against the
coverage (:func:`engine.mergegate.bind_to_head`). Then the published ``loopgate`` check on
each head is compared with what the re-derived verdicts would publish
(:func:`engine.mergegate.combine`, as the performer builds it).

No rule is written twice here: every judgement is the engine's own function; this module
only gathers the evidence, names what differs and says it in one line.

Pure over a :class:`Source` (the tracker's read methods plus ``published_check``): no HTTP.
A failed read raises :class:`~engine.ports.TrackerError`; the caller reports "GitHub
unreachable" and never "agrees" (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.approvals import Approval, authorize, evaluate, recorded_approvals, tally
from engine.authorship import judge
from engine.graph.model import Graph
from engine.hooks.chat_decision import decision_marker, decision_text, mirror_text
from engine.hooks.common import people_for, rule_for
from engine.hooks.feedback import classify_text
from engine.hooks.markers import CONFIRMATION_MARKER, attestation_ticked, quiz_kind
from engine.hooks.phase_selection import confirmation_head
from engine.hooks.quiz import latest_editor, quiz_comment_problem
from engine.hooks.quiz_visits import earlier_quiz_ids, posted_for
from engine.mergegate import (
    COVERAGE_KEY,
    PENDING,
    SURFACE_KEY,
    GateCheck,
    bind_to_head,
    combine,
    uncovered,
    why_uncovered,
)
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED, PASS
from engine.ports import Comment, CommentEdits, PullRequest, TrackerError
from engine.refs import WorkItemRef
from engine.settings import EngineSettings, normalize_login
from engine.state import ItemState
from engine.visits import Visit, VisitDecision

__all__ = [
    "AGREES",
    "DIFFERS",
    "PublishedCheck",
    "Source",
    "GateFinding",
    "CheckFinding",
    "Verification",
    "verify_item",
    "expected_check",
    "pull_check",
    "group_finding",
]

AGREES = "agrees"
DIFFERS = "differs"
#: Outcomes a gate records by its own decision (a skip, a force, ``stale`` decide nothing
#: a person said).
_DECIDED = (PASS, APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED)
_REVIEW_HOOK = "classify-feedback"
#: What a chat decision's echo comment carries (:func:`engine.hooks.chat_decision.decision_marker`).
_MIRROR_PREFIX = decision_marker("").rstrip(" ->")
_QUIZ_HOOK = "quiz-attested"


@dataclass(frozen=True)
class PublishedCheck:
    """The ``loopgate`` check as GitHub shows it on one commit.

    Attributes:
        state: ``pending``, ``success`` or ``failure`` (a check run ``in_progress`` or
            ``queued`` reads as ``pending``; its conclusion otherwise).
        description: the status's description or the run's ``output.title``.
        kind: ``check-run`` or ``status``.
    """

    state: str
    description: str = ""
    kind: str = "status"


class Source(Protocol):
    """What verify reads: the :class:`~engine.ports.Tracker`'s read methods (fresh, not
    cached: ``comment_edits`` asks GitHub now) plus the published check. Every method
    raises :class:`~engine.ports.TrackerError` when GitHub cannot be read."""

    comments_editable: bool

    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        """Every comment on ``ref``'s thread, as read now (REST)."""
        ...

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Authors, editors and edit histories (GraphQL), asked now."""
        ...

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """The pull requests delivering ``ref``, with their heads as GitHub has them."""
        ...

    def published_check(self, owner: str, repo: str, sha: str) -> PublishedCheck | None:
        """loopgate's own ``loopgate`` check on ``sha`` (None when there is none)."""
        ...


@dataclass(frozen=True)
class GateFinding:
    """One gate of the current visits, re-derived.

    Attributes:
        node: the gate's node id.
        visit: the current visit's number.
        recorded: what loopgate recorded, one phrase (``approved by @bob at comment 12``).
        differences: each thing GitHub shows otherwise, one sentence each; empty = agrees.
        note: what could not be re-derived from GitHub alone (a Slack click), "" if none.
    """

    node: str
    visit: int
    recorded: str
    differences: tuple[str, ...] = ()
    note: str = ""

    @property
    def agrees(self) -> bool:
        """True when GitHub's records give the recorded verdict."""
        return not self.differences

    def line(self) -> str:
        """``<node> (visit N): agrees — <recorded>`` or ``… differs — <recorded>; <diff>``."""
        head = f"{self.node} (visit {self.visit}): {AGREES if self.agrees else DIFFERS}"
        text = f"{head} — recorded {self.recorded}"
        if self.differences:
            text += "; " + "; ".join(self.differences)
        return text + (f" ({self.note})" if self.note else "")

    def to_json(self) -> dict[str, Any]:
        """``{node, visit, verdict, recorded, differences, note}``."""
        return {"node": self.node, "visit": self.visit,
                "verdict": AGREES if self.agrees else DIFFERS, "recorded": self.recorded,
                "differences": list(self.differences), "note": self.note}


@dataclass(frozen=True)
class CheckFinding:
    """The ``loopgate`` check on one delivering pull request's head.

    Attributes:
        pull: the pull request number (0 for a commit no open pull request has as head).
        head: the commit.
        published: the published state ("" when nothing of loopgate's is on it).
        expected: what the re-derived verdicts publish there.
        differences: what differs (the coverage, the state), one sentence each.
    """

    pull: int
    head: str
    published: str
    expected: str
    differences: tuple[str, ...] = ()

    @property
    def agrees(self) -> bool:
        """True when the published check is the one the re-derived verdicts give."""
        return not self.differences

    def line(self) -> str:
        """``check on #5 @abc1234: agrees — published success`` (or differs, and why)."""
        where = f"#{self.pull} @{self.head[:7]}" if self.pull else f"@{self.head[:7]}"
        shown = self.published or "nothing"
        text = (f"check on {where}: {AGREES if self.agrees else DIFFERS} — published "
                f"{shown}, re-derived {self.expected}")
        return text + ("; " + "; ".join(self.differences) if self.differences else "")

    def to_json(self) -> dict[str, Any]:
        """``{pull, head, verdict, published, expected, differences}``."""
        return {"pull": self.pull, "head": self.head,
                "verdict": AGREES if self.agrees else DIFFERS, "published": self.published,
                "expected": self.expected, "differences": list(self.differences)}


@dataclass(frozen=True)
class Verification:
    """Everything :func:`verify_item` found for one work item."""

    ref: str
    gates: tuple[GateFinding, ...] = ()
    checks: tuple[CheckFinding, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def agrees(self) -> bool:
        """True when every gate and every check agrees."""
        return all(g.agrees for g in self.gates) and all(c.agrees for c in self.checks)

    @property
    def disagreements(self) -> int:
        """How many gates and checks differ."""
        return sum(not g.agrees for g in self.gates) + sum(not c.agrees for c in self.checks)

    def lines(self) -> list[str]:
        """One line per gate, then one per check, each prefixed with the item."""
        out = [f"{self.ref} {g.line()}" for g in self.gates]
        out += [f"{self.ref} {c.line()}" for c in self.checks]
        out += [f"{self.ref} note: {n}" for n in self.notes]
        if not self.gates and not self.checks:
            out.append(f"{self.ref}: agrees — no gate decided yet, no check to compare")
        return out

    def to_json(self) -> dict[str, Any]:
        """``{item, verdict, gates: [...], checks: [...], notes}``."""
        return {"item": self.ref, "verdict": AGREES if self.agrees else DIFFERS,
                "gates": [g.to_json() for g in self.gates],
                "checks": [c.to_json() for c in self.checks], "notes": list(self.notes)}


# -- the evidence ----------------------------------------------------------------------------
@dataclass
class _Evidence:
    """What GitHub holds now, read once per item."""

    comments: dict[int, Comment]
    edits: dict[int, CommentEdits]
    pulls: list[PullRequest]


def _decided_ids(state: ItemState, nodes: Iterable[str]) -> set[int]:
    ids: set[int] = set()
    for node in nodes:
        decision = state.decision(node)
        if decision is not None and decision.comment_id:
            ids.add(decision.comment_id)
        ids |= {a.comment_id for a in recorded_approvals(state, node) if a.comment_id}
        changes = _changes(state, node)
        if changes is not None and changes.comment_id:
            ids.add(changes.comment_id)
    return ids


def _gather(source: Source, ref: WorkItemRef, state: ItemState, nodes: Sequence[str]
            ) -> _Evidence:
    pulls = list(source.delivering_pull_requests(ref))
    comments = {c.id: c for c in source.list_comments(ref)}
    for pull in pulls:  # quiz comments and replies may sit on a delivering pull request
        where = WorkItemRef(ref.owner, ref.repo, pull.number)
        comments.update({c.id: c for c in source.list_comments(where)})
    # a chat decision's echo comment is loopgate's: who else edited it is checked too
    mirrors = {c.id for c in comments.values()
               if _MIRROR_PREFIX in (c.body or "") or CONFIRMATION_MARKER in (c.body or "")}
    ids = sorted(_decided_ids(state, nodes) | mirrors)
    edits = dict(source.comment_edits(ids)) if ids and source.comments_editable else {}
    return _Evidence(comments, edits, pulls)


# -- gates -------------------------------------------------------------------------------------
def _at(login: str) -> str:
    return f"@{normalize_login(login)}" if normalize_login(login) else "someone unknown"


def _changes(state: ItemState, node: str) -> Approval | None:
    entry = (state.surface.get("approvals") or {}).get(node)
    if not isinstance(entry, Mapping) or not isinstance(entry.get("changesRequested"), Mapping):
        return None
    record = state.nodes.get(node)
    if record is None or entry.get("enteredAt") != record.entered_at:
        return None
    return Approval.from_json(entry["changesRequested"])


def _hooks(graph: Graph, node: str) -> set[str]:
    return {h.name for h in graph.node(node).exit} if graph.has_node(node) else set()


@dataclass(frozen=True)
class _Ctx:
    graph: Graph
    settings: EngineSettings
    state: ItemState
    source: Source
    evidence: _Evidence

    @property
    def ref(self) -> WorkItemRef:
        return self.state.ref

    def membership(self, org: str, team: str, login: str) -> bool:
        lookup = getattr(self.source, "team_membership", None)
        if lookup is None:
            raise TrackerError("this tracker cannot look teams up")
        return bool(lookup(org, team, login))


def _comment_problem(ctx: _Ctx, by: str, cid: int) -> str:
    """Why comment ``cid`` is not ``by``'s own words as GitHub holds it ("" when it is):
    gone, written by someone else, or edited by someone else (the rule of
    :func:`engine.authorship.judge`)."""
    comment = ctx.evidence.comments.get(cid)
    if comment is None:
        return f"GitHub no longer has comment {cid} on the item or its pull requests"
    if normalize_login(comment.author) != normalize_login(by):
        return f"GitHub shows comment {cid} written by {_at(comment.author)}, not {_at(by)}"
    if not ctx.source.comments_editable:
        return ""
    verdict = judge(comment, ctx.evidence.edits.get(cid))
    if verdict is None:
        return ""
    if verdict.editor:
        return f"GitHub shows that comment edited by {_at(verdict.editor)}"
    why = verdict.reason.split("'s reply ", 1)[-1].removesuffix("; not counted")
    return f"GitHub shows that comment {why}"


def _visit_problem(ctx: _Ctx, visit: Visit, cid: int) -> str:
    """Why comment ``cid`` cannot answer ``visit`` ("" when it can): GitHub shows it written
    before the visit began (:meth:`engine.visits.Visit.takes_comment`, the gates' own rule;
    issue 19 §2)."""
    comment = ctx.evidence.comments.get(cid)
    if comment is None or visit.takes_comment(comment.id, comment.created_at):
        return ""
    return (f"GitHub shows comment {cid} written before visit {visit.number} began "
            f"({comment.created_at or 'at an unknown time'}), so it cannot answer it")


def _mirror_problem(ctx: _Ctx, node: str, visit: Visit, approval: Approval) -> str:
    """Why a chat decision has no standing mirror on GitHub ("" when it has): loopgate's
    echo comment (:func:`engine.hooks.chat_decision.mirror_decision`, issue 12 §1), marked
    for ``node``, naming the outcome, the person and their words (:func:`_echo_problem`)."""
    expected = mirror_text(node, approval.outcome, approval.by, decision_text(approval.body),
                           approval.via or "slack").strip()
    what = f"{_at(approval.by)}'s {approval.outcome} from {approval.via or 'slack'} at {node}"
    return _echo_problem(ctx, visit, decision_marker(node), lambda text: text == expected,
                         what)


def _echo_problem(ctx: _Ctx, visit: Visit, marker: str, wanted: Callable[[str], bool],
                  what: str) -> str:
    """Why GitHub holds no standing echo of a chat decision ("" when it does): a comment
    carrying ``marker`` whose text before it passes ``wanted``, written by loopgate's own
    account (``settings.bot``, issue 9 §1) during ``visit`` (:meth:`Visit.takes_comment`)
    and edited by nobody else (:func:`engine.authorship.judge`). ``what`` names the
    decision in the sentence. loopgate's login unknown: it cannot be checked (differs)."""
    if not ctx.settings.bot.known:
        return f"loopgate's own GitHub login is unknown, so its mirror of {what} cannot be " \
            "checked"
    for comment in ctx.evidence.comments.values():
        body = comment.body or ""
        if (marker not in body or not ctx.settings.is_loopgate(comment.actor)
                or not visit.takes_comment(comment.id, comment.created_at)
                or not wanted(body.split(marker, 1)[0].strip())):
            continue
        if not ctx.source.comments_editable:
            return ""
        verdict = judge(comment, ctx.evidence.edits.get(comment.id))
        if verdict is None:
            return ""
        who = _at(verdict.editor) if verdict.editor else "someone GitHub does not name"
        return f"GitHub shows loopgate's mirror of {what} (comment {comment.id}) edited by {who}"
    return f"GitHub holds no mirror by loopgate of {what} during visit {visit.number}"


def _review_text(comment: Comment | None, outcome: str, cid: int) -> str:
    said = classify_text(comment.body) if comment is not None else None
    if comment is None or said == outcome:
        return ""
    return f"GitHub's text of comment {cid} now says {said or 'no decision'}, not {outcome}"


def _review_gate(ctx: _Ctx, node: str, visit: Visit, decision: VisitDecision | None
                 ) -> GateFinding:
    """A ``classify-feedback`` gate: every decision it counted in this visit must stand
    on GitHub, and the gate's rule over those decisions must give the recorded outcome."""
    recorded = list(recorded_approvals(ctx.state, node))
    changes = _changes(ctx.state, node)
    if changes is not None:
        recorded.append(changes)
    diffs: list[str] = []
    slack: list[str] = []
    if decision is not None and decision.comment_id and decision.via != "slack":
        problem = (_comment_problem(ctx, decision.by, decision.comment_id)
                   or _visit_problem(ctx, visit, decision.comment_id))
        diffs += [problem] if problem else []
    standing: list[Approval] = []
    for approval in recorded:
        if approval.comment_id is None:  # a Slack click: GitHub holds loopgate's mirror
            slack.append(_at(approval.by))
            problem = _mirror_problem(ctx, node, visit, approval)
            if problem and problem not in diffs:
                diffs.append(problem)
            if not problem:
                standing.append(approval)
            continue
        comment = ctx.evidence.comments.get(approval.comment_id)
        problem = (_comment_problem(ctx, approval.by, approval.comment_id)
                   or _review_text(comment, approval.outcome, approval.comment_id)
                   or _visit_problem(ctx, visit, approval.comment_id))
        if problem and problem not in diffs:
            diffs.append(problem)
        if not problem and comment is not None:
            standing.append(Approval(normalize_login(comment.author), approval.outcome,
                                     approval.at, approval.via, comment.url, comment.id,
                                     comment.body))
    if recorded and not diffs:
        diffs += _rule_verdict(ctx, node, visit, standing)
    text = _recorded_review(decision, visit, recorded)
    note = f"decided in Slack by {', '.join(slack)}: re-derived from loopgate's mirror" \
        if slack else ""
    return GateFinding(node, visit.number, text, tuple(diffs), note)


def _rule_verdict(ctx: _Ctx, node: str, visit: Visit, standing: Sequence[Approval]
                  ) -> list[str]:
    """The gate's own rule (engine.approvals.evaluate, oldest first) over the decisions
    GitHub still holds: must give the outcome the visit recorded."""
    rule = rule_for(ctx.graph, ctx.settings, node)
    people = people_for(ctx.source, ctx.ref, node, rule, ctx.settings, state=ctx.state,
                        graph=ctx.graph)
    counted: tuple[Approval, ...] = ()
    changes: Approval | None = None
    refused: list[str] = []
    for decision in sorted(standing, key=lambda a: a.at):
        result = evaluate(rule, counted, decision, authorized_users=ctx.settings.authorized_users,
                          people=people, membership=ctx.membership)
        if not result.verdict.allowed:
            refused.append(f"the gate's rule refuses {_at(decision.by)} now: "
                           f"{result.verdict.reason}")
            continue
        counted, changes = result.tally.approvals, result.tally.changes
    final = tally(rule, counted, changes, people=people, membership=ctx.membership)
    if visit.open or visit.outcome not in _DECIDED:
        return refused
    if not final.passed or final.outcome != visit.outcome:
        got = final.outcome if final.passed else f"not passed ({final.summary()})"
        return [*refused, f"the gate's rule over GitHub's records gives {got}"]
    return refused


def _recorded_review(decision: VisitDecision | None, visit: Visit,
                     recorded: Sequence[Approval]) -> str:
    if decision is not None:
        where = f" at comment {decision.comment_id}" if decision.comment_id else \
            f" via {decision.via}"
        return f"{decision.outcome or visit.outcome} by {_at(decision.by)}{where}"
    if recorded:
        return "waiting: " + ", ".join(f"{a.outcome} by {_at(a.by)}" for a in recorded)
    return "waiting: nothing counted yet"


def _quiz_gate(ctx: _Ctx, node: str, visit: Visit, decision: VisitDecision) -> GateFinding:
    """A ``quiz-attested`` gate: the attestation must stand as the quiz gate reads it."""
    cid = decision.comment_id
    text = f"attested by {_at(decision.by)} at comment {cid} ({decision.via or 'tick'})"
    if decision.via == "typed":
        problem = _typed_problem(ctx, node, visit, decision)
    else:
        problem = _tick_problem(ctx, node, visit, decision)
    return GateFinding(node, visit.number, text, (problem,) if problem else ())


def _posted(state: ItemState, node: str) -> Mapping[str, Any]:
    entry = (state.surface.get("quiz") or {}).get(node)
    return entry if isinstance(entry, Mapping) else {}


def _tick_problem(ctx: _Ctx, node: str, visit: Visit, decision: VisitDecision) -> str:
    cid = decision.comment_id
    edits = ctx.evidence.edits.get(cid)
    if edits is None:
        return f"GitHub no longer has the quiz comment {cid}"
    posted = _posted(ctx.state, node)
    ids = {c.get("id") for c in posted.get("comments") or () if isinstance(c, Mapping)}
    editor, kind, ticked_at, unknown = latest_editor(edits)
    last = f" (last edited by {_at(editor or edits.editor or '')})"
    problem = quiz_comment_problem(ctx.settings, ids, node, str(posted.get("digest") or "-"),
                                   edits)
    if problem:
        return f"GitHub shows {problem}{last}"
    if unknown:
        return f"GitHub's edit history of comment {cid} does not name who ticked it: {unknown}"
    stale = _tick_visit_problem(ctx, visit, posted, cid, ticked_at)
    if stale:
        return stale
    if normalize_login(editor) != normalize_login(decision.by):
        return (f"GitHub shows the box of comment {cid} last ticked by {_at(editor)}, "
                f"not {_at(decision.by)}")
    if ctx.settings.is_loopgate(edits.editor_actor) or kind == "Bot":
        return f"GitHub shows the box of comment {cid} last edited by a bot ({_at(editor)})"
    return _attester_problem(ctx, node, editor)


def _tick_visit_problem(ctx: _Ctx, visit: Visit, posted: Mapping[str, Any], cid: int,
                        ticked_at: str) -> str:
    """Why a tick on quiz comment ``cid`` cannot answer ``visit`` ("" when it can), the
    quiz gate's rule (engine.hooks.quiz_visits, issue 19 §2): the comment must be the one
    posted for this visit (not an earlier visit's, and, as GitHub shows it, written during
    it: :meth:`engine.visits.Visit.takes_comment`), and the tick made after it began."""
    earlier = cid in earlier_quiz_ids(posted, visit.number) or not posted_for(
        posted, visit.number)
    comment = ctx.evidence.comments.get(cid)
    if earlier or (comment is not None
                   and not visit.takes_comment(comment.id, comment.created_at)):
        return (f"GitHub shows comment {cid} is the quiz comment of an earlier visit, "
                f"not of visit {visit.number}")
    if visit.number > 1 and visit.entered_at and ticked_at and ticked_at < visit.entered_at:
        return (f"GitHub shows the box of comment {cid} last ticked at {ticked_at}, before "
                f"visit {visit.number} began")
    return ""


def _typed_problem(ctx: _Ctx, node: str, visit: Visit, decision: VisitDecision) -> str:
    cid = decision.comment_id
    problem = (_comment_problem(ctx, decision.by, cid)
               or _visit_problem(ctx, visit, cid))
    if problem:
        return problem
    comment = ctx.evidence.comments[cid]
    if not attestation_ticked(comment.body, quiz_kind(node)):
        return f"GitHub's text of comment {cid} no longer carries the ticked attestation line"
    if comment.actor.is_bot:
        return f"GitHub shows comment {cid} written by a bot"
    return _attester_problem(ctx, node, decision.by)


def _attester_problem(ctx: _Ctx, node: str, login: str) -> str:
    rule = rule_for(ctx.graph, ctx.settings, node)
    people = people_for(ctx.source, ctx.ref, node, rule, ctx.settings, attesting=True)
    verdict = authorize(login, rule, authorized_users=ctx.settings.authorized_users,
                        people=people, membership=ctx.membership, attesting=True)
    return "" if verdict.allowed else f"the gate's rule refuses {_at(login)} now: " \
        f"{verdict.reason}"


def _other_gate(ctx: _Ctx, node: str, visit: Visit, decision: VisitDecision) -> GateFinding:
    """Any other decided gate (the phase selection): the deciding reply must be its
    author's words, written during the visit; a chat click must have loopgate's
    confirmation on GitHub naming the person and the surface
    (:func:`engine.hooks.phase_selection.confirmation_head`); the full default process
    (no person decided) is noted, not re-derived."""
    text = f"{decision.outcome or visit.outcome or 'decided'} by {_at(decision.by)}"
    if decision.via not in ("reply", "checklist", "default") and not decision.comment_id:
        via = decision.via or "slack"
        head = confirmation_head(decision.by, via)
        problem = _echo_problem(ctx, visit, CONFIRMATION_MARKER,
                                lambda body: body.splitlines()[0].strip() == head if body
                                else False, f"{_at(decision.by)}'s selection from {via}")
        return GateFinding(node, visit.number, f"{text} via {via}",
                           (problem,) if problem else (),
                           note=f"decided via {via}: re-derived from loopgate's confirmation")
    if decision.via == "default" or not decision.comment_id:
        return GateFinding(node, visit.number, f"{text} via {decision.via or 'default'}",
                           note=f"decided via {decision.via or 'default'}: cannot be "
                                "re-derived, GitHub holds no comment of the person to check")
    text += f" at comment {decision.comment_id}"
    problem = (_comment_problem(ctx, decision.by, decision.comment_id)
               or _visit_problem(ctx, visit, decision.comment_id))
    return GateFinding(node, visit.number, text, (problem,) if problem else ())


def _gate(ctx: _Ctx, node: str) -> GateFinding | None:
    visit = ctx.state.visit(node)
    if visit is None:
        return None
    hooks = _hooks(ctx.graph, node)
    decision = visit.decision
    own_pass = not visit.open and visit.outcome in _DECIDED and not visit.forced
    if decision is None:
        if _REVIEW_HOOK in hooks and (own_pass or recorded_approvals(ctx.state, node)):
            return _review_gate(ctx, node, visit, None) if not own_pass else GateFinding(
                node, visit.number, f"{visit.outcome} with no decision on record",
                ("loopgate's record holds no decision to check against GitHub",))
        if _QUIZ_HOOK in hooks and own_pass:
            return GateFinding(node, visit.number, f"{visit.outcome} with no attestation",
                               ("loopgate's record holds no attestation to check against "
                                "GitHub",))
        return None
    if _QUIZ_HOOK in hooks:
        return _quiz_gate(ctx, node, visit, decision)
    if _REVIEW_HOOK in hooks:
        return _review_gate(ctx, node, visit, decision)
    return _other_gate(ctx, node, visit, decision)


# -- the check -----------------------------------------------------------------------------
def expected_check(state: ItemState | None, pull: PullRequest,
                   standing: bool = True) -> GateCheck | None:
    """The check one item contributes on ``pull`` at its current head: its recorded
    verdict (``surface.mergeGate``) bound to the head (:func:`~engine.mergegate.bind_to_head`,
    as the performer does); ``pending`` when ``standing`` is False (a gate's decision does
    not stand on GitHub, so the verdict could not be re-derived). None when the item has
    no verdict."""
    doc = state.surface.get(SURFACE_KEY) if state is not None else None
    if state is None or not isinstance(doc, Mapping):
        return None
    check = GateCheck.from_json(doc)
    if not standing:
        check = GateCheck(PENDING, f"{state.ref}: a gate's decision does not stand on GitHub",
                          page_url=check.page_url)
    return bind_to_head(state, check, pull.number, pull.head_sha,
                        authors_now=(pull.author,) if pull.author else ())


def _coverage(state: ItemState, pull: PullRequest) -> str:
    coverage = state.surface.get(COVERAGE_KEY) or {}
    gates = coverage.get("gates") or ()
    if not gates or not isinstance(state.surface.get(SURFACE_KEY), Mapping):
        return ""
    missing = uncovered(state, gates, pull.number, pull.head_sha)
    if missing is None or missing == ("", ""):
        return ""
    return "loopgate's coverage: " + why_uncovered(pull.number, pull.head_sha, *missing)


def _check(ctx: _Ctx, pull: PullRequest, standing: bool,
           load: Callable[[WorkItemRef], ItemState | None],
           items: Callable[[int], Sequence[int]]) -> CheckFinding:
    ref = ctx.ref
    checks: list[tuple[str, GateCheck | None]] = []
    for number in items(pull.number) or [ref.number]:
        other = WorkItemRef(ref.owner, ref.repo, number)
        state = ctx.state if other == ref else load(other)
        checks.append((str(other), expected_check(state, pull, standing if other == ref
                                                  else True)))
    if not any(str(r) == str(ref) for r, _ in checks):
        checks.append((str(ref), expected_check(ctx.state, pull, standing)))
    expected = combine(checks)
    published = ctx.source.published_check(ref.owner, ref.repo, pull.head_sha)
    shown = published.state if published is not None else ""
    diffs: list[str] = []
    why = _coverage(ctx.state, pull)
    recorded = str((ctx.state.surface.get(SURFACE_KEY) or {}).get("state") or "")
    if why and recorded == "success":
        diffs.append(f"{why} (loopgate records success)")
    if shown != expected.state:
        seen = f"GitHub shows {shown}" if shown else "GitHub shows no loopgate check"
        diffs.append(f"{seen} on {pull.head_sha[:7]}; the re-derived verdicts publish "
                     f"{expected.state}: {expected.description}")
    return CheckFinding(pull.number, pull.head_sha, shown, expected.state, tuple(diffs))


def verify_item(graph: Graph, settings: EngineSettings, state: ItemState, source: Source, *,
                load: Callable[[WorkItemRef], ItemState | None] | None = None,
                items: Callable[[int], Sequence[int]] | None = None,
                pulls: Iterable[int] | None = None) -> Verification:
    """Re-derive ``state``'s gates and checks from GitHub (issue 22 §3).

    Args:
        graph: the compiled graph.
        settings: the engine settings (approval rules, ``authorizedUsers``, loopgate's
            identity, ``mergeGate``).
        state: the item's recorded state.
        source: GitHub's records (:class:`Source`).
        load: the recorded state of another item a pull request delivers (its check is
            part of the one published); default: none known.
        items: the item numbers a pull request delivers (``items_for_pull_request``);
            default: this item only.
        pulls: compare the check only on these pull requests (``verify --sha``);
            default: every open delivering pull request.

    Returns:
        The :class:`Verification`: one :class:`GateFinding` per gate of the current
        visits that decided (or counted) something, one :class:`CheckFinding` per open
        delivering pull request when ``settings.merge_gate`` is on.

    Raises:
        TrackerError: GitHub could not be read (never a partial "agrees").
    """
    nodes = [n.id for n in graph.ordered() if state.visit(n.id) is not None]
    evidence = _gather(source, state.ref, state, nodes)
    ctx = _Ctx(graph, settings, state, source, evidence)
    gates = tuple(f for f in (_gate(ctx, n) for n in nodes) if f is not None)
    checks: list[CheckFinding] = []
    notes: list[str] = []
    if settings.merge_gate:
        wanted = set(pulls) if pulls is not None else None
        standing = all(g.agrees for g in gates)
        for pull in evidence.pulls:
            if pull.state != "open" or (wanted is not None and pull.number not in wanted):
                continue
            checks.append(_check(ctx, pull, standing, load or (lambda _ref: None),
                                 items or (lambda _n: [state.ref.number])))
    else:
        notes.append("mergeGate is off: no published check to compare")
    return Verification(str(state.ref), gates, tuple(checks), tuple(notes))


# -- a merge queue's group commit (issue 19 §4) --------------------------------------------
def pull_check(found: Sequence[tuple[ItemState | None, Verification | None]],
               refs: Sequence[str], pull: PullRequest) -> GateCheck:
    """What loopgate publishes for ``pull`` at its current head, over the items it
    delivers, as re-derived: each item's bound verdict (:func:`expected_check`), pending for
    an item whose verification differs.

    Args:
        found: per item (in ``refs`` order), its recorded state (None: not started) and
            its verification (None: not verified).
        refs: the items' refs as text.
        pull: the pull request, with its current head.
    """
    checks = [(ref, expected_check(state, pull, verification is None or verification.agrees))
              for ref, (state, verification) in zip(refs, found, strict=True)]
    return combine(checks)


def group_finding(sha: str, expected: GateCheck,
                  published: PublishedCheck | None) -> CheckFinding:
    """The ``loopgate`` check of a merge group commit ``sha`` as re-derived, against what
    GitHub shows on ``sha``.

    Args:
        sha: the group's head commit.
        expected: the re-derived group verdict (:func:`engine.queuegroup.group_verdict`
            over each pull request's :func:`pull_check`: the performer's own rule, every
            commit accounted for).
        published: what GitHub shows on ``sha`` (None: no ``loopgate`` check).
    """
    shown = published.state if published is not None else ""
    diffs: tuple[str, ...] = ()
    if shown != expected.state:
        seen = f"GitHub shows {shown}" if shown else "GitHub shows no loopgate check"
        diffs = (f"{seen} on the merge group {sha[:7]}; the re-derived verdicts publish "
                 f"{expected.state}: {expected.description}",)
    return CheckFinding(0, sha, shown, expected.state, diffs)
