"""Hooks: the registry (:mod:`engine.hooks.registry`) and every shipped hook.

Importing this package registers every shipped hook in :data:`REGISTRY`, so a graph
compiled against it may name any of them (issue #2 §3).
"""

from __future__ import annotations

from engine.hooks import artifacts, common, feedback, markers, phase_selection, quiz
from engine.hooks.registry import REGISTRY, HookContext, HookResult, hook

__all__ = [
    "REGISTRY",
    "HookContext",
    "HookResult",
    "hook",
    "artifacts",
    "common",
    "feedback",
    "markers",
    "phase_selection",
    "quiz",
]
