"""Approval rules of human gates (issue 11 §2): who may approve, how many must, and
whether the people whose work is judged may judge it.

Pure: no port is called here. Team membership is asked through the ``membership``
callable the caller passes (the tracker's :meth:`team_membership`, cached with a TTL by the
GitHub bridge); a lookup that raises means *not authorized* (fail closed), and the reason
says which lookup failed.

Both ingresses share this module: a reply on the thread (``classify-feedback``) and a
chat surface's Approve / Request-changes click (an :class:`engine.events.Decision` by the
clicker's linked login handed to ``Runtime.advance``; issue 20 §1). The gate applies the
rule once per decision; any other reader (App Home's "waiting on you") asks the same
function, so both say the same thing::

    rule = engine.hooks.common.rule_for(graph, settings, node)
    people = engine.hooks.common.people_for(tracker, ref, node, rule, settings)
    result = evaluate(rule, recorded_approvals(state, node), Approval(login, outcome, now,
                      via), authorized_users=settings.authorized_users,
                      people=people, membership=tracker.team_membership)
    # result.verdict.allowed / .reason; result.tally.summary()

Rule shape (``gates.<node>`` in loopgate.yaml, or ``approval`` on a graph node; the
config wins):

* ``approvals`` — how many distinct authorized people must approve (default 1);
* ``approvers`` — logins and GitHub teams ``org/team-slug`` (default: ``authorizedUsers``);
* ``preventSelfApproval`` — the work item's author (and, at the merge gate, the
  delivering pull requests' authors) cannot be one of the approvers (GitHub
  environments' "prevent self-review" is the model);
* ``attester`` (quiz gates) — ``any`` authorized user (default) or
  ``assignee-or-author``: only those of the item's assignees or author who are also
  authorized, since the quiz attests *their* understanding (a role narrows, never
  widens: issue 19 §6).
* the approver entry ``codeowners`` (issue 24 §1) — the owners, per the repository's
  CODEOWNERS (:mod:`engine.codeowners`), of the delivering pull requests' changed files
  (``People.code_owners``, read by the caller at a gate that covers a pull request);
  ``codeowners: any`` (the default) lets any of them approve, ``codeowners: all-files``
  also holds the gate until every owned changed file has an approval by one of its owners
  (``Tally.uncovered``). A login spelled ``codeowners`` is written ``@codeowners``.
* ``agentAuthored: {approvals: N}`` (issue 24 §2) — when the work is agent-authored
  (``People.agent_authored``, :mod:`engine.dispatch`) the gate needs N approvals (the
  larger of N and ``approvals``); with ``preventSelfApproval`` too, the person who
  dispatched the agent (``People.dispatcher``: whose ``the-loop execute`` started the
  walk) is one of the work's authors (GitHub's rule for its coding agent, platform-facts
  F4). The ``agentAuthored`` key is the opt-in: a rule without it keeps letting the
  executor approve, as it did before.

Counting: one approval per person (a second approval by the same person replaces the
first); a counted ``changes-requested`` resets the count (the gate routes back).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.codeowners import Ownership, owns, uncovered
from engine.errors import ConfigError
from engine.outcomes import APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED
from engine.settings import normalize_login

__all__ = [
    "ATTESTER_ANY",
    "ATTESTER_ASSIGNEE",
    "CODEOWNERS",
    "CODEOWNERS_ANY",
    "CODEOWNERS_ALL_FILES",
    "VIA_REPLY",
    "ApprovalRule",
    "People",
    "Verdict",
    "Approval",
    "Refusal",
    "GateApprovals",
    "Tally",
    "Evaluation",
    "Membership",
    "authorize",
    "self_approval",
    "record_approval",
    "tally",
    "evaluate",
    "rule_teams",
    "recorded_approvals",
    "rule_problem",
]

ATTESTER_ANY = "any"
ATTESTER_ASSIGNEE = "assignee-or-author"
_ATTESTERS = (ATTESTER_ANY, ATTESTER_ASSIGNEE)
#: the approver entry naming the code owners of the changed files (issue 24 §1).
CODEOWNERS = "codeowners"
CODEOWNERS_ANY = "any"
CODEOWNERS_ALL_FILES = "all-files"
_CODEOWNERS_MODES = (CODEOWNERS_ANY, CODEOWNERS_ALL_FILES)
#: ``via`` of a reply on the thread; a chat surface's decision carries the surface's name
#: (data, e.g. ``slack``), supplied by the surface.
VIA_REPLY = "reply"

#: ``(org, team_slug, login) -> bool``: True when ``login`` is an active member. Raises
#: (any exception) when the lookup failed: the caller refuses (fail closed).
Membership = Callable[[str, str, str], bool]


@dataclass(frozen=True)
class ApprovalRule:
    """One human gate's rule.

    Attributes:
        approvals: distinct authorized approvers needed (≥ 1).
        approvers: logins and ``org/team`` names; empty = ``authorizedUsers``.
        prevent_self_approval: the item's author (and at the merge gate the delivering
            pull requests' authors) may not approve.
        attester: quiz gates: :data:`ATTESTER_ANY` or :data:`ATTESTER_ASSIGNEE`.
        codeowners: "" (no code owners), :data:`CODEOWNERS_ANY` or
            :data:`CODEOWNERS_ALL_FILES`; set when ``approvers`` lists ``codeowners``.
        agent_approvals: ``agentAuthored.approvals``: approvals needed when the work is
            agent-authored (0: no such rule).
    """

    approvals: int = 1
    approvers: tuple[str, ...] = ()
    prevent_self_approval: bool = False
    attester: str = ATTESTER_ANY
    codeowners: str = ""
    agent_approvals: int = 0

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], path: str = "gates") -> ApprovalRule:
        """Read a rule document (camelCase keys).

        Raises:
            ConfigError: a bad value; the message names the key path (``path.key``).
        """
        if not isinstance(doc, Mapping):
            raise ConfigError(f"{path}: must be a mapping")
        known = {"approvals", "approvers", "preventSelfApproval", "attester", "codeowners",
                 "agentAuthored"}
        for key in doc:
            if key not in known:
                allowed = ", ".join(sorted(known))
                raise ConfigError(f"{path}.{key}: unknown key (allowed: {allowed})")
        count = doc.get("approvals", 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ConfigError(f"{path}.approvals: must be a whole number ≥ 1, got {count!r}")
        approvers = doc.get("approvers", ())
        if isinstance(approvers, str) or not all(isinstance(a, str) and a.strip()
                                                 for a in approvers):
            raise ConfigError(f"{path}.approvers: must be a list of logins and org/team names")
        for name in approvers:
            if name.count("/") > 1 or name.startswith("/") or name.endswith("/"):
                raise ConfigError(f"{path}.approvers: {name!r} is neither a login nor org/team")
        attester = doc.get("attester", ATTESTER_ANY)
        if attester not in _ATTESTERS:
            raise ConfigError(f"{path}.attester: must be one of {', '.join(_ATTESTERS)}, "
                              f"got {attester!r}")
        prevent = doc.get("preventSelfApproval", False)
        if not isinstance(prevent, bool):
            raise ConfigError(f"{path}.preventSelfApproval: must be true or false")
        names = tuple(a.strip() for a in approvers)
        return cls(count, names, prevent, attester, _codeowners_mode(doc, names, path),
                   _agent_approvals(doc.get("agentAuthored"), f"{path}.agentAuthored"))

    def to_json(self) -> dict[str, Any]:
        """The camelCase document (:meth:`from_json` reads it back)."""
        doc = {"approvals": self.approvals, "approvers": list(self.approvers),
               "preventSelfApproval": self.prevent_self_approval, "attester": self.attester}
        if self.codeowners:
            doc["codeowners"] = self.codeowners
        if self.agent_approvals:
            doc["agentAuthored"] = {"approvals": self.agent_approvals}
        return doc

    def needed(self, people: People | None = None) -> int:
        """Approvals needed: ``agentAuthored.approvals`` when ``people`` says the work is
        agent-authored and that is more, else ``approvals``."""
        if people is not None and people.agent_authored and self.agent_approvals:
            return max(self.approvals, self.agent_approvals)
        return self.approvals

    def logins(self, authorized_users: Sequence[str]) -> tuple[str, ...]:
        """The plain logins allowed (``approvers`` without teams and without the
        ``codeowners`` entry, else ``authorizedUsers``)."""
        names = self.approvers or tuple(authorized_users)
        return tuple(normalize_login(n) for n in names if "/" not in n and n != CODEOWNERS)

    def teams(self) -> tuple[tuple[str, str], ...]:
        """``(org, team_slug)`` of every team in ``approvers``, lower-cased."""
        return rule_teams(self.approvers)

    def who(self, authorized_users: Sequence[str], owners: Ownership | None = None) -> str:
        """Who may approve, for people: ``@alice, @acme/reviewers`` (the ``codeowners``
        entry as ``the code owners of the changed files (@bob)`` when ``owners`` is known)."""
        names = self.approvers or tuple(authorized_users)
        return ", ".join(_who(n, owners) for n in names) or "an authorized user"

    def still_who(self, authorized_users: Sequence[str], approved: Iterable[str],
                  owners: Ownership | None = None) -> str:
        """Who may still approve, for people: :meth:`who` without the logins in
        ``approved`` (those already counted this visit: one approval per person, issue 11
        §2). A team and the ``codeowners`` entry stay (another member may approve).

        Returns:
            ``@bob, @acme/reviewers``; "" when everyone named has approved.
        """
        done = {normalize_login(a) for a in approved}
        names = self.approvers or tuple(authorized_users)
        left = [n for n in names
                if "/" in n or n == CODEOWNERS or normalize_login(n) not in done]
        return ", ".join(_who(n, owners) for n in left)


def _who(name: str, owners: Ownership | None) -> str:
    if name != CODEOWNERS:
        return f"@{name.lstrip('@')}"
    return owners.describe() if owners is not None else "the code owners of the changed files"


def _agent_approvals(doc: Any, path: str) -> int:
    """``agentAuthored: {approvals: N}`` → N (0 when absent).

    Raises:
        ConfigError: not a mapping with a whole ``approvals`` ≥ 1 and nothing else.
    """
    if doc is None:
        return 0
    if not isinstance(doc, Mapping) or set(doc) - {"approvals"} or "approvals" not in doc:
        raise ConfigError(f"{path}: must be a mapping with approvals (e.g. {{approvals: 2}})")
    count = doc["approvals"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ConfigError(f"{path}.approvals: must be a whole number ≥ 1, got {count!r}")
    return count


def _codeowners_mode(doc: Mapping[str, Any], approvers: Sequence[str], path: str) -> str:
    """The rule's code-owner mode: "" without the ``codeowners`` approver entry.

    Raises:
        ConfigError: a mode other than any/all-files, or a mode without the entry.
    """
    listed = CODEOWNERS in approvers
    mode = doc.get("codeowners")
    if mode is None:
        return CODEOWNERS_ANY if listed else ""
    if mode not in _CODEOWNERS_MODES:
        raise ConfigError(f"{path}.codeowners: must be one of {', '.join(_CODEOWNERS_MODES)}, "
                          f"got {mode!r}")
    if not listed:
        raise ConfigError(f"{path}.codeowners: applies only when approvers lists codeowners")
    return str(mode)


def rule_teams(approvers: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The ``(org, team_slug)`` pairs named in ``approvers`` (``org/team`` entries)."""
    out = []
    for name in approvers:
        if "/" in name:
            org, _, team = name.strip().lstrip("@").partition("/")
            out.append((org.lower(), team.lower()))
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class People:
    """Whose work a gate judges (for ``preventSelfApproval`` and the attester rule).

    Attributes:
        item_author: who opened the work item.
        assignees: the item's assignees.
        pull_request_authors: ``(login, "owner/repo#N")`` of the delivering pull requests
            (filled at the merge gate only).
        code_owners: who owns the delivering pull requests' changed files (read only for
            a rule with the ``codeowners`` entry; None otherwise).
        dispatcher: who dispatched the agent (``the-loop execute``), "" when unknown or
            not read (issue 24 §2).
        agent_authored: why the work is agent-authored, "" when it is not (or not read).
        requesters: who asked an agent bot for its delivering pull request
            (``agents.requesters``, issue 24 §2); authors under ``preventSelfApproval``.
        agent_signals: each reason the work is agent-authored (``agent_authored`` is
            them joined), recorded for ``check`` (``surface.agent``).
    """

    item_author: str = ""
    assignees: tuple[str, ...] = ()
    pull_request_authors: tuple[tuple[str, str], ...] = ()
    code_owners: Ownership | None = None
    dispatcher: str = ""
    agent_authored: str = ""
    requesters: tuple[str, ...] = ()
    agent_signals: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """Whether one person's decision counts: ``allowed``, else ``reason`` (one line)."""

    allowed: bool
    reason: str = ""
    team: str = ""  # the team that allowed it ("org/team"), "" for a login


