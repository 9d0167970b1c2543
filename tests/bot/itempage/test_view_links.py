"""Issue 22 §2: the Slack card, the approval message and App Home link the item's details
page when ``server.publicUrl`` is set (``engine.checksummary.details_page``), and link
nothing when it is unset. Walked through the real worker against the fake Slack (the
fixtures of tests/bot/conftest.py), and the builders' limits (platform-facts C4: a
section's text holds at most 3,000 characters).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack.blocks.approval import GateRef, approval_done_message, approval_message
from bot.slack.blocks.card import MAX_PAGE_URL, details_link, phase_selection_card, status_card
from bot.slack.blocks.home_blocks import ItemRow, WaitingRow, home_view
from bot.slack.home_tab import home_rows
from engine.graph.compiler import shipped_graph
from engine.ports import IssueInfo
from engine.refs import WorkItemRef
from tests.bot.conftest import SlackWorld, build_world, slack_config
from tests.fakes.slack import FakeSlack

REF = WorkItemRef("acme", "widgets", 7)
PAGE = "https://loopgate.example.com/items/acme/widgets/7"
LINK = f"<{PAGE}|Details page>"


def _world(tmp_path: Path, fake: FakeSlack, **server: Any) -> Iterator[SlackWorld]:
    config = slack_config(fake, **({"server": server} if server else {}))
    world = build_world(tmp_path, fake, config)
    yield world
    world.worker.stop()
    world.services.close()


@pytest.fixture
def linked(tmp_path: Path, fake_slack: FakeSlack, slack_env: None) -> Iterator[SlackWorld]:
    yield from _world(tmp_path, fake_slack, publicUrl="https://loopgate.example.com/")


@pytest.fixture
def unlinked(tmp_path: Path, fake_slack: FakeSlack, slack_env: None) -> Iterator[SlackWorld]:
    yield from _world(tmp_path, fake_slack)


def _posted(world: SlackWorld) -> str:
    calls = world.fake.calls_to("chat.postMessage") + world.fake.calls_to("chat.update")
    return "\n".join(json.dumps(c.args.get("blocks"), ensure_ascii=False) for c in calls)


def test_the_card_the_approval_message_and_home_link_the_details_page(
        linked: SlackWorld) -> None:
    linked.start()
    linked.drain()
    card = linked.fake.calls_to("chat.postMessage")[0].args
    assert "Phase selection" in card["text"]
    assert LINK in json.dumps(card["blocks"])
    linked.walk_to_requirements_approval()
    linked.drain()
    message = linked.approval_message().args
    first = json.loads(message["blocks"]) if isinstance(message["blocks"], str) \
        else message["blocks"]
    assert LINK in first[0]["text"]["text"].splitlines()[0]
    # the status card, rewritten read-only once the selection was made
    assert _posted(linked).count(LINK) >= 3
    waiting, items = home_rows(linked.services, "alice")
    assert [(r.ref, r.page_url) for r in waiting] == [("acme/widgets#7", PAGE)]
    assert [r.page_url for r in items] == [PAGE]
    view = json.dumps(home_view("alice", waiting, items))
    assert view.count(LINK) == 2


def test_without_a_public_url_nothing_links_a_page(unlinked: SlackWorld) -> None:
    unlinked.start()
    unlinked.drain()
    unlinked.walk_to_requirements_approval()
    unlinked.drain()
    assert "Details page" not in _posted(unlinked)
    waiting, items = home_rows(unlinked.services, "alice")
    assert waiting and all(r.page_url == "" for r in [*waiting, *items])
    assert "Details page" not in json.dumps(home_view("alice", waiting, items))


def test_the_builders_keep_slacks_limits_with_the_link() -> None:
    graph = shipped_graph()
    info = IssueInfo(REF, "x" * 5000, "https://github.com/acme/widgets/issues/7", "carol")
    for blocks in (phase_selection_card(graph, info, page_url=PAGE),
                   status_card(graph, info, current_node="design", status="parked",
                               decision=None, revision=1, page_url=PAGE)):
        texts = [b.to_dict().get("text", {}).get("text", "") for b in blocks]
        assert all(len(t) <= 3000 for t in texts)
        assert any(LINK in t for t in texts)  # the long title is cut, never the link
    gate = GateRef(REF, "requirements-approval", "2026-03-01T12:00:00Z")
    _, blocks = approval_message(gate, description="d" * 5000, page_url=PAGE)
    assert LINK in blocks[0].to_dict()["text"]["text"]
    _, done = approval_done_message(gate, {"outcome": "approved", "by": "@bob"}, page_url=PAGE)
    assert done[0].to_dict()["text"]["text"].endswith(f" · {LINK}")
    assert details_link("") == ""
    assert details_link("https://x.example/" + "a" * MAX_PAGE_URL) == ""  # never a cut URL
    assert details_link("https://x.example/items/a&b/r/1") == (
        " · <https://x.example/items/a&amp;b/r/1|Details page>")  # Slack's escaping rule
    row = WaitingRow("acme/widgets#7", "design", "approval", "t", page_url=PAGE)
    assert LINK in json.dumps(home_view("alice", [row], [ItemRow("acme/widgets#7", "design",
                                                                  "parked", page_url=PAGE)]))
