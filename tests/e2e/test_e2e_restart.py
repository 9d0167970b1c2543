"""Scenario 4: ``loopgate serve`` is killed with SIGKILL right after it answered the spec
quiz tick webhook (``202``), then started again on the same database and configuration:
the item ends in the same state as without the kill (the whole of scenario 1 is asserted
afterwards) and nothing is posted twice, on GitHub or in Slack (issue 6)."""

from __future__ import annotations

import pytest

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.fakes.github import FakeComment

pytestmark = pytest.mark.e2e


def test_a_sigkill_right_after_the_tick_loses_nothing_and_repeats_nothing(
        make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)  # webhooks only: no poller catches up
    killed: list[str] = []

    def tick_then_kill(quiz: FakeComment) -> None:
        answered = walk.tick(quiz, wait=False)
        assert answered is not None and answered.json()["status"] == "queued"
        walk.server.kill()
        assert walk.server.proc is not None and walk.server.proc.returncode == -9
        killed.append(walk.deliveries[-1])
        walk.server.start()

    expect.walk_to_human_approval(walk, tick_spec=tick_then_kill)

    [tick] = killed
    log = walk.server.log()
    handled = [line for line in log.splitlines()
               if f"delivery={tick} " in line and " result=" in line]
    assert len(handled) == 1, handled  # before the kill or replayed after it, never both
    assert "result=handled reason=evaluated" in handled[0]
    replayed = f"delivery={tick} source=github kind=quiz_attestation replayed from the inbox"
    print("handled", "after the restart" if replayed in log else "before the kill")
