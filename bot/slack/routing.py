"""Which channel a work item's card and thread go to (issue 12 §5).

``slack.channels`` maps a repository (``owner/repo``) or an owner's repositories
(``owner/*``) to a channel id; ``slack.channel`` is the default for everything else.
Names compare case-insensitively, like GitHub's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.refs import WorkItemRef

__all__ = ["channel_for"]


def channel_for(slack: Mapping[str, Any], ref: WorkItemRef) -> str:
    """The channel id for ``ref``: an exact ``owner/repo`` entry, else ``owner/*``, else
    ``slack.channel``; "" when none is configured.

    Args:
        slack: the validated ``slack`` config section.
        ref: the work item.
    """
    routes = {str(k).lower(): str(v) for k, v in (slack.get("channels") or {}).items()}
    for key in (ref.repo_full_name, f"{ref.owner}/*"):
        if routes.get(key):
            return routes[key]
    return str(slack.get("channel") or "")
