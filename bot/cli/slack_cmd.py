"""``loopgate slack preview approval|home`` (issue 12, Acceptance): the Block Kit JSON of
an approval gate's thread message and of the App Home tab, for a fixed sample work item on
the shipped graph — what the README shows (a test compares the two, so they cannot drift).
Paste the output into Slack's Block Kit Builder to see it rendered.
"""

from __future__ import annotations

import json
from typing import Any

import click

from bot.cli.help import HelpGroup
from engine.graph.compiler import shipped_graph
from engine.refs import WorkItemRef

__all__ = ["register", "slack", "preview_json", "KINDS"]

#: What ``preview`` can show.
KINDS = ("approval", "home")
_REF = WorkItemRef("acme", "widgets", 7)
_URL = "https://github.com/acme/widgets/issues/7"
_ENTERED = "2026-03-01T12:00:00Z"


# The Block Kit builders (slack_sdk's models) are imported where used: every loopgate
# command would otherwise pay for them at start.
def _approval() -> dict[str, Any]:
    from bot.slack.blocks.approval import GateRef, approval_message

    gate = GateRef(_REF, "requirements-approval", _ENTERED)
    description = shipped_graph().node(gate.node).description
    text, blocks = approval_message(gate, description=description,
                                    waiting_on=["U0ALICE", "U0CAROL"], item_url=_URL)
    return {"text": text, "blocks": [b.to_dict() for b in blocks]}


def _home() -> dict[str, Any]:
    from bot.slack.blocks.home_blocks import ItemRow, WaitingRow, home_view

    graph = shipped_graph()
    waiting = [
        WaitingRow(str(_REF), "requirements-approval", "approval", _ENTERED,
                   graph.node("requirements-approval").description, _URL),
        WaitingRow("acme/gadgets#12", "spec-quiz", "quiz", "2026-03-02T09:30:00Z",
                   graph.node("spec-quiz").description,
                   "https://github.com/acme/gadgets/issues/12",
                   "https://github.com/acme/gadgets/issues/12#issuecomment-1001",
                   "https://acme.github.io/gadgets/explainer/12/"),
    ]
    items = [ItemRow(str(_REF), "requirements-approval", "parked", _URL),
             ItemRow("acme/gadgets#12", "spec-quiz", "parked",
                     "https://github.com/acme/gadgets/issues/12")]
    return home_view("alice", waiting, items)


def preview_json(kind: str) -> str:
    """The pretty-printed JSON of ``kind`` (one of :data:`KINDS`).

    Raises:
        KeyError: an unknown kind.
    """
    build = {"approval": _approval, "home": _home}[kind]
    return json.dumps(build(), indent=2, ensure_ascii=False)


@click.group(cls=HelpGroup)
def slack() -> None:
    """Slack surfaces: the Block Kit loopgate sends.

    \b
    Example:
      loopgate slack preview approval
    """


@slack.command("preview")
@click.argument("kind", type=click.Choice(KINDS))
def preview(kind: str) -> None:
    """Print the Block Kit JSON of an approval message or the home tab (sample item).

    \b
    Example:
      loopgate slack preview home
    """
    click.echo(preview_json(kind))


def register(group: click.Group) -> None:
    """Add the ``slack`` command family to ``group``."""
    group.add_command(slack)
