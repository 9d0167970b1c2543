"""The offline tracker: each work item's thread kept in the SQLite state database.

With it the whole flow runs from the CLI with no network (issue 2 §1): loopgate's own
comments and the comments a person adds with ``loopgate advance --comment`` live in the
``comments`` table, edits in ``comment_edits``, labels and pull requests in ``kv``.
Writes go through :meth:`SqliteStore.writing`, so a hook's comment joins the runtime's
transaction (and vanishes with it if the operation fails).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.ports import (
    Comment,
    CommentEdit,
    CommentEdits,
    IssueInfo,
    PullRequest,
    TrackerCapabilities,
    TrackerError,
)
from engine.refs import WorkItemRef
from engine.store.base import DatabaseStore
from engine.store.memory import utc_now_iso

__all__ = ["LocalTracker", "LOCAL_BOT_LOGIN"]

#: The author of comments loopgate posts on the local thread.
LOCAL_BOT_LOGIN = "loopgate"

_LABELS = "labels"
_PRS = "prs"


def _item_url(ref: WorkItemRef) -> str:
    return f"local://{ref.owner}/{ref.repo}#{ref.number}"


class LocalTracker:
    """A :class:`~engine.ports.Tracker` over the store's thread tables.

    Args:
        store: the store holding the thread (SQLite; its portable statements also run on
            PostgreSQL).
        bot_login: the author of comments posted through :meth:`add_comment`.
    """

    #: Nobody edits the offline thread: a quiz is attested by a typed reply (issue 14 §4).
    comments_editable = False
    #: ``item advance --comment`` posts a person's reply (:meth:`add_comment_as`).
    capabilities = TrackerCapabilities(post_as=True)

    def __init__(self, store: DatabaseStore, bot_login: str = LOCAL_BOT_LOGIN) -> None:
        self.store = store
        self.bot_login = bot_login

    # -- Tracker port ------------------------------------------------------------------
    def list_comments(self, ref: WorkItemRef) -> list[Comment]:
        """All comments on ``ref``, oldest first."""
        rows = self.store.db().conn.execute(
            "SELECT id, author, body, created_at, updated_at FROM comments "
            "WHERE item = ? ORDER BY id", (str(ref),)
        )
        return [self._comment(ref, row) for row in rows]

    def add_comment(self, ref: WorkItemRef, body: str) -> Comment:
        """Post ``body`` on ``ref`` as :attr:`bot_login`."""
        return self.add_comment_as(ref, self.bot_login, body)

    def add_label(self, ref: WorkItemRef, label: str) -> None:
        """Add ``label`` (kept once, in the order added)."""
        with self.store.writing():
            labels = self.labels(ref)
            if label not in labels:
                self.store.kv_set(_LABELS, str(ref), [*labels, label])

    def remove_label(self, ref: WorkItemRef, label: str) -> None:
        """Remove ``label`` if present; absent is not an error."""
        with self.store.writing():
            labels = self.labels(ref)
            if label in labels:
                self.store.kv_set(_LABELS, str(ref), [x for x in labels if x != label])

    def labels(self, ref: WorkItemRef) -> list[str]:
        """The item's labels, in the order they were added."""
        return list(self.store.kv_get(_LABELS, str(ref), []))

    def delivering_pull_requests(self, ref: WorkItemRef) -> list[PullRequest]:
        """Pull requests recorded with :meth:`add_pull_request` (none by default)."""
        return [
            PullRequest(int(p["number"]), str(p["url"]), str(p["headBranch"]),
                        str(p.get("state", "open")))
            for p in self.store.kv_get(_PRS, str(ref), [])
        ]

    def remember_comment(self, comment_id: int, node_id: str) -> None:
        """Nothing to keep: the local thread is the store."""
        return None

    def items_for_pull_request(self, owner: str, repo: str, number: int) -> list[int]:
        """Issue numbers whose recorded pull requests include ``number``."""
        found = []
        for key, prs in self.store.kv_items(_PRS).items():
            ref = WorkItemRef.parse(key)
            if (ref.owner, ref.repo) == (owner, repo) and any(
                    int(p["number"]) == number for p in prs):
                found.append(ref.number)
        return sorted(found)

    def team_membership(self, org: str, team: str, login: str) -> bool:
        """The offline thread knows no teams: every lookup fails (a team in a gate's
        approvers then refuses, fail closed; name people by login offline)."""
        raise TrackerError(f"team {org}/{team}: the offline tracker cannot look teams up")

    def publish_check(self, pull: WorkItemRef, check: object) -> dict[str, str]:
        """Offline there is no pull request to publish on: nothing is written."""
        return {"kind": "none"}

    def issue_info(self, ref: WorkItemRef) -> IssueInfo:
        """A local item has no title of its own: it is named by its reference."""
        return IssueInfo(ref, str(ref), _item_url(ref), "")

    def comment_edits(self, comment_ids: Sequence[int]) -> dict[int, CommentEdits]:
        """Who edited these comments (from the local edits table); unknown ids are absent."""
        out: dict[int, CommentEdits] = {}
        conn = self.store.db().conn
        for cid in comment_ids:
            row = conn.execute(
                "SELECT item, author, body, id FROM comments WHERE id = ?", (int(cid),)
            ).fetchone()
            if row is None:
                continue
            edits = tuple(
                CommentEdit(editor or None, editor_type or "", at)
                for editor, editor_type, at in conn.execute(
                    "SELECT editor, editor_type, edited_at FROM comment_edits "
                    "WHERE comment_id = ? ORDER BY edited_at, id", (int(cid),))
            )
            last = edits[-1] if edits else None
            ref = WorkItemRef.parse(row[0])
            out[int(cid)] = CommentEdits(
                comment_id=int(cid), body=row[2], url=self._url(ref, int(cid)), author=row[1],
                editor=last.editor if last else None,
                editor_type=last.editor_type if last else "",
                last_edited_at=last.edited_at if last else None, edits=edits,
            )
        return out

    # -- local verbs (CLI, tests) ------------------------------------------------------
    def add_comment_as(self, ref: WorkItemRef, author: str, body: str) -> Comment:
        """Post ``body`` on ``ref`` as ``author`` (``loopgate advance --comment``).

        Returns:
            The created comment; ids increase across the whole database.
        """
        now = utc_now_iso()
        with self.store.writing() as db:
            cursor = db.conn.execute(
                "INSERT INTO comments (item, author, body, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)", (str(ref), author, body, now, now)
            )
            cid = int(cursor.lastrowid or 0)
        return self._comment(ref, (cid, author, body, now, now))

    def edit_comment(
        self, comment_id: int, body: str, editor: str | None, editor_type: str = "User"
    ) -> Comment:
        """Replace a comment's body and record who edited it.

        Raises:
            KeyError: no comment has that id.
        """
        now = utc_now_iso()
        with self.store.writing() as db:
            row = db.conn.execute(
                "SELECT item, author, body, created_at FROM comments WHERE id = ?", (comment_id,)
            ).fetchone()
            if row is None:
                raise KeyError(f"no local comment has id {comment_id}")
            db.conn.execute("UPDATE comments SET body = ?, updated_at = ? WHERE id = ?",
                            (body, now, comment_id))
            db.conn.execute(
                "INSERT INTO comment_edits (comment_id, editor, editor_type, edited_at, "
                "previous_body) VALUES (?, ?, ?, ?, ?)",
                (comment_id, editor or "", editor_type, now, row[2]),
            )
        ref = WorkItemRef.parse(row[0])
        return self._comment(ref, (comment_id, row[1], body, row[3], now))

    def add_pull_request(
        self, ref: WorkItemRef, number: int, head_branch: str = "", state: str = "open"
    ) -> PullRequest:
        """Record a pull request delivering ``ref`` (kept in kv ``prs``)."""
        pr = PullRequest(number, f"local://{ref.owner}/{ref.repo}/pull/{number}",
                         head_branch or f"issue-{ref.number}", state)
        entry: dict[str, Any] = {"number": pr.number, "url": pr.url,
                                 "headBranch": pr.head_branch, "state": pr.state}
        with self.store.writing():
            current = self.store.kv_get(_PRS, str(ref), [])
            self.store.kv_set(_PRS, str(ref), [*current, entry])
        return pr

    # -- internals ---------------------------------------------------------------------
    @staticmethod
    def _url(ref: WorkItemRef, cid: int) -> str:
        return f"{_item_url(ref)}/comment-{cid}"

    def _comment(self, ref: WorkItemRef, row: tuple[Any, ...]) -> Comment:
        cid, author, body, created, updated = row
        return Comment(id=int(cid), author=author or "", body=body or "", created_at=created,
                       updated_at=updated, url=self._url(ref, int(cid)),
                       issue_number=ref.number)
