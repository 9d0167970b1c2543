"""serve's self-audit (issue 22 §3, :mod:`bot.ops.self_audit`) without the network: which items a
round verifies (active only, at most ``auditItems``, the next round going on where the
last stopped), a round stopping at the first item GitHub cannot answer and keeping the
findings it had, the ``audit`` readiness check (reporting, never failing), the metrics,
and the loop joined by the supervisor on stop. End to end (a real ``serve`` against the
fake GitHub): tests/e2e/test_e2e_verify.py."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot.ops.health import Health
from bot.ops.metrics import Metrics
from bot.ops.self_audit import RESERVE, AuditSettings, BudgetWatch, SelfAudit
from bot.ops.supervisor import Supervisor
from engine.errors import UnreadableItemError
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from engine.state import ItemStatus
from engine.store.sqlite import SqliteStore
from engine.verify import GateFinding, Verification
from tests.e2e.stack import wait_until


@pytest.fixture
def store(tmp_path: Path) -> Any:
    db = SqliteStore(tmp_path / "loopgate.db")
    statuses = {1: ItemStatus.PARKED, 2: ItemStatus.RUNNING, 3: ItemStatus.COMPLETE,
                4: ItemStatus.PARKED, 5: ItemStatus.ESCALATED}
    for number, status in statuses.items():
        with db.transaction(WorkItemRef("acme", "widgets", number)) as tx:
            state = tx.create("pdlc-work-item-loop")
            state.current_node = "design"
            state.status = status
    yield db
    db.close()


def _services(store: Any) -> Any:
    return SimpleNamespace(store=store, config=SimpleNamespace(has=lambda _: False))


class Verifier:
    """A stand-in for ``loopgate verify``: #4 differs, the rest agree; ``down`` refs fail."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.down: set[str] = set()
        self.spoiled: set[str] = set()  # stored items that cannot be read

    def __call__(self, services: Any, ref: WorkItemRef) -> Verification:
        self.asked.append(str(ref))
        if str(ref) in self.down:
            raise TrackerError("GitHub core rate limit reached")
        if str(ref) in self.spoiled:
            raise UnreadableItemError(str(ref), "column parked: not JSON (...)")
        if ref.number == 4:
            return Verification(str(ref), (GateFinding(
                "human-approval", 1, "approved by @bob at comment 9",
                ("GitHub shows that comment edited by @mallory",)),))
        return Verification(str(ref), (GateFinding("design-approval", 1, "approved by @bob"),))


def test_a_round_verifies_the_active_items_only_and_at_most_items(store: Any) -> None:
    verifier = Verifier()
    audit = SelfAudit(_services(store), AuditSettings(1, items=2, pace=0), verifier)
    assert audit.check().detail == "no round yet"
    assert audit.round() == 2
    assert verifier.asked == ["acme/widgets#1", "acme/widgets#2"]
    audit.round()  # goes on where it stopped, then wraps around
    assert verifier.asked[2:] == ["acme/widgets#4", "acme/widgets#1"]
    assert audit.runs == 2
    assert audit.disagreements() == {"acme/widgets#4": [
        "acme/widgets#4 human-approval (visit 1): differs — recorded approved by @bob at "
        "comment 9; GitHub shows that comment edited by @mallory"]}
    check = audit.check()
    assert check.ok is True  # reported, never failing readiness (why: bot/ops/self_audit.py)
    assert check.detail == (
        "1 item(s) differ from GitHub's records: acme/widgets#4: human-approval (visit 1): "
        "differs — recorded approved by @bob at comment 9; GitHub shows that comment edited "
        "by @mallory (reported, not failing readiness: see `loopgate verify`)")


