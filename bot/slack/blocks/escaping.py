"""Slack's escaping rule, in one place (issue 19 §6).

Slack reads ``&``, ``<`` and ``>`` as control characters in message text: ``<!channel>``
notifies a whole channel and ``<https://evil|x>`` is a link whose label hides its target.
Text that is not meant to use them must carry the HTML entities ``&amp;``, ``&lt;`` and
``&gt;`` instead, and only those three (Slack, "Formatting text for app surfaces",
*Escaping text*: https://api.slack.com/reference/surfaces/formatting#escaping; platform
facts C). The blocks escape every value that comes from GitHub; the top-level ``text``
of ``chat.postMessage`` / ``chat.update`` / ``chat.postEphemeral`` and of a ``respond``
(the notification and screen-reader fallback, or the whole message when there are no
blocks) goes through :func:`slack_text` just before it is sent.
"""

from __future__ import annotations

__all__ = ["Mrkdwn", "escape", "slack_text"]


class Mrkdwn(str):
    """Message text that is already Slack markup on purpose (a ``<url|label>`` link, a
    ``<@U123>`` mention) with every value from elsewhere escaped by :func:`escape`:
    :func:`slack_text` sends it as it is."""

    __slots__ = ()


def escape(text: str | None) -> str:
    """``text`` with ``&``, ``<`` and ``>`` replaced by ``&amp;``, ``&lt;``, ``&gt;``
    (nothing else: Slack decodes only these three). ``None`` gives ``""``."""
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_text(text: str | None) -> str:
    """The ``text`` argument of a Slack message: :class:`Mrkdwn` as it is, anything else
    (plain words with values from GitHub in them) escaped with :func:`escape`."""
    if isinstance(text, Mrkdwn):
        return str.__str__(text)
    return escape(text)
