"""Issue 12 §5: ``slack.channels`` routes a repository (or ``owner/*``) to a channel, with
``slack.channel`` as the default."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import validate_mapping
from bot.slack.routing import channel_for
from bot.slack.slack_tables import load_thread
from engine.errors import ConfigError
from engine.refs import WorkItemRef
from tests.bot.conftest import CHANNEL, IDENTITIES, build_world, slack_config
from tests.fakes.slack import FakeSlack

ROUTES = {"acme/widgets": "C0WIDGETS", "Acme/*": "C0ACME", "other/tools": "C0TOOLS"}


@pytest.mark.parametrize(("ref", "channel"), [
    ("acme/widgets#7", "C0WIDGETS"),   # an exact repository wins over owner/*
    ("ACME/Gadgets#1", "C0ACME"),      # owner/*, case-insensitive
    ("other/tools#2", "C0TOOLS"),
    ("other/else#3", CHANNEL),         # anything else: the default
])
def test_channel_for_prefers_repo_then_owner_then_default(ref: str, channel: str) -> None:
    slack = {"channel": CHANNEL, "channels": ROUTES}

    assert channel_for(slack, WorkItemRef.parse(ref)) == channel


def test_no_route_and_no_default_is_empty() -> None:
    assert channel_for({"channels": {"x/y": "C1"}}, WorkItemRef.parse("a/b#1")) == ""


def test_the_card_of_a_routed_repository_goes_to_its_channel(
        tmp_path: Path, fake_slack: FakeSlack, slack_env: None) -> None:
    config = slack_config(fake_slack, slack={
        "channel": CHANNEL, "apiUrl": fake_slack.base_url, "identities": dict(IDENTITIES),
        "channels": {"acme/*": "C0ACME"}})
    world = build_world(tmp_path, fake_slack, config)
    try:
        world.start()
        world.drain()

        [card] = fake_slack.calls_to("chat.postMessage")
        assert card.args["channel"] == "C0ACME"
        assert load_thread(world.store, world.state().ref)["channel"] == "C0ACME"
    finally:
        world.services.close()


def test_a_bad_route_key_is_a_config_error_naming_the_key_path() -> None:
    with pytest.raises(ConfigError) as caught:
        validate_mapping({"slack": {"channels": {"not-a-repo": "C1"}}}, "loopgate.yaml")

    assert "slack.channels" in str(caught.value)