def _self_reason(login: str, people: People) -> str:
    if login == normalize_login(people.item_author):
        return (f"@{login} opened this work item, and this gate has preventSelfApproval: "
                "the author cannot approve their own work")
    for author, pull in people.pull_request_authors:
        if login == normalize_login(author):
            return (f"@{login} opened {pull}, which delivers this work item, and this gate "
                    "has preventSelfApproval: the author cannot approve their own work")
    if people.dispatcher and login == normalize_login(people.dispatcher):
        # Issue 24 §2, platform-facts F4: who asked the agent for the work is its author.
        return (f"@{login} dispatched the agent that did this work (the-loop execute), and "
                "this gate has preventSelfApproval: who asked for the work cannot approve it")
    if login in {normalize_login(r) for r in people.requesters}:
        return (f"@{login} asked the agent for the pull request that delivers this work "
                "(agents.requesters), and this gate has preventSelfApproval: who asked for "
                "the work cannot approve it")
    return ""


def self_approval(login: str | None, rule: ApprovalRule, people: People) -> Verdict:
    """Whether ``rule``'s ``preventSelfApproval`` refuses ``login`` (the same check
    :func:`authorize` makes first): the item's author, a delivering pull request's author,
    the agent's dispatcher or a requester (issue 11 §2, issue 24 §2, platform-facts F4).

    Args:
        login: the person (a GitHub login).
        rule: the gate's rule.
        people: whose work it is, as far as the caller read it.

    Returns:
        ``Verdict(False, reason)`` when one of ``people`` is ``login`` under
        ``preventSelfApproval``, else ``Verdict(True)`` (which says nothing about whether
        ``login`` is an approver at all).
    """
    name = normalize_login(login)
    why = _self_reason(name, people) if name and rule.prevent_self_approval else ""
    return Verdict(False, why) if why else Verdict(True)


