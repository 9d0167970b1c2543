"""Scenario 2: the same walk with the poller only (``pollIntervalSeconds: 1``, no webhook
is ever delivered) reaches the same end state (issue 6)."""

from __future__ import annotations

import pytest

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk

pytestmark = pytest.mark.e2e


def test_the_poller_alone_walks_the_same_work_item_to_the_same_end_state(
        make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=1, webhooks=False)
    expect.walk_to_human_approval(walk)
    assert walk.deliveries == []
    log = walk.server.log()
    assert "source=poller kind=start" in log and "source=github" not in log
    assert log.count("source=poller kind=quiz_attestation") == 2
    expect.complete(walk, walk.approve_to_complete())
