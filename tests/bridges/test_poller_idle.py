"""Idle polls cost nothing (issue 21 §5): the cycle right after one that read something is
already all 304s, because a window that fitted in a page keeps the ``since`` its ETag
answered; nothing is delivered twice for it."""

from __future__ import annotations

from tests.bridges.conftest import GitHubWorld


def test_every_idle_cycle_after_a_change_costs_no_counted_request(world: GitHubWorld) -> None:
    seen: list[int] = []
    world.dispatcher.comment_observers.append(lambda ref, c: seen.append(c.id))
    ref = world.issue()
    first = world.comment(ref, "hello")
    world.poll()  # priming: reads the comment (counted)
    world.fake.reset_log()
    for _ in range(3):
        report = world.poll()
        assert report.repos[0].not_modified == 3, report
    assert world.fake.count(counted=True) == 0 and world.fake.count(status=304) == 9
    world.fake.advance(2)
    second = world.comment(ref, "again")
    world.fake.reset_log()
    assert world.poll().repos[0].deliveries == 1  # the change: one counted 200
    world.fake.reset_log()
    world.poll()
    assert world.fake.count(counted=True) == 0  # and the very next idle cycle is a 304
    assert seen == [first.id, second.id]  # the re-listed first comment is not new again
