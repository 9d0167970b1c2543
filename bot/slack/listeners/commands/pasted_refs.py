"""Work item references as people paste them into ``/loop`` (issue 12 §6).

Slack rewrites a pasted URL in a slash command's ``text`` to ``<https://…|label>`` (or
``<https://…>``) — "Formatting text for app surfaces", links. The label is free text and
may hold spaces, so links are replaced before the text is split into words.
"""

from __future__ import annotations

import re

from engine.errors import WorkItemRefError
from engine.refs import WorkItemRef

__all__ = ["unwrap_links", "parse_item"]

# <url> or <url|label>; the label never contains '>' (Slack escapes it as &gt;).
_LINK = re.compile(r"<(?P<url>https?://[^|>\s]+)(?:\|[^>]*)?>")
_ISSUE_URL = re.compile(
    r"^https?://(?:www\.)?github\.com/(?P<owner>[A-Za-z0-9][A-Za-z0-9._-]*)/"
    r"(?P<repo>[A-Za-z0-9._-]+)/(?:issues|pull)/(?P<number>[1-9][0-9]*)/?(?:[#?].*)?$")


def unwrap_links(text: str) -> str:
    """``text`` with each Slack link ``<url|label>`` replaced by its URL (labels dropped)."""
    return _LINK.sub(lambda m: m["url"], text or "")


def parse_item(text: str) -> WorkItemRef:
    """A work item from ``owner/repo#N``, an issue or pull request URL on github.com, or
    either wrapped as a Slack link.

    Raises:
        WorkItemRefError: none of those forms; the message quotes the text.
    """
    plain = unwrap_links(text).strip()
    match = _ISSUE_URL.match(plain)
    if match is not None:
        return WorkItemRef(match["owner"], match["repo"], int(match["number"]))
    try:
        return WorkItemRef.parse(plain)
    except WorkItemRefError:
        raise WorkItemRefError(
            f"not a work item reference: {plain!r} (expected owner/repo#N or an issue URL)"
        ) from None