def authorize(login: str | None, rule: ApprovalRule, *, authorized_users: Sequence[str],
              people: People, membership: Membership | None = None,
              attesting: bool = False) -> Verdict:
    """Decide whether ``login`` may answer a gate governed by ``rule``.

    Args:
        login: the person (a GitHub login; a chat click is mapped to one first).
        rule: the gate's rule.
        authorized_users: ``authorizedUsers`` (the default approvers).
        people: whose work it is.
        membership: team lookups (see :data:`Membership`); None = no team can be asked.
        attesting: a quiz attestation (the ``attester`` rule applies, not
            ``preventSelfApproval``: the quiz is the author's own understanding). The
            ``assignee-or-author`` role narrows the authorized set (the attester must be
            an assignee or the author AND an approver of the gate), never widens it
            (issue 19 §6).

    Returns:
        A :class:`Verdict`; never raises (a failed team lookup refuses, naming the team).
    """
    name = normalize_login(login)
    if not name:
        return Verdict(False, "the decision names nobody")
    if attesting and rule.attester == ATTESTER_ASSIGNEE:
        # Issue 19 §6: the role narrows the authorized set, never widens it.
        own = {normalize_login(people.item_author), *map(normalize_login, people.assignees)}
        if name not in own - {""}:
            return Verdict(False, f"@{name} is neither an assignee nor the author of this "
                                  "work item (attester: assignee-or-author)")
    if rule.prevent_self_approval and not attesting:
        why = _self_reason(name, people)
        if why:
            return Verdict(False, why)
    if name in rule.logins(authorized_users):
        return Verdict(True)
    owner = _by_code_owners(name, rule, people, membership)
    if owner.allowed:
        return owner
    verdict = _by_team(name, rule, authorized_users, membership, people, owner.reason)
    if not verdict.allowed and attesting and rule.attester == ATTESTER_ASSIGNEE:
        return Verdict(False, f"@{name} is the work item's {_role(name, people)} but not "
                              f"authorized to attest: {verdict.reason}")
    return verdict


