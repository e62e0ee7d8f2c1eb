"""Store throughput: writes, compare-and-put updates, range reads and watch fan-out, per backend.

Prints one JSON object per line: {"bench": "store", "metric": ..., "value": ..., "unit": ..., parameters}.
``--quick`` finishes in well under a minute. Run: ``.venv/bin/python bench/store_bench.py [--quick]``.

Backends: ``memory``, ``sqlite`` (crash-safe), ``sqlite-fsync`` (the default set) and ``etcd``, which is only
run when asked for (``--backend etcd``): it starts a 3-member etcd cluster on loopback (fsync on, as deployed;
see ``apiserver_process.running_etcd``), or uses an existing one given by ``--etcd-servers URL[,URL...]``. Each
measurement opens its own :class:`~kubeplane.store.etcd.EtcdStore` under a fresh key prefix
(``/kubeplane-bench-<run>/<n>-<name>``), so measurements never see each other's keys and a reused cluster
needs no cleanup; the prefixes are numbered so none is a prefix of another (the store's own rule).

Metrics (each for every backend run unless noted):
* ``writes_per_s``: sequential single-key creates by one writer, each awaited (acknowledged) before the next.
* ``concurrent_writes_per_s``: the same with 16 concurrent writers (the fsync mode's group commit target).
* ``cas_updates_per_s``: sequential updates with ``expected_mod_revision`` (kube-apiserver's GuaranteedUpdate).
* ``range_reads_per_s``: range reads of a 100-key prefix at the current revision; ``past_range_reads_per_s`` at
  an older revision (served from the log).
* ``fanout_events_per_s``: events delivered per second in total to W watchers (1, 10, 100) of one prefix while
  one writer writes; the writer yields to the loop every 64 writes, as an API server handler would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from itertools import count
from pathlib import Path

from apiserver_process import running_etcd
from kubeplane.store.interface import Store
from kubeplane.store.memory import MemoryStore
from kubeplane.store.sqlite import Durability, SqliteStore

BACKENDS = ("memory", "sqlite", "sqlite-fsync", "etcd")
DEFAULT_BACKENDS = ("memory", "sqlite", "sqlite-fsync")  # etcd starts a cluster: only when asked for
ETCD_MEMBERS = 3
# Backends whose every sequential write waits for an fsync (etcd: a quorum of members' WAL fsyncs): their
# sequential-write, update and fan-out runs use 2,000 operations rather than 50,000 (rates, not totals, compare).
SLOW_BACKENDS = ("sqlite-fsync", "etcd")

Opener = Callable[[str], Awaitable[Store]]


def emit(metric: str, value: float, unit: str, **params: object) -> None:
    print(json.dumps({"bench": "store", "metric": metric, "value": round(value, 1), "unit": unit, **params}))
    sys.stdout.flush()


def opener(backend: str, directory: Path, etcd_endpoints: Sequence[str] = ()) -> Opener:
    """A factory of fresh, empty stores of ``backend``, one per measurement (``name`` keeps them apart)."""
    run = uuid.uuid4().hex[:8]
    serial = count()

    async def open_store(name: str) -> Store:
        if backend == "memory":
            return MemoryStore()
        if backend == "etcd":
            from kubeplane.store.etcd import EtcdOptions, EtcdStore

            prefix = f"/kubeplane-bench-{run}/{next(serial):02d}-{name}"
            store = EtcdStore(EtcdOptions(endpoints=list(etcd_endpoints), key_prefix=prefix))
            await store.start()  # connected and following etcd before the clock starts, as an API server is
            return store
        durability = Durability.FSYNC if backend == "sqlite-fsync" else Durability.CRASH_SAFE
        return SqliteStore(directory / f"{name}.db", durability=durability)

    return open_store


async def bench_writes(open_store: Opener, n: int, value: bytes) -> float:
    store = await open_store("writes")
    start = time.perf_counter()
    for i in range(n):
        await store.create(f"/registry/pods/default/pod-{i:07d}", value)
    elapsed = time.perf_counter() - start
    await store.close()
    return n / elapsed


async def bench_concurrent_writes(open_store: Opener, n: int, value: bytes, writers: int) -> float:
    store = await open_store("concurrent")

    async def writer(w: int) -> None:
        for i in range(n // writers):
            await store.create(f"/registry/pods/ns-{w}/pod-{i:07d}", value)

    start = time.perf_counter()
    await asyncio.gather(*(writer(w) for w in range(writers)))
    elapsed = time.perf_counter() - start
    await store.close()
    return (n // writers) * writers / elapsed


async def bench_cas_updates(open_store: Opener, n: int, value: bytes) -> float:
    store = await open_store("cas")
    keys = [f"/registry/pods/default/pod-{i:04d}" for i in range(100)]
    revisions = {k: (await store.create(k, value)).mod_revision for k in keys}
    start = time.perf_counter()
    for i in range(n):
        key = keys[i % 100]
        revisions[key] = (await store.update(key, value, expected_mod_revision=revisions[key])).mod_revision
    elapsed = time.perf_counter() - start
    await store.close()
    return n / elapsed


async def bench_ranges(open_store: Opener, n: int, value: bytes) -> tuple[float, float]:
    store = await open_store("ranges")
    for i in range(1_000):
        await store.create(f"/registry/pods/ns-{i % 10}/pod-{i:05d}", value)
    past = store.revision
    for i in range(100):  # every key of the prefix changes after `past`
        await store.update(f"/registry/pods/ns-3/pod-{i * 10 + 3:05d}", value)
    start = time.perf_counter()
    for _ in range(n):
        result = await store.range("/registry/pods/ns-3/")
    current_rate = n / (time.perf_counter() - start)
    assert len(result.kvs) == 100
    past_n = max(n // 20, 10)
    start = time.perf_counter()
    for _ in range(past_n):
        result = await store.range("/registry/pods/ns-3/", revision=past)
    past_rate = past_n / (time.perf_counter() - start)
    assert len(result.kvs) == 100
    await store.close()
    return current_rate, past_rate


async def bench_fanout(open_store: Opener, n: int, value: bytes, watchers: int) -> float:
    store = await open_store(f"fanout{watchers}")
    watches = [store.watch("/registry/pods/", buffer_size=n + 1) for _ in range(watchers)]
    done = 0

    async def consume(index: int) -> None:
        nonlocal done
        watch = watches[index]
        got = 0
        while got < n:
            got += len(await watch.next_batch())
        done += 1

    consumers = [asyncio.ensure_future(consume(i)) for i in range(watchers)]
    start = time.perf_counter()
    for i in range(n):
        await store.create(f"/registry/pods/default/pod-{i:07d}", value)
        if i % 64 == 63:
            await asyncio.sleep(0)
    await asyncio.gather(*consumers)
    elapsed = time.perf_counter() - start
    assert done == watchers
    await store.close()
    return n * watchers / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a run of well under a minute")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per value (default 1024)")
    parser.add_argument(
        "--backend", choices=BACKENDS, action="append", help=f"repeatable; default {', '.join(DEFAULT_BACKENDS)}"
    )
    parser.add_argument(
        "--etcd-servers",
        metavar="URL[,URL...]",
        help=f"with --backend etcd: use this etcd cluster instead of starting a {ETCD_MEMBERS}-member one",
    )
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0
    value = b"x" * args.value_size
    common = {"value_size": args.value_size, "quick": args.quick}
    backends = args.backend or DEFAULT_BACKENDS
    with ExitStack() as stack:
        endpoints: list[str] = []
        if "etcd" in backends:
            if args.etcd_servers:
                endpoints = [u.strip() for u in args.etcd_servers.split(",") if u.strip()]
            else:
                endpoints = stack.enter_context(running_etcd(ETCD_MEMBERS))
        for backend in backends:
            await run_backend(backend, endpoints, scale, value, common)


async def run_backend(
    backend: str, etcd_endpoints: Sequence[str], scale: float, value: bytes, common: dict[str, object]
) -> None:
    if backend == "etcd":
        common = {**common, "etcd_endpoints": len(etcd_endpoints)}
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-") as tmp:
        open_store = opener(backend, Path(tmp), etcd_endpoints)
        slow = backend in SLOW_BACKENDS
        n = int((2_000 if slow else 50_000) * scale) or 1
        emit("writes_per_s", await bench_writes(open_store, n, value), "writes/s", backend=backend, n=n, **common)
        n = int(50_000 * scale)
        rate = await bench_concurrent_writes(open_store, n, value, 16)
        emit("concurrent_writes_per_s", rate, "writes/s", backend=backend, n=n, writers=16, **common)
        n = int((2_000 if slow else 50_000) * scale)
        rate = await bench_cas_updates(open_store, n, value)
        emit("cas_updates_per_s", rate, "updates/s", backend=backend, n=n, **common)
        n = int(20_000 * scale)
        current, past = await bench_ranges(open_store, n, value)
        emit("range_reads_per_s", current, "reads/s", backend=backend, keys_per_read=100, **common)
        emit("past_range_reads_per_s", past, "reads/s", backend=backend, keys_per_read=100, **common)
        for watchers in (1, 10, 100):
            n = int((2_000 if slow else 20_000) * scale)
            rate = await bench_fanout(open_store, n, value, watchers)
            emit("fanout_events_per_s", rate, "events/s", backend=backend, watchers=watchers, n=n, **common)


if __name__ == "__main__":
    asyncio.run(main())
