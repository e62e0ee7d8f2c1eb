"""The PVC protection controller over the in-memory API server (upstream
pkg/controller/volume/pvcprotection/pvc_protection_controller_test.go TestPVCProtectionController: the cases named
in each test's docstring), with the StorageObjectInUseProtection admission adding the finalizer on create."""

from __future__ import annotations

from typing import Any

from kubeplane.client.cache import Indexer
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.pvc_protection import (
    PVC_PROTECTION_FINALIZER,
    PVCProtectionController,
    pod_pvc_keys,
    pod_uses_pvc,
)
from tests.controllers import harness
from tests.controllers.harness import eventually, pod_obj, settle

NS = "default"
Env = harness.Env[PVCProtectionController]


def claim(name: str = "pvc1") -> Obj:
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def pod_with(name: str, claim_name: str, *, node: str = "node1") -> Obj:
    pod = pod_obj(name, node=node)
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
    return pod


async def _claim_state(env: Env, name: str = "pvc1") -> Obj | None:
    try:
        return await env.client.get(env.res("persistentvolumeclaims"), name, namespace=NS)
    except NotFoundError:
        return None


async def _gone(env: Env, name: str = "pvc1") -> bool:
    return await _claim_state(env, name) is None


async def test_unused_deleted_pvc_loses_finalizer_and_goes() -> None:
    """ "deleted PVC with finalizer + no pods -> finalizer is removed"."""
    async with harness.running(PVCProtectionController) as env:
        created = await env.client.create(env.res("persistentvolumeclaims"), claim(), namespace=NS)
        assert created["metadata"]["finalizers"] == [PVC_PROTECTION_FINALIZER]
        await env.client.delete(env.res("persistentvolumeclaims"), "pvc1", namespace=NS)
        await eventually(lambda: _gone(env), "the claim deleted")


async def test_claim_used_by_scheduled_pod_is_kept_until_the_pod_goes() -> None:
    """ "deleted PVC with finalizer + pod with the PVC exists -> finalizer is not removed", then "pod using PVC
    is deleted -> finalizer is removed" (a pod deletion queues its claims)."""
    async with harness.running(PVCProtectionController) as env:
        await env.client.create(env.res("persistentvolumeclaims"), claim(), namespace=NS)
        await env.client.create(env.res("pods"), pod_with("user", "pvc1"), namespace=NS)
        await env.client.delete(env.res("persistentvolumeclaims"), "pvc1", namespace=NS)
        await settle(200)
        kept = await _claim_state(env)
        assert kept is not None
        assert kept["metadata"]["deletionTimestamp"]
        assert kept["metadata"]["finalizers"] == [PVC_PROTECTION_FINALIZER]
        await env.client.delete(env.res("pods"), "user", namespace=NS, grace_period_seconds=0)
        await eventually(lambda: _gone(env), "the claim deleted once its pod went")


async def test_finished_pod_still_holds_the_claim() -> None:
    """ "deleted PVC with finalizer + pod with the PVC finished but is not deleted -> finalizer is not removed":
    podUsesPVC looks at nodeName only, not the phase."""
    async with harness.running(PVCProtectionController) as env:
        await env.client.create(env.res("persistentvolumeclaims"), claim(), namespace=NS)
        pod = await env.client.create(env.res("pods"), pod_with("done", "pvc1"), namespace=NS)
        pod["status"] = {**pod["status"], "phase": "Succeeded"}
        await env.client.update(env.res("pods"), pod, namespace=NS, subresource="status")
        await env.client.delete(env.res("persistentvolumeclaims"), "pvc1", namespace=NS)
        await settle(200)
        assert await _claim_state(env) is not None


async def test_unscheduled_pod_or_other_claim_does_not_hold() -> None:
    """ "deleted PVC with finalizer + pod with the PVC and is not scheduled -> finalizer is removed" and "pod
    uses another PVC -> finalizer is removed"."""
    async with harness.running(PVCProtectionController) as env:
        await env.client.create(env.res("persistentvolumeclaims"), claim(), namespace=NS)
        await env.client.create(env.res("pods"), pod_with("pending", "pvc1", node=""), namespace=NS)
        await env.client.create(env.res("pods"), pod_with("other", "pvc2"), namespace=NS)
        await env.client.delete(env.res("persistentvolumeclaims"), "pvc1", namespace=NS)
        await eventually(lambda: _gone(env), "the claim deleted")


async def test_missing_finalizer_is_added() -> None:
    """ "PVC without finalizer -> finalizer is added" (claims created before the admission plugin ran)."""
    async with harness.running(PVCProtectionController) as env:
        res = env.res("persistentvolumeclaims")
        created = await env.client.create(res, claim(), namespace=NS)
        created["metadata"]["finalizers"] = []
        await env.client.update(res, created, namespace=NS)

        async def has_finalizer() -> bool:
            state = await _claim_state(env)
            return state is not None and state["metadata"].get("finalizers") == [PVC_PROTECTION_FINALIZER]

        await eventually(has_finalizer, "the finalizer added back")


async def test_live_list_finds_a_pod_the_cache_has_not_seen() -> None:
    """isBeingUsed: no user in the informer's index is not enough; the live list of the namespace's pods decides
    (here the index is emptied, as if the pod's event had not arrived)."""
    async with harness.running(PVCProtectionController, run=False) as env:
        await env.client.create(env.res("persistentvolumeclaims"), claim(), namespace=NS)
        await env.client.create(env.res("pods"), pod_with("user", "pvc1"), namespace=NS)
        await env.client.delete(env.res("persistentvolumeclaims"), "pvc1", namespace=NS)
        await eventually(lambda: _deleting_in_cache(env), "the informer to see the deletion")
        env.controller.pod_indexer = Indexer(indexers={"pod-pvc-index": pod_pvc_keys})
        await env.controller.sync(f"{NS}/pvc1")
        assert await _claim_state(env) is not None
        await env.client.delete(env.res("pods"), "user", namespace=NS, grace_period_seconds=0)
        await env.controller.sync(f"{NS}/pvc1")
        assert await _gone(env)


async def _deleting_in_cache(env: Env) -> bool:
    cached = env.controller.pvc_lister.get(NS, "pvc1")
    return cached is not None and bool(cached["metadata"].get("deletionTimestamp"))


def test_pod_uses_pvc_ephemeral_rules() -> None:
    """podUsesPVC: an ephemeral volume's claim is <pod>-<volume> and must be controlled by the pod; a shut-down
    pod (deleted with grace 0) no longer uses it; an unscheduled pod uses nothing. (``ephemeral.VolumeIsForPod``
    also wants the claim in the pod's namespace, as an informer's claim always is.)"""
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": NS, "uid": "u1"},
        "spec": {"nodeName": "n", "volumes": [{"name": "scratch", "ephemeral": {}}]},
    }
    owned = {"metadata": {"name": "p-scratch", "namespace": NS, "ownerReferences": [{"uid": "u1", "controller": True}]}}
    stranger = {"metadata": {**owned["metadata"], "ownerReferences": [{"uid": "u2", "controller": True}]}}
    assert pod_pvc_keys(pod) == [f"{NS}/p-scratch"]
    assert pod_uses_pvc(pod, owned)
    assert not pod_uses_pvc(pod, stranger)
    shut_down = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "t", "deletionGracePeriodSeconds": 0}}
    assert not pod_uses_pvc(shut_down, owned)
    assert not pod_uses_pvc({**pod, "spec": {**pod["spec"], "nodeName": ""}}, owned)
