"""The local ports: the offline tracker in SQLite and the local-checkout artifact store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.errors import WorkItemRefError
from engine.local.checkout import CheckoutArtifactStore
from engine.local.sqlite_tracker import LocalTracker
from engine.ports import ArtifactStore, Tracker
from engine.refs import WorkItemRef
from engine.store.sqlite import SqliteStore

REF = WorkItemRef("acme", "widgets", 7)
OTHER = WorkItemRef("acme", "widgets", 8)


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(tmp_path / "loopgate.db")
    yield store
    store.close()


@pytest.fixture
def tracker(store: SqliteStore) -> LocalTracker:
    return LocalTracker(store)


def test_local_tracker_implements_the_tracker_port(tracker: LocalTracker) -> None:
    assert isinstance(tracker, Tracker)


def test_comments_get_increasing_ids_and_local_urls(tracker: LocalTracker) -> None:
    first = tracker.add_comment(REF, "hello <!-- the-loop:agent-comment -->")
    second = tracker.add_comment_as(OTHER, "alice", "the-loop execute")
    third = tracker.add_comment_as(REF, "bob", "approve")
    assert (first.id, second.id, third.id) == (1, 2, 3)
    assert first.author == "loopgate" and first.self_authored
    assert first.url == "local://acme/widgets#7/comment-1"
    assert first.issue_number == 7
    assert [c.id for c in tracker.list_comments(REF)] == [1, 3]
    assert [(c.author, c.body) for c in tracker.list_comments(OTHER)] == [
        ("alice", "the-loop execute")]


def test_the_thread_survives_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    LocalTracker(SqliteStore(tmp_path / "t.db")).add_comment_as(REF, "alice", "hi")
    again = LocalTracker(SqliteStore(tmp_path / "t.db"))
    assert [c.body for c in again.list_comments(REF)] == ["hi"]


def test_labels_are_kept_once_in_order_and_removed(tracker: LocalTracker) -> None:
    tracker.add_label(REF, "loop:design")
    tracker.add_label(REF, "loop:tasks")
    tracker.add_label(REF, "loop:design")
    assert tracker.labels(REF) == ["loop:design", "loop:tasks"]
    tracker.remove_label(REF, "loop:design")
    tracker.remove_label(REF, "absent")
    assert tracker.labels(REF) == ["loop:tasks"]
    assert tracker.labels(OTHER) == []
    assert tracker.store.kv_get("labels", "acme/widgets#7") == ["loop:tasks"]


def test_delivering_pull_requests_are_empty_until_recorded(tracker: LocalTracker) -> None:
    assert tracker.delivering_pull_requests(REF) == []
    pr = tracker.add_pull_request(REF, 12)
    assert tracker.delivering_pull_requests(REF) == [pr]
    assert pr.url == "local://acme/widgets/pull/12" and pr.head_branch == "issue-7"


def test_issue_info_names_the_item_by_its_reference(tracker: LocalTracker) -> None:
    info = tracker.issue_info(REF)
    assert (info.title, info.url, info.ref) == ("acme/widgets#7", "local://acme/widgets#7", REF)


def test_comment_edits_come_from_the_local_edit_history(tracker: LocalTracker) -> None:
    posted = tracker.add_comment(REF, "- [ ] I have read the spec explainer")
    assert tracker.comment_edits([posted.id])[posted.id].edits == ()
    tracker.edit_comment(posted.id, "- [x] I have read the spec explainer", "mallory")
    edited = tracker.edit_comment(posted.id, "- [x] I have read the spec explainer", "alice")
    assert edited.body.startswith("- [x]")
    edits = tracker.comment_edits([posted.id, 999])
    assert list(edits) == [posted.id]
    record = edits[posted.id]
    assert [e.editor for e in record.edits] == ["mallory", "alice"]
    assert record.editor == "alice" and record.latest_edit().editor == "alice"
    assert record.author == "loopgate" and record.body == edited.body
    assert record.url == posted.url
    assert tracker.list_comments(REF)[0].body == edited.body


def test_a_ghost_editor_reads_as_none(tracker: LocalTracker) -> None:
    posted = tracker.add_comment(REF, "box")
    tracker.edit_comment(posted.id, "box ticked", None)
    assert tracker.comment_edits([posted.id])[posted.id].editor is None


def test_editing_an_unknown_comment_is_a_key_error(tracker: LocalTracker) -> None:
    with pytest.raises(KeyError, match="42"):
        tracker.edit_comment(42, "x", "alice")


def test_a_comment_added_inside_a_failed_transaction_is_rolled_back(
    store: SqliteStore, tracker: LocalTracker
) -> None:
    with pytest.raises(RuntimeError), store.transaction(REF) as tx:
        tx.create("mini")
        tracker.add_comment(REF, "posted by a hook")
        raise RuntimeError("the operation failed")
    assert tracker.list_comments(REF) == []
    assert store.load(REF) is None


# -- the local-checkout artifact store ---------------------------------------------------
@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    item = tmp_path / "repo" / "docs" / "specs" / "issue-7"
    (item / "evidence").mkdir(parents=True)
    (item / "design.md").write_text("# Design\n")
    (item / "evidence" / "explainer.md").write_text("## Explainer\n")
    (tmp_path / "repo" / "README.md").write_text("readme\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return tmp_path / "repo"


def test_checkout_store_implements_the_artifact_port(workspace: Path) -> None:
    assert isinstance(CheckoutArtifactStore(workspace, "docs/specs"), ArtifactStore)


def test_checkout_store_reads_and_lists_the_items_spec_directory(workspace: Path) -> None:
    artifacts = CheckoutArtifactStore(workspace, "docs/specs")
    assert artifacts.read(REF, "design.md") == b"# Design\n"
    assert artifacts.read(REF, "evidence/explainer.md") == b"## Explainer\n"
    assert artifacts.read(REF, "missing.md") is None
    assert artifacts.read(REF, "evidence") is None
    assert artifacts.list(REF) == ["design.md", "evidence/explainer.md"]
    assert artifacts.list(OTHER) == []
    assert artifacts.spec_dir(REF) == "docs/specs/issue-7"
    assert artifacts.branch(REF) == "main"


def test_checkout_store_paths_follow_the_configured_spec_dir(tmp_path: Path) -> None:
    (tmp_path / "specs" / "issue-7").mkdir(parents=True)
    (tmp_path / "specs" / "issue-7" / "tasks.md").write_text("t")
    artifacts = CheckoutArtifactStore(tmp_path, "specs/")
    assert artifacts.spec_dir(REF) == "specs/issue-7"
    assert artifacts.list(REF) == ["tasks.md"]


def test_repo_paths_are_relative_to_the_workspace(workspace: Path) -> None:
    artifacts = CheckoutArtifactStore(workspace, "docs/specs")
    assert artifacts.repo_path_exists(REF, "README.md")
    assert artifacts.repo_path_exists(REF, "docs/specs/issue-7/design.md")
    assert not artifacts.repo_path_exists(REF, "docs/specs/issue-7/nothing.html")


@pytest.mark.parametrize("escape", ["../secret.txt", "../../secret.txt", "/etc/passwd",
                                    "evidence/../../../../secret.txt"])
def test_paths_climbing_out_are_refused(workspace: Path, escape: str) -> None:
    artifacts = CheckoutArtifactStore(workspace, "docs/specs")
    assert artifacts.read(REF, escape) is None
    assert not artifacts.repo_path_exists(REF, escape)


def test_a_symlink_out_of_the_workspace_is_not_followed(workspace: Path) -> None:
    link = workspace / "docs" / "specs" / "issue-7" / "leak.md"
    os.symlink(workspace.parent / "secret.txt", link)
    artifacts = CheckoutArtifactStore(workspace, "docs/specs")
    assert artifacts.read(REF, "leak.md") is None
    assert "leak.md" not in artifacts.list(REF)


def test_one_issue_is_one_work_item_however_its_repository_is_spelled() -> None:
    from engine.refs import WorkItemRef

    assert WorkItemRef.parse("ACME/Widgets#7") == WorkItemRef("acme", "widgets", 7)
    assert str(WorkItemRef("Codertocat", "Hello-World", 1)) == "codertocat/hello-world#1"


@pytest.mark.parametrize(("text", "owner", "repo", "number"), [
    ("acme/widgets#7", "acme", "widgets", 7),  # the parts spell the key: built from them
    ("acme/widgets#7", "acme", "widgets", 8),  # parts that disagree: the key wins
    ("acme/widgets#7", None, None, None),      # parts missing (NULL columns)
])
def test_a_stored_key_reads_as_parse_reads_it(text: str, owner: object, repo: object,
                                              number: object) -> None:
    # issue 21 §3: check --all builds the ref from the items row's columns when they
    # spell its key; the ref is always the one parse makes of the key.
    made = WorkItemRef.parse_stored(text, owner, repo, number)
    assert made == WorkItemRef.parse(text) == WorkItemRef("acme", "widgets", 7)


@pytest.mark.parametrize(("text", "owner", "repo", "number"), [
    ("ACME/Widgets#7", "acme", "widgets", 7),  # a key spelled otherwise than written
    ("ACME/Widgets#7", "ACME", "Widgets", 7),  # the columns spelled so too
    ("acme/widgets#7 ", "acme", "widgets", 7),  # parse strips the space: not the key
    ("Acme/widgets#7", None, None, None),
])
def test_a_stored_key_that_is_not_canonical_is_refused(text: str, owner: object,
                                                       repo: object, number: object) -> None:
    # parse takes it (a person may type it so), but loopgate never writes it: as a stored
    # key it would show as another item's (the lower-cased one's), as 013 for 13 would.
    assert str(WorkItemRef.parse(text)) == "acme/widgets#7" != text
    with pytest.raises(WorkItemRefError) as raised:
        WorkItemRef.parse_stored(text, owner, repo, number)
    assert str(raised.value) == (f"not in canonical form: {text!r} would read as "
                                 "'acme/widgets#7' (loopgate writes keys lower-cased, "
                                 "without spaces)")


@pytest.mark.parametrize(("text", "owner", "repo", "number"), [
    ("acme/widgets#0", "acme", "widgets", 0),       # parse refuses a number 0
    ("ac me/widgets#7", "ac me", "widgets", 7),     # and a name with a space
])
def test_a_stored_key_parse_refuses_is_refused(text: str, owner: object, repo: object,
                                               number: object) -> None:
    with pytest.raises(WorkItemRefError, match="expected owner/repo#N"):
        WorkItemRef.parse_stored(text, owner, repo, number)


def test_each_tracker_declares_what_it_offers_beyond_the_port(tracker: LocalTracker) -> None:
    """Issue 20 §2: a tracker declares its capabilities; callers get the narrower port
    from them (None when not declared) and never probe with getattr."""
    from engine.local.memory_tracker import MemoryTracker
    from engine.ports import (
        TrackerCapabilities,
        codeowners_reader,
        merge_queue,
        posts_as,
        pull_commits,
        pull_request_cache,
        review_requests,
    )
    from engine.simulate import DryTracker

    assert tracker.capabilities == TrackerCapabilities(post_as=True)
    assert posts_as(tracker) is tracker
    assert codeowners_reader(tracker) is merge_queue(tracker) is None
    assert pull_request_cache(tracker) is None
    memory = MemoryTracker()
    assert memory.capabilities == TrackerCapabilities(codeowners=True, merge_queue=True,
                                                      post_as=True, pull_commits=True,
                                                      review_requests=True)
    assert pull_commits(memory) is review_requests(memory) is memory
    assert pull_commits(tracker) is review_requests(tracker) is None
    assert codeowners_reader(memory) is merge_queue(memory) is memory
    dry = DryTracker(tracker)  # a simulation declares what the real tracker does
    assert dry.capabilities is tracker.capabilities and codeowners_reader(dry) is None
    assert review_requests(DryTracker(memory)) is not None  # asked, and recorded unsent
