"""The one module that wires engine + bridges + Slack from a :class:`Config`.

Everything that chooses an implementation for a port lives here, so the CLI, the server
and the tests build the same object graph.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.config import Config
from engine.graph.model import Graph
from engine.identity import Actor
from engine.ports import ArtifactStore, Notifier, Ports, Tracker
from engine.refs import WorkItemRef
from engine.settings import EngineSettings

if TYPE_CHECKING:  # imported lazily at run time: an offline CLI never loads the bridge
    from bridges.github.app import TokenSource
    from bridges.github.client import GuardFactory
    from bridges.github.tracker import GitHubTracker
    from engine.runtime import Runtime
    from engine.store.base import DatabaseStore

__all__ = ["Services", "load_graph", "verify_github"]


def load_graph(config: Config) -> Graph:
    """The configured graph: a shipped graph name, or a path to a YAML file.

    Raises:
        GraphConfigError: the graph does not compile (the message names the offender).
    """
    from engine.graph.compiler import compile_file, shipped_graph

    loop = config.data["loop"]
    if loop.endswith((".yaml", ".yml")) or os.sep in loop:
        base = config.path.parent if config.path else Path.cwd()
        return compile_file(base / loop)
    return shipped_graph(loop)


def _credentials(config: Config) -> Any:
    """The GitHub token source (a token, or a GitHub App's installations); None offline."""
    if not config.has("github"):
        return None
    from bridges.github.app import token_source_from_config
    from bridges.github.tracker import token_from_env

    return token_source_from_config(config.section("github"), token_from_env)


def verify_github(config: Config, credentials: Any = None) -> list[str]:
    """Check the GitHub App settings against GitHub before anything is polled: the App's
    JWT (``github.app.appId`` and its key), the installation of every configured
    repository, one installation token each. Token mode and offline: nothing to check.

    Args:
        config: the validated configuration.
        credentials: the token source already built for this configuration (serve), or
            None to build one (``config check``).

    Returns:
        One line per installation (``installation N: owner/repo, …``); [] in token mode.

    Raises:
        ConfigError: naming the setting to fix (``github.app.appId``,
            ``github.app.privateKeyEnv``, ``github.app.installationId``, ``github.repos``).
    """
    if not config.has("github") or not config.section("github").get("app"):
        return []
    from bridges.github.app import AppInstallations

    source = credentials if isinstance(credentials, AppInstallations) else _credentials(config)
    return source.verify()


def check_gates(config: Config, graph: Graph) -> dict[str, tuple[tuple[str, str], ...]]:
    """Check loopgate.yaml's ``gates`` and ``mergeGate`` against ``graph`` (no network).

    Returns:
        The key path of every rule naming teams -> its ``(org, team)`` pairs
        (``gates.<node>.approvers`` or ``loop: nodes[<node>].approval.approvers``).

    Raises:
        ConfigError: listing every problem, one a line, each naming its key path: a rule
            that does not read, a rule for a node that is not a human gate, more
            ``approvals`` than people who may approve (no team named), a
            ``mergeGate.after`` that is no node, a ``mergeGate.vouching`` entry that is no
            human gate.
    """
    from engine.approvals import ApprovalRule, rule_teams
    from engine.errors import ConfigError

    problems: list[str] = []
    rules: dict[str, ApprovalRule] = {}
    for node_id, doc in (config.data.get("gates") or {}).items():
        try:
            rule = ApprovalRule.from_json(doc, f"gates.{node_id}")
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        rules[str(node_id)] = rule
        problems += _rule_problems(config, graph, str(node_id), rule)
    after = str(config.section("mergeGate").get("after") or "human-approval")
    if not graph.has_node(after):
        from bot.config_errors import did_you_mean

        problems.append(f"mergeGate.after: {after!r} is not a node of {graph.name}"
                        + did_you_mean(after, [n.id for n in graph.ordered()]))
    problems += _vouching_problems(config, graph)
    try:  # issue 24 §2: an unknown agent mapping is a config error naming its path
        config.agent_config()
    except ConfigError as exc:
        problems.append(str(exc))
    if problems:
        raise ConfigError("\n".join(problems))
    teams = {f"gates.{n}.approvers": r.teams() for n, r in rules.items() if r.teams()}
    for node in graph.ordered():
        named = rule_teams(node.approval.get("approvers") or ()) if node.approval else ()
        if named and node.id not in rules:
            teams[f"loop: nodes[{node.id}].approval.approvers"] = named
    return teams


def _vouching_problems(config: Config, graph: Graph) -> list[str]:
    # Issue 19 §3: the gates whose pass covers a pull request's head must be human gates
    # (a person's decision is what vouches), and the merge node among them when it is one.
    vouching = [str(n) for n in config.section("mergeGate").get("vouching") or ()]
    problems = []
    for i, node_id in enumerate(vouching):
        known = graph.has_node(node_id)
        if not known or graph.node(node_id).actor != "human" or graph.node(node_id).terminal:
            problems.append(f"mergeGate.vouching[{i}]: {graph.name} has no human gate "
                            f"{node_id!r}")
    after = str(config.section("mergeGate").get("after") or "human-approval")
    gate = graph.has_node(after) and graph.node(after).actor == "human" \
        and not graph.node(after).terminal
    if vouching and gate and after not in vouching:
        problems.append(f"mergeGate.vouching: must include the merge node {after!r} "
                        "(mergeGate.after), whose pass turns the check success")
    return problems


def _rule_problems(config: Config, graph: Graph, node_id: str, rule: Any) -> list[str]:
    from engine.approvals import rule_problem

    if not graph.has_node(node_id) or not graph.node(node_id).is_human:
        from bot.config_errors import did_you_mean  # config keys' rule (issue 23 §3)

        gates = [n.id for n in graph.ordered() if n.is_human]
        return [f"gates.{node_id}: {graph.name} has no human gate {node_id!r}"
                + did_you_mean(node_id, gates)]
    problem = rule_problem(rule, [h.name for h in graph.node(node_id).exit])
    if problem:
        return [f"gates.{node_id}: {problem}"]
    if rule.codeowners:
        return _codeowners_problems(config, node_id)
    if rule.teams():
        return []  # a team's size is GitHub's to say
    people = set(rule.logins(config.data.get("authorizedUsers") or ()))
    source = f"gates.{node_id}.approvers" if rule.approvers else "authorizedUsers"
    needed = max(rule.approvals, rule.agent_approvals)  # issue 24 §2: agentAuthored
    key = "approvals" if needed == rule.approvals else "agentAuthored.approvals"
    if people and needed > len(people):
        # Issue 11 §2: such a gate could never pass.
        return [f"gates.{node_id}.{key}: {needed} approvals needed but only "
                f"{len(people)} people may approve ({source})"]
    return []


def _codeowners_problems(config: Config, node_id: str) -> list[str]:
    """Issue 24 §1: code owners are those of a pull request's files, so the entry belongs
    to a gate that covers one, and needs the GitHub bridge (the offline thread has none)."""
    after = str(config.section("mergeGate").get("after") or "human-approval")
    vouching = config.section("mergeGate").get("vouching") or ()
    covering = {"code-quiz", "human-approval", after, *vouching}
    if node_id not in covering:
        return [f"gates.{node_id}.approvers: codeowners applies at a gate that covers a pull "
                f"request ({', '.join(sorted(covering))}), not at {node_id}"]
    if not config.has("github"):
        return [f"gates.{node_id}.approvers: codeowners needs the GitHub bridge (a github "
                "section): CODEOWNERS and the changed files are read there"]
    return []  # how many owners there are is GitHub's to say


def verify_codeowners(config: Config, tracker: Any = None) -> tuple[list[str], list[str]]:
    """Read every watched repository's CODEOWNERS when a gate rule names ``codeowners``
    (issue 24 §1): the lines GitHub would reject are listed with their line numbers, as
    warnings (GitHub skips them; so does loopgate).

    Args:
        config: the validated configuration.
        tracker: the GitHub tracker already built, or None to build one.

    Returns:
        ``(ok lines, warnings)``: ``CODEOWNERS acme/widgets: .github/CODEOWNERS (12 rules)``
        per repository; a warning per skipped line (``acme/widgets .github/CODEOWNERS:3:
        reason: text``), per ignored e-mail owner, and per repository without the file.

    Raises:
        ConfigError: a CODEOWNERS file could not be read (the gate would wait).
    """
    from engine.codeowners import LOOKUP, parse
    from engine.errors import ConfigError
    from engine.ports import TrackerError

    rules = config.gate_rules()
    if not config.has("github") or not any(r.codeowners for r in rules.values()):
        return [], []
    if tracker is None:
        from bridges.github.tracker import GitHubTracker

        tracker = GitHubTracker.from_config(config)
    ok: list[str] = []
    warnings: list[str] = []
    for full in config.section("github").get("repos") or ():
        owner, _, repo = str(full).partition("/")
        try:
            found = tracker.codeowners_file(owner, repo)
        except TrackerError as exc:
            raise ConfigError(f"github.repos: CODEOWNERS of {full} could not be read "
                              f"({exc}); a codeowners gate would wait") from None
        if found is None:
            warnings.append(f"{full}: no CODEOWNERS file ({', '.join(LOOKUP)}): a "
                            "codeowners approver entry names nobody there")
            continue
        parsed = parse(found[1], found[0])
        ok.append(f"CODEOWNERS {full}: {found[0]} ({len(parsed.rules)} rules)")
        warnings += [f"{full} {found[0]}:{e.line}: {e.reason} (GitHub skips this line): "
                     f"{e.text}" for e in parsed.errors]
        warnings += [f"{full} {found[0]}: {note}" for note in parsed.notes]
    return ok, warnings


def verify_teams(config: Config, graph: Graph, tracker: Any = None) -> list[str]:
    """Ask GitHub for every team the approval rules name (issue 11, bad input): an
    unknown team, or one loopgate's credentials cannot read, is a configuration error.

    Args:
        config: the validated configuration.
        graph: the compiled graph (its nodes' ``approval`` rules).
        tracker: the GitHub tracker already built (serve), or None to build one.

    Returns:
        One ``team org/slug`` line per team checked ([] offline or without teams).

    Raises:
        ConfigError: naming the key path and the team.
    """
    from engine.errors import ConfigError

    teams = check_gates(config, graph)
    if not teams or not config.has("github"):
        if teams and not config.has("github"):
            path = next(iter(teams))
            raise ConfigError(f"{path}: teams need the GitHub bridge (a github section)")
        return []
    if tracker is None:
        from bridges.github.tracker import GitHubTracker

        tracker = GitHubTracker.from_config(config)
    lines = []
    for path, pairs in teams.items():
        for org, team in pairs:
            problem = tracker.check_team(org, team)
            if problem:
                raise ConfigError(f"{path}: {problem}")
            lines.append(f"team {org}/{team}")
    return lines


def verify_agents(config: Config, tracker: Any = None) -> list[str]:
    """Ask GitHub for every account ``agents.requesters`` names, the bots and the people
    (issue 24 §2, bad input): a mapping naming an account GitHub does not have could never
    apply, so the person who asked could approve their own bot's work.

    Returns:
        One ``account <login>`` line per account checked ([] offline or without a mapping).

    Raises:
        ConfigError: naming the key path (``agents.requesters.<bot>``) and the account.
    """
    from engine.dispatch import CO_AUTHOR
    from engine.errors import ConfigError

    agents = config.agent_config()
    if not agents.requesters or not config.has("github"):
        return []
    if tracker is None:
        from bridges.github.tracker import GitHubTracker

        tracker = GitHubTracker.from_config(config)
    raw = {str(k).strip().lstrip("@").lower(): str(k)
           for k in (config.data.get("agents") or {}).get("requesters") or {}}
    lines = []
    for bot, requester in agents.requesters.items():
        for login in (bot, requester):
            if login == CO_AUTHOR:
                continue
            problem = tracker.check_user(login)
            if problem:
                raise ConfigError(f"agents.requesters.{raw.get(bot, bot)}: {problem}")
            lines.append(f"account {login}")
    return list(dict.fromkeys(lines))


def _tracker_side(config: Config, store: DatabaseStore, credentials: Any
                  ) -> tuple[Tracker, ArtifactStore, Actor, GitHubTracker | None]:
    """The tracker, the artifact store, the bot actor and the GitHub tracker (None
    offline), chosen once by the ``github`` section (so nothing later probes the tracker
    for what it is).

    Gates trust only comments by the bot actor (a marker alone can be forged): kind and
    id where GitHub gives them (a User named like the App's slug is not the App's bot).
    """
    if not config.has("github"):
        from engine.local.sqlite_tracker import LocalTracker

        local = LocalTracker(store)
        return local, _checkout(config), Actor.from_login(local.bot_login), None
    from bridges.github.contents_artifacts import ContentsArtifactStore
    from bridges.github.tracker import GitHubTracker

    github = GitHubTracker.from_config(config, credentials, guards=_rate_guards(store))
    artifacts = (_checkout(config) if config.workspace is not None
                 else ContentsArtifactStore.from_config(config, github))
    section = config.section("github")
    token_env = "" if section.get("app") else str(section.get("tokenEnv") or "GITHUB_TOKEN")
    bot = github.bot_identity(section.get("botLogin") or "", cache=store, token_env=token_env)
    return github, artifacts, bot, github


def _rate_guards(store: DatabaseStore) -> GuardFactory:
    # Replicas sharing PostgreSQL share the GitHub rate limits (issue 15 §3), given to
    # the clients when they are built (issue 20 §2).
    if not store.capabilities.shared:
        from bridges.github.client import RateGuard

        return RateGuard
    from bridges.postgres.replicas import rate_guards

    return rate_guards(store)


def _checkout(config: Config) -> ArtifactStore:
    from engine.local.checkout import CheckoutArtifactStore

    return CheckoutArtifactStore(config.workspace or Path.cwd(), config.data["specDir"])


def _notifier(config: Config, store: DatabaseStore) -> Notifier | None:
    if config.has("slack"):
        from bot.slack.notifier import OutboxNotifier

        return OutboxNotifier(store)
    return None


@dataclass
class Services:
    """The wired application.

    Attributes:
        config: the validated configuration.
        settings: the engine settings derived from it.
        graph: the compiled graph.
        store: the store the backend opened (SQLite or PostgreSQL, ``bot.database``),
            typed by what it declares (:class:`~engine.store.base.DatabaseStore`).
        ports: tracker, artifact store, notifier, clock.
        runtime: the engine runtime over all of the above.
        credentials: the GitHub token source (``bridges.github.app``), None offline.
        github: the GitHub tracker :attr:`ports` holds, typed as such for the rooms that
            need more than the Tracker port (the poller, serve's checks); None offline.
    """

    config: Config
    settings: EngineSettings
    graph: Graph
    store: DatabaseStore
    ports: Ports
    runtime: Runtime
    credentials: TokenSource | None = None
    github: GitHubTracker | None = None

    @classmethod
    def build(cls, config: Config, *, db_path: str | None = None) -> Services:
        """Build every service from ``config``.

        Args:
            config: the validated configuration.
            db_path: ``--db`` (overrides ``$LOOPGATE_DB`` and the config).

        Raises:
            LoopgateError: a graph, config or credential problem (message names it).
        """
        from bot.database import open_store
        from engine.runtime import Runtime

        graph = load_graph(config)
        store = open_store(config, db_path)  # SQLite, or PostgreSQL for a URL (issue 15)
        credentials = _credentials(config)
        tracker, artifacts, bot, github = _tracker_side(config, store, credentials)
        ports = Ports(tracker=tracker, artifacts=artifacts)
        notifier = _notifier(config, store)
        if notifier is not None:
            ports.notifier = notifier
        settings = replace(config.engine_settings(), bot_login=bot.login, bot_kind=bot.kind,
                           bot_id=bot.id)
        # Effects are carried out right after each commit (the runtime's default) unless
        # a worker takes over (serve: :meth:`Services.perform_with`).
        runtime = Runtime(graph, store, ports, settings)
        return cls(config, settings, graph, store, ports, runtime, credentials, github)

    def perform_with(self, wake: Callable[[WorkItemRef], None]) -> None:
        """Hand effects to a background performer: after each commit the runtime calls
        ``wake`` instead of carrying the item's effects out itself (``loopgate serve``'s
        GitHub worker, which paces writes as GitHub asks)."""
        self.runtime.on_commit = wake

    def close(self) -> None:
        """Close database connections."""
        self.store.close()
