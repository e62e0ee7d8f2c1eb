"""The storage kinds through the in-process API server: strategies, defaults and the storage admission plugins.

Pins: pkg/registry/core/persistentvolume/strategy.go (PrepareForCreate: status Pending with
lastPhaseTransitionTime; the status strategy's transition-time rules; strategy_test.go
TestStatusUpdate/lastPhaseTransitionTime cases), pkg/registry/core/persistentvolumeclaim/strategy.go,
pkg/registry/storage/volumeattachment/strategy.go (status reset on create, spec kept on /status),
pkg/registry/storage/csidriver/strategy.go (generation), plugin/pkg/admission/storage/storageclass/setdefault
(admission_test.go TestAdmission: "no default", "one default", "two defaults: newest wins", "class given",
"empty class"), plugin/pkg/admission/storage/storageobjectinuseprotection (TestAdmit: finalizer added once),
plugin/pkg/admission/storage/persistentvolume/resize (TestPVCResizeAdmission: messages).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.apiserver import admission_storage
from kubeplane.apiserver.errors import APIError
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ForbiddenError, InvalidError
from kubeplane.client.local import LocalClient

Obj = dict[str, Any]
T0 = 1_800_000_000.0


@pytest.fixture
async def env() -> AsyncIterator[tuple[LocalClient, FakeClock]]:
    clock = FakeClock(T0)
    client = await LocalClient.in_memory(clock=clock, now=clock.now)
    yield client, clock
    await client.close()


def pv(name: str = "pv1", **spec: Any) -> Obj:
    base = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "hostPath": {"path": "/tmp/x"}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": {**base, **spec}}


def pvc(name: str = "c1", *, annotations: dict[str, str] | None = None, **spec: Any) -> Obj:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    meta: Obj = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": {**base, **spec}}


def storage_class(name: str, *, default: bool = False, **more: Any) -> Obj:
    meta: Obj = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta, "provisioner": "p.io", **more}


async def test_pv_create_sets_pending_and_phase_transition_time(env: tuple[LocalClient, FakeClock]) -> None:
    """PrepareForCreate: a sent status is dropped; phase Pending with lastPhaseTransitionTime now; no
    metadata.generation (the PV strategy sets none)."""
    client, _ = env
    created = await client.create(client.resource("persistentvolumes"), {**pv(), "status": {"phase": "Bound"}})
    assert created["status"] == {"phase": "Pending", "lastPhaseTransitionTime": apimeta.format_time(T0)}
    assert "generation" not in created["metadata"]
    assert created["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]


async def test_pv_status_phase_transition_time(env: tuple[LocalClient, FakeClock]) -> None:
    """persistentvolumeStatusStrategy.PrepareForUpdate: a phase change stamps now unless the writer set a new
    time; no phase change keeps the old time when none is sent."""
    client, clock = env
    res = client.resource("persistentvolumes")
    created = await client.create(res, pv())
    await clock.advance(60)
    created["status"] = {"phase": "Available"}
    available = await client.update(res, created, subresource="status")
    assert available["status"]["lastPhaseTransitionTime"] == apimeta.format_time(T0 + 60)
    await clock.advance(60)
    available["status"] = {"phase": "Available", "message": "same phase"}
    same = await client.update(res, available, subresource="status")
    assert same["status"]["lastPhaseTransitionTime"] == apimeta.format_time(T0 + 60)
    chosen = "2020-01-01T00:00:00Z"
    same["status"] = {"phase": "Released", "lastPhaseTransitionTime": chosen}
    released = await client.update(res, same, subresource="status")
    assert released["status"]["lastPhaseTransitionTime"] == chosen
    released["spec"]["capacity"] = {"storage": "5Gi"}  # the status subresource keeps the stored spec
    kept = await client.update(res, released, subresource="status")
    assert kept["spec"]["capacity"] == {"storage": "1Gi"}


async def test_pvc_main_resource_keeps_status(env: tuple[LocalClient, FakeClock]) -> None:
    client, _ = env
    res = client.resource("persistentvolumeclaims")
    created = await client.create(res, {**pvc(), "status": {"phase": "Bound"}}, namespace="default")
    assert created["status"] == {"phase": "Pending"}
    assert "generation" not in created["metadata"]
    created["status"] = {"phase": "Lost"}
    created["metadata"]["labels"] = {"a": "b"}
    updated = await client.update(res, created, namespace="default")
    assert updated["status"] == {"phase": "Pending"}


async def test_default_storage_class_newest_wins(env: tuple[LocalClient, FakeClock]) -> None:
    """setdefault: among two default classes the newer one; a class given (even "") or the beta annotation is
    left alone."""
    client, clock = env
    classes, claims = client.resource("storageclasses"), client.resource("persistentvolumeclaims")
    await client.create(classes, storage_class("old", default=True))
    await client.create(classes, storage_class("plain"))
    await clock.advance(10)
    await client.create(classes, storage_class("new", default=True))
    got = await client.create(claims, pvc("a"), namespace="default")
    assert got["spec"]["storageClassName"] == "new"
    got = await client.create(claims, pvc("b", storageClassName=""), namespace="default")
    assert got["spec"]["storageClassName"] == ""
    beta = {"volume.beta.kubernetes.io/storage-class": "plain"}
    got = await client.create(claims, pvc("c", annotations=beta), namespace="default")
    assert "storageClassName" not in got["spec"]
    assert got["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]


async def test_default_storage_class_ties_go_to_the_smaller_name(env: tuple[LocalClient, FakeClock]) -> None:
    client, _ = env
    for name in ("zeta", "alpha"):
        await client.create(client.resource("storageclasses"), storage_class(name, default=True))
    got = await client.create(client.resource("persistentvolumeclaims"), pvc(), namespace="default")
    assert got["spec"]["storageClassName"] == "alpha"


async def test_no_default_class_leaves_claim_without_class(env: tuple[LocalClient, FakeClock]) -> None:
    client, _ = env
    got = await client.create(client.resource("persistentvolumeclaims"), pvc(), namespace="default")
    assert "storageClassName" not in got["spec"]


async def test_protection_finalizer_added_once(env: tuple[LocalClient, FakeClock]) -> None:
    client, _ = env
    body = pvc()
    body["metadata"]["finalizers"] = ["kubernetes.io/pvc-protection", "x.io/keep"]
    got = await client.create(client.resource("persistentvolumeclaims"), body, namespace="default")
    assert got["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection", "x.io/keep"]


def _request(size: str) -> Obj:
    return {"spec": {"resources": {"requests": {"storage": size}}}, "status": {"phase": "Pending"}}


async def _bound_claim(client: LocalClient, class_name: str) -> Obj:
    res = client.resource("persistentvolumeclaims")
    created = await client.create(res, pvc(storageClassName=class_name), namespace="default")
    created["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    return await client.update(res, created, namespace="default", subresource="status")


async def test_resize_admission(env: tuple[LocalClient, FakeClock]) -> None:
    """PersistentVolumeClaimResize: a pending claim cannot grow; a bound one only if its class allows expansion;
    shrinking is left to validation; nothing is written on a refusal."""
    client, _ = env
    res = client.resource("persistentvolumeclaims")
    await client.create(client.resource("storageclasses"), storage_class("fixed"))
    await client.create(client.resource("storageclasses"), storage_class("grows", allowVolumeExpansion=True))
    pending = await client.create(res, pvc("pending", storageClassName="grows"), namespace="default")
    pending["spec"]["resources"]["requests"]["storage"] = "2Gi"
    with pytest.raises(InvalidError):  # the strategy's validation (spec immutable unless bound) runs first
        await client.update(res, pending, namespace="default")
    grown = copy.deepcopy(pending)
    with pytest.raises(APIError) as refused:  # the plugin alone, as admission_test.go calls it
        admission_storage.validate_update(cast(Any, None), res, grown, pending | _request("1Gi"), None)
    assert refused.value.status["message"] == (
        'persistentvolumeclaims "pending" is forbidden: Only bound persistent volume claims can be expanded'
    )
    fixed = await _bound_claim(client, "fixed")
    fixed["spec"]["resources"]["requests"]["storage"] = "2Gi"
    with pytest.raises(ForbiddenError) as info:
        await client.update(res, fixed, namespace="default")
    assert info.value.status["message"] == (
        'persistentvolumeclaims "c1" is forbidden: only dynamically provisioned pvc can be resized and the '
        "storageclass that provisions the pvc must support resize"
    )
    stored = await client.get(res, "c1", namespace="default")
    assert stored["spec"]["resources"]["requests"]["storage"] == "1Gi"
    await client.delete(res, "c1", namespace="default")


async def test_resize_allowed_by_class(env: tuple[LocalClient, FakeClock]) -> None:
    client, _ = env
    res = client.resource("persistentvolumeclaims")
    await client.create(client.resource("storageclasses"), storage_class("grows", allowVolumeExpansion=True))
    claim = await _bound_claim(client, "grows")
    claim["spec"]["resources"]["requests"]["storage"] = "2Gi"
    grown = await client.update(res, claim, namespace="default")
    assert grown["spec"]["resources"]["requests"]["storage"] == "2Gi"
    grown["spec"]["resources"]["requests"]["storage"] = "500Mi"  # below status.capacity: validation's 422
    with pytest.raises(InvalidError):
        await client.update(res, grown, namespace="default")


async def test_volume_attachment_status_split(env: tuple[LocalClient, FakeClock]) -> None:
    """volumeAttachmentStrategy: a created attachment has the zero status ({attached: false}); the main
    resource keeps the status; /status keeps the spec; no generation."""
    client, _ = env
    res = client.resource("volumeattachments")
    body = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "va"},
        "spec": {"attacher": "csi.kubeplane.io", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}},
        "status": {"attached": True},
    }
    created = await client.create(res, body)
    assert created["status"] == {"attached": False}
    assert "generation" not in created["metadata"]
    created["status"] = {"attached": True, "attachmentMetadata": {"k": "v"}}
    attached = await client.update(res, created, subresource="status")
    assert attached["status"] == {"attached": True, "attachmentMetadata": {"k": "v"}}
    attached["status"] = {"attached": False}
    same = await client.update(res, attached)
    assert same["status"]["attached"] is True


async def test_csi_driver_generation_and_defaults(env: tuple[LocalClient, FakeClock]) -> None:
    """csiDriverStrategy: generation 1, then +1 on a spec change only; SetDefaults_CSIDriver's values."""
    client, _ = env
    res = client.resource("csidrivers")
    body = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.io"}, "spec": {}}
    created = await client.create(res, body)
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "volumeLifecycleModes": ["Persistent"],
        "requiresRepublish": False,
        "seLinuxMount": False,
    }
    created["metadata"]["labels"] = {"a": "b"}
    relabelled = await client.update(res, created)
    assert relabelled["metadata"]["generation"] == 1
    relabelled["spec"]["podInfoOnMount"] = True
    changed = await client.update(res, relabelled)
    assert changed["metadata"]["generation"] == 2
    changed["spec"]["attachRequired"] = False
    with pytest.raises(InvalidError) as info:
        await client.update(res, changed)
    assert info.value.status["message"] == (
        'CSIDriver.storage.k8s.io "d.io" is invalid: spec.attachedRequired: Invalid value: false: field is immutable'
    )
