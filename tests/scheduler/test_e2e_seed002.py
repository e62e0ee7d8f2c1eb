"""Seed 002's scheduler configuration, verbatim, running live over the local transport (issue 8's acceptance).

All four custom plugins the seed names (CheckPodCountLimit, CheckPodLimitResources, CheckCSIStorageCapacity,
LvmVolumeCapacity) come from the example distribution's entry points (``make venv`` installs it).
CheckPodCountLimit (podCountLimit 2) keeps a third pod off a node that runs two, and with DefaultPreemption
disabled nothing is ever evicted for a pod that fits nowhere; pods without claims pass both storage plugins.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import load_config
from kubeplane.scheduler.scheduler import Scheduler
from tests.cli.test_explain_plugins import SEED_002
from tests.scheduler.test_e2e_local import Cluster, node, pod


async def test_seed_002_configuration_verbatim(tmp_path: Path) -> None:
    config_file = tmp_path / "scheduler-config.yaml"
    config_file.write_text(SEED_002)
    config = load_config(config_file)

    client = await LocalClient.in_memory()
    for name in ("node01", "node02"):
        await client.create(client.resource("nodes"), node(name))
    scheduler = Scheduler(client, config=config, rng=random.Random(0))
    fwk = scheduler.profiles["default-scheduler"]
    # DefaultPreemption is disabled; DynamicResources (v1.37 default profile) keeps its PostFilter
    assert [p.name() for p in fwk.post_filter_plugins] == ["DynamicResources"]
    assert [p.name() for p in fwk.filter_plugins][-4:] == [
        "CheckPodCountLimit",
        "CheckPodLimitResources",
        "CheckCSIStorageCapacity",
        "LvmVolumeCapacity",
    ]
    assert "CheckCSIStorageCapacity" in [p.name() for p in fwk.pre_filter_plugins]
    task = asyncio.ensure_future(scheduler.run())
    cluster = Cluster(client, scheduler)
    try:
        pin = {"kubernetes.io/hostname": "node01"}
        for i in range(2):
            await cluster.create(pod(f"first-{i}", nodeSelector=pin))
            assert await cluster.node_of(f"first-{i}") == "node01"
        await cluster.create(pod("third"))
        assert await cluster.node_of("third") == "node02"  # node01 already runs two pods
        await cluster.create(pod("pinned", nodeSelector=pin))
        message = await cluster.failed_message("pinned")
        assert message == (
            "0/2 nodes are available: 1 node(s) already run 2 pods (podCountLimit), "
            "1 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate."
        )
        assert "preemption" not in message
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
