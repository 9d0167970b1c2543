"""Webhook verification and parsing (pure): the real payloads signed as
``headers.computed.json`` says, forged and legacy signatures refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridges.github.errors import PayloadError, SignatureError
from bridges.github.webhook import Delivery, header, parse_delivery, sign, verify_signature
from tests.bridges.conftest import SECRET


def _computed(fixtures_dir: Path) -> dict[str, dict[str, str]]:
    data = json.loads((fixtures_dir / "github/webhooks/headers.computed.json").read_text())
    assert data["_secret"] == SECRET
    folder = fixtures_dir / "github/webhooks"
    return {name: headers for name, headers in data["files"].items() if (folder / name).exists()}


def test_every_real_payload_verifies_with_its_computed_signature(fixtures_dir: Path) -> None:
    computed = _computed(fixtures_dir)
    assert len(computed) == 8  # the payload files present beside headers.computed.json
    for name, headers in computed.items():
        body = (fixtures_dir / "github/webhooks" / name).read_bytes()
        verify_signature(headers, body, SECRET)  # raises on mismatch
        assert sign(body, SECRET) == headers["X-Hub-Signature-256"]


def test_a_changed_byte_fails_verification(fixtures_dir: Path) -> None:
    name, headers = next(iter(_computed(fixtures_dir).items()))
    body = (fixtures_dir / "github/webhooks" / name).read_bytes()
    with pytest.raises(SignatureError, match="does not match"):
        verify_signature(headers, body + b" ", SECRET)


def test_a_wrong_secret_fails_verification(fixtures_dir: Path) -> None:
    name, headers = next(iter(_computed(fixtures_dir).items()))
    body = (fixtures_dir / "github/webhooks" / name).read_bytes()
    with pytest.raises(SignatureError) as err:
        verify_signature(headers, body, "not the secret")
    assert "not the secret" not in str(err.value)


@pytest.mark.parametrize("value, message", [
    (None, "missing X-Hub-Signature-256"),
    ("", "missing X-Hub-Signature-256"),
    ("sha1=" + "0" * 40, "malformed"),
    ("sha256=abc", "malformed"),
    ("md5=" + "0" * 64, "malformed"),
])  # fmt: skip
def test_missing_or_malformed_signature_is_refused(value: str | None, message: str) -> None:
    headers = {} if value is None else {"X-Hub-Signature-256": value}
    with pytest.raises(SignatureError, match=message):
        verify_signature(headers, b"{}", SECRET)


def test_a_valid_sha1_signature_alone_is_never_accepted() -> None:
    import hashlib
    import hmac

    body = b'{"zen": "Keep it logically awesome."}'
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    with pytest.raises(SignatureError, match="missing X-Hub-Signature-256"):
        verify_signature({"X-Hub-Signature": sha1}, body, SECRET)


def test_an_empty_secret_cannot_verify_anything() -> None:
    with pytest.raises(SignatureError, match="no webhook secret"):
        verify_signature({"X-Hub-Signature-256": sign(b"{}", "")}, b"{}", "")


def test_header_names_are_case_insensitive() -> None:
    body = b"{}"
    verify_signature({"x-hub-signature-256": sign(body, SECRET)}, body, SECRET)
    assert header({"X-GITHUB-EVENT": "ping"}, "x-github-event") == "ping"


def test_parse_delivery_reads_event_action_and_id(fixtures_dir: Path) -> None:
    body = (fixtures_dir / "github/webhooks/issue_comment.edited.payload.json").read_bytes()
    delivery = parse_delivery({"X-GitHub-Event": "issue_comment",
                               "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"}, body)
    assert delivery == Delivery("72d3162e-cc78-11e3-81ab-4c9367dc0958", "github",
                                "issue_comment", "edited", json.loads(body))
    assert delivery.route_key == "issue_comment.edited"


def test_ping_has_no_action(fixtures_dir: Path) -> None:
    body = (fixtures_dir / "github/webhooks/ping.payload.json").read_bytes()
    delivery = parse_delivery({"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1"}, body)
    assert (delivery.action, delivery.route_key) == ("", "ping")


@pytest.mark.parametrize("headers, body, message", [
    ({"X-GitHub-Delivery": "d1"}, b"{}", "missing X-GitHub-Event"),
    ({"X-GitHub-Event": "ping"}, b"{}", "missing X-GitHub-Delivery"),
    ({"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1"}, b"not json", "not UTF-8 JSON"),
    ({"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1"}, b"[1, 2]", "not a JSON object"),
    ({"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1"}, b"\xff\xfe", "not UTF-8 JSON"),
])  # fmt: skip
def test_bad_deliveries_name_the_problem(headers: dict[str, str], body: bytes,
                                         message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        parse_delivery(headers, body)
