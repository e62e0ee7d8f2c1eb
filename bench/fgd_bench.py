"""The FGD paper's openb experiment as a benchmark: the full grid (6 policies × 10 seeds) and its checks.

Prints one JSON object per line: {"bench": "fgd", "metric", "value", "unit", ...parameters}: the run time per
policy × seed (median and max, the issue's target is < 30 s for ~10,800 pods onto 1,213 nodes), the grid's wall
time, peak RSS, each policy's median GPU allocation at 100 % and 130 % arrived load, and the number of
FGD-EXPERIMENT.md §6.2 checks that pass (the table goes to stderr). ``--quick``: 2 policies × 1 seed.
``--variants`` also runs the gpushare40, multigpu30 and cpu050 traces (no reference values exist for them; the
check is that FGD leaves the fewest GPUs unallocated).

Run: ``.venv/bin/python bench/fgd_bench.py [--quick] [--variants] [--jobs N] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kubeplane.gpu import repro


def emit(metric: str, value: float, unit: str, **params: Any) -> None:
    print(json.dumps({"bench": "fgd", "metric": metric, "value": round(value, 3), "unit": unit, **params}), flush=True)


def _grid(data: Path, trace: str, policies: list[str], seeds: list[int], jobs: int, quick: bool) -> bool:
    started = time.perf_counter()
    exp = repro.experiment(data, trace=trace, policies=policies, seeds=seeds, jobs=jobs)
    wall = time.perf_counter() - started
    print(repro.render(exp), file=sys.stderr)
    params = {"trace": trace, "runs": len(exp.results), "jobs": jobs, "quick": quick}
    walls = [r.wall_seconds for r in exp.results]
    emit("run_seconds_median", statistics.median(walls), "s", **params)
    emit("run_seconds_max", max(walls), "s", **params)
    emit("pods_per_run_median", statistics.median(r.pods for r in exp.results), "pods", **params)
    emit("grid_wall_seconds", wall, "s", **params)
    for policy, curves in exp.summary.items():
        for r in (100, 130):
            emit(f"alloc_pct_at_{r}", curves["alloc"][r], "%", policy=policy, **params)
    if exp.rows:
        emit("checks_passed", sum(c.passed for c in exp.rows), "checks", total=len(exp.rows), **params)
    return exp.passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="FGD and BestFit, seed 42 only")
    parser.add_argument("--variants", action="store_true", help="also the gpushare40, multigpu30, cpu050 traces")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--data", type=Path, default=None, help="the openb directory (default: the packaged trace)")
    args = parser.parse_args()
    data = repro.find_data_dir(args.data)
    policies = ["FGD", "BestFit"] if args.quick else list(repro.POLICIES)
    seeds = [42] if args.quick else list(range(42, 52))
    ok = _grid(data, "default", policies, seeds, args.jobs, args.quick)
    if args.variants and not args.quick:
        for trace in repro.TRACES[1:]:
            ok = _grid(data, trace, policies, seeds, args.jobs, args.quick) and ok
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    emit("peak_rss", peak / 1024, "MiB", quick=args.quick)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
