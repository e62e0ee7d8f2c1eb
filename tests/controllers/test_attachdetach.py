"""The attach/detach controller for CSI volumes (upstream ``pkg/controller/volume/attachdetach`` with
``pkg/volume/csi/csi_attacher.go``: ``Attach``, ``Detach``, ``getAttachmentName``, ``skipAttach``; events of
``pkg/volume/util/operationexecutor/operation_generator.go`` ``GenerateAttachVolumeFunc``).

The controller-only cases play the external-attacher by patching the VolumeAttachment's status; the last case
runs the whole path with a kubelet fleet (its simulated external-attacher and volume manager) on the same fake
clock: pod scheduled -> VolumeAttachment -> attached -> pod Running -> pod deleted -> VolumeAttachment gone.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import PatchType
from kubeplane.client.local import LocalClient
from kubeplane.controllers.attachdetach import CSI_TIMEOUT, AttachDetachController, attachment_name
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.csi_attacher import attachment_name as kubelet_attachment_name
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from tests.controllers.harness import Env, eventually, pod_obj, running, settle
from tests.kubelet.storage_objects import DRIVER, bind, claim_pod_spec, create_claim, create_csidriver

Obj = dict[str, Any]


def test_attachment_name_is_upstreams() -> None:
    """getAttachmentName: csi-<sha256(volumeHandle + driverName + nodeName)> (the volume handle, not the PV name)."""
    expected = "csi-" + hashlib.sha256(b"vol-1csi.kubeplane.iono-1").hexdigest()
    assert attachment_name("vol-1", "csi.kubeplane.io", "no-1") == expected
    assert kubelet_attachment_name("vol-1", "csi.kubeplane.io", "no-1") == expected
    assert len(expected) == 68  # isAttachmentName: "csi-" + 64 hex digits


async def _node(env: Env[Any], name: str = "n1", *, managed: bool = True) -> None:
    """A Node as the kubelet registers it: annotated controller-managed-attach-detach (or not)."""
    annotations = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"} if managed else {}
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": annotations}}
    await env.client.create(env.res("nodes"), body)


async def _pod(env: Env[Any], name: str, claim: str, node: str = "n1") -> Obj:
    body = pod_obj(name, node=node)
    body["spec"].update(claim_pod_spec(claim))
    return await env.client.create(env.res("pods"), body, namespace="default")


async def _va(env: Env[Any], name: str) -> Obj | None:
    try:
        return await env.client.get(env.res("volumeattachments"), name)
    except NotFoundError:
        return None


async def _events(env: Env[Any], pod: str, reason: str) -> list[Obj]:
    await env.ctx.recorder("attachdetach-controller").flush()
    items = (await env.client.list(env.res("events"), namespace="default"))["items"]
    return [e for e in items if e["involvedObject"]["name"] == pod and e["reason"] == reason]


async def _mark_attached(env: Env[Any], name: str, status: Obj) -> None:
    await env.client.patch(
        env.res("volumeattachments"), name, {"status": status}, patch_type=PatchType.MERGE, subresource="status"
    )


async def test_attaches_then_detaches_when_the_pod_ends() -> None:
    """A scheduled pod with a Bound CSI claim (no CSIDriver: attach required) gets the VolumeAttachment upstream's
    csiAttacher.Attach creates; attached -> SuccessfulAttachVolume on the pod; the pod Succeeded -> deleted."""
    async with running(AttachDetachController) as env:
        await _node(env)
        claim = await create_claim(env.client, "claim")
        await bind(env.client, claim, "pvc-aaaa", handle="vol-aaaa")
        await _pod(env, "app", "claim")
        name = attachment_name("vol-aaaa", DRIVER, "n1")
        va = await eventually(lambda: _va(env, name), "VolumeAttachment")
        assert va is not None
        assert va["spec"] == {"attacher": DRIVER, "nodeName": "n1", "source": {"persistentVolumeName": "pvc-aaaa"}}
        await _mark_attached(env, name, {"attached": True})
        events = await eventually(lambda: _events(env, "app", "SuccessfulAttachVolume"), "success event")
        assert events[0]["type"] == "Normal"
        assert events[0]["message"] == 'AttachVolume.Attach succeeded for volume "pvc-aaaa" '
        assert events[0]["source"]["component"] == "attachdetach-controller"
        await env.client.patch(
            env.res("pods"), "app", {"status": {"phase": "Succeeded"}}, namespace="default", subresource="status"
        )
        await eventually(lambda: _absent(_va(env, name)), "VolumeAttachment deleted")


async def _absent(value: Any) -> bool:
    return await value is None


async def test_unbound_claim_waits_and_attach_not_required_skips() -> None:
    """No attachment while the claim is not Bound; none at all for a driver with attachRequired false."""
    async with running(AttachDetachController) as env:
        await _node(env)
        claim = await create_claim(env.client, "claim")
        await _pod(env, "app", "claim")
        await settle()
        assert (await env.client.list(env.res("volumeattachments")))["items"] == []
        await bind(env.client, claim, "pvc-bbbb", handle="vol-bbbb")
        await eventually(lambda: _va(env, attachment_name("vol-bbbb", DRIVER, "n1")), "attachment once bound")

        await create_csidriver(env.client, attach_required=False, name="other.csi")
        other = await create_claim(env.client, "other")
        await bind(env.client, other, "pvc-cccc", driver="other.csi", handle="vol-cccc")
        await _pod(env, "app2", "other")
        await settle()
        names = [i["metadata"]["name"] for i in (await env.client.list(env.res("volumeattachments")))["items"]]
        assert names == [attachment_name("vol-bbbb", DRIVER, "n1")]


async def test_only_controller_managed_nodes_get_attachments() -> None:
    """The populator skips nodes without the controller-managed-attach-detach annotation; once the kubelet
    sets it, the volume is attached."""
    async with running(AttachDetachController) as env:
        await _node(env, managed=False)
        claim = await create_claim(env.client, "claim")
        await bind(env.client, claim, "pvc-ffff", handle="vol-ffff")
        await _pod(env, "app", "claim")
        await settle()
        assert (await env.client.list(env.res("volumeattachments")))["items"] == []
        annotations = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
        await env.client.patch(env.res("nodes"), "n1", {"metadata": {"annotations": annotations}})
        await eventually(lambda: _va(env, attachment_name("vol-ffff", DRIVER, "n1")), "attachment once managed")


async def test_attach_errors_and_timeout_record_failed_attach() -> None:
    """status.attachError -> FailedAttachVolume with the driver's message; no attachment within csiTimeout ->
    upstream's "timed out waiting for external-attacher" message."""
    async with running(AttachDetachController) as env:
        await _node(env)
        claim = await create_claim(env.client, "claim")
        await bind(env.client, claim, "pvc-dddd", handle="vol-dddd")
        await _pod(env, "app", "claim")
        name = attachment_name("vol-dddd", DRIVER, "n1")
        await eventually(lambda: _va(env, name), "VolumeAttachment")

        async def failed() -> bool:
            return bool(await _events(env, "app", "FailedAttachVolume"))

        await env.advance_until(failed, "timeout event", step=10.0)
        event = (await _events(env, "app", "FailedAttachVolume"))[0]
        assert event["type"] == "Warning"
        assert event["message"] == (
            'AttachVolume.Attach failed for volume "pvc-dddd" : '
            f"timed out waiting for external-attacher of {DRIVER} CSI driver to attach volume vol-dddd"
        )
        assert env.clock.monotonic() >= CSI_TIMEOUT
        await _mark_attached(env, name, {"attached": False, "attachError": {"message": "rpc error: disk busy"}})

        async def driver_error() -> bool:
            return any("disk busy" in e["message"] for e in await _events(env, "app", "FailedAttachVolume"))

        await env.advance_until(driver_error, "attachError event", step=1.0)
        messages = [e["message"] for e in await _events(env, "app", "FailedAttachVolume")]
        assert 'AttachVolume.Attach failed for volume "pvc-dddd" : rpc error: disk busy' in messages


