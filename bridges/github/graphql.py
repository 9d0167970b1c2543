"""GraphQL access to GitHub through gql: who edited a comment, and delivering pull requests.

The queries live in ``bridges/github/queries/*.graphql`` (package data); a test validates
each against GitHub's public schema. :class:`GraphQLClient` sends them with gql's
``RequestsHTTPTransport``.

``comment_edits`` (issue 3 §1, explainer design C4/C5) asks ``nodes(ids: [...])`` with at
most :data:`MAX_IDS` ids per query, so K comments cost ⌈K/100⌉ queries. The edit history
is read as data and never trusted for its order: :func:`parse_comment_edits` sorts it by
``editedAt``, drops the creation entry (``includesCreatedEdit``) and cross-checks the
newest entry with the comment's own ``editor``/``lastEditedAt`` — the latest edit counts,
and a disagreement yields an *unknown* latest editor, so the gate waits (fail closed).

Ids and actors (issue 9 §0/§1): a comment is keyed by its node id and read back by
``fullDatabaseId`` (a BigInt sent as a string); the 32-bit ``databaseId`` is never asked
for a comment, because today's comment ids do not fit in it and selecting it is an error.
Every actor comes with ``__typename`` and ``databaseId`` and is read into an
:class:`~engine.identity.Actor`, so an App's bot (``loopgate`` here, ``loopgate[bot]`` in
REST) is matched by kind and id, never by login spelling.

Rate limits: GraphQL answers a limit with HTTP 200 and ``errors[].type == "RATE_LIMITED"``
(or HTTP 403). Either raises :class:`~bridges.github.errors.RateLimited` and closes the
GraphQL :class:`~bridges.github.client.RateGuard` until the reset, so no query is sent
before then; the tracker turns it into ``TrackerError`` and the quiz gate waits.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

import requests
from gql import Client, GraphQLRequest
from gql.transport.exceptions import TransportError, TransportQueryError, TransportServerError
from gql.transport.requests import RequestsHTTPTransport

from bridges import telemetry
from bridges.github.app import RequestsAuth, StaticToken, TokenSource, repository_scope
from bridges.github.client import DEFAULT_MAX_WAIT, GuardFactory, RateGuard, rate_limit_reset
from bridges.github.errors import CredentialsError, GraphQLQueryError
from engine.identity import Actor, parse_id
from engine.ports import CommentEdit, CommentEdits, PullRequest
from engine.settings import normalize_login

__all__ = [
    "MAX_IDS",
    "EDITS_WINDOW",
    "GraphQLClient",
    "query_text",
    "query_names",
    "parse_comment_edits",
    "chunks",
]

logger = logging.getLogger(__name__)

#: GitHub's limit of ids per ``nodes(ids:)`` call.
MAX_IDS = 100
#: How many history entries are asked for per comment (``userContentEdits(last:)``), the
#: most one connection gives. The order is not trusted (platform-facts A3: newest first,
#: so ``last`` reads the oldest), the comment's own editor/lastEditedAt covers the newest,
#: and a longer history is marked incomplete (issue 19 §1: an editor may be missing, so
#: the authorship rule does not count it). 100 comments x 100 entries stays far below
#: GitHub's 500,000 nodes a query (A10).
EDITS_WINDOW = 100


def query_names() -> list[str]:
    """Names (without ``.graphql``) of every query file shipped with the bridge, sorted."""
    folder = resources.files("bridges.github").joinpath("queries")
    return sorted(p.name[: -len(".graphql")] for p in folder.iterdir()
                  if p.name.endswith(".graphql"))


@cache
def query_text(name: str) -> str:
    """The text of ``queries/<name>.graphql``.

    Raises:
        FileNotFoundError: no such query file.
    """
    return resources.files("bridges.github").joinpath("queries", f"{name}.graphql").read_text(
        "utf-8")


@cache
def _parsed(name: str) -> GraphQLRequest:
    # Parse each query file once per process.
    return GraphQLRequest(query_text(name))


def chunks(items: Sequence[str], size: int = MAX_IDS) -> Iterator[list[str]]:
    """``items`` in consecutive lists of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start:start + size])


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def _edit(entry: Mapping[str, Any]) -> CommentEdit:
    actor = Actor.from_graphql(entry.get("editor"))
    return CommentEdit(actor.login or None, actor.kind, str(entry["editedAt"]), actor.id)


