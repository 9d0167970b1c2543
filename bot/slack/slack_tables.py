"""What the Slack listeners (and readiness) read and write in the bot's tables (issue 20
§2: no SQL in a listener): a card redraw still owed in the outbox, an approval message's
revision and state, the recorded author of each item's thread, the outbox's backlog,
who opened their Home tab and what it lists, the Slack user ↔ GitHub login links and their
one-time codes (``bot.slack.slack_identity`` decides; this module stores); for the
notifier and the Slack worker, the outbox (:class:`SlackOutbox`: a notice queued inside
the engine's transaction, a row claimed by one worker; the rows it sends and marks), each
item's thread parent (:func:`load_thread`, :func:`save_thread`) and the messages it keeps
per node.

The statements are the portable SQL both backends run (``?`` placeholders, issue 15 §1),
through the store's session (:class:`~engine.store.base.SqlTables`); writes go through
:func:`bot.slack.slack_schema.write_scope`. The tables are the ``loopgate-slack``
migrations' (:data:`bot.slack.slack_schema.SLACK_MIGRATIONS`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bot.slack.slack_schema import ensure_slack_tables, iso, write_scope
from engine.refs import WorkItemRef

if TYPE_CHECKING:
    from engine.store.base import DatabaseStore

__all__ = ["SlackOutbox", "load_thread", "save_thread", "card_redraw_owed",
           "approval_message_revision", "mark_approval_message_done",
           "thread_authors", "outbox_backlog", "save_home", "homes", "issue_link_code",
           "redeem_link_code", "linked_login", "linked_users", "remove_link",
           "pending_outbox_rows", "mark_outbox_sent", "mark_outbox_failed",
           "mark_outbox_retry", "open_approval_items", "reminder_record", "node_messages",
           "save_message"]


_CLAIM_WHERE = ("sent_at IS NULL AND failed_at IS NULL "
                "AND (claimed_until < ? OR claimed_by = ?)")


class SlackOutbox:
    """The ``slack_outbox`` table: notices the engine queues (:class:`bot.slack.notifier.
    OutboxNotifier`) and the Slack worker claims, one worker per row (issue 4 §1, 15 §3).

    Args:
        store: the store holding the Slack tables (SQLite or PostgreSQL).
    """

    def __init__(self, store: DatabaseStore) -> None:
        self.store = store

    def queue(self, ref: WorkItemRef, event: str, data: str, at: str) -> None:
        """Add a notice row: ``event`` about ``ref`` with ``data`` (a JSON text), created
        and due at ``at`` (ISO-8601 UTC, :func:`~bot.slack.slack_schema.iso`).

        Written through ``store.db()``, the thread's session, which inside the engine's
        write transaction is the transaction's own: the row commits, or rolls back, with
        the transition that produced it (no commit of its own).

        Raises:
            Exception: whatever the database raises (the notifier logs it).
        """
        self.store.db().execute(
            "INSERT INTO slack_outbox (item, event, data, created_at, next_attempt_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (str(ref), str(event), data, at, at),
        )

    def claim(self, row_id: int, owner: str, until: str, now: str) -> bool:
        """Take row ``row_id`` for ``owner`` until ``until`` (ISO-8601 UTC; ``now`` is the
        present, so an expired claim of another worker is taken over).

        Returns:
            False when the row is sent, set aside, or another worker holds a live claim.
            On PostgreSQL the row is taken ``FOR UPDATE SKIP LOCKED`` (issue 15 §3), so a
            worker never waits on another replica's claim; on SQLite the write lock
            serializes claims.
        """
        with write_scope(self.store) as db:
            if self.store.capabilities.backend == "postgresql":
                sql = ("UPDATE slack_outbox SET claimed_by = ?, claimed_until = ? WHERE id = "
                       f"(SELECT id FROM slack_outbox WHERE id = ? AND {_CLAIM_WHERE} "
                       "FOR UPDATE SKIP LOCKED)")
            else:
                sql = ("UPDATE slack_outbox SET claimed_by = ?, claimed_until = ? "
                       f"WHERE id = ? AND {_CLAIM_WHERE}")
            return bool(db.execute(sql, (owner, until, row_id, now, owner)).rowcount == 1)


_THREAD_KEYS = ("channel", "ts", "revision", "kind", "node", "author")


def load_thread(store: DatabaseStore, ref: WorkItemRef) -> dict[str, Any] | None:
    """The item's Slack thread parent ``{channel, ts, revision, kind, node, author}``, or
    None when no card was posted. ``kind`` is ``card`` (interactive, phase selection
    waits) or ``status`` (read-only live status card)."""
    ensure_slack_tables(store)
    row = store.db().execute(
        f"SELECT {', '.join(_THREAD_KEYS)} FROM slack_threads WHERE item = ?", (str(ref),)
    ).fetchone()
    return None if row is None else dict(zip(_THREAD_KEYS, row, strict=True))


def save_thread(
    store: DatabaseStore,
    ref: WorkItemRef,
    *,
    channel: str,
    ts: str,
    revision: int,
    kind: str,
    node: str = "",
    author: str = "",
) -> None:
    """Record (or move) the item's thread parent message.

    Args:
        store: the store holding the Slack tables (SQLite or PostgreSQL).
        ref: the work item.
        channel: the channel id the parent message is in.
        ts: its message timestamp (Slack's message id).
        revision: the message revision last rendered (block ids carry it).
        kind: ``card`` or ``status``.
        node: the item's current node when last rendered.
        author: the issue author's login, as the tracker reported it ("" keeps the old).
    """
    ensure_slack_tables(store)
    with write_scope(store) as db:
        db.execute(
            "INSERT INTO slack_threads (item, channel, ts, revision, kind, node, author, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item) DO UPDATE SET "
            "channel = excluded.channel, ts = excluded.ts, revision = excluded.revision, "
            "kind = excluded.kind, node = excluded.node, updated_at = excluded.updated_at, "
            "author = CASE WHEN excluded.author = '' THEN slack_threads.author "
            "ELSE excluded.author END",
            (str(ref), channel, ts, revision, kind, node or "", author or "", iso()),
        )


def card_redraw_owed(store: DatabaseStore, ref: WorkItemRef) -> bool:
    """True when a redraw of ``ref``'s card for a checklist edited on GitHub
    (``phase-selection-changed``) is not sent yet: queued, or refused by Slack for good."""
    row = store.db().execute(
        "SELECT 1 FROM slack_outbox WHERE item = ? AND event = 'phase-selection-changed' "
        "AND sent_at IS NULL LIMIT 1", (str(ref),)).fetchone()
    return row is not None


def approval_message_revision(store: DatabaseStore, ref: WorkItemRef, node: str,
                              channel: str, ts: str) -> int | None:
    """The revision of the approval message of ``ref``'s gate ``node`` at Slack's
    ``channel``/``ts``, or None when no such message is recorded."""
    row = store.db().execute(
        "SELECT revision FROM slack_messages WHERE item = ? AND node = ? AND kind = ? "
        "AND channel = ? AND ts = ?", (str(ref), node, "approval", channel, ts)
    ).fetchone()
    return int(row[0]) if row else None


def mark_approval_message_done(store: DatabaseStore, ref: WorkItemRef, node: str,
                               channel: str, ts: str, *, revision: int, gate: str) -> None:
    """Record the approval message at ``channel``/``ts`` rewritten read-only: its new
    ``revision`` and ``{"gate": gate, "state": "done"}`` (``gate``: the GateRef value)."""
    with write_scope(store) as db:
        db.execute(
            "UPDATE slack_messages SET revision = ?, data = ? WHERE item = ? AND node = ? "
            "AND kind = 'approval' AND channel = ? AND ts = ?",
            (revision, json.dumps({"gate": gate, "state": "done"}), str(ref), node, channel,
             ts))


def thread_authors(store: DatabaseStore) -> dict[str, str]:
    """``{item: author}`` of every recorded thread that names its item's author (as
    recorded: callers normalise the login)."""
    ensure_slack_tables(store)
    rows = store.db().execute("SELECT item, author FROM slack_threads").fetchall()
    return {str(item): str(author) for item, author in rows if author}


def outbox_backlog(store: DatabaseStore) -> tuple[int, str]:
    """``(count, oldest created_at)`` of the outbox rows neither sent nor failed for good;
    ``(0, "")`` on SQLite before the bot made its tables (its worker makes them when it
    starts; PostgreSQL migrates them when the store opens, issue 15)."""
    db = store.db()
    if store.capabilities.backend == "sqlite" and db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'slack_outbox'"
    ).fetchone() is None:
        return 0, ""
    count, oldest = db.execute(
        "SELECT COUNT(*), MIN(created_at) FROM slack_outbox WHERE sent_at IS NULL AND "
        "failed_at IS NULL").fetchone()
    return int(count or 0), str(oldest or "")


def save_home(store: DatabaseStore, user: str, login: str, refs: Sequence[str]) -> None:
    """Record that Slack ``user`` (GitHub ``login``) was shown a Home tab listing ``refs``
    (one row per user, kind ``home``, replaced each time)."""
    ensure_slack_tables(store)
    with write_scope(store) as db:
        db.execute(
            "INSERT INTO slack_messages (item, node, kind, slack_user, channel, ts, revision, "
            "data) VALUES ('', '', 'home', ?, '', '', 0, ?) ON CONFLICT (item, node, kind, "
            "slack_user) DO UPDATE SET data = excluded.data",
            (user, json.dumps({"login": login, "items": list(refs)})))


def homes(store: DatabaseStore) -> list[tuple[str, dict[str, Any]]]:
    """``(Slack user, {"login", "items"})`` of every Home tab recorded by :func:`save_home`."""
    rows = store.db().execute(
        "SELECT slack_user, data FROM slack_messages WHERE kind = 'home'").fetchall()
    return [(str(user), json.loads(data or "{}")) for user, data in rows]


def issue_link_code(store: DatabaseStore, code: str, slack_user: str, login: str, *,
                    created_at: str, expires_at: str) -> None:
    """Store the one-time ``code`` linking ``slack_user`` to ``login``, withdrawing the
    user's earlier unused codes (one write transaction)."""
    ensure_slack_tables(store)
    with write_scope(store) as db:
        db.execute("DELETE FROM slack_link_codes WHERE slack_user = ? AND used_at IS NULL",
                   (slack_user,))
        db.execute(
            "INSERT INTO slack_link_codes (code, slack_user, github_login, created_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?)",
            (code, slack_user, login, created_at, expires_at),
        )


