"""The redaction pass: find secrets in an explainer page before it is written or committed.

Detection is Yelp's ``detect-secrets``, run in-process through its API with exactly these
plugins (their ``secret_type`` is the *kind* reported):

===========================  ==========================================================
plugin                       finds
===========================  ==========================================================
``GitHubTokenDetector``      ``ghp_`` / ``gho_`` / ``ghu_`` / ``ghs_`` / ``ghr_`` tokens
``SlackDetector``            ``xox[abposr]-`` tokens and ``hooks.slack.com`` webhook URLs
``AWSKeyDetector``           AWS access key ids and ``aws...key = "..."`` secrets
``PrivateKeyDetector``       ``-----BEGIN ... PRIVATE KEY-----`` blocks (RSA, EC, SSH, PGP)
``JwtTokenDetector``         JSON Web Tokens (three base64url parts, ``eyJ...``)
``BasicAuthDetector``        URLs carrying a user name and a password before the host
===========================  ==========================================================

Filters: none besides detect-secrets' two defaults. In particular its allowlist filter
(``pragma: allowlist secret``) is off, so text inside a page cannot switch the pass off.

Where detect-secrets has no plugin, three minimal patterns fill the gap (kinds in
:data:`EXTRA_PATTERNS`): an ``Authorization: Bearer <token>`` value that is not a JWT,
GitHub fine-grained tokens (``github_pat_``, which its GitHub plugin predates) and Slack
app-level tokens (``xapp-``).

Settings in detect-secrets are process-global; :func:`find_secrets` swaps them in with
``transient_settings`` and restores them, and a lock keeps two threads from interleaving.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from detect_secrets.core.scan import scan_line
from detect_secrets.settings import transient_settings

__all__ = ["Finding", "PLUGINS", "EXTRA_PATTERNS", "find_secrets"]

#: The detect-secrets plugins the pass runs (class names).
PLUGINS: tuple[str, ...] = (
    "GitHubTokenDetector",
    "SlackDetector",
    "AWSKeyDetector",
    "PrivateKeyDetector",
    "JwtTokenDetector",
    "BasicAuthDetector",
)

#: kind -> pattern, only for what no detect-secrets plugin covers.
EXTRA_PATTERNS: dict[str, re.Pattern[str]] = {
    # RFC 6750 b64token after "Bearer"; 20+ characters so prose ("Bearer tokens") is not hit.
    "Bearer Token": re.compile(r"\bBearer\s+[A-Za-z0-9\-._~+/]{20,}=*"),
    "GitHub Fine-grained Token": re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    "Slack App Token": re.compile(r"\bxapp-\d+-[A-Za-z0-9]+-\d+-[A-Za-z0-9]+"),
}

_LOCK = threading.Lock()


@dataclass(frozen=True, order=True)
class Finding:
    """A secret found on one line.

    Attributes:
        line: 1-based line number.
        kind: what was found, e.g. ``GitHub Token``, ``Slack Token``, ``Private Key``.
    """

    line: int
    kind: str


def _read(path_or_text: str | os.PathLike[str]) -> str:
    if isinstance(path_or_text, os.PathLike):
        return Path(path_or_text).read_text("utf-8", errors="replace")
    return path_or_text


def find_secrets(path_or_text: str | os.PathLike[str]) -> list[Finding]:
    """Scan a file or a text for secrets.

    Args:
        path_or_text: a :class:`pathlib.Path` (or other ``os.PathLike``) is read as a
            UTF-8 file; a ``str`` is scanned as the text itself.

    Returns:
        One finding per (line, kind), sorted by line; empty when the text is clean. The
        secret itself is never returned, so callers cannot log it by mistake.

    Raises:
        OSError: the file cannot be read.
    """
    text = _read(path_or_text)
    found: set[Finding] = set()
    config = {"plugins_used": [{"name": name} for name in PLUGINS], "filters_used": []}
    with _LOCK, transient_settings(config):
        for number, line in enumerate(text.splitlines(), start=1):
            found.update(Finding(number, secret.type) for secret in scan_line(line))
    for number, line in enumerate(text.splitlines(), start=1):
        found.update(Finding(number, kind) for kind, pattern in EXTRA_PATTERNS.items()
                     if pattern.search(line) and not _is_jwt_bearer(line, kind, found, number))
    return sorted(found)


def _is_jwt_bearer(line: str, kind: str, found: set[Finding], number: int) -> bool:
    """A bearer token that is a JWT is already reported as a JSON Web Token."""
    return kind == "Bearer Token" and Finding(number, "JSON Web Token") in found
