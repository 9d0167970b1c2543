"""The self-audit of ``loopgate serve`` (issue 22 §3): ``loopgate verify`` run by the server
itself, every ``server.auditMinutes``, over the active work items.

Each round verifies at most ``server.auditItems`` items (running or parked), taking up where
the previous round stopped, so a large installation is covered over several rounds; the
items are spaced ``server.auditPaceSeconds`` apart, so a round spends GitHub's budget
slowly (one item costs about 2 + P REST reads — its thread, each delivering pull request's
thread and head check — and one GraphQL query, P = open delivering pull requests), and a
round stops while GitHub's REST or GraphQL budget has fewer than :data:`RESERVE` left
(:class:`BudgetWatch`, fed by the client's ``x-ratelimit-remaining``), so it never starves
the gates. A round stops at the first item GitHub cannot answer (a rate limit, an
outage): the rest wait for the next round, and the items already verified keep their
findings. An item whose verification could not be read keeps its previous finding; it is
never reported as agreeing on a guess. A stored item loopgate itself cannot read
(``UnreadableItemError``) is passed over, named in the check's detail and a warning: no
verdict of it to check, and stopping there would stop every round at it.

What it found shows on ``/readyz`` (the ``audit`` check, naming each item that differs and
how) and ``/metrics`` (``loopgate_audit_disagreements``, ``loopgate_audit_runs_total``).

**A disagreement does not fail readiness; the check reports it and stays ok.** Readiness
tells a load balancer whether to send this replica traffic. A disagreement is about the
data (someone edited an approval on GitHub, a push the server has not seen yet), not about
whether this server can take webhooks and clicks; failing ``/readyz`` would take loopgate
out of rotation, so it would stop receiving exactly the deliveries (the edit, the push)
that bring its state and checks back in line, and an orchestrator restarting it changes
nothing about the records. The published check already fails closed on its own rules. So
the audit reports (``/readyz`` detail and body, the gauge for an alert rule, a warning in
the log) and leaves paging to the operator's alerting.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bridges import telemetry
from engine.errors import UnreadableItemError
from engine.ports import TrackerError
from engine.refs import WorkItemRef
from engine.verify import Verification

if TYPE_CHECKING:  # types only: bot.services imports what it wires
    from bot.services import Services

__all__ = ["SelfAudit", "AuditSettings", "BudgetWatch", "RESERVE"]

logger = logging.getLogger(__name__)

#: How many differing items the ``audit`` check names (the rest are counted).
SHOWN = 5
#: Requests (REST) or points (GraphQL) of GitHub's hourly budget the audit never spends: a
#: round stops while a resource has fewer left, so the gates keep them (an App installation
#: has at least 5,000 of each an hour: platform-facts A10, B2).
RESERVE = 500


class BudgetWatch(telemetry.Sink):
    """What is left of each GitHub rate-limit resource, as the client last read it
    (``x-ratelimit-remaining``), for :class:`SelfAudit` to hold back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left: dict[str, int] = {}

    def rate_limit(self, resource: str, remaining: int, reset_at: Any) -> None:
        """Remember ``remaining`` of ``resource``."""
        with self._lock:
            self._left[resource] = int(remaining)

    def rate_limited(self, resource: str, reset_at: Any) -> None:
        """Nothing is left of ``resource`` until its reset."""
        with self._lock:
            self._left[resource] = 0

    def low(self, reserve: int = RESERVE) -> str:
        """"" when every resource read has at least ``reserve`` left; else which has not,
        e.g. ``core has 312 left``."""
        with self._lock:
            short = sorted((r, n) for r, n in self._left.items()
                           if r in ("core", "graphql") and n < reserve)
        return "; ".join(f"{r} has {n} left" for r, n in short)


@dataclass(frozen=True)
class AuditSettings:
    """``server.auditMinutes`` (0 = off), ``server.auditItems``, ``server.auditPaceSeconds``.

    Attributes:
        minutes: minutes between rounds (the first one interval after start).
        items: the most items one round verifies.
        pace: seconds between two items of a round.
    """

    minutes: float = 15.0
    items: int = 20
    pace: float = 2.0

    @classmethod
    def from_server(cls, server: Any) -> AuditSettings:
        """Read the ``server`` section (a mapping; missing keys take the defaults)."""
        minutes = server.get("auditMinutes")
        items = server.get("auditItems")
        pace = server.get("auditPaceSeconds")
        return cls(float(15 if minutes is None else minutes), int(items or 20),
                   float(2 if pace is None else pace))


