"""Engine benchmarks (issue 2 "Benchmarks"); prints a Markdown table of medians.

1. Compile of the shipped graph (uncached, in process).
2. ``start`` + ``advance`` through phase selection for N items (default 10,000) with the
   SQLite store, the local tracker and a local-checkout artifact store: each item is
   started (the checklist and the assignment are posted to the local thread), an
   authorized ``the-loop execute`` reply is added, and the item is advanced to the first
   phase.
3. ``loopgate check --all --format json`` over those N items, run as the real CLI in a
   subprocess; wall time is measured around it and peak RSS is read from the kernel's
   rusage of that child (``os.wait4``). Targets: ≤ 2 s and ≤ 150 MB.

Run from the repository root::

    .venv/bin/python bench/engine_bench.py [--items 10000] [--runs 3] [--check-runs 5]

Not a test: nothing here asserts, and no test imports it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.graph.compiler import compile_file, shipped_graph_path  # noqa: E402
from engine.local.checkout import CheckoutArtifactStore  # noqa: E402
from engine.local.sqlite_tracker import LocalTracker  # noqa: E402
from engine.ports import Ports  # noqa: E402
from engine.refs import WorkItemRef  # noqa: E402
from engine.runtime import Runtime  # noqa: E402
from engine.settings import EngineSettings  # noqa: E402
from engine.store.sqlite import SqliteStore  # noqa: E402

SETTINGS = EngineSettings(authorized_users=("alice",))
CHECK_TARGET_S = 2.0
CHECK_TARGET_MB = 150.0


def bench_compile(runs: int) -> list[float]:
    """Seconds per uncached compile of the shipped graph."""
    path = shipped_graph_path()
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        compile_file(path)
        times.append(time.perf_counter() - began)
    return times


def populate(db: Path, workspace: Path, items: int) -> float:
    """Start and advance ``items`` items through phase selection; returns seconds."""
    store = SqliteStore(db)
    tracker = LocalTracker(store)
    ports = Ports(tracker=tracker, artifacts=CheckoutArtifactStore(workspace, "docs/specs"))
    runtime = Runtime(compile_file(shipped_graph_path()), store, ports, SETTINGS)
    began = time.perf_counter()
    for n in range(1, items + 1):
        ref = WorkItemRef("acme", "widgets", n)
        runtime.start(ref)
        reply = tracker.add_comment_as(ref, "alice", "the-loop execute")
        state = runtime.advance(ref, {"comments": [reply]})
        if state.current_node != "brainstorming":
            raise SystemExit(f"{ref} stopped at {state.current_node}: {state.parked}")
    elapsed = time.perf_counter() - began
    store.close()
    return elapsed


def check_all(db: Path) -> tuple[float, float]:
    """Run ``loopgate check --all --format json`` once; returns (seconds, peak RSS in MB)."""
    argv = [sys.executable, "-c", "from bot.cli import main; main()", "--db", str(db),
            "check", "--all", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("LOOPGATE_CONFIG", None)
    with open(os.devnull, "wb") as sink:
        began = time.perf_counter()
        child = subprocess.Popen(argv, stdout=sink, cwd=tempfile.gettempdir(), env=env)
        _pid, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):  # 1 would be --fail-on; not used here
        raise SystemExit(f"check --all exited {child.returncode}")
    return elapsed, usage.ru_maxrss / 1024  # Linux reports KiB


def _row(name: str, items: str, values: list[float], show: Callable[[float], str],
         target: str = "") -> str:
    med, low, high = statistics.median(values), min(values), max(values)
    return (f"| {name} | {items} | {len(values)} | {show(med)} | {show(low)} | {show(high)} "
            f"| {target} |")


def main() -> None:
    """Run the benchmarks and print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="runs of start + advance")
    parser.add_argument("--check-runs", type=int, default=5, help="runs of check --all")
    parser.add_argument("--compile-runs", type=int, default=20)
    args = parser.parse_args()

    compile_times = bench_compile(args.compile_runs)
    populate_times: list[float] = []
    check_times: list[float] = []
    check_rss: list[float] = []
    with tempfile.TemporaryDirectory(prefix="loopgate-bench-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        for run in range(args.runs):
            db = Path(tmp) / f"run-{run}" / "loopgate.db"
            populate_times.append(populate(db, workspace, args.items))
            print(f"start + advance run {run + 1}: {populate_times[-1]:.1f} s", file=sys.stderr)
        for _ in range(args.check_runs):
            seconds, mb = check_all(db)
            check_times.append(seconds)
            check_rss.append(mb)
            print(f"check --all: {seconds:.2f} s, {mb:.0f} MB", file=sys.stderr)

    n = f"{args.items:,}"
    print("| benchmark | items | runs | median | min | max | target |")
    print("|---|---:|---:|---:|---:|---:|---|")
    print(_row("compile the shipped graph", "—", compile_times, lambda s: f"{s * 1000:.1f} ms"))
    print(_row("start + advance through phase selection", n, populate_times,
               lambda s: f"{s:.1f} s ({s / args.items * 1000:.2f} ms/item)"))
    print(_row("`check --all --format json` (wall)", n, check_times, lambda s: f"{s:.2f} s",
               f"≤ {CHECK_TARGET_S:g} s"))
    print(_row("`check --all --format json` (peak RSS)", n, check_rss,
               lambda mb: f"{mb:.0f} MB", f"≤ {CHECK_TARGET_MB:g} MB"))
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs.")


if __name__ == "__main__":
    main()
