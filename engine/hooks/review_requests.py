"""The ``request-review`` hook's GitHub side (issue 24 §3): when an approval gate that
covers a pull request opens, ask the approvers it waits on for reviews on the delivering
pull requests (:mod:`engine.reviewers` says whom, and why others are left out).

Called by :func:`engine.hooks.common.request_review` on every entry of the gate (each
visit); it emits one :class:`~engine.effects.RequestReviews` and returns the
``surface.reviewRequests`` update the hook passes on. A pull request opened or linked
while the gate's visit is open is asked in that same visit (:func:`ask_on_new_pulls`,
called by ``Runtime.publish_gate`` on the pull request's event), once per pull request.
Never gates: a failed read is logged (``graph.hook_degraded``), kept in the surface, and
the gate waits for its answer as ever.
"""

from __future__ import annotations

from typing import Any

from engine.dispatch import dispatcher
from engine.effects import RequestReviews
from engine.hooks.common import (
    agent_people,
    code_owners_for,
    covers_pull_request,
    degrade,
    gate_rule,
)
from engine.hooks.registry import HookContext
from engine.ports import TrackerError, review_requests
from engine.reviewers import SURFACE_KEY, ReviewPlan, plan

__all__ = ["ask_for_reviews", "ask_on_new_pulls"]

HOOK = "request-review"


def _excluded(ctx: HookContext, pull_authors: dict[str, int], rule: Any) -> dict[str, str]:
    # Who is never asked, and why (engine.reviewers explains each rule).
    out: dict[str, str] = {}
    if ctx.settings.bot_login:
        out[ctx.settings.bot_login] = "loopgate itself"
        out[ctx.settings.bot_login.removesuffix("[bot]")] = "loopgate itself"
    if rule.prevent_self_approval:
        author = ctx.ports.tracker.issue_info(ctx.ref).author
        if author:
            out[author] = "opened this work item (preventSelfApproval)"
        # The dispatcher is an author only for a rule with agentAuthored (the opt-in of
        # issue 24 §2, as engine.hooks.common.people_for reads it).
        who = dispatcher(ctx.graph, ctx.state) if rule.agent_approvals else ""
        if who:
            out.setdefault(who, "dispatched the agent (the-loop execute; "
                                "preventSelfApproval)")
        for asked in _requesters(ctx, rule):
            out.setdefault(asked, "asked the agent for its pull request "
                                  "(agents.requesters; preventSelfApproval)")
    for login, number in pull_authors.items():
        out[login] = f"opened #{number}: GitHub does not ask a pull request's author"
    return out


def _requesters(ctx: HookContext, rule: Any) -> tuple[str, ...]:
    # Whoever asked an agent bot for its pull request is refused by the gate too
    # (engine.approvals.self_approval, issue 24 §2, platform-facts F4), so is never asked
    # to review. Only ``agents.requesters`` names them: without it nothing is read. The
    # pull requests' commits are read; a failed read raises TrackerError (the callers
    # send nothing and say why; the next pull request event asks again).
    agents = ctx.settings.agents  # None: no ``agents`` section
    if agents is None or not agents.requesters:
        return ()
    return agent_people(ctx.ports.tracker, ctx.ref, rule, ctx.settings, state=ctx.state,
                        graph=ctx.graph).requesters


def _plan(ctx: HookContext, pulls: list[Any]) -> ReviewPlan:
    rule = gate_rule(ctx)
    authors = {p.author: p.number for p in pulls if p.author}
    owners = code_owners_for(ctx.ports.tracker, ctx.ref, ctx.node.id, ctx.settings) \
        if rule.codeowners else None
    return plan(rule.approvers or ctx.settings.authorized_users, owner=ctx.ref.owner,
                excluded=_excluded(ctx, authors, rule),
                unavailable=ctx.settings.review_unavailable, cap=ctx.settings.review_cap,
                owners=owners)


