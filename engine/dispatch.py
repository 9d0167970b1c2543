"""Who dispatched the agent, and whether the work is agent-authored (issue 24 §2).

Reads an item's state and, through the tracker port only (:func:`read_authorship`), its
delivering pull requests and their commits.

* **The dispatcher** is the person whose ``the-loop execute`` reply (or Slack Execute
  click) answered the phase selection: the gate's recorded decision (``by`` of the
  ``classify-phase-selection`` gate's current visit), so state written before this change
  names its dispatcher too. GitHub's rule for its coding agent is the model
  (platform-facts F4): whoever asked the agent for the work may approve it, but that
  approval does not count — with ``preventSelfApproval`` the dispatcher is one of the
  work's authors (:func:`engine.approvals.authorize`).
* **Agent-authored**: an agent node of the graph was claimed complete in this walk (not
  moved past by ``force``, not skipped), or a delivering pull request says so: opened by
  an agent account, or a commit (``GET /pulls/{n}/commits``) whose author or committer is
  an agent account or e-mail, or whose ``Co-authored-by:`` trailer names one
  (:class:`AgentConfig`: any ``[bot]`` login or ``Bot`` account, plus loopgate.yaml's
  ``agents.logins``/``emails`` and GitHub Copilot's coding agent by default). A rule's
  ``agentAuthored: {approvals: N}`` then asks for N approvals.
* **Requesters**: ``agents.requesters`` maps a bot to who asked it for its pull request (a
  login, or ``co-author``: the people its commits name, as GitHub documents for its coding
  agent); under ``preventSelfApproval`` they are authors too.
* **Fail closed**: when the pull requests or their commits cannot be read the gate waits
  (``TrackerError``), rather than applying the stricter count: the count alone would still
  let an unknown requester's approval count. A pull request longer than GitHub lists (250
  commits) counts as agent-authored, since the rest can never be read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.errors import ConfigError
from engine.graph.model import Graph
from engine.outcomes import PASS
from engine.settings import normalize_login

if TYPE_CHECKING:
    from engine.ports import PullCommits

__all__ = ["SELECTION_HOOK", "DEFAULT_AGENT_LOGINS", "DEFAULT_AGENT_EMAILS", "CO_AUTHOR",
           "MAX_PULL_COMMITS", "PullCommit", "AgentConfig", "Authorship", "dispatcher",
           "agent_authored", "co_authors", "noreply_login", "walk_signals",
           "commit_signals", "requesters_of", "read_authorship", "record", "report",
           "rest_login"]

SELECTION_HOOK = "classify-phase-selection"


def dispatcher(graph: Graph, state: Any) -> str:
    """The login (no ``@``, lower-cased) of the person who executed the phase selection,
    "" when the item was not dispatched yet (or the graph has no selection gate).

    Args:
        graph: the compiled graph.
        state: the item's :class:`~engine.state.ItemState`.
    """
    for node_id in _roles(graph).selections:
        decision = state.decision(node_id)
        by = getattr(decision, "by", "") if decision is not None else ""
        if not by:
            legacy = (getattr(state, "decisions", {}) or {}).get(node_id) or {}
            by = legacy.get("by", "") if isinstance(legacy, dict) else ""
        if by:
            return normalize_login(str(by))
    return ""


class _Roles(NamedTuple):
    """What :func:`dispatcher` and :func:`walk_signals` look for in a graph, found once per
    graph: ``check --all`` asks for every item, and walking every node of the graph for
    each cost 0.1 s of 10,000 items (issue 21 §3)."""

    graph: Graph
    agents: tuple[str, ...]  # the agent nodes' ids, in graph order
    selections: tuple[str, ...]  # the ids of the nodes whose exit runs SELECTION_HOOK
    agent_rank: dict[str, int]  # agent node id -> its place in ``agents``


#: id(graph) -> its roles (the graph is held, so a reused id is told apart).
_ROLES: dict[int, _Roles] = {}


def _roles(graph: Graph) -> _Roles:
    found = _ROLES.get(id(graph))
    if found is None or found.graph is not graph:
        if len(_ROLES) >= 16:  # a long-lived process that compiles graphs anew
            _ROLES.clear()
        ordered = graph.ordered()
        agents = tuple(n.id for n in ordered if n.actor == "agent")
        found = _Roles(graph, agents,
                       tuple(n.id for n in ordered
                             if SELECTION_HOOK in (h.name for h in n.exit)),
                       {node_id: i for i, node_id in enumerate(agents)})
        _ROLES[id(graph)] = found
    return found


def agent_authored(graph: Graph, state: Any, pull_authors: Iterable[str] = (),
                   config: AgentConfig | None = None) -> str:
    """Why the work is agent-authored (one line), "" when it is not.

    Args:
        graph: the compiled graph.
        state: the item's state.
        pull_authors: the delivering pull requests' authors (REST logins).
        config: ``agents`` (default: :class:`AgentConfig`'s defaults).
    """
    claimed = walk_signals(graph, state)
    if claimed:
        return claimed[0]
    agents = config or AgentConfig()
    bots = [a for a in pull_authors if agents.is_agent(a)]
    if bots:
        return "a delivering pull request was opened by " + ", ".join(f"@{b}" for b in bots)
    return ""


# -- agent authorship read from the pull requests (issue 24 §2) ------------------------------
#: Accounts whose pull requests and commits are an agent's, besides any ``[bot]`` login
#: and any account GitHub types ``Bot``. GitHub Copilot's coding agent: REST names it
#: ``Copilot`` (``GET /users/Copilot``: id 198982749, ``type: Bot``, ``html_url``
#: ``https://github.com/apps/copilot-swe-agent``), so the ``[bot]`` suffix alone misses it;
#: its App's bot is ``copilot-swe-agent[bot]``.
DEFAULT_AGENT_LOGINS = ("Copilot", "copilot-swe-agent[bot]")
#: Commit identities of agents: Copilot's coding agent commits as
#: ``copilot-swe-agent[bot] <198982749+Copilot@users.noreply.github.com>`` (GitHub's
#: documented no-reply form ``ID+LOGIN@users.noreply.github.com`` for the account above).
DEFAULT_AGENT_EMAILS = ("198982749+Copilot@users.noreply.github.com",)
#: ``agents.requesters`` value: the people a ``Co-authored-by`` trailer names on the bot's
#: commits (GitHub: the coding agent's "commits are co-authored by the developer who
#: assigned the issue or requested the change", docs ``about-coding-agent``).
CO_AUTHOR = "co-author"
#: GitHub's no-reply commit e-mail: ``ID+LOGIN@users.noreply.github.com`` (or the older
#: ``LOGIN@users.noreply.github.com``).
_NOREPLY = re.compile(r"^(?:\d+\+)?([A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?)"
                      r"@users\.noreply\.github\.com$", re.IGNORECASE)
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$")
_TRAILER = re.compile(r"^\s*co-authored-by\s*:\s*(.*?)\s*<\s*([^<>\s]+)\s*>\s*$",
                      re.IGNORECASE)
#: GitHub lists at most 250 commits of a pull request (REST "List commits on a pull
#: request"); a longer one cannot be read whole.
MAX_PULL_COMMITS = 250


@dataclass(frozen=True)
class PullCommit:
    """One commit of a pull request as ``GET /repos/{o}/{r}/pulls/{n}/commits`` gives it.

    Attributes:
        sha: the commit.
        message: the full message (trailers included).
        author_name / author_email: the git author (``commit.author``).
        committer_name / committer_email: the git committer (``commit.committer``).
        author_login / committer_login: the GitHub accounts GitHub linked to them
            (top-level ``author``/``committer``; "" when none).
        author_kind / committer_kind: those accounts' ``type`` (``User``, ``Bot``), "".
    """

    sha: str
    message: str = ""
    author_name: str = ""
    author_email: str = ""
    committer_name: str = ""
    committer_email: str = ""
    author_login: str = ""
    committer_login: str = ""
    author_kind: str = ""
    committer_kind: str = ""


def co_authors(message: str) -> list[tuple[str, str]]:
    """``(name, email)`` of every ``Co-authored-by: name <email>`` line of ``message``
    (GitHub's multiple-authors trailer; the key is read case-insensitively, as git reads
    trailer keys). Every line is read, not only the last paragraph: a squash merge keeps
    them mid-message, and reading more can only make a rule stricter."""
    out = []
    for line in (message or "").splitlines():
        found = _TRAILER.match(line)
        if found:
            out.append((found.group(1).strip(), found.group(2).strip()))
    return out


def noreply_login(email: str) -> str:
    """The login of a GitHub no-reply e-mail (lower-cased), "" for any other address."""
    found = _NOREPLY.match((email or "").strip())
    return found.group(1).lower() if found else ""


@dataclass(frozen=True)
class AgentConfig:
    """loopgate.yaml's ``agents`` (issue 24 §2): who is an agent, and who asked for a
    bot's work.

    Attributes:
        logins: agent accounts (lower-cased), the defaults included
            (:data:`DEFAULT_AGENT_LOGINS`); any ``[bot]`` login and any ``Bot`` account
            count as well.
        emails: commit e-mails of agents (lower-cased), the defaults included
            (:data:`DEFAULT_AGENT_EMAILS`); an author, committer or ``Co-authored-by``
            with one makes the work agent-authored.
        requesters: bot login (lower-cased) -> a login (that person asked for the bot's
            work) or :data:`CO_AUTHOR` (the people the bot's commits name as
            co-authors). The requester counts as the dispatcher under
            ``preventSelfApproval``.
    """

    logins: tuple[str, ...] = tuple(a.lower() for a in DEFAULT_AGENT_LOGINS)
    emails: tuple[str, ...] = tuple(e.lower() for e in DEFAULT_AGENT_EMAILS)
    requesters: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Any, path: str = "agents") -> AgentConfig:
        """Read ``agents: {logins: [...], emails: [...], requesters: {bot: person}}``;
        the configured lists extend the defaults.

        Raises:
            ConfigError: a bad value; the message names its key path
                (``agents.requesters.<bot>``).
        """
        if doc is None:
            return cls()
        if not isinstance(doc, Mapping):
            raise ConfigError(f"{path}: must be a mapping (logins, emails, requesters)")
        unknown = sorted(set(doc) - {"logins", "emails", "requesters"})
        if unknown:
            raise ConfigError(f"{path}.{unknown[0]}: unknown key (allowed: emails, logins, "
                              "requesters)")
        logins = _names(doc.get("logins"), f"{path}.logins", _login_problem, normalize_login)
        emails = _names(doc.get("emails"), f"{path}.emails", _email_problem,
                        lambda e: e.strip().lower())
        base = cls()
        config = cls(tuple(dict.fromkeys((*base.logins, *logins))),
                     tuple(dict.fromkeys((*base.emails, *emails))))
        requesters = _requesters(doc.get("requesters"), f"{path}.requesters", config)
        return replace(config, requesters=requesters)

    def is_agent(self, login: str, kind: str = "") -> bool:
        """True for an agent account: listed, a ``[bot]`` login, or typed ``Bot``."""
        name = normalize_login(login)
        return bool(name) and (name in self.logins or name.endswith("[bot]")
                               or kind == "Bot")

    def is_agent_email(self, email: str) -> bool:
        """True for a listed agent e-mail or a bot's no-reply address."""
        address = (email or "").strip().lower()
        return bool(address) and (address in self.emails
                                  or noreply_login(address).endswith("[bot]"))


def _names(value: Any, path: str, problem: Callable[[str], str],
           norm: Callable[[str], str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{path}: must be a list")
    out = []
    for i, item in enumerate(value):
        why = problem(item) if isinstance(item, str) else "must be a string"
        if why:
            raise ConfigError(f"{path}[{i}]: {why}")
        out.append(norm(item))
    return tuple(out)


def _login_problem(value: str) -> str:
    name = value.strip().lstrip("@")
    if "/" in name:
        return f"{value!r} is a team; an agent is an account (a login)"
    return "" if _LOGIN.match(name) else f"{value!r} is not a GitHub login"


def _email_problem(value: str) -> str:
    text = value.strip()
    return "" if re.match(r"^[^@\s<>]+@[^@\s<>]+$", text) else f"{value!r} is not an e-mail address"


def _requesters(value: Any, path: str, config: AgentConfig) -> dict[str, str]:
    """``agents.requesters`` read and checked (see :class:`AgentConfig`).

    Raises:
        ConfigError: not a mapping; a key that is no agent account; a value of a form
            loopgate does not know (not a string, a team, not a login nor ``co-author``).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must be a mapping of a bot login to its requester "
                          f"(a login, or {CO_AUTHOR})")
    out: dict[str, str] = {}
    for raw_bot, raw in value.items():
        bot = normalize_login(str(raw_bot))
        where = f"{path}.{raw_bot}"
        if not _LOGIN.match(bot):
            raise ConfigError(f"{where}: {raw_bot!r} is not a GitHub login")
        if not config.is_agent(bot):
            raise ConfigError(f"{where}: {raw_bot} is not an agent account (a [bot] login, "
                              "or one of agents.logins)")
        out[bot] = _requester_value(raw, where)
    return out


def _requester_value(raw: Any, where: str) -> str:
    if not isinstance(raw, str):
        raise ConfigError(f"{where}: unknown requester form {raw!r} (a login, or {CO_AUTHOR})")
    text = raw.strip()
    if text.lower() == CO_AUTHOR:
        return CO_AUTHOR
    name = text.lstrip("@")
    if "/" in name:
        raise ConfigError(f"{where}: {raw!r} is a team; a requester is one person (a login, "
                          f"or {CO_AUTHOR})")
    if not _LOGIN.match(name) or name.lower().endswith("[bot]"):
        raise ConfigError(f"{where}: unknown requester form {raw!r} (a person's login, or "
                          f"{CO_AUTHOR})")
    return name.lower()


@dataclass(frozen=True)
class Authorship:
    """Who dispatched the agent and why the work is agent-authored (issue 24 §2).

    Attributes:
        dispatcher: whose ``the-loop execute`` dispatched the walk ("" when none), else the
            first mapped requester.
        requesters: the people ``agents.requesters`` names for the bots whose pull
            requests deliver the item (each an author under ``preventSelfApproval``).
        signals: one line per reason the work is agent-authored, in the order found.
        executor: whose ``the-loop execute`` dispatched the walk ("" when none).
    """

    dispatcher: str = ""
    requesters: tuple[str, ...] = ()
    signals: tuple[str, ...] = ()
    executor: str = ""

    @property
    def authored(self) -> bool:
        """True when any signal says the work is agent-authored."""
        return bool(self.signals)

    @property
    def reason(self) -> str:
        """The signals as one line ("" when not agent-authored)."""
        return "; ".join(self.signals)

    def to_json(self) -> dict[str, Any]:
        """``{dispatcher: str|None, authored, signals: [...], requesters: [...]}``: the
        ``check`` report's ``agent`` (the details page renders it)."""
        return {"dispatcher": self.dispatcher or None, "authored": self.authored,
                "signals": list(self.signals), "requesters": list(self.requesters)}


def walk_signals(graph: Graph, state: Any) -> list[str]:
    """What the walk says: an agent node claimed complete (not forced, not skipped)."""
    visits = getattr(state, "visits", None)
    if not isinstance(visits, Mapping):  # a state-like object without its visits mapping
        visits = {node_id: state.history(node_id) for node_id in _roles(graph).agents}
    # Most agent nodes of an item were never entered: the item's few visited nodes are
    # looked up among the agents (then put in graph order), not every agent node tested.
    rank = _roles(graph).agent_rank
    claimed = sorted((node_id for node_id in visits
                      if node_id in rank and _claimed(visits[node_id])), key=rank.__getitem__)
    return ["an agent claimed " + ", ".join(claimed) + " complete"] if claimed else []


def _claimed(visits: Sequence[Any]) -> bool:
    return any(v.outcome == PASS and not v.forced for v in visits)


def commit_signals(pull: str, commits: Sequence[PullCommit], config: AgentConfig
                   ) -> list[str]:
    """Why ``commits`` of pull request ``pull`` (``owner/repo#N``) are an agent's: an
    author or committer that is an agent account or e-mail, a ``Co-authored-by`` naming
    an agent, and a pull request longer than GitHub lists (:data:`MAX_PULL_COMMITS`: the
    rest cannot be read, so the stricter rule applies)."""
    found: list[str] = []
    for c in commits:
        short = c.sha[:7]
        for role, login, kind, email in (
                ("author", c.author_login, c.author_kind, c.author_email),
                ("committer", c.committer_login, c.committer_kind, c.committer_email)):
            if config.is_agent(login, kind) or config.is_agent_email(email):
                who = f"@{login}" if login else f"<{email}>"
                found.append(f"commit {short} of {pull} has the agent {who} as its {role}")
        for name, email in co_authors(c.message):
            if config.is_agent_email(email) or config.is_agent(noreply_login(email)) or (
                    config.is_agent(name) and not noreply_login(email)):
                found.append(f"commit {short} of {pull} is co-authored by the agent "
                             f"{name} <{email}>")
    if len(commits) >= MAX_PULL_COMMITS:
        found.append(f"{pull} has {MAX_PULL_COMMITS} commits or more, more than GitHub "
                     "lists: the rest cannot be read, so it counts as agent-authored")
    return list(dict.fromkeys(found))


def requesters_of(bot: str, commits: Sequence[PullCommit], config: AgentConfig
                  ) -> tuple[list[str], list[str]]:
    """Who asked ``bot`` for its pull request, per ``agents.requesters``.

    Returns:
        ``(logins, notes)``: the requesters (lower-cased), and a note per co-author whose
        e-mail names no GitHub login (a no-reply address is needed to know the account).
        With ``co-author`` only the commits an agent authored are read (GitHub: the
        coding agent's commits are co-authored by whoever asked for the change).
    """
    form = config.requesters.get(normalize_login(bot), "")
    if not form:
        return [], []
    if form != CO_AUTHOR:
        return [form], []
    logins: list[str] = []
    notes: list[str] = []
    for c in commits:
        if not (config.is_agent(c.author_login, c.author_kind)
                or config.is_agent_email(c.author_email)):
            continue  # a person's own commit names their pair, not who asked the agent
        for name, email in co_authors(c.message):
            login = noreply_login(email)
            if config.is_agent_email(email) or (login and config.is_agent(login)):
                continue
            if login:
                logins.append(login)
            else:
                notes.append(f"co-author {name} <{email}> names no GitHub login")
    return list(dict.fromkeys(logins)), list(dict.fromkeys(notes))


def rest_login(login: str, kind: str, config: AgentConfig) -> str:
    """``login`` as REST spells it: GraphQL names an App's bot without the ``[bot]`` REST
    adds (platform-facts identity notes), so a ``Bot`` login without it gains it, unless
    the account is known under that name (``agents.logins``/``requesters``: GitHub's
    ``Copilot`` is ``Copilot`` in both)."""
    name = (login or "").strip()
    bare = normalize_login(name)
    if kind != "Bot" or not bare or bare.endswith("[bot]"):
        return name
    if bare in config.logins or bare in config.requesters:
        return name
    return f"{name}[bot]"


def read_authorship(tracker: Any, ref: Any, graph: Graph, state: Any,
                    config: AgentConfig | None = None) -> Authorship:
    """Who dispatched the agent and why the work is agent-authored, from the walk and
    from the delivering pull requests: their authors, and their commits
    (``tracker.pull_commits(pull, head_sha)``, cached per head by the GitHub tracker).

    Args:
        tracker: the tracker port (``delivering_pull_requests``, ``pull_commits``).
        ref: the work item (:class:`~engine.refs.WorkItemRef`).
        graph: the compiled graph.
        state: the item's state.
        config: ``agents`` (default: its defaults).

    Raises:
        TrackerError: the pull requests or a pull request's commits could not be read, or
            the tracker cannot read commits. Fail closed by waiting: without the commits
            neither the agent signals nor the requester a mapping names are known, and a
            stricter count alone would still let that requester's approval count.
    """
    from engine.refs import WorkItemRef

    agents = config or AgentConfig()
    signals = walk_signals(graph, state)
    requesters: list[str] = []
    pulls = list(tracker.delivering_pull_requests(ref))
    for pr in pulls:
        name = f"{ref.owner}/{ref.repo}#{pr.number}"
        kind = getattr(pr, "author_kind", "")
        author = rest_login(pr.author, kind, agents)
        if agents.is_agent(author, kind):
            signals.append(f"{name} was opened by the agent @{author}")
        commits = list(_commits_reader(tracker).pull_commits(
            WorkItemRef(ref.owner, ref.repo, pr.number), pr.head_sha))
        signals += commit_signals(name, commits, agents)
        if author and agents.is_agent(author, kind):
            found, notes = requesters_of(author, commits, agents)
            requesters += found
            signals += [f"@{who} asked @{author} for {name} (agents.requesters)"
                        for who in found]
            signals += [f"{name}: {n}" for n in notes]
    executor = dispatcher(graph, state)
    asked = tuple(r for r in dict.fromkeys(requesters) if r != executor)
    return Authorship(executor or (asked[0] if asked else ""), asked,
                      tuple(dict.fromkeys(signals)), executor)


def _commits_reader(tracker: Any) -> PullCommits:
    """``tracker`` as the :class:`~engine.ports.PullCommits` port it declares
    (``capabilities.pull_commits``, issue 20 §2).

    Raises:
        TrackerError: the tracker cannot read a pull request's commits (the gate waits).
    """
    from engine.ports import TrackerError, pull_commits

    reader = pull_commits(tracker)
    if reader is None:
        raise TrackerError("this tracker cannot read a pull request's commits")
    return reader


def record(people: Any) -> dict[str, Any]:
    """``surface.agent`` as a gate with ``agentAuthored`` last read it (``people``: the
    :class:`~engine.approvals.People` it decided with): ``{dispatcher, requesters,
    signals}`` (no time: an idle re-evaluation that found the same leaves the state as
    it was)."""
    return {"dispatcher": people.dispatcher, "requesters": list(people.requesters),
            "signals": list(people.agent_signals)}


def report(graph: Graph, state: Any) -> dict[str, Any]:
    """The ``check`` report's ``agent`` (issue 24 §2; the details page renders it):
    ``{dispatcher: str|None, authored: bool, signals: [str, ...]}``. The walk's own
    signals (an agent node claimed) are read now; what the pull requests said is the
    latest a gate with ``agentAuthored`` recorded (``surface.agent``), since ``check``
    reads no tracker. The dispatcher is whose ``the-loop execute`` dispatched the walk,
    else a requester ``agents.requesters`` named."""
    stored = state.surface.get("agent")
    stored = stored if isinstance(stored, Mapping) else {}
    signals = walk_signals(graph, state)
    signals += [str(s) for s in stored.get("signals") or () if str(s) not in signals]
    asked = [str(r) for r in stored.get("requesters") or () if r]
    who = dispatcher(graph, state) or (asked[0] if asked else "")
    return {"dispatcher": who or None, "authored": bool(signals), "signals": signals}
