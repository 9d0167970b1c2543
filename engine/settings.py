"""Engine settings: the part of loopgate.yaml the engine and its hooks read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.identity import Actor

__all__ = ["EngineSettings", "normalize_login", "is_authorized"]

DEFAULT_EXECUTE_KEYWORD = "the-loop execute"
DEFAULT_START_KEYWORD = "the-loop start"


def normalize_login(login: str | None) -> str:
    """Lower-case a GitHub login and drop a leading ``@`` ("" for None)."""
    return (login or "").strip().lstrip("@").lower()


def is_authorized(login: str | None, authorized: Iterable[str]) -> bool:
    """True when ``login`` is in ``authorized`` (case-insensitive, leading ``@`` ignored).

    An empty or missing login never counts (explainer design C4: a missing editor is
    rejected before the allow-list is consulted).
    """
    name = normalize_login(login)
    return bool(name) and name in {normalize_login(a) for a in authorized}


@dataclass(frozen=True)
class EngineSettings:
    """Settings the engine needs.

    Attributes:
        authorized_users: GitHub logins allowed to answer gates (``authorizedUsers``).
        execute_keyword: the phase-selection keyword, matched case-insensitively.
        start_keyword: the comment that starts a work item.
        loop: the graph name to walk.
        spec_dir: the spec directory relative to the repository root.
        bot_login: the tracker login loopgate posts as ("" if unknown), spelled as REST
            spells it (``loopgate[bot]`` for a GitHub App); its comments are
            self-authored even without the marker.
        bot_kind: ``User`` or ``Bot`` when GitHub told us (``GET /user`` / ``GET /app``),
            "" when unknown (then a ``[bot]`` suffix of ``bot_login`` means ``Bot``).
        bot_id: loopgate's numeric account id when known (REST ``user.id`` = GraphQL
            ``databaseId``), else None.
        gate_rules: node id -> :class:`~engine.approvals.ApprovalRule` from
            loopgate.yaml's ``gates`` (issue 11 §2); a node without one uses its graph
            ``approval`` rule, else the default (one approval from ``authorizedUsers``).
        merge_gate: publish the ``loopgate`` check on delivering pull requests
            (``mergeGate.enabled``, issue 11 §1).
        merge_gate_after: the node whose pass turns the check ``success``
            (``mergeGate.after``; default ``human-approval``; ``complete`` = the end).
        merge_gate_vouching: the gates whose pass covers a pull request's head
            (``mergeGate.vouching``; empty = from ``code-quiz`` to the merge node; issue 19 §3).
        public_url: where people reach ``loopgate serve`` (``server.publicUrl``, no
            trailing slash needed); the ``loopgate`` check links an item's details page
            ``<public_url>/items/<owner>/<repo>/<n>`` (issue 22 §1); "" = no link.
        review_requests: ask an approval gate's approvers for reviews on the delivering
            pull requests when it opens (``reviewRequests.enabled``, issue 24 §3).
        review_unavailable: logins and ``org/team`` names never asked
            (``reviewRequests.unavailable``); they may still approve.
        review_cap: at most this many names asked per gate visit
            (``reviewRequests.max``; default 15, :data:`engine.reviewers.DEFAULT_CAP`).
        agents: loopgate.yaml's ``agents`` as an :class:`engine.dispatch.AgentConfig`
            (issue 24 §2); None = its defaults.
    """

    authorized_users: tuple[str, ...] = ()
    execute_keyword: str = DEFAULT_EXECUTE_KEYWORD
    start_keyword: str = DEFAULT_START_KEYWORD
    loop: str = "pdlc-work-item-loop"
    spec_dir: str = "docs/specs"
    bot_login: str = ""
    bot_kind: str = ""
    bot_id: int | None = None
    gate_rules: Mapping[str, Any] = field(default_factory=dict)
    merge_gate: bool = False
    merge_gate_after: str = "human-approval"
    merge_gate_vouching: tuple[str, ...] = ()
    public_url: str = ""
    review_requests: bool = True
    review_unavailable: tuple[str, ...] = ()
    review_cap: int = 15
    agents: Any = None

    @property
    def bot(self) -> Actor:
        """loopgate's own identity as an :class:`~engine.identity.Actor` (login "" when
        unknown, e.g. a test that configures none)."""
        known = Actor.from_login(self.bot_login, id=self.bot_id)
        return Actor(known.login, self.bot_kind or known.kind, known.id)

    def is_loopgate(self, actor: Actor) -> bool:
        """True when ``actor`` is loopgate itself (issue 9 §1: kind and id where GitHub
        gives them, one login normalisation otherwise). False while loopgate's identity
        is unknown."""
        return self.bot.same_as(actor)

    def is_authorized(self, login: str | None) -> bool:
        """See :func:`is_authorized`."""
        return is_authorized(login, self.authorized_users)