def _role(name: str, people: People) -> str:
    return "author" if name == normalize_login(people.item_author) else "assignee"


def _by_code_owners(name: str, rule: ApprovalRule, people: People,
                    membership: Membership | None) -> Verdict:
    """Allowed as a code owner of a changed file (issue 24 §1); else the failed team
    lookups of the owners in ``reason`` (fail closed)."""
    if not rule.codeowners or people.code_owners is None or people.code_owners.problem:
        return Verdict(False)
    allowed, team, failed = owns(name, people.code_owners.owners, membership)
    if allowed:
        return Verdict(True, team=team or CODEOWNERS)
    return Verdict(False, ", ".join(failed))


def _by_team(name: str, rule: ApprovalRule, authorized_users: Sequence[str],
             membership: Membership | None, people: People | None = None,
             owner_failures: str = "") -> Verdict:
    failed: list[str] = []
    for org, team in rule.teams():
        if membership is None:
            failed.append(f"{org}/{team} (no team lookup available)")
            continue
        try:
            if membership(org, team, name):
                return Verdict(True, team=f"{org}/{team}")
        except Exception as exc:  # noqa: BLE001 -- any failed lookup refuses (fail closed)
            failed.append(f"{org}/{team} ({_short(exc)})")
    owners = people.code_owners if people is not None else None
    reason = (f"@{name} is not among the approvers of this gate "
              f"({rule.who(authorized_users, owners)})")
    if owner_failures:
        failed.append(owner_failures)
    if failed:
        reason += "; the membership lookup failed for " + ", ".join(failed)
    return Verdict(False, reason)