def _complete(node: Mapping[str, Any]) -> bool:
    # Every history entry GitHub holds was returned (totalCount vs the nodes read).
    conn = node.get("userContentEdits") or {}
    total = conn.get("totalCount")
    return not isinstance(total, int) or total <= len(conn.get("nodes") or [])


def _history(node: Mapping[str, Any], author: Actor, editor: Actor) -> list[CommentEdit]:
    conn = node.get("userContentEdits") or {}
    raw = [e for e in (conn.get("nodes") or [])
           if isinstance(e, Mapping) and _when(e.get("editedAt"))]
    entries = [_edit(e) for e in raw]

    def order(edit: CommentEdit) -> tuple[datetime, int]:
        # editedAt has one-second resolution: within one second the author's entry (the
        # creation) goes first and the entry of the comment's own ``editor`` goes last.
        # Compared as actors (kind and id): a User named like the App's bot is not its author.
        who = edit.actor
        rank = 0 if who.same_as(author) else 2 if who.same_as(editor) else 1
        return _when(edit.edited_at) or datetime.min.replace(tzinfo=UTC), rank

    edits = sorted(entries, key=order)
    total = conn.get("totalCount")
    complete = not isinstance(total, int) or total <= len(raw)
    # The creation entry is the oldest one, but only when we hold the whole list; with a
    # truncated window the oldest entry we hold is a real edit.
    if node.get("includesCreatedEdit") and complete and edits:
        edits = edits[1:]
    return edits


def _cross_check(edits: list[CommentEdit], editor: Actor,
                 last_edited: str | None) -> list[CommentEdit]:
    latest = edits[-1] if edits else None
    last_at = _when(last_edited)
    if last_at is None:
        if latest is not None:  # history without an edit time: inconsistent, fail closed
            edits.append(CommentEdit(None, "", latest.edited_at))
        return edits
    latest_at = _when(latest.edited_at) if latest else None
    if latest is None or (latest_at is not None and latest_at < last_at):
        # The history lags behind: the comment's editor made the newest edit.
        edits.append(CommentEdit(editor.login or None, editor.kind, str(last_edited),
                                 editor.id))
    elif normalize_login(latest.editor) != normalize_login(editor.login):
        # Same moment, different people: nobody can be named, so the gate must wait.
        edits.append(CommentEdit(None, "", max(str(last_edited), latest.edited_at)))
    return edits


def parse_comment_edits(node: Mapping[str, Any]) -> CommentEdits | None:
    """Turn one ``IssueComment`` node of the ``CommentEdits`` query into
    :class:`~engine.ports.CommentEdits`.

    Args:
        node: the node as returned (``None`` or another ``__typename`` gives None).

    Returns:
        The comment with real edits sorted oldest first (creation entry dropped) and the
        newest entry agreeing with ``editor``/``lastEditedAt``; None for a non-comment.
    """
    if not isinstance(node, Mapping) or node.get("__typename") != "IssueComment":
        return None
    comment_id = parse_id(node.get("fullDatabaseId"))
    if comment_id is None:
        return None
    author = Actor.from_graphql(node.get("author"))
    editor = Actor.from_graphql(node.get("editor"))
    edits = _cross_check(_history(node, author, editor), editor,
                         node.get("lastEditedAt"))
    return CommentEdits(
        comment_id=comment_id,
        body=str(node.get("body") or ""),
        url=str(node.get("url") or ""),
        author=author.login,
        editor=editor.login or None,
        editor_type=editor.kind,
        last_edited_at=node.get("lastEditedAt"),
        edits=tuple(edits),
        author_type=author.kind,
        author_id=author.id,
        editor_id=editor.id,
        complete=_complete(node),
    )


def _repository(variables: Mapping[str, Any]) -> str:
    # Queries about one repository carry it as ``owner``/``name``.
    owner, name = variables.get("owner"), variables.get("name")
    return f"{owner}/{name}" if isinstance(owner, str) and isinstance(name, str) else ""


def _error_types(errors: Any) -> set[str]:
    return {str(e.get("type") or "") for e in (errors or []) if isinstance(e, Mapping)}


