"""The kubelet starts a pod's containers only once its claim volumes are bound and attached (upstream
``pkg/kubelet/volumemanager``: ``WaitForAttachAndMount`` in ``kubelet.go`` ``SyncPod``; the claim checks of
``pkg/volume/util`` ``PodVolumeInfos.getPVCExtractPV`` / ``getPVSpec``; ``csiPlugin.skipAttach``).

Every case runs a fleet on the fake clock over the in-process API server; there is no attach/detach controller
here, so a test creates the VolumeAttachment the controller would (named as ``getAttachmentName`` names it) and
the fleet's simulated external-attacher marks it attached.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubeplane.client.errors import NotFoundError
from kubeplane.kubelet.csi_attacher import attachment_name
from kubeplane.kubelet.fleet import FleetOptions
from kubeplane.kubelet.volume_manager import POD_ATTACH_AND_MOUNT_TIMEOUT, SYNC_BACKOFF, has_claims
from tests.kubelet.harness import Env, Obj, running_fleet
from tests.kubelet.storage_objects import DRIVER, bind, claim_pod_spec, create_claim, create_csidriver

NODES = {"csiDrivers": [], "nodes": [{"name": "n1"}]}
"""No simulated CSI driver: each test publishes the CSIDriver it needs (attachRequired true or false)."""


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running_fleet(NODES, FleetOptions(pull_delay=0.0, status_workers=2)) as started:
        yield started


async def _waiting_reason(env: Env, name: str) -> str:
    statuses = (await env.pod(name)).get("status", {}).get("containerStatuses") or [{}]
    return str((statuses[0].get("state") or {}).get("waiting", {}).get("reason", ""))


async def _failed_mounts(env: Env, name: str) -> list[Obj]:
    return [e for e in await env.events(name) if e["reason"] == "FailedMount"]


async def _stays_container_creating(env: Env, name: str, seconds: float) -> None:
    for _ in range(int(seconds)):
        await env.clock.advance(1.0)
    assert await env.phase(name) == "Pending"
    assert await _waiting_reason(env, name) == "ContainerCreating"


async def _create_attachment(env: Env, pv: Obj, node: str = "n1") -> str:
    """What the attach/detach controller's CSI attacher creates (``csiAttacher.Attach``)."""
    handle = pv["spec"]["csi"]["volumeHandle"]
    name = attachment_name(handle, DRIVER, node)
    body = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
            "spec": {"attacher": DRIVER, "nodeName": node,
                     "source": {"persistentVolumeName": pv["metadata"]["name"]}}}  # fmt: skip
    await env.client.create(env.client.resource("volumeattachments"), body)
    return name


