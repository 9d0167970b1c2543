"""Miniature graphs, test hooks and a step clock for the runtime, report and store tests.

The hooks here are small and deterministic, registered in a private
:class:`~engine.hooks.registry.HookRegistry` (``TEST_REGISTRY``) so the process-wide registry
is untouched; :func:`register_test_hooks` also puts them in another registry (the CLI
tests use the process-wide one, under the same ``t-`` names).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.graph.compiler import compile_graph
from engine.graph.model import Graph
from engine.hooks.registry import HookContext, HookRegistry, HookResult
from engine.local.memory_tracker import MemoryArtifactStore, MemoryTracker
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.runtime import Runtime
from engine.settings import EngineSettings
from engine.store.memory import MemoryStore
from engine.store.sqlite import SqliteStore

REF = WorkItemRef("acme", "widgets", 7)
SETTINGS = EngineSettings(authorized_users=("alice",), loop="mini")


class StepClock:
    """A clock that moves one second per reading, from 2026-03-01T12:00:00Z."""

    def __init__(self) -> None:
        self._now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)

    def now(self) -> datetime:
        self._now += timedelta(seconds=1)
        return self._now


# -- test hooks --------------------------------------------------------------------------
def _comments(ctx: HookContext) -> list[Any]:
    return list(ctx.event.get("comments") or [])


def t_label(ctx: HookContext) -> HookResult:
    """Entry: label the item ``loop:<phase or node id>``."""
    ctx.ports.tracker.add_label(ctx.ref, f"loop:{ctx.node.phase or ctx.node.id}")
    return HookResult.passed()


def t_log(ctx: HookContext) -> HookResult:
    """Entry: append ``test.entered`` to the event log."""
    ctx.log("test.entered", {"node": ctx.node.id})
    return HookResult.passed()


def t_approve(ctx: HookContext) -> HookResult:
    """Exit: an authorized ``approve`` / ``changes`` comment decides; else wait."""
    for comment in reversed(_comments(ctx)):
        if not ctx.settings.is_authorized(comment.author):
            continue
        if "approve" in comment.body:
            return HookResult.passed(outcome="approved", decision={"by": comment.author})
        if "changes" in comment.body:
            return HookResult.passed(outcome="changes-requested")
    return HookResult.wait(f"waiting for a decision at {ctx.node.id}")


_LIST = re.compile(r"(skip|optin)=([\w,-]*)")


def t_select(ctx: HookContext) -> HookResult:
    """Exit: ``select skip=a,b optin=c`` by an authorized user passes with ``selected``."""
    for comment in reversed(_comments(ctx)):
        if not ctx.settings.is_authorized(comment.author) or "select" not in comment.body:
            continue
        found = {k: [n for n in v.split(",") if n] for k, v in _LIST.findall(comment.body)}
        by = f"@{comment.author}"
        skips = {n: {"via": "selection", "token": n, "by": by, "reason": ""}
                 for n in found.get("skip", [])}
        opt_ins = {n: {"via": "selection", "by": by} for n in found.get("optin", [])}
        return HookResult.passed(outcome="selected", decision={"by": by, "via": "reply"},
                                 skips=skips, optIns=opt_ins)
    return HookResult.wait("waiting for the phase selection")


def t_artifact(ctx: HookContext) -> HookResult:
    """Exit: pass when the artifact ``name`` exists, else block naming it."""
    name = ctx.params["name"]
    if ctx.ports.artifacts.read(ctx.ref, name) is None:
        return HookResult.block(f"{name} is missing")
    return HookResult.passed()


def t_boom(ctx: HookContext) -> HookResult:
    """Raises, with a secret-looking message that must never reach the log."""
    raise RuntimeError("token ghp_secretsecret leaked")


def t_surface(ctx: HookContext) -> HookResult:
    """Entry: put ``{key: value}`` into the surface."""
    return HookResult.passed(surface={ctx.params["key"]: ctx.params["value"]})


def t_copy_surface(ctx: HookContext) -> HookResult:
    """Entry: copy surface ``key`` (set by an earlier hook of the chain) to ``copied``."""
    return HookResult.passed(surface={"copied": ctx.state.surface.get("key")})


def t_tick(ctx: HookContext) -> HookResult:
    """Exit: a ``tick`` event loops back, counting ticks in the surface."""
    if ctx.event.get("tick"):
        count = int(ctx.state.surface.get("ticks", 0)) + 1
        return HookResult.passed(outcome="changes-requested", surface={"ticks": count})
    return HookResult.wait("waiting for a tick")


def t_attest(ctx: HookContext) -> HookResult:
    """Exit: an ``attestation`` event passes with an attestation decision."""
    att = ctx.event.get("attestation")
    if not att:
        return HookResult.wait("waiting for the quiz attestation")
    return HookResult.passed(decision={"attestedBy": "alice", "attestedAt": "2026-03-01T12:30:00Z",
                                       "comment": att["url"]})


def t_block(ctx: HookContext) -> HookResult:
    """Exit: block with the reason in the event (``{"why": ...}``), else a fixed one."""
    return HookResult.block(str(ctx.event.get("why") or "not ready"))


def t_entry_wait(ctx: HookContext) -> HookResult:
    """Entry: answers wait (entry results never gate)."""
    return HookResult.wait("entry hooks cannot make anyone wait")


_HOOKS: tuple[tuple[str, Any, tuple[str, ...]], ...] = (
    ("t-label", t_label, ()),
    ("t-log", t_log, ()),
    ("t-approve", t_approve, ()),
    ("t-select", t_select, ()),
    ("t-artifact", t_artifact, ("name",)),
    ("t-boom", t_boom, ()),
    ("t-surface", t_surface, ("key", "value")),
    ("t-copy-surface", t_copy_surface, ()),
    ("t-tick", t_tick, ()),
    ("t-attest", t_attest, ()),
    ("t-block", t_block, ()),
    ("t-entry-wait", t_entry_wait, ()),
)


def register_test_hooks(registry: HookRegistry) -> HookRegistry:
    """Register every ``t-`` hook in ``registry`` and return it."""
    for name, fn, params in _HOOKS:
        registry.register(name, fn, params)
    return registry


TEST_REGISTRY = register_test_hooks(HookRegistry())

# -- miniature graphs --------------------------------------------------------------------
_ENTRY = ["t-label", "t-log"]


def mini_mapping() -> dict[str, Any]:
    """select (human gate, required) → a (agent, skippable) → critic (agent, opt-in, gates
    critic.md) → gate (human) → b (code, skippable) → done; gate loops back to a on
    changes-requested; plus a terminal ``escalated`` node."""
    return {
        "version": 1,
        "name": "mini",
        "start": "select",
        "skipSets": {"chain": ["a", "b"]},
        "nodes": [
            {"id": "select", "actor": "human", "required": True, "phase": "selection",
             "entry": _ENTRY, "exit": ["t-select"]},
            {"id": "a", "actor": "agent", "skippable": True, "phase": "build", "entry": _ENTRY},
            {"id": "critic", "actor": "agent", "optIn": True, "description": "a second look",
             "entry": _ENTRY, "exit": [{"hook": "t-artifact", "with": {"name": "critic.md"}}]},
            {"id": "gate", "actor": "human", "phase": "review", "entry": _ENTRY,
             "exit": ["t-approve"]},
            {"id": "b", "actor": "code", "skippable": True, "entry": _ENTRY},
            {"id": "done", "actor": "code", "terminal": True},
            {"id": "escalated", "actor": "human", "terminal": True},
        ],
        "edges": [
            {"from": "select", "to": "a", "on": "selected"},
            {"from": "a", "to": "critic", "on": "pass"},
            {"from": "a", "to": "critic", "on": "skipped"},
            {"from": "critic", "to": "gate", "on": "pass"},
            {"from": "critic", "to": "gate", "on": "skipped"},
            {"from": "gate", "to": "b", "on": "approved"},
            {"from": "gate", "to": "a", "on": "changes-requested"},
            {"from": "b", "to": "done", "on": "pass"},
            {"from": "b", "to": "done", "on": "skipped"},
        ],
    }


def compile_mini(mapping: dict[str, Any] | None = None,
                 registry: HookRegistry = TEST_REGISTRY) -> Graph:
    """Compile ``mapping`` (default :func:`mini_mapping`) against the test hooks."""
    return compile_graph(mapping or mini_mapping(), registry, source="mini")


def tick_mapping() -> dict[str, Any]:
    """One human node that loops on itself on every ``tick`` event (concurrency test)."""
    return {
        "version": 1,
        "name": "tick",
        "start": "tick",
        "nodes": [
            {"id": "tick", "actor": "human", "exit": ["t-tick"]},
            {"id": "done", "actor": "code", "terminal": True},
        ],
        "edges": [
            {"from": "tick", "to": "tick", "on": "changes-requested"},
            {"from": "tick", "to": "done", "on": "pass"},
        ],
    }


def make_store(kind: str, tmp_path: Path) -> MemoryStore | SqliteStore:
    """A fresh ``memory`` or ``sqlite`` store (the SQLite file under ``tmp_path``)."""
    if kind == "memory":
        return MemoryStore()
    return SqliteStore(tmp_path / "state" / "loopgate.db")


def make_runtime(
    store: Any,
    graph: Graph | None = None,
    *,
    tracker: Any = None,
    artifacts: Any = None,
    registry: HookRegistry = TEST_REGISTRY,
) -> Runtime:
    """A runtime over ``store`` with a memory tracker and artifact store and a step clock."""
    ports = Ports(tracker=tracker or MemoryTracker(), artifacts=artifacts or MemoryArtifactStore(),
                  clock=StepClock())
    return Runtime(graph or compile_mini(), store, ports, SETTINGS, registry=registry)


def say(runtime: Runtime, author: str, body: str) -> dict[str, Any]:
    """Post ``body`` as ``author`` on :data:`REF` and return the comment event."""
    return {"comments": [runtime.ports.tracker.add_comment_as(REF, author, body)]}


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """The ``kind`` of each event, in order."""
    return [e["kind"] for e in events]