#: A code's row: ``(slack_user, github_login, expires_at, used_at)``, or None when unknown.
CodeRow = tuple[Any, ...] | None


def redeem_link_code(store: DatabaseStore, code: str, *, now: str, via: str,
                     refuse: Callable[[CodeRow], str]) -> tuple[str, str] | str:
    """In one write transaction: read ``code``'s row, ask ``refuse(row)`` (a reason, or
    "" to accept), then mark the code used at ``now`` and link its Slack user to its
    login (``via`` says how, e.g. ``comment 7 on acme/widgets#3``).

    Returns:
        ``(slack_user, login)`` when linked, else the refusal.
    """
    ensure_slack_tables(store)
    with write_scope(store) as db:
        row = db.execute(
            "SELECT slack_user, github_login, expires_at, used_at FROM slack_link_codes "
            "WHERE code = ?", (code,)
        ).fetchone()
        refusal = refuse(row)
        if refusal:
            return refusal
        slack_user, login = str(row[0]), str(row[1])
        db.execute("UPDATE slack_link_codes SET used_at = ? WHERE code = ?", (now, code))
        db.execute(
            "INSERT INTO slack_links (slack_user, github_login, linked_at, via) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (slack_user) DO UPDATE SET "
            "github_login = excluded.github_login, linked_at = excluded.linked_at, "
            "via = excluded.via",
            (slack_user, login, now, via),
        )
    return slack_user, login


