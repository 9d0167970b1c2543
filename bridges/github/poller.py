"""The conditional poller (issue 3 §2): few requests, nothing handled twice, nothing lost.

Per configured repository, per cycle:

1. **One conditional request** to the repository-wide comment list,
   ``GET /repos/{o}/{r}/issues/comments?sort=updated&direction=asc&since=<cursor>`` with
   ``If-None-Match: <etag>`` (``Link`` pages followed on a ``200``). A ``304`` costs
   nothing against GitHub's rate limit, so work items without changes cost nothing —
   unlike the design it replaces, which re-read every item's thread every cycle.
2. At most **one conditional query for newly labelled issues**:
   ``GET /repos/{o}/{r}/issues?labels=<startLabel>&state=open&sort=updated&direction=asc``
   ``&since=<cursor>``.

Cursors: a window that fitted in one page keeps its ``since`` with its ETag, so every idle
cycle after it is a ``304`` (issue 21 §5). Otherwise, ``since`` having one-second
resolution, the next cursor is the newest ``updated_at`` seen minus
:attr:`Poller.overlap` seconds; the overlap re-reads a few
comments, which are de-duplicated **by key, never by time**. An ETag is kept with the
``since`` it answered, since it only matches the same URL, and only when the whole window
fitted in one page: an ETag covers the first page, and in ascending order new comments
land on later pages of a full window. A busy window is read unconditionally and its next
cursor is the newest second itself (``since`` is inclusive), so it shrinks back to one
page; only more than a page of comments updated in one second keeps it unconditional.
Cursor and ETag per repository live in SQLite (:mod:`bridges.ingress.bridge_state`) and are
written after the cycle's deliveries were handled, so a restart between cycles neither
repeats nor loses an event.

For each changed comment:

* a new human comment (unseen id, created inside the window) → a ``comment`` delivery
  (the dispatcher starts the item on an authorized ``the-loop start``, feeds a waiting
  gate, and tells the comment observers);
* loopgate's own quiz comment (self-authored marker + ``<!-- the-loop:quiz``) with its box
  ticked → key ``quiz:<comment id>:<sha256(body)[:16]>``; an unseen key becomes **one**
  ``quiz_attestation`` delivery and is marked seen (``quizSeen``) only after the gate
  evaluated it. All candidates of a cycle are looked up in ⌈K/100⌉ GraphQL queries ahead
  of the gates (:meth:`GitHubTracker.prefetch`); a failed or rate-limited lookup leaves
  the keys unseen, holds the cursor back and drops the ETag, so the next cycle retries.

* a new human comment that could decide something (a decisive reply, a typed attestation
  line, a keyword, a link code) is looked up ahead in the same ⌈K/100⌉ way: the gate counts
  it only when GitHub's edit history shows nobody else edited it (issue 19 §1); a plain
  comment, or an idle cycle, asks GraphQL nothing.

* loopgate's own phase-selection checklist, updated after it was created → one
  ``checklist_edited`` delivery per body (key ``checklist:<comment id>:<sha16>``): the
  Slack card is redrawn to match (issue 14 §15).

An issue carrying the start label that is not started yet → a ``start`` delivery.

3. **One conditional request for open pull requests** (issue 11 §1, for installs without
   webhooks): ``GET /repos/{o}/{r}/pulls?state=open`` with ``If-None-Match``; a head
   commit not seen before (key ``head:<ref>@<sha>``, shared with the webhook) becomes a
   ``pull_request_head`` delivery, so the ``loopgate`` check follows every push.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from bridges import telemetry
from bridges.github.client import GitHubClient
from bridges.github.errors import BridgeError, RateLimited
from bridges.github.router import (
    CHECKLIST_EDITED,
    COMMENT,
    PULL_REQUEST_HEAD,
    QUIZ_ATTESTATION,
    START,
    as_actor,
    checklist_key,
    classify_comment,
    comment_from_rest,
    comment_key,
    head_key,
    quiz_key,
    start_key,
)
from bridges.github.tracker import GitHubTracker
from bridges.github.webhook import Delivery
from bridges.ingress.bridge_state import BridgeState, PollCursor
from bridges.ingress.dispatcher import DUPLICATE, Dispatcher, DispatchResult
from engine.authorship import could_matter, has_link_code, needs_check
from engine.errors import ConfigError
from engine.identity import Actor
from engine.ports import Comment, TrackerError
from engine.refs import WorkItemRef

if TYPE_CHECKING:  # types only
    from engine.settings import EngineSettings

__all__ = ["Poller", "PollerServices", "PollLeadership", "CycleReport", "RepoReport"]

logger = logging.getLogger(__name__)


class PollLeadership(Protocol):
    """Replicas sharing one store poll one at a time (issue 15 §3): only the holder of a
    lock runs the cycles (``bridges.postgres.replicas.Leadership``, an advisory lock)."""

    @property
    def leading(self) -> threading.Event:
        """Set while this replica holds the lock (``/readyz``: "standby" otherwise)."""
        ...

    def run(self, stop: threading.Event, interval: float,
            cycle: Callable[[threading.Event], float]) -> None:
        """Until ``stop``: take the lock when free (trying every ``interval`` seconds),
        then run ``cycle(stop)`` and wait the seconds it returns while the lock is held."""
        ...


class ConfigSections(Protocol):
    """The validated configuration, read a section at a time (``bot.config.Config``)."""

    def section(self, name: str) -> Mapping[str, Any]:
        """Section ``name`` of loopgate.yaml with its defaults (``{}`` when absent)."""
        ...


class PollerServices(Protocol):
    """What :meth:`Poller.from_services` reads from the wired application (issue 20 §3:
    declared here, so the bridge never imports ``bot/``; ``bot.services.Services``
    satisfies it)."""

    @property
    def config(self) -> ConfigSections:
        """The configuration (its ``github`` section: repositories, start label)."""
        ...

    @property
    def settings(self) -> EngineSettings:
        """The engine settings (loopgate's own login, whether the merge gate is on)."""
        ...

    @property
    def github(self) -> GitHubTracker | None:
        """The GitHub tracker, None offline."""
        ...

COMMENTS = "comments"
LABELS = "labels"
PULLS = "pulls"


def _keeps_since(window: _Window) -> bool:
    """True when the next cycle asks with this cycle's ``since`` (issue 21 §5).

    An ETag matches only the URL it answered, ``since`` included: a cursor moved after a
    ``200`` made the next idle cycle an unconditional, counted request. A window that
    fitted in one page (it has an ETag) and holds nothing back keeps its ``since``, so the
    ETag stored with it answers every idle cycle with a ``304``; the comments re-listed
    when something changes are de-duplicated by key. A full page moves the cursor (no
    ETag then), so the window shrinks back to a page.
    """
    return bool(window.etag) and window.hold_back is None


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, AttributeError):
        return None


