"""The redaction pass (detect-secrets in-process, plus the documented gap patterns).

Planted secrets are assembled at runtime from pieces and random characters, so this file
holds no token-shaped string for any scanner to trip over.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

import pytest
from detect_secrets.settings import get_settings

from bot.explainer.redact import Finding, find_secrets

_RNG = random.Random(20261130)


def _chars(count: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(count))


def planted_github_token() -> str:
    """A classic personal-access-token shape: prefix, underscore, 36 characters."""
    return "gh" + "p" + "_" + _chars(36)


def planted_slack_token() -> str:
    """A bot-token shape: prefix, two numeric ids, a lower-case secret."""
    return "-".join(["xo" + "xb", _chars(11, string.digits), _chars(12, string.digits),
                     _chars(24, string.ascii_lowercase + string.digits)])


def planted_jwt() -> str:
    def part(obj: dict[str, str]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return ".".join([part({"alg": "HS256", "typ": "JWT"}), part({"sub": "someone"}), _chars(43)])


def _text(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_a_planted_github_token_is_found_on_its_line() -> None:
    text = _text("<p>Background</p>", f"<pre><code>token = {planted_github_token()}</code></pre>")
    assert find_secrets(text) == [Finding(2, "GitHub Token")]


def test_a_planted_slack_token_is_found_on_its_line() -> None:
    text = _text("intro", "", f"SLACK = '{planted_slack_token()}'")
    assert find_secrets(text) == [Finding(3, "Slack Token")]


def test_both_planted_tokens_in_one_file_are_found(tmp_path: Path) -> None:
    page = tmp_path / "explainer.html"
    page.write_text(_text("a", planted_slack_token(), "b", planted_github_token()), "utf-8")
    assert find_secrets(page) == [Finding(2, "Slack Token"), Finding(4, "GitHub Token")]


@pytest.mark.parametrize(("line", "kind"), [
    ("-----BEGIN " + "RSA PRIVATE" + " KEY-----", "Private Key"),
    ("key_id = " + "AK" + "IA" + _chars(16, string.ascii_uppercase + string.digits),
     "AWS Access Key"),
    ("https://" + "deploy:" + _chars(14) + "@example.com/repo.git", "Basic Auth Credentials"),
    ("Authorization: " + "Bear" + "er " + _chars(40), "Bearer Token"),
    ("github_" + "pat_" + _chars(82, string.ascii_letters + string.digits + "_"),
     "GitHub Fine-grained Token"),
])
def test_the_other_secret_kinds_are_found(line: str, kind: str) -> None:
    assert find_secrets(_text("x", line)) == [Finding(2, kind)]


def test_a_bearer_jwt_is_reported_once_as_a_json_web_token() -> None:
    assert find_secrets("Authorization: " + "Bear" + "er " + planted_jwt()) == [
        Finding(1, "JSON Web Token")
    ]


def test_clean_text_has_no_findings() -> None:
    text = _text("Bearer tokens are checked by the gate.", "def latest_edit(self):",
                 "https://github.com/acme/widgets/pull/7", "sha256-" + "A" * 43)
    assert find_secrets(text) == []


def test_an_allowlist_pragma_cannot_hide_a_secret() -> None:
    line = f"token = {planted_github_token()}  # pragma: allowlist secret"
    assert find_secrets(line) == [Finding(1, "GitHub Token")]


def test_the_pass_restores_detect_secrets_global_settings() -> None:
    before = (dict(get_settings().plugins), dict(get_settings().filters))
    find_secrets(planted_github_token())
    assert (dict(get_settings().plugins), dict(get_settings().filters)) == before


def test_findings_never_carry_the_secret() -> None:
    token = planted_github_token()
    assert token not in repr(find_secrets(token))
