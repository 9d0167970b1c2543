"""Issue 22 §1: the ``loopgate`` check run's title and Markdown summary, built by
``engine.checksummary`` for an item walked over the in-memory tracker (the shipped graph,
a merge gate asking two approvals): waiting with 1 of 2, passed, a push that invalidated
the approvals, a quiz's evidence, several items on one pull request, and the cut at
GitHub's limit (platform-facts F2; github/docs#35252: the limit is counted in bytes).

The GitHub side (the fake's check runs and statuses) is tests/bridges/test_check_output.py.
"""

from __future__ import annotations

from engine.approvals import ApprovalRule
from engine.checksummary import CUT_NOTE, MAX_SUMMARY, details_page, fit, md
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryTracker
from engine.mergegate import (
    PENDING,
    SUCCESS,
    SURFACE_KEY,
    GateCheck,
    bind_to_head,
    combine,
    item_check,
)
from engine.records import Attestation, ForcedMove
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from tests.engine.test_merge_coverage import REF, USERS, _runtime

PR = WorkItemRef("acme", "widgets", 8)
PAGE = "https://loopgate.example.com/items/acme/widgets/7"
BASE = "https://loopgate.example.com/"
A, B = "a" * 40, "b" * 40


def _two_approvals(tracker: MemoryTracker, public_url: str = BASE) -> Runtime:
    tracker.add_pull_request(REF, 8, author="dave", head_sha=A)
    runtime = _runtime(tracker, gate_rules={"human-approval": ApprovalRule(approvals=2)},
                       public_url=public_url.rstrip("/"))
    runtime.start(REF)
    runtime.force(REF, "human-approval", "test", "tester")
    return runtime


def _approve(runtime: Runtime, tracker: MemoryTracker, who: str) -> str:
    comment = tracker.add_comment_as(REF, who, "approved")
    runtime.advance(REF, {"comments": [comment]})
    return comment.url


def _last(tracker: MemoryTracker) -> GateCheck:
    return tracker.checks[PR][-1]  # type: ignore[return-value]


def test_waiting_at_the_merge_gate_with_one_of_two_approvals() -> None:
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    _approve(runtime, tracker, "alice")
    check = _last(tracker)
    assert check.state == PENDING
    assert check.description.startswith("acme/widgets#7: at human-approval (the merge gate)")
    assert check.page_url == PAGE
    summary = check.summary
    assert summary.startswith("**acme/widgets\\#7** — at human-approval (the merge gate): "
                              "1 of 2 approvals: @alice")
    # the path: done / current / waiting / skipped, the side exit left out
    row = summary.splitlines()[2]
    assert row.startswith("⚠️ `phase-selection` → ⚪ `brainstorming` → ")
    assert "➖ `design-critic-review`" in row
    assert row.endswith("⚪ `code-quiz` → ⏳ **`human-approval`** → ⚪ `complete`")
    assert "`escalated`" not in row
    # provenance: who forced, and the current gate's line
    assert "| `phase-selection` | forced past | moved past by force: never passed |" in summary
    assert "- forced: `phase-selection` → `human-approval` by tester, reason: test" in summary
    # whom it waits on, from the gate's rule and this visit's tally
    assert "### Now at `human-approval`\n" in summary
    assert "- approvals: 1 of 2 approvals: @alice" in summary
    assert "- may still approve: @bob, @carol" in summary
    assert "### Decisions" not in summary  # the gate has not decided yet
    assert summary.endswith(f"\n\nDetails: {PAGE}")
    stored = runtime.store.load(REF).surface[SURFACE_KEY]
    assert stored["pageUrl"] == PAGE


def test_a_passed_item_lists_each_decision_with_its_comment() -> None:
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    first = _approve(runtime, tracker, "alice")
    second = _approve(runtime, tracker, "bob")
    check = _last(tracker)
    assert (check.state, check.description) == (SUCCESS, "acme/widgets#7: work item complete")
    summary = check.summary
    assert summary.startswith("**acme/widgets\\#7** — work item complete\n")
    assert "✅ `human-approval` → ⏳ **`complete`**" in summary
    assert "| `human-approval` | passed | outcome approved; decided by @bob |" in summary
    assert "### Now at" not in summary  # nothing waits
    assert (f"- `human-approval` (visit 1): approved by @bob via reply — {second}\n"
            f"  - approved by @alice via reply — {first}\n"
            f"  - approved by @bob via reply — {second}") in summary


