"""The hook check runs in one pass (issue 21 §4) but refuses as the two checks it replaced
did in order: any unregistered hook, even one met after an unknown parameter, first; then
the first unknown parameter in document order."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import GraphConfigError
from engine.graph.compiler import compile_graph
from engine.hooks.registry import HookRegistry, HookResult


def _noop(ctx: Any) -> HookResult:
    return HookResult.passed()


def _registry() -> HookRegistry:
    reg = HookRegistry()
    reg.register("check", _noop, ("sections",))
    reg.register("plain", _noop)
    return reg


def _doc(a_exit: list[Any], b_entry: list[Any]) -> dict[str, Any]:
    return {
        "version": 1, "name": "mini", "start": "a",
        "nodes": [{"id": "a", "exit": a_exit}, {"id": "b", "entry": b_entry},
                  {"id": "done", "terminal": True}],
        "edges": [{"from": "a", "to": "b", "on": "pass"},
                  {"from": "b", "to": "done", "on": "pass"}],
    }


def _refusal(doc: dict[str, Any]) -> str:
    with pytest.raises(GraphConfigError) as info:
        compile_graph(doc, _registry())
    return str(info.value)


def test_a_later_unregistered_hook_is_refused_before_an_earlier_unknown_parameter() -> None:
    doc = _doc([{"hook": "check", "with": {"lokced": True}}], ["plain", "sparkle"])
    assert _refusal(doc) == (
        "<graph>: node 'b': entry hook 'sparkle' is not registered "
        "(registered hooks: check, plain)"
    )


def test_the_first_unknown_parameter_is_refused_when_every_hook_is_registered() -> None:
    doc = _doc([{"hook": "check", "with": {"sections": ["S"], "lokced": True}}],
               ["plain", {"hook": "plain", "with": {"x": 1}}])
    assert _refusal(doc) == (
        "<graph>: node 'a': exit hook 'check' has no parameter 'lokced' (it accepts: sections)"
    )
    doc = _doc(["check"], ["plain", {"hook": "plain", "with": {"x": 1}}, "check"])
    assert _refusal(doc) == (
        "<graph>: node 'b': entry hook 'plain' has no parameter 'x' (it accepts: no parameters)"
    )


def test_a_registered_hook_used_plainly_many_times_compiles() -> None:
    graph = compile_graph(_doc(["check", "check"], ["plain", "check", "plain"]), _registry())
    assert [h.name for h in graph.node("b").entry] == ["plain", "check", "plain"]
    assert graph.node("a").exit[0].params == {}
