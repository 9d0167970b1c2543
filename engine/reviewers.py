"""Review requests: the people an approval gate waits on are asked on GitHub (issue 24 §3).

When an approval gate that covers a pull request opens (each new visit), the
``request-review`` hook asks GitHub for reviews on the open delivering pull requests from
the approvers the gate waits on: the rule's logins and teams (``org/team`` of the
repository's organization: GitHub asks teams by slug), the code owners of the changed
files when the rule names ``codeowners``, else ``authorizedUsers``. Left out, each with
its reason (kept in ``surface.reviewRequests[node].leftOut`` and shown by ``check``):

* the delivering pull requests' authors: GitHub refuses to ask a pull request's author
  (422 "Review cannot be requested from pull request author"; observed, e.g.
  peter-evans/create-pull-request#1835);
* with ``preventSelfApproval``, the work item's author and the person who dispatched the
  agent (issue 24 §2): they cannot approve, so asking them would mislead;
* loopgate itself, and anyone in ``reviewRequests.unavailable`` (loopgate.yaml);
* a team of another organization (GitHub asks only teams with access to the repository);
* everyone past ``reviewRequests.max`` (default :data:`DEFAULT_CAP` = 15: GitHub's pull
  request sidebar says "up to 15" reviewers; the REST reference states no number, so this
  is observed, cilium/cilium#16484, not documented).

The request is a courtesy: it never passes or holds the gate. It is the
:class:`~engine.effects.RequestReviews` effect, committed once with the gate's entry (so a
replayed delivery or a restart never asks again; a new visit asks again), carried out by
:func:`send` after commit. GitHub answers 422 for the whole request when one name is
refused (the author, someone without access: docs.github.com/en/rest/pulls/review-requests
"Request reviewers for a pull request", status 422); :func:`send` then asks the same
names one at a time, so the others are still asked and each refused name is recorded with
GitHub's words, at most one extra request per name (never a loop).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.codeowners import Ownership
from engine.effects import RequestReviews
from engine.ports import Tracker, TrackerError, review_requests
from engine.refs import WorkItemRef
from engine.settings import normalize_login

__all__ = ["DEFAULT_CAP", "SURFACE_KEY", "ReviewPlan", "plan", "send", "record_result",
           "summary_lines"]

log = logging.getLogger(__name__)

#: Review requests per pull request when ``reviewRequests.max`` is not set (see above).
DEFAULT_CAP = 15
#: ``surface.reviewRequests[node]``: this visit's requests, who was left out and why, and
#: (once carried out) who GitHub asked and who it refused.
SURFACE_KEY = "reviewRequests"


@dataclass(frozen=True)
class ReviewPlan:
    """Whom one gate visit asks.

    Attributes:
        reviewers: logins, as the rule spells them (no ``@``).
        teams: team slugs of the repository's organization.
        left_out: ``(name, why)`` of every approver not asked.
    """

    reviewers: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()

    @property
    def empty(self) -> bool:
        """True when nobody is asked."""
        return not self.reviewers and not self.teams

    def left_out_json(self) -> list[dict[str, str]]:
        """``[{name, why}]`` for the surface."""
        return [{"name": name, "why": why} for name, why in self.left_out]


def _key(name: str) -> str:
    return normalize_login(name.strip().lstrip("@"))


def _candidates(approvers: Sequence[str], owners: Ownership | None
                ) -> tuple[list[str], list[tuple[str, str]]]:
    # The rule's names in order, ``codeowners`` replaced by the owners of the changed files.
    names: list[str] = []
    left: list[tuple[str, str]] = []
    for name in approvers:
        if name != "codeowners":
            names.append(name.strip().lstrip("@"))
        elif owners is None or owners.problem:
            why = owners.problem if owners is not None else "could not be read"
            left.append(("codeowners", f"the code owners: {why}"))
        else:
            names += [o.lstrip("@") for o in owners.owners if o.startswith("@")]
    return names, left


def plan(approvers: Sequence[str], *, owner: str, excluded: Mapping[str, str],
         unavailable: Iterable[str] = (), cap: int = DEFAULT_CAP,
         owners: Ownership | None = None) -> ReviewPlan:
    """Whom a gate visit asks for reviews.

    Args:
        approvers: the rule's approvers (logins, ``org/team``, ``codeowners``), or
            ``authorizedUsers`` when the rule names none.
        owner: the repository's owner (a team of another organization is not asked).
        excluded: ``{login (any case): why}`` never asked (authors, loopgate itself).
        unavailable: ``reviewRequests.unavailable``: logins and ``org/team`` names.
        cap: at most this many names (logins and teams together), in the rule's order.
        owners: the code owners of the changed files (rules naming ``codeowners``).

    Returns:
        The :class:`ReviewPlan`.
    """
    names, left = _candidates(approvers, owners)
    away = {_key(n) for n in unavailable}
    barred = {_key(k): v for k, v in excluded.items()}
    chosen: list[tuple[str, str]] = []  # (login | "org/team", what is sent)
    seen: set[str] = set()
    for name in names:
        key = _key(name)
        if not key or key in seen:
            continue
        seen.add(key)
        org, slash, slug = name.partition("/")
        if key in away:
            left.append((name, "unavailable (reviewRequests.unavailable)"))
        elif slash and org.lower() != owner.lower():
            left.append((name, f"a team of {org}, not of {owner}: GitHub asks only teams "
                               "of the repository's organization"))
        elif not slash and key in barred:
            left.append((name, barred[key]))
        elif len(chosen) >= cap:
            left.append((name, f"over the cap of {cap} review requests (reviewRequests.max)"))
        else:
            chosen.append((name, slug if slash else name))
    return ReviewPlan(tuple(sent for name, sent in chosen if "/" not in name),
                      tuple(sent for name, sent in chosen if "/" in name), tuple(left))


# -- carrying it out (after commit) -------------------------------------------------------
def _ask(request: Any, pull: WorkItemRef, users: Sequence[str], teams: Sequence[str]) -> None:
    request(pull, tuple(users), tuple(teams))


def _one_by_one(request: Any, pull: WorkItemRef, users: Sequence[str], teams: Sequence[str],
                entry: dict[str, Any]) -> int:
    # GitHub refused the whole request for one name it does not say: ask each name alone,
    # once, so the others are asked and each refusal is kept with GitHub's words.
    sent = 0
    for kind, name in [("user", u) for u in users] + [("team", t) for t in teams]:
        sent += 1
        try:
            _ask(request, pull, [name] if kind == "user" else [], [name] if kind == "team" else [])
        except TrackerError as exc:
            if not exc.permanent:
                raise
            entry["refused"].append({"name": name, "kind": kind, "why": str(exc)[:300]})
            continue
        entry["reviewers" if kind == "user" else "teams"].append(name)
    return sent


def send(effect: RequestReviews, tracker: Tracker) -> dict[str, Any]:
    """Carry out ``effect``: one ``requested_reviewers`` request per pull request, and on a
    refusal (a permanent error: GitHub's 422, a 403) one request per name.

    Args:
        effect: the effect.
        tracker: the tracker port; when it declares ``capabilities.review_requests``, its
            :class:`~engine.ports.ReviewRequests` port asks (``request_reviewers`` raises
            :class:`~engine.ports.TrackerError`, ``permanent`` for a refusal).

    Returns:
        ``{node, visit, sent: <requests made>, pulls: [{pull, reviewers, teams, refused:
        [{name, kind, why}]}]}``, or with ``error`` when the tracker cannot ask at all.

    Raises:
        TrackerError: a transient failure (5xx, a rate limit): the row is tried again
            later; asking someone twice is harmless (GitHub keeps one request).
    """
    result: dict[str, Any] = {"node": effect.node, "visit": effect.visit, "sent": 0,
                              "pulls": []}
    port = review_requests(tracker)
    if port is None:
        result["error"] = "this tracker cannot request reviews"
        return result
    request = port.request_reviewers
    for number in effect.pulls:
        pull = WorkItemRef(effect.target.owner, effect.target.repo, number)
        entry: dict[str, Any] = {"pull": number, "reviewers": [], "teams": [], "refused": []}
        result["sent"] += 1
        try:
            _ask(request, pull, effect.reviewers, effect.teams)
            entry["reviewers"], entry["teams"] = list(effect.reviewers), list(effect.teams)
        except TrackerError as exc:
            if not exc.permanent:
                raise
            log.info("review request on %s refused (%s); asking each name alone", pull, exc)
            result["sent"] += _one_by_one(request, pull, effect.reviewers, effect.teams, entry)
        result["pulls"].append(entry)
    return result


def record_result(surface: dict[str, Any], effect: RequestReviews,
                  result: Mapping[str, Any], error: str = "") -> None:
    """Keep what GitHub did in ``surface.reviewRequests[node]`` (mutated), when it is still
    the visit that asked: ``status`` ``sent`` (``asked``, ``refused``) or ``failed``."""
    entries = dict(surface.get(SURFACE_KEY) or {})
    entry = dict(entries.get(effect.node) or {})
    if int(entry.get("visit") or 0) != effect.visit:
        return  # a later visit's record: this old row says nothing of it
    pulls = list(result.get("pulls") or ())
    # A visit may ask twice: at entry, then on a pull request opened later (issue 24 §3);
    # each result replaces only what was recorded for its own pull requests.
    mine = {p["pull"] for p in pulls}
    entry["asked"] = [a for a in entry.get("asked") or () if a.get("pull") not in mine] + [
        {"pull": p["pull"], "reviewers": p["reviewers"], "teams": p["teams"]} for p in pulls]
    entry["refused"] = [r for r in entry.get("refused") or () if r.get("pull") not in mine] + [
        {"pull": p["pull"], **r} for p in pulls for r in p["refused"]]
    problem = error or str(result.get("error") or "")
    entry["status"] = "failed" if problem else "sent"
    if problem:
        entry["error"] = problem
    entries[effect.node] = entry
    surface[SURFACE_KEY] = entries


def _names(users: Iterable[str], teams: Iterable[str], owner: str) -> str:
    return ", ".join([f"@{u}" for u in users] + [f"@{owner}/{t}" for t in teams])


def summary_lines(surface: Mapping[str, Any], node: str, owner: str) -> list[str]:
    """For ``check`` and the details: what the current visit of ``node`` asked on GitHub
    (``[]`` when it asked nothing)."""
    entry = (surface.get(SURFACE_KEY) or {}).get(node)
    if not isinstance(entry, Mapping):
        return []
    lines = []
    status = str(entry.get("status") or "")
    planned = _names(entry.get("reviewers") or (), entry.get("teams") or (), owner)
    if status == "queued" and planned:
        lines.append(f"review requests: asking {planned} on GitHub")
    for asked in entry.get("asked") or ():
        names = _names(asked.get("reviewers") or (), asked.get("teams") or (), owner)
        lines.append(f"review requested on #{asked.get('pull')}: {names or 'nobody'}")
    for refused in entry.get("refused") or ():
        lines.append(f"review request refused on #{refused.get('pull')} for "
                     f"{refused.get('name')}: {refused.get('why')}")
    if entry.get("error"):
        lines.append(f"review requests not sent: {entry['error']}")
    for left in entry.get("leftOut") or ():
        lines.append(f"not asked: {left.get('name')} ({left.get('why')})")
    return lines