def _short(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


@dataclass(frozen=True)
class Approval:
    """One recorded decision.

    Attributes:
        by: the login (no ``@``, lower-cased).
        outcome: ``approved`` | ``approved-with-comments`` | ``changes-requested``.
        at: ISO-8601 UTC when it was given.
        via: :data:`VIA_REPLY` (a reply on the thread) or a chat surface's name (``slack``).
        comment: the reply's URL ("" for a chat decision).
        comment_id: the reply's id, or None.
        body: the reply's text (kept for ``approved-with-comments``).
        team: the team that authorized ``by`` ("" for a login).
    """

    by: str
    outcome: str
    at: str
    via: str = VIA_REPLY
    comment: str = ""
    comment_id: int | None = None
    body: str = ""
    team: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored camelCase document."""
        doc: dict[str, Any] = {"by": self.by, "outcome": self.outcome, "at": self.at,
                               "via": self.via}
        if self.comment:
            doc["comment"] = self.comment
        if self.comment_id is not None:
            doc["commentId"] = self.comment_id
        if self.body and self.outcome == APPROVED_WITH_COMMENTS:
            doc["body"] = self.body
        if self.team:
            doc["team"] = self.team
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Approval:
        """Read :meth:`to_json` back (unknown keys ignored)."""
        cid = doc.get("commentId")
        return cls(str(doc.get("by") or ""), str(doc.get("outcome") or ""),
                   str(doc.get("at") or ""), str(doc.get("via") or VIA_REPLY),
                   str(doc.get("comment") or ""), cid if isinstance(cid, int) else None,
                   str(doc.get("body") or ""), str(doc.get("team") or ""))


@dataclass(frozen=True)
class Refusal:
    """A decision that did not count: who, why, and which reply (for the thread)."""

    by: str
    reason: str
    at: str
    via: str = VIA_REPLY
    comment_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored camelCase document."""
        doc: dict[str, Any] = {"by": self.by, "reason": self.reason, "at": self.at,
                               "via": self.via}
        if self.comment_id is not None:
            doc["commentId"] = self.comment_id
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Refusal:
        """Read :meth:`to_json` back (unknown keys ignored)."""
        cid = doc.get("commentId")
        return cls(str(doc.get("by") or ""), str(doc.get("reason") or ""),
                   str(doc.get("at") or ""), str(doc.get("via") or VIA_REPLY),
                   cid if isinstance(cid, int) and not isinstance(cid, bool) else None)


@dataclass(frozen=True)
class GateApprovals:
    """What an approval gate counted during one visit (issue 11 §2, issue 19 §2): the
    stored ``surface.approvals[node]``. :meth:`to_json` / :meth:`from_json` are its one
    (de)serialiser; ``classify-feedback`` writes it, every reader goes through it.

    Stored shape (camelCase)::

        {enteredAt, visit?, approvals: [Approval], refused: [Refusal], earlier?: ["by:id"],
         changesRequested?: Approval}

    Attributes:
        entered_at: when the visit began (``nodes[node].enteredAt``).
        visit: the visit's number; None for an entry written before visits were kept
            (its ``enteredAt`` alone then says which entry it is).
        approvals: the decisions counted, oldest first.
        refused: the decisions that did not count, with the reason.
        earlier: ``by:commentId`` of replies written during an earlier visit and offered
            during this one (each named once).
        changes_requested: the counted ``changes-requested`` that decided the visit.
    """

    entered_at: str
    visit: int | None = None
    approvals: tuple[Approval, ...] = ()
    refused: tuple[Refusal, ...] = ()
    earlier: tuple[str, ...] = ()
    changes_requested: Approval | None = None

    def belongs_to(self, entered_at: str, visit: int) -> bool:
        """True when this entry is the one of the visit entered at ``entered_at`` with
        number ``visit``."""
        return self.entered_at == entered_at and (self.visit is None or self.visit == visit)

    def to_json(self) -> dict[str, Any]:
        """The stored document (see the class docstring)."""
        doc: dict[str, Any] = {"enteredAt": self.entered_at}
        if self.visit is not None:
            doc["visit"] = self.visit
        doc["approvals"] = [a.to_json() for a in self.approvals]
        doc["refused"] = [r.to_json() for r in self.refused]
        if self.earlier:
            doc["earlier"] = list(self.earlier)
        if self.changes_requested is not None:
            doc["changesRequested"] = self.changes_requested.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Any) -> GateApprovals | None:
        """Read :meth:`to_json` back; None when ``doc`` is no mapping. Entries that are
        not mappings are skipped; unknown keys are ignored."""
        if not isinstance(doc, Mapping):
            return None
        visit = doc.get("visit")
        changes = doc.get("changesRequested")
        return cls(str(doc.get("enteredAt") or ""),
                   visit if isinstance(visit, int) and not isinstance(visit, bool) else None,
                   tuple(Approval.from_json(a) for a in doc.get("approvals") or ()
                         if isinstance(a, Mapping)),
                   tuple(Refusal.from_json(r) for r in doc.get("refused") or ()
                         if isinstance(r, Mapping)),
                   tuple(str(k) for k in doc.get("earlier") or ()),
                   Approval.from_json(changes) if isinstance(changes, Mapping) else None)


