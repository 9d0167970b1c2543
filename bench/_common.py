"""Shared helpers of the ``bench/`` scripts (issue 21 §6): the machine's load printed beside
every figure, percentiles, and one table row format ``| figure | target | measured | load |``.

Every script is bounded (a fixed amount of work, timeouts on every wait) and talks only to
loopback servers it starts itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.* (the loopback fakes)


def load() -> str:
    """The 1-minute load average and the core count, e.g. ``load 3.41 / 2 cores``."""
    one, _five, _fifteen = os.getloadavg()
    return f"load {one:.2f} / {os.cpu_count() or 1} cores"


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank; 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def header() -> None:
    """Print the table header."""
    print("| figure | target | measured | met | load when measured |")
    print("|---|---|---|---|---|")


def row(figure: str, target: str, measured: str, met: bool | None) -> None:
    """Print one figure against its target with the load right now.

    Args:
        figure: what was measured.
        target: the goal ("—" when none).
        measured: the value(s).
        met: whether the target holds (None: no target).
    """
    word = "—" if met is None else ("yes" if met else "**no**")
    print(f"| {figure} | {target} | {measured} | {word} | {load()} |", flush=True)
