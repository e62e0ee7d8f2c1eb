"""The simulated CSI driver run by the fleet: publishing, provisioning, rescheduling, deleting, restarting.

Pins kubernetes-csi/external-provisioner (pkg/controller/controller.go Provision, pkg/capacity/capacity.go
syncCapacity) and sig-storage-lib-external-provisioner (controller/controller.go shouldProvision,
provisionClaimOperation, provisionVolumeErrorHandling + rescheduleProvisioning, shouldDelete,
deleteVolumeOperation; volume_store.go's ProvisioningSucceeded event), and kubelet's nodeinfomanager (CSINode).
"""

from __future__ import annotations

import contextlib

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.csi.config import NODE_TOPOLOGY_KEY

from .harness import DRIVER, CSIEnv, config, csi_fleet

GI = 2**30


async def test_publishes_csidriver_csinodes_labels_and_capacity() -> None:
    async with csi_fleet(config(maxVolumesPerNode=5)) as env:
        driver = await env.get("csidrivers", DRIVER)
        assert driver is not None
        assert {k: driver["spec"][k] for k in ("attachRequired", "podInfoOnMount", "storageCapacity")} == {
            "attachRequired": False,
            "podInfoOnMount": False,
            "storageCapacity": True,
        }
        assert driver["spec"]["volumeLifecycleModes"] == ["Persistent"]
        for name in ("n1", "n2"):
            csinode = await env.get("csinodes", name)
            node = await env.get("nodes", name)
            assert csinode is not None
            assert node is not None
            assert csinode["spec"]["drivers"] == [
                {"name": DRIVER, "nodeID": name, "topologyKeys": [NODE_TOPOLOGY_KEY], "allocatable": {"count": 5}}
            ]
            assert csinode["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
            assert node["metadata"]["labels"][NODE_TOPOLOGY_KEY] == name
        assert await env.capacities() == {}  # no class of the driver yet
        await env.create_class("local")

        async def published() -> bool:
            return await env.capacities() == {("local", "n1"): "10Gi", ("local", "n2"): "10Gi"}

        await env.until(published, "a CSIStorageCapacity per (class, node)")
        obj = (await env.items("csistoragecapacities", "kube-system"))[0]
        assert obj["metadata"]["generateName"] == "csisc-"
        assert obj["maximumVolumeSize"] == "10Gi"


async def test_unlimited_driver_publishes_no_capacity() -> None:
    async with csi_fleet(config(capacity=None)) as env:
        driver = await env.get("csidrivers", DRIVER)
        assert driver is not None
        assert driver["spec"]["storageCapacity"] is False
        assert "allocatable" not in (await env.get("csinodes", "n1") or {})["spec"]["drivers"][0]
        await env.create_class("local")
        claim = await env.create_claim("data", "1Ti", node="n2")
        await env.until(lambda: _exists(env, f"pvc-{claim['metadata']['uid']}"), "the PV")
        assert await env.capacities() == {}
        assert env.fleet.csi.stats()[DRIVER].total_bytes is None


async def _exists(env: CSIEnv, pv: str) -> bool:
    return await env.get("persistentvolumes", pv) is not None


async def test_provisions_on_the_selected_node_and_capacity_follows() -> None:
    async with csi_fleet(config(provisionTime="5s")) as env:
        await env.create_class("local", mountOptions=["noatime"], parameters={"csi.storage.k8s.io/fstype": "xfs"})
        claim = await env.create_claim("data", "4Gi", node="n1")
        uid = claim["metadata"]["uid"]
        pv_name = f"pvc-{uid}"
        # capacity is reserved while CreateVolume runs (provisionTime on the injected clock)
        await env.until(lambda: _capacity_is(env, "n1", "6Gi"), "capacity reserved on n1")
        assert await env.get("persistentvolumes", pv_name) is None
        await env.until(lambda: _exists(env, pv_name), "the PV after provisionTime", step=1.0)
        pv = await env.get("persistentvolumes", pv_name)
        assert pv is not None
        assert pv["metadata"]["annotations"] == {
            "pv.kubernetes.io/provisioned-by": DRIVER,
            "volume.kubernetes.io/provisioner-deletion-secret-name": "",
            "volume.kubernetes.io/provisioner-deletion-secret-namespace": "",
        }
        assert pv["metadata"]["finalizers"] == [
            "external-provisioner.volume.kubernetes.io/finalizer",
            "kubernetes.io/pv-protection",  # StorageObjectInUseProtection admission
        ]
        spec = pv["spec"]
        assert spec["capacity"] == {"storage": "4Gi"}
        assert spec["accessModes"] == ["ReadWriteOnce"]
        assert spec["storageClassName"] == "local"
        assert spec["persistentVolumeReclaimPolicy"] == "Delete"
        assert spec["mountOptions"] == ["noatime"]
        assert spec["csi"]["driver"] == DRIVER
        assert spec["csi"]["fsType"] == "xfs"
        assert spec["csi"]["volumeHandle"]
        assert spec["csi"]["volumeAttributes"]["storage.kubernetes.io/csiProvisionerIdentity"].endswith(DRIVER)
        assert spec["nodeAffinity"] == {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": NODE_TOPOLOGY_KEY, "operator": "In", "values": ["n1"]}]}
                ]
            }
        }
        ref = spec["claimRef"]
        assert (ref["kind"], ref["namespace"], ref["name"], ref["uid"]) == (
            "PersistentVolumeClaim",
            "default",
            "data",
            uid,
        )
        assert ref["resourceVersion"] == claim["metadata"]["resourceVersion"]
        stats = env.fleet.csi.stats()[DRIVER]
        assert (stats.provisioned, stats.used_bytes, stats.total_bytes) == (1, 4 * GI, 20 * GI)
        assert await env.capacities() == {("local", "n1"): "6Gi", ("local", "n2"): "10Gi"}
        assert await env.events("data") == [
            ("Normal", "Provisioning", 'External provisioner is provisioning volume for claim "default/data"'),
            ("Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}"),
        ]


