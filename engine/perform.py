"""Carrying effects out and recording what happened (issue 10 §1, §2), pure over the ports.

A performer takes a due row from the store's outbox (:class:`~engine.store.effect_queue.
EffectQueue`), claims it, carries it out through the tracker port (:func:`carry_out`: the
network call, outside any transaction) and records the result in a second short item
transaction (:func:`record`): a posted comment's ``{id, url, target}`` lands where the
effect said (the checklist's or a quiz's surface entry), a notice goes to the notifier
inside that transaction (the Slack outbox row commits with it), and the row is marked done.

Failures: a :class:`~engine.ports.TrackerError` that says ``permanent`` (GitHub's 422, a
403 without a limit, a 404) fails the row for good: logged as ``graph.effect_failed``,
recorded beside a quiz comment so the gate says why, and listed by ``loopgate effects``
until an operator re-queues it. Anything else is transient: the row waits until the
error's ``retry_at`` (``Retry-After``, a rate-limit reset: never counted as a try) or an
exponential back-off (:func:`backoff`), and fails after :data:`MAX_ATTEMPTS` failed tries.

:class:`InlinePerformer` does all this synchronously, right after each commit: the offline
tracker, the CLI and the engine's tests use it. The GitHub worker (``bridges``) runs the
same two functions on a thread with GitHub's pacing.
"""

from __future__ import annotations

import logging
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from engine.effects import (
    MAX_BODY,
    PENDING,
    RECORD_CHECKLIST,
    RUNNING,
    AddLabel,
    EffectRow,
    Notify,
    PostComment,
    PublishGate,
    PublishMergeGroup,
    RemoveLabel,
    RequestReviews,
    effect_marker,
)
from engine.hooks.common import posted_by_loopgate
from engine.hooks.quiz import reason_once_posted
from engine.mergegate import (
    FAILURE,
    SURFACE_KEY,
    GateCheck,
    bind_to_head,
    combine,
)
from engine.ports import (
    SELF_MARKER,
    Comment,
    Ports,
    PullRequest,
    TrackerError,
    merge_queue,
)
from engine.queuegroup import group_verdict, read_group
from engine.refs import WorkItemRef
from engine.reviewers import record_result as record_reviews
from engine.reviewers import send as send_reviews
from engine.settings import EngineSettings
from engine.store.base import Store

__all__ = [
    "DONE_OUTCOME",
    "RETRY",
    "FAILED_OUTCOME",
    "Outcome",
    "MAX_ATTEMPTS",
    "backoff",
    "carry_out",
    "record",
    "claim_row",
    "perform_row",
    "InlinePerformer",
    "iso",
    "apply_result",
    "notice_data",
]

logger = logging.getLogger(__name__)

DONE_OUTCOME = "done"
RETRY = "retry"
FAILED_OUTCOME = "failed"

#: Tries of one row before it fails for good (a transient error every time).
MAX_ATTEMPTS = 10
#: Exponential back-off: first wait and cap (seconds).
BACKOFF_FIRST = 2.0
BACKOFF_CAP = 300.0
#: Seconds an effect refused for loopgate's credentials (401) waits before the next try.
CREDENTIALS_WAIT = 60.0
#: The start of such a row's recorded error (``loopgate effects`` shows it).
CREDENTIALS_PREFIX = "waiting for GitHub to accept loopgate's credentials (no try spent): "
#: How long a claim holds a row (seconds): a performer that dies frees it after this.
CLAIM_SECONDS = 120.0


def iso(moment: datetime) -> str:
    """ISO-8601 UTC with seconds precision, as the outbox stores times."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def backoff(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th transient failure: 2, 4, 8 … capped at
    :data:`BACKOFF_CAP` (GitHub: "back off exponentially", platform-facts B4)."""
    return min(BACKOFF_CAP, BACKOFF_FIRST * 2.0 ** max(0, attempts - 1))