async def test_end_to_end_with_the_kubelet_fleet() -> None:
    """Controller + fleet (simulated external-attacher, volume manager): the pod runs only after its volume is
    attached; deleting the pod deletes the attachment (the attacher's finalizer removed after detaching)."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    # no simulated CSI driver (its CSIDriver would say attachRequired false): the test's own CSIDriver applies
    nodes = parse_node_config({"csiDrivers": [], "nodes": [{"name": "n1"}]})
    fleet = Fleet(client, nodes, clock=clock, rng=random.Random(1),
                  options=FleetOptions(pull_delay=0.0, status_workers=2))  # fmt: skip
    fleet.attacher.attach_time = 5.0
    await fleet.start()
    try:
        async with running(AttachDetachController, client=client, clock=clock) as env:
            claim = await create_claim(client, "claim")
            await bind(client, claim, "pvc-eeee", handle="vol-eeee")
            await _pod(env, "app", "claim")
            name = attachment_name("vol-eeee", DRIVER, "n1")
            va = await eventually(lambda: _va(env, name), "VolumeAttachment")

            async def finalized() -> bool:
                found = await _va(env, name)
                return found is not None and "external-attacher/csi-kubeplane-io" in found["metadata"].get(
                    "finalizers", []
                )

            await eventually(finalized, "attacher finalizer")
            pod = await client.get(env.res("pods"), "app", namespace="default")
            assert pod["status"].get("phase") == "Pending"  # not attached yet: attach_time is 5 s

            async def running_pod() -> bool:
                got = await client.get(env.res("pods"), "app", namespace="default")
                return bool(got["status"].get("phase") == "Running")

            await env.advance_until(running_pod, "pod Running", step=0.5)
            va = await _va(env, name)
            assert va is not None
            assert va["status"]["attached"] is True
            assert await _events(env, "app", "SuccessfulAttachVolume")
            await client.delete(env.res("pods"), "app", namespace="default")
            await env.advance_until(lambda: _absent(_va(env, name)), "attachment deleted", step=1.0)
    finally:
        await fleet.stop()
        await client.close()
