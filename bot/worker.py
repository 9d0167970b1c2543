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

Events handled: ``phase-selection-pending`` (post the card), ``phase-selection-done``
(rewrite it read-only), ``quiz-pending`` (DM the item's owners + a thread line),
``quiz-attested`` / ``quiz-stale`` (rewrite those), anything else (a thread line).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block

from bot.blocks.card import phase_selection_card, phase_selection_node_id, status_card
from bot.blocks.notices import (
    comment_urls,
    event_line,
    quiz_attested_notice,
    quiz_pending_notice,
    quiz_stale_notice,
)
from bot.identity import slack_users_for_login
from bot.notifier import (
    claim_outbox_row,
    ensure_slack_tables,
    iso,
    load_thread,
    save_thread,
    write_scope,
)
from engine.ports import IssueInfo, SystemClock
from engine.refs import WorkItemRef
from engine.settings import normalize_login

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
        services: Any,
        client: WebClient | None = None,
        pace_seconds: float | None = None,
        *,
        idle_seconds: float = 0.5,
        retry_base: float = 5.0,
        retry_max: float = 300.0,
        clock: Any = None,
    ) -> None:
        if client is None:
            from bot.app import build_web_client

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
        db = self.services.store.db()
        now = iso(self._now())
        rows = db.execute(
            "SELECT id, item, event, data, attempts, next_attempt_at FROM slack_outbox "
            "WHERE sent_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT 500"
        ).fetchall()
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
        return handled

    def _deliver(self, row_id: int, item: str, event: str, data: str, attempts: int) -> bool:
        try:
            self.handle(WorkItemRef.parse(item), event, json.loads(data or "{}"))
        except _Refused as exc:
            return self._failed(row_id, item, event, attempts, str(exc), permanent=True)
        except Exception as exc:  # noqa: BLE001 - any failure is retried from the outbox
            return self._failed(row_id, item, event, attempts, _describe(exc), permanent=False)
        self._mark(row_id, "sent_at = ?", (iso(self._now()),))
        return True

    def _failed(self, row_id: int, item: str, event: str, attempts: int, error: str, *,
                permanent: bool) -> bool:
        attempts += 1
        if permanent and attempts >= MAX_ATTEMPTS:
            log.error("slack: %s for %s set aside after %d refusals: %s", event, item,
                      attempts, error)
            self._mark(row_id, "failed_at = ?, attempts = ?, last_error = ?",
                       (iso(self._now()), attempts, error))
            return True
        delay = min(self.retry_max, self.retry_base * (2 ** (attempts - 1)))
        log.warning("slack: %s for %s failed (attempt %d), retry in %.0fs: %s", event, item,
                    attempts, delay, error)
        due = iso(self._now() + timedelta(seconds=delay))
        self._mark(row_id, "attempts = ?, next_attempt_at = ?, last_error = ?",
                   (attempts, due, error))
        return False

    def _claim(self, row_id: int, now: str) -> bool:
        until = iso(self._now() + timedelta(seconds=CLAIM_SECONDS))
        return claim_outbox_row(self.services.store, row_id, self._owner, until, now)

    def _mark(self, row_id: int, assignments: str, params: tuple[Any, ...]) -> None:
        with write_scope(self.services.store) as db:  # every mark gives the claim back
            db.execute(f"UPDATE slack_outbox SET {assignments}, claimed_by = '', "
                       "claimed_until = '' WHERE id = ?", (*params, row_id))

    def _now(self) -> Any:
        return self._clock.now()

    # -- events ------------------------------------------------------------------------
    def handle(self, ref: WorkItemRef, event: str, data: Mapping[str, Any]) -> None:
        """Render and send one event (raises on failure so the outbox retries it)."""
        if event == "phase-selection-pending":
            self._post_card(ref)
        elif event == "phase-selection-done":
            self._refresh_status(ref, force=False)  # unless Execute already rewrote it
        elif event == "quiz-pending":
            self._quiz_pending(ref, data)
        elif event in ("quiz-attested", "quiz-stale"):
            self._quiz_update(ref, event, data)
        else:
            self._thread_line(ref, event, data)
        if event != "phase-selection-pending":
            self._refresh_status(ref, force=False)

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
                                      keyword=self.services.settings.execute_keyword)
        text = f"Phase selection for {ref}: {info.title}"
        node = state.current_node if state is not None else ""
        self._put_parent(ref, thread, text, blocks, revision, "card", node, info.author)

    def _refresh_status(self, ref: WorkItemRef, *, force: bool) -> None:
        """Rewrite the parent message read-only once the selection is made; afterwards keep
        it live (rewritten whenever the item's current node changed). ``force`` posts a
        status card even while the selection waits, when the item has no card yet."""
        state, decision = self._decision(ref)
        thread = self._thread_row(ref)
        if state is None or not self.channel or (not decision and not force):
            return
        if not force and thread is not None and thread["kind"] == "status" \
                and thread["node"] == state.current_node:
            return
        if not decision and thread is not None and thread["kind"] == "card":
            return  # still waiting: the interactive card stays
        info = self._info(ref)
        revision = 0 if thread is None else thread["revision"] + 1
        blocks = status_card(self.services.graph, info, current_node=state.current_node,
                             status=state.status, decision=decision, revision=revision)
        text = f"{ref}: now at {state.current_node or '—'}"
        self._put_parent(ref, thread, text, blocks, revision, "status", state.current_node,
                         info.author)

    def _put_parent(self, ref: WorkItemRef, thread: dict[str, Any] | None, text: str,
                    blocks: list[Block], revision: int, kind: str, node: str,
                    author: str = "") -> None:
        if not self.channel:
            log.warning("slack.channel is not configured: no card for %s", ref)
            return
        if thread is None:
            reply = self._call("chat_postMessage", channel=self.channel,
                               text=text, blocks=_dicts(blocks), unfurl_links=False)
            channel, ts = str(reply.get("channel") or self.channel), str(reply["ts"])
        else:
            channel, ts = thread["channel"], thread["ts"]
            self._call("chat_update", channel=channel, ts=ts, text=text,
                       blocks=_dicts(blocks))
        save_thread(self.services.store, ref, channel=channel, ts=ts, revision=revision,
                    kind=kind, node=node, author=author)

    def _ensure_thread(self, ref: WorkItemRef) -> dict[str, Any] | None:
        thread = self._thread_row(ref)
        if thread is None and self.channel:
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
            reply = self._call("chat_postMessage", channel=thread["channel"],
                               thread_ts=thread["ts"], text=text, blocks=_dicts(blocks),
                               unfurl_links=False)
            self._save_message(ref, node, "thread", "", thread["channel"], str(reply["ts"]), 0,
                               key)

    def _reachable(self, user: str) -> bool:
        # users.info: a deactivated account or a bot gets no DM (it would fail or be lost).
        info = self._call("users_info", user=user).get("user") or {}
        if info.get("deleted") or info.get("is_bot"):
            log.info("slack: no quiz DM to %s (deactivated or a bot)", user)
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
                text, blocks = quiz_stale_notice(ref, node, item_url=url, revision=revision)
            self._call("chat_update", channel=message["channel"],
                       ts=message["ts"], text=text, blocks=_dicts(blocks))
            key = {**message["data"], "event": event}
            self._save_message(ref, node, message["kind"], message["slack_user"],
                               message["channel"], message["ts"], revision, key)

    # -- Slack calls -------------------------------------------------------------------
    def _call(self, method: str, **kwargs: Any) -> Any:
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
        rows = self.services.store.db().execute(
            "SELECT kind, slack_user, channel, ts, revision, data FROM slack_messages "
            "WHERE item = ? AND node = ? ORDER BY kind, slack_user", (str(ref), node)
        ).fetchall()
        keys = ("kind", "slack_user", "channel", "ts", "revision", "data")
        out = [dict(zip(keys, r, strict=True)) for r in rows]
        for message in out:
            message["data"] = json.loads(message["data"] or "{}")
        return out

    def _same_message(self, ref: WorkItemRef, node: str, kind: str, user: str,
                      key: Mapping[str, Any]) -> bool:
        for message in self._messages(ref, node):
            if message["kind"] == kind and message["slack_user"] == user:
                return message["data"] == dict(key)
        return False

    def _save_message(self, ref: WorkItemRef, node: str, kind: str, user: str, channel: str,
                      ts: str, revision: int, data: Mapping[str, Any]) -> None:
        with write_scope(self.services.store) as db:
            db.execute(
                "INSERT INTO slack_messages (item, node, kind, slack_user, channel, ts, "
                "revision, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT "
                "(item, node, kind, slack_user) DO UPDATE SET channel = excluded.channel, "
                "ts = excluded.ts, revision = excluded.revision, data = excluded.data",
                (str(ref), node, kind, user, channel, ts, revision,
                 json.dumps(dict(data), sort_keys=True)),
            )


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


def _describe(exc: Exception) -> str:
    # A short reason for the outbox row and the log; never the request (it has a token).
    if isinstance(exc, SlackApiError) and exc.response is not None:
        return f"slack {exc.response.status_code}: {exc.response.get('error')}"
    return f"{type(exc).__name__}: {str(exc)[:200]}"
