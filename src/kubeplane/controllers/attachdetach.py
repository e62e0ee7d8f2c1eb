"""The attach/detach controller for CSI volumes (upstream ``pkg/controller/volume/attachdetach`` with the CSI
plugin's attacher, ``pkg/volume/csi/csi_attacher.go``).

Desired state (upstream's desired-state populator and ``util.ProcessPodVolumes``): a PV must be attached to a node
while a scheduled pod on that node that is not terminated (``util.IsPodTerminated``: phase Succeeded/Failed, or
deleted with no container running) uses a claim (``persistentVolumeClaim``, or a generic ephemeral volume's
``<pod>-<volume>``) that is Bound to it, the PV has ``spec.csi`` and its driver needs attaching (no CSIDriver
object, or ``attachRequired`` not false: ``csiPlugin.skipAttach``). A claim that is not Bound yet is waited for.

Reconciling one (node, PV) key:

* **Attach** (``csiAttacher.Attach``): create the VolumeAttachment ``csi-<sha256(handle+driver+node)>``
  (``getAttachmentName``) with ``spec.attacher`` = the driver, ``spec.nodeName``, ``spec.source.
  persistentVolumeName``; an existing one is reused. Then wait for the external-attacher: ``status.attached``
  records Normal ``SuccessfulAttachVolume`` ``AttachVolume.Attach succeeded for volume "<pv>" `` on every pod of
  the node using it (``operation_generator.go``; the trailing space is upstream's empty suffix); a
  ``status.attachError``, or no attachment within csiTimeout (2 min), records Warning ``FailedAttachVolume``
  ``AttachVolume.Attach failed for volume "<pv>" : <error>`` and the attach is retried after upstream's exponential
  back-off (nestedpendingoperations: 500 ms doubling to 2m2s).
* **Detach** (``csiAttacher.Detach``): a VolumeAttachment for a (node, PV) no pod needs any more is deleted (the
  external-attacher's finalizer holds it until it has detached). Upstream also waits for the kubelet to report the
  volume unmounted (``volumesInUse``) or for maxWaitForUnmountDuration; the simulated kubelet unmounts nothing, so
  the detach starts as soon as the last pod using the volume on the node is terminated or gone.

Only nodes the controller manages get attachments: a Node annotated
``volumes.kubernetes.io/controller-managed-attach-detach: "true"`` (the kubelet sets it when it registers; the
populator skips other nodes). Simplifications, stated: ``node.status.volumesAttached`` is not written (the kubelet
here reads the VolumeAttachment itself); no Multi-Attach check.

Invariants: level-triggered per key ``<node>/<pv>``; the only memory is which attaches this controller started
and when (``_attaching``), used for the events and the timeout, never to decide what must exist. A
VolumeAttachment it deletes is one whose PV it can name (``spec.source.persistentVolumeName``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from kubeplane.api.views import (
    annotations_of,
    meta_of,
    name_of,
    namespace_of,
    section,
    spec_of,
    status_of,
)
from kubeplane.client.cache import NODE_NAME_INDEX
from kubeplane.client.errors import AlreadyExistsError, NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import Controller, ControllerContext
from kubeplane.controllers.pv_controller_util import is_pod_terminated, pod_pvc_index

__all__ = ["AttachDetachController", "attachment_name", "is_pod_terminated"]

log = logging.getLogger(__name__)

CSI_TIMEOUT = 120.0
"""Upstream ``csiTimeout``: how long one Attach waits for ``status.attached``."""
RETRY_INITIAL, RETRY_MAX = 0.5, 122.0
"""nestedpendingoperations' back-off after a failed operation: 500 ms doubling, capped at 2m2s."""
CLAIMS_INDEX = "attachdetach/claims"
PV_NODE_INDEX = "attachdetach/pv-node"
PV_INDEX = "attachdetach/pv"
CONTROLLER_MANAGED_ANNOTATION = "volumes.kubernetes.io/controller-managed-attach-detach"


def attachment_name(volume_handle: str, driver: str, node: str) -> str:
    """Upstream ``getAttachmentName``: ``csi-`` + hex sha256 of handle, driver and node concatenated (the same
    function as :func:`kubeplane.kubelet.csi_attacher.attachment_name`; the layers may not share a module)."""
    return "csi-" + hashlib.sha256(f"{volume_handle}{driver}{node}".encode()).hexdigest()


def _va_keys(va: Obj) -> list[str]:
    spec = section(va, "spec")
    pv = section(spec, "source").get("persistentVolumeName")
    return [f"{spec.get('nodeName')}/{pv}"] if pv and spec.get("nodeName") else []


@dataclass
class _Attaching:
    started: float  # monotonic time the current attempt began
    attempt: int = 1


