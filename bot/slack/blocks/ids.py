"""Every Block Kit ``action_id`` and ``block_id`` prefix loopgate uses, defined once.

Listeners match on the action ids; the Execute listener reads the message state by
block-id prefix. A block id is ``<prefix>.r<revision>.<index>``: the revision changes
every time a message is rewritten (Slack asks for a new ``block_id`` on each iteration of
a message, NOTES.md §1) and the index numbers the chunks of a checkbox group that had to
be split (at most 10 options per element).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "ACTION_PHASES",
    "ACTION_OPT_INS",
    "ACTION_SETTINGS",
    "ACTION_EXECUTE",
    "ACTION_OPEN_COMMENT",
    "ACTION_OPEN_ITEM",
    "ACTION_APPROVE",
    "ACTION_APPROVE_COMMENTS",
    "ACTION_REQUEST_CHANGES",
    "ACTION_DECISION_TEXT",
    "ACTION_OPEN_EXPLAINER",
    "ACTION_OPERATOR_CONFIRM",
    "BLOCK_OPERATOR",
    "VIEW_DECISION",
    "BLOCK_APPROVAL",
    "BLOCK_DECISION_TEXT",
    "BLOCK_HOME",
    "BLOCK_PHASES",
    "BLOCK_OPT_INS",
    "BLOCK_SETTINGS",
    "BLOCK_EXECUTE",
    "BLOCK_NOTICE",
    "CHECKBOX_GROUPS",
    "EXPLAINER_VALUE",
    "BlockId",
    "block_id",
    "parse_block_id",
]

# -- action ids (one interactive element per block, so they may repeat across blocks) --
ACTION_PHASES = "loopgate.phases"
ACTION_OPT_INS = "loopgate.opt_ins"
ACTION_SETTINGS = "loopgate.settings"
ACTION_EXECUTE = "loopgate.execute"
ACTION_OPEN_COMMENT = "loopgate.open_comment"
ACTION_OPEN_ITEM = "loopgate.open_item"
# The approval gates' thread message (issue 12 §1) and its modal.
ACTION_APPROVE = "loopgate.approve"
ACTION_APPROVE_COMMENTS = "loopgate.approve_comments"
ACTION_REQUEST_CHANGES = "loopgate.request_changes"
ACTION_DECISION_TEXT = "loopgate.decision_text"
ACTION_OPEN_EXPLAINER = "loopgate.open_explainer"
#: The Confirm button of an operator request's thread message (issue 19 §5).
ACTION_OPERATOR_CONFIRM = "loopgate.operator_confirm"
#: The decision modal's ``callback_id``.
VIEW_DECISION = "loopgate.decision"

# -- block id prefixes -----------------------------------------------------------------
BLOCK_PHASES = "loopgate.phases"
BLOCK_OPT_INS = "loopgate.opt_ins"
BLOCK_SETTINGS = "loopgate.settings"
BLOCK_EXECUTE = "loopgate.execute"
BLOCK_NOTICE = "loopgate.notice"
BLOCK_APPROVAL = "loopgate.approval"
BLOCK_DECISION_TEXT = "loopgate.decision_text"
BLOCK_HOME = "loopgate.home"
BLOCK_OPERATOR = "loopgate.operator"

#: The checkbox groups of the phase-selection card, by block prefix.
CHECKBOX_GROUPS = (BLOCK_PHASES, BLOCK_OPT_INS, BLOCK_SETTINGS)

#: The option value of the Settings row (the ``explainer`` skip set's token).
EXPLAINER_VALUE = "explainer"

_BLOCK_ID = re.compile(r"^(?P<prefix>[a-z_.]+?)\.r(?P<revision>\d+)\.(?P<index>\d+)$")


@dataclass(frozen=True)
class BlockId:
    """A parsed block id."""

    prefix: str
    revision: int
    index: int


def block_id(prefix: str, revision: int, index: int = 0) -> str:
    """Compose ``<prefix>.r<revision>.<index>`` (well under Slack's 255 characters).

    Args:
        prefix: one of the ``BLOCK_*`` constants.
        revision: the message revision (0 for the first post, +1 per rewrite).
        index: the chunk number within a split group.

    Raises:
        ValueError: a negative revision or index.
    """
    if revision < 0 or index < 0:
        raise ValueError(f"block id parts must be >= 0, got r{revision}.{index}")
    return f"{prefix}.r{revision}.{index}"


def parse_block_id(value: str) -> BlockId | None:
    """Parse a block id made by :func:`block_id`; None for anything else."""
    match = _BLOCK_ID.match(value or "")
    if match is None:
        return None
    return BlockId(match["prefix"], int(match["revision"]), int(match["index"]))
