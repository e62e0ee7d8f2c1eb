"""Endpoints and EndpointSlice controllers: how long until N ready pods behind one Service are published.

In-process (the API server behind ``LocalClient.in_memory``), the three controllers of ``kubeplane.controllers``
(``endpoint``, ``endpointslice``, ``endpointslicemirroring``) on the system clock. N pods, each Running and Ready
with an IP, are created behind one Service; the bench measures the wall time from the first pod's creation until
the Service's EndpointSlices hold all N IPs and its Endpoints object all N addresses (1000 at most: above that
it is truncated and annotated ``over-capacity``), then the time for a
readiness flip of every pod (all not ready) to reach the slices' conditions.

Prints one JSON object per line: {"bench": "endpoints", "metric", "value", "unit", "pods"}.
``--quick`` uses 200 pods. Run: ``PYTHONPATH=src .venv/bin/python bench/endpoints_bench.py [--quick]``.

Metrics:
* ``publish_s``: creating N ready pods until both the slices and the Endpoints list them all (includes creates).
* ``slices``: EndpointSlices for the Service at that point (100 endpoints per slice).
* ``flip_s``: marking all N pods not ready until every slice endpoint reads ``ready: false``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubeplane.client.clock import SystemClock
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.local import LocalClient
from kubeplane.controllers.base import ControllerContext
from kubeplane.controllers.endpoints import EndpointsController
from kubeplane.controllers.endpoints_mirroring import EndpointSliceMirroringController
from kubeplane.controllers.endpoints_slice import EndpointSliceController

NS = "default"


QUICK_PODS = 200


def emit(metric: str, value: float, unit: str, pods: int) -> None:
    line = {"bench": "endpoints", "metric": metric, "value": round(value, 3), "unit": unit, "pods": pods}
    print(json.dumps({**line, "quick": pods == QUICK_PODS}))
    sys.stdout.flush()


async def until(check: Callable[[], Awaitable[bool]], limit: float = 300.0) -> None:
    deadline = time.monotonic() + limit
    while not await check():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        await asyncio.sleep(0.01)


def status(ip: str, ready: bool) -> dict[str, Any]:
    cond = {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": "2027-01-01T00:00:00Z"}
    return {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "conditions": [cond]}


async def main(pods: int) -> None:
    client = await LocalClient.in_memory()
    clock = SystemClock()
    informers = SharedInformerFactory(client, clock=clock, rng=random.Random(0))
    ctx = ControllerContext(client=client, informers=informers, clock=clock)
    controllers = [cls(ctx) for cls in (EndpointsController, EndpointSliceController, EndpointSliceMirroringController)]
    ctx.informers.start()
    await ctx.informers.wait_for_cache_sync()
    tasks = [asyncio.create_task(c.run()) for c in controllers]
    res = {name: client.resource(name) for name in ("pods", "services", "endpoints", "endpointslices", "nodes")}
    await client.create(res["nodes"], {"metadata": {"name": "n1"}})
    service = {"metadata": {"name": "web"}, "spec": {"ipFamilies": ["IPv4"], "selector": {"app": "web"},
               "ports": [{"port": 80, "targetPort": 8080}]}}  # fmt: skip
    await client.create(res["services"], service, namespace=NS)
    ips = {f"10.1.{i // 250}.{i % 250 + 1}" for i in range(pods)}

    async def slice_conditions() -> dict[str, bool]:
        items = (await client.list(res["endpointslices"], namespace=NS))["items"]
        return {e["addresses"][0]: e["conditions"]["ready"] for s in items for e in s.get("endpoints") or []}

    async def published() -> bool:
        if set(await slice_conditions()) != ips:
            return False
        ep = await client.get(res["endpoints"], "web", namespace=NS)
        # the Endpoints object holds at most 1000 addresses (upstream maxCapacity; then it is annotated)
        return sum(len(s.get("addresses") or []) for s in ep.get("subsets") or []) == min(pods, 1000)

    start = time.perf_counter()
    for i, ip in enumerate(sorted(ips)):
        body = {"metadata": {"name": f"p{i}", "labels": {"app": "web"}},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}}  # fmt: skip
        pod = await client.create(res["pods"], body, namespace=NS)
        pod["status"] = {**pod.get("status", {}), **status(ip, True)}
        await client.update(res["pods"], pod, namespace=NS, subresource="status")
    await until(published)
    emit("publish_s", time.perf_counter() - start, "s", pods)
    slices = (await client.list(res["endpointslices"], namespace=NS))["items"]
    emit("slices", len(slices), "count", pods)

    start = time.perf_counter()
    for pod in (await client.list(res["pods"], namespace=NS))["items"]:
        pod["status"] = {**pod["status"], **status(pod["status"]["podIP"], False)}
        await client.update(res["pods"], pod, namespace=NS, subresource="status")

    async def flipped() -> bool:
        conditions = await slice_conditions()
        return len(conditions) == pods and not any(conditions.values())

    await until(flipped)
    emit("flip_s", time.perf_counter() - start, "s", pods)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await ctx.informers.stop()
    await ctx.close()
    await client.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 pods instead of 2000")
    args = parser.parse_args()
    asyncio.run(main(QUICK_PODS if args.quick else 2000))
