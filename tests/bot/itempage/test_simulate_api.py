"""Issue 24 §4, ``POST /api/simulate`` on ``serve``: for people who can read the
repository (signed in with GitHub, as for the details page), the same engine code as
``loopgate simulate`` on a copy of the item; nothing reaches the store, the outbox or
GitHub."""

from __future__ import annotations

from typing import Any

from bot.itempage.simulate_api import PER_MINUTE, Throttle
from engine.simulate import simulate_changes, simulate_decision, simulate_push
from tests.bot.itempage.conftest import GATE, PUBLIC, Site
from tests.bridges.conftest import REPO

API = "/api/simulate"


def _writes(site: Site) -> list[tuple[str, str]]:
    # GraphQL queries are POSTs that read; every other non-GET is a write.
    return [(r.method, r.route) for r in site.fake.requests
            if r.method not in {"GET", "HEAD"} and r.route not in {"graphql", "oauth"}]


def _stored(site: Site, ref: Any) -> dict[str, Any]:
    store = site.world.services.store
    state = store.load(ref)
    return {"revision": state.revision, "document": state.to_document(),
            "events": len(store.events(ref)),
            "outbox": [(r.id, r.status) for r in store.effects.rows()]}


def test_a_reader_gets_the_cli_s_simulation_and_nothing_is_written(site: Site) -> None:
    ref = site.at_gate()
    site.fake.set_writers(REPO, ["carol"])  # another person's answer needs write access
    site.sign_in("carol")
    before = _stored(site, ref)
    comments = len(site.fake.comments_on(REPO, ref.number))
    site.fake.reset_log()

    dave = site.client.post(API, json={"item": str(ref), "approve": GATE, "as": "dave"})
    bob = site.client.post(API, json={"item": f"https://github.com/{REPO}/issues/{ref.number}",
                                      "approve": GATE, "as": "@bob"})

    assert dave.status_code == 200 and dave.mimetype == "application/json"
    assert dave.get_json()["counted"] is True
    assert dave.get_json()["tally"] == "1 of 2 approvals: @dave"
    assert bob.status_code == 200 and bob.get_json()["counted"] is False
    assert bob.get_json()["reason"].startswith(f"@bob opened {REPO}#")
    assert _writes(site) == []  # the fake GitHub saw no write
    assert site.fake.count(route="repo") == 1  # the access check, once (cached)
    assert _stored(site, ref) == before  # store, event log and outbox as they were
    assert len(site.fake.comments_on(REPO, ref.number)) == comments
    s = site.world.services
    direct = simulate_decision(s.graph, s.store, s.ports, s.settings, ref, "dave", GATE,
                               via="web")
    assert dave.get_json() == direct.to_json()  # the CLI's document, asked on the web
    # The effects name the surface actually asked: the web, never Slack.
    [echo] = [e for e in dave.get_json()["effects"] if e.startswith("post-comment ")]
    assert echo == (f"post-comment '✅ **Approved** at `{GATE}` by @dave — from the web.'")
    assert not any("Slack" in e for e in dave.get_json()["effects"])


def test_as_defaults_to_the_signed_in_person(site: Site) -> None:
    ref = site.at_gate()
    site.sign_in("alice")
    answer = site.client.post(API, json={"item": str(ref), "approve": GATE})
    assert answer.status_code == 200
    assert answer.get_json()["as"] == "alice" and answer.get_json()["counted"] is False


def test_a_push_is_simulated_too(site: Site) -> None:
    ref = site.at_gate()
    site.sign_in("alice")
    pull = max(n for n, i in site.fake.repos[REPO].issues.items() if i.is_pr)
    answer = site.client.post(API, json={"item": str(ref), "push": {str(pull): "abcdef1"}})
    assert answer.status_code == 200
    assert answer.get_json()["pulls"] == [pull] and answer.get_json()["node"] == ""


