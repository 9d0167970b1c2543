"""The dispatcher: routed deliveries (webhook or poller) → the engine runtime, exactly once.

One worker thread takes deliveries from an in-process queue (:meth:`Dispatcher.submit`,
or :meth:`Dispatcher.offer`, which never blocks, for the webhook receiver) and, once a
webhook delivery is handled for good, marks it handled in the webhook inbox
(:attr:`Dispatcher.inbox`, a SQLite file of its own; a ``retry``/``failed`` one stays owed
and is replayed on the next start and every 60 s); ``loopgate poll --once`` calls
:meth:`Dispatcher.handle` directly. Either way one delivery
is handled at a time, so a tick seen by both the poller and the webhook leads to one
transition and one decision: the first re-evaluates the gate, the second finds the same
content key handled (or the gate already passed) and is dropped.

Kinds (issue 3 §4, explainer design C5):

* ``start`` → ``runtime.start(ref)`` (idempotent; an item already started is left alone).
* ``comment`` → every callable in :attr:`Dispatcher.comment_observers` is called with
  ``(ref, Comment)`` (the Slack side confirms ``loopgate link <code>`` there); then, on an
  item not started, an authorized author's start keyword starts it; on an item whose
  current node is a human gate that is waiting, ``runtime.advance(ref,
  events.Comments((c,), expected_node=gate))`` (``retry`` when the result is
  ``Unverified``: the gate stayed put while a GitHub call failed, as below).
* ``checklist_edited`` (loopgate's checklist edited on GitHub) → while the item waits at
  phase selection with nothing selected, ``phase-selection-changed`` is queued for the
  Slack card with the checklist's current rows, and ``github.checklist_edited`` is logged
  (issue 14 §15); otherwise dropped (``not-waiting``, ``not-the-checklist``). An edit by
  someone who may not choose phases is dropped ``not-mirrored-editor`` (issue 19 §1); a
  failed lookup of who edited it is ``retry``.
* ``quiz_attestation`` is delivery-only: it never starts an item; at a waiting human gate
  it calls ``runtime.advance(ref, events.Attestation(comment_id, url, expected_node=gate))``;
  in every other
  state it is dropped with reason ``no-gate``. When the gate could not verify the tick
  (a call to GitHub failed or was rate limited while it evaluated: the tracker's
  ``failures`` count moved) the result is ``retry`` and its content key is not recorded,
  so the poller asks again next cycle.

* ``pull_request_head`` (a new head commit, webhook or poller) →
  ``runtime.publish_gate(item, pulls=(N,))`` for every started item the pull request
  delivers (issue 11 §1); a head the vouching gates did not cover sends the item back
  (issue 19 §3).
* ``merge_group`` (``merge_group.checks_requested``) →
  ``runtime.publish_merge_group(pull, head_sha, base_sha, head_ref)``: the check on the
  group's commit (issue 19 §4; content key ``merge-group:<repo>@<sha>``).

Comments on a pull request are routed to the work items the pull request delivers.

Authorship (issue 19 §1): a comment the poller or the catch-up read from GitHub is its
author's only when GitHub's edit history says so (:mod:`engine.authorship`; the runtime
screens every event, a start request is screened here, the Slack link in
:mod:`bot.slack.slack_identity`); an ``issue_comment.edited`` whose sender is not the author
arrives as a ``comment`` carrying ``edited_by`` (key ``edited:<id>:<sha16>``) so the gate names it.

De-duplication is persisted (:mod:`bridges.ingress.bridge_state`): on the delivery id
(``X-GitHub-Delivery`` or the poller's id) and on the content key (``comment:<id>``,
``quiz:<id>:<sha16>``, ``start:<ref>``), so webhook and poller share one record.
Every handled delivery is logged in one structured line carrying its delivery id.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bridges import telemetry
from bridges.ingress.ack_first import AckFirst
from bridges.ingress.bridge_state import BridgeState, bridge_state
from bridges.ingress.delivery import Delivery
from bridges.ingress.inbox import InboxError, WebhookInbox, webhook_inbox
from bridges.ingress.kinds import (
    CHECKLIST_EDITED,
    COMMENT,
    MERGE_GROUP,
    PULL_REQUEST_HEAD,
    QUIZ_ATTESTATION,
    START,
    classify_comment,
    comment_key,
)
from engine import events as ev
from engine import operator
from engine.authorship import screen
from engine.effects import RECORD_CHECKLIST
from engine.errors import LoopgateError
from engine.hooks.markers import says
from engine.hooks.phase_selection import (
    ChecklistRefused,
    parse_selection,
    verify_checklist_editors,
)
from engine.ports import Comment, TrackerError, pull_request_cache
from engine.refs import WorkItemRef
from engine.settings import is_authorized
from engine.state import ItemStatus

if TYPE_CHECKING:  # types only: the wired application is declared, never imported
    from bridges.ingress.wired import IngressServices
    from engine.graph.model import Graph

__all__ = ["Dispatcher", "DispatchResult", "HANDLED", "DROPPED", "DUPLICATE", "RETRY", "FAILED"]

logger = logging.getLogger(__name__)

HANDLED = "handled"
DROPPED = "dropped"
DUPLICATE = "duplicate"
RETRY = "retry"
FAILED = "failed"

CommentObserver = Callable[[WorkItemRef, Comment], None]


@dataclass(frozen=True)
class DispatchResult:
    """What became of one delivery.

    Attributes:
        status: ``handled`` | ``dropped`` | ``duplicate`` | ``retry`` | ``failed``.
        reason: a kebab-case code (``advanced``, ``started``, ``no-gate``, ``not-at-gate``,
            ``not-started``, ``unverified`` ...).
        refs: the work items touched, as ``owner/repo#N`` strings.
        settled: False when a quiz tick was evaluated but the gate still waits (refused,
            unticked): its content key stays open, because the same ticked text may later
            be an authorized user's re-tick (a refused tick must not block the real one).
        node: the gate the delivery was evaluated at ("" when none was): the log line's
            ``node`` key.
    """

    status: str
    reason: str = ""
    refs: tuple[str, ...] = ()
    settled: bool = True
    node: str = ""

    @property
    def final(self) -> bool:
        """True when the delivery needs no second try (everything but retry/failed)."""
        return self.status not in (RETRY, FAILED)


def _unstarted(comment_id: int) -> str:
    """The key noting that comment ``comment_id`` was dropped because its item was not
    started (so no gate has seen it yet)."""
    return f"unstarted:{comment_key(comment_id)}"


def _selection_node(graph: Graph) -> str:
    """The phase-selection gate: the node whose exit runs ``classify-phase-selection``."""
    for node in graph.ordered():
        if any(h.name == "classify-phase-selection" for h in node.exit):
            return node.id
    return graph.start


def _after(comments: list[Comment], checklist: Comment) -> list[Comment]:
    """``comments`` posted after ``checklist``, oldest first (creation time, then id: ids
    grow with time and break ties within GitHub's one-second timestamps)."""
    mark = (checklist.created_at or "", checklist.id)
    return sorted((c for c in comments if (c.created_at or "", c.id) > mark),
                  key=lambda c: (c.created_at or "", c.id))


def _merge(results: list[DispatchResult]) -> DispatchResult:
    if not results:
        return DispatchResult(DROPPED, "no-item")
    refs = tuple(ref for r in results for ref in r.refs)
    settled = all(r.settled for r in results)
    for status in (FAILED, RETRY, HANDLED):
        picked = [r for r in results if r.status == status]
        if picked:
            return DispatchResult(status, picked[0].reason, refs, settled, picked[0].node)
    return DispatchResult(results[0].status, results[0].reason, refs, settled,
                          results[0].node)


class Dispatcher:
    """Routes deliveries to the runtime; one at a time, each once.

    Args:
        services: the wired application (runtime, store, graph, settings, ports,
            credentials: :class:`bridges.ingress.wired.IngressServices`, which
            ``bot.services.Services`` satisfies).
        state: the persisted de-duplication record (default: beside ``services.store``).
        inbox: the webhook inbox (default: opened beside ``services.store`` on first use
            and closed by :meth:`close`; one given here is the caller's to close).
        queue_size: the most deliveries waiting (``submit`` blocks beyond it, ``offer``
            refuses).

    Attributes:
        comment_observers: callables ``(ref, Comment)`` told about every human comment.
        handled: deliveries handled since start, whatever their result (the readiness
            check of the inbox: a moving count is a queue being worked on).
        acks: the acking requests in hand (:class:`~bridges.ingress.ack_first.AckFirst`):
            the worker pauses before each queued delivery while one is (issue 21 §1).
    """

    def __init__(self, services: IngressServices, *, state: BridgeState | None = None,
                 inbox: WebhookInbox | None = None, queue_size: int = 10000) -> None:
        self.services = services
        self.runtime = services.runtime
        self.store = services.store
        self.graph = services.graph
        self.settings = services.settings
        self.tracker = services.ports.tracker
        self.state = state or bridge_state(services.store)
        self._inbox = inbox
        self._owns_inbox = inbox is None
        self._inbox_closed = False
        self._inbox_lock = threading.Lock()
        self.comment_observers: list[CommentObserver] = []
        self.handled = 0
        self._queue: queue.Queue[tuple[Delivery, Future[DispatchResult]] | None] = queue.Queue(
            queue_size)
        self._handle_lock = threading.Lock()
        self._pending: dict[str, int] = {}  # delivery id -> how many queued or in hand
        self._pending_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.acks = AckFirst()

    def learn_installation(self, repo: str, installation_id: int) -> None:
        """Tell the GitHub credentials (an App's installations) which installation a
        signed delivery about ``repo`` came from; offline or token mode: nothing."""
        credentials = self.services.credentials
        if credentials is not None:
            credentials.learn(repo, installation_id)

    @property
    def inbox(self) -> WebhookInbox:
        """The webhook inbox (opened beside the store on first use when none was given).

        Raises:
            InboxError: the inbox file cannot be opened, or :meth:`close` ran.
        """
        with self._inbox_lock:
            if self._inbox_closed:
                raise InboxError("the dispatcher is closed: its webhook inbox is too")
            if self._inbox is None:
                self._inbox = webhook_inbox(self.store)
            return self._inbox

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> Dispatcher:
        """Start the worker thread (idempotent)."""
        if self._thread is None or not self._thread.is_alive():
            self._stopping.clear()
            pause = self.acks.pauser("dispatcher")  # counted as such: serve's /metrics
            self._thread = threading.Thread(target=self._work, args=(pause,),
                                            name="loopgate-dispatcher", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> int:
        """Stop accepting deliveries, finish the one in hand and drain the queue.

        Args:
            timeout: seconds to wait for the worker; what is still queued after that is
                cancelled (the poller finds those comments again; a webhook delivery is
                redelivered from GitHub's UI).

        Returns:
            How many queued deliveries were cancelled (0 on a clean stop).
        """
        self._stopping.set()
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
        cancelled = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
                self._done(item[0].delivery_id)
                cancelled += 1
        if cancelled:
            logger.warning("dispatcher stopped with %d deliveries not handled", cancelled)
        return cancelled

    def close(self) -> None:
        """Close the inbox this dispatcher opened. Call it only after :meth:`stop` and
        after every thread that used the inbox (the HTTP server's) was joined."""
        with self._inbox_lock:
            inbox, self._inbox = self._inbox, None
            self._inbox_closed = True
        if inbox is not None and self._owns_inbox:
            inbox.close()

    @property
    def running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until nothing is queued or in hand (tests, shutdown).

        Returns:
            True when idle within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._pending_lock:
                if not self._pending:
                    return True
            time.sleep(0.01)
        return False

    def known(self, delivery_id: str) -> bool:
        """True when ``delivery_id`` is queued or was handled (persisted)."""
        with self._pending_lock:
            if delivery_id in self._pending:
                return True
        return self.state.handled(f"delivery:{delivery_id}")

    def in_flight(self, delivery_id: str) -> bool:
        """True when ``delivery_id`` is queued or in hand (memory only: reads no database)."""
        with self._pending_lock:
            return delivery_id in self._pending

    def submit(self, delivery: Delivery) -> Future[DispatchResult]:
        """Queue ``delivery`` for the worker (blocks while the queue is full).

        Returns:
            A future resolved with the :class:`DispatchResult` once handled (cancelled if
            the dispatcher stops first).
        """
        future: Future[DispatchResult] = Future()
        if self._stopping.is_set():
            future.set_result(DispatchResult(DROPPED, "shutting-down"))
            return future
        self._enqueue(delivery, future, block=True)
        return future

    def offer(self, delivery: Delivery) -> bool:
        """Queue ``delivery`` without ever blocking (the webhook receiver's path: an HTTP
        answer must not wait for the dispatcher).

        Returns:
            True when queued; False when stopping or the queue is full (the delivery is
            then still owed in the inbox, and the inbox replay queues it later).
        """
        if self._stopping.is_set():
            return False
        return self._enqueue(delivery, Future(), block=False)

    def _enqueue(self, delivery: Delivery, future: Future[DispatchResult], *,
                 block: bool) -> bool:
        with self._pending_lock:
            self._pending[delivery.delivery_id] = self._pending.get(delivery.delivery_id, 0) + 1
        try:
            self._queue.put((delivery, future), block=block)
        except queue.Full:
            self._done(delivery.delivery_id)
            return False
        return True

    def _work(self, pause: Callable[[], float]) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                if self._queue.empty():
                    return
                self._queue.put(None)  # drain what came before the stop marker first
                continue
            delivery, future = item
            pause()  # acks first: a delivery waits for the acks in hand (bounded)
            try:
                if future.set_running_or_notify_cancel():
                    result = self.handle(delivery)
                    if result.final and delivery.source == "github":
                        # handled for good: the inbox no longer owes it
                        self.inbox.done(delivery.delivery_id, result.status)
                    future.set_result(result)
            except BaseException as exc:  # the worker must survive any single delivery
                future.set_exception(exc)
            finally:
                self._done(delivery.delivery_id)

    def _done(self, delivery_id: str) -> None:
        with self._pending_lock:
            left = self._pending.get(delivery_id, 0) - 1
            if left > 0:
                self._pending[delivery_id] = left
            else:
                self._pending.pop(delivery_id, None)

    # -- handling --------------------------------------------------------------------------
    def handle(self, delivery: Delivery) -> DispatchResult:
        """Handle one routed delivery now (thread-safe; one at a time).

        Returns:
            The result; never raises for a bad delivery (a runtime or tracker failure is
            ``failed``/``retry`` and is not recorded, so it can be tried again).
        """
        started = time.perf_counter()
        with self._handle_lock, self._exclusive(delivery):
            result = self._handle_once(delivery)
            self.handled += 1
        seconds = time.perf_counter() - started
        ms = seconds * 1000
        telemetry.delivery(delivery.source, delivery.event, result.status, seconds)
        log = logger.warning if result.status == FAILED else logger.info
        log("delivery=%s source=%s kind=%s key=%s refs=%s result=%s reason=%s ms=%.1f",
            delivery.delivery_id, delivery.source, delivery.event, delivery.data.get("key", ""),
            ",".join(result.refs) or "-", result.status, result.reason, ms,
            extra={"event": "dispatch.delivery", "delivery": delivery.delivery_id,
                   "item": ",".join(result.refs), "node": result.node,
                   "result": result.status,
                   "ms": round(ms, 1), "source": delivery.source, "kind": delivery.event})
        return result

    def _exclusive(self, delivery: Delivery) -> AbstractContextManager[Any]:
        # Replicas sharing PostgreSQL (issue 15 §3): a delivery's content key (else its id)
        # is handled by one replica at a time; in one process the handle lock suffices.
        return self.state.exclusive(
            str(delivery.data.get("key") or f"delivery:{delivery.delivery_id}"))

    def _handle_once(self, delivery: Delivery) -> DispatchResult:
        id_key = f"delivery:{delivery.delivery_id}"
        content_key = str(delivery.data.get("key") or "")
        if self.state.handled(id_key):
            return DispatchResult(DUPLICATE, "delivery-id")
        if content_key and self.state.handled(content_key):
            self.state.mark_handled(id_key, DUPLICATE)
            return DispatchResult(DUPLICATE, "content-key")
        try:
            result = self._route(delivery)
        except (LoopgateError, TrackerError) as exc:
            return DispatchResult(FAILED, f"error: {type(exc).__name__}: {exc}")
        if result.final:  # retry/failed stay unrecorded so a second try gets through
            if content_key and result.settled:
                self.state.mark_handled(content_key, result.status)
            self.state.mark_handled(id_key, result.status)
        return result

    def _route(self, delivery: Delivery) -> DispatchResult:
        ref = delivery.data.get("ref")
        if not isinstance(ref, WorkItemRef):
            return DispatchResult(DROPPED, "no-item")
        if delivery.event == START:
            return self._start(ref, "label")
        if delivery.event == COMMENT:
            return self._comment(ref, delivery)
        if delivery.event == QUIZ_ATTESTATION:
            return self._quiz(ref, delivery)
        if delivery.event == CHECKLIST_EDITED:
            return self._checklist_edited(ref, delivery.data["comment"])
        if delivery.event == PULL_REQUEST_HEAD:
            if delivery.data.get("fresh"):  # an edited body may link other items now
                cache = pull_request_cache(self.tracker)
                if cache is not None:
                    cache.forget_pull_request(ref.owner, ref.repo, ref.number)
            return self._pull_request_head(ref)
        if delivery.event == MERGE_GROUP:
            return self._merge_group(ref, delivery)
        return DispatchResult(DROPPED, "unknown-kind")

    # -- kinds ---------------------------------------------------------------------------
    def _needs_start(self, ref: WorkItemRef) -> bool:
        # Not started, or started but its first node never entered (a crash between the
        # two transactions of Runtime.start): start() is idempotent and repairs the latter.
        state = self.store.load(ref)
        if state is None or not state.current_node:
            return True
        record = state.nodes.get(self.graph.start)
        return state.current_node == self.graph.start and not (record and record.entered_at)

    def _start(self, ref: WorkItemRef, via: str) -> DispatchResult:
        if not self._needs_start(ref):
            if self._catch_up_owed(ref):
                return self._catch_up(ref, DispatchResult(DROPPED, "already-started",
                                                          (str(ref),)))
            return DispatchResult(DROPPED, "already-started", (str(ref),))
        self.runtime.start(ref)
        return self._catch_up(ref, DispatchResult(HANDLED, f"started-by-{via}", (str(ref),),
                                                  node=self.graph.start))

    # -- the checklist edited on GitHub (issue 14 §15) ---------------------------------------
    def _checklist_edited(self, ref: WorkItemRef, comment: Comment) -> DispatchResult:
        """Mirror the edited checklist's rows to the Slack card while the selection waits.

        An edit by someone who may not choose phases is not mirrored (issue 19 §1:
        ``not-mirrored-editor``, logged ``github.checklist_not_mirrored``); a failed edit
        lookup is ``retry`` (fail closed)."""
        refused = self._checklist_editor_refused(ref, comment)
        if refused is not None:
            return refused
        with self.store.transaction(ref) as tx:
            state = tx.state
            if state is None or not self._selection_waits(state):
                return DispatchResult(DROPPED, "not-waiting", (str(ref),))
            recorded = (state.surface.get(RECORD_CHECKLIST) or {}).get("commentId")
            if recorded != comment.id:  # a look-alike or an older copy is not the checklist
                return DispatchResult(DROPPED, "not-the-checklist", (str(ref),))
            selection = parse_selection(comment.body, self.graph)
            data = {"node": state.current_node, "commentId": comment.id, "url": comment.url,
                    "skips": selection.skipped_nodes(self.graph),
                    "optIns": list(selection.opt_ins),
                    "explainer": selection.explainer_on}
            tx.log("github.checklist_edited", data)
            self.services.ports.notifier.send(ref, "phase-selection-changed", data)
        return DispatchResult(HANDLED, "checklist-mirrored", (str(ref),))

    def _checklist_editor_refused(self, ref: WorkItemRef,
                                  comment: Comment) -> DispatchResult | None:
        # Looked up outside the transaction (a GitHub call); only for the recorded checklist
        # of a waiting selection, so other edits cost no query.
        state = self.store.load(ref)
        if state is None or not self._selection_waits(state):
            return None
        if (state.surface.get(RECORD_CHECKLIST) or {}).get("commentId") != comment.id:
            return None
        try:
            verify_checklist_editors(self.tracker, self.settings, comment.id)
        except ChecklistRefused as exc:
            with self.store.transaction(ref) as tx:
                tx.log("github.checklist_not_mirrored",
                       {"commentId": comment.id, "editor": exc.editor, "reason": exc.reason})
            return DispatchResult(DROPPED, "not-mirrored-editor", (str(ref),))
        except TrackerError as exc:
            return DispatchResult(RETRY, f"checklist-unverified: {exc}", (str(ref),))
        return None

    def _selection_waits(self, state: Any) -> bool:
        node = state.current_node
        return (bool(node) and node == _selection_node(self.graph)
                and not state.decisions.get(node)
                and state.status not in (ItemStatus.COMPLETE, ItemStatus.ESCALATED))

    # -- first sight (issue 14 §11) ------------------------------------------------------
    def _adopted_checklist(self, ref: WorkItemRef) -> int | None:
        """The recorded checklist's id while the item waits at its start node (adopted
        from the thread by the start gate, or posted already); else None."""
        state = self.store.load(ref)
        if state is None or state.current_node != self.graph.start:
            return None
        entry = state.surface.get(RECORD_CHECKLIST) or {}
        comment_id = entry.get("commentId")
        return int(comment_id) if comment_id and not entry.get("posting") else None

    def _catch_up_owed(self, ref: WorkItemRef) -> bool:
        return (self._adopted_checklist(ref) is not None
                and not self.state.handled(f"first-sight:{ref}"))

    def _seen_by_a_gate(self, comment_id: int) -> bool:
        # Handled, and not merely dropped as not-started; or offered by a catch-up already.
        key = comment_key(comment_id)
        return (self.state.handled(f"first-sight:{key}")
                or (self.state.handled(key) and not self.state.handled(_unstarted(comment_id))))

    def _catch_up(self, ref: WorkItemRef, started: DispatchResult) -> DispatchResult:
        """Offer the gate, once each and in order, the human comments posted after the
        checklist this start adopted: a database that first sees an item started elsewhere
        (or lost) must not swallow a reply seen while the item was unknown to it. Comments
        older than the checklist are history, and a comment a gate already saw is not
        offered again (its content key is handled and it was not dropped as
        ``not-started``). A failed thread read is ``retry``: the next
        start delivery catches up (``first-sight:<ref>`` is recorded only when done)."""
        checklist_id = self._adopted_checklist(ref)
        if checklist_id is None:
            return started
        try:
            comments = self.tracker.list_comments(ref)
        except TrackerError:
            return DispatchResult(RETRY, "first-sight-unread", started.refs)
        checklist = next((c for c in comments if c.id == checklist_id), None)
        after = _after(comments, checklist) if checklist is not None else []
        results = [started]
        for comment in after:
            key = comment_key(comment.id)
            if self._seen_by_a_gate(comment.id) or classify_comment(
                    comment, self.settings.bot, edited=False) != COMMENT:
                continue
            node = self._waiting_gate(ref)
            if node is None:
                break
            result = self._evaluate(ref, ev.Comments((comment,), expected_node=node),
                                    "advanced")
            if not result.final:
                return result  # first-sight stays owed: the next start delivery retries
            self.state.mark_handled(key, result.status)
            self.state.mark_handled(f"first-sight:{key}", result.status)
            results.append(result)
        self.state.mark_handled(f"first-sight:{ref}", HANDLED)
        caught_up = len(results) - 1
        if caught_up:
            logger.info("first sight of %s: %d comment(s) after the checklist offered to the "
                        "gate", ref, caught_up)
        return started

    def _comment(self, ref: WorkItemRef, delivery: Delivery) -> DispatchResult:
        comment: Comment = delivery.data["comment"]
        self.tracker.remember_comment(comment.id, comment.node_id)
        self._observe(ref, comment)
        targets = self._targets(ref, bool(delivery.data.get("pull_request")))
        if isinstance(targets, DispatchResult):
            return targets
        return _merge([self._comment_on(target, comment) for target in targets])

    def _comment_on(self, ref: WorkItemRef, comment: Comment) -> DispatchResult:
        if self._needs_start(ref):
            if self._is_start_request(comment):
                return self._authored(ref, comment) or self._start(ref, "comment")
            if self.store.load(ref) is None:
                # Noted, so the item's first start may still offer it to the gate (first
                # sight, issue 14 §11); its content key is recorded as for any delivery.
                self.state.mark_handled(_unstarted(comment.id), DROPPED)
                return DispatchResult(DROPPED, "not-started", (str(ref),))
        node = self._waiting_gate(ref)
        if node is None:
            if self._confirms_a_request(ref, comment):
                # Issue 19 §5: a confirmation answers no gate; the runtime authorizes it.
                self.runtime.advance(ref, ev.Comments((comment,)))
                return DispatchResult(HANDLED, "operator-request", (str(ref),))
            return DispatchResult(DROPPED, "not-at-gate", (str(ref),))
        return self._evaluate(ref, ev.Comments((comment,), expected_node=node), "advanced")

    def _confirms_a_request(self, ref: WorkItemRef, comment: Comment) -> bool:
        """True when ``comment`` names a pending operator request of ``ref``."""
        state = self.store.load(ref)
        if state is None or not state.current_node:
            return False
        pending = operator.pending_requests(state)
        return any(rid in pending for rid in operator.confirm_ids(comment.body))

    def _pull_request_head(self, pull: WorkItemRef) -> DispatchResult:
        """A new head commit on ``pull``: publish the ``loopgate`` check of every started
        item it delivers on it (issue 11 §1); a head the item's vouching gates did not
        cover sends the item back and leaves the check pending (issue 19 §3)."""
        try:
            numbers = self.tracker.items_for_pull_request(pull.owner, pull.repo, pull.number)
        except TrackerError:
            return DispatchResult(RETRY, "pull-request-lookup-failed", (str(pull),))
        refs = [WorkItemRef(pull.owner, pull.repo, n) for n in numbers]
        queued = [str(ref) for ref in refs
                  if self.runtime.publish_gate(ref, pulls=(pull.number,))]
        if not queued:
            return DispatchResult(DROPPED, "no-started-item", (str(pull),))
        return DispatchResult(HANDLED, "check-queued", tuple(queued))

    def _merge_group(self, pull: WorkItemRef, delivery: Delivery) -> DispatchResult:
        """A merge queue asks for ``loopgate`` on a group's commit (issue 19 §4): the
        runtime queues the check; the performer decides it from the items' coverage."""
        data = delivery.data
        if not self.runtime.publish_merge_group(pull, str(data["head_sha"]),
                                                str(data.get("base_sha") or ""),
                                                str(data.get("head_ref") or "")):
            return DispatchResult(DROPPED, "merge-gate-off", (str(pull),))
        return DispatchResult(HANDLED, "merge-group-check-queued", (str(pull),))

    def _quiz(self, ref: WorkItemRef, delivery: Delivery) -> DispatchResult:
        # The GraphQL lookup needs the node id; the delivery carries it.
        self.tracker.remember_comment(int(delivery.data["comment_id"]),
                                      str(delivery.data.get("node_id") or ""))
        targets = self._targets(ref, bool(delivery.data.get("pull_request")))
        if isinstance(targets, DispatchResult):
            return targets
        comment_id = int(delivery.data["comment_id"])
        url = str(delivery.data.get("url") or "")
        return _merge([self._quiz_on(target, comment_id, url) for target in targets])

    def _quiz_on(self, ref: WorkItemRef, comment_id: int, url: str) -> DispatchResult:
        node = self._waiting_gate(ref)
        if node is None:
            return DispatchResult(DROPPED, "no-gate", (str(ref),))
        return self._evaluate(ref, ev.Attestation(comment_id, url, expected_node=node),
                              "evaluated", open_while_waiting=True)

    def _evaluate(self, ref: WorkItemRef, event: ev.Comments | ev.Attestation, reason: str, *,
                  open_while_waiting: bool = False) -> DispatchResult:
        """Re-evaluate the gate; ``retry`` when it stayed put because it could not read
        what it needed (the gate's wait says ``unverified``), so the event must be offered
        again. With ``open_while_waiting`` a gate that still waits gives an unsettled
        result (``still-waiting``): the event's content key stays open."""
        # Bound to the gate we saw (event.expected_node): if another ingress (Slack, the
        # CLI) moved the pointer since, the event must not answer the next gate.
        node = str(event.expected_node)
        result = self.runtime.advance(ref, event)
        if result.state.current_node != node:
            return DispatchResult(HANDLED, reason, (str(ref),), node=node)
        if isinstance(result, ev.Unverified):
            return DispatchResult(RETRY, "unverified", (str(ref),), node=node)
        if open_while_waiting:
            return DispatchResult(HANDLED, "still-waiting", (str(ref),), settled=False,
                                  node=node)
        return DispatchResult(HANDLED, reason, (str(ref),), node=node)

    # -- helpers ---------------------------------------------------------------------------
    def _authored(self, ref: WorkItemRef, comment: Comment) -> DispatchResult | None:
        """None when ``comment`` counts as its author's (issue 19 §1, the engine's one rule
        :func:`engine.authorship.screen`); else ``retry`` (GitHub could not tell) or
        ``dropped`` ``not-counted`` with one structured log line."""
        result = screen([comment], self.tracker, matters=lambda c: True)
        if result.unverified:
            return DispatchResult(RETRY, "unverified", (str(ref),))
        for refused in result.not_counted:
            logger.warning("start request on %s not counted: %s", ref, refused.reason,
                           extra={"event": "dispatch.comment_not_counted", "item": str(ref),
                                  **refused.to_json()})
            return DispatchResult(DROPPED, "not-counted", (str(ref),))
        return None

    def _observe(self, ref: WorkItemRef, comment: Comment) -> None:
        for observer in list(self.comment_observers):
            try:
                observer(ref, comment)
            except Exception:  # an observer's bug must not lose the delivery for the engine
                logger.exception("comment observer %r failed on %s comment=%s",
                                 getattr(observer, "__name__", observer), ref, comment.id)

    def _is_start_request(self, comment: Comment) -> bool:
        return (says(comment.body, self.settings.start_keyword)
                and is_authorized(comment.author, self.settings.authorized_users))

    def _waiting_gate(self, ref: WorkItemRef) -> str | None:
        """The current node id when it is a human gate still waiting, else None."""
        state = self.store.load(ref)
        if state is None or state.status in (ItemStatus.COMPLETE, ItemStatus.ESCALATED):
            return None
        try:
            node = self.graph.node(state.current_node)
        except KeyError:
            return None
        return node.id if node.is_human else None

    def _targets(self, ref: WorkItemRef,
                 on_pull_request: bool) -> list[WorkItemRef] | DispatchResult:
        """The work items a comment on ``ref`` concerns (a PR maps to what it delivers)."""
        if not on_pull_request or self.store.load(ref) is not None:
            return [ref]
        try:
            numbers = self.tracker.items_for_pull_request(ref.owner, ref.repo, ref.number)
        except TrackerError:
            return DispatchResult(RETRY, "pull-request-lookup-failed", (str(ref),))
        return [WorkItemRef(ref.owner, ref.repo, n) for n in numbers] or [ref]