@dataclass
class SelfAudit:
    """The supervised ``self-audit`` loop and what it found.

    Args:
        services: the wired services (store, graph, settings, the GitHub tracker).
        settings: :class:`AuditSettings`.
        verify: ``(services, ref) -> Verification | None`` (default
            :func:`bot.cli.verify_cmd.verify_one`); raises ``TrackerError`` when GitHub
            cannot be read.
        budget: the :class:`BudgetWatch` installed as a telemetry sink (None: not held
            back); a round stops while GitHub's budget is below :data:`RESERVE`.
    """

    services: Services
    settings: AuditSettings = field(default_factory=AuditSettings)
    verify: Callable[[Services, WorkItemRef], Verification | None] | None = None
    budget: BudgetWatch | None = None
    runs: int = 0
    unreadable: int = 0
    last_round_at: float | None = None
    last_error: str = ""
    _found: dict[str, Verification] = field(default_factory=dict)
    _cursor: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- the loop ------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """The supervised loop: wait ``minutes`` (or the stop), then a round, and again.
        The first round comes one interval after start, not at it: a starting server is
        busy catching up, and its first answers are what the audit would check."""
        while not stop.wait(self.settings.minutes * 60):
            try:
                self.round(stop)
            except Exception as exc:  # noqa: BLE001 - a locked file now: the next round tries
                logger.warning("self-audit: the round failed: %s", exc)

    def _due(self) -> list[WorkItemRef]:
        # The work items a round verifies: those still walking (a complete item's verdict
        # is final; an escalated one publishes failure).
        refs = self.services.store.active_items()
        active = {str(ref) for ref in refs}
        with self._lock:  # an item no longer active leaves the findings
            for gone in [k for k in self._found if k not in active]:
                del self._found[gone]
        after = [r for r in refs if str(r) > self._cursor]
        ordered = after + [r for r in refs if str(r) <= self._cursor]
        return ordered[: max(1, self.settings.items)]

    def round(self, stop: threading.Event | None = None) -> int:
        """Verify the next items (at most ``items``, ``pace`` apart).

        Returns:
            How many items were verified in this round.
        """
        verify = self.verify or _default_verify
        done = 0
        with self._lock:
            self.last_error = ""
        for index, ref in enumerate(self._due()):
            if index and stop is not None and stop.wait(self.settings.pace):
                break
            low = self.budget.low() if self.budget is not None else ""
            if low:
                with self._lock:
                    self.last_error = f"held back, GitHub's budget is low: {low}"
                break  # the gates need what is left; the next round goes on
            try:
                found = verify(self.services, ref)
            except TrackerError as exc:
                self._unreadable(ref, exc)
                break  # GitHub is not answering: the rest wait for the next round
            except UnreadableItemError as exc:
                # Our own stored item cannot be read: no verdict to check, and every round
                # would stop here again (the cursor never passing it); go on past it.
                self._stored_unreadable(ref, exc)
            else:
                done += 1
                if found is not None:
                    self._record(found)
            self._cursor = str(ref)
        with self._lock:
            self.runs += 1
            self.last_round_at = time.monotonic()
        return done

    def _unreadable(self, ref: WorkItemRef, exc: TrackerError) -> None:
        with self._lock:
            self.unreadable += 1
            self.last_error = f"{ref} unreadable: {exc}"
        logger.warning("self-audit: GitHub could not be read for %s (%s); the round stops",
                       ref, exc)

    def _stored_unreadable(self, ref: WorkItemRef, exc: UnreadableItemError) -> None:
        with self._lock:
            self.last_error = f"{exc.key}: the stored item cannot be read: {exc.detail}"
        logger.warning("self-audit: %s cannot be read from the store (%s); not verified",
                       exc.key, exc.detail)

    def _record(self, found: Verification) -> None:
        with self._lock:
            self._found[found.ref] = found
        if not found.agrees:
            for line in found.lines():
                if " differs " in line:
                    logger.warning("self-audit: %s", line)

    # -- what it found -------------------------------------------------------------------
    def disagreements(self) -> dict[str, list[str]]:
        """``{item: [each line that differs]}`` of the latest findings."""
        with self._lock:
            found = list(self._found.values())
        return {v.ref: [line for line in v.lines() if " differs " in line]
                for v in found if not v.agrees}

    def check(self) -> Any:
        """The ``audit`` readiness check: always ok (see the module docstring for why);
        its detail names every item that differs and the first difference of each."""
        from bot.ops.health import Check

        differing = self.disagreements()
        with self._lock:
            runs, verified = self.runs, len(self._found)
            error = self.last_error
        if not runs:
            return Check("audit", True, "no round yet")
        if not differing:
            detail = f"{verified} active item(s) agree with GitHub ({runs} round(s))"
        else:
            named = sorted(differing.items())
            shown = "; ".join(f"{ref}: {lines[0].split(' ', 1)[-1]}"
                              for ref, lines in named[:SHOWN])
            if len(named) > SHOWN:
                shown += f"; and {len(named) - SHOWN} more"
            detail = (f"{len(differing)} item(s) differ from GitHub's records: {shown} "
                      "(reported, not failing readiness: see `loopgate verify`)")
        if error:
            detail += f"; last round: {error}"
        return Check("audit", True, detail)


def _default_verify(services: Services, ref: WorkItemRef) -> Verification | None:
    from bot.cli.verify_cmd import verify_one

    return verify_one(services, ref)
