"""Start-up probes of ``loopgate serve``: Slack's tokens are tried once before anything
starts, so a refused token or an unreachable Slack is one line on stderr, not a
traceback after a page of library log lines.

Exit codes (deploy/loopgate.service has ``RestartPreventExitStatus=2``): a refused token
is a configuration error (exit 2: restarting would only repeat it); an unreachable
service is transient (exit 1: systemd's ``Restart=on-failure`` tries again).
"""

from __future__ import annotations

import logging
import socket
import urllib.error
import urllib.parse
from typing import Any

from engine.errors import StartupError

__all__ = ["StartupError", "verify_slack", "slack_failure", "unreachable_reason"]

#: Exit code of a refused credential (no restart) and of an unreachable service (restart).
REFUSED, UNREACHABLE = 2, 1


def unreachable_reason(exc: BaseException) -> str:
    """Why a connection failed, in words (``Connection refused``, ``Name or service not
    known``, ``timed out``): the innermost reason of a urllib ``URLError`` or an
    ``OSError``'s ``strerror`` (a ``URLError`` is an ``OSError`` whose ``strerror`` is
    None, so that alone says nothing)."""
    reason: Any = exc
    while isinstance(reason, urllib.error.URLError):
        reason = reason.reason
    if isinstance(reason, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return str(reason.strerror)
    return str(reason) or type(reason).__name__


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc or url


def slack_failure(exc: BaseException, method: str, env: str, api_url: str) -> StartupError:
    """The one-line error for a failed Slack call at start-up.

    Args:
        exc: what the call raised (``SlackApiError``, a ``URLError``/``OSError``).
        method: the Web API method (``apps.connections.open``, ``auth.test``).
        env: the variable holding the token the method was called with (its name only).
        api_url: ``slack.apiUrl`` (its host is named when Slack is unreachable).

    Returns:
        A :class:`StartupError`: exit 2 when Slack answered with an error (Slack's error
        code is named: ``invalid_auth``, ``not_allowed_token_type``…), exit 1 when it
        could not be reached, answered 5xx or rate-limited the call (transient).
    """
    from slack_sdk.errors import SlackApiError

    if isinstance(exc, SlackApiError):
        code = exc.response.get("error") if exc.response is not None else None
        status = getattr(exc.response, "status_code", 0)
        what = "app-level token" if method == "apps.connections.open" else "bot token"
        if status == 429 or code == "ratelimited":
            return StartupError(f"slack: {method} was rate-limited by {_host(api_url)} "
                                "(HTTP 429); try again later", UNREACHABLE)
        if status >= 500:
            return StartupError(f"slack: {method} failed: HTTP {status} {code or ''} from "
                                f"{_host(api_url)}; Slack is unavailable".replace("  ", " "),
                                UNREACHABLE)
        return StartupError(f"slack: {method} refused: {code or f'HTTP {status}'} — check "
                            f"the {what} in ${env}")
    return StartupError(f"slack: cannot reach {_host(api_url)} ({method}): "
                        f"{unreachable_reason(exc)} — check slack.apiUrl and the network",
                        UNREACHABLE)


def _quiet_logger() -> logging.Logger:
    # The probe's own failures become one line; slack_sdk's retries and errors go to DEBUG
    # only (a logger of its own that does not propagate to the root's stderr handler).
    quiet = logging.getLogger("loopgate.startup.slack")
    quiet.propagate = False
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    return quiet


def verify_slack(config: Any) -> None:
    """Try Slack's tokens once: ``auth.test`` with the bot token and, when an app-level
    token is set (Socket Mode), ``apps.connections.open`` with it (the URL it returns is
    not used; Slack hands out a fresh one per call, docs.slack.dev "apps.connections.open").

    Args:
        config: the validated configuration (its ``slack`` section).

    Raises:
        StartupError: a token was refused (exit 2) or Slack was unreachable (exit 1).
        ConfigError: the bot token variable is not set.
    """
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackClientError

    from bot.slack.bolt_app import _slack, app_token, build_web_client

    slack = _slack(config)
    api_url = str(slack.get("apiUrl") or "https://slack.com/api/")
    client = build_web_client(config)
    probe = WebClient(token=client.token, base_url=client.base_url, timeout=client.timeout,
                      logger=_quiet_logger())
    probe.retry_handlers = []  # one try: a start-up error, not a wait
    bot_env = str(slack.get("botTokenEnv") or "SLACK_BOT_TOKEN")
    try:
        probe.auth_test()
    except (SlackClientError, OSError) as exc:
        raise slack_failure(exc, "auth.test", bot_env, api_url) from None
    token = app_token(config)
    if token is None:
        return
    app_env = str(slack.get("appTokenEnv") or "SLACK_APP_TOKEN")
    try:
        probe.apps_connections_open(app_token=token)
    except (SlackClientError, OSError) as exc:
        raise slack_failure(exc, "apps.connections.open", app_env, api_url) from None
