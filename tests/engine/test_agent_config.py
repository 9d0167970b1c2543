"""Issue 24 §2: ``agents`` in loopgate.yaml (who is an agent, who asked a bot for its
work) and the pure readings of a pull request's commits. Bad input: an unknown mapping is
a config error naming its key path, in ``config check`` too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from bot.cli import cli
from engine.dispatch import (
    CO_AUTHOR,
    MAX_PULL_COMMITS,
    AgentConfig,
    PullCommit,
    co_authors,
    commit_signals,
    noreply_login,
    requesters_of,
)
from engine.errors import ConfigError


def test_the_defaults_know_githubs_coding_agent() -> None:
    agents = AgentConfig()
    assert agents.is_agent("Copilot")  # REST login, no [bot] suffix
    assert agents.is_agent("copilot-swe-agent[bot]")
    assert agents.is_agent("renovate[bot]") and agents.is_agent("someone", "Bot")
    assert not agents.is_agent("alice")
    assert agents.is_agent_email("198982749+Copilot@users.noreply.github.com")
    assert agents.is_agent_email("41898282+github-actions[bot]@users.noreply.github.com")
    assert not agents.is_agent_email("7+bob@users.noreply.github.com")
    assert not agents.is_agent_email("noreply@github.com")  # GitHub's web-flow committer


def test_configured_lists_extend_the_defaults_and_map_requesters() -> None:
    agents = AgentConfig.from_json({
        "logins": ["@Acme-Agent"], "emails": ["Agent@CI.example"],
        "requesters": {"acme-agent": "@Carol", "Copilot": "co-author"}})
    assert agents.logins == ("copilot", "copilot-swe-agent[bot]", "acme-agent")
    assert agents.emails[-1] == "agent@ci.example"
    assert agents.requesters == {"acme-agent": "carol", "copilot": CO_AUTHOR}
    assert AgentConfig.from_json(None) == AgentConfig()


@pytest.mark.parametrize(("doc", "message"), [
    ({"requesters": {"alice": "bob"}},
     "agents.requesters.alice: alice is not an agent account (a [bot] login, or one of "
     "agents.logins)"),
    ({"requesters": {"acme-agent[bot]": ["carol"]}},
     "agents.requesters.acme-agent[bot]: unknown requester form ['carol'] (a login, or "
     "co-author)"),
    ({"requesters": {"acme-agent[bot]": {"assigner": True}}},
     "agents.requesters.acme-agent[bot]: unknown requester form {'assigner': True} (a login, "
     "or co-author)"),
    ({"requesters": {"acme-agent[bot]": "acme/web"}},
     "agents.requesters.acme-agent[bot]: 'acme/web' is a team; a requester is one person (a "
     "login, or co-author)"),
    ({"requesters": {"acme-agent[bot]": "the assignee"}},
     "agents.requesters.acme-agent[bot]: unknown requester form 'the assignee' (a person's "
     "login, or co-author)"),
    ({"requesters": {"acme-agent[bot]": "other[bot]"}},
     "agents.requesters.acme-agent[bot]: unknown requester form 'other[bot]' (a person's "
     "login, or co-author)"),
    ({"requesters": ["acme-agent[bot]"]},
     "agents.requesters: must be a mapping of a bot login to its requester (a login, or "
     "co-author)"),
    ({"logins": ["acme/agents"]},
     "agents.logins[0]: 'acme/agents' is a team; an agent is an account (a login)"),
    ({"logins": "copilot"}, "agents.logins: must be a list"),
    ({"emails": ["not an address"]},
     "agents.emails[0]: 'not an address' is not an e-mail address"),
    ({"bots": []}, "agents.bots: unknown key (allowed: emails, logins, requesters)"),
    ("copilot", "agents: must be a mapping (logins, emails, requesters)"),
])
def test_an_unknown_agent_mapping_is_a_config_error(doc: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        AgentConfig.from_json(doc)
    assert str(caught.value) == message


def test_config_check_names_the_bad_agent_path(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOOPGATE_DB", "LOOPGATE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "loopgate.yaml").write_text(yaml.safe_dump({
        "authorizedUsers": ["alice", "bob"],
        "agents": {"requesters": {"bob": "alice"}}}))
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "db.sqlite"), "--config",
                                      str(tmp_path / "loopgate.yaml"), "config", "check"])
    assert result.exit_code == 2
    assert ("agents.requesters.bob: bob is not an agent account (a [bot] login, or one of "
            "agents.logins)") in result.output


# -- commits ----------------------------------------------------------------------------------
def test_co_authored_by_trailers_are_read_as_github_writes_them() -> None:
    message = ("Fix it\n\n---------\n\nCo-authored-by: copilot-swe-agent[bot] "
               "<198982749+Copilot@users.noreply.github.com>\nco-authored-by:  Bob Smith "
               "<7+bob@users.noreply.github.com> \nSigned-off-by: Carol <carol@example.com>")
    assert co_authors(message) == [
        ("copilot-swe-agent[bot]", "198982749+Copilot@users.noreply.github.com"),
        ("Bob Smith", "7+bob@users.noreply.github.com")]
    assert co_authors("Co-authored-by: nobody") == []
    assert noreply_login("7+Bob@users.noreply.github.com") == "bob"
    assert noreply_login("bob@users.noreply.github.com") == "bob"
    assert noreply_login("bob@example.com") == ""


def test_commit_signals_name_each_agent_identity() -> None:
    agents = AgentConfig.from_json({"emails": ["agent@ci.example"]})
    commits = [
        PullCommit("a" * 40, "one", "Dave", "dave@example.com", "CI", "agent@ci.example",
                   "dave", "", "User", ""),
        PullCommit("b" * 40, "two", "Bot", "x@example.com", author_login="helper",
                   author_kind="Bot"),
        PullCommit("c" * 40, "three\n\nCo-authored-by: Copilot "
                   "<198982749+Copilot@users.noreply.github.com>", "Dave", "dave@example.com"),
        PullCommit("d" * 40, "four", "Dave", "dave@example.com", "GitHub",
                   "noreply@github.com", "dave", "web-flow", "User", "User"),
    ]
    assert commit_signals("acme/widgets#8", commits, agents) == [
        "commit aaaaaaa of acme/widgets#8 has the agent <agent@ci.example> as its committer",
        "commit bbbbbbb of acme/widgets#8 has the agent @helper as its author",
        "commit ccccccc of acme/widgets#8 is co-authored by the agent Copilot "
        "<198982749+Copilot@users.noreply.github.com>"]


def test_a_pull_request_longer_than_github_lists_counts_as_agent_authored() -> None:
    commits = [PullCommit(f"{i:040x}", "c", "Dave", "dave@example.com")
               for i in range(MAX_PULL_COMMITS)]
    assert commit_signals("acme/widgets#8", commits, AgentConfig()) == [
        "acme/widgets#8 has 250 commits or more, more than GitHub lists: the rest cannot be "
        "read, so it counts as agent-authored"]


def test_co_author_requesters_are_the_humans_on_the_bots_commits() -> None:
    agents = AgentConfig.from_json({"requesters": {"Copilot": "co-author",
                                                   "acme-agent[bot]": "carol"}})
    commits = [PullCommit("a" * 40, "x\n\nCo-authored-by: Bob <7+bob@users.noreply.github.com>"
                          "\nCo-authored-by: Copilot <198982749+Copilot@users.noreply.github.com>"
                          "\nCo-authored-by: Eve <eve@example.com>", author_login="Copilot",
                          author_kind="Bot"),
               PullCommit("b" * 40, "y\n\nCo-authored-by: Pat <9+pat@users.noreply.github.com>",
                          author_name="Dave", author_email="dave@example.com")]
    assert requesters_of("Copilot", commits, agents) == (
        ["bob"], ["co-author Eve <eve@example.com> names no GitHub login"])  # not dave's pair
    assert requesters_of("acme-agent[bot]", commits, agents) == (["carol"], [])
    assert requesters_of("other[bot]", commits, agents) == ([], [])


def test_a_bots_graphql_login_is_read_as_rest_spells_it() -> None:
    from engine.dispatch import rest_login

    agents = AgentConfig.from_json({"requesters": {"acme-agent[bot]": "carol"}})
    assert rest_login("acme-agent", "Bot", agents) == "acme-agent[bot]"  # GraphQL's spelling
    assert rest_login("acme-agent[bot]", "Bot", agents) == "acme-agent[bot]"
    assert rest_login("Copilot", "Bot", agents) == "Copilot"  # the same in REST and GraphQL
    assert rest_login("dave", "User", agents) == "dave"
    assert rest_login("", "", agents) == ""


def test_checks_text_lines_for_the_agent() -> None:
    from engine.report import agent_lines

    assert agent_lines({"dispatcher": "alice", "authored": False, "signals": []}) == []
    assert agent_lines({"dispatcher": "alice", "authored": True,
                        "signals": ["an agent claimed design complete"]}) == [
        "agent-authored: an agent claimed design complete", "dispatched by @alice"]
    assert agent_lines({}) == []
