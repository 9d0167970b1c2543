"""The Slack worker: drains the persisted outbox into Slack (issue 4 §1, §3, §4).

:class:`SlackWorker` reads ``slack_outbox`` rows in order, renders each event and sends it
through ``slack_sdk.WebClient`` (whose ``RateLimitErrorRetryHandler`` honours 429 +
``Retry-After``). Posts to one channel are paced (about one per second). A failed send is
retried later with a growing delay, so a Slack outage never blocks the GitHub side and
never loses the event; the events of one work item are sent in order (a failed event holds
back the later ones of the same item only).

One thread per work item: the parent message is the item's card — interactive while phase
selection waits, then its read-only live status card — and later notices go in its thread.
Quiz DMs and thread lines are remembered so they can be rewritten when the quiz is attested
or goes stale.

Events handled: ``phase-selection-pending`` (post the card), ``phase-selection-changed``
(the GitHub checklist was edited: redraw the card ticked as it says, fresh block ids;
issue 14 §15), ``phase-selection-done`` (rewrite it read-only), ``quiz-pending`` (DM
the item's owners + a thread line), ``quiz-attested`` / ``quiz-stale`` (rewrite those),
anything else (a thread line).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block

from bot.slack.approval_clicks import approval_gates, approver_slack_users, is_approval_gate
from bot.slack.blocks.approval import GateRef, approval_message, reminder_text
from bot.slack.blocks.card import phase_selection_card, phase_selection_node_id, status_card
from bot.slack.blocks.escaping import slack_text
from bot.slack.blocks.mirror import with_selection
from bot.slack.blocks.notices import (
    author_update_notice,
    comment_urls,
    event_line,
    quiz_attested_notice,
    quiz_pending_notice,
    quiz_stale_notice,
)
from bot.slack.blocks.operator_blocks import operator_request_message
from bot.slack.home_tab import refresh_homes
from bot.slack.listeners.actions.approve import rewrite_message
from bot.slack.routing import channel_for
from bot.slack.slack_identity import slack_users_for_login
from bot.slack.slack_schema import ensure_slack_tables, iso
from bot.slack.slack_tables import (
    SlackOutbox,
    load_thread,
    mark_outbox_failed,
    mark_outbox_retry,
    mark_outbox_sent,
    node_messages,
    open_approval_items,
    pending_outbox_rows,
    reminder_record,
    save_message,
    save_thread,
)
from engine.checksummary import details_page
from engine.operator import NOTICE as OPERATOR_NOTICE
from engine.ports import IssueInfo, SystemClock
from engine.refs import WorkItemRef
from engine.settings import normalize_login
from engine.story import AUTHOR_NOTICE

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["SlackWorker", "PACE_ENV", "MAX_ATTEMPTS"]

log = logging.getLogger(__name__)

PACE_ENV = "LOOPGATE_SLACK_PACE_SECONDS"
#: After this many attempts an event Slack keeps *refusing* (not an outage) is set aside.
MAX_ATTEMPTS = 8
#: How long a worker holds an outbox row it is sending (seconds); a replica that dies
#: mid-send leaves it to another after this (issue 15 §3).
CLAIM_SECONDS = 120
# Slack error codes that are worth retrying (everything else is a refusal).
_TRANSIENT = {"ratelimited", "service_unavailable", "internal_error", "fatal_error",
              "request_timeout", "team_added_to_org"}
#: Web API methods whose ``text`` is message text (escaped by :func:`slack_text`).
_MESSAGE_METHODS = ("chat_postMessage", "chat_update", "chat_postEphemeral")


class _Refused(Exception):
    """Slack refused the call for a reason retrying will not fix."""


def _pace_default() -> float:
    try:
        return float(os.environ.get(PACE_ENV, "1.0"))
    except ValueError:
        return 1.0


class SlackWorker:
    """Drains ``slack_outbox`` into Slack.

    Args:
        services: the wired services (config, graph, store, ports, runtime).
        client: a WebClient (default: built from the config, bot token from its env var).
        pace_seconds: minimum seconds between posts to one channel (default
            ``$LOOPGATE_SLACK_PACE_SECONDS`` or 1.0).
        idle_seconds: how long the thread sleeps when the outbox is empty.
        retry_base: the first retry delay in seconds (doubles per attempt, capped at
            ``retry_max``).
        retry_max: the longest retry delay in seconds.
        clock: the wall clock for retry scheduling (``now() -> datetime``); the outbox
            stamps rows with the wall clock too, so this is not the engine's clock.

    Raises:
        ConfigError: no client given and the bot token variable is not set.
    """

    def __init__(
        self,
        services: Services,
        client: WebClient | None = None,
        pace_seconds: float | None = None,
        *,
        idle_seconds: float = 0.5,
        retry_base: float = 5.0,
        retry_max: float = 300.0,
        clock: Any = None,
    ) -> None:
        if client is None:
            from bot.slack.bolt_app import build_web_client

            client = build_web_client(services.config)
        self.services = services
        self.client = client
        self.pace_seconds = _pace_default() if pace_seconds is None else float(pace_seconds)
        self.idle_seconds = idle_seconds
        self.retry_base = retry_base
        self.retry_max = retry_max
        self._clock = clock or SystemClock()
        self.channel = str(services.config.section("slack").get("channel") or "")
        self._last_post: dict[str, float] = {}
        #: Notices sent since start (the readiness check of the Slack outbox).
        self.sent = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # This worker's name in outbox claims (replicas share the outbox, issue 15 §3).
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        ensure_slack_tables(services.store)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        """Drain in a daemon thread until :meth:`stop`."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="loopgate-slack-worker",
                                        daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the event in hand; wait up to ``timeout`` seconds."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if not self._thread.is_alive():  # keep a stuck thread visible to `running`
                self._thread = None

    @property
    def running(self) -> bool:
        """True while the drain thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                handled = self.drain_once()
            except Exception:  # noqa: BLE001 - the loop must survive (e.g. a locked db)
                log.exception("slack worker: drain failed")
                handled = 0
            if not handled:
                self._stop.wait(self.idle_seconds)

    # -- draining ----------------------------------------------------------------------
    def drain_once(self) -> int:
        """Send every due outbox event once, in order per work item.

        Returns:
            The number of events handled (sent or set aside) in this pass.
        """
        now = iso(self._now())
        rows = pending_outbox_rows(self.services.store, 500)
        held: set[str] = set()
        handled = 0
        for row_id, item, event, data, attempts, due in rows:
            if self._stop.is_set():
                break
            if item in held or due > now:
                held.add(item)  # keep the item's events in order behind this one
                continue
            if not self._claim(row_id, now):  # another replica's worker has it
                held.add(item)
                continue
            if self._deliver(row_id, item, event, data, attempts):
                handled += 1
            else:
                held.add(item)
        self.sweep()
        return handled

    def sweep(self) -> None:
        """Look after the open approval messages: rewrite those whose gate moved (an
        answer on GitHub, a skip, a force) and remind those waiting too long (§2).
        Failures are logged; the next pass tries again."""
        for item in self._open_approval_items():
            try:
                ref = WorkItemRef.parse(item)
                if self._close_moved_approvals(ref):
                    self._refresh_homes(ref)  # it moved without an event of its own
                self._remind(ref)
            except Exception as exc:  # noqa: BLE001 - one item's failure must not stop the rest
                log.warning("slack: approval sweep of %s failed: %s", item, _describe(exc))

    def _open_approval_items(self) -> list[str]:
        return open_approval_items(self.services.store)

    def _remind(self, ref: WorkItemRef) -> None:
        """Remind an approval gate that waits longer than ``slack.remindAfterHours``: one
        thread line and one DM per approver, each at most once a day, for as long as the
        gate visit waits (issue 12 §2). Times are the engine's clock, which stamped the
        gate's ``enteredAt``."""
        state = self.services.store.load(ref)
        if state is None:
            return
        now = self.services.ports.clock.now()
        after = timedelta(hours=float(
            self.services.config.section("slack").get("remindAfterHours") or 24))
        for message in self._approval_messages(ref):
            gate = GateRef.parse(str(message["data"].get("gate") or ""))
            record = state.nodes.get(gate.node)
            if message["data"].get("state") != "open" or state.current_node != gate.node \
                    or record is None or record.entered_at != gate.entered_at:
                continue
            waited = now - _parse_iso(gate.entered_at)
            if waited >= after:
                self._remind_gate(ref, gate, message, int(waited.total_seconds() // 3600), now)

    def _remind_gate(self, ref: WorkItemRef, gate: GateRef, message: Mapping[str, Any],
                     hours: int, now: Any) -> None:
        users, _unlinked = approver_slack_users(self.services, gate.node,
                                                self.services.store.load(ref))
        url = self._item_url(ref)
        if self._due(ref, gate, "", now):
            text = reminder_text(gate, hours, users, item_url=url)
            self._refusable(lambda: self._call(
                "chat_postMessage", channel=message["channel"],
                thread_ts=(self._thread_row(ref) or {})["ts"], text=text, unfurl_links=False))
            self._reminded(ref, gate, "", message["channel"], now)
        for user in users:
            if not self._due(ref, gate, user, now):
                continue
            if self._refusable(lambda u=user: self._dm(u, reminder_text(gate, hours, (),
                                                                         item_url=url))):
                self._reminded(ref, gate, user, "", now)

    def _dm(self, user: str, text: str) -> bool:
        if not self._reachable(user):
            return True  # nobody to read it: counted as done for today
        opened = self._call("conversations_open", users=user)
        self._call("chat_postMessage", channel=str(opened["channel"]["id"]), text=text,
                   unfurl_links=False)
        return True

    @staticmethod
    def _refusable(send: Any) -> bool:
        # A refusal (not an outage) of a reminder is logged once and counts as sent, so
        # it is not retried on every pass; an outage raises and the next pass retries.
        try:
            send()
        except _Refused as exc:
            log.warning("slack: reminder refused: %s", exc)
        return True

    def _due(self, ref: WorkItemRef, gate: GateRef, user: str, now: Any) -> bool:
        last = reminder_record(self.services.store, ref, gate.node, user)
        if last is None:
            return True
        if last.get("gate") != gate.value():
            return True  # a new visit of the gate: its own reminders
        return bool(now - _parse_iso(str(last.get("at") or "")) >= timedelta(days=1))

    def _reminded(self, ref: WorkItemRef, gate: GateRef, user: str, channel: str,
                  now: Any) -> None:
        self._save_message(ref, gate.node, "reminder", user, channel, "", 0,
                           {"gate": gate.value(), "at": iso(now)})

    def _deliver(self, row_id: int, item: str, event: str, data: str, attempts: int) -> bool:
        try:
            self.handle(WorkItemRef.parse(item), event, json.loads(data or "{}"))
        except _Refused as exc:
            return self._failed(row_id, item, event, attempts, str(exc), permanent=True)
        except Exception as exc:  # noqa: BLE001 - any failure is retried from the outbox
            return self._failed(row_id, item, event, attempts, _describe(exc), permanent=False)
        mark_outbox_sent(self.services.store, row_id, iso(self._now()))
        self.sent += 1
        return True

    def _failed(self, row_id: int, item: str, event: str, attempts: int, error: str, *,
                permanent: bool) -> bool:
        attempts += 1
        if permanent and attempts >= MAX_ATTEMPTS:
            log.error("slack: %s for %s set aside after %d refusals: %s", event, item,
                      attempts, error)
            mark_outbox_failed(self.services.store, row_id, iso(self._now()), attempts, error)
            return True
        delay = min(self.retry_max, self.retry_base * (2 ** (attempts - 1)))
        log.warning("slack: %s for %s failed (attempt %d), retry in %.0fs: %s", event, item,
                    attempts, delay, error)
        due = iso(self._now() + timedelta(seconds=delay))
        mark_outbox_retry(self.services.store, row_id, attempts, due, error)
        return False

    def _claim(self, row_id: int, now: str) -> bool:
        until = iso(self._now() + timedelta(seconds=CLAIM_SECONDS))
        return SlackOutbox(self.services.store).claim(row_id, self._owner, until, now)

    def _now(self) -> Any:
        return self._clock.now()

    # -- events ------------------------------------------------------------------------
    def handle(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        """Render and send one event (raises on failure so the outbox retries it)."""
        if event == "phase-selection-pending":
            self._post_card(ref)
        elif event == "phase-selection-done":
            self._refresh_status(ref, force=False)  # unless Execute already rewrote it
        elif event == "phase-selection-changed":
            self._redraw_card(ref, data)
        elif event == "quiz-pending":
            self._quiz_pending(ref, data)
        elif event in ("quiz-attested", "quiz-stale"):
            self._quiz_update(ref, event, data)
        elif event == OPERATOR_NOTICE:
            self._operator_request(ref, data)
        elif event == AUTHOR_NOTICE:  # before the approval gates: its node is one
            self._author_update(ref, data)
        elif is_approval_gate(self.services.graph, str(data.get("node") or "")):
            self._approval_pending(ref, event, data)
        else:
            self._thread_line(ref, event, data)
        if event != "phase-selection-pending":
            self._refresh_status(ref, force=False)
        self._close_moved_approvals(ref)
        self._refresh_homes(ref)

    def _refresh_homes(self, ref: WorkItemRef) -> None:
        # The item moved: whoever's home tab shows it sees the new state (issue 12 §3).
        # Best-effort: the notice is already out, so a failed tab must not retry it.
        refresh_homes(self.services, self.client, ref)

    # -- approval gates (issue 12 §1, §2) ------------------------------------------------
    def _approval_pending(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        node = str(data.get("node") or "")
        state = self.services.store.load(ref)
        record = state.nodes.get(node) if state is not None else None
        if state is None or state.current_node != node or record is None:
            self._thread_line(ref, event, data)  # it moved before the notice: no buttons
            return
        visit = state.visit(node)  # the buttons name their visit (issue 19 §2)
        gate = GateRef(ref, node, record.entered_at, visit.number if visit is not None else 0)
        key = {"gate": gate.value(), "state": "open"}
        if self._same_message(ref, node, "approval", "", key):
            return  # already posted before a retry
        self._close_moved_approvals(ref)  # an older visit's message first says it moved
        thread = self._ensure_thread(ref)
        if thread is None:
            return
        users, unlinked = approver_slack_users(self.services, node, state)
        text, blocks = approval_message(
            gate, description=self.services.graph.node(node).description,
            waiting_on=users, waiting_logins=unlinked, item_url=self._item_url(ref),
            event=event, page_url=self._page_url(ref))
        reply = self._call("chat_postMessage", channel=thread["channel"],
                           thread_ts=thread["ts"], text=text, blocks=_dicts(blocks),
                           unfurl_links=False)
        self._save_message(ref, node, "approval", "", thread["channel"], str(reply["ts"]), 0,
                           key)

    def _close_moved_approvals(self, ref: WorkItemRef) -> int:
        """Rewrite read-only every open approval message whose gate visit has moved.

        Returns:
            How many were rewritten.
        """
        state = self.services.store.load(ref)
        closed = 0
        if state is None:
            return closed
        for message in self._approval_messages(ref):
            if message["data"].get("state") != "open":
                continue
            try:
                gate = GateRef.parse(str(message["data"].get("gate") or ""))
            except ValueError:
                continue
            record = state.nodes.get(gate.node)
            current = state.visit(gate.node)
            if state.current_node == gate.node and record is not None \
                    and record.entered_at == gate.entered_at \
                    and (not gate.visit or current is None or current.number == gate.visit):
                continue
            try:
                rewrite_message(self.services, self.client, gate, message["channel"],
                                message["ts"])
            except SlackApiError as exc:
                if not _refusal(exc):
                    raise  # an outage: the next pass tries again
                # Slack refuses for good (the message was deleted, the channel archived):
                # stop trying, once, with one log line.
                log.warning("slack: approval message of %s %s not rewritten: %s", ref,
                            gate.node, _describe(exc))
                self._save_message(ref, gate.node, "approval", "", message["channel"],
                                   message["ts"], message["revision"],
                                   {"gate": gate.value(), "state": "gone"})
            closed += 1
        return closed

    def _approval_messages(self, ref: WorkItemRef) -> list[dict[str, Any]]:
        nodes = approval_gates(self.services.graph)
        return [m for node in nodes for m in self._messages(ref, node)
                if m["kind"] == "approval"]

    def _info(self, ref: WorkItemRef) -> IssueInfo:
        return self.services.ports.tracker.issue_info(ref)  # TrackerError: retried

    def _decision(self, ref: WorkItemRef) -> tuple[Any, dict[str, Any] | None]:
        state = self.services.store.load(ref)
        node = phase_selection_node_id(self.services.graph)
        decision = state.decisions.get(node) if state is not None else None
        return state, decision

    def _post_card(self, ref: WorkItemRef) -> None:
        state, decision = self._decision(ref)
        if decision:
            self._refresh_status(ref, force=True)
            return
        info = self._info(ref)
        thread = self._thread_row(ref)
        revision = 0 if thread is None else thread["revision"] + 1
        blocks = phase_selection_card(self.services.graph, info, revision=revision,
                                      keyword=self.services.settings.execute_keyword,
                                      page_url=self._page_url(ref))
        text = f"Phase selection for {ref}: {info.title}"
        node = state.current_node if state is not None else ""
        self._put_parent(ref, thread, text, blocks, revision, "card", node, info.author)

    def _redraw_card(self, ref: WorkItemRef, data: Mapping[str, Any]) -> None:
        """Redraw the interactive card ticked as the edited GitHub checklist says, with a
        new revision in every block id (a click on the old drawing is then refused as
        stale). Once a selection is made, or before the card exists, nothing is drawn."""
        state, decision = self._decision(ref)
        thread = self._thread_row(ref)
        if state is None or decision or thread is None or thread["kind"] != "card":
            return
        info = self._info(ref)
        revision = thread["revision"] + 1
        blocks = phase_selection_card(self.services.graph, info, revision=revision,
                                      keyword=self.services.settings.execute_keyword,
                                      page_url=self._page_url(ref))
        drawn = with_selection(_dicts(blocks), skips=list(data.get("skips") or ()),
                               opt_ins=list(data.get("optIns") or ()),
                               explainer=bool(data.get("explainer", True)))
        self._call("chat_update", channel=thread["channel"], ts=thread["ts"],
                   text=f"Phase selection for {ref}: {info.title} (checklist edited on GitHub)",
                   blocks=drawn)
        save_thread(self.services.store, ref, channel=thread["channel"], ts=thread["ts"],
                    revision=revision, kind="card", node=state.current_node,
                    author=info.author)

    def _refresh_status(self, ref: WorkItemRef, *, force: bool) -> None:
        """Rewrite the parent message read-only once the selection is made; afterwards keep
        it live (rewritten whenever the item's current node changed). ``force`` posts a
        status card even while the selection waits, when the item has no card yet."""
        state, decision = self._decision(ref)
        thread = self._thread_row(ref)
        if state is None or not self._channel(ref) or (not decision and not force):
            return
        if not force and thread is not None and thread["kind"] == "status" \
                and thread["node"] == state.current_node:
            return
        if not decision and thread is not None and thread["kind"] == "card":
            return  # still waiting: the interactive card stays
        info = self._info(ref)
        revision = 0 if thread is None else thread["revision"] + 1
        blocks = status_card(self.services.graph, info, current_node=state.current_node,
                             status=state.status, decision=decision, revision=revision,
                             page_url=self._page_url(ref))
        text = f"{ref}: now at {state.current_node or '—'}"
        self._put_parent(ref, thread, text, blocks, revision, "status", state.current_node,
                         info.author)

    def _page_url(self, ref: WorkItemRef) -> str:
        """The item's details page (issue 22 §2), "" when ``server.publicUrl`` is unset."""
        return details_page(self.services.settings.public_url, ref)

    def _channel(self, ref: WorkItemRef) -> str:
        """The item's channel: ``slack.channels`` route, else ``slack.channel`` (§5)."""
        return channel_for(self.services.config.section("slack"), ref)

    def _put_parent(self, ref: WorkItemRef, thread: dict[str, Any] | None, text: str,
                    blocks: list[Block], revision: int, kind: str, node: str,
                    author: str = "") -> None:
        target = self._channel(ref)
        if not target:
            log.warning("slack.channel is not configured: no card for %s", ref)
            return
        if thread is None:
            reply = self._call("chat_postMessage", channel=target,
                               text=text, blocks=_dicts(blocks), unfurl_links=False)
            channel, ts = str(reply.get("channel") or target), str(reply["ts"])
        else:
            channel, ts = thread["channel"], thread["ts"]
            self._call("chat_update", channel=channel, ts=ts, text=text,
                       blocks=_dicts(blocks))
        save_thread(self.services.store, ref, channel=channel, ts=ts, revision=revision,
                    kind=kind, node=node, author=author)

    def _ensure_thread(self, ref: WorkItemRef) -> dict[str, Any] | None:
        thread = self._thread_row(ref)
        if thread is None and self._channel(ref):
            self._refresh_status(ref, force=True)
            thread = self._thread_row(ref)
        return thread

    def _thread_line(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        thread = self._ensure_thread(ref)
        if thread is None:
            return
        info_url = self._item_url(ref)
        text, blocks = event_line(ref, event, data, item_url=info_url)
        self._call("chat_postMessage", channel=thread["channel"],
                   thread_ts=thread["ts"], text=text, blocks=_dicts(blocks))

    def _operator_request(self, ref: WorkItemRef, data: Mapping[str, Any]) -> None:
        # Issue 19 §5: the request with a Confirm button, in the item's thread.
        thread = self._ensure_thread(ref)
        if thread is None:
            return
        text, blocks = operator_request_message(ref, data)
        self._call("chat_postMessage", channel=thread["channel"], thread_ts=thread["ts"],
                   text=text, blocks=_dicts(blocks), unfurl_links=False)

    def _item_url(self, ref: WorkItemRef) -> str:
        try:
            return self._info(ref).url
        except Exception:  # noqa: BLE001 - a link is a nicety; the notice still goes
            return ""

    # -- quiz notices ------------------------------------------------------------------
    def _owners(self, ref: WorkItemRef, info: IssueInfo) -> list[str]:
        _state, decision = self._decision(ref)
        logins = [normalize_login(str((decision or {}).get("by") or "")),
                  normalize_login(info.author)]
        users: list[str] = []
        for login in dict.fromkeys(lg for lg in logins if lg):
            users += [u for u in slack_users_for_login(self.services, login) if u not in users]
        return users

    def _quiz_pending(self, ref: WorkItemRef, data: Mapping[str, Any]) -> None:
        node = str(data.get("node") or "")
        info = self._info(ref)
        key = {"event": "quiz-pending", "digest": str(data.get("digest") or "-"),
               "urls": comment_urls(data)}
        text, blocks = quiz_pending_notice(
            ref, node, item_url=info.url, location=str(data.get("location") or ""),
            view_commands=[str(c) for c in data.get("viewCommands") or ()],
            comment_url_list=key["urls"])
        for user in self._owners(ref, info):
            if self._same_message(ref, node, "dm", user, key) or not self._reachable(user):
                continue  # already sent before a retry, or nobody to read it
            opened = self._call("conversations_open", users=user)
            channel = str(opened["channel"]["id"])
            reply = self._call("chat_postMessage", channel=channel, text=text,
                               blocks=_dicts(blocks), unfurl_links=False)
            self._save_message(ref, node, "dm", user, channel, str(reply["ts"]), 0, key)
        thread = self._ensure_thread(ref)
        if thread is not None and not self._same_message(ref, node, "thread", "", key):
            _text, line = quiz_pending_notice(  # the thread line mentions them (§2)
                ref, node, item_url=info.url, location=str(data.get("location") or ""),
                view_commands=[str(c) for c in data.get("viewCommands") or ()],
                comment_url_list=key["urls"], waiting_on=self._owners(ref, info))
            reply = self._call("chat_postMessage", channel=thread["channel"],
                               thread_ts=thread["ts"], text=text, blocks=_dicts(line),
                               unfurl_links=False)
            self._save_message(ref, node, "thread", "", thread["channel"], str(reply["ts"]), 0,
                               key)

    # -- the author's DMs (issue 24 §3) --------------------------------------------------
    def _author_update(self, ref: WorkItemRef, data: Mapping[str, Any]) -> None:
        """DM the work item's author (every Slack user linked to the issue author's login)
        that a gate passed or the item is complete; once per gate visit and Slack user (a
        retried notice skips whom it reached). An unlinked author gets nothing (debug log)."""
        info = self._info(ref)  # a TrackerError is retried from the outbox
        login = normalize_login(info.author)
        users = slack_users_for_login(self.services, login) if login else []
        if not users:
            log.debug("slack: no author DM for %s: @%s is not linked to a Slack user", ref,
                      login or "?")
            return
        # Kept apart from the node's quiz DMs, which a quiz-stale rewrites.
        node = f"author:{data.get('node') or ''}"
        key = {"event": AUTHOR_NOTICE, "kind": str(data.get("kind") or ""),
               "visit": int(data.get("visit") or 1)}
        text, blocks = author_update_notice(ref, data, title=info.title, item_url=info.url)
        for user in users:
            if self._same_message(ref, node, "author", user, key) or not self._reachable(user):
                continue
            opened = self._call("conversations_open", users=user)
            channel = str(opened["channel"]["id"])
            reply = self._call("chat_postMessage", channel=channel, text=text,
                               blocks=_dicts(blocks), unfurl_links=False)
            self._save_message(ref, node, "author", user, channel, str(reply["ts"]), 0, key)

    def _reachable(self, user: str) -> bool:
        # users.info: a deactivated account or a bot gets no DM (it would fail or be lost).
        info = self._call("users_info", user=user).get("user") or {}
        if info.get("deleted") or info.get("is_bot"):
            log.info("slack: no DM to %s (deactivated or a bot)", user)
            return False
        return True

    def _attestation(self, ref: WorkItemRef, node: str, data: Mapping[str, Any]) -> tuple[str, str]:
        # Who and when: from the event, else from the decision the gate recorded.
        state = self.services.store.load(ref)
        decision = (state.decisions.get(node) if state is not None else None) or {}
        who = str(data.get("attestedBy") or decision.get("attestedBy") or "someone")
        when = str(data.get("attestedAt") or decision.get("attestedAt") or decision.get("at")
                   or "")
        return who, when

    def _quiz_update(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        node = str(data.get("node") or "")
        url = self._item_url(ref)
        who, when = self._attestation(ref, node, data)
        for message in self._messages(ref, node):
            if message["data"].get("event") == event:
                continue  # already rewritten before a retry
            revision = message["revision"] + 1
            if event == "quiz-attested":
                text, blocks = quiz_attested_notice(
                    ref, node, attested_by=who, attested_at=when, item_url=url,
                    comment_url_list=message["data"].get("urls") or (), revision=revision)
            else:
                text, blocks = quiz_stale_notice(ref, node, item_url=url, revision=revision,
                                                 why=str(data.get("why") or ""))
            self._call("chat_update", channel=message["channel"],
                       ts=message["ts"], text=text, blocks=_dicts(blocks))
            key = {**message["data"], "event": event}
            self._save_message(ref, node, message["kind"], message["slack_user"],
                               message["channel"], message["ts"], revision, key)

    # -- Slack calls -------------------------------------------------------------------
    def _call(self, method: str, **kwargs: Any) -> Any:
        if "text" in kwargs and method in _MESSAGE_METHODS:
            kwargs["text"] = slack_text(kwargs["text"])  # issue 19 §6: Slack's escaping
        channel = str(kwargs.get("channel") or "")
        if channel and method in ("chat_postMessage", "chat_update"):
            self._pace(channel)
        try:
            return getattr(self.client, method)(**kwargs)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "") if exc.response is not None else ""
            status = exc.response.status_code if exc.response is not None else 0
            if status == 429 or status >= 500 or error in _TRANSIENT:
                raise
            raise _Refused(f"{method.replace('_', '.', 1)}: {error or status}") from None

    def _pace(self, channel: str) -> None:
        last = self._last_post.get(channel)
        if last is not None and self.pace_seconds > 0:
            wait = self.pace_seconds - (time.monotonic() - last)
            if wait > 0:
                time.sleep(wait)
        self._last_post[channel] = time.monotonic()

    # -- persistence -------------------------------------------------------------------
    def _thread_row(self, ref: WorkItemRef) -> dict[str, Any] | None:
        return load_thread(self.services.store, ref)

    def _messages(self, ref: WorkItemRef, node: str) -> list[dict[str, Any]]:
        return node_messages(self.services.store, ref, node)

    def _same_message(self, ref: WorkItemRef, node: str, kind: str, user: str,
                      key: Mapping[str, Any]) -> bool:
        for message in self._messages(ref, node):
            if message["kind"] == kind and message["slack_user"] == user:
                return bool(message["data"] == dict(key))
        return False

    def _save_message(self, ref: WorkItemRef, node: str, kind: str, user: str, channel: str,
                      ts: str, revision: int, data: Mapping[str, Any]) -> None:
        save_message(self.services.store, ref, node, kind, user, channel, ts, revision, data)


def _refusal(exc: SlackApiError) -> bool:
    """Whether Slack refused for good (not rate limiting, not an outage)."""
    response = exc.response
    if response is None:
        return False
    error = str(response.get("error") or "")
    return not (response.status_code == 429 or response.status_code >= 500
                or error in _TRANSIENT)


def _parse_iso(text: str) -> datetime:
    # ISO-8601 UTC as the engine and iso() write it; an unreadable one reads as "now"
    # (no reminder rather than a wrong one).
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(UTC)


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


def _describe(exc: Exception) -> str:
    # A short reason for the outbox row and the log; never the request (it has a token).
    if isinstance(exc, SlackApiError) and exc.response is not None:
        return f"slack {exc.response.status_code}: {exc.response.get('error')}"
    return f"{type(exc).__name__}: {str(exc)[:200]}"
