"""GitHub as it is (issue 9 §0/§1): quiz ticks pass with today's 64-bit comment ids, whether
loopgate posts as a personal token's User or as a GitHub App's Bot (REST ``loopgate[bot]``,
GraphQL ``loopgate``); a User named like the App forges nothing; a Bot editor never attests.

Each scenario runs over the loopback fake GitHub, which spells bots and ids as GitHub does,
with the real poller, receiver, PyGithub and gql. The App's *authentication* (installation
tokens) is covered by the App tests; here loopgate's identity is the App's bot login.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.hooks.markers import PHASE_SELECTION_MARKER, attestation_line
from engine.ports import SELF_MARKER, Comment
from engine.refs import WorkItemRef
from tests.bridges.conftest import REPO, GitHubWorld
from tests.fakes.github import FakeComment, FakeGitHub

APP_BOT = "loopgate[bot]"
TOKEN_USER = "loopgate-bot"


@pytest.fixture(params=["token", "app"])
def mode(request: pytest.FixtureRequest) -> str:
    """How loopgate posts: as a token's User, or as a GitHub App's Bot."""
    return str(request.param)


def _world(mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
           authorized: list[str] | None = None) -> Iterator[GitHubWorld]:
    app = mode == "app"
    with FakeGitHub(bot_login=APP_BOT if app else TOKEN_USER,
                    bot_type="Bot" if app else "User") as gh:
        gh.create_repo(REPO)
        monkeypatch.setenv("GITHUB_TOKEN", gh.token)
        monkeypatch.setenv("LOOPGATE_GITHUB_WRITE_INTERVAL", "0")
        monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
        overrides: dict = {"github": {"botLogin": APP_BOT}} if app else {}
        if authorized is not None:
            overrides["authorizedUsers"] = authorized
        w = GitHubWorld(gh, tmp_path, overrides).build()
        try:
            yield w
        finally:
            w.close()


@pytest.fixture
def world(mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[GitHubWorld]:
    yield from _world(mode, monkeypatch, tmp_path)


@pytest.fixture
def app_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[GitHubWorld]:
    yield from _world("app", monkeypatch, tmp_path)


def _ref(quiz: FakeComment) -> WorkItemRef:
    return WorkItemRef("acme", "widgets", quiz.number)


def _tick_by_webhook(world: GitHubWorld, quiz: FakeComment, editor: str,
                     editor_type: str = "User") -> int:
    before = world.fake.comments[quiz.id].body
    world.tick(quiz, editor, editor_type=editor_type)
    return world.webhook("issue_comment", "edited", _ref(quiz), comment_id=quiz.id,
                         sender=editor, previous_body=before).status_code


def _assert_attested(world: GitHubWorld, quiz: FakeComment, by: str) -> None:
    state = world.state(_ref(quiz))
    assert state.current_node == "tasks-breakdown", state.parked
    decision = state.decisions["spec-quiz"]
    assert decision["attestedBy"] == by
    assert decision["commentId"] == quiz.id


def _assert_waiting(world: GitHubWorld, quiz: FakeComment) -> None:
    state = world.state(_ref(quiz))
    assert state.current_node == "spec-quiz" and state.status == "parked"
    assert "spec-quiz" not in state.decisions


def test_the_quiz_comment_is_the_bots_with_a_64_bit_id(world: GitHubWorld, mode: str) -> None:
    quiz = world.to_spec_quiz(world.issue())
    assert quiz.id > 2**31 - 1
    expected = (APP_BOT, "Bot") if mode == "app" else (TOKEN_USER, "User")
    assert (quiz.author, quiz.author_type) == expected
    recorded = world.state(_ref(quiz)).surface["quiz"]["spec-quiz"]["comments"]
    assert [c["id"] for c in recorded] == [quiz.id]  # round-trips through SQLite unchanged


def test_a_tick_passes_through_the_webhook(world: GitHubWorld) -> None:
    world.serve()
    quiz = world.to_spec_quiz(world.issue())
    assert _tick_by_webhook(world, quiz, "alice") == 202
    _assert_attested(world, quiz, "@alice")
    assert world.fake.invalid_queries == []


def test_a_tick_passes_through_the_poller(world: GitHubWorld) -> None:
    quiz = world.to_spec_quiz(world.issue())
    world.tick(quiz, "alice")
    world.poll()
    _assert_attested(world, quiz, "@alice")


def test_a_look_alike_checklist_by_a_user_named_like_the_app_is_ignored(
        app_world: GitHubWorld) -> None:
    ref = app_world.issue()
    forged = ("- [x] brainstorming\n- [ ] security-review\n- [ ] critic-review\n"
              f"- [ ] `explainer`\n{PHASE_SELECTION_MARKER}\n{SELF_MARKER}\n")
    app_world.comment(ref, forged, as_user="loopgate")  # a User, not the App's Bot
    app_world.services.runtime.start(ref)
    checklists = [(c.author, c.author_type) for c in app_world.fake.comments_on(REPO, ref.number)
                  if PHASE_SELECTION_MARKER in c.body]
    assert checklists == [("loopgate", "User"), (APP_BOT, "Bot")]
    bare = app_world.comment(ref, "the-loop execute", as_user="alice")
    reply = Comment(bare.id, bare.author, bare.body, issue_number=ref.number)
    state = app_world.services.runtime.advance(ref, {"comments": [reply]})
    assert state.current_node == "brainstorming"  # the genuine checklist: nothing unticked
    assert state.skips == {}


def test_a_look_alike_quiz_comment_by_a_user_named_like_the_app_is_refused(
        app_world: GitHubWorld) -> None:
    app_world.serve()
    quiz = app_world.to_spec_quiz(app_world.issue())
    ticked = quiz.body.replace(attestation_line("spec"), attestation_line("spec", True))
    forged = app_world.fake.add_comment(REPO, quiz.number, ticked, as_user="loopgate")
    app_world.fake.edit_comment(forged.id, ticked + " ", "alice")  # alice "ticks" the copy
    app_world.webhook("issue_comment", "edited", _ref(quiz), comment_id=forged.id,
                      sender="alice", previous_body=ticked)
    app_world.poll()
    _assert_waiting(app_world, quiz)
    assert app_world.events(_ref(quiz), "graph.quiz_attested") == []


def test_a_user_named_like_the_app_ticks_like_any_unauthorized_human(
        app_world: GitHubWorld) -> None:
    app_world.serve()
    quiz = app_world.to_spec_quiz(app_world.issue())
    _tick_by_webhook(app_world, quiz, "loopgate")
    _assert_waiting(app_world, quiz)
    assert app_world.events(_ref(quiz), "graph.quiz_refused") == [
        {"node": "spec-quiz", "editor": "loopgate"}]


def test_a_user_named_like_the_app_on_the_allow_list_attests(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for world in _world("app", monkeypatch, tmp_path, authorized=["alice", "loopgate"]):
        world.serve()
        quiz = world.to_spec_quiz(world.issue())
        assert _tick_by_webhook(world, quiz, "loopgate") == 202
        _assert_attested(world, quiz, "@loopgate")


@pytest.mark.parametrize("editor", ["loopgate itself", "another app"])
def test_a_bot_editor_is_refused_whatever_the_allow_list_says(
        mode: str, editor: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    itself = editor == "loopgate itself"
    login, kind = ((APP_BOT, "Bot") if mode == "app" else (TOKEN_USER, "User")) if itself \
        else ("dependabot[bot]", "Bot")
    # Every spelling of the editor is on the allow-list: only its kind or identity refuses.
    allowed = ["alice", login, login.removesuffix("[bot]")]
    for world in _world(mode, monkeypatch, tmp_path, authorized=allowed):
        world.serve()
        quiz = world.to_spec_quiz(world.issue())
        _tick_by_webhook(world, quiz, login, editor_type=kind)
        world.poll()
        _assert_waiting(world, quiz)
        [refused] = world.events(_ref(quiz), "graph.quiz_refused")
        assert refused["editor"] == login.removesuffix("[bot]")  # GraphQL's spelling
        why = "loopgate itself" if itself else "a bot"
        assert f"last edited by @{refused['editor']}, {why};" in world.state(
            _ref(quiz)).parked.reason


def test_a_bot_on_the_allow_list_cannot_attest_by_typing_the_line(
        mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Review finding F5: the typed line is an attestation too, and a Bot never attests.
    for world in _world(mode, monkeypatch, tmp_path, authorized=["alice", "helper[bot]",
                                                                 "helper"]):
        world.serve()
        quiz = world.to_spec_quiz(world.issue())
        typed = world.fake.add_comment(REPO, quiz.number, attestation_line("spec", True),
                                       as_user="helper[bot]", user_type="Bot")
        answered = world.webhook("issue_comment", "created", _ref(quiz), comment_id=typed.id,
                                 sender="helper[bot]")
        assert answered.status_code == 202
        _assert_waiting(world, quiz)


def _re_tick(world: GitHubWorld, quiz: FakeComment, editor: str) -> tuple[str, str]:
    unticked = world.fake.comments[quiz.id].body.replace(attestation_line("spec", True),
                                                          attestation_line("spec"))
    ticked = unticked.replace(attestation_line("spec"), attestation_line("spec", True))
    world.fake.edit_comment(quiz.id, unticked, editor)
    world.fake.advance(2)
    world.fake.edit_comment(quiz.id, ticked, editor)
    return unticked, ticked


def test_an_authorized_re_tick_passes_after_the_poller_saw_a_refused_tick_twice(
        world: GitHubWorld) -> None:
    # Review finding F1: the refused tick re-read in the poll overlap (a duplicate delivery
    # id) used to close the tick's key, so no later tick with the same text was delivered.
    quiz = world.to_spec_quiz(world.issue())
    world.tick(quiz, "mallory")
    world.poll()
    world.fake.advance(600)
    world.comment(_ref(quiz), "@alice can you tick the quiz box?", as_user="carol")
    world.poll()  # re-reads the refused tick inside its overlap: a duplicate
    world.fake.advance(30)
    _re_tick(world, quiz, "alice")
    world.poll()
    _assert_attested(world, quiz, "@alice")


def test_a_webhook_re_tick_is_not_judged_by_a_history_the_poller_left_behind(
        world: GitHubWorld) -> None:
    # Review finding F1: a history prefetched for a duplicate nobody evaluated used to
    # answer the next webhook lookup of the same comment (naming the refused editor).
    world.serve()
    quiz = world.to_spec_quiz(world.issue())
    world.tick(quiz, "mallory")
    world.poll()
    world.fake.advance(5)
    world.comment(_ref(quiz), "@alice can you tick it?", as_user="carol")
    world.poll()
    world.fake.advance(5)
    unticked, _ = _re_tick(world, quiz, "alice")
    answered = world.webhook("issue_comment", "edited", _ref(quiz), comment_id=quiz.id,
                             sender="alice", previous_body=unticked)
    assert answered.status_code == 202
    _assert_attested(world, quiz, "@alice")
