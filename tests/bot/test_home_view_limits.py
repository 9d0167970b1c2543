"""The App Home view stays within Slack's limits (a section's text ≤ 3,000 characters, a
view ≤ 100 blocks) and says how much it left out; checked by the fake Slack, which refuses
what Slack refuses."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from bot.slack.blocks.home_blocks import MAX_ROWS, ItemRow, WaitingRow, home_view, items_text
from tests.fakes.slack import FakeSlack


@pytest.fixture
def web() -> Iterator[WebClient]:
    with FakeSlack() as fake:
        yield WebClient(token="xoxb-test", base_url=fake.base_url)


def _items(count: int, url_length: int = 200) -> list[ItemRow]:
    return [ItemRow(f"acme/widgets#{n}", "requirements-approval-with-a-long-node-name",
                    "waiting", "https://github.example/" + "x" * url_length + f"/{n}")
            for n in range(1, count + 1)]


def _waiting(count: int) -> list[WaitingRow]:
    return [WaitingRow(f"acme/widgets#{n}", "design-approval", "approval",
                       f"2026-11-{n % 28 + 1:02d}T00:00:00Z", "d" * 300,
                       f"https://github.com/acme/widgets/issues/{n}") for n in range(count)]


def test_your_items_keeps_within_3000_characters_with_whole_lines_and_and_n_more(
        web: WebClient) -> None:
    items = _items(20)
    text = items_text(items)
    assert len(text) <= 3000
    lines = text.split("\n")
    shown = lines[:-1]
    assert lines[-1] == f"… and {20 - len(shown)} more"
    assert 0 < len(shown) < 20
    assert all(line.endswith("(waiting)") for line in shown)  # whole lines only
    view = home_view("alice", [], items)
    assert web.views_publish(user_id="UALICE", view=view)["ok"] is True


def test_your_items_cut_at_20_rows_says_and_n_more(web: WebClient) -> None:
    items = _items(23, url_length=10)
    lines = items_text(items).split("\n")
    assert len(lines) == MAX_ROWS + 1 and lines[-1] == "… and 3 more"
    assert items_text(_items(20, url_length=10)).count("more") == 0


def test_waiting_on_you_cut_at_20_rows_says_and_n_more(web: WebClient) -> None:
    view = home_view("alice", _waiting(25), _items(3, url_length=10))
    notes = [el["text"] for b in view["blocks"] if b["type"] == "context"
             for el in b["elements"]]
    assert "… and 5 more waiting on you" in notes
    assert web.views_publish(user_id="UALICE", view=view)["ok"] is True
    exact = home_view("alice", _waiting(20), [])
    assert not any("more waiting" in str(b) for b in exact["blocks"])
