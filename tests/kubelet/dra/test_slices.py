"""The fleet publishes the node config's devices as ResourceSlices, as a DRA kubelet plugin does through
k8s.io/dynamic-resource-allocation/resourceslice (v1.37): one slice per (node, driver), generateName
``<node>-<driver>-``, pool = node name with generation and resourceSliceCount 1, owned by the Node."""

from __future__ import annotations

from typing import Any

from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import FleetOptions
from tests.kubelet.harness import running_fleet

GPU = {"driver": "gpu.example.com", "count": 2, "attributes": {"model": "A100"}, "capacity": {"memory": "40Gi"}}
CONFIG: dict[str, Any] = {
    "csiDrivers": [],
    "nodes": [
        {"name": "node01", "devices": [GPU, {"driver": "nic.example.com"}]},
        {"name": "node02", "devices": [{**GPU, "count": 1, "attributes": {"model": "T4"}}]},
        {"name": "plain"},
    ],
}


async def _slices(env: Any) -> list[dict[str, Any]]:
    items = (await env.client.list(env.client.resource("resourceslices")))["items"]
    return sorted(items, key=lambda s: (s["spec"]["nodeName"], s["spec"]["driver"]))


async def test_one_slice_per_node_and_driver() -> None:
    async with running_fleet(CONFIG, FleetOptions()) as env:
        slices = await _slices(env)
        assert [(s["spec"]["nodeName"], s["spec"]["driver"]) for s in slices] == [
            ("node01", "gpu.example.com"),
            ("node01", "nic.example.com"),
            ("node02", "gpu.example.com"),
        ]
        first = slices[0]
        node = await env.client.get(env.nodes, "node01")
        assert first["metadata"]["generateName"] == "node01-gpu.example.com-"
        assert first["metadata"]["name"].startswith("node01-gpu.example.com-")
        assert first["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": "node01", "uid": node["metadata"]["uid"], "controller": True}
        ]
        assert first["spec"]["pool"] == {"name": "node01", "generation": 1, "resourceSliceCount": 1}
        assert [d["name"] for d in first["spec"]["devices"]] == ["gpu-0", "gpu-1"]
        assert first["spec"]["devices"][1]["attributes"]["index"] == {"int": 1}
        assert slices[2]["spec"]["devices"][0]["attributes"]["model"] == {"string": "T4"}


async def test_added_nodes_publish_and_changed_devices_bump_the_generation() -> None:
    async with running_fleet(CONFIG, FleetOptions()) as env:
        [new] = parse_node_config([{"name": "node03", "devices": [GPU]}], csi_drivers=())
        await env.fleet.add_nodes([new])
        assert [s["spec"]["nodeName"] for s in await _slices(env)].count("node03") == 1
        # The node01 config changes (one GPU fewer, no NIC): the slice is updated in place, the NIC's goes.
        [changed] = parse_node_config([{"name": "node01", "devices": [{**GPU, "count": 1}]}], csi_drivers=())
        before = {s["spec"]["driver"]: s for s in await _slices(env) if s["spec"]["nodeName"] == "node01"}
        await env.fleet.dra_slices.sync([changed], env.fleet._dra_drivers())
        after = {s["spec"]["driver"]: s for s in await _slices(env) if s["spec"]["nodeName"] == "node01"}
        assert list(after) == ["gpu.example.com"]
        gpu = after["gpu.example.com"]
        assert gpu["metadata"]["name"] == before["gpu.example.com"]["metadata"]["name"]
        assert gpu["spec"]["pool"]["generation"] == 2
        assert [d["name"] for d in gpu["spec"]["devices"]] == ["gpu-0"]


async def test_restart_keeps_existing_slices() -> None:
    """A second sync of the same config (a restarted fleet) changes nothing."""
    async with running_fleet(CONFIG, FleetOptions()) as env:
        before = await _slices(env)
        await env.fleet.dra_slices.sync([s.spec for s in env.fleet.nodes.values()], env.fleet._dra_drivers())
        after = await _slices(env)
        assert [s["metadata"]["resourceVersion"] for s in after] == [s["metadata"]["resourceVersion"] for s in before]


PARTITIONED = {
    "driver": "gpu.example.com",
    "count": 2,
    "namePattern": "gpu-0-half-{index}",
    "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": "20Gi"}}],
    "sharedCounters": [{"name": "gpu-0", "counters": {"memory": "40Gi"}}],
}


async def test_counter_sets_go_in_their_own_slice_of_the_pool() -> None:
    """Partitionable devices (DRAPartitionableDevices, on in v1.37): sharedCounters and devices cannot share a
    slice (upstream validateResourceSliceSpec: "only one of `sharedCounters` or `devices` is allowed"), so the pool
    has two slices, both created through the API's validation, with resourceSliceCount 2 and one generation; a
    change rewrites both at the next generation (upstream's pool generation is per pool, not per slice)."""
    config = {"csiDrivers": [], "nodes": [{"name": "node01", "devices": [PARTITIONED]}]}
    async with running_fleet(config, FleetOptions()) as env:
        slices = await _slices(env)
        assert len(slices) == 2
        by_kind = {("sharedCounters" if "sharedCounters" in s["spec"] else "devices"): s for s in slices}
        assert by_kind["sharedCounters"]["spec"]["sharedCounters"] == [
            {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}
        ]
        assert "devices" not in by_kind["sharedCounters"]["spec"]
        assert [d["name"] for d in by_kind["devices"]["spec"]["devices"]] == ["gpu-0-half-0", "gpu-0-half-1"]
        assert {(s["spec"]["pool"]["generation"], s["spec"]["pool"]["resourceSliceCount"]) for s in slices} == {(1, 2)}

        # the same config again (a restart) writes nothing; a changed counter set rewrites both slices
        await env.fleet.dra_slices.sync([s.spec for s in env.fleet.nodes.values()], env.fleet._dra_drivers())
        assert [s["metadata"]["resourceVersion"] for s in await _slices(env)] == [
            s["metadata"]["resourceVersion"] for s in slices
        ]
        bigger = {**PARTITIONED, "sharedCounters": [{"name": "gpu-0", "counters": {"memory": "80Gi"}}]}
        [changed] = parse_node_config([{"name": "node01", "devices": [bigger]}], csi_drivers=())
        await env.fleet.dra_slices.sync([changed], env.fleet._dra_drivers())
        after = await _slices(env)
        assert sorted(s["metadata"]["name"] for s in after) == sorted(s["metadata"]["name"] for s in slices)
        assert {s["spec"]["pool"]["generation"] for s in after} == {2}

        # without counters the pool is one slice again: the counters' slice is deleted
        [plain] = parse_node_config([{"name": "node01", "devices": [GPU]}], csi_drivers=())
        await env.fleet.dra_slices.sync([plain], env.fleet._dra_drivers())
        (only,) = await _slices(env)
        assert only["spec"]["pool"] == {"name": "node01", "generation": 3, "resourceSliceCount": 1}
        assert "sharedCounters" not in only["spec"]