class GraphQLClient:
    """gql client for GitHub's GraphQL API.

    Each request asks ``auth`` for its token (``Authorization: bearer``; never logged), so
    a GitHub App's installation token is refreshed before it expires, and a query naming a
    repository (``owner``/``name`` variables) uses that repository's installation. A ``401``
    drops the refused token and the query is sent once more with a fresh one; a second
    ``401`` raises :class:`~bridges.github.errors.CredentialsError` (the gate waits).

    Args:
        url: the endpoint (``github.graphqlUrl``).
        token: the token (token mode); ignored when ``auth`` is given.
        auth: where tokens come from (:class:`~bridges.github.app.AppInstallations` for a
            GitHub App); default: ``token`` for every request.
        timeout: seconds per request.
        max_wait: longest wait imposed by one rate limit (seconds).
        clock: current UTC time (tests).
        guards: makes the ``graphql`` guard (:data:`bridges.github.client.GuardFactory`).

    Attributes:
        queries_sent: how many queries were sent (benchmarks, tests).
    """

    def __init__(self, url: str, token: str = "", *, auth: TokenSource | None = None,
                 timeout: int = 15, max_wait: float = DEFAULT_MAX_WAIT,
                 clock: Callable[[], datetime] | None = None,
                 guards: GuardFactory = RateGuard) -> None:
        self.auth: TokenSource = auth or StaticToken(url, token)
        self._auth = RequestsAuth(self.auth)
        self._transport = RequestsHTTPTransport(url=url, auth=self._auth, timeout=timeout,
                                                retries=0)
        self._client = Client(transport=self._transport, fetch_schema_from_transport=False)
        self.guard = guards("graphql", max_wait, clock)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()  # a sync gql Client runs one query at a time
        self.queries_sent = 0

    def execute(self, name: str, variables: Mapping[str, Any]) -> dict[str, Any]:
        """Run ``queries/<name>.graphql`` with ``variables``.

        Returns:
            The ``data`` mapping. Errors of type ``NOT_FOUND`` alone (an unknown id in
            ``nodes``) leave the other results usable and are not raised.

        Raises:
            RateLimited: limited now (200 + RATE_LIMITED, or 403/429) or still limited.
            GraphQLQueryError: any other failure.
        """
        self.guard.check()
        request = GraphQLRequest(_parsed(name), variable_values=dict(variables))
        repo = _repository(variables)
        endpoint = f"graphql_{name}"
        with self._lock, repository_scope(repo):
            try:
                data = self._send(request, repo)
            except TransportQueryError as exc:
                self._observe(endpoint, 200)
                return self._query_error(name, exc)
            except TransportServerError as exc:
                self._observe(endpoint, exc.code or 0)
                raise self._server_error(name, exc) from None
            except (TransportError, requests.RequestException) as exc:
                telemetry.github_request(endpoint, 0)
                raise GraphQLQueryError(f"{name}: GitHub GraphQL unreachable "
                                        f"({type(exc).__name__})") from None
            self._observe(endpoint, 200)
            return data

    def _observe(self, endpoint: str, status: int) -> None:
        """Telemetry of one answered query: its status and the ``graphql`` rate limit."""
        telemetry.github_request(endpoint, status)
        telemetry.rate_limit("graphql", self._headers())

    def _send(self, request: GraphQLRequest, repo: str) -> dict[str, Any]:
        self.queries_sent += 1
        try:
            return dict(self._client.execute(request) or {})
        except TransportServerError as exc:
            if exc.code != 401 or not self.auth.refresh(repo, self._auth.last):
                raise
        self.queries_sent += 1  # once more, with a fresh token
        return dict(self._client.execute(request) or {})

    def _headers(self) -> dict[str, str]:
        return {str(k).lower(): str(v) for k, v in (self._transport.response_headers or {}).items()}

    def _query_error(self, name: str, exc: TransportQueryError) -> dict[str, Any]:
        types = _error_types(exc.errors)
        if "RATE_LIMITED" in types:
            reset = rate_limit_reset(403, self._headers(), "rate limit", now=self._clock())
            raise self.guard.close(reset or self._clock()) from None
        if types == {"NOT_FOUND"} and exc.data is not None:
            return dict(exc.data)
        first = (exc.errors or [{}])[0]
        message = first.get("message", "") if isinstance(first, Mapping) else str(first)
        raise GraphQLQueryError(f"{name}: GraphQL error: {message}") from None

    def _server_error(self, name: str, exc: TransportServerError) -> Exception:
        if exc.code == 401:
            logger.warning("github credentials refused (%s): GraphQL answered 401; the query "
                           "fails and is tried again later", name)
            return CredentialsError(401, f"{name}: GitHub GraphQL refused loopgate's "
                                    "credentials (401)")
        if exc.code in (403, 429):
            reset = rate_limit_reset(exc.code, self._headers(), "rate limit", now=self._clock())
            return self.guard.close(reset or self._clock())
        return GraphQLQueryError(f"{name}: GitHub GraphQL answered {exc.code}")

    # -- queries -------------------------------------------------------------------------
    def comment_edits(self, node_ids: Sequence[str]) -> dict[str, CommentEdits]:
        """Who edited these comments, as GitHub holds them now.

        Args:
            node_ids: comment node ids (duplicates are asked once).

        Returns:
            node id -> :class:`CommentEdits`; unknown ids are absent.

        Raises:
            RateLimited, GraphQLQueryError: one chunk failed (nothing partial is returned,
            so a caller never evaluates half a batch).
        """
        unique = list(dict.fromkeys(i for i in node_ids if i))
        found: dict[str, CommentEdits] = {}
        # A GitHub App installed in several organisations: each installation's token sees
        # its own repositories, so ids one could not resolve are asked of the next.
        for scope in self.auth.scopes():
            missing = [i for i in unique if i not in found]
            if not missing:
                break
            with repository_scope(scope):
                found.update(self._comment_edits(missing))
        return found

    def _comment_edits(self, unique: list[str]) -> dict[str, CommentEdits]:
        found: dict[str, CommentEdits] = {}
        for chunk in chunks(unique):
            data = self.execute("comment_edits", {"ids": chunk, "edits": EDITS_WINDOW})
            for node_id, node in zip(chunk, data.get("nodes") or [], strict=False):
                parsed = parse_comment_edits(node) if node else None
                if parsed is not None:
                    found[node_id] = parsed
        return found

    def closing_pull_requests(self, owner: str, repo: str, number: int) -> list[PullRequest]:
        """Pull requests (open or closed) whose closing references name issue ``number``."""
        data = self.execute("delivering_pull_requests",
                            {"owner": owner, "name": repo, "number": number})
        issue = ((data.get("repository") or {}).get("issue")) or {}
        nodes = ((issue.get("closedByPullRequestsReferences") or {}).get("nodes")) or []
        return [PullRequest(int(n["number"]), str(n.get("url") or ""),
                            str(n.get("headRefName") or ""), str(n.get("state") or "").lower(),
                            str((n.get("author") or {}).get("login") or ""),
                            str(n.get("headRefOid") or ""),
                            str((n.get("author") or {}).get("__typename") or ""))
                for n in nodes if isinstance(n, Mapping) and isinstance(n.get("number"), int)]

    def merge_queue_pulls(self, owner: str, repo: str, branch: str, head_sha: str
                          ) -> list[int]:
        """The pull requests of the merge queue group whose head commit is ``head_sha``:
        the entry built on it and every entry ahead of it (a group holds the pull requests
        already queued ahead, platform-facts F1), by position.

        Returns:
            Pull request numbers, front of the queue first; [] when no entry of ``branch``'s
            queue has that head (or the queue lists more than 100 entries).
        """
        data = self.execute("merge_queue_entries",
                            {"owner": owner, "name": repo, "branch": branch})
        queue = (data.get("repository") or {}).get("mergeQueue") or {}
        entries = queue.get("entries") or {}
        nodes = [n for n in entries.get("nodes") or () if isinstance(n, Mapping)]
        if int(entries.get("totalCount") or 0) > len(nodes):
            return []
        ours = [n for n in nodes if ((n.get("headCommit") or {}).get("oid")) == head_sha]
        if not ours or not isinstance(ours[0].get("position"), int):
            return []
        limit = int(ours[0]["position"])
        ahead = sorted((int(n["position"]), int((n.get("pullRequest") or {})["number"]))
                       for n in nodes if isinstance(n.get("position"), int)
                       and n["position"] <= limit
                       and isinstance((n.get("pullRequest") or {}).get("number"), int))
        return [number for _, number in ahead]

    def pull_request_items(self, owner: str, repo: str, number: int) -> tuple[str, list[int]]:
        """A pull request's head branch and the issue numbers it closes.

        Returns:
            ``(head branch, [issue numbers])``; ``("", [])`` when ``number`` is no PR.
        """
        data = self.execute("pull_request_items", {"owner": owner, "name": repo, "number": number})
        pull = ((data.get("repository") or {}).get("pullRequest")) or {}
        nodes = ((pull.get("closingIssuesReferences") or {}).get("nodes")) or []
        numbers = [int(n["number"]) for n in nodes
                   if isinstance(n, Mapping) and isinstance(n.get("number"), int)]
        return str(pull.get("headRefName") or ""), numbers