def test_an_unreadable_item_stops_the_round_and_keeps_what_was_found(store: Any) -> None:
    verifier = Verifier()
    audit = SelfAudit(_services(store), AuditSettings(1, items=10, pace=0), verifier)
    audit.round()
    assert list(audit.disagreements()) == ["acme/widgets#4"]
    verifier.down = {"acme/widgets#2"}
    verifier.asked.clear()
    audit.round()
    assert verifier.asked == ["acme/widgets#1", "acme/widgets#2"]  # #4 waits: no guess
    assert list(audit.disagreements()) == ["acme/widgets#4"]
    assert audit.unreadable == 1
    assert audit.check().detail.endswith(
        "; last round: acme/widgets#2 unreadable: GitHub core rate limit reached")


def test_a_stored_item_that_cannot_be_read_is_passed_and_named(store: Any) -> None:
    # Not GitHub's fault: the round goes on past it (it stopped every round at the same
    # item before: the cursor never moved), and the readiness detail names it.
    verifier = Verifier()
    verifier.spoiled = {"acme/widgets#2"}
    audit = SelfAudit(_services(store), AuditSettings(1, items=2, pace=0), verifier)
    assert audit.round() == 1
    assert verifier.asked == ["acme/widgets#1", "acme/widgets#2"]
    assert audit.check().detail.endswith(
        "; last round: acme/widgets#2: the stored item cannot be read: column parked: not "
        "JSON (...)")
    verifier.asked.clear()
    assert audit.round() == 2
    assert verifier.asked == ["acme/widgets#4", "acme/widgets#1"]  # past it, round again
    assert list(audit.disagreements()) == ["acme/widgets#4"]
    assert audit.unreadable == 0  # GitHub answered every time


def test_a_round_holds_back_while_githubs_budget_is_low(store: Any) -> None:
    verifier = Verifier()
    budget = BudgetWatch()
    audit = SelfAudit(_services(store), AuditSettings(1, items=10, pace=0), verifier,
                      budget=budget)
    budget.rate_limit("core", RESERVE - 1, None)
    budget.rate_limit("graphql", 4000, None)
    assert audit.round() == 0 and verifier.asked == []
    assert audit.check().detail == (
        f"0 active item(s) agree with GitHub (1 round(s)); last round: held back, GitHub's "
        f"budget is low: core has {RESERVE - 1} left")
    budget.rate_limit("core", 4000, None)  # the budget is back: the next round goes on
    assert audit.round() == 3


def test_an_item_no_longer_active_leaves_the_findings(store: Any) -> None:
    audit = SelfAudit(_services(store), AuditSettings(1, items=10, pace=0), Verifier())
    audit.round()
    with store.transaction(WorkItemRef("acme", "widgets", 4)) as tx:
        tx.state.status = ItemStatus.COMPLETE
    audit.round()
    assert audit.disagreements() == {}
    assert audit.check().detail == "2 active item(s) agree with GitHub (2 round(s))"


def test_readyz_and_metrics_show_the_disagreements(store: Any) -> None:
    audit = SelfAudit(_services(store), AuditSettings(1, items=10, pace=0), Verifier())
    health = Health(_services(store), audit=audit)
    metrics = Metrics(health)
    audit.round()
    ready, body = health.readiness()
    assert ready is True and body["checks"]["audit"]["ok"] is True
    assert body["checks"]["audit"]["detail"].startswith(
        "1 item(s) differ from GitHub's records: acme/widgets#4: ")
    text = metrics.render().decode()
    assert "loopgate_audit_disagreements 1.0" in text.splitlines()
    assert "loopgate_audit_runs_total 1.0" in text.splitlines()


def test_the_loop_runs_rounds_until_stopped_and_is_joined(store: Any) -> None:
    verifier = Verifier()
    audit = SelfAudit(_services(store), AuditSettings(0.0001, items=10, pace=0), verifier)
    supervisor = Supervisor()
    supervisor.add_loop("self-audit", audit.run, timeout=10)
    supervisor.start()
    try:
        wait_until(lambda: audit.runs >= 2, "two self-audit rounds")
    finally:
        report = supervisor.stop()
    assert report.clean, report
    assert not any(t.name == "loopgate-self-audit" for t in threading.enumerate())