@dataclass(frozen=True)
class Outcome:
    """What carrying one row out came to.

    Attributes:
        kind: :data:`DONE_OUTCOME`, :data:`RETRY` or :data:`FAILED_OUTCOME`.
        result: JSON to record (a posted comment's ``{id, url, target}``).
        error: why it did not happen (never a token).
        retry_at: the earliest retry GitHub allows (``Retry-After``, a reset), if it said.
        credentials: the tracker refused loopgate's credentials (401).
    """

    kind: str
    result: Mapping[str, Any] = field(default_factory=dict)
    error: str = ""
    retry_at: datetime | None = None
    credentials: bool = False


def _comment_result(comment: Comment, target: WorkItemRef) -> dict[str, Any]:
    return {"id": comment.id, "url": comment.url, "target": str(target)}


def _already_posted(row: EffectRow, ports: Ports, settings: EngineSettings
                    ) -> Comment | None:
    # Exactly once across crashes: the marker of this row on the thread means a previous
    # attempt posted it and died before recording.
    marker = effect_marker(row.key)
    for comment in ports.tracker.list_comments(row.effect.target):
        if marker in (comment.body or "") and posted_by_loopgate(comment, settings):
            return comment
    return None


def _with_key(body: str, key: str) -> str:
    # The row's marker joins the trailing marker block, before loopgate's own marker, so
    # the designs' "ends with the self marker" still holds.
    head, sep, tail = body.rpartition(SELF_MARKER)
    if not sep:
        return f"{body}\n{effect_marker(key)}"
    return f"{head}{effect_marker(key)}\n{sep}{tail}"


def _post(row: EffectRow, effect: PostComment, ports: Ports,
          settings: EngineSettings) -> Outcome:
    body = _with_key(effect.body, row.key)
    if len(body) > MAX_BODY:
        return Outcome(FAILED_OUTCOME, error=f"the comment is {len(body)} characters; "
                                             f"GitHub's limit is {MAX_BODY}")
    # A fresh row never reached GitHub; one tried before (a timeout or a 5xx may still have
    # created the comment) or re-taken from a dead performer's claim is looked for first.
    tried = row.attempts > 0 or row.status == RUNNING
    found = _already_posted(row, ports, settings) if tried else None
    comment = found or ports.tracker.add_comment(effect.target, body)
    return Outcome(DONE_OUTCOME, _comment_result(comment, effect.target))


def _check_of(store: Store | None, ref: WorkItemRef, pull: PullRequest | None = None
              ) -> GateCheck | None:
    state = store.load(ref) if store is not None else None
    doc = state.surface.get(SURFACE_KEY) if state is not None else None
    check = GateCheck.from_json(doc) if isinstance(doc, Mapping) else None
    if check is None or pull is None or state is None:
        return check
    # Issue 19 §3: success only on a head the vouching gates covered.
    return bind_to_head(state, check, pull.number, pull.head_sha,
                        authors_now=(pull.author,) if pull.author else ())


def _superseded_by(row: EffectRow, store: Store | None) -> int | None:
    # A later, still pending PublishGate of the same item that covers these pull requests
    # will read the verdicts after this one would: this one need not write at all.
    if store is None or not isinstance(row.effect, PublishGate):
        return None
    for later in store.effects.rows(row.ref, statuses=(PENDING,)):
        effect = later.effect
        if later.id <= row.id or not isinstance(effect, PublishGate):
            continue
        mine = set(row.effect.pulls)
        if not effect.pulls or (mine and mine <= set(effect.pulls)):
            return later.id
    return None


