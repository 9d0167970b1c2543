"""Every Slack ``text`` fallback escapes ``&``, ``<`` and ``>`` like the blocks do (issue
19 §6; Slack "Formatting text", *Escaping text*: only these three are control characters).
An issue title that says ``<!channel>`` or ``<https://evil|x>`` reaches the fake Slack as
entities in every message text loopgate sends, never as a mention or a disguised link."""

from __future__ import annotations

from typing import Any

from bot.slack.blocks.approval import GateRef, reminder_text
from bot.slack.blocks.escaping import Mrkdwn, escape, slack_text
from tests.bot.conftest import REF, SlackWorld

EVIL = "Fix <!channel> see <https://evil.example|docs> & more"
SAFE = "Fix &lt;!channel&gt; see &lt;https://evil.example|docs&gt; &amp; more"


def _texts(world: SlackWorld) -> list[str]:
    return [str(c.args.get("text") or "") for c in world.fake.calls
            if c.method in ("chat.postMessage", "chat.update", "chat.postEphemeral")]


def _no_raw_control(texts: list[str]) -> None:
    for text in texts:
        assert "<!channel>" not in text and "<https://evil" not in text, text


def test_a_title_with_a_channel_mention_and_a_disguised_link_is_escaped_in_every_text(
        world: SlackWorld) -> None:
    world.tracker.set_issue(REF, EVIL, author="carol")
    world.start()
    world.drain()
    world.reply_on_github("alice", "the-loop execute\n- [ ] brainstorming")
    world.drain()
    texts = _texts(world)
    assert f"Phase selection for acme/widgets#7: {SAFE}" in texts  # the card's fallback
    assert len(texts) >= 2  # the card and its rewrite at least
    _no_raw_control(texts)
    blocks = str([c.args.get("blocks") for c in world.fake.calls_to("chat.postMessage")])
    assert "<!channel>" not in blocks  # the blocks already escaped it: the control


def test_the_helper_escapes_plain_text_and_keeps_deliberate_markup() -> None:
    assert slack_text(EVIL) == SAFE
    assert slack_text("a&b") == "a&amp;b" and slack_text(None) == ""
    link = Mrkdwn("<https://github.com/acme/widgets/issues/7|acme/widgets#7>")
    assert slack_text(link) == "<https://github.com/acme/widgets/issues/7|acme/widgets#7>"
    assert escape("'\"*_") == "'\"*_"  # only the three control characters


def test_a_reminder_keeps_its_link_and_mention_and_escapes_the_rest() -> None:
    gate = GateRef(REF, "requirements-approval", "2026-03-01T11:00:00Z")
    text: Any = reminder_text(gate, 24, ["U1"], item_url="https://github.com/acme/widgets/issues/7")
    assert isinstance(text, Mrkdwn)
    assert slack_text(text) == (
        "⏰ `requirements-approval` of <https://github.com/acme/widgets/issues/7|acme/widgets#7> "
        "has waited 24 hours for an approval — <@U1>.")