def test_a_codeowners_change_is_the_cli_s_too_alone_or_with_a_push(site: Site) -> None:
    # Issue 24 §4: codeownersChange is --codeowners-change; nothing is written either.
    site.fake.put_file(REPO, ".github/CODEOWNERS", "* @carol\nweb/ @dave\n")
    ref = site.at_gate()
    site.sign_in("alice")
    before = _stored(site, ref)
    site.fake.reset_log()
    pull = max(n for n, i in site.fake.repos[REPO].issues.items() if i.is_pr)
    alone = site.client.post(API, json={"item": str(ref), "codeownersChange": ["/web/app.ts"]})
    pushed = site.client.post(API, json={"item": str(ref), "push": {str(pull): "abcdef1"},
                                         "codeownersChange": ["web/app.ts"]})
    s = site.world.services
    assert alone.status_code == 200, alone.get_json()
    assert alone.get_json() == simulate_changes(s.graph, s.store, s.ports, s.settings, ref,
                                                ["web/app.ts"]).to_json()
    assert alone.get_json()["codeownersChange"] == ["web/app.ts"]
    assert alone.get_json()["codeOwners"]["files"]["web/app.ts"] == ["@dave"]
    assert pushed.status_code == 200
    assert pushed.get_json() == simulate_push(s.graph, s.store, s.ports, s.settings, ref,
                                              [(pull, "abcdef1")], ["web/app.ts"]).to_json()
    assert _writes(site) == []
    assert _stored(site, ref) == before


def test_a_reader_without_write_access_may_ask_only_about_their_own_answer(
        site: Site) -> None:
    # The rules read team memberships with loopgate's own token: an answer "as" anyone
    # would tell every reader of a public repository who is in a team (a trial found it).
    ref = site.at_gate()
    site.fake.add_team("acme", "reviewers", ["dave"])
    site.sign_in("mallory")  # can read the public repository, cannot write to it
    site.fake.reset_log()
    dave = site.client.post(API, json={"item": str(ref), "approve": GATE, "as": "dave"})
    assert dave.status_code == 403
    assert "write access" in dave.get_json()["error"] and "counted" not in dave.get_json()
    assert site.fake.count(route="team-membership") == 0  # nothing was asked for her
    own = site.client.post(API, json={"item": str(ref), "approve": GATE, "as": "mallory"})
    assert own.status_code == 200 and own.get_json()["as"] == "mallory"
    assert site.client.post(API, json={"item": str(ref), "approve": GATE}).status_code == 200
    assert site.fake.count(route="repo") == 1  # one access answer, read and write cached


def test_a_person_may_ask_twenty_times_a_minute(site: Site) -> None:
    ref = site.at_gate()
    site.sign_in("alice")
    body = {"item": str(ref), "approve": GATE}
    answers = [site.client.post(API, json=body).status_code for _ in range(PER_MINUTE)]
    assert answers == [200] * PER_MINUTE
    late = site.client.post(API, json=body)
    assert late.status_code == 429 and 1 <= int(late.headers["Retry-After"]) <= 60


def test_the_throttle_counts_per_person_within_its_window() -> None:
    now = [100.0]
    throttle = Throttle(limit=2, window=60.0, clock=lambda: now[0])
    assert [throttle.wait("Alice"), throttle.wait("alice"), throttle.wait("bob")] == [0, 0, 0]
    assert throttle.wait("ALICE") == 60.0
    now[0] = 160.5
    assert throttle.wait("alice") == 0.0


def test_without_a_session_it_is_401(site: Site) -> None:
    ref = site.at_gate()
    answer = site.client.post(API, json={"item": str(ref), "approve": GATE})
    assert answer.status_code == 401
    assert answer.get_json()["signIn"] == f"{PUBLIC}/auth/login?next={API}"


def test_a_person_who_cannot_read_the_repository_gets_403(site: Site) -> None:
    ref = site.at_gate()
    site.fake.set_private(REPO, readers=["alice"])
    site.sign_in("mallory")
    hidden = site.client.post(API, json={"item": str(ref), "approve": GATE})
    missing = site.client.post(API, json={"item": f"acme/nothing#{ref.number}",
                                          "approve": GATE})
    assert hidden.status_code == missing.status_code == 403
    assert hidden.get_json() == missing.get_json() and set(hidden.get_json()) == {"error"}


