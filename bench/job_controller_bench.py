"""Job controller throughput: how fast N Jobs of C completions each run to Complete.

In-process (the API server behind ``LocalClient.in_memory``), the ``job`` controller of ``kubeplane.controllers``
on a fake clock that the bench moves 1 s whenever the cluster is idle (the controller batches pod events by 1 s, as
upstream; the bench measures the controller's work, not those waits). The bench plays the kubelet: every pod it
sees Pending it marks Succeeded with a terminated container. N Jobs (completions = parallelism = C) are created
at once; the clock starts when the first is created and stops when all are Complete.

Prints one JSON object per line: {"bench": "job_controller", "metric", "value", "unit", "jobs", "completions"}.
``--quick`` uses 40 Jobs of 4; the full run 400 of 4. Run:
``PYTHONPATH=src .venv/bin/python bench/job_controller_bench.py [--quick]``.

Metrics:
* ``jobs_completed_per_s``: Jobs Complete per wall-clock second.
* ``pods_created_per_s``: pods the controller created per wall-clock second.
* ``total_s``: wall time from the first create to the last Complete.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.client.clock import FakeClock
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.local import LocalClient
from kubeplane.controllers.base import ControllerContext
from kubeplane.controllers.job import JobController

NS = "default"
QUICK_JOBS = 40


def emit(metric: str, value: float, unit: str, jobs: int, completions: int) -> None:
    line = {"bench": "job_controller", "metric": metric, "value": round(value, 3), "unit": unit}
    print(json.dumps({**line, "jobs": jobs, "completions": completions, "quick": jobs == QUICK_JOBS}))
    sys.stdout.flush()


def job_body(name: str, completions: int) -> dict[str, Any]:
    labels = {"job-name": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": completions,
            "manualSelector": True,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }


async def main(jobs: int, completions: int) -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    informers = SharedInformerFactory(client, clock=clock, rng=random.Random(0))
    ctx = ControllerContext(client=client, informers=informers, clock=clock)
    controller = JobController(ctx)
    ctx.informers.start()
    await ctx.informers.wait_for_cache_sync()
    task = asyncio.create_task(controller.run())
    pods_res, jobs_res = client.resource("pods"), client.resource("jobs")
    finished: set[str] = set()
    created: set[str] = set()

    start = time.perf_counter()
    for i in range(jobs):
        await client.create(jobs_res, job_body(f"job{i}", completions), namespace=NS)
    deadline = time.monotonic() + 600
    while True:
        for pod in (await client.list(pods_res, namespace=NS))["items"]:
            name = pod["metadata"]["name"]
            created.add(name)
            if name in finished or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                continue
            at = apimeta.format_time(clock.now())
            status = {"phase": "Succeeded", "containerStatuses": [
                {"name": "c", "state": {"terminated": {"exitCode": 0, "finishedAt": at}}}]}  # fmt: skip
            await client.patch(pods_res, name, {"status": status}, namespace=NS, subresource="status")
            finished.add(name)
        items = (await client.list(jobs_res, namespace=NS))["items"]
        done = sum(
            1 for j in items if any(c["type"] == "Complete" for c in (j.get("status") or {}).get("conditions") or ())
        )
        if done == jobs:
            break
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: {done}/{jobs} complete")
        await asyncio.sleep(0.01)
        await clock.advance(1.0)
    total = time.perf_counter() - start
    emit("jobs_completed_per_s", jobs / total, "jobs/s", jobs, completions)
    emit("pods_created_per_s", len(created) / total, "pods/s", jobs, completions)
    emit("total_s", total, "s", jobs, completions)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await ctx.informers.stop()
    await ctx.close()
    await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 Jobs instead of 400")
    args = parser.parse_args()
    asyncio.run(main(QUICK_JOBS if args.quick else 400, 4))
