"""Informer throughput: objects and watch events per second into a SharedInformer's cache and one handler.

Runs over the in-process transport (``LocalClient`` on a memory store) and, when ``kubeplane.client.http``
provides ``HTTPClient``, over HTTP against a ``kubeplane apiserver`` process (sqlite store, 127.0.0.1, its own
kubeconfig) started as ``bench/apiserver_bench.py`` does. Prints one JSON object per line:
{"bench": "informer", "metric", "value", "unit", ...parameters}. ``--quick`` finishes in well under a minute.
Run: ``.venv/bin/python bench/informer_bench.py [--quick]``.

Metrics (``transport`` is ``local`` or ``http``):
* ``list_objects_per_s``: a new informer over N existing pods, from ``start()`` to ``has_synced()`` (paged
  list of 500, cache filled, one counting handler called for every pod).
* ``watchlist_objects_per_s``: the same sync by WatchList (sendInitialEvents) instead of a list.
* ``watch_events_per_s``: a backlog of M watch events (M/2 pod creates, then M/2 pod updates) replayed into a
  synced informer: the informer's list is answered empty at the resourceVersion before the writes, so its
  watch receives all M events at once; timed until the cache holds the last version and the handler has been
  called M times. This is the informer's own event rate, not bounded by the writers.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.util
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, cast

from apiserver_process import running_apiserver
from kubeplane.api.resources import ResourceInfo
from kubeplane.client.clock import SystemClock
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Client, Obj
from kubeplane.client.local import LocalClient

WRITERS = 32


def emit(metric: str, value: float, unit: str, **params: object) -> None:
    print(json.dumps({"bench": "informer", "metric": metric, "value": round(value, 1), "unit": unit, **params}))
    sys.stdout.flush()


def pod(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "resources": {"requests": {"cpu": "100m"}}}]},
    }


class BacklogClient:
    """A client whose list is empty at a fixed resourceVersion, so an informer watches from there (replaying
    every later event); everything else goes to the wrapped client."""

    def __init__(self, inner: Client, resource_version: str) -> None:
        self._inner, self._rv = inner, resource_version

    async def list(self, resource: ResourceInfo, **kwargs: Any) -> Obj:
        return {"metadata": {"resourceVersion": self._rv}, "items": []}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def write_all(client: Client, ops: list[Any]) -> None:
    """Run the ``ops`` coroutine factories over ``WRITERS`` concurrent workers."""
    work = iter(ops)

    async def worker() -> None:
        for op in work:
            await op()

    await asyncio.gather(*(worker() for _ in range(WRITERS)))


async def bench_list(client: Client, namespace: str, n: int, **params: object) -> None:
    """Objects/s into an informer's cache by its initial sync: a paged list, then (same objects) WatchList."""
    res = client.resource("pods")
    await client.create(client.resource("namespaces"), {"metadata": {"name": namespace}})
    await write_all(client, [lambda i=i: client.create(res, pod(f"l-{i:06d}"), namespace=namespace) for i in range(n)])
    for metric, watch_list in (("list_objects_per_s", False), ("watchlist_objects_per_s", True)):
        calls = [0]
        informer = SharedInformer(
            client, res, clock=SystemClock(), rng=random.Random(1), namespace=namespace, watch_list=watch_list
        )
        informer.add_event_handler(on_add=lambda obj, calls=calls: calls.__setitem__(0, calls[0] + 1))
        start = time.perf_counter()
        informer.start()
        await informer.wait_for_sync()
        elapsed = time.perf_counter() - start
        await informer.stop()
        assert calls[0] == n, calls[0]
        assert len(informer.indexer) == n, len(informer.indexer)
        assert informer.reflector.watch_list is watch_list, "the server refused WatchList"
        emit(metric, n / elapsed, "objects/s", n=n, page_size=500, **params)


async def bench_watch(client: Client, namespace: str, m: int, **params: object) -> None:
    res = client.resource("pods")
    await client.create(client.resource("namespaces"), {"metadata": {"name": namespace}})
    before = (await client.list(res, namespace=namespace))["metadata"]["resourceVersion"]
    half = m // 2
    await write_all(
        client, [lambda i=i: client.create(res, pod(f"w-{i:06d}"), namespace=namespace) for i in range(half)]
    )
    patch = {"metadata": {"labels": {"phase": "updated"}}}
    await write_all(
        client, [lambda i=i: client.patch(res, f"w-{i:06d}", patch, namespace=namespace) for i in range(half)]
    )
    final = (await client.list(res, namespace=namespace))["metadata"]["resourceVersion"]
    done = asyncio.Event()
    calls = [0]

    def count(*_: Obj) -> None:
        calls[0] += 1
        if calls[0] == 2 * half:
            done.set()

    backlog = cast(Client, BacklogClient(client, before))
    informer = SharedInformer(
        backlog, res, clock=SystemClock(), rng=random.Random(1), namespace=namespace, watch_list=False
    )
    informer.add_event_handler(on_add=count, on_update=count)
    start = time.perf_counter()
    informer.start()
    await asyncio.wait_for(done.wait(), 300)
    elapsed = time.perf_counter() - start
    await informer.stop()
    assert len(informer.indexer) == half
    assert informer.last_sync_resource_version == final, (informer.last_sync_resource_version, final)
    emit("watch_events_per_s", 2 * half / elapsed, "events/s", m=2 * half, **params)


async def run_local(quick: bool) -> None:
    client = await LocalClient.in_memory()
    params: dict[str, object] = {"transport": "local", "store": "memory", "quick": quick}
    try:
        await bench_list(client, "list", 2_000 if quick else 10_000, **params)
        await bench_watch(client, "watch", 2_000 if quick else 8_000, **params)
    finally:
        await client.close()


async def run_http(kubeconfig: Path, quick: bool) -> None:
    from kubeplane.client.http import HTTPClient
    from kubeplane.client.kubeconfig import load_kubeconfig

    # the load generator must not be throttled by the client-side rate limiter (default 50 qps)
    config = dataclasses.replace(load_kubeconfig(kubeconfig), qps=1e9, burst=1_000_000)
    client = HTTPClient(config)
    params: dict[str, object] = {"transport": "http", "store": "sqlite", "quick": quick}
    try:
        await bench_list(client, "list", 2_000 if quick else 10_000, **params)
        await bench_watch(client, "watch", 2_000 if quick else 8_000, **params)
    finally:
        await client.close()


def with_apiserver(quick: bool) -> None:
    with running_apiserver() as kubeconfig:
        time.sleep(0.2)  # the kubeconfig is written as the server starts listening
        import uvloop

        uvloop.run(run_http(kubeconfig, quick))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a run of well under a minute")
    parser.add_argument("--transport", choices=["all", "local", "http"], default="all")
    args = parser.parse_args()
    if args.transport in ("all", "local"):
        import uvloop

        uvloop.run(run_local(args.quick))
    if args.transport in ("all", "http"):
        if importlib.util.find_spec("kubeplane.client.http") is None:
            print("kubeplane.client.http is not available: skipping the HTTP transport", file=sys.stderr)
        else:
            with_apiserver(args.quick)


if __name__ == "__main__":
    main()
