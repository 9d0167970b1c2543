"""Operations benchmarks (issue 13): what one ``GET /metrics`` scrape and one readiness
check cost on a large database; prints a Markdown table of medians.

The database holds N work items (default 10,000) started and advanced through phase
selection with the SQLite store and the local tracker (as ``bench/engine_bench.py``), so
the scrape-time reads (work items by node, gate waits, event-log counters, queues) run
over a realistic event log. Each scrape renders the whole text exposition in process
(``Metrics.render``); each readiness check runs every check (``Health.checks``: the
database write probe and the queue reads).

Run from the repository root::

    .venv/bin/python bench/ops_bench.py [--items 10000] [--runs 20]

Not a test: nothing here asserts, and no test imports it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.engine_bench import populate  # noqa: E402
from bot.config import validate_mapping  # noqa: E402
from bot.ops.health import Health  # noqa: E402
from bot.ops.metrics import Metrics  # noqa: E402
from engine.graph.compiler import shipped_graph  # noqa: E402
from engine.store.sqlite import SqliteStore  # noqa: E402


def _timed(fn: object, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - began)
    return times


def main() -> None:
    """Populate a database, then time scrapes and readiness checks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "loopgate.db"
        populate(db, Path(tmp) / "checkout", args.items)
        store = SqliteStore(db)
        events = store.db().execute("SELECT COUNT(*) FROM events").fetchone()[0]
        services = SimpleNamespace(store=store, graph=shipped_graph(),
                                   config=validate_mapping({}, "bench"))
        health = Health(services)
        metrics = Metrics(health)
        size = len(metrics.render())
        scrape = _timed(metrics.render, args.runs)
        checks = _timed(health.checks, args.runs)
        store.close()
    print(f"{args.items} items, {events} events; exposition {size} bytes\n")
    print("| measure | runs | median | min | max |\n|---|---|---|---|---|")
    for name, values in (("`/metrics` render", scrape), ("`/readyz` checks", checks)):
        print(f"| {name} | {len(values)} | {statistics.median(values) * 1000:.1f} ms "
              f"| {min(values) * 1000:.1f} ms | {max(values) * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
