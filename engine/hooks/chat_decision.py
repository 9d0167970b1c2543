"""A human gate answered on a chat surface (issue 12 §1, issue 20 §1): the echo on the issue.

A chat surface hands the runtime a typed :class:`engine.events.Decision` (node, outcome,
the clicker's linked login, their words, ``via``: the surface's name), and the gate's own
rules (``classify-feedback``, authorization, any approval rules) decide it once, exactly
as they decide a reply on the thread. Because that decision exists only on the chat
surface, the gate posts it on the issue as a marked comment —
``<!-- the-loop:slack-decision <node> -->``, a wire format kept from the first surface —
so the tracker's thread stays the record. The comment is self-authored (it carries
:data:`~engine.ports.SELF_MARKER`), so no ingress reads it back as a second decision.

Stored shape: a counted chat decision is kept in ``surface.approvals[node].approvals`` as
``{by, outcome, at, via, body?}`` where ``body`` (kept for ``approved-with-comments``) is
:func:`decision_body` — the outcome's words, then the person's text quoted — the shape
written since issue 12; :func:`decision_text` reads the text back from it.
"""

from __future__ import annotations

from engine.effects import PostComment
from engine.hooks.markers import with_self_marker
from engine.hooks.registry import HookContext

__all__ = ["VIA_REPLY", "from_chat", "surface_label", "decision_marker", "mirror_text",
           "mirror_decision", "decision_body", "decision_text", "DECISION_WORDS"]

#: ``via`` of a reply on the tracker's thread; any other ``via`` of an approval names a
#: chat surface.
VIA_REPLY = "reply"

#: The first line of a chat decision's stored body, per outcome.
DECISION_WORDS = {
    "approved": "approved",
    "approved-with-comments": "approved with comments",
    "changes-requested": "changes requested",
}

_OUTCOME_TEXT = {
    "approved": "✅ **Approved**",
    "approved-with-comments": "✅ **Approved with comments**",
    "changes-requested": "✋ **Changes requested**",
}


def from_chat(via: str | None) -> bool:
    """True when ``via`` names a chat surface (neither a thread reply nor unknown)."""
    return bool(via) and via != VIA_REPLY


#: How the thread names a surface whose name does not read capitalised (the CLI and the
#: details page's simulate API name themselves so when they simulate a decision).
_LABELS = {"cli": "the CLI", "web": "the web"}


def surface_label(via: str) -> str:
    """How the thread names the surface ``via`` came from (``slack`` → ``Slack``, ``cli``
    → ``the CLI``, ``web`` → ``the web``)."""
    return _LABELS.get(via) or via[:1].upper() + via[1:]


def decision_marker(node: str) -> str:
    """``<!-- the-loop:slack-decision <node> -->`` (the echo comment's marker)."""
    return f"<!-- the-loop:slack-decision {node} -->"


def decision_body(outcome: str, text: str = "") -> str:
    """The stored body of a chat decision: the outcome's words, then the person's text as
    quoted lines (``> …``), so its words can never read as a second decision.

    Raises:
        KeyError: ``outcome`` is not one of :data:`DECISION_WORDS`.
    """
    lines = [DECISION_WORDS[outcome]]
    words = [line.rstrip() for line in (text or "").strip().splitlines()]
    if words:
        lines += ["", *[f"> {line}" if line else ">" for line in words]]
    return "\n".join(lines)


def decision_text(body: str) -> str:
    """The person's text in a :func:`decision_body` ("" when none)."""
    lines = (body or "").splitlines()[1:]
    return "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">")
                     for line in lines if line.startswith(">")).strip()


def mirror_text(node: str, outcome: str, by: str, text: str, via: str) -> str:
    """The echo comment's body without markers.

    Args:
        node: the gate's id.
        outcome: ``approved``, ``approved-with-comments`` or ``changes-requested``.
        by: the decider's login (with or without ``@``).
        text: their words ("" when none).
        via: the surface's name (``slack``).

    Returns:
        Markdown: the outcome, who, where, and the words quoted (when any).
    """
    who = "@" + (by or "someone").lstrip("@")
    head = (f"{_OUTCOME_TEXT.get(outcome, outcome)} at `{node}` by {who} — "
            f"from {surface_label(via)}.")
    words = (text or "").strip()
    if not words:
        return head
    quoted = "\n".join(f"> {line}" if line else ">" for line in words.splitlines())
    return f"{head}\n\n{quoted}"


def mirror_decision(ctx: HookContext, outcome: str, by: str, text: str, via: str) -> None:
    """Queue the echo comment of a chat decision (posted after commit, in order)."""
    body = mirror_text(ctx.node.id, outcome, by, text, via)
    ctx.emit(PostComment(ctx.ref, with_self_marker(body, decision_marker(ctx.node.id))))
