"""The Slack views that list every stored item (``/loop check`` without an argument, the
Home tab) leave out an item that cannot be read, with one warning line naming its key, and
list every other item (before: the view crashed)."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from engine.store.rows import CHILD_TABLES
from tests.bot.conftest import REF, SPEC_CHAIN, SlackWorld
from tests.bot.test_slack_commands import _loop, _texts
from tests.bot.test_slack_home import _open, _text

BAD_KEY = "acme/widgets#0008"  # number 8: between #7 and #9, and never parses
WARNING = ("work item acme/widgets#0008 left out of the Slack view: it cannot be read: the "
           "stored key: not a work item reference: 'acme/widgets#0008' (expected "
           "owner/repo#N)")


def _copy(world: SlackWorld, key: str, number: int) -> None:
    """#7's rows, every child row included, stored again under ``key`` (number ``number``)."""
    conn = sqlite3.connect(world.store.path, isolation_level=None)
    try:
        for table in ("items", *CHILD_TABLES):
            names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")][1:]
            picked = ", ".join("?" if n == "number" else n for n in names)
            params = (key, number, str(REF)) if "number" in names else (key, str(REF))
            conn.execute(f"INSERT INTO {table} (item, {', '.join(names)}) "
                         f"SELECT ?, {picked} FROM {table} WHERE item = ?", params)
    finally:
        conn.close()


@pytest.fixture
def spoiled(world: SlackWorld) -> SlackWorld:
    """Alice's #7 and its copies: #0008 (a key that does not parse) and #9."""
    world.start()
    world.drain()
    rows = "\n".join(f"- [ ] {t}" for t in SPEC_CHAIN)
    world.reply_on_github("alice", f"the-loop execute\n{rows}")
    _copy(world, BAD_KEY, 8)
    _copy(world, "acme/widgets#9", 9)
    return world


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_loop_check_lists_every_readable_item_and_warns_once(
        spoiled: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    alice = _loop(spoiled, "UALICE", "check")
    assert alice["text"] == "2 work item(s) involve @alice."
    texts = _texts(alice["blocks"])
    assert "• `acme/widgets#7` — at `spec-explainer` (parked)" in texts
    assert "• `acme/widgets#9` — at `spec-explainer` (parked)" in texts
    assert "0008" not in texts
    assert _warnings(caplog) == [WARNING]


def test_home_tab_lists_every_readable_item_and_warns_once(
        spoiled: SlackWorld, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    text = _text(_open(spoiled, "UALICE"))
    assert ("• <https://github.com/acme/widgets/issues/7|acme/widgets#7> — at "
            "`spec-explainer` (parked)") in text
    assert ("• <https://github.com/acme/widgets/issues/9|acme/widgets#9> — at "
            "`spec-explainer` (parked)") in text
    assert "0008" not in text
    assert _warnings(caplog) == [WARNING]
