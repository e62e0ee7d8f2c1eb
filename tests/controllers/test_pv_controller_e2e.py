"""The PV controller running (workers, resync on the fake clock) over the in-memory API server: objects change
through the API only, as kubectl, the scheduler and the CSI driver change them. Each test names the upstream
behaviour it pins (pv_controller.go / pv_controller_base.go; e2e: test/e2e/storage/persistent_volumes.go)."""

from __future__ import annotations

import contextlib
from typing import Any

from kubeplane.client.errors import NotFoundError
from kubeplane.controllers.manager import available_controllers
from kubeplane.controllers.pv_controller import PersistentVolumeController
from tests.controllers import harness
from tests.controllers.harness import Env, eventually
from tests.controllers.pvenv import (
    ANN_BOUND,
    ANN_COMPLETED,
    NS,
    events,
    get_claim,
    get_volume,
    new_claim,
    new_volume,
    storage_class,
)

NODE_KEY = "topology.csi.kubeplane.io/node"


def _node_affinity(node: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": NODE_KEY, "operator": "In", "values": [node]}]}
    return {"required": {"nodeSelectorTerms": [term]}}


async def _create(env: Env[Any], obj: dict[str, Any]) -> dict[str, Any]:
    return await env.client.create(env.res(obj["kind"]), obj, namespace=obj["metadata"].get("namespace"))


async def _delete_for_good(env: Env[Any], plural: str, name: str, namespace: str | None = None) -> None:
    """Delete and drop the protection finalizers (kubernetes.io/pvc-protection, pv-protection, added by the
    StorageObjectInUseProtection admission), as the protection controllers would: this harness runs only the
    binder, and upstream's binder sees a claim or volume with a finalizer as still there."""
    await env.client.delete(env.res(plural), name, namespace=namespace)
    with contextlib.suppress(NotFoundError):
        await env.client.patch(env.res(plural), name, {"metadata": {"finalizers": None}}, namespace=namespace)


async def _phase(env: Env[Any], kind: str, name: str) -> str:
    try:
        got = await (get_volume(env, name) if kind == "pv" else get_claim(env, name))
    except NotFoundError:
        return "<gone>"
    return str(got.get("status", {}).get("phase"))


def test_registered_under_upstream_name() -> None:
    """kube-controller-manager's --controllers name: persistentvolume-binder."""
    assert available_controllers()["persistentvolume-binder"] is PersistentVolumeController


async def test_static_pv_and_pvc_bind() -> None:
    """syncUnboundClaim + bind: an Available static PV and a claim for it end Bound both ways, with upstream's
    annotations and the claim's status capacity/access modes from the volume."""
    async with harness.running(PersistentVolumeController) as env:
        await _create(env, {**new_volume("pv1", "5Gi"), "status": {}})
        await _create(env, {**new_claim("c1", "2Gi"), "status": {}})
        await env.advance_until(lambda: _bound(env, "c1"), "claim bound", step=1.0)
        volume, claim = await get_volume(env, "pv1"), await get_claim(env, "c1")
        assert volume["status"]["phase"] == "Bound"
        assert volume["spec"]["claimRef"]["name"] == "c1"
        assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        assert volume["metadata"]["annotations"][ANN_BOUND] == "yes"
        assert claim["spec"]["volumeName"] == "pv1"
        assert claim["metadata"]["annotations"] == {ANN_BOUND: "yes", ANN_COMPLETED: "yes"}
        assert claim["status"]["capacity"] == {"storage": "5Gi"}
        assert claim["status"]["accessModes"] == ["ReadWriteOnce", "ReadOnlyMany"]


async def _bound(env: Env[Any], claim: str) -> bool:
    return await _phase(env, "pvc", claim) == "Bound"


async def test_wait_for_first_consumer_then_bind_after_scheduler_prebinds() -> None:
    """WaitForFirstConsumer: the controller does not bind (FindMatchingVolume delayBinding skips unbound PVs) and
    reports WaitForFirstConsumer; once the scheduler's PreBind has set selected-node and pre-bound the PV that
    matches the node's affinity (bindAPIUpdate: claimRef + bound-by-controller), the controller completes it."""
    async with harness.running(PersistentVolumeController) as env:
        await _create(env, storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"))
        for node in ("node01", "node02"):
            await _create(
                env, {**new_volume(f"pv-{node}", "1Gi", cls="local", nodeAffinity=_node_affinity(node)), "status": {}}
            )
        await _create(env, {**new_claim("data", "1Gi", cls="local"), "status": {}})
        await eventually(lambda: _has_event(env, "WaitForFirstConsumer"), "WaitForFirstConsumer event")
        assert (
            "Normal",
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
        ) in await events(env)
        await env.clock.advance(30)  # two resyncs: still unbound
        assert await _phase(env, "pvc", "data") == "Pending"
        assert (await get_volume(env, "pv-node02"))["spec"].get("claimRef") is None
        # The scheduler's PreBind for a pod placed on node02.
        claim = await get_claim(env, "data")
        claim["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "node02"}
        claim = await env.client.update(env.res("persistentvolumeclaims"), claim, namespace=NS)
        volume = await get_volume(env, "pv-node02")
        volume["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": NS,
            "name": "data",
            "uid": claim["metadata"]["uid"],
        }
        volume["metadata"]["annotations"] = {ANN_BOUND: "yes"}
        await env.client.update(env.res("persistentvolumes"), volume)
        await env.advance_until(lambda: _bound(env, "data"), "claim bound", step=1.0)
        assert (await get_claim(env, "data"))["spec"]["volumeName"] == "pv-node02"
        assert await _phase(env, "pv", "pv-node02") == "Bound"
        assert await _phase(env, "pv", "pv-node01") == "Available"


async def _has_event(env: Env[PersistentVolumeController], reason: str) -> bool:
    return any(r == reason for _, r, _ in await events(env))


async def test_claim_for_provisioner_class_gets_annotations_and_event_then_binds_provisioned_pv() -> None:
    """provisionClaimOperationExternal: both storage-provisioner annotations and ExternalProvisioning with
    upstream's message; the PV the external provisioner then creates (claimRef to the claim, provisioned-by) is
    bound by the next claim sync (syncVolume queues the claim)."""
    async with harness.running(PersistentVolumeController) as env:
        await _create(env, storage_class("standard", "csi.kubeplane.io"))
        created = await _create(env, {**new_claim("vol", "1Gi", cls="standard"), "status": {}})

        async def annotated() -> bool:
            anns = (await get_claim(env, "vol"))["metadata"].get("annotations") or {}
            return anns.get("volume.kubernetes.io/storage-provisioner") == "csi.kubeplane.io"

        await eventually(annotated, "provisioner annotation")
        anns = (await get_claim(env, "vol"))["metadata"]["annotations"]
        assert anns["volume.beta.kubernetes.io/storage-provisioner"] == "csi.kubeplane.io"
        await eventually(lambda: _has_event(env, "ExternalProvisioning"), "ExternalProvisioning event")
        message = next(m for _, r, m in await events(env) if r == "ExternalProvisioning")
        assert message == (
            "Waiting for a volume to be created either by the external provisioner 'csi.kubeplane.io' or manually "
            "by the system administrator. If volume creation is delayed, please verify that the provisioner is "
            "running and correctly registered."
        )
        # The external provisioner's part.
        pv = new_volume(
            "pvc-" + created["metadata"]["uid"],
            "1Gi",
            created["metadata"]["uid"],
            "vol",
            "Pending",
            "Delete",
            cls="standard",
            csi={"driver": "csi.kubeplane.io", "volumeHandle": "h1"},
        )
        pv["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": "csi.kubeplane.io"}
        await _create(env, {**pv, "status": {}})
        await env.advance_until(lambda: _bound(env, "vol"), "claim bound to the provisioned PV", step=1.0)
        assert (await get_claim(env, "vol"))["spec"]["volumeName"] == pv["metadata"]["name"]


async def test_claim_deleted_retain_released_delete_left_to_provisioner() -> None:
    """syncVolume/reclaimVolume: claims deleted -> their PVs Released; Retain keeps the PV; Delete of an
    externally provisioned CSI PV is left to the provisioner (the PV stays, no failure event)."""
    async with harness.running(PersistentVolumeController) as env:
        await _create(env, {**new_volume("keep", "1Gi"), "status": {}})
        await _create(env, {**new_claim("c-keep", "1Gi"), "status": {}})
        await _create(env, storage_class("standard", "csi.kubeplane.io"))
        claim = await _create(env, {**new_claim("c-del", "1Gi", cls="standard"), "status": {}})
        pv = new_volume(
            "pv-del",
            "1Gi",
            claim["metadata"]["uid"],
            "c-del",
            "Pending",
            "Delete",
            cls="standard",
            csi={"driver": "csi.kubeplane.io", "volumeHandle": "h"},
        )
        pv["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": "csi.kubeplane.io"}
        await _create(env, {**pv, "status": {}})
        await env.advance_until(lambda: _bound(env, "c-keep"), "c-keep bound", step=1.0)
        await env.advance_until(lambda: _bound(env, "c-del"), "c-del bound", step=1.0)
        for name in ("c-keep", "c-del"):
            await _delete_for_good(env, "persistentvolumeclaims", name, NS)

        async def released() -> bool:
            return await _phase(env, "pv", "keep") == "Released" and await _phase(env, "pv", "pv-del") == "Released"

        await env.advance_until(released, "both released", step=1.0)
        await env.clock.advance(30)
        await env.controller.operations.wait_idle()
        assert await _phase(env, "pv", "keep") == "Released"
        assert await _phase(env, "pv", "pv-del") == "Released"
        assert not [r for _, r, _ in await events(env) if r in ("VolumeFailedDelete", "VolumeFailedRecycle")]


async def test_bound_claim_loses_volume() -> None:
    """deleteVolume queues the claim: a bound claim whose PV is deleted becomes Lost with ClaimLost at once."""
    async with harness.running(PersistentVolumeController) as env:
        await _create(env, {**new_volume("pv1", "1Gi"), "status": {}})
        await _create(env, {**new_claim("c1", "1Gi"), "status": {}})
        await env.advance_until(lambda: _bound(env, "c1"), "bound", step=1.0)
        await _delete_for_good(env, "persistentvolumes", "pv1")
        await env.advance_until(lambda: _lost(env, "c1"), "claim lost", step=1.0)
        assert (
            "Warning",
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        ) in await events(env)


async def _lost(env: Env[Any], claim: str) -> bool:
    return await _phase(env, "pvc", claim) == "Lost"