async def _capacity_is(env: CSIEnv, node: str, value: str) -> bool:
    return (await env.capacities()).get(("local", node)) == value


async def test_waits_for_selected_node_on_wait_for_first_consumer() -> None:
    async with csi_fleet(config()) as env:
        await env.create_class("local")
        claim = await env.create_claim("later", "1Gi")
        await env.clock.advance(30)
        assert await env.items("persistentvolumes") == []
        patch = {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n2"}}}
        await env.client.patch(env.client.resource("persistentvolumeclaims"), "later", patch, namespace="default")
        await env.until(lambda: _exists(env, f"pvc-{claim['metadata']['uid']}"), "the PV once a node is selected")


async def test_exhausted_capacity_fails_and_asks_to_reschedule() -> None:
    async with csi_fleet(config()) as env:
        await env.create_class("local")
        await env.create_claim("big", "12Gi", node="n1")

        async def unselected() -> bool:
            claim = await env.get("persistentvolumeclaims", "big", "default")
            return claim is not None and "volume.kubernetes.io/selected-node" not in claim["metadata"]["annotations"]

        await env.until(unselected, "the selected-node annotation removed (rescheduleProvisioning)")
        events = await env.events("big")
        assert events[0][1] == "Provisioning"
        assert events[1] == (
            "Warning",
            "ProvisioningFailed",
            "rpc error: code = ResourceExhausted desc = requested capacity 12884901888 exceeds remaining capacity "
            'for "n1", 0 out of 10Gi already used',
        )
        assert await env.items("persistentvolumes") == []
        assert env.fleet.csi.stats()[DRIVER].failed == 1
        assert await env.capacities() == {("local", "n1"): "10Gi", ("local", "n2"): "10Gi"}


async def test_immediate_class_picks_a_segment_with_room_within_allowed_topologies() -> None:
    async with csi_fleet(config()) as env:
        allowed = [{"matchLabelExpressions": [{"key": NODE_TOPOLOGY_KEY, "values": ["n2"]}]}]
        await env.create_class("local", mode="Immediate", allowedTopologies=allowed)
        claim = await env.create_claim("now", "3Gi")
        pv_name = f"pvc-{claim['metadata']['uid']}"
        await env.until(lambda: _exists(env, pv_name), "the PV of an Immediate claim")
        pv = await env.get("persistentvolumes", pv_name)
        assert pv is not None
        assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["n2"]


async def test_released_delete_volume_is_deleted_and_capacity_returned() -> None:
    async with csi_fleet(config(deleteTime="10s")) as env:
        await env.create_class("local")
        claim = await env.create_claim("data", "4Gi", node="n2")
        pv_name = f"pvc-{claim['metadata']['uid']}"
        await env.until(lambda: _exists(env, pv_name), "the PV")
        await env.until(lambda: _capacity_is(env, "n2", "6Gi"), "capacity used")
        pvs = env.client.resource("persistentvolumes")
        await env.client.patch(pvs, pv_name, {"status": {"phase": "Released"}}, subresource="status")

        async def gone() -> bool:
            # the pv-protection controller (not run here) lets a Released PV go: drop its finalizer once the
            # driver has deleted the PV and removed its own
            with contextlib.suppress(NotFoundError):
                pv = await env.client.get(pvs, pv_name)
                if pv["metadata"].get("finalizers") == ["kubernetes.io/pv-protection"]:
                    await env.client.patch(pvs, pv_name, {"metadata": {"finalizers": None}})
            return not await _exists(env, pv_name)

        await env.clock.advance(5)
        assert await _exists(env, pv_name)  # deleteTime not over yet
        await env.until(gone, "the PV deleted after deleteTime", step=1.0)
        await env.until(lambda: _capacity_is(env, "n2", "10Gi"), "capacity returned")
        stats = env.fleet.csi.stats()[DRIVER]
        assert (stats.deleted, stats.used_bytes, stats.volumes) == (1, 0, 0)


async def test_retain_and_bound_volumes_are_kept() -> None:
    async with csi_fleet(config()) as env:
        await env.create_class("keep", reclaimPolicy="Retain")
        claim = await env.create_claim("data", "1Gi", cls="keep", node="n1")
        pv_name = f"pvc-{claim['metadata']['uid']}"
        await env.until(lambda: _exists(env, pv_name), "the PV")
        pvs = env.client.resource("persistentvolumes")
        await env.client.patch(pvs, pv_name, {"status": {"phase": "Released"}}, subresource="status")
        await env.clock.advance(30)
        assert await _exists(env, pv_name)
        assert env.fleet.csi.stats()[DRIVER].used_bytes == GI


async def test_restart_recovers_usage_from_existing_volumes() -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    try:
        async with csi_fleet(config(), client=client, clock=clock) as env:
            await env.create_class("local")
            claim = await env.create_claim("data", "4Gi", node="n1")
            await env.until(lambda: _exists(env, f"pvc-{claim['metadata']['uid']}"), "the PV")
            await env.until(lambda: _capacity_is(env, "n1", "6Gi"), "capacity used")
        async with csi_fleet(config(), client=client, clock=clock) as env:
            stats = env.fleet.csi.stats()[DRIVER]
            assert (stats.used_bytes, stats.volumes, stats.provisioned) == (4 * GI, 1, 0)
            await env.clock.advance(1)
            assert await env.capacities() == {("local", "n1"): "6Gi", ("local", "n2"): "10Gi"}
            # a second claim that fits only with the first counted is refused
            await env.create_claim("more", "7Gi", node="n1")
            await env.until(lambda: _failed(env, "more"), "ProvisioningFailed for the second claim")
    finally:
        await client.close()


async def _failed(env: CSIEnv, name: str) -> bool:
    return any(reason == "ProvisioningFailed" for _t, reason, _m in await env.events(name))


async def test_zonal_driver_segments_are_zones() -> None:
    data = {
        "csiDrivers": [{"name": DRIVER, "topology": "zone"}],
        "nodes": [{"count": 3, "namePattern": "n{index}", "zones": ["a", "b"], "csiCapacity": {DRIVER: "5Gi"}}],
    }
    async with csi_fleet(data) as env:
        node = await env.get("nodes", "n1")
        assert node is not None
        assert NODE_TOPOLOGY_KEY not in node["metadata"]["labels"]
        await env.create_class("local")
        await env.until(
            lambda: _capacities_are(env, {("local", "a"): "10Gi", ("local", "b"): "5Gi"}), "a capacity per zone"
        )
        claim = await env.create_claim("z", "6Gi", node="n3")  # n3 is in zone a
        await env.until(lambda: _exists(env, f"pvc-{claim['metadata']['uid']}"), "the zonal PV")
        pv = await env.get("persistentvolumes", f"pvc-{claim['metadata']['uid']}")
        assert pv is not None
        expr = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
        assert expr == {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
        await env.until(lambda: _capacities_are(env, {("local", "a"): "4Gi", ("local", "b"): "5Gi"}), "zone a used")


async def _capacities_are(env: CSIEnv, want: dict[tuple[str, str], str]) -> bool:
    return await env.capacities() == want


async def test_two_fleets_each_provision_and_publish_for_their_own_nodes() -> None:
    """external-provisioner's distributed mode (--node-deployment): each instance acts for its own nodes only."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    other = {
        "csiDrivers": [{"name": DRIVER}],
        "nodes": [{"count": 1, "namePattern": "m{index}", "csiCapacity": {DRIVER: "3Gi"}}],
    }
    try:
        async with csi_fleet(config(), client=client, clock=clock) as env, csi_fleet(other, client=client, clock=clock):
            await env.create_class("local")
            want = {("local", "n1"): "10Gi", ("local", "n2"): "10Gi", ("local", "m1"): "3Gi"}
            await env.until(lambda: _capacities_are(env, want), "one object per segment of both fleets")
            claim = await env.create_claim("on-m1", "2Gi", node="m1")
            await env.until(lambda: _exists(env, f"pvc-{claim['metadata']['uid']}"), "the PV on the other fleet")
            await env.until(lambda: _capacities_are(env, {**want, ("local", "m1"): "1Gi"}), "m1's capacity")
            await env.clock.advance(5)
            assert await env.capacities() == {**want, ("local", "m1"): "1Gi"}  # nobody deletes the other's
            assert env.fleet.csi.stats()[DRIVER].provisioned == 0
    finally:
        await client.close()


async def test_an_immediate_claim_seen_by_two_fleets_gets_one_volume() -> None:
    """volume_store.go StoreVolume: AlreadyExists is success for the loser, which returns its reservation."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    other = {
        "csiDrivers": [{"name": DRIVER}],
        "nodes": [{"count": 2, "namePattern": "m{index}", "csiCapacity": {DRIVER: "5Gi"}}],
    }
    try:
        async with (
            csi_fleet(config(), client=client, clock=clock) as env,
            csi_fleet(other, client=client, clock=clock) as env2,
        ):
            await env.create_class("now", mode="Immediate")
            claim = await env.create_claim("both", "1Gi", cls="now")
            await env.until(lambda: _exists(env, f"pvc-{claim['metadata']['uid']}"), "the PV")
            await env.clock.advance(5)
            assert len(await env.items("persistentvolumes")) == 1
            stats = [env.fleet.csi.stats()[DRIVER], env2.fleet.csi.stats()[DRIVER]]
            assert sum(s.provisioned for s in stats) == 1
            assert sum(s.used_bytes for s in stats) == GI  # the loser released its reservation
    finally:
        await client.close()