def record_approval(recorded: Sequence[Approval], new: Approval) -> tuple[Approval, ...]:
    """The approvals after ``new`` (already authorized) is counted.

    A ``changes-requested`` resets the count (returns ``()``); an approval by someone who
    approved before replaces their earlier one (counted once per person).
    """
    if new.outcome == CHANGES_REQUESTED:
        return ()
    kept = tuple(a for a in recorded if a.by != new.by)
    return (*kept, new)


@dataclass(frozen=True)
class Tally:
    """Where a gate's approvals stand.

    Attributes:
        needed: approvals the rule asks for.
        approvals: the counted approvals (one per person), oldest first.
        changes: the counted ``changes-requested`` that decided the gate, or None.
        uncovered: ``codeowners: all-files``: the owned changed files no approver owns
            yet (the gate waits for them, issue 24 §1).
        agent: why more approvals are needed (``agentAuthored``), "" otherwise.
    """

    needed: int
    approvals: tuple[Approval, ...] = ()
    changes: Approval | None = None
    uncovered: tuple[str, ...] = ()
    agent: str = ""

    @property
    def count(self) -> int:
        """Distinct people who approved."""
        return len({a.by for a in self.approvals})

    @property
    def passed(self) -> bool:
        """True when the gate is decided (enough approvals, or changes requested)."""
        return self.changes is not None or (self.count >= self.needed and not self.uncovered)

    @property
    def outcome(self) -> str:
        """``changes-requested``; ``approved-with-comments`` when a counted approval had
        comments; else ``approved`` (meaningful once :attr:`passed`)."""
        if self.changes is not None:
            return CHANGES_REQUESTED
        if any(a.outcome == APPROVED_WITH_COMMENTS for a in self.approvals):
            return APPROVED_WITH_COMMENTS
        return APPROVED

    def summary(self) -> str:
        """``1 of 2 approvals: @alice`` (``0 of 2 approvals`` when none)."""
        noun = "approval" if self.needed == 1 else "approvals"
        text = f"{self.count} of {self.needed} {noun}"
        if self.agent:
            text += " (agent-authored)"
        if self.approvals:
            text += ": " + ", ".join(f"@{a.by}" for a in self.approvals)
        if self.uncovered:
            shown = ", ".join(self.uncovered[:5])
            more = f" and {len(self.uncovered) - 5} more" if len(self.uncovered) > 5 else ""
            text += f"; no code owner approved {shown}{more} yet (codeowners: all-files)"
        return text