def _publish(row: EffectRow, effect: PublishGate, ports: Ports,
             store: Store | None) -> Outcome:
    # Issue 11 §1: every open pull request delivering the item gets the check of ALL the
    # items it delivers, read now (the newest verdicts on the newest head).
    later = _superseded_by(row, store)
    if later is not None:
        return Outcome(DONE_OUTCOME, {"published": [], "supersededBy": later})
    target = effect.target
    published = []
    for pull in ports.tracker.delivering_pull_requests(target):
        if pull.state != "open" or (effect.pulls and pull.number not in effect.pulls):
            continue
        numbers = ports.tracker.items_for_pull_request(target.owner, target.repo, pull.number)
        refs = [WorkItemRef(target.owner, target.repo, n) for n in numbers or [target.number]]
        if target not in refs:
            refs.append(target)
        check = combine([(str(ref), _check_of(store, ref, pull)) for ref in refs])
        pr_ref = WorkItemRef(target.owner, target.repo, pull.number)
        where = ports.tracker.publish_check(pr_ref, check)
        published.append({"pull": pull.number, "state": check.state, **dict(where or {})})
    return Outcome(DONE_OUTCOME, {"published": published})


def _pull_in_group(ports: Ports, store: Store | None, owner: str, repo: str,
                   number: int) -> tuple[GateCheck, str]:
    # Issue 19 §4: the check of one pull request of a merge group, over every item it
    # delivers, bound to its head as GitHub says it is now; and that head ("" unknown).
    numbers = ports.tracker.items_for_pull_request(owner, repo, number)
    if not numbers:
        return GateCheck(FAILURE, f"#{number} delivers no work item"), ""
    checks: list[tuple[str, GateCheck | None]] = []
    head = ""
    for n in numbers:
        item = WorkItemRef(owner, repo, n)
        pull = next((p for p in ports.tracker.delivering_pull_requests(item)
                     if p.number == number and p.state == "open"), None)
        head = head or (pull.head_sha if pull is not None else "")
        checks.append((str(item), _check_of(store, item, pull) if pull is not None else
                       GateCheck(FAILURE, f"{item}: #{number} is not an open pull request "
                                          "delivering it")))
    return combine(checks), head


def _publish_group(effect: PublishMergeGroup, ports: Ports, store: Store | None) -> Outcome:
    """Answer a merge queue's ``checks_requested`` on the group's commit (issue 19 §4):
    ``success`` only when every identified pull request is covered on its head and every
    commit of the group is accounted for by one of them."""
    owner, repo = effect.target.owner, effect.target.repo
    queue = merge_queue(ports.tracker)
    if queue is None:
        return Outcome(FAILED_OUTCOME, error="this tracker has no merge queue")
    # One rule with verify --sha (engine.queuegroup): the group's pull requests from its
    # ref, its commit titles and the queue's own list; then every commit accounted for.
    group = read_group(queue, owner, repo, head_ref=effect.head_ref, base_sha=effect.base_sha,
                       head_sha=effect.head_sha, fallback=effect.target.number)
    numbers = list(group.numbers)
    per_pull = {n: _pull_in_group(ports, store, owner, repo, n) for n in numbers}
    check = group_verdict(queue, owner, repo, group.commits, per_pull)
    where = queue.publish_commit_check(effect.target, effect.head_sha, check)
    return Outcome(DONE_OUTCOME, {"group": effect.head_sha, "state": check.state,
                                  "pulls": numbers, **dict(where or {})})


def carry_out(row: EffectRow, ports: Ports, settings: EngineSettings,
              store: Store | None = None) -> Outcome:
    """Carry ``row`` out through the tracker (network; never inside a transaction).

    A notice is not sent here: :func:`record` hands it to the notifier inside the
    recording transaction. A :class:`PublishGate` reads the verdicts of the items a pull
    request delivers from ``store`` (an item without one reads as pending).

    Returns:
        The :class:`Outcome`; never raises for a tracker failure.
    """
    effect = row.effect
    try:
        if isinstance(effect, PostComment):
            return _post(row, effect, ports, settings)
        if isinstance(effect, PublishGate):
            return _publish(row, effect, ports, store)
        if isinstance(effect, PublishMergeGroup):
            return _publish_group(effect, ports, store)
        if isinstance(effect, RequestReviews):  # issue 24 §3: refusals are recorded
            return Outcome(DONE_OUTCOME, send_reviews(effect, ports.tracker))
        if isinstance(effect, AddLabel):
            ports.tracker.add_label(effect.target, effect.label)
        elif isinstance(effect, RemoveLabel):
            ports.tracker.remove_label(effect.target, effect.label)
    except TrackerError as exc:
        kind = FAILED_OUTCOME if exc.permanent else RETRY
        return Outcome(kind, error=str(exc), retry_at=exc.retry_at,
                       credentials=getattr(exc, "credentials", False))
    return Outcome(DONE_OUTCOME)


