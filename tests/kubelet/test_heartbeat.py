"""The fleet's heartbeat as columns (kubeplane.kubelet.heartbeat): Lease renewals written ahead of their moment on
the simulation's virtual clock store exactly what ticking at every moment stores.

Upstream behaviour pinned: each kubelet renews ``kube-node-lease/<node>`` every ``renewInterval`` = 0.25 x
``leaseDurationSeconds`` 40 = 10 s (``pkg/kubelet/nodelease``, ``component-helpers/apimachinery/lease``) with
``renewTime`` its own clock's now; it checks its node status every ``nodeStatusUpdateFrequency`` (10 s) and
writes it when it changed or ``nodeStatusReportFrequency`` passed (``kubelet_node_status.go``
``tryUpdateNodeStatus``). The API server's field manager stamps the manager's entry with the time of each write.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

import orjson
import pytest

from kubeplane.api.meta import parse_micro_time
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.eviction import USAGE_MEMORY_ANNOTATION
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from kubeplane.sim.clock import VirtualClock
from kubeplane.store.watch import StoreWatch

NODES = [{"count": 12, "namePattern": "n{index:02d}", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]
UNTIL = 400.0


class NoHorizonClock(VirtualClock):
    """The virtual clock promising nothing: every tick runs at its own moment (the reference)."""

    async def sleep_until_horizon(self, deadline: float) -> float:
        await super().sleep_until_horizon(deadline)
        return self.monotonic()


Writes = list[tuple[str, bytes]]


def _hog() -> dict[str, Any]:
    """A pod whose simulated memory use crosses ``memory.available<100Mi`` on an 8Gi node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hog", "namespace": "default", "annotations": {USAGE_MEMORY_ANNOTATION: "8100Mi"}},
        "spec": {
            "nodeName": "n03",
            "containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"memory": "100Mi"}}}],
        },
    }


async def _run(
    clock: VirtualClock, *, stop: str | None = None, hog: bool = False, edit: str | None = None
) -> tuple[Writes, list[tuple[float, str]], Writes, int]:
    """A 12-node fleet's run to ``UNTIL``: every write (key and stored bytes, in revision order), the Node writes
    with the simulated time each was seen at, the final state, and how many ticks ran ahead. ``stop``: a node
    whose kubelet stops at 95 s; ``hog``: a pod at 30 s whose memory use puts its node under pressure; ``edit``: a
    node whose Lease someone else labels at 95 s (its next renewal, in the middle of a batch ahead, is refused)."""
    client = await LocalClient.in_memory(now=clock.now, rng=random.Random(7), clock=clock)
    store = client.registry.store
    watch = store.watch("/registry/", start_revision=store.revision + 1)
    changes = store.watch("/registry/", start_revision=store.revision + 1)
    assert isinstance(changes, StoreWatch)
    options = FleetOptions(status_report_frequency=70.0)  # not a multiple of the 300 s pressure transition
    fleet = Fleet(client, parse_node_config(NODES), clock=clock, rng=random.Random(1), options=options)
    node_writes: list[tuple[float, str]] = []
    nodes_prefix = client.resource("nodes").key("n01", None).removesuffix("n01")

    async def node_observer() -> None:
        async for event in watch:
            if event.kv.key.startswith(nodes_prefix):
                node_writes.append((clock.monotonic(), event.kv.key))

    async def stopper() -> None:
        if hog:
            await clock.sleep(30.0)
            await client.create(client.resource("pods"), _hog(), namespace="default")
        if stop is not None:
            await clock.sleep(95.0)
            fleet.stop_node(stop)
        if edit is not None:
            await clock.sleep(95.0)
            leases = client.resource("leases")
            lease = await client.get(leases, edit, namespace="kube-node-lease")
            lease["metadata"]["labels"] = {"edited": "yes"}
            await client.update(leases, lease, namespace="kube-node-lease")

    observer = asyncio.ensure_future(node_observer())
    driver = asyncio.ensure_future(clock.run(until=UNTIL))
    await fleet.start()
    tasks = [asyncio.ensure_future(fleet.run()), asyncio.ensure_future(stopper())]
    await driver
    for task in [*tasks, observer]:
        task.cancel()
    await asyncio.gather(*tasks, observer, return_exceptions=True)
    await fleet.stop()
    final = await store.range("/registry/", revision=store.revision)
    writes = [(e.kv.key, e.kv.value) for e in changes.take_buffered()]
    await client.close()
    return writes, node_writes, [(kv.key, kv.value) for kv in final.kvs], sum(h.ahead for h in fleet.heartbeats)


