"""Webhook verification and parsing: pure functions, no network code (sans-I/O).

``verify_signature`` must run on the raw request body *before* anything parses it
(issue 3 §3; GitHub Docs "Validating webhook deliveries"): HMAC-SHA256 of the exact bytes,
keyed with the webhook secret, compared in constant time. Only ``X-Hub-Signature-256`` is
read: the legacy SHA-1 ``X-Hub-Signature`` header is never accepted.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any, Protocol

from bridges.github.errors import PayloadError, SignatureError
from bridges.ingress.delivery import Delivery

__all__ = ["Delivery", "header", "sign", "verify_signature", "parse_delivery", "SIGNATURE_HEADER",
           "MAX_DEPTH", "MAX_DELIVERY_ID", "MAX_BODY_BYTES"]

SIGNATURE_HEADER = "X-Hub-Signature-256"
_PREFIX = "sha256="
_HEX_LEN = 64
#: The deepest nesting of objects and arrays a delivery may have (issue 19 §6). GitHub's
#: payloads nest about 6 levels (a comment's ``reactions`` inside ``comment`` inside the
#: payload); 64 leaves room for any event GitHub adds and refuses a body built to exhaust
#: the parser's recursion before anything walks it.
MAX_DEPTH = 64
#: GitHub caps webhook payloads at 25 MB; a larger body is refused before it is read.
MAX_BODY_BYTES = 25 * 1024 * 1024 + 1024
#: The longest ``X-GitHub-Delivery`` accepted (issue 19 §6): GitHub's is a 36-character
#: GUID; the id becomes a database key and a log field, so a longer one is refused.
MAX_DELIVERY_ID = 100


class HeaderItems(Protocol):
    """Request headers as anything with ``items()`` of ``(name, value)`` pairs: a dict,
    Flask's (werkzeug's) ``Headers``, which is no ``Mapping``."""

    def items(self) -> Iterable[tuple[str, str]]:
        """Every ``(name, value)`` pair, names in any case."""
        ...


def header(headers: HeaderItems, name: str) -> str:
    """A header's value looked up case-insensitively ("" when absent).

    Args:
        headers: any mapping of header names to values (Flask's, a dict, ...).
        name: the header name, any case.
    """
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return ""


def _secret_bytes(secret: str | bytes) -> bytes:
    return secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)


def sign(body: bytes, secret: str | bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub would send for ``body`` (tests, the fake).

    Args:
        body: the exact request bytes.
        secret: the webhook secret.

    Returns:
        ``sha256=<64 lower-case hex digits>``.
    """
    return _PREFIX + hmac.new(_secret_bytes(secret), body, hashlib.sha256).hexdigest()


def verify_signature(headers: HeaderItems, body: bytes, secret: str | bytes) -> None:
    """Check ``X-Hub-Signature-256`` over the raw body.

    Args:
        headers: the request headers (any case).
        body: the raw request body, exactly as received.
        secret: the webhook secret (non-empty).

    Raises:
        SignatureError: the secret is empty, the header is missing or not
            ``sha256=<64 hex>``, or the digest does not match. The message never
            contains the secret or the expected digest.
    """
    if not secret:
        raise SignatureError("no webhook secret configured; cannot verify deliveries")
    given = header(headers, SIGNATURE_HEADER).strip()
    if not given:
        raise SignatureError(f"missing {SIGNATURE_HEADER} header")
    if not given.startswith(_PREFIX) or len(given) != len(_PREFIX) + _HEX_LEN:
        raise SignatureError(f"malformed {SIGNATURE_HEADER} header (expected sha256=<hex>)")
    expected = sign(body, secret)
    # compare_digest on ASCII bytes: constant time in the length of the inputs.
    if not hmac.compare_digest(expected.encode("ascii"), given.lower().encode("ascii", "replace")):
        raise SignatureError(f"{SIGNATURE_HEADER} does not match the body")


def _depth_over(value: Any, limit: int) -> bool:
    """True when ``value`` nests objects/arrays more than ``limit`` levels (walked with a
    stack, not recursion, so the check itself cannot exhaust the interpreter's stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (item.values() if isinstance(item, dict)
                    else item if isinstance(item, list) else None)
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


def parse_delivery(headers: HeaderItems, body: bytes) -> Delivery:
    """Parse a verified webhook request into a :class:`Delivery`.

    Args:
        headers: the request headers; ``X-GitHub-Event`` and ``X-GitHub-Delivery`` are read.
        body: the raw JSON body (UTF-8).

    Returns:
        ``Delivery(delivery_id, "github", event, action, payload)``.

    Raises:
        PayloadError: a required header is missing, the delivery id is longer than
            :data:`MAX_DELIVERY_ID`, the body is not a JSON object, or it nests deeper than
            :data:`MAX_DEPTH` (issue 19 §6: a 400, never a crash).
    """
    event = header(headers, "X-GitHub-Event").strip()
    if not event:
        raise PayloadError("missing X-GitHub-Event header")
    delivery_id = header(headers, "X-GitHub-Delivery").strip()
    if not delivery_id:
        raise PayloadError("missing X-GitHub-Delivery header")
    if len(delivery_id) > MAX_DELIVERY_ID:
        # The id itself is not repeated: it is what is too long.
        raise PayloadError(f"X-GitHub-Delivery is {len(delivery_id)} characters long "
                           f"(at most {MAX_DELIVERY_ID})")
    try:
        payload = json.loads(body.decode("utf-8"))
    except RecursionError:
        raise PayloadError(f"delivery {delivery_id}: body nests deeper than {MAX_DEPTH} "
                           "levels") from None
    except (UnicodeDecodeError, ValueError) as exc:
        kind = exc.__class__.__name__
        raise PayloadError(f"delivery {delivery_id}: body is not UTF-8 JSON ({kind})") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"delivery {delivery_id}: body is not a JSON object")
    if _depth_over(payload, MAX_DEPTH):
        raise PayloadError(f"delivery {delivery_id}: body nests deeper than {MAX_DEPTH} levels")
    action = payload.get("action")
    action_name = action if isinstance(action, str) else ""
    return Delivery(delivery_id, "github", event, action_name, payload)
