"""Hook results, the context a hook receives, and the registry (``@hook("kebab-name")``).

A hook is a callable ``fn(ctx: HookContext) -> HookResult`` registered under a kebab-case
name with the ``with:`` parameters it accepts. Entry chains run when a node is entered
(their results never gate); exit chains gate leaving the node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.effects import Effect
from engine.graph.model import Graph, Node
from engine.ports import Ports
from engine.refs import WorkItemRef
from engine.settings import EngineSettings
from engine.state import ItemState

__all__ = [
    "PASS",
    "WAIT",
    "BLOCK",
    "SKIP",
    "HookResult",
    "HookContext",
    "HookSpec",
    "HookRegistry",
    "REGISTRY",
    "hook",
]

PASS = "pass"
WAIT = "wait"
BLOCK = "block"
SKIP = "skip"


@dataclass(frozen=True)
class HookResult:
    """What a hook answers.

    Attributes:
        kind: ``pass`` | ``wait`` | ``block`` | ``skip``.
        reason: a sentence for people (required for wait and block).
        data: extra results the runtime understands:
            ``outcome`` (overrides the routing outcome on pass),
            ``decision`` (a mapping recorded on the node's current visit, first answer
            wins within a visit; ``decisions[node]`` reads it, issue 19 §2),
            ``skips`` ({node: :class:`~engine.records.Skip`}) and ``optIns`` ({node:
            :class:`~engine.records.OptIn`}; a mapping in their document shape is read
            with their ``from_json``) recorded for nodes not yet entered,
            ``retriable`` (bool, for block),
            ``refused`` (list of tokens named back by a gate), ``unverified`` (bool, on
            wait: the gate could not read what it needed — a tracker or file read failed —
            so the event that woke it must be offered again; recorded in ``parked``).
    """

    kind: str
    reason: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def passed(cls, reason: str = "", **data: Any) -> HookResult:
        """A pass result."""
        return cls(PASS, reason, data)

    @classmethod
    def wait(cls, reason: str, **data: Any) -> HookResult:
        """A wait result (the item parks with ``reason``)."""
        return cls(WAIT, reason, data)

    @classmethod
    def block(cls, reason: str, **data: Any) -> HookResult:
        """A block result (counts an attempt)."""
        return cls(BLOCK, reason, data)

    @classmethod
    def skip(cls, reason: str = "", **data: Any) -> HookResult:
        """A skip result (this hook had nothing to do; the chain goes on)."""
        return cls(SKIP, reason, data)


@dataclass
class HookContext:
    """Everything a hook may read, and the two things it may write: the event log and
    effects (issue 10 §1: a hook never calls a tracker write or the notifier itself).

    Attributes:
        ref: the work item.
        graph: the compiled graph.
        node: the node whose chain runs.
        params: the hook's ``with:`` mapping (read-only).
        state: the item's state as of this transaction (hooks must not mutate it;
            they return data for the runtime to record).
        event: what triggered the run (:func:`engine.events.hook_event`):
            ``{"comments": [Comment, ...]}`` for a comment event,
            ``{"attestation": {"comment_id": int, "url": str}}`` for a quiz tick,
            ``{"decision": events.Decision, "via": ...}`` / ``{"selection":
            events.Selection, "via": ...}`` for a chat surface's answer (issue 20 §1),
            ``{}`` on entry or a plain re-evaluation.
        ports: tracker, artifact store, notifier, clock.
        settings: engine settings (authorized users, keywords, spec dir).
        chain: ``entry`` or ``exit``.
        log: ``log(kind, data)`` appends to the item's event log in the same transaction.
        emit: ``emit(effect) -> key`` queues an :mod:`engine.effects` effect, committed
            with the state and carried out after commit (post a comment, a label, a
            notice); the key names its outbox row.
    """

    ref: WorkItemRef
    graph: Graph
    node: Node
    params: Mapping[str, Any]
    state: ItemState
    event: Mapping[str, Any]
    ports: Ports
    settings: EngineSettings
    chain: str
    log: Callable[[str, Mapping[str, Any]], None]
    emit: Callable[[Effect], str]

    def now_iso(self) -> str:
        """The clock's now as ISO-8601 UTC with seconds precision (``...Z``)."""
        return self.ports.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


HookFn = Callable[[HookContext], HookResult]


@dataclass(frozen=True)
class HookSpec:
    """A registered hook: its name, function and accepted ``with:`` keys."""

    name: str
    fn: HookFn
    params: frozenset[str]
    doc: str = ""


class HookRegistry:
    """Name -> :class:`HookSpec`. The compiler refuses a graph naming an unknown hook."""

    def __init__(self) -> None:
        self._specs: dict[str, HookSpec] = {}

    def register(self, name: str, fn: HookFn, params: tuple[str, ...] = ()) -> HookFn:
        """Register ``fn`` under ``name``; re-registering a name replaces it (so a bridge
        can supply a richer implementation of the same documented hook)."""
        self._specs[name] = HookSpec(name, fn, frozenset(params), (fn.__doc__ or "").strip())
        return fn

    def get(self, name: str) -> HookSpec:
        """The spec for ``name``.

        Raises:
            KeyError: when no hook of that name is registered.
        """
        return self._specs[name]

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._specs)


#: The process-wide registry every shipped hook registers in.
REGISTRY = HookRegistry()


def hook(name: str, *, params: tuple[str, ...] = ()) -> Callable[[HookFn], HookFn]:
    """Decorator: register the function as hook ``name`` accepting ``params`` keys."""

    def wrap(fn: HookFn) -> HookFn:
        return REGISTRY.register(name, fn, params)

    return wrap
