"""engine.queuegroup: every commit of a merge group is accounted for by an identified pull
request (issue 19 §4, the rebase gap)."""

from __future__ import annotations

from engine.queuegroup import GroupCommit, unaccounted

BASE, HEAD8 = "0" * 40, "8" * 40
ALICE = ("alice", "alice@example.com", "2026-12-01T10:00:00Z")


def _c(sha: str, message: str, *parents: str, author: tuple[str, str, str] = ALICE
       ) -> GroupCommit:
    return GroupCommit(sha * 40, message, tuple(parents), author)


def test_a_merge_commit_accounts_for_its_second_parents_history_only() -> None:
    own = _c("8", "Add widgets", BASE)
    merge = _c("m", "Merge pull request #8 from acme/issue-7", BASE, HEAD8)
    assert unaccounted([own, merge], {8: HEAD8}) is None
    # a merge commit whose second parent is not #8's covered head accounts for nothing
    assert unaccounted([own, merge], {8: "9" * 40}) == own
    stray = _c("s", "Sneak", BASE)
    assert unaccounted([stray, own, merge], {8: HEAD8}) == stray


def test_a_squash_commit_counts_once_per_pull_request() -> None:
    one = _c("a", "Add widgets (#8)", BASE)
    two = _c("b", "More widgets (#8)", "a" * 40)
    assert unaccounted([one], {8: HEAD8}) is None
    assert unaccounted([one, two], {8: HEAD8}) == two


def test_replayed_commits_match_by_count_order_message_and_author() -> None:
    theirs = [_c("1", "First", BASE), _c("2", "Second", "1" * 40)]
    replayed = [_c("x", "First", BASE), _c("y", "Second", "x" * 40)]
    assert unaccounted(replayed, {8: "2" * 40}) == replayed[0]  # without own commits
    assert unaccounted(replayed, {8: "2" * 40}, {8: theirs}) is None
    forged = [_c("x", "First", BASE, author=("mallory", "m@example.com", ALICE[2])),
              replayed[1]]
    assert unaccounted(forged, {8: "2" * 40}, {8: theirs}) == forged[0]
    assert unaccounted(list(reversed(replayed)), {8: "2" * 40}, {8: theirs}) is not None
    assert unaccounted([], {8: HEAD8}) is None


def test_the_queue_branch_is_read_from_the_group_ref() -> None:
    from engine.queuegroup import queue_branch

    assert queue_branch("refs/heads/gh-readonly-queue/main/pr-8-" + "a" * 40) == "main"
    assert queue_branch("gh-readonly-queue/release/1.x/pr-12-abc123") == "release/1.x"
    assert queue_branch("refs/heads/main") == ""