def _quiz_entry(surface: dict[str, Any], node: str) -> dict[str, Any]:
    quiz = dict(surface.get("quiz") or {})
    entry = dict(quiz.get(node) or {})
    quiz[node] = entry
    surface["quiz"] = quiz
    return entry


def apply_result(surface: dict[str, Any], row: EffectRow, outcome: Outcome) -> None:
    """Record a posted comment (or why it failed) where its effect said, in ``surface``
    (mutated): ``phaseSelection = {commentId, url}`` for the checklist; for a quiz, the
    comment joins ``quiz[node].comments`` and leaves ``posting``, or ``postFailed`` says
    why it could not be posted (``failedKeys``: the failed rows, which an operator may
    re-queue). A quiz comment whose row the entry did not ask for (an earlier visit's row,
    performed late) joins ``quiz[node].earlier`` instead (issue 19 §2)."""
    effect = row.effect
    if isinstance(effect, RequestReviews):
        record_reviews(surface, effect, outcome.result, outcome.error)
        return
    if not isinstance(effect, PostComment) or not effect.record:
        return
    if effect.record == RECORD_CHECKLIST:
        surface[RECORD_CHECKLIST] = ({"commentId": outcome.result["id"],
                                      "url": outcome.result["url"]}
                                     if outcome.kind == DONE_OUTCOME
                                     else {"postFailed": outcome.error})
        return
    kind, _, node = effect.record.partition(":")
    if kind != "quiz" or not node:
        return
    entry = _quiz_entry(surface, node)
    ours = _asked_by(entry, row.key)
    entry["posting"] = [k for k in entry.get("posting") or () if k != row.key]
    if outcome.kind == DONE_OUTCOME and not ours:
        _record_earlier(entry, outcome.result["id"])
    elif outcome.kind == DONE_OUTCOME:
        comments = [c for c in entry.get("comments") or () if c.get("id") != outcome.result["id"]]
        entry["comments"] = [*comments, dict(outcome.result)]
        entry.pop("postFailed", None)
        entry.pop("failedKeys", None)
    elif ours:
        entry["postFailed"] = outcome.error
        entry["failedKeys"] = [*(entry.get("failedKeys") or ()), row.key]


def _asked_by(entry: Mapping[str, Any], key: str) -> bool:
    # Issue 19 §2: a quiz comment answers only the visit whose entry asked for it (its row
    # in ``posting``, or a failed one an operator re-queued: ``failedKeys``). A row of an
    # earlier visit still pending when the node was entered again (a timed-out post that
    # GitHub did create, found by its marker on retry) must not become this visit's
    # comment: a tick made on it during the earlier visit would pass this one. Entries
    # written before ``posting`` (or ``failedKeys``) existed keep the old reading.
    if "posting" not in entry or key in (entry.get("posting") or ()):
        return True
    failed = entry.get("failedKeys")
    return key in failed if failed is not None else bool(entry.get("postFailed"))


def _record_earlier(entry: dict[str, Any], comment_id: Any) -> None:
    # An earlier visit's quiz comment, posted late: named with the earlier ones, so a tick
    # on it is told it does not count (engine.hooks.quiz_visits.earlier_quiz_ids).
    earlier = list(entry.get("earlier") or ())
    if comment_id not in earlier:
        entry["earlier"] = [*earlier, comment_id]


def notice_data(effect: Notify, surface: Mapping[str, Any]) -> dict[str, Any]:
    """The data a :class:`Notify` is sent with: its own, plus the URLs of the comments it
    links to, read from ``surface`` as recorded by then."""
    data = dict(effect.data)
    if effect.links == RECORD_CHECKLIST:
        data["url"] = str((surface.get(RECORD_CHECKLIST) or {}).get("url") or "")
    elif effect.links.startswith("quiz:"):
        entry = (surface.get("quiz") or {}).get(effect.links.partition(":")[2]) or {}
        data["commentUrls"] = [c.get("url", "") for c in entry.get("comments") or ()]
    return data


