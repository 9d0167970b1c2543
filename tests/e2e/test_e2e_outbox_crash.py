"""Issue 10 acceptance: ``loopgate serve`` is SIGKILLed between the commit of a start and
its first GitHub write, and between that write and its recording; after a restart on the
same database each effect happens exactly once.

The fake GitHub holds the first comment POST while the test kills the server: dropped
unanswered (GitHub never saw it: the kill came between commit and effect) or carried out
with the answer lost (the kill came between effect and its recording).
"""

from __future__ import annotations

from collections import Counter

import pytest

from engine.hooks.markers import PHASE_SELECTION_MARKER
from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.e2e.stack import AUTHOR, REPO, START_LABEL
from tests.fakes.github import wait_for

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("posted", [False, True],
                         ids=["killed-before-the-write", "killed-before-its-recording"])
def test_a_sigkill_around_a_github_write_makes_it_happen_exactly_once(
        make_walk: MakeWalk, posted: bool) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)
    walk.open_issue()
    hold = walk.gh.hold("POST", "comment-create", apply=posted)
    walk.gh.add_label(REPO, walk.number, START_LABEL)
    walk.webhook("issues", "labeled", label=START_LABEL, sender=AUTHOR)
    assert hold.arrived.wait(30), "the worker never wrote to GitHub"
    held = len(walk.comments())
    walk.server.kill()
    assert walk.server.proc is not None and walk.server.proc.returncode == -9
    hold.release()
    if posted:  # GitHub carried it out; the killed server never heard back
        assert wait_for(lambda: len(walk.comments()) == held + 1, timeout=20)

    walk.server.start()
    checklist = walk.wait_comment(PHASE_SELECTION_MARKER)[0]
    expect.at_phase_selection(walk, checklist)
    assert wait_for(lambda: walk.home.cli("effects", "list").stdout.strip() == "nothing owed",
                    timeout=30)

    markers = walk.posted_markers()
    assert markers and set(markers.values()) == {1}, markers  # every write exactly once
    assert markers == Counter({"phase-selection": 1, "assignment phase-selection": 1})
    posts = walk.slack_posts()
    assert [key for key, n in posts.items() if n > 1] == []
    assert "freed 1 row(s) claimed by a dead performer" in walk.server.log()