class AttachDetachController(Controller):
    """See the module docstring."""

    name: ClassVar[str] = "attachdetach"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        inf = ctx.informers
        self.recorder = ctx.recorder("attachdetach-controller")
        self.pods = inf.informer_for("pods", indexers={CLAIMS_INDEX: pod_pvc_index})
        self.claims = inf.informer_for("persistentvolumeclaims")
        self.volumes = inf.informer_for("persistentvolumes")
        self.drivers = inf.informer_for("csidrivers")
        self.nodes = inf.informer_for("nodes")
        self.attachments = inf.informer_for("volumeattachments", indexers={PV_NODE_INDEX: _va_keys, PV_INDEX: _va_pv})
        self._vas = ctx.client.resource("volumeattachments")
        self._attaching: dict[str, _Attaching] = {}
        self.pods.add_event_handler(on_add=self._on_pod, on_update=self._on_pod_update, on_delete=self._on_pod)
        self.claims.add_event_handler(on_add=self._on_claim, on_update=self._on_claim_update)
        self.volumes.add_event_handler(on_add=self._on_pv, on_update=self._on_pv_update, on_delete=self._on_pv)
        self.drivers.add_event_handler(on_add=self._on_driver, on_update=self._on_driver_update,
                                       on_delete=self._on_driver)  # fmt: skip
        self.nodes.add_event_handler(on_add=self._on_node, on_update=self._on_node_update, on_delete=self._on_node)
        self.attachments.add_event_handler(on_add=self._on_va, on_update=self._on_va_update, on_delete=self._on_va)

    # --- keys from events -------------------------------------------------------------------------------------

    def _keys_for_pod(self, pod: Obj) -> Iterable[str]:
        node = spec_of(pod).get("nodeName")
        if not node:
            return ()
        keys = []
        for claim_key in pod_pvc_index(pod):
            namespace, _, claim = claim_key.partition("/")
            pvc = self.claims.lister().get(namespace, claim)
            pv = spec_of(pvc).get("volumeName") if pvc is not None else None
            if pv:
                keys.append(f"{node}/{pv}")
        return keys

    def _on_pod_update(self, old: Obj, pod: Obj) -> None:
        for key in {*self._keys_for_pod(old), *self._keys_for_pod(pod)}:
            self.enqueue_key(key)

    def _on_pod(self, pod: Obj) -> None:
        for key in self._keys_for_pod(pod):
            self.enqueue_key(key)

    def _on_claim_update(self, _old: Obj, pvc: Obj) -> None:
        self._on_claim(pvc)

    def _on_claim(self, pvc: Obj) -> None:
        pv = spec_of(pvc).get("volumeName")
        if not pv:
            return
        for pod in self.pods.indexer.by_index(CLAIMS_INDEX, f"{namespace_of(pvc)}/{name_of(pvc)}"):
            node = spec_of(pod).get("nodeName")
            if node:
                self.enqueue_key(f"{node}/{pv}")

    def _on_pv_update(self, _old: Obj, pv: Obj) -> None:
        self._on_pv(pv)

    def _on_pv(self, pv: Obj) -> None:
        ref = spec_of(pv).get("claimRef") or {}
        if ref.get("name"):
            for pod in self.pods.indexer.by_index(CLAIMS_INDEX, f"{ref.get('namespace', '')}/{ref['name']}"):
                node = spec_of(pod).get("nodeName")
                if node:
                    self.enqueue_key(f"{node}/{name_of(pv)}")
        for va in self.attachments.indexer.by_index(PV_INDEX, name_of(pv)):
            for key in _va_keys(va):
                self.enqueue_key(key)

    def _on_driver_update(self, _old: Obj, driver: Obj) -> None:
        self._on_driver(driver)

    def _on_driver(self, driver: Obj) -> None:
        """attachRequired changed: every PV of the driver may need attaching, or no more."""
        for pv in self.volumes.lister().list():
            if section(spec_of(pv), "csi").get("driver") == name_of(driver):
                self._on_pv(pv)

    def _on_node_update(self, old: Obj, node: Obj) -> None:
        if _managed(old) != _managed(node):
            self._on_node(node)

    def _on_node(self, node: Obj) -> None:
        for pod in self.pods.indexer.by_index(NODE_NAME_INDEX, name_of(node)):
            self._on_pod(pod)
        for va in self.attachments.lister().list():
            if section(va, "spec").get("nodeName") == name_of(node):
                self._on_va(va)

    def _on_va_update(self, _old: Obj, va: Obj) -> None:
        self._on_va(va)

    def _on_va(self, va: Obj) -> None:
        for key in _va_keys(va):
            self.enqueue_key(key)

    # --- reconciling ------------------------------------------------------------------------------------------

    def _pods_using(self, pv: str, node: str) -> list[Obj]:
        """Upstream's ScheduledPods of (pv, node): the node's pods, not terminated, with a claim Bound to ``pv``."""
        out = []
        for pod in self.pods.indexer.by_index(NODE_NAME_INDEX, node):
            if is_pod_terminated(pod):
                continue
            for claim_key in pod_pvc_index(pod):
                namespace, _, claim = claim_key.partition("/")
                pvc = self.claims.lister().get(namespace, claim)
                if pvc is not None and status_of(pvc).get("phase") == "Bound" and spec_of(pvc).get("volumeName") == pv:
                    out.append(pod)
                    break
        return out

    def _wanted(self, pv: Obj | None, node: str) -> tuple[str, list[Obj]] | None:
        """The attachment (pv, node) needs, with the pods needing it; None when none is needed."""
        if pv is None or not _managed(self.nodes.lister().get(None, node)):
            return None
        csi = spec_of(pv).get("csi")
        if not csi:
            return None
        driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        csidriver = self.drivers.lister().get(None, driver)
        if csidriver is not None and section(csidriver, "spec").get("attachRequired") is False:
            return None
        pods = self._pods_using(name_of(pv), node)
        return (attachment_name(handle, driver, node), pods) if pods else None

    async def sync(self, key: str) -> None:
        node, _, pv_name = key.partition("/")
        pv = self.volumes.lister().get(None, pv_name)
        wanted = self._wanted(pv, node)
        want_name = wanted[0] if wanted else None
        for va in self.attachments.indexer.by_index(PV_NODE_INDEX, key):
            if name_of(va) != want_name and not meta_of(va).get("deletionTimestamp"):
                await self._detach(va)
        if wanted is None or pv is None:
            self._attaching.pop(key, None)
            return
        await self._attach(key, pv, *wanted)

    async def _detach(self, va: Obj) -> None:
        """``csiAttacher.Detach``: delete the VolumeAttachment; the external-attacher's finalizer holds it while
        the driver detaches."""
        try:
            await self.client.delete(self._vas, name_of(va), preconditions={"uid": meta_of(va).get("uid", "")})
        except NotFoundError:
            return

    async def _attach(self, key: str, pv: Obj, name: str, pods: list[Obj]) -> None:
        csi = spec_of(pv)["csi"]
        driver, handle, node = str(csi.get("driver")), str(csi.get("volumeHandle") or ""), key.partition("/")[0]
        now = self.clock.monotonic()
        va = self.attachments.lister().get(None, name)
        state = self._attaching.get(key)
        if va is not None and status_of(va).get("attached") and not meta_of(va).get("deletionTimestamp"):
            if state is not None:  # an attach this controller waited for: upstream's success event
                self._attaching.pop(key, None)
                message = f'AttachVolume.Attach succeeded for volume "{name_of(pv)}" '
                self._event(pods, "Normal", "SuccessfulAttachVolume", message)
            return
        if state is None:
            state = self._attaching[key] = _Attaching(started=now)
        if now < state.started:
            self.enqueue_after(key, state.started - now)
            return  # backing off after a failed attempt
        if va is None:
            body: Obj = {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "VolumeAttachment",
                "metadata": {"name": name},
                "spec": {"attacher": driver, "nodeName": node, "source": {"persistentVolumeName": name_of(pv)}},
            }
            with contextlib.suppress(AlreadyExistsError):
                await self.client.create(self._vas, body)
        error: str | None = None
        if va is not None and meta_of(va).get("deletionTimestamp"):
            error = "volume attachment is being deleted"
        elif va is not None and section(status_of(va), "attachError").get("message"):
            error = str(section(status_of(va), "attachError")["message"])
        elif now - state.started >= CSI_TIMEOUT - 1e-9:
            error = f"timed out waiting for external-attacher of {driver} CSI driver to attach volume {handle}"
        if error is None:
            self.enqueue_after(key, state.started + CSI_TIMEOUT - now)
            return
        message = f'AttachVolume.Attach failed for volume "{name_of(pv)}" : {error}'
        self._event(pods, "Warning", "FailedAttachVolume", message)
        backoff = min(RETRY_INITIAL * 2 ** (state.attempt - 1), RETRY_MAX)
        self._attaching[key] = _Attaching(started=now + backoff, attempt=state.attempt + 1)
        self.enqueue_after(key, backoff)

    def _event(self, pods: list[Obj], type_: str, reason: str, message: str) -> None:
        for pod in pods:
            ref = {"apiVersion": "v1", "kind": "Pod", "metadata": meta_of(pod)}
            self.recorder.record(ref, type_, reason, message)


def _managed(node: Obj | None) -> bool:
    """The node's kubelet leaves attaching to this controller (upstream ``nodeAttachDetachManaged``)."""
    return node is not None and annotations_of(node).get(CONTROLLER_MANAGED_ANNOTATION) == "true"


def _va_pv(va: Obj) -> list[str]:
    pv = section(section(va, "spec"), "source").get("persistentVolumeName")
    return [str(pv)] if pv else []
