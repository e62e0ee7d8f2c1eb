"""Gang scheduling enabled the way upstream v1.37 enables it: by kube-scheduler's feature gates, not by a profile.

With ``--feature-gates=GenericWorkload=true,GangScheduling=true`` and no configuration file, upstream's
``applyFeatureGates`` (``pkg/scheduler/apis/config/v1/default_plugins.go``) appends GangScheduling to the default
``multiPoint`` plugins, so a PodGroup of minCount 3 with two pods keeps both out of the queue (PreEnqueue,
upstream ``TestGangScheduling`` "pod group with fewer than minCount pods") and a third pod lets all three bind.
With v1.37's default gates (GangScheduling off) the same two pods are scheduled at once, one by one.
Time is the injected clock; waits are bounded.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import default_config, parse_feature_gates
from kubeplane.scheduler.scheduler import Scheduler
from tests.scheduler.test_e2e_gang import _bound, _pods, _wait_for, gang_pod, node, pod_group

GATES = "GenericWorkload=true,GangScheduling=true"


async def _run(gates: str | None, *, third: bool) -> tuple[list[str], int]:
    """Bound pods after two (then optionally a third) gang pods of minCount 3, and the gated count seen."""
    client = await LocalClient.in_memory()
    await client.create(client.resource("nodes"), node("node01", cpu="8"))
    config = default_config(feature_gates=parse_feature_gates(gates))
    scheduler = Scheduler(client, config=config, clock=FakeClock(), rng=random.Random(1))
    task = asyncio.ensure_future(scheduler.run())
    try:
        await client.create(client.resource("podgroups"), pod_group("g", 3), namespace="default")
        for i in range(2):
            await client.create(client.resource("pods"), gang_pod(f"p-{i}", "g"), namespace="default")
        pods: list[dict[str, Any]] = await _wait_for(
            client, lambda ps: len(_bound(ps)) == 2 or scheduler.queue.pending_pod_counts()["gated"] == 2
        )
        gated = scheduler.queue.pending_pod_counts()["gated"]
        if third:
            await client.create(client.resource("pods"), gang_pod("p-2", "g"), namespace="default")
            pods = await _wait_for(client, lambda ps: len(_bound(ps)) == 3)
        else:
            for _ in range(30):  # give a wrongly admitted pod the time to bind
                await asyncio.sleep(0.01)
            pods = await _pods(client)
        return _bound(pods), gated
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_gang_is_enforced_only_with_the_feature_gates() -> None:
    assert await _run(GATES, third=False) == ([], 2)
    assert await _run(None, third=False) == (["p-0", "p-1"], 0)


async def test_gated_gang_binds_together_once_min_count_pods_exist() -> None:
    bound, gated = await _run(GATES, third=True)
    assert gated == 2
    assert bound == ["p-0", "p-1", "p-2"]