@pytest.mark.parametrize(
    ("stop", "hog", "edit"),
    [(None, False, None), ("n05", False, None), (None, True, None), (None, False, "n07")],
    ids=[
        "all-nodes-renew-every-10s",
        "a-kubelet-stops-mid-run",
        "memory-pressure-evicts-and-reports",
        "a-conflict-on-a-lease-re-reads-it",
    ],
)
async def test_renewals_ahead_store_what_ticking_at_each_moment_stores(
    stop: str | None, hog: bool, edit: str | None
) -> None:
    """Same seeds, with and without a horizon: the same writes (Leases, Nodes, Pods, Events) with the same bytes
    in the same order, every Node write at the same simulated moment, and the final state identical; with the
    horizon most Lease renewals ran ahead. Under memory pressure (``hog``) the eviction pass that acts, the
    MemoryPressure report and the report when the pressure ends run at their own ticks."""
    ahead_changes, ahead_nodes, ahead_final, ahead = await _run(VirtualClock(), stop=stop, hog=hog, edit=edit)
    exact_changes, exact_nodes, exact_final, exact = await _run(NoHorizonClock(), stop=stop, hog=hog, edit=edit)
    assert exact == 0
    assert ahead > 12 * (UNTIL // 10) // 2
    assert ahead_final == exact_final
    assert ahead_nodes == exact_nodes
    assert ahead_changes == exact_changes
    if edit is not None:
        lease = orjson.loads(dict(ahead_final)[f"/registry/leases/kube-node-lease/{edit}"])
        assert lease["metadata"]["labels"] == {"edited": "yes"}
        assert parse_micro_time(lease["spec"]["renewTime"]).timestamp() >= UNTIL - 10  # still renewed
    if hog:
        pod = orjson.loads(dict(ahead_final)["/registry/pods/default/hog"])
        assert pod["status"]["phase"] == "Failed"
        assert pod["status"]["reason"] == "Evicted"


async def test_each_lease_is_renewed_every_10_seconds_of_its_own_clock() -> None:
    """Written ahead or not, each Lease's renewTime walks its node's tick times: 10 s apart."""
    clock = VirtualClock()
    client = await LocalClient.in_memory(now=clock.now, rng=random.Random(7), clock=clock)
    store = client.registry.store
    watch = store.watch("/registry/leases/", start_revision=store.revision + 1)
    assert isinstance(watch, StoreWatch)
    fleet = Fleet(client, parse_node_config(NODES), clock=clock, rng=random.Random(1))
    driver = asyncio.ensure_future(clock.run(until=UNTIL))
    await fleet.start()
    await driver
    await fleet.stop()
    renewals: dict[str, list[float]] = {}
    for event in watch.take_buffered():
        lease = orjson.loads(event.kv.value)
        renewals.setdefault(lease["metadata"]["name"], []).append(
            parse_micro_time(lease["spec"]["renewTime"]).timestamp()
        )
    await client.close()
    assert sorted(renewals) == [f"n{i:02d}" for i in range(1, 13)]
    for times in renewals.values():
        gaps = [round(b - a, 6) for a, b in itertools.pairwise(times)]
        assert gaps
        assert set(gaps) == {10.0}
        assert len(times) >= UNTIL // 10 - 1
