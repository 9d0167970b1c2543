"""Issue 24 §1 at the engine: the ``codeowners`` approver entry resolves to the owners of
the delivering pull requests' changed files (in-memory tracker); ``any`` and ``all-files``;
fail closed when CODEOWNERS or the changed files cannot be read. The GitHub walk over the
loopback fake is tests/bridges/test_codeowners_github.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.approvals import ApprovalRule
from engine.errors import ConfigError
from engine.graph.compiler import shipped_graph
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.state import ItemState
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
PR = WorkItemRef("acme", "widgets", 8)
GATE = "human-approval"
OWNERS = "* @lead\n/web/ @acme/web\n/docs/ @writer\n/web/vendor/\n"


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _tracker(files: tuple[str, ...] = ("web/app.ts", "docs/guide.md", "web/vendor/x.js")
             ) -> MemoryTracker:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    tracker.add_pull_request(REF, 8, author="bob")
    tracker.set_file("acme/widgets", ".github/CODEOWNERS", OWNERS)
    tracker.set_changed_files(PR, files)
    tracker.set_team("acme/web", ["wendy"])
    return tracker


def _runtime(tracker: MemoryTracker, rule: dict[str, object], node: str = GATE) -> Runtime:
    settings = EngineSettings(authorized_users=("alice", "bob"),
                              gate_rules={node: ApprovalRule.from_json(rule, f"gates.{node}")})
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), settings)
    runtime.start(REF)
    runtime.force(REF, node, "test: straight to the gate", "tester")
    return runtime


def _click(runtime: Runtime, login: str, node: str = GATE) -> ItemState:
    reply = Comment(0, login, "approved")
    return runtime.advance(REF, {"comments": [reply], "via": "slack", "expectNode": node})


def _refused(state: ItemState, node: str = GATE) -> str:
    return str(state.surface["approvals"][node]["refused"][-1]["reason"])


def test_any_code_owner_of_a_changed_file_may_approve() -> None:
    runtime = _runtime(_tracker(), {"approvers": ["codeowners"]})
    state = _click(runtime, "mallory")
    assert state.current_node == GATE
    assert _refused(state) == (
        "@mallory is not among the approvers of this gate (the code owners of the changed "
        "files (@writer, @acme/web))")
    assert _click(runtime, "writer").current_node == "complete"


def test_a_team_owner_approves_through_the_team() -> None:
    runtime = _runtime(_tracker(), {"approvers": ["codeowners"]})
    state = _click(runtime, "wendy")
    assert state.current_node == "complete"
    [approval] = state.surface["approvals"][GATE]["approvals"]
    assert (approval["by"], approval["team"]) == ("wendy", "acme/web")


def test_an_owner_of_no_changed_file_is_not_a_code_owner_here() -> None:
    # @lead owns every file by `*`, but later patterns win for all three changed files.
    runtime = _runtime(_tracker(), {"approvers": ["codeowners", "alice"]})
    assert "is not among the approvers" in _refused(_click(runtime, "lead"))
    assert _click(runtime, "alice").current_node == "complete"  # a login still counts


def test_all_files_waits_until_every_owned_file_has_an_owner_approval() -> None:
    runtime = _runtime(_tracker(), {"approvers": ["codeowners"], "codeowners": "all-files"})
    state = _click(runtime, "writer")
    assert state.current_node == GATE
    assert str(state.parked.reason).startswith(
        "1 of 1 approval: @writer; no code owner approved web/app.ts yet "
        "(codeowners: all-files) — waiting for the code owners of the changed files")
    state = _click(runtime, "wendy")
    assert state.current_node == "complete"
    assert state.decisions[GATE]["outcome"] == "approved"


def test_prevent_self_approval_still_refuses_an_owner_who_wrote_the_pull_request() -> None:
    tracker = _tracker(("docs/guide.md",))
    tracker.set_file("acme/widgets", ".github/CODEOWNERS", "/docs/ @bob\n")
    runtime = _runtime(tracker, {"approvers": ["codeowners"], "preventSelfApproval": True})
    assert _refused(_click(runtime, "bob")).startswith("@bob opened acme/widgets#8")


def test_the_first_codeowners_file_found_is_used() -> None:
    tracker = _tracker(("web/app.ts",))
    tracker.set_file("acme/widgets", "CODEOWNERS", "* @root-owner\n")
    tracker.set_file("acme/widgets", "docs/CODEOWNERS", "* @docs-owner\n")
    runtime = _runtime(tracker, {"approvers": ["codeowners"]})
    assert "is not among" in _refused(_click(runtime, "root-owner"))  # .github/ wins
    tracker.repo_files["acme/widgets"].pop(".github/CODEOWNERS")
    assert _click(runtime, "root-owner").current_node == "complete"  # then the root


def test_an_unreadable_codeowners_file_keeps_the_gate_waiting_and_says_why() -> None:
    tracker = _tracker()
    tracker.failing.add("codeowners_file")
    runtime = _runtime(tracker, {"approvers": ["codeowners"]})
    state = _click(runtime, "writer")
    assert state.current_node == GATE
    assert state.parked.unverified
    assert "CODEOWNERS or the changed files of acme/widgets could not be read" in str(
        state.parked.reason)
    tracker.failing.clear()
    assert _click(runtime, "writer").current_node == "complete"


def test_unreadable_changed_files_keep_the_gate_waiting() -> None:
    tracker = _tracker()
    tracker.failing.add("changed_files")
    runtime = _runtime(tracker, {"approvers": ["codeowners"], "codeowners": "all-files"})
    state = _click(runtime, "writer")
    assert (state.current_node, bool(state.parked.unverified)) == (GATE, True)


def test_without_an_open_pull_request_nobody_is_a_code_owner() -> None:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    runtime = _runtime(tracker, {"approvers": ["codeowners"]})
    assert _refused(_click(runtime, "writer")) == (
        "@writer is not among the approvers of this gate (the code owners of the changed "
        "files (no open pull request delivers this work item yet))")


def test_a_gate_that_covers_no_pull_request_has_no_code_owners() -> None:
    runtime = _runtime(_tracker(), {"approvers": ["codeowners", "alice"]},
                       node="requirements-approval")
    reason = _refused(_click(runtime, "writer", "requirements-approval"),
                      "requirements-approval")
    assert "requirements-approval covers no pull request" in reason


@pytest.mark.parametrize(("doc", "message"), [
    ({"codeowners": "all-files"},
     "gates.human-approval.codeowners: applies only when approvers lists codeowners"),
    ({"approvers": ["codeowners"], "codeowners": "most"},
     "gates.human-approval.codeowners: must be one of any, all-files, got 'most'"),
])
def test_bad_rules_are_config_errors(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ApprovalRule.from_json(doc, "gates.human-approval")
    assert str(caught.value) == message


def test_the_rule_reads_back_and_older_documents_are_unchanged() -> None:
    rule = ApprovalRule.from_json({"approvers": ["codeowners", "alice"]})
    assert rule.codeowners == "any"
    assert rule.logins(()) == ("alice",)
    assert ApprovalRule.from_json(rule.to_json()) == rule
    assert "codeowners" not in ApprovalRule(approvals=2).to_json()