def tally(rule: ApprovalRule, approvals: Sequence[Approval],
          changes: Approval | None = None, *, people: People | None = None,
          membership: Membership | None = None) -> Tally:
    """The :class:`Tally` of ``approvals`` under ``rule``; with ``codeowners: all-files``
    and ``people.code_owners`` known, the owned changed files no approver owns are
    :attr:`Tally.uncovered` (a failed team lookup leaves a file uncovered: fail closed)."""
    missing: tuple[str, ...] = ()
    owners = people.code_owners if people is not None else None
    if rule.codeowners == CODEOWNERS_ALL_FILES and owners is not None and changes is None:
        missing = uncovered(owners, [a.by for a in approvals], membership)
    needed = rule.needed(people)
    agent = people.agent_authored if people is not None and needed > rule.approvals else ""
    return Tally(needed, tuple(approvals), changes, missing, agent)


@dataclass(frozen=True)
class Evaluation:
    """What one decision does to a gate (:func:`evaluate`).

    Attributes:
        verdict: whether the decision counts, and why not.
        tally: the gate's tally after it (unchanged when refused).
    """

    verdict: Verdict
    tally: Tally


def evaluate(rule: ApprovalRule, recorded: Sequence[Approval], decision: Approval, *,
             authorized_users: Sequence[str], people: People,
             membership: Membership | None = None) -> Evaluation:
    """Apply one decision to a gate's recorded approvals: the one function both
    ingresses (thread replies, chat clicks) use.

    Args:
        rule: the gate's rule.
        recorded: the approvals counted so far at this entry of the gate.
        decision: the new decision (``by``, ``outcome``, ``at``, ``via`` ...).
        authorized_users: ``authorizedUsers``.
        people: whose work it is.
        membership: team lookups; a failure refuses.

    Returns:
        The :class:`Evaluation`: refused → the tally of ``recorded``; counted → the tally
        after it (``changes`` set for a ``changes-requested``).
    """
    verdict = authorize(decision.by, rule, authorized_users=authorized_users, people=people,
                        membership=membership)
    if not verdict.allowed:
        return Evaluation(verdict, tally(rule, recorded, people=people, membership=membership))
    counted = Approval(normalize_login(decision.by), decision.outcome, decision.at,
                       decision.via, decision.comment, decision.comment_id, decision.body,
                       verdict.team)
    after = record_approval(recorded, counted)
    changes = counted if counted.outcome == CHANGES_REQUESTED else None
    return Evaluation(verdict, tally(rule, after, changes, people=people,
                                     membership=membership))



def recorded_approvals(state: Any, node_id: str) -> tuple[Approval, ...]:
    """The approvals counted so far at the current entry of gate ``node_id`` of an item
    (``state``: an :class:`~engine.state.ItemState`; ``surface.approvals[node]``, written
    by ``classify-feedback``); ``()`` for a gate entered since (a new entry starts from
    zero)."""
    record = state.nodes.get(node_id)
    entered = record.entered_at if record is not None else ""
    entry = GateApprovals.from_json((state.surface.get("approvals") or {}).get(node_id))
    if entry is None or entry.entered_at != entered:
        return ()
    visit = state.visit(node_id)  # issue 19 §2: the entry belongs to the current visit
    if visit is not None and not entry.belongs_to(entered, visit.number):
        return ()
    return entry.approvals


def rule_problem(rule: ApprovalRule, exit_hooks: Sequence[str]) -> str:
    """Why ``rule`` cannot govern a gate whose exit chain runs ``exit_hooks`` ("" when it
    can): approvals, approvers and ``preventSelfApproval`` belong to review gates
    (``classify-feedback``); ``attester`` and approvers to quiz gates (``quiz-attested``),
    which one attestation passes."""
    if "classify-feedback" in exit_hooks:
        if rule.attester != ATTESTER_ANY:
            return "attester applies to quiz gates (quiz-attested), not to a review gate"
        return ""
    if "quiz-attested" in exit_hooks:
        if rule.codeowners == CODEOWNERS_ALL_FILES:
            return ("codeowners: all-files needs several approvals: a quiz gate passes on "
                    "one attestation (use codeowners: any)")
        if rule.agent_approvals:
            return ("a quiz gate passes on one attestation: agentAuthored applies to review "
                    "gates (classify-feedback)")
        if rule.approvals != 1 or rule.prevent_self_approval:
            return ("a quiz gate passes on one attestation: approvals and "
                    "preventSelfApproval apply to review gates (classify-feedback)")
        return ""
    return "only review gates (classify-feedback) and quiz gates (quiz-attested) take rules"