@dataclass
class RepoReport:
    """What one repository cost and produced in one cycle.

    Attributes:
        repo: ``owner/repo``.
        requests: REST requests sent (pages included).
        not_modified: how many answers were ``304``.
        deliveries: deliveries handed to the dispatcher.
        results: their results, in order.
        retries: quiz keys left unseen for the next cycle.
        error: why the repository was cut short ("" when it was not).
        limited_until: a rate-limit reset met in this repository, or None.
    """

    repo: str
    requests: int = 0
    not_modified: int = 0
    deliveries: int = 0
    results: list[DispatchResult] = field(default_factory=list)
    retries: int = 0
    error: str = ""
    limited_until: datetime | None = None


@dataclass
class CycleReport:
    """One poll cycle over every repository.

    Attributes:
        repos: per-repository reports.
        limited_until: the latest rate-limit reset met (None when none).
    """

    repos: list[RepoReport] = field(default_factory=list)
    limited_until: datetime | None = None

    @property
    def requests(self) -> int:
        """REST requests sent in the cycle."""
        return sum(r.requests for r in self.repos)


@dataclass
class _Window:
    """One stream's request: its since, ETag, and what the answer held."""

    repo: str
    stream: str
    since: str
    stored: PollCursor
    etag: str = ""
    newest: datetime | None = None
    hold_back: datetime | None = None

    def saw(self, updated_at: str) -> None:
        when = _parse(updated_at)
        if when is not None and (self.newest is None or when > self.newest):
            self.newest = when

    def hold(self, updated_at: str) -> None:
        when = _parse(updated_at)
        if when is not None and (self.hold_back is None or when < self.hold_back):
            self.hold_back = when


