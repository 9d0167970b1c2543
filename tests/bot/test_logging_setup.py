"""Issue 13 §3: JSON log lines carry the stable keys, and a secret's value never reaches a
line (message or exception text) whichever code tried to log it."""

from __future__ import annotations

import io
import json
import logging

from bot.config import validate_mapping
from bot.ops.logging_setup import REDACTED, LoopgateJsonFormatter, SecretFilter, secret_values

KIND = "RSA PRIVATE KEY"  # split so no scanner takes this test for a leaked key
PEM = (f"-----BEGIN {KIND}-----\nAAAAnotARealKeyJustATestLineForTheFilter0001\n"
       f"AAAAnotARealKeyJustATestLineForTheFilter0002\n-----END {KIND}-----\n")


def _logger(handler: logging.Handler) -> logging.Logger:
    log = logging.getLogger("loopgate.test.logging")
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.DEBUG)
    return log


def test_json_lines_carry_the_stable_keys() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(LoopgateJsonFormatter())
    log = _logger(handler)
    log.info("delivery=%s result=%s", "d-1", "handled",
             extra={"event": "dispatch.delivery", "delivery": "d-1", "item": "acme/w#1",
                    "node": "spec-quiz", "result": "handled", "ms": 1.5})
    log.warning("plain line")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert {k: first[k] for k in ("event", "delivery", "item", "node", "result", "ms")} == {
        "event": "dispatch.delivery", "delivery": "d-1", "item": "acme/w#1",
        "node": "spec-quiz", "result": "handled", "ms": 1.5}
    assert first["message"] == "delivery=d-1 result=handled"
    assert (first["level"], first["logger"]) == ("INFO", "loopgate.test.logging")
    assert first["time"].endswith("Z") and first["time"][10] == "T"
    assert (second["event"], second["level"]) == ("loopgate.test.logging", "WARNING")


def test_the_configured_secrets_are_hidden_in_messages_and_tracebacks() -> None:
    config = validate_mapping({"github": {"app": {"appId": 1, "privateKeyEnv": "APP_KEY"}},
                               "slack": {"botTokenEnv": "MY_BOT"}})
    env = {"APP_KEY": PEM, "MY_BOT": "xoxb-1234567890-secret",
           "GITHUB_WEBHOOK_SECRET": "hook secret value", "SLACK_SIGNING_SECRET": "short"}
    secrets = secret_values(config, env)
    assert "xoxb-1234567890-secret" in secrets and "hook secret value" in secrets
    assert "AAAAnotARealKeyJustATestLineForTheFilter0001" in secrets  # a PEM line alone
    assert "short" not in secrets  # too short to be told from ordinary words
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(SecretFilter(secrets))
    log = _logger(handler)
    log.info("token=%s", "xoxb-1234567890-secret")
    try:
        raise ValueError("refused: hook secret value")
    except ValueError:
        log.exception("call failed")
    text = out.getvalue()
    assert "xoxb-1234567890-secret" not in text and "hook secret value" not in text
    assert text.splitlines()[0] == f"token={REDACTED}"
    assert f"ValueError: refused: {REDACTED}" in text