def linked_login(store: DatabaseStore, slack_user: str) -> str | None:
    """The GitHub login ``slack_user`` is linked to, or None."""
    ensure_slack_tables(store)
    row = store.db().execute(
        "SELECT github_login FROM slack_links WHERE slack_user = ?", (slack_user,)
    ).fetchone()
    return str(row[0]) if row else None


def linked_users(store: DatabaseStore, login: str) -> list[str]:
    """The Slack users linked to GitHub ``login`` (as stored: normalised), unsorted."""
    ensure_slack_tables(store)
    rows = store.db().execute(
        "SELECT slack_user FROM slack_links WHERE github_login = ?", (login,)
    ).fetchall()
    return [str(r[0]) for r in rows]


def remove_link(store: DatabaseStore, slack_user: str) -> bool:
    """Remove ``slack_user``'s link and unused codes; True when a link was removed."""
    ensure_slack_tables(store)
    with write_scope(store) as db:
        db.execute("DELETE FROM slack_link_codes WHERE slack_user = ? AND used_at IS NULL",
                   (slack_user,))
        cursor = db.execute("DELETE FROM slack_links WHERE slack_user = ?", (slack_user,))
        return bool(cursor.rowcount > 0)


def pending_outbox_rows(store: DatabaseStore, limit: int = 500) -> list[tuple[Any, ...]]:
    """``(id, item, event, data, attempts, next_attempt_at)`` of the outbox rows neither
    sent nor set aside, oldest first, at most ``limit``."""
    return list(store.db().execute(
        "SELECT id, item, event, data, attempts, next_attempt_at FROM slack_outbox "
        f"WHERE sent_at IS NULL AND failed_at IS NULL ORDER BY id LIMIT {int(limit)}"
    ).fetchall())