def test_a_push_lists_the_approvals_it_invalidated() -> None:
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    _approve(runtime, tracker, "alice")
    _approve(runtime, tracker, "bob")
    tracker.push(8, B)
    runtime.publish_gate(REF, pulls=(8,))
    check = _last(tracker)
    assert check.state == PENDING
    summary = check.summary
    assert summary.startswith("**acme/widgets\\#7** — head bbbbbbb was pushed after "
                              "human-approval covered aaaaaaa; now at human-approval")
    assert "### Now at `human-approval` (visit 2)" in summary
    assert "- approvals: 0 of 2 approvals\n- may still approve: @alice, @bob, @carol" in summary
    assert ("### Invalidated by a push\n\n- `human-approval` visit 1: approved by @alice, @bob "
            "at `aaaaaaa`, superseded by push `bbbbbbb` (#8)") in summary
    # approved again on the new head: passed, and the superseded approvals still shown
    _approve(runtime, tracker, "alice")
    _approve(runtime, tracker, "carol")
    again = _last(tracker)
    assert again.state == SUCCESS and again.head_sha == B
    assert "superseded by push `bbbbbbb` (#8)" in again.summary
    assert "`human-approval` (visit 2): approved by @carol" in again.summary


def test_a_success_bound_to_a_head_a_push_moved_says_what_it_invalidated() -> None:
    # The stored verdict is success; the performer binds it to the head it reads now
    # (before the push's own event sent the item back).
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    _approve(runtime, tracker, "alice")
    _approve(runtime, tracker, "bob")
    state = runtime.store.load(REF)
    stored = GateCheck.from_json(state.surface[SURFACE_KEY])
    bound = bind_to_head(state, stored, 8, B)
    assert bound.state == PENDING and bound.page_url == PAGE
    assert bound.description == ("acme/widgets#7: head bbbbbbb was pushed after "
                                 "human-approval covered aaaaaaa")
    lines = bound.summary.splitlines()
    assert lines[0] == ("**acme/widgets\\#7** — head bbbbbbb was pushed after human-approval "
                        "covered aaaaaaa")
    assert lines[2:5] == ["### Invalidated by a push", "",
                          "- `human-approval` visit 1: approved by @alice, @bob at `aaaaaaa`, "
                          "superseded by push `bbbbbbb` (#8)"]
    assert "✅ `human-approval` → ⏳ **`complete`**" in bound.summary  # the item's picture
    assert bound.summary.endswith(f"Details: {PAGE}")


def test_a_quiz_decision_links_its_comment_and_names_the_verified_editor() -> None:
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    state = runtime.store.load(REF)
    url = "https://github.com/acme/widgets/issues/7#issuecomment-42"
    state.begin_visit("code-quiz", "2026-03-01T12:30:00Z")
    state.record_decision("code-quiz", Attestation(
        "2026-03-01T12:31:00Z", "@carol", "2026-03-01T12:30:59Z", url, 42, "tick").to_json())
    check = item_check(shipped_graph(), state, "human-approval",
                       EngineSettings(authorized_users=USERS))
    assert (f"- `code-quiz` (visit 1): attested by @carol (verified editor of the quiz "
            f"comment, via tick) — {url}") in check.summary
    state.surface["quiz"] = {"code-quiz": {"comments": [{"id": 42, "url": url}],
                                           "location": "docs/specs/issue-7/explainer.html"}}
    check = item_check(shipped_graph(), state, "human-approval",
                       EngineSettings(authorized_users=USERS))
    assert ("### Quiz comments and explainer pages\n\n"
            f"- quiz `code-quiz`: {url}\n"
            "- explainer page of `code-quiz`: docs/specs/issue-7/explainer.html") in check.summary
    assert check.details_url == url


def test_no_public_url_no_link() -> None:
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker, public_url="")
    _approve(runtime, tracker, "alice")
    check = _last(tracker)
    assert check.page_url == "" and "Details:" not in check.summary
    assert "pageUrl" not in runtime.store.load(REF).surface[SURFACE_KEY]
    assert details_page("", REF) == ""
    assert details_page("https://x.example/loopgate/", REF) == (
        "https://x.example/loopgate/items/acme/widgets/7")


def test_what_people_typed_cannot_inject_markdown() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha=A)
    runtime = _runtime(tracker)
    runtime.start(REF)
    runtime.force(REF, "human-approval", "see [here](https://evil.example) <img src=x> | x",
                  "tester")
    summary = _last(tracker).summary
    assert ("reason: see \\[here\\](https://evil.example) \\<img src=x\\> \\| x") in summary
    assert md("a\nb `c`") == "a b \\`c\\`"


def test_a_pull_request_delivering_two_items_carries_each_items_section() -> None:
    graph, settings = shipped_graph(), EngineSettings(authorized_users=USERS,
                                                     public_url=BASE.rstrip("/"))
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    one = item_check(graph, runtime.store.load(REF), "human-approval", settings)
    other = GateCheck(PENDING, "acme/widgets#9: at design", "**acme/widgets\\#9** — at design")
    both = combine([(str(REF), one), ("acme/widgets#9", other)])
    sections = both.summary.split("\n\n---\n\n")
    assert sections == [one.summary, other.summary]
    assert both.page_url == PAGE
    unstarted = combine([(str(REF), one), ("acme/widgets#10", None)])
    assert unstarted.summary.endswith("\n\n---\n\nacme/widgets\\#10: not started")


