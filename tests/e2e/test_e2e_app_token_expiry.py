"""Scenario 5 (issue 9): loopgate runs as a GitHub App and its installation token expires
in the middle of the walk — GitHub's clock passes the token's ``expires_at`` right before
the spec quiz is ticked. The server's next call is refused, it mints a new token once and
carries on: the tick is attested, the walk reaches ``complete``, nothing is lost and
nothing is posted twice."""

from __future__ import annotations

import pytest

from tests.e2e import expect
from tests.e2e.conftest import MakeWalk
from tests.fakes.github import FakeComment
from tests.fakes.github_app import BAD_CREDENTIALS

pytestmark = pytest.mark.e2e
#: Installation tokens live 4 minutes here (GitHub: an hour), so moving GitHub's clock past
#: one keeps loopgate's App JWTs (5 minutes) valid.
TTL = 240


@pytest.mark.parametrize("gh", [{"token_ttl": TTL}], indirect=True, ids=["app"])
def test_an_installation_token_expiring_mid_walk_loses_nothing(make_walk: MakeWalk) -> None:
    walk = make_walk(poll_interval=0, webhooks=True)
    app = walk.gh.app
    assert app is not None

    def expire_then_tick(quiz: FakeComment) -> None:
        minted = len(app.minted)
        walk.gh.advance(TTL + 1)  # every token minted so far has expired
        walk.tick(quiz)
        assert len(app.minted) > minted  # the server minted a new one to read the tick

    expect.walk_to_human_approval(walk, tick_spec=expire_then_tick)
    expect.complete(walk, walk.approve_to_complete())
    assert any(message == BAD_CREDENTIALS for _, message in app.refusals)
    assert "token refused by GitHub; minting a new one" in walk.server.log()
    assert "credentials refused" not in walk.server.log()  # one refresh was enough
