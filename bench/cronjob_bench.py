"""Benchmark: the cron schedule parser and ``Next`` (``kubeplane.api.cron``), and a CronJob in a simulation.

Cases: ``parse.<schedule>`` and ``next.<schedule>`` in µs per call for a few schedule shapes (every minute, a
weekday list with a step, a time zone across a DST change, ``@every``); ``sim.cronjob_hour``: wall seconds for a
simulated hour of a CronJob ``* * * * *`` (60 Jobs) on a 2-worker cluster, and its speed-up. Prints one JSON
object per line: ``{"bench": "cronjob", "metric", "value", "unit", "quick"}``.
Run: ``PYTHONPATH=src .venv/bin/python bench/cronjob_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
import timeit
from datetime import UTC, datetime

from kubeplane.api import cron
from kubeplane.sim.runner import run
from kubeplane.sim.scenario import Scenario

SCHEDULES = {
    "every_minute": "* * * * *",
    "weekday_step": "30 6-16/4 * * 1-5",
    "new_york_daily": "TZ=America/New_York 30 2 * * *",
    "every_90m": "@every 90m",
}


def emit(metric: str, value: float, unit: str, quick: bool) -> None:
    print(json.dumps({"bench": "cronjob", "metric": metric, "value": round(value, 3), "unit": unit, "quick": quick}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    number = 200 if args.quick else 5000
    start = datetime(2026, 3, 7, 12, tzinfo=UTC)
    for name, text in SCHEDULES.items():
        parse_s = timeit.timeit(functools.partial(cron.parse_schedule, text), number=number) / number
        emit(f"parse.{name}", parse_s * 1e6, "us/call", args.quick)
        schedule = cron.parse_schedule(text)
        next_s = timeit.timeit(functools.partial(schedule.next, start), number=number) / number
        emit(f"next.{name}", next_s * 1e6, "us/call", args.quick)
    minutes = 10 if args.quick else 60
    pod_spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": pod_spec}}}},
    }
    scenario = Scenario.parse(
        {
            "name": "cron-bench",
            "duration": f"{minutes}m",
            "cluster": {"preset": "uniform", "workers": 2},
            "workload": [{"at": 0, "manifest": cronjob}],
        }
    )
    began = time.perf_counter()
    result = run(scenario, until=minutes * 60 + 1)
    wall = time.perf_counter() - began
    emit("sim.cronjob_jobs", float(len(result.jobs)), "jobs", args.quick)
    emit("sim.cronjob_wall", wall, "s", args.quick)
    emit("sim.cronjob_speedup", (minutes * 60 + 1) / wall, "x", args.quick)


if __name__ == "__main__":
    main()
