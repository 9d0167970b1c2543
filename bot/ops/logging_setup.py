"""How loopgate's long-running commands log (issue 13 §3).

Two formats, one event per line on stderr:

* ``text`` (the default): ``time level logger message``;
* ``json`` (``--log-format json`` or ``LOOPGATE_LOG_FORMAT=json``): one JSON object per
  line through python-json-logger, with stable keys: ``time``, ``level``, ``logger``,
  ``event`` (the record's ``event`` extra, else the logger's name), ``message``, and
  where the line is about one: ``delivery``, ``item``, ``node``, ``result``, ``ms``
  (plus ``source``/``kind`` for deliveries). A log call passes them as ``extra={...}``.

Secrets (the values of every environment variable the configuration names for a token,
a key or a secret) are replaced by ``[redacted]`` in every line, the exception text
included: the code never logs them, and this filter makes sure a library does not either.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter

__all__ = ["configure", "secret_values", "SecretFilter", "LoopgateJsonFormatter",
           "FORMATS", "FORMAT_ENV", "STABLE_KEYS"]

FORMATS = ("text", "json")
FORMAT_ENV = "LOOPGATE_LOG_FORMAT"
#: Keys every JSON line may carry, always under these names.
STABLE_KEYS = ("event", "delivery", "item", "node", "result", "ms")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
REDACTED = "[redacted]"
_MIN_SECRET = 8  # shorter values (an empty or toy variable) would redact ordinary words


class LoopgateJsonFormatter(JsonFormatter):
    """python-json-logger's formatter with loopgate's key names."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s",
                         rename_fields={"asctime": "time", "levelname": "level",
                                        "name": "logger"})

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging's name
        """ISO-8601 UTC with milliseconds (``2026-01-02T03:04:05.678Z``)."""
        moment = datetime.fromtimestamp(record.created, UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord,
                   message_dict: dict[str, Any]) -> None:
        """Fill the record's fields, then ``event`` when the call gave none."""
        super().add_fields(log_data, record, message_dict)
        log_data.setdefault("event", record.name)


def secret_values(config: Any, environ: os._Environ[str] | dict[str, str] | None = None
                  ) -> list[str]:
    """The values of the secrets the configuration names (tokens, keys, secrets).

    Args:
        config: the validated configuration.
        environ: the environment (default ``os.environ``).

    Returns:
        Every non-trivial value (a PEM key also line by line), longest first.
    """
    env = os.environ if environ is None else environ
    names = {"GITHUB_TOKEN", "GITHUB_WEBHOOK_SECRET", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
             "SLACK_SIGNING_SECRET"}
    if config is not None and config.has("github"):
        github = config.section("github")
        names.update(str(github.get(k) or "") for k in ("tokenEnv", "webhookSecretEnv"))
        names.add(str((github.get("app") or {}).get("privateKeyEnv") or ""))
    sign_in = config.section("server").get("signIn") or {} if config is not None else {}
    if sign_in.get("clientId"):  # issue 22 §2: the sign-in's client and session secrets
        names.update(str(sign_in.get(k) or "") for k in ("clientSecretEnv", "sessionSecretEnv"))
    if config is not None and config.has("slack"):
        slack = config.section("slack")
        names.update(str(slack.get(k) or "") for k in ("botTokenEnv", "appTokenEnv",
                                                        "signingSecretEnv"))
    values: set[str] = set()
    for name in filter(None, names):
        value = env.get(name, "").strip()
        if len(value) < _MIN_SECRET:
            continue
        values.add(value)
        if "-----BEGIN" in value:  # a PEM key: no line of it may leak either
            values.update(line.strip() for line in value.splitlines()
                          if len(line.strip()) >= _MIN_SECRET and "-----" not in line)
    return sorted(values, key=len, reverse=True)


class SecretFilter(logging.Filter):
    """Replaces secret values in a record's message and exception text.

    Args:
        secrets: the values to hide.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def _clean(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record`` in place when it holds a secret; always keeps it."""
        if not self.secrets:
            return True
        message = record.getMessage()
        cleaned = self._clean(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._clean(record.exc_text)
        return True


def configure(log_format: str = "text", level: int = logging.INFO,
              secrets: Iterable[str] = ()) -> logging.Handler | None:
    """Log to stderr in ``log_format`` at ``level``, hiding ``secrets``.

    Idempotent in effect: when the root logger already has handlers (a test runner's
    capture), nothing is added and None is returned.

    Args:
        log_format: ``text`` or ``json``.
        level: the root level.
        secrets: values never to print (:func:`secret_values`).

    Returns:
        The handler added, or None.

    Raises:
        ValueError: an unknown format.
    """
    if log_format not in FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: use one of {', '.join(FORMATS)}")
    root = logging.getLogger()
    if root.handlers:
        for handler in root.handlers:  # still hide secrets from a capture
            handler.addFilter(SecretFilter(secrets))
        return None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LoopgateJsonFormatter() if log_format == "json"
                         else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(SecretFilter(secrets))
    root.addHandler(handler)
    root.setLevel(level)
    return handler
