"""What the App Home tab shows, and publishing it (issue 12 §3).

"Waiting on you": approval gates where the viewer may decide (:func:`bot.slack.approval_clicks.
may_decide`) and quizzes of items the viewer owns (the quiz is the author's to take), oldest
first. "Your items": the items the viewer owns (:func:`bot.slack.listeners.commands.check.
involved_states`). Published on ``app_home_opened`` and again, by the Slack worker, for
everyone who opened it when one of their items moves.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.slack.approval_clicks import is_approval_gate, may_decide
from bot.slack.blocks.approval import OUTCOME_LABELS
from bot.slack.blocks.home_blocks import ItemRow, WaitingRow, home_view
from bot.slack.listeners.commands.check import _recorded_authors, item_owners, left_out
from bot.slack.slack_identity import resolve_login
from bot.slack.slack_tables import homes, save_home
from engine.approvals import recorded_approvals
from engine.checksummary import details_page
from engine.visits import Visit

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["home_rows", "publish_home", "homes_to_refresh", "refresh_homes", "web_base",
           "decision_phrase", "last_decision", "previous_visit"]

log = logging.getLogger(__name__)


def web_base(config: Any) -> str:
    """The GitHub web address for ``github.apiUrl``: ``https://github.com`` for
    ``api.github.com``, the host for a GitHub Enterprise Server ``…/api/v3``.

    (The home tab links every item without one API call per item.)
    """
    api = str(config.section("github").get("apiUrl") or "https://api.github.com").rstrip("/")
    if api in ("https://api.github.com", "http://api.github.com"):
        return "https://github.com"
    return api[: -len("/api/v3")] if api.endswith("/api/v3") else api


def _url(state: Any, base: str = "https://github.com") -> str:
    ref = state.ref
    return f"{base}/{ref.owner}/{ref.repo}/issues/{ref.number}"


def _quiz_row(state: Any, node: Any, base: str) -> WaitingRow:
    quiz = (state.surface.get("quiz") or {}).get(node.id) or {}
    comments = [c for c in quiz.get("comments") or () if isinstance(c, dict)]
    location = str(quiz.get("location") or "")
    record = state.nodes.get(node.id)
    return WaitingRow(str(state.ref), node.id, "quiz", record.entered_at if record else "",
                      node.description, _url(state, base),
                      str(comments[0].get("url") or "") if comments else "",
                      location if location.startswith(("https://", "http://")) else "")


def decision_phrase(visit: Visit) -> str:
    """``✅ Approved by @bob`` for a visit's decision (a quiz: ``attested by @alice``), ""
    when the visit has none."""
    decision = visit.decision
    if decision is None:
        return ""
    outcome = decision.outcome or visit.outcome
    if decision.document.get("attestedBy"):
        label = "attested"
    else:
        label = OUTCOME_LABELS.get(outcome, outcome or "decided")
    return f"{label} by {decision.by or 'someone'}"


def previous_visit(state: Any, node_id: str) -> str:
    """``visit 1: ✋ Changes requested by @alice`` for a gate waiting on a later visit (issue
    19 §2: the one deciding now sees why it came back), "" on a first visit."""
    history = state.history(node_id)
    if len(history) < 2 or history[-2].decision is None:
        return ""
    return f"visit {history[-2].number}: {decision_phrase(history[-2])}"


def last_decision(state: Any) -> str:
    """The item's latest decision among each node's CURRENT visit (issue 19 §2):
    ``last decision: ✅ Approved at `node` by @bob (visit 2)``; "" when none."""
    latest: tuple[str, str, Visit] | None = None
    for node_id in state.visits:
        visit = state.visit(node_id)
        if visit is None or visit.decision is None:
            continue
        at = visit.decision.at or visit.exited_at
        if latest is None or at >= latest[0]:
            latest = (at, node_id, visit)
    if latest is None:
        return ""
    _, node_id, visit = latest
    text = decision_phrase(visit).replace(" by ", f" at `{node_id}` by ", 1)
    return f"last decision: {text}" + (f" (visit {visit.number})" if visit.number > 1 else "")


def _waits_on(services: Services, state: Any, login: str) -> bool:
    # The gate's own rule for this item (preventSelfApproval needs whose work it is), and
    # not someone whose approval it already counted (issue 11 §2).
    node = state.current_node
    if login in {a.by for a in recorded_approvals(state, node)}:
        return False
    return may_decide(services, login, node, state.ref, state)


def home_rows(services: Services, login: str) -> tuple[list[WaitingRow], list[ItemRow]]:
    """``(waiting on login, oldest first; login's items)``; an item that cannot be read is
    left out, with one warning line (:func:`left_out`)."""
    authors = _recorded_authors(services)
    base = web_base(services.config)
    waiting: list[WaitingRow] = []
    items: list[ItemRow] = []
    for state in services.store.load_all(left_out):
        owners = item_owners(services, state, authors)
        if login in owners:
            items.append(ItemRow(str(state.ref), state.current_node, state.status,
                                 _url(state, base), last_decision(state),
                                 details_page(services.settings.public_url, state.ref)))
        if not state.current_node or state.status == "complete":
            continue
        node = services.graph.node(state.current_node)
        record = state.nodes.get(node.id)
        since = record.entered_at if record else ""
        if is_approval_gate(services.graph, node.id) and _waits_on(services, state, login):
            visit = state.visit(node.id)
            waiting.append(WaitingRow(str(state.ref), node.id, "approval", since,
                                      node.description, _url(state, base),
                                      visit=visit.number if visit is not None else 1,
                                      previous=previous_visit(state, node.id),
                                      page_url=details_page(services.settings.public_url,
                                                            state.ref)))
        elif node.id in (state.surface.get("quiz") or {}) and login in owners:
            waiting.append(replace(_quiz_row(state, node, base), page_url=details_page(
                services.settings.public_url, state.ref)))
    waiting.sort(key=lambda row: (row.since, row.ref))
    return waiting, items


def publish_home(services: Services, client: Any, user: str) -> dict[str, Any]:
    """Publish ``user``'s home tab (``views.publish``) and remember they opened it.

    Returns:
        The view published.
    """
    login = resolve_login(services, user) or ""
    waiting, items = home_rows(services, login) if login else ([], [])
    view = home_view(login, waiting, items)
    client.views_publish(user_id=user, view=view)
    refs = sorted({r.ref for r in waiting} | {r.ref for r in items})
    save_home(services.store, user, login, [str(r) for r in refs])
    return view


def homes_to_refresh(services: Services, ref: Any) -> list[str]:
    """Slack users who opened their home tab and whose tab shows (or may now show)
    ``ref``: those listing it, its owners (a new item joins "Your items"), and every
    linked user its current gate now waits on by the gate's rule for this item (the
    rule "Waiting on you" applies: :func:`home_rows`)."""
    rows = homes(services.store)
    state = services.store.load(ref)
    owners = item_owners(services, state) if state is not None else set()
    gate = state is not None and bool(state.current_node) and state.status != "complete" \
        and is_approval_gate(services.graph, state.current_node)
    users: list[str] = []
    for user, doc in rows:
        login = str(doc.get("login") or "")
        if str(ref) in doc.get("items", ()) or login in owners or (
                gate and login and _waits_on(services, state, login)):
            users.append(user)
    return users


def refresh_homes(services: Services, client: Any, ref: Any) -> list[str]:
    """Republish the home tabs that show (or may now show) ``ref``, best-effort.

    A Home tab is a view of state already recorded, so a failed refresh must never fail
    or retry what triggered it (a Slack notice would repeat, a recorded decision would
    read as failed): each failure is skipped, and the whole refresh logs one line.

    Returns:
        The Slack users whose tab could not be republished (empty when all were).
    """
    try:
        users = homes_to_refresh(services, ref)
    except Exception as exc:  # noqa: BLE001 - best-effort by design (see above)
        log.warning("home tabs showing %s not refreshed: %s", ref, exc)
        return []
    failed: list[str] = []
    reasons: list[str] = []
    for user in users:
        try:
            publish_home(services, client, user)
        except Exception as exc:  # noqa: BLE001 - one user's tab never blocks the next
            failed.append(user)
            reasons.append(_reason(exc))
    if failed:
        log.warning("home tabs showing %s not refreshed for %d of %d users (%s)", ref,
                    len(failed), len(users), "; ".join(sorted(set(reasons))))
    return failed


def _reason(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    error = response.get("error") if response is not None and hasattr(response, "get") else None
    return str(error) if error else type(exc).__name__