class Poller:
    """Polls the configured repositories and hands deliveries to the dispatcher.

    Args:
        client: the REST client.
        dispatcher: handles each delivery synchronously (:meth:`Dispatcher.handle`).
        state: cursors, ETags and seen keys (usually ``dispatcher.state``).
        repos: ``owner/repo`` names to poll.
        start_label: the label that starts a work item ("" = no label query).
        bot_login: loopgate's identity (an :class:`~engine.identity.Actor`, or a login;
            "" if unknown).
        tracker: the GitHub tracker (node ids, batched edit lookups), or None.
        overlap: seconds the next ``since`` reaches back before the newest update (one:
            ``since`` has one-second resolution).
        initial_lookback: seconds a never-polled repository looks back on its first cycle.
        pulls: poll open pull requests' head commits (the ``loopgate`` check, issue 11).
        clock: current UTC time.
    """

    def __init__(self, client: GitHubClient, dispatcher: Dispatcher, state: BridgeState, *,
                 repos: Sequence[str], start_label: str = "", bot_login: Actor | str = "",
                 tracker: GitHubTracker | None = None, overlap: float = 1.0,
                 initial_lookback: float = 600.0, pulls: bool = True,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.client = client
        self.dispatcher = dispatcher
        self.state = state
        self.repos = tuple(repos)
        self.start_label = start_label
        self.bot = as_actor(bot_login)
        self.tracker = tracker
        self.overlap = timedelta(seconds=overlap)
        self.initial_lookback = timedelta(seconds=initial_lookback)
        self.pulls = pulls
        self._clock = clock or (lambda: datetime.now(UTC))
        #: ``time.monotonic()`` when the last cycle ended (None before the first): the
        #: readiness check of the poller (issue 13 §1).
        self.last_cycle_at: float | None = None
        #: Seconds between cycles while :meth:`run` runs (None: not running).
        self.interval: float | None = None
        #: ``time.monotonic()`` the next cycle is due (later than one interval while a
        #: rate limit is waited out): such a wait is no stalled poller.
        self.next_cycle_at: float | None = None
        #: Replicas on PostgreSQL (issue 15 §3): a ``Leadership`` whose ``run(stop,
        #: interval, cycle)`` polls only while this replica holds the poller's advisory
        #: lock, and whose ``leading`` event says so; None: this process always polls.
        self.leadership: PollLeadership | None = None

    @classmethod
    def from_services(cls, services: PollerServices, dispatcher: Dispatcher,
                      **kwargs: Any) -> Poller:
        """Build from wired services (``github`` section of loopgate.yaml)."""
        section = services.config.section("github")
        tracker = services.github
        if tracker is None:
            raise ConfigError("the poller needs the github section of loopgate.yaml")
        kwargs.setdefault("pulls", bool(services.settings.merge_gate))
        return cls(tracker.client, dispatcher, dispatcher.state,
                   repos=section.get("repos") or (),
                   start_label=section.get("startLabel") or "",
                   bot_login=services.settings.bot, tracker=tracker, **kwargs)

    # -- the loop --------------------------------------------------------------------------
    def run(self, interval: float, stop: threading.Event) -> None:
        """Poll every ``interval`` seconds until ``stop`` is set (a rate limit waits for
        its reset instead), or, with :attr:`leadership`, only while leading. A cycle in
        hand is finished before returning."""
        self.interval = interval
        try:
            if self.leadership is not None:  # replicas: only the lock's holder polls
                self.leadership.run(stop, interval, lambda s: self.cycle(s, interval))
                return
            while not stop.is_set():
                stop.wait(self.cycle(stop, interval))
        finally:
            self.interval = None  # readiness: the loop is not running any more

    def cycle(self, stop: threading.Event, interval: float) -> float:
        """One :meth:`poll_once`; returns the seconds to wait before the next one
        (``interval``, or longer until a rate limit resets). Replicas on PostgreSQL run
        this only on the replica leading the poller (issue 15 §3)."""
        report = self.poll_once(stop)
        wait = interval
        if report.limited_until is not None:
            wait = max(wait, (report.limited_until - self._clock()).total_seconds())
        wait = max(wait, 0.0)
        self.next_cycle_at = time.monotonic() + wait
        return wait

    def poll_once(self, stop: threading.Event | None = None) -> CycleReport:
        """One cycle over every repository (stops between repositories when ``stop`` is set).

        Returns:
            The :class:`CycleReport`.
        """
        started = time.monotonic()
        report = CycleReport()
        self._cycle(report, stop)
        self.last_cycle_at = time.monotonic()
        telemetry.poll_cycle(self.last_cycle_at - started, self.last_cycle_at)
        return report

    def _cycle(self, report: CycleReport, stop: threading.Event | None) -> None:
        for repo in self.repos:
            if stop is not None and stop.is_set():
                break
            repo_report = RepoReport(repo)
            report.repos.append(repo_report)
            try:
                self._poll_comments(repo, repo_report)
                if self.start_label:
                    self._poll_labels(repo, repo_report)
                if self.pulls:
                    self._poll_heads(repo, repo_report)
            except RateLimited as exc:
                repo_report.error = "rate-limited"
                repo_report.limited_until = exc.reset_at
            except BridgeError as exc:
                repo_report.error = str(exc)
                logger.warning("poll repo=%s failed: %s", repo, exc)
            until = repo_report.limited_until
            if until is not None and (report.limited_until is None
                                      or until > report.limited_until):
                report.limited_until = until
            logger.debug("poll repo=%s requests=%d not_modified=%d deliveries=%d retries=%d",
                         repo, repo_report.requests, repo_report.not_modified,
                         repo_report.deliveries, repo_report.retries)

    # -- streams ---------------------------------------------------------------------------
    def _window(self, repo: str, stream: str) -> _Window:
        stored = self.state.get_cursor(repo, stream)
        since = stored.cursor or _iso(self._clock() - self.initial_lookback)
        return _Window(repo, stream, since, stored)

    def _fetch(self, window: _Window, path: str, params: dict[str, Any],
               report: RepoReport) -> list[dict[str, Any]] | None:
        stored = window.stored
        etag = stored.etag if stored.etag_since == window.since else ""
        result = self.client.conditional_list(f"poll {window.stream} {window.repo}", path,
                                              {**params, "since": window.since}, etag=etag)
        report.requests += result.requests
        if result.not_modified:
            report.not_modified += 1
            return None
        # The ETag covers the first page only. With ascending order new items land at the
        # end, so a full first page would keep its ETag while later pages grow: keep the
        # ETag only when the whole window fitted in a page with room to spare.
        window.etag = result.etag if len(result.items) < self.client.per_page else ""
        return result.items

    def _commit(self, window: _Window) -> None:
        """Store the next cursor (and the ETag when nothing is held back)."""
        newest = window.newest
        cursor = window.since
        if _keeps_since(window):
            newest = None  # the ETag answered this since: the next idle cycle is a 304
        if newest is not None:
            # A window that filled a page keeps no ETag; reaching back only to the newest
            # second (``since`` is inclusive) lets it shrink to one page again.
            reach = self.overlap if window.etag else timedelta(0)
            cursor = max(cursor, _iso(newest - reach))
        if window.hold_back is not None:
            # Keep the held-back comment inside the next window (never behind this one).
            cursor = min(cursor, max(window.since, _iso(window.hold_back - self.overlap)))
        etag = window.etag if window.hold_back is None else ""
        self.state.set_cursor(window.repo, window.stream,
                              PollCursor(cursor, etag, window.since if etag else ""))

    def _poll_comments(self, repo: str, report: RepoReport) -> None:
        window = self._window(repo, COMMENTS)
        items = self._fetch(window, f"/repos/{repo}/issues/comments",
                            {"sort": "updated", "direction": "asc"}, report)
        if items is None:
            return
        humans, ticks = self._classify(repo, window, items)
        ready = self._prefetch(window, ticks, report)
        vetted = self._prefetch_authorship(window, humans)
        try:
            for comment, delivery in sorted(humans + ready, key=lambda p: (p[0].updated_at,
                                                                            p[0].id)):
                self._deliver(repo, window, comment, delivery, report)
        finally:
            if self.tracker is not None and ready:
                self.tracker.discard_prefetched([c.id for c, _ in ready])
            if self.tracker is not None and vetted:
                self.tracker.discard_prefetched(vetted)
        self._commit(window)

    def _poll_labels(self, repo: str, report: RepoReport) -> None:
        window = self._window(repo, LABELS)
        items = self._fetch(window, f"/repos/{repo}/issues",
                            {"labels": self.start_label, "state": "open", "sort": "updated",
                             "direction": "asc"}, report)
        if items is None:
            return
        owner, name = repo.split("/", 1)
        for raw in items:
            window.saw(str(raw.get("updated_at") or ""))
            if raw.get("pull_request") or not isinstance(raw.get("number"), int):
                continue
            ref = WorkItemRef(owner, name, raw["number"])
            if self.dispatcher.store.load(ref) is not None:
                continue
            delivery = Delivery(f"poll:start:{ref}", "poller", START, "issues.labeled",
                                {"ref": ref, "key": start_key(ref), "by": ""})
            result = self.dispatcher.handle(delivery)
            report.deliveries += 1
            report.results.append(result)
            if not result.final:
                window.hold(str(raw.get("updated_at") or ""))
        self._commit(window)

    def _poll_heads(self, repo: str, report: RepoReport) -> None:
        # The open pull requests' heads: one conditional request (a 304 costs nothing).
        stored = self.state.get_cursor(repo, PULLS)
        result = self.client.conditional_list(f"poll {PULLS} {repo}", f"/repos/{repo}/pulls",
                                              {"state": "open"}, etag=stored.etag)
        report.requests += result.requests
        if result.not_modified:
            report.not_modified += 1
            return
        owner, name = repo.split("/", 1)
        settled = True
        for raw in result.items:
            sha = str((raw.get("head") or {}).get("sha") or "")
            if not sha or not isinstance(raw.get("number"), int):
                continue
            ref = WorkItemRef(owner, name, raw["number"])
            delivery = Delivery(f"poll:head:{ref}@{sha}", "poller", PULL_REQUEST_HEAD,
                                "pull_request.synchronize",
                                {"ref": ref, "head_sha": sha, "key": head_key(ref, sha),
                                 "pull_request": True})
            result_one = self.dispatcher.handle(delivery)
            if result_one.status != DUPLICATE:
                report.deliveries += 1
                report.results.append(result_one)
            settled = settled and result_one.final
        # The ETag only once every head was handled: a retry must read the list again.
        self.state.set_cursor(repo, PULLS, PollCursor("", result.etag if settled else "", ""))

    # -- comments ----------------------------------------------------------------------------
    def _classify(self, repo: str, window: _Window, items: list[dict[str, Any]]
                  ) -> tuple[list[tuple[Comment, Delivery]], list[tuple[Comment, Delivery]]]:
        owner, name = repo.split("/", 1)
        since = _parse(window.since)
        comments = [comment_from_rest(raw) for raw in items]
        seen_humans = self.state.seen(repo, "comment", [str(c.id) for c in comments])
        humans: list[tuple[Comment, Delivery]] = []
        ticks: list[tuple[Comment, Delivery]] = []
        for comment in comments:
            window.saw(comment.updated_at)
            if self.tracker is not None:
                self.tracker.remember_comment(comment.id, comment.node_id)
            ref = WorkItemRef(owner, name, comment.issue_number)
            on_pr = "/pull/" in comment.url
            # The router's rule (classify_comment), read both ways: a listed comment may hold
            # an edit we have not seen (updated_at has one-second resolution, so an early
            # tick can look unedited; GraphQL verifies every tick), and may be new to us.
            if classify_comment(comment, self.bot, edited=True) == QUIZ_ATTESTATION:
                key = quiz_key(comment.id, comment.body, comment.updated_at)
                # One delivery per observed edit (updated_at, in the key as in the
                # webhook's): a later re-tick with the same text is a new edit.
                ticks.append((comment, Delivery(
                    f"poll:{quiz_key(comment.id, comment.body)}:{comment.updated_at}",
                    "poller", QUIZ_ATTESTATION,
                    "issue_comment.edited",
                    {"ref": ref, "comment_id": comment.id, "node_id": comment.node_id,
                     "url": comment.url, "key": key, "pull_request": on_pr})))
                continue
            if self._checklist_edit(comment):
                # loopgate's checklist, edited on GitHub: the Slack card follows (issue 14
                # §15); the dispatcher's content key drops a re-read of the same edit.
                humans.append((comment, Delivery(
                    f"poll:{checklist_key(comment.id, comment.body)}", "poller",
                    CHECKLIST_EDITED, "issue_comment.edited",
                    {"ref": ref, "comment": comment,
                     "key": checklist_key(comment.id, comment.body), "pull_request": on_pr})))
                continue
            if classify_comment(comment, self.bot, edited=False) != COMMENT:
                continue
            created = _parse(comment.created_at)
            if str(comment.id) in seen_humans or (since and created and created < since):
                continue
            humans.append((comment, Delivery(
                f"poll:comment:{comment.id}", "poller", COMMENT, "issue_comment.created",
                {"ref": ref, "comment": comment, "key": comment_key(comment.id),
                 "pull_request": on_pr})))
        return humans, self._unseen_ticks(repo, ticks)

    def _checklist_edit(self, comment: Comment) -> bool:
        # Listed with a later update than its creation: edited since it was posted (a
        # freshly posted checklist is no edit; the webhook's edited event needs no guess).
        return (comment.updated_at != comment.created_at
                and classify_comment(comment, self.bot, edited=True) == CHECKLIST_EDITED)

    def _unseen_ticks(self, repo: str, ticks: list[tuple[Comment, Delivery]]
                      ) -> list[tuple[Comment, Delivery]]:
        keys = [str(d.data["key"]) for _, d in ticks]
        seen = self.state.seen(repo, "quiz", keys)
        fresh = []
        for comment, delivery in ticks:
            key = str(delivery.data["key"])
            if key in seen:
                continue
            if self.state.handled(key):  # the webhook got there first: one decision
                self.state.mark_seen(repo, "quiz", [key])
                continue
            fresh.append((comment, delivery))
        return fresh

    def _prefetch(self, window: _Window, ticks: list[tuple[Comment, Delivery]],
                  report: RepoReport) -> list[tuple[Comment, Delivery]]:
        """Look every candidate tick up in ⌈K/100⌉ queries; on failure keep them for the
        next cycle (unseen, cursor held back, ETag dropped)."""
        if not ticks or self.tracker is None:
            return ticks
        try:
            self.tracker.prefetch([c.id for c, _ in ticks])
        except TrackerError as exc:
            logger.warning("poll repo=%s quiz lookup deferred (%d ticks): %s", window.repo,
                           len(ticks), exc)
            if isinstance(exc.__cause__, RateLimited):
                report.limited_until = exc.__cause__.reset_at
            for comment, _ in ticks:
                window.hold(comment.updated_at)
            report.retries += len(ticks)
            return []
        return ticks

    def _prefetch_authorship(self, window: _Window,
                             humans: list[tuple[Comment, Delivery]]) -> list[int]:
        """Look up, in ⌈K/100⌉ GraphQL queries, who edited the new comments that could
        matter (a decisive reply, a typed attestation line, a keyword, a link code): the
        authorship rule (issue 19 §1) asks for each before it counts, and an idle cycle
        asks nothing. Best effort: on failure each gate asks again itself and, GitHub
        still unable to tell, waits ``unverified`` (the cursor is held back then).

        Returns:
            The ids looked up (to discard once the cycle is over).
        """
        if self.tracker is None:
            return []
        settings = self.dispatcher.settings
        ids = [c.id for c, d in humans if d.event == COMMENT and needs_check(c)
               and (could_matter(c, settings) or has_link_code(c))]
        if not ids:
            return []
        try:
            self.tracker.prefetch(ids)
        except TrackerError as exc:
            logger.warning("poll repo=%s authorship lookup deferred (%d comments): %s",
                           window.repo, len(ids), exc)
            return []
        return ids

    def _deliver(self, repo: str, window: _Window, comment: Comment, delivery: Delivery,
                 report: RepoReport) -> None:
        result = self.dispatcher.handle(delivery)
        report.deliveries += 1
        report.results.append(result)
        if not result.final:
            window.hold(comment.updated_at)
            report.retries += delivery.event == QUIZ_ATTESTATION
            return
        if delivery.event == QUIZ_ATTESTATION:
            # A refused tick stays open for an authorized re-tick; so does one seen again in
            # the overlap window (a duplicate delivery id: its first handling decided).
            if result.settled and result.status != DUPLICATE:
                self.state.mark_seen(repo, "quiz", [str(delivery.data["key"])])
        elif delivery.event == COMMENT:
            self.state.mark_seen(repo, "comment", [str(comment.id)])