def ask_for_reviews(ctx: HookContext) -> dict[str, Any]:
    """Emit this gate visit's :class:`~engine.effects.RequestReviews`, once.

    Returns:
        ``{"reviewRequests": {...}}`` to merge into the surface (``{}`` when the gate
        covers no pull request, review requests are off, the tracker cannot ask (the
        offline thread), or this visit already asked):
        ``surface.reviewRequests[node] = {visit, enteredAt, pulls, reviewers, teams,
        leftOut: [{name, why}], status: queued | nobody | failed, error}``.
    """
    node, settings = ctx.node.id, ctx.settings
    if not settings.review_requests or not covers_pull_request(node, settings):
        return {}
    if review_requests(ctx.ports.tracker) is None:
        return {}  # the offline thread: no pull requests, nobody to ask
    visit = ctx.state.visit(node)
    number = visit.number if visit is not None else 1
    entered = visit.entered_at if visit is not None else ""
    entries = dict(ctx.state.surface.get(SURFACE_KEY) or {})
    done = entries.get(node) or {}
    if done.get("visit") == number and done.get("enteredAt") == entered:
        return {}  # this visit asked already
    entry: dict[str, Any] = {"visit": number, "enteredAt": entered}
    try:
        pulls = [p for p in ctx.ports.tracker.delivering_pull_requests(ctx.ref)
                 if p.state == "open"]
        chosen = _plan(ctx, pulls) if pulls else ReviewPlan()
    except TrackerError as exc:
        degrade(ctx, HOOK, f"review requests not sent: {exc}")
        entries[node] = {**entry, "status": "failed", "error": str(exc)[:300]}
        return {SURFACE_KEY: entries}
    entry.update(pulls=[p.number for p in pulls], reviewers=list(chosen.reviewers),
                 teams=list(chosen.teams), leftOut=chosen.left_out_json())
    if not pulls:
        entry.update(status="nobody", error="no open pull request delivers this work item")
    elif chosen.empty:
        entry["status"] = "nobody"
    else:
        entry["status"] = "queued"
        ctx.emit(RequestReviews(ctx.ref, node, number, tuple(entry["pulls"]),
                                chosen.reviewers, chosen.teams))
        ctx.log("graph.reviews_requested", {"node": node, "visit": number,
                                            "pulls": entry["pulls"],
                                            "reviewers": entry["reviewers"],
                                            "teams": entry["teams"]})
    entries[node] = entry
    return {SURFACE_KEY: entries}


def ask_on_new_pulls(ctx: HookContext) -> dict[str, Any]:
    """Ask for reviews on the open delivering pull requests this gate visit has not asked
    yet: one opened or linked after the gate opened (issue 24 §3). Once per pull request
    per visit (``surface.reviewRequests[node].pulls`` lists those asked); the reviewers
    are chosen by the entry's rules (:func:`_plan` over every open pull request, so each
    one's author is left out). A visit with no record yet asks as its entry would
    (:func:`ask_for_reviews`).

    Args:
        ctx: the gate's context (``ctx.node`` the gate the item waits at).

    Returns:
        The ``surface.reviewRequests`` update (``{}`` when nothing is new, the gate
        covers no pull request, review requests are off or the tracker cannot ask). A
        failed read is logged (``graph.hook_degraded``) and changes nothing, so the next
        pull request event asks again.
    """
    node, settings = ctx.node.id, ctx.settings
    if not settings.review_requests or not covers_pull_request(node, settings):
        return {}
    if review_requests(ctx.ports.tracker) is None:
        return {}
    visit = ctx.state.visit(node)
    if visit is None or visit.exited_at:
        return {}
    entries = dict(ctx.state.surface.get(SURFACE_KEY) or {})
    done = entries.get(node) or {}
    if done.get("visit") != visit.number or done.get("enteredAt") != visit.entered_at:
        return ask_for_reviews(ctx)
    asked = [int(n) for n in done.get("pulls") or ()]
    try:
        pulls = [p for p in ctx.ports.tracker.delivering_pull_requests(ctx.ref)
                 if p.state == "open"]
        new = [p.number for p in pulls if p.number not in asked]
        chosen = _plan(ctx, pulls) if new else ReviewPlan()
    except TrackerError as exc:
        degrade(ctx, HOOK, f"review requests not sent on a new pull request: {exc}")
        return {}
    if not new:
        return {}
    entry = {**done, "pulls": asked + new, "leftOut": chosen.left_out_json()}
    entry.pop("error", None)
    if chosen.empty:
        entry["status"] = done.get("status") if asked else "nobody"
    else:
        before_reviewers, before_teams = done.get("reviewers") or (), done.get("teams") or ()
        entry.update(status="queued",
                     reviewers=list(dict.fromkeys([*before_reviewers, *chosen.reviewers])),
                     teams=list(dict.fromkeys([*before_teams, *chosen.teams])))
        ctx.emit(RequestReviews(ctx.ref, node, visit.number, tuple(new), chosen.reviewers,
                                chosen.teams))
        ctx.log("graph.reviews_requested", {"node": node, "visit": visit.number,
                                            "pulls": new, "reviewers": list(chosen.reviewers),
                                            "teams": list(chosen.teams), "late": True})
    entries[node] = entry
    return {SURFACE_KEY: entries}