def test_has_claims_is_the_fast_path() -> None:
    """Only claim and generic ephemeral volumes send a pod through the volume manager."""
    assert not has_claims({"spec": {"containers": []}})
    assert not has_claims({"spec": {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "hostPath": {}}]}})
    assert has_claims({"spec": {"volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "c"}}]}})
    assert has_claims({"spec": {"volumes": [{"name": "a", "ephemeral": {"volumeClaimTemplate": {}}}]}})


async def test_pod_without_claims_starts_without_the_volume_manager(env: Env) -> None:
    await env.create_pod("plain", volumes=[{"name": "s", "emptyDir": {}}])
    await env.until(lambda: env.is_phase("plain", "Running"), "plain Running", step=0.1)
    assert env.fleet.volumes._ready is None  # no storage informer was started for it


async def test_csi_volume_waits_for_its_attachment(env: Env) -> None:
    """A bound CSI claim without a CSIDriver object (attach required, as ``skipAttach``): ContainerCreating until
    the VolumeAttachment for (handle, driver, node) is attached; no FailedMount meanwhile, even past
    podAttachAndMountTimeout (v1.37 records none for an interrupted wait)."""
    claim = await create_claim(env.client, "data-claim")
    pv = await bind(env.client, claim, "pvc-1111")
    await env.create_pod("app", **claim_pod_spec("data-claim"))
    await _stays_container_creating(env, "app", POD_ATTACH_AND_MOUNT_TIMEOUT + 5)
    assert await _failed_mounts(env, "app") == []
    name = await _create_attachment(env, pv)
    await env.until(lambda: env.is_phase("app", "Running"), "app Running", step=0.1)
    va = await env.client.get(env.client.resource("volumeattachments"), name)
    assert va["status"]["attached"] is True
    assert va["metadata"]["finalizers"] == ["external-attacher/csi-kubeplane-io"]


async def test_attach_not_required_runs_once_bound(env: Env) -> None:
    """CSIDriver attachRequired false: no attachment is waited for, the pod runs once its claim is bound."""
    await create_csidriver(env.client, attach_required=False)
    claim = await create_claim(env.client, "claim")
    await env.create_pod("app", **claim_pod_spec("claim"))
    await _stays_container_creating(env, "app", 3)
    await bind(env.client, claim, "pvc-2222")
    await env.until(lambda: env.is_phase("app", "Running"), "app Running", step=0.1)
    listed = await env.client.list(env.client.resource("volumeattachments"))
    assert listed["items"] == []


async def test_unbound_claim_fails_mount_then_runs_when_bound(env: Env) -> None:
    """A claim that is not Bound is a processing error: FailedMount at once with upstream's text, again after
    each pod-worker back-off; the pod runs once the claim is bound (in-tree PV: nothing to attach)."""
    claim = await create_claim(env.client, "claim")
    await env.create_pod("app", **claim_pod_spec("claim"))
    await env.until(lambda: _has_failed_mount(env, "app"), "FailedMount", step=0.1)
    event = (await _failed_mounts(env, "app"))[0]
    assert event["type"] == "Warning"
    assert event["message"] == (
        "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], "
        "failed to process volumes=[data]: error processing PVC default/claim: PVC is not bound"
    )
    await _stays_container_creating(env, "app", SYNC_BACKOFF + 1)
    assert (await _failed_mounts(env, "app"))[0].get("count") == 2  # the next sync failed the same way
    await bind(env.client, claim, "pv-local", driver=None)
    await env.until(lambda: env.is_phase("app", "Running"), "app Running", step=0.1)


async def _has_failed_mount(env: Env, name: str) -> bool:
    return bool(await _failed_mounts(env, name))


@pytest.mark.parametrize(
    ("setup", "error"),
    [
        ("missing", 'error processing PVC default/claim: failed to fetch PVC from API server: '
                    'persistentvolumeclaims "claim" not found'),
        ("deleting", "error processing PVC default/claim: PVC is being deleted"),
        ("block", "volume data has volumeMode Block, but is specified in volumeMounts"),
    ],
    ids=["claim not found", "claim being deleted", "Block volume in volumeMounts"],
)  # fmt: skip
async def test_processing_errors_as_upstream(env: Env, setup: str, error: str) -> None:
    """getPVCExtractPV's not-found and being-deleted errors, and the volumeMode check of PodVolumeInfos."""
    if setup == "deleting":
        await create_claim(env.client, "claim", finalizers=["kubernetes.io/pvc-protection"])
        await env.client.delete(env.client.resource("persistentvolumeclaims"), "claim", namespace="default")
    elif setup == "block":
        claim = await create_claim(env.client, "claim")
        await bind(env.client, claim, "pv-block", driver=None, mode="Block")
    await env.create_pod("app", **claim_pod_spec("claim"))
    await env.until(lambda: _has_failed_mount(env, "app"), "FailedMount", step=0.1)
    message = (await _failed_mounts(env, "app"))[0]["message"]
    assert message == (
        "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], "
        f"failed to process volumes=[data]: {error}"
    )
    assert await env.phase("app") == "Pending"


async def test_ephemeral_claim_must_belong_to_the_pod(env: Env) -> None:
    """A generic ephemeral volume uses claim ``<pod>-<volume>``; one the pod does not control is refused
    (component-helpers ``ephemeral.VolumeIsForPod``), one it controls is used."""
    claim = await create_claim(env.client, "eph-data")
    await bind(env.client, claim, "pv-eph", driver=None)
    spec = claim_pod_spec("unused")
    spec["volumes"][0] = {"name": "data", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
    pod = await env.create_pod("eph", **spec)
    await env.until(lambda: _has_failed_mount(env, "eph"), "FailedMount", step=0.1)
    message = (await _failed_mounts(env, "eph"))[0]["message"]
    assert message.endswith(": PVC default/eph-data was not created for pod default/eph (pod is not owner)")
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "eph", "uid": pod["metadata"]["uid"], "controller": True}
    await env.client.patch(
        env.client.resource("persistentvolumeclaims"), "eph-data", {"metadata": {"ownerReferences": [owner]}},
        namespace="default",
    )  # fmt: skip
    await env.until(lambda: env.is_phase("eph", "Running"), "eph Running", step=0.5)


async def test_deleting_a_waiting_pod_ends_its_wait(env: Env) -> None:
    await create_claim(env.client, "claim")
    await env.create_pod("app", **claim_pod_spec("claim"))
    await _stays_container_creating(env, "app", 2)
    await env.client.delete(env.pods, "app", namespace="default")

    async def gone() -> bool:
        try:
            await env.pod("app")
        except NotFoundError:
            return True
        return False

    await env.until(gone, "pod deleted", step=0.5)
    assert env.fleet.volumes._waiters == {}
