"""The served GitHub stack under its supervisor (issue 10 §4): stopped while the
dispatcher has a webhook delivery in hand, every thread of the stack (dispatcher, inbox
replay, waitress) is joined before the store closes, and the delivery is finished."""

from __future__ import annotations

import threading

from engine.store.sqlite import SqliteStore
from tests.bridges.conftest import REPO, SECRET, GitHubWorld


def test_the_served_github_stack_is_joined_before_its_store_closes(world: GitHubWorld) -> None:
    """The real stack of the bridge tests (dispatcher busy with a webhook delivery, inbox
    replay, waitress threads), stopped mid-delivery: every one of its threads is joined
    before ``SqliteStore.close`` runs, and the delivery in hand is finished."""
    earlier = set(threading.enumerate())
    world.serve()
    entered, release = threading.Event(), threading.Event()
    world.dispatcher.comment_observers.append(lambda ref, c: (entered.set(), release.wait(10)))
    alive_at_close: list[str] = []
    store = world.services.store
    real_close = store.close

    def close() -> None:
        alive_at_close.extend(t.name for t in threading.enumerate()
                              if t not in earlier and t.name.startswith(("loopgate-",
                                                                         "waitress-")))
        real_close()

    store.close = close  # type: ignore[method-assign]
    ref = world.issue()
    comment = world.comment(ref, "the-loop start")
    headers, body = world.fake.webhook("issue_comment", "created", repo=REPO,
                                       number=ref.number, comment_id=comment.id, secret=SECRET)
    assert world.post(headers, body).status_code == 202
    assert entered.wait(10)  # the dispatcher has the delivery in hand
    supervisor = world.supervisor
    assert supervisor is not None
    stopper = threading.Thread(target=world.close)
    stopper.start()
    assert supervisor.stopping.wait(10)
    release.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert supervisor.stop().closed == ("inbox", "store")
    assert alive_at_close == []
    reopened = SqliteStore(world.tmp / "loopgate.db")
    state = reopened.load(ref)
    reopened.close()
    assert state is not None and state.current_node == "phase-selection"