def _reword_posted_quiz_wait(state: Any, row: EffectRow, ports: Ports) -> None:
    # The wait said "being posted" when it was decided; the comment is there now (issue 23).
    effect = row.effect
    if not isinstance(effect, PostComment) or not effect.record.startswith("quiz:"):
        return
    node = effect.record.partition(":")[2]
    parked = state.parked
    if state.current_node != node or parked.node != node:
        return
    editable = bool(ports.tracker.comments_editable)
    reason = reason_once_posted(parked.reason, node, editable)
    if reason is not None:
        state.parked = replace(parked, reason=reason)


def record(store: Store, row: EffectRow, outcome: Outcome, ports: Ports, at: str) -> None:
    """Record a finished row (done, or failed for good) in one item transaction.

    Args:
        store: the store holding the row.
        row: the row carried out.
        outcome: :data:`DONE_OUTCOME` or :data:`FAILED_OUTCOME` (a retry is deferred by
            the performer, not recorded here).
        ports: for the notifier (a :class:`Notify` row is sent here, inside the
            transaction, so the notice and the row's completion commit together).
        at: ISO-8601 UTC now.
    """
    with store.transaction(row.ref) as tx:
        surface = tx.state.surface if tx.state is not None else {}
        apply_result(surface, row, outcome)
        if tx.state is not None and outcome.kind == DONE_OUTCOME:
            _reword_posted_quiz_wait(tx.state, row, ports)
        if isinstance(row.effect, RequestReviews):
            _log_reviews(tx, row.effect, outcome, at)
        if outcome.kind == DONE_OUTCOME and isinstance(row.effect, Notify):
            ports.notifier.send(row.effect.target, row.effect.event,
                                notice_data(row.effect, surface))
        if outcome.kind == FAILED_OUTCOME:
            tx.log("graph.effect_failed",  # type: ignore[call-arg]
                   {"effect": row.describe(), "error": outcome.error, "row": row.id}, at=at)
            if not isinstance(row.effect, Notify):  # said in Slack too (issue 10 §2)
                node = tx.state.current_node if tx.state is not None else ""
                ports.notifier.send(row.ref, "effect-failed", {
                    "node": node, "reason": f"{row.describe()}: {outcome.error}"})
        # Done, or failed for good: either way it commits with what it recorded.
        tx.finish_effect(row.id, {**outcome.result, "outcome": outcome.kind},
                         error=outcome.error if outcome.kind == FAILED_OUTCOME else "")
    if outcome.kind == FAILED_OUTCOME:
        logger.warning("effect failed for good: %s (row %d): %s", row.describe(), row.id,
                       outcome.error)


def _log_reviews(tx: Any, effect: RequestReviews, outcome: Outcome, at: str) -> None:
    # Issue 24 §3: who GitHub refused is logged and visible (check), never a gate matter.
    refused = [{"pull": p["pull"], **r} for p in outcome.result.get("pulls") or ()
               for r in p.get("refused") or ()]
    if refused or outcome.result.get("error"):
        tx.log("graph.review_request_refused",
               {"node": effect.node, "visit": effect.visit, "refused": refused,
                "error": str(outcome.result.get("error") or "")}, at=at)
        logger.warning("review requests of %s %s (visit %d): refused %s %s", effect.target,
                       effect.node, effect.visit, refused, outcome.result.get("error") or "")


def claim_row(store: Store, row: EffectRow, owner: str, now: datetime) -> bool:
    """Claim ``row`` for ``owner`` for :data:`CLAIM_SECONDS` from ``now``; False when
    another performer holds it (see :meth:`EffectQueue.claim`)."""
    until = iso(now + timedelta(seconds=CLAIM_SECONDS))
    return store.effects.claim(row.id, owner, until, iso(now))


