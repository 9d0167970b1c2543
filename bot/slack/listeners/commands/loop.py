"""The ``/loop`` slash command: ack, run the sub-command, answer ephemerally (issue 4 §5).

Unknown words get the help text; an error is one plain sentence, never a stack trace
(anything unexpected goes to the app's one error handler, which logs it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bot.slack.listeners.commands.check import run_check
from bot.slack.listeners.commands.pasted_refs import parse_item, unwrap_links
from bot.slack.listeners.commands.replies import HELP_TEXT, Reply
from bot.slack.slack_identity import LinkError, create_link_code, resolve_login, unlink
from engine.errors import LoopgateError

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["on_loop", "run_loop_command"]

log = logging.getLogger(__name__)


def on_loop(ack: Callable[..., Any], command: Mapping[str, Any], respond: Callable[..., Any],
            context: Mapping[str, Any]) -> None:
    """Bolt listener for ``/loop``."""
    ack()
    reply = run_loop_command(context["services"], str(command.get("user_id") or ""),
                             str(command.get("text") or ""))
    respond(**reply.kwargs())


def run_loop_command(services: Services, user: str, text: str) -> Reply:
    """Run ``/loop <text>`` for Slack user ``user``.

    Returns:
        The ephemeral reply. Refusals and bad input (a malformed reference, an unknown
        item, a bad login) are plain sentences.
    """
    words = unwrap_links(text).split()  # a pasted URL arrives as <url|label> (§6)
    name = words[0].lower() if words else "help"
    handler = _HANDLERS.get(name, _help)
    try:
        return handler(services, user, words[1:])
    except (LoopgateError, LinkError) as exc:
        return Reply(str(exc))


def _help(services: Services, user: str, args: Sequence[str]) -> Reply:
    return Reply(HELP_TEXT)


def _login_or_refusal(services: Services, user: str) -> tuple[str, Reply | None]:
    login = resolve_login(services, user)
    if not login:
        return "", Reply("Your Slack account is not linked to a GitHub login: "
                         "run `/loop link <github-login>` first.")
    if not services.settings.is_authorized(login):
        return login, Reply(f"@{login} is not an authorized user, so nothing was started.")
    return login, None


def _start(services: Services, user: str, args: Sequence[str]) -> Reply:
    if len(args) != 1:
        return Reply("Usage: `/loop start owner/repo#N`.")
    ref = parse_item(args[0])
    unwatched = services.config.unwatched(ref.owner, ref.repo)
    if unwatched:
        return Reply(f"Nothing was started: {unwatched}.")
    login, refusal = _login_or_refusal(services, user)
    if refusal is not None:
        return refusal
    before = services.store.load(ref)
    # The engine's post-phase-selection hook queues phase-selection-pending: the card.
    state = services.runtime.start(ref)
    log.info("%s started from Slack by @%s (%s)", ref, login, user)
    if before is not None and before.current_node:
        return Reply(f"{ref} was already started; it is at {state.current_node}.")
    return Reply(f"Started {ref}; it is at {state.current_node}.")


def _link(services: Services, user: str, args: Sequence[str]) -> Reply:
    if len(args) != 1:
        return Reply("Usage: `/loop link <github-login>`.")
    code = create_link_code(services, user, args[0])
    repos = services.config.section("github").get("repos") or []
    where = ", ".join(repos) if repos else "a repository loopgate watches"
    return Reply(
        f"To link this Slack account to @{code.github_login}, comment "
        f"`loopgate link {code.code}` as @{code.github_login} on any issue of {where} "
        f"within 15 minutes (until {code.expires_at}). The code works once.")


def _unlink(services: Services, user: str, args: Sequence[str]) -> Reply:
    removed = unlink(services, user)
    configured = user in (services.config.section("slack").get("identities") or {})
    text = "Your link was removed." if removed else "You had no stored link."
    if configured:
        text += " The mapping in loopgate.yaml (slack.identities) is configuration and stays."
    return Reply(text)


_HANDLERS: dict[str, Callable[[Any, str, Sequence[str]], Reply]] = {
    "check": run_check,
    "start": _start,
    "link": _link,
    "unlink": _unlink,
    "help": _help,
}
