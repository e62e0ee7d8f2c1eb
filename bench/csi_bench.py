"""The simulated CSI driver's cost and throughput, in one process over an in-memory API server (real clock).

* ``fleet_start_s`` for N nodes with the default driver, and ``csi_start_s``, the part of it the driver takes
  (``CSIPlugins.start``: the CSIDriver, N CSINodes, the provisioner's informers synced); the best of three runs
  each (the machine may be shared).
* ``volumes_provisioned_per_s``: M claims annotated for the driver with a selected node (round robin), created
  back to back; from the first create to the last PV seen, with capacity tracking on (so every provisioning
  also updates a CSIStorageCapacity object).

Prints JSON lines {"bench": "csi", "metric", "value", "unit", "quick", ...}. ``--quick`` runs 100 nodes and
100 claims. Run: ``.venv/bin/python bench/csi_bench.py [--quick] [--nodes N] [--claims M]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet

DRIVER = "csi.kubeplane.io"


async def start_time(nodes: int) -> tuple[float, float]:
    """(whole Fleet.start, its CSIPlugins.start) in seconds."""
    client = await LocalClient.in_memory()
    fleet = Fleet(client, parse_node_config({"nodes": [{"count": nodes}]}), rng=random.Random(1))
    csi_start = fleet.csi.start
    spent = 0.0

    async def timed() -> None:
        nonlocal spent
        began = time.perf_counter()
        await csi_start()
        spent = time.perf_counter() - began

    fleet.csi.start = timed  # type: ignore[method-assign]
    started = time.perf_counter()
    await fleet.start()
    elapsed = time.perf_counter() - started
    await fleet.stop()
    await client.close()
    return elapsed, spent


async def provisioning(nodes: int, claims: int) -> float:
    client = await LocalClient.in_memory()
    data = {"nodes": [{"count": nodes, "csiCapacity": {DRIVER: "1Ti"}}]}
    fleet = Fleet(client, parse_node_config(data), rng=random.Random(1))
    await fleet.start()
    cls = {"metadata": {"name": "local"}, "provisioner": DRIVER, "volumeBindingMode": "WaitForFirstConsumer"}
    await client.create(client.resource("storageclasses"), cls)
    pvcs, pvs = client.resource("persistentvolumeclaims"), client.resource("persistentvolumes")
    started = time.perf_counter()
    for i in range(claims):
        annotations = {
            "volume.kubernetes.io/storage-provisioner": DRIVER,
            "volume.kubernetes.io/selected-node": f"node-{i % nodes + 1}",
        }
        body = {
            "metadata": {"name": f"c{i}", "annotations": annotations},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "local",
            },
        }
        await client.create(pvcs, body, namespace="default")
    deadline = time.perf_counter() + 120
    while fleet.csi.stats()[DRIVER].provisioned < claims:  # the read API: no list of every PV per poll
        if time.perf_counter() > deadline:
            raise SystemExit("the volumes were not provisioned within 120 s")
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    assert len((await client.list(pvs))["items"]) == claims
    await fleet.stop()
    await client.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--claims", type=int, default=None)
    args = parser.parse_args()
    nodes = args.nodes or (100 if args.quick else 1000)
    claims = args.claims or (100 if args.quick else 1000)
    common = {"bench": "csi", "quick": args.quick, "nodes": nodes}
    runs = [asyncio.run(start_time(nodes)) for _ in range(3)]
    provision = asyncio.run(provisioning(nodes, claims))
    for metric, value, unit in (
        ("fleet_start_s", min(r[0] for r in runs), "s"),
        ("csi_start_s", min(r[1] for r in runs), "s"),
        ("volumes_provisioned_per_s", claims / provision, "1/s"),
    ):
        print(json.dumps({**common, "metric": metric, "value": round(value, 4), "unit": unit, "claims": claims}))


if __name__ == "__main__":
    main()
