"""Issue 24 §4 ``simulate --codeowners-change FILE``: as if the pull request also changed
FILE, the code owners are recomputed and shown, the gate decides with them, nothing is
written, and the answers equal what the real walk does once FILE is changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engine.approvals import ApprovalRule
from engine.graph.compiler import shipped_graph
from engine.hooks.common import code_owners_for
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Comment, Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.simulate import Simulation, render, simulate_changes, simulate_decision
from engine.state import ItemState
from engine.store.memory import MemoryStore

REF = WorkItemRef("acme", "widgets", 7)
PR = WorkItemRef("acme", "widgets", 8)
GATE = "human-approval"
OWNERS = "/web/ @wendy\n/docs/ @writer\n/lib/ @lead @acme/core\n"
FILES = ["web/app.ts", "docs/guide.md"]


class Clock:
    """A clock one second further on every read."""

    def __init__(self) -> None:
        self.at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self.at += timedelta(seconds=1)
        return self.at


def _walk(rule: dict[str, object]) -> tuple[Runtime, MemoryTracker]:
    tracker = MemoryTracker()
    tracker.set_issue(REF, "Widgets", author="alice")
    tracker.add_pull_request(REF, 8, author="bob", head_sha="a" * 40)
    tracker.set_file("acme/widgets", ".github/CODEOWNERS", OWNERS)
    tracker.set_changed_files(PR, FILES)
    tracker.set_team("acme/core", ["carl"])
    settings = EngineSettings(authorized_users=("alice",), gate_rules={
        GATE: ApprovalRule.from_json(rule, f"gates.{GATE}")})
    runtime = Runtime(shipped_graph(), MemoryStore(),
                      Ports(tracker, MemoryArtifactStore(), clock=Clock()), settings)
    runtime.start(REF)
    runtime.force(REF, GATE, "test: straight to the gate", "tester")
    return runtime, tracker


def _simulate(runtime: Runtime, login: str, changes: list[str]) -> Simulation:
    return simulate_decision(runtime.graph, runtime.store, runtime.ports, runtime.settings,
                             REF, login, GATE, changes=changes)


def _click(runtime: Runtime, login: str) -> ItemState:
    reply = Comment(0, login, "approved")
    return runtime.advance(REF, {"comments": [reply], "via": "slack", "expectNode": GATE})


def test_the_code_owners_are_recomputed_and_shown() -> None:
    runtime, tracker = _walk({"approvers": ["codeowners"], "codeowners": "all-files"})
    calls = len(tracker.calls)
    sim = simulate_changes(runtime.graph, runtime.store, runtime.ports, runtime.settings, REF,
                           ["lib/core.py"])
    assert sim.owners is not None
    assert sim.owners.files == (("docs/guide.md", ("@writer",)),
                                ("lib/core.py", ("@lead", "@acme/core")),
                                ("web/app.ts", ("@wendy",)))
    assert sim.owners.approvers == ("the code owners of the changed files (@writer, @lead, "
                                    "@acme/core, @wendy)")
    assert render(sim) == [
        "acme/widgets#7: if its pull requests also changed lib/core.py",
        f"stays at {GATE} (parked): {sim.wait}",
        "approvals: 0 of 1 approval; no code owner approved docs/guide.md, lib/core.py, "
        "web/app.ts yet (codeowners: all-files)",
        "code owners at human-approval, with lib/core.py changed:",
        "  docs/guide.md: @writer",
        "  lib/core.py (added): @lead, @acme/core",
        "  web/app.ts: @wendy",
        "may approve at human-approval: the code owners of the changed files (@writer, "
        "@lead, @acme/core, @wendy)",
        "(simulated: nothing was written)"]
    assert [n for n, _ in tracker.calls[calls:]] == [
        "delivering_pull_requests", "codeowners_file", "changed_files",
        *[n for n, _ in tracker.calls[calls + 3:]]]  # reads only
    assert not {n for n, _ in tracker.calls[calls:]} & {"add_comment", "add_label",
                                                          "publish_check"}
    assert tracker.pull_files[PR] == FILES
    assert sim.to_json()["codeOwners"]["files"]["lib/core.py"] == ["@lead", "@acme/core"]


def test_simulate_with_a_change_equals_the_walk_once_the_file_is_pushed() -> None:
    runtime, tracker = _walk({"approvers": ["codeowners"], "codeowners": "all-files"})
    # Without the change, writer and wendy would complete the gate; with lib/core.py the
    # owners of lib/ must approve too.
    writer = _simulate(runtime, "writer", ["lib/core.py"])
    wendy_alone = _simulate(runtime, "wendy", ["lib/core.py"])
    assert (writer.counted, writer.after_node) == (True, GATE)
    assert "no code owner approved lib/core.py, web/app.ts yet" in writer.wait

    tracker.set_changed_files(PR, [*FILES, "lib/core.py"])  # the file is pushed
    assert code_owners_for(tracker, REF, GATE, runtime.settings).files == writer.owners.files
    real = _click(runtime, "writer")
    assert (real.current_node, real.parked.reason) == (GATE, writer.wait)
    assert wendy_alone.counted and wendy_alone.after_node == GATE

    wendy = _simulate(runtime, "wendy", ["lib/core.py"])
    assert "no code owner approved lib/core.py yet" in wendy.wait
    real = _click(runtime, "wendy")
    assert (real.current_node, real.parked.reason) == (GATE, wendy.wait)

    carl = _simulate(runtime, "carl", ["lib/core.py"])  # through the team @acme/core
    assert (carl.counted, carl.after_node) == (True, "complete")
    assert _click(runtime, "carl").current_node == "complete"


def test_a_new_file_makes_its_owner_an_approver_as_the_walk_then_does() -> None:
    runtime, tracker = _walk({"approvers": ["codeowners"]})
    before = _simulate(runtime, "lead", [])
    assert not before.counted
    assert "is not among the approvers of this gate" in before.reason

    sim = _simulate(runtime, "lead", ["lib/core.py"])
    assert (sim.counted, sim.after_node) == (True, "complete")
    tracker.set_changed_files(PR, [*FILES, "lib/core.py"])
    assert _click(runtime, "lead").current_node == "complete"


def test_a_gate_without_codeowners_says_the_owners_approve_nothing() -> None:
    runtime, _ = _walk({"approvers": ["alice"]})
    sim = simulate_changes(runtime.graph, runtime.store, runtime.ports, runtime.settings, REF,
                           ["lib/core.py"])
    assert render(sim)[-2] == ("human-approval's rule names no codeowners: these owners "
                               "approve nothing there")


def test_an_unreadable_codeowners_file_is_said() -> None:
    runtime, tracker = _walk({"approvers": ["codeowners"]})
    tracker.failing.add("codeowners_file")
    sim = simulate_changes(runtime.graph, runtime.store, runtime.ports, runtime.settings, REF,
                           ["lib/core.py"])
    assert sim.owners is not None and "could not be read" in sim.owners.problem
    assert "  none: CODEOWNERS or the changed files of acme/widgets could not be read" in (
        "\n".join(render(sim)))


def test_a_codeowners_line_github_rejects_is_named_and_ignored() -> None:
    runtime, tracker = _walk({"approvers": ["codeowners"]})
    tracker.set_file("acme/widgets", ".github/CODEOWNERS", OWNERS + "[a-z]/ @mallory\n")
    sim = simulate_changes(runtime.graph, runtime.store, runtime.ports, runtime.settings, REF,
                           ["lib/core.py"])
    assert ("  skipped as GitHub skips it: .github/CODEOWNERS:4: character ranges ([ ]) are "
            "not supported in CODEOWNERS: [a-z]/ @mallory") in render(sim)
    assert sim.to_json()["codeOwners"]["skipped"] == [
        ".github/CODEOWNERS:4: character ranges ([ ]) are not supported in CODEOWNERS: "
        "[a-z]/ @mallory"]
    assert "@mallory" not in sim.owners.approvers.split(";")[0]  # the line is ignored
