"""Regenerate every benchmark figure (issue 21 §6): ``.venv/bin/python bench/run_all.py``.

Runs each script under ``bench/`` in its own process, one after another (never two at
once: they would load each other), with the machine's load (``os.getloadavg()``) printed
before and after each, and its table as it comes. The issue 21 scripts print a load column
beside every figure; for the older scripts the load lines around their tables are what
stands beside their figures. Every script is bounded (``--timeout`` seconds each, default
900) and talks only to loopback servers it starts.

``--only NAME ...`` runs some of them (``compile inbox ingress pacing check github slack ops
engine outbox replicas``); ``--quick`` runs the smaller sizes each script offers (for a look,
not for the README).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: name -> (script, full arguments, quick arguments); issue 21's first, the heavy last.
SCRIPTS: dict[str, tuple[str, list[str], list[str]]] = {
    "compile": ("compile_bench.py", [], ["--runs", "50"]),
    "inbox": ("inbox_bench.py", [], ["--deliveries", "200"]),
    "ingress": ("ingress_bench.py", [], ["--items", "40"]),
    "pacing": ("pacing_bench.py", [], ["--starts", "20", "--ticks", "20"]),
    "check": ("check_bench.py", [], ["--items", "10000"]),
    "github": ("github_bench.py", [], ["--ticks", "100", "--items", "100"]),
    "slack": ("slack_bench.py", [], ["--requests", "200"]),
    "ops": ("ops_bench.py", [], ["--items", "2000", "--runs", "5"]),
    "engine": ("engine_bench.py", ["--runs", "1", "--check-runs", "3"],
               ["--items", "1000", "--runs", "1", "--check-runs", "1"]),
    "outbox": ("outbox_bench.py", [], ["--items", "20"]),
    "replicas": ("replicas_bench.py", [], ["--items", "20"]),
}


def load() -> str:
    """``load 1/5/15 min: a, b, c on N cores``."""
    one, five, fifteen = os.getloadavg()
    return f"load 1/5/15 min: {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} cores"


def run(name: str, quick: bool, timeout: float) -> bool:
    """Run one script; True when it ended with 0 within ``timeout`` seconds."""
    script, full, small = SCRIPTS[name]
    print(f"\n### {name} (`bench/{script}`)\n\nbefore: {load()}\n", flush=True)
    began = time.monotonic()
    try:
        done = subprocess.run([sys.executable, str(HERE / script), *(small if quick else full)],
                              cwd=HERE.parent, timeout=timeout, check=False)
        ok = done.returncode == 0
        status = f"exit {done.returncode}"
    except subprocess.TimeoutExpired:
        ok, status = False, f"stopped after {timeout:g} s"
    print(f"\nafter: {load()} ({status}, {time.monotonic() - began:.0f} s)", flush=True)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(SCRIPTS), default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    names = args.only or list(SCRIPTS)
    print(f"# loopgate benchmarks\n\nPython {sys.version.split()[0]}; {load()}", flush=True)
    failed = [n for n in names if not run(n, args.quick, args.timeout)]
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
