"""manifest.json: valid against Slack's v1 manifest schema (loaded offline), and declaring
exactly the scopes the code's Web API calls and event subscriptions need."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.slack.listeners.commands.replies import USAGE_HINT

#: Web API method (as the code calls it) -> the bot scope it needs.
METHOD_SCOPES = {
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.postEphemeral": "chat:write",
    "conversations.open": "im:write",
    "users.info": "users:read",
    "views.open": None,  # modals need no scope (a trigger_id is the permission)
    "views.publish": None,  # the App Home tab needs no scope
    "auth.test": None,  # no scope (Bolt calls it once to learn the bot's identity)
}
#: Bolt helpers that call a Web API method.
HELPER_METHODS = {"say": "chat.postMessage"}
#: Subscribed events -> their scope.
EVENT_SCOPES = {"app_mention": "app_mentions:read",
                "app_home_opened": None}  # the App Home tab's event needs no scope
_CALL = re.compile(r"\b(?:client\.|_call\(\")(?P<name>(?:chat|conversations|users|views|"
                   r"reactions|apps|auth)_[A-Za-z]+)")
_HELPER = re.compile(r"\b(?P<name>say)\(")


@pytest.fixture(scope="module")
def manifest(repo_root: Path) -> dict[str, Any]:
    return json.loads((repo_root / "manifest.json").read_text("utf-8"))


def _schema(fixtures_dir: Path) -> dict[str, Any]:
    # The dispatcher schema's $refs are URLs; the versioned file is self-contained.
    return json.loads((fixtures_dir / "slack/manifest/manifest.schema.1.0.0.json").read_text())


def _methods_called(repo_root: Path) -> set[str]:
    methods: set[str] = set()
    for path in (repo_root / "bot").rglob("*.py"):
        text = path.read_text("utf-8")
        methods |= {m["name"].replace("_", ".", 1) for m in _CALL.finditer(text)}
        methods |= {HELPER_METHODS[m["name"]] for m in _HELPER.finditer(text)}
    return methods


def test_manifest_is_valid_against_the_v1_schema(manifest: dict[str, Any],
                                                  fixtures_dir: Path) -> None:
    validator = jsonschema.Draft7Validator(_schema(fixtures_dir))

    assert [e.message for e in validator.iter_errors(manifest)] == []


def test_the_schema_rejects_the_known_invalid_manifest(fixtures_dir: Path) -> None:
    invalid = json.loads((fixtures_dir / "slack/manifest/manifest.v1.invalid.json").read_text())

    assert not jsonschema.Draft7Validator(_schema(fixtures_dir)).is_valid(invalid)


def test_manifest_declares_the_bot_the_command_interactivity_and_socket_mode(
    manifest: dict[str, Any],
) -> None:
    features, settings = manifest["features"], manifest["settings"]
    assert features["bot_user"]["display_name"] == "loopgate"
    [command] = features["slash_commands"]
    assert command["command"] == "/loop"
    assert command["usage_hint"] == USAGE_HINT
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
    assert settings["event_subscriptions"]["bot_events"] == list(EVENT_SCOPES)


def test_manifest_adds_the_home_tab_and_no_scope_for_the_new_features(
    manifest: dict[str, Any],
) -> None:
    # Issue 12 §7: the home tab, app_home_opened and interactivity (buttons, modals) need
    # no scope beyond what loopgate already had (views.open/views.publish take none).
    assert manifest["features"]["app_home"] == {
        "home_tab_enabled": True, "messages_tab_enabled": True,
        "messages_tab_read_only_enabled": True}
    assert "app_home_opened" in manifest["settings"]["event_subscriptions"]["bot_events"]
    assert manifest["settings"]["interactivity"] == {"is_enabled": True}
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == [
        "app_mentions:read", "chat:write", "commands", "im:write", "users:read"]


def test_every_method_the_code_calls_maps_to_a_declared_scope_and_nothing_more(
    manifest: dict[str, Any], repo_root: Path,
) -> None:
    called = _methods_called(repo_root)
    unknown = called - set(METHOD_SCOPES)
    assert not unknown, f"add these methods to METHOD_SCOPES: {sorted(unknown)}"
    assert {"chat.postMessage", "chat.update", "chat.postEphemeral", "conversations.open",
            "users.info"} <= called
    needed = {METHOD_SCOPES[m] for m in called if METHOD_SCOPES[m]}
    needed |= {scope for scope in EVENT_SCOPES.values() if scope}
    needed.add("commands")  # the /loop slash command

    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(needed)
