"""Outcome names that pick the next edge (the designs' ``on:`` values)."""

from __future__ import annotations

__all__ = [
    "PASS",
    "SKIPPED",
    "SELECTED",
    "APPROVED",
    "APPROVED_WITH_COMMENTS",
    "CHANGES_REQUESTED",
    "STALE",
    "ALL_OUTCOMES",
]

PASS = "pass"
SKIPPED = "skipped"
SELECTED = "selected"
APPROVED = "approved"
APPROVED_WITH_COMMENTS = "approved-with-comments"
CHANGES_REQUESTED = "changes-requested"
STALE = "stale"

ALL_OUTCOMES = (PASS, SKIPPED, SELECTED, APPROVED, APPROVED_WITH_COMMENTS, CHANGES_REQUESTED, STALE)