def test_an_item_past_the_limit_is_cut_with_a_pointer_to_the_details_page() -> None:
    tracker = MemoryTracker()
    runtime = _two_approvals(tracker)
    state = runtime.store.load(REF)
    reason = "🚧 a very long reason " * 60  # emoji: more bytes than characters
    state.forced = [ForcedMove("design", "human-approval", reason, "tester",
                               "2026-03-01T12:00:00Z")] * 80
    check = item_check(shipped_graph(), state, "human-approval",
                       EngineSettings(authorized_users=USERS, public_url=BASE.rstrip("/")))
    encoded = check.summary.encode("utf-8")
    assert len(encoded) <= MAX_SUMMARY < len(encoded) + 2000  # cut, not emptied
    assert check.summary.endswith(f"\n\n{CUT_NOTE}: {PAGE}")
    assert check.summary.startswith("**acme/widgets\\#7** — at human-approval")
    bare = item_check(shipped_graph(), state, "human-approval",
                      EngineSettings(authorized_users=USERS))
    assert bare.summary.endswith("\n\n… see the details page")
    assert len(bare.summary.encode("utf-8")) <= MAX_SUMMARY
    # several items, each under the limit, together over it: cut the same way
    both = combine([(str(REF), bare), ("acme/widgets#9", bare)])
    assert both.summary.endswith(CUT_NOTE) and len(both.summary.encode()) <= MAX_SUMMARY


def test_fit_keeps_a_short_summary_and_never_splits_a_character() -> None:
    assert fit("short", "https://p") == "short"
    cut = fit("é" * 40000)  # 80,000 bytes on one line
    assert cut.endswith(CUT_NOTE) and len(cut.encode("utf-8")) <= MAX_SUMMARY
    assert set(cut[: -len(CUT_NOTE) - 2]) == {"é"}


def test_a_stored_check_written_before_issue_22_still_reads() -> None:
    old = {"state": "pending", "description": "acme/widgets#7: at design", "summary": "s",
           "detailsUrl": ""}
    check = GateCheck.from_json(old)
    assert (check.page_url, check.summary) == ("", "s")
    assert check.to_json() == old


def test_a_skipped_node_is_drawn_skipped_with_who_skipped_it_and_why() -> None:
    tracker = MemoryTracker()
    tracker.add_pull_request(REF, 8, head_sha=A)
    runtime = _runtime(tracker)
    runtime.start(REF)
    runtime.declare_skips(REF, ["brainstorming"], "not needed", "alice")
    runtime.force(REF, "human-approval", "test", "tester")
    summary = _last(tracker).summary
    assert "⚠️ `phase-selection` → ⏭️ `brainstorming` → ⚪ `requirements-definition`" in summary
    assert ("| `brainstorming` | skipped | skipped by declaration — via declaration, token "
            "'brainstorming', by alice, reason: not needed |") in summary


def test_the_published_check_of_a_pull_request_delivering_two_items_has_both_sections() -> None:
    tracker = MemoryTracker()
    other = WorkItemRef("acme", "widgets", 9)
    runtime = _two_approvals(tracker)
    tracker.add_pull_request(other, 8, head_sha=A)
    runtime.start(other)
    runtime.force(other, "human-approval", "test", "tester")
    _approve(runtime, tracker, "alice")  # item 7: 1 of 2; item 9 waits on its own gate
    check = _last(tracker)
    assert check.state == PENDING
    sections = check.summary.split("\n\n---\n\n")
    assert [s.splitlines()[0].split(" — ")[0] for s in sections] == [
        "**acme/widgets\\#7**", "**acme/widgets\\#9**"]
    assert "- approvals: 1 of 2 approvals: @alice" in sections[0]
    assert "- approvals: 0 of 2 approvals" in sections[1]
    assert sections[0].endswith(f"Details: {PAGE}")
    assert sections[1].endswith("Details: https://loopgate.example.com/items/acme/widgets/9")


def test_a_cut_summary_reheaded_for_a_moved_head_keeps_its_page_and_the_limit() -> None:
    from engine.checksummary import rehead

    cut = fit("line\n" * 20000, PAGE, limit=1000)
    again = rehead(cut, "**acme/widgets\\#7** — head bbbbbbb was pushed", ["- one", "- two"])
    assert again.startswith("**acme/widgets\\#7** — head bbbbbbb was pushed\n\n- one\n- two\n")
    assert again.endswith(f"{CUT_NOTE}: {PAGE}")
    assert len(rehead("x\n" + "é" * 40000, "**h**", ["- a"]).encode()) <= MAX_SUMMARY
