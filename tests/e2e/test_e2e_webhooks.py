"""Scenario 1: one ``loopgate serve`` walks a work item from the start label to
human-approval, driven by signed webhooks (no poller), a signed Slack Execute click and
``loopgate complete`` claims (issue 6). Every gate is asserted on the issue thread, the
Slack calls and ``loopgate check --format json`` (see :mod:`tests.e2e.expect`)."""

from __future__ import annotations

import pytest

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk

pytestmark = pytest.mark.e2e


def test_webhooks_walk_a_work_item_from_the_start_label_to_human_approval(
        make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)
    expect.walk_to_human_approval(walk)
    assert "poller off (pollIntervalSeconds is 0): webhooks only" in walk.server.log()
    # every delivery was answered 202 and handled once, each logged with its id
    for delivery in walk.deliveries:
        assert walk.server.log().count(f"delivery={delivery} ") == 1
    expect.complete(walk, walk.approve_to_complete())