def test_cross_site_requests_are_refused(site: Site) -> None:
    ref = site.at_gate()
    site.sign_in("alice")
    body = {"item": str(ref), "approve": GATE}
    form = site.client.post(API, data={"item": str(ref), "approve": GATE})
    assert form.status_code == 415  # what a cross-site form can send
    plain = site.client.post(API, data='{"item": "x"}', content_type="text/plain")
    assert plain.status_code == 415
    other = site.client.post(API, json=body, headers={"Origin": "https://evil.example"})
    assert other.status_code == 403
    same = site.client.post(API, json=body, headers={"Origin": PUBLIC})
    assert same.status_code == 200


def test_bad_bodies_get_one_line_naming_the_key(site: Site) -> None:
    ref = site.at_gate()
    site.sign_in("alice")
    cases = {
        "the body must be a JSON object": ["x"],
        "item: not a work item reference": {"item": "acme/widgets", "approve": GATE},
        "give either approve": {"item": str(ref)},
        "codeownersChange: '../x' is not a repository path": {
            "item": str(ref), "codeownersChange": ["../x"]},
        "codeownersChange: expected a list": {"item": str(ref), "codeownersChange": "a.py"},
        "approve: 'nowhere' is not a node of the graph": {"item": str(ref),
                                                          "approve": "nowhere"},
        "as: 'bob smith' is not a GitHub login": {"item": str(ref), "approve": GATE,
                                                  "as": "bob smith"},
        "outcome: 'maybe' is not one of": {"item": str(ref), "approve": GATE,
                                           "outcome": "maybe"},
        "push: '12': 'xyz' is not": {"item": str(ref), "push": {"12": "xyz"}},
        "unknown key 'force'": {"item": str(ref), "force": True},
    }
    for message, body in cases.items():
        answer = site.client.post(API, json=body)
        assert answer.status_code == 400, (message, answer.get_json())
        assert answer.get_json()["error"].startswith(message), answer.get_json()
    big = site.client.post(API, data="{" + " " * 20000 + "}", content_type="application/json")
    assert big.status_code == 413


def test_an_item_loopgate_never_started_is_404(site: Site) -> None:
    site.at_gate()
    site.sign_in("alice")
    number = site.fake.create_issue(REPO, "not walked")
    answer = site.client.post(API, json={"item": f"{REPO}#{number}", "approve": GATE})
    assert answer.status_code == 404
    assert answer.get_json() == {"error": f"loopgate has no started work item {REPO}#{number}",
                                 "code": "not-started"}


def test_github_unreachable_during_the_check_is_503(site: Site) -> None:
    ref = site.at_gate()
    site.sign_in("alice")
    site.fake.fail_route("GET", "repo", 502)
    answer = site.client.post(API, json={"item": str(ref), "approve": GATE})
    assert answer.status_code == 503 and set(answer.get_json()) == {"error"}


def test_an_item_stored_unreadable_is_500_naming_it_never_its_value(site: Site) -> None:
    """The request is fine, the stored item is not: a server fault (500, not 400), which
    no retry mends (not 503); the item page answers the same."""
    ref = site.at_gate()
    site.sign_in("alice")
    error = site.unreadable(ref)
    answer = site.client.post(API, json={"item": str(ref), "approve": GATE})
    assert answer.status_code == 500 and answer.mimetype == "application/json"
    assert "Retry-After" not in answer.headers
    assert answer.get_json() == {"error": (
        f"loopgate cannot read its stored work item {ref}: {error.detail}; "
        "an operator must repair it (loopgate check names it)")}
    assert error.detail.startswith("column surface: not JSON (")
    assert "SECRET-SURFACE" not in answer.get_data(as_text=True)
    page = site.client.get(f"/items/{REPO}/{ref.number}",
                           headers={"Accept": "application/json"})
    assert (page.status_code, page.get_json()) == (500, answer.get_json())