def perform_row(store: Store, row: EffectRow, ports: Ports, settings: EngineSettings,
                now: datetime) -> Outcome:
    """Carry out one claimed row and record it, or defer it after a transient failure.

    Returns:
        The :class:`Outcome` (a retry's ``retry_at`` is where the row now waits).
    """
    outcome = carry_out(row, ports, settings, store)
    if outcome.kind == RETRY and outcome.credentials:
        return _wait_for_credentials(store, row, outcome, now)
    # A rate limit names its reset: waiting it out is not a failed try (nothing was done).
    limited = outcome.kind == RETRY and outcome.retry_at is not None
    if limited or (outcome.kind == RETRY and row.attempts + 1 < MAX_ATTEMPTS):
        wait_until = outcome.retry_at or now + timedelta(seconds=backoff(row.attempts + 1))
        store.effects.defer(row.id, iso(wait_until), outcome.error, count=not limited)
        logger.info("effect deferred: %s (row %d) until %s: %s", row.describe(), row.id,
                    iso(wait_until), outcome.error)
        return Outcome(RETRY, error=outcome.error, retry_at=wait_until)
    if outcome.kind == RETRY:  # out of tries: a person must look
        outcome = Outcome(FAILED_OUTCOME, error=f"gave up after {MAX_ATTEMPTS} tries: "
                                                 f"{outcome.error}")
    record(store, row, outcome, ports, iso(now))
    return outcome


def _wait_for_credentials(store: Store, row: EffectRow, outcome: Outcome,
                          now: datetime) -> Outcome:
    # GitHub's 401 Bad credentials: nothing was done and no retry can help until a person
    # replaces the token, so the row waits CREDENTIALS_WAIT without spending a try (it
    # would otherwise fail for good after MAX_ATTEMPTS while the token is fixed). It stays
    # visible: `loopgate effects` shows the error below, /readyz fails github_auth.
    wait_until = now + timedelta(seconds=CREDENTIALS_WAIT)
    error = f"{CREDENTIALS_PREFIX}{outcome.error}"
    store.effects.defer(row.id, iso(wait_until), error, count=False)
    logger.warning("effect waits for GitHub credentials: %s (row %d) until %s: %s",
                   row.describe(), row.id, iso(wait_until), outcome.error)
    return Outcome(RETRY, error=error, retry_at=wait_until, credentials=True)


class InlinePerformer:
    """Performs an item's due effects synchronously, right after its commit.

    Args:
        store: the store (its outbox).
        ports: tracker and notifier.
        settings: loopgate's identity (the idempotency check trusts only its comments).
        owner: the claim owner's name (default ``host:pid:inline``, so a performer that
            starts later can tell a dead one's claims).

    Use as the runtime's ``on_commit``. A transient failure leaves the row waiting for
    the next call (or another performer); nothing sleeps here.
    """

    def __init__(self, store: Store, ports: Ports, settings: EngineSettings,
                 owner: str = "") -> None:
        self.store = store
        self.ports = ports
        self.settings = settings
        self.owner = owner or f"{platform.node()}:{os.getpid()}:inline"

    def __call__(self, ref: WorkItemRef) -> None:
        """Perform ``ref``'s due rows, in order, until none is due or one must wait."""
        self.drain(ref)

    def drain(self, ref: WorkItemRef | None = None) -> int:
        """Perform due rows (of ``ref``, else of every item); returns how many were
        carried out (a row that failed for good is not counted)."""
        finished = 0
        while True:
            now = self.ports.clock.now()
            rows = self.store.effects.due(iso(now), limit=1, ref=ref)
            if not rows:
                return finished
            row = rows[0]
            if not claim_row(self.store, row, self.owner, now):
                return finished
            kind = perform_row(self.store, row, self.ports, self.settings, now).kind
            if kind == RETRY:
                if ref is not None:
                    return finished  # this item waits; its later rows keep their order
                continue
            finished += 1 if kind == DONE_OUTCOME else 0