def _mark(store: DatabaseStore, row_id: int, assignments: str,
          params: tuple[Any, ...]) -> None:
    with write_scope(store) as db:  # every mark gives the claim back
        db.execute(f"UPDATE slack_outbox SET {assignments}, claimed_by = '', "
                   "claimed_until = '' WHERE id = ?", (*params, row_id))


def mark_outbox_sent(store: DatabaseStore, row_id: int, at: str) -> None:
    """Outbox row ``row_id`` was sent at ``at`` (its claim is given back)."""
    _mark(store, row_id, "sent_at = ?", (at,))


def mark_outbox_failed(store: DatabaseStore, row_id: int, at: str, attempts: int,
                       error: str) -> None:
    """Outbox row ``row_id`` is set aside for good at ``at`` after ``attempts``."""
    _mark(store, row_id, "failed_at = ?, attempts = ?, last_error = ?", (at, attempts, error))


def mark_outbox_retry(store: DatabaseStore, row_id: int, attempts: int, due: str,
                      error: str) -> None:
    """Outbox row ``row_id`` failed ``attempts`` times; it is due again at ``due``."""
    _mark(store, row_id, "attempts = ?, next_attempt_at = ?, last_error = ?",
          (attempts, due, error))


def open_approval_items(store: DatabaseStore) -> list[str]:
    """The items with an approval message still open, sorted."""
    rows = store.db().execute(
        "SELECT DISTINCT item FROM slack_messages WHERE kind = 'approval' AND "
        "data LIKE '%\"state\": \"open\"%' ORDER BY item").fetchall()
    return [str(r[0]) for r in rows]


def reminder_record(store: DatabaseStore, ref: WorkItemRef, node: str,
                    user: str) -> dict[str, Any] | None:
    """The data of the last reminder about ``ref``'s gate ``node`` to ``user`` ("" for
    the thread line), or None when none was sent."""
    row = store.db().execute(
        "SELECT data FROM slack_messages WHERE item = ? AND node = ? AND kind = "
        "'reminder' AND slack_user = ?", (str(ref), node, user)).fetchone()
    if row is None:
        return None
    found: dict[str, Any] = json.loads(row[0] or "{}")
    return found


def node_messages(store: DatabaseStore, ref: WorkItemRef, node: str) -> list[dict[str, Any]]:
    """Every message kept for ``ref``'s ``node`` as ``{kind, slack_user, channel, ts,
    revision, data}`` (``data`` parsed), by kind and user."""
    rows = store.db().execute(
        "SELECT kind, slack_user, channel, ts, revision, data FROM slack_messages "
        "WHERE item = ? AND node = ? ORDER BY kind, slack_user", (str(ref), node)
    ).fetchall()
    keys = ("kind", "slack_user", "channel", "ts", "revision", "data")
    out = [dict(zip(keys, r, strict=True)) for r in rows]
    for message in out:
        message["data"] = json.loads(message["data"] or "{}")
    return out


def save_message(store: DatabaseStore, ref: WorkItemRef, node: str, kind: str, user: str,
                 channel: str, ts: str, revision: int, data: Mapping[str, Any]) -> None:
    """Keep (or replace) the ``kind`` message of ``ref``'s ``node`` for ``user``."""
    with write_scope(store) as db:
        db.execute(
            "INSERT INTO slack_messages (item, node, kind, slack_user, channel, ts, "
            "revision, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT "
            "(item, node, kind, slack_user) DO UPDATE SET channel = excluded.channel, "
            "ts = excluded.ts, revision = excluded.revision, data = excluded.data",
            (str(ref), node, kind, user, channel, ts, revision,
             json.dumps(dict(data), sort_keys=True)),
        )
