"""Who dispatched the agent, and whether the work is agent-authored (issue 24 §2).

Pure: reads an item's state and what the tracker said of its pull requests.

* **The dispatcher** is the person whose ``the-loop execute`` reply (or Slack Execute
  click) answered the phase selection: the gate's recorded decision (``by`` of the
  ``classify-phase-selection`` gate's current visit), so state written before this change
  names its dispatcher too. GitHub's rule for its coding agent is the model
  (platform-facts F4): whoever asked the agent for the work may approve it, but that
  approval does not count — with ``preventSelfApproval`` the dispatcher is one of the
  work's authors (:func:`engine.approvals.authorize`).
* **Agent-authored**: an agent node of the graph was claimed complete in this walk (not
  moved past by ``force``, not skipped), or a delivering pull request was opened by a bot
  account (REST spells an App's bot ``<slug>[bot]``, platform-facts identity notes). A
  rule's ``agentAuthored: {approvals: N}`` then asks for N approvals.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.graph.model import Graph
from engine.outcomes import PASS
from engine.settings import normalize_login

__all__ = ["SELECTION_HOOK", "dispatcher", "agent_authored"]

SELECTION_HOOK = "classify-phase-selection"


def dispatcher(graph: Graph, state: Any) -> str:
    """The login (no ``@``, lower-cased) of the person who executed the phase selection,
    "" when the item was not dispatched yet (or the graph has no selection gate).

    Args:
        graph: the compiled graph.
        state: the item's :class:`~engine.state.ItemState`.
    """
    for node in graph.ordered():
        if SELECTION_HOOK not in (h.name for h in node.exit):
            continue
        decision = state.decision(node.id)
        by = getattr(decision, "by", "") if decision is not None else ""
        if not by:
            legacy = (getattr(state, "decisions", {}) or {}).get(node.id) or {}
            by = legacy.get("by", "") if isinstance(legacy, dict) else ""
        if by:
            return normalize_login(str(by))
    return ""


def agent_authored(graph: Graph, state: Any, pull_authors: Iterable[str] = ()) -> str:
    """Why the work is agent-authored (one line), "" when it is not.

    Args:
        graph: the compiled graph.
        state: the item's state.
        pull_authors: the delivering pull requests' authors (REST logins).
    """
    claimed = [node.id for node in graph.ordered() if node.actor == "agent" and any(
        v.outcome == PASS and not v.forced for v in state.history(node.id))]
    if claimed:
        return "an agent claimed " + ", ".join(claimed) + " complete"
    bots = [a for a in pull_authors if a.lower().endswith("[bot]")]
    if bots:
        return "a delivering pull request was opened by " + ", ".join(f"@{b}" for b in bots)
    return ""
