"""The kubelet's volume manager (upstream ``pkg/kubelet/volumemanager``) as far as the simulation needs it: a pod's
containers start only once every volume they use is attached and mounted.

Upstream ``SyncPod`` calls ``volumeManager.WaitForAttachAndMount`` before the runtime creates the sandbox; the
desired-state populator dereferences each used volume's claim (``pkg/volume/util`` ``PodVolumeInfos``:
``getPVCExtractPV``, ``getPVSpec``), the reconciler mounts what it could process, and the wait polls until every
expected volume is mounted. What it checks here, per volume a container mounts or maps (``volumeMounts``,
``volumeDevices`` of init, regular and ephemeral containers; a volume no container uses is skipped, as the
populator skips it):

* ``persistentVolumeClaim`` and generic ``ephemeral`` volumes (claim ``<pod>-<volume>``, which must be controlled
  by the pod): the claim exists, is not being deleted, is Bound with a volumeName; the PV exists and its claimRef
  points at the claim's UID; volumeMode fits mounts (Filesystem) or devices (Block). A failure is a processing
  error with upstream's message (``error processing PVC ns/name: PVC is not bound`` ...).
* a PV with ``spec.csi`` whose driver needs attaching (no CSIDriver object, or ``attachRequired`` not false,
  upstream ``skipAttach``): the VolumeAttachment named :func:`~kubeplane.kubelet.csi_attacher.attachment_name`
  (handle, driver, this node) exists, is not being deleted and has ``status.attached``. Until then the volume is
  *unattached*.
* every other volume type (emptyDir, hostPath, configMap, secret, projected, in-tree disks ...) is mounted at once.

Timing and events, as upstream's kubelet (``kubelet.go`` ``SyncPod``, ``volume_manager.go``): processing errors end
the wait at once with Warning ``FailedMount`` ``Unable to attach or mount volumes: unmounted volumes=[...],
unattached volumes=[...], failed to process volumes=[...]: <errors joined by "; ">``, and the pod worker syncs
again after its back-off (10 s), recording the event again if it still fails. A wait that only lacks attachments
times out after ``podAttachAndMountTimeout`` (2m3s) *without* an event (v1.37 records none for an interrupted
wait: ``if !wait.Interrupted(err)``) and starts over. Between checks the wait sleeps on the injected clock and is
woken early by an informer event on anything the last check depended on (the claims, PVs, CSIDrivers and
VolumeAttachments it looked at) instead of upstream's 300 ms polling; so a pod starts as soon as its volume is
ready (upstream: within its next poll or back-off), and the FailedMount cadence stays upstream's.

Invariants: :func:`has_claims` is the only cost a pod without claim volumes pays (one pass over
``spec.volumes``; no informer is touched, none is even started); the informers (claims, PVs, CSIDrivers,
VolumeAttachments, from the fleet's storage informer factory) start with the first pod that has claim volumes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.views import meta_of, name_of, namespace_of, spec_of, status_of, uid_of
from kubeplane.api.volumes import volume_claim_name, volume_is_for_pod
from kubeplane.client.clock import Clock
from kubeplane.client.informer import SharedInformer, SharedInformerFactory

from .csi_attacher import attach_required, attachment_name
from .runtime import PodRuntime
from .state import NodeEvents, Obj, SimNode

__all__ = ["POD_ATTACH_AND_MOUNT_TIMEOUT", "SYNC_BACKOFF", "VolumeManager", "VolumeState", "has_claims"]

POD_ATTACH_AND_MOUNT_TIMEOUT = 123.0
"""Upstream ``podAttachAndMountTimeout`` (2m3s): how long one WaitForAttachAndMount waits."""
SYNC_BACKOFF = 10.0
"""Upstream kubelet ``backOffPeriod``: a pod worker whose sync failed syncs again this much later."""

_CLAIM_SOURCES = ("persistentVolumeClaim", "ephemeral")


def has_claims(pod: Mapping[str, Any]) -> bool:
    """The fast path's whole cost: does any volume of ``pod`` name a claim (directly or as a generic ephemeral
    volume)? Pods without one start as before, without the volume manager."""
    for volume in spec_of(pod).get("volumes") or ():
        if "persistentVolumeClaim" in volume or "ephemeral" in volume:
            return True
    return False


def _used_volumes(spec: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """Upstream ``GetPodVolumeNames``: names of the volumes containers mount, and of those they map as devices."""
    mounts: set[str] = set()
    devices: set[str] = set()
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(kind) or ():
            mounts.update(str(m.get("name")) for m in container.get("volumeMounts") or ())
            devices.update(str(d.get("name")) for d in container.get("volumeDevices") or ())
    return mounts, devices


def _brackets(names: Iterable[str]) -> str:
    """Go's ``%v`` of a string slice."""
    return "[" + " ".join(names) + "]"


@dataclass
class VolumeState:
    """One check of a pod's volumes (upstream's desired/actual state of the world, for this pod)."""

    unmounted: set[str] = field(default_factory=set)
    unattached: set[str] = field(default_factory=set)
    not_processed: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    depends_on: set[str] = field(default_factory=set)
    """Informer keys (``pvc:ns/name``, ``pv:name``, ``csidriver:name``, ``va:name``) whose change may change this."""

    @property
    def ready(self) -> bool:
        return not self.unmounted

    def message(self) -> str:
        """Upstream WaitForAttachAndMount's error text (without the ``Unable to attach or mount volumes: ``)."""
        return (
            f"unmounted volumes={_brackets(sorted(self.unmounted))}, "
            f"unattached volumes={_brackets(sorted(self.unattached))}, "
            f"failed to process volumes={_brackets(sorted(self.not_processed))}: " + "; ".join(self.errors)
        )


class _ProcessingError(Exception):
    pass


class VolumeManager:
    """See the module docstring. One per fleet; ``informers`` is the fleet's storage informer factory."""

    def __init__(self, informers: SharedInformerFactory, *, clock: Clock, events: NodeEvents) -> None:
        self._factory, self._clock, self._events = informers, clock, events
        self._informers: dict[str, SharedInformer] = {}
        self._ready: asyncio.Future[None] | None = None  # the informers' start-up, once
        self._waiters: dict[str, set[asyncio.Event]] = {}

    # --- informers --------------------------------------------------------------------------------------------

    async def _ensure_started(self) -> None:
        """Start the storage informers once (in a task of its own, so a cancelled first waiter cannot leave the
        others waiting for a sync nobody finishes) and wait for their sync."""
        if self._ready is None:
            self._ready = asyncio.ensure_future(self._start())
        await asyncio.shield(self._ready)

    async def _start(self) -> None:
        keys = {
            "persistentvolumeclaims": lambda o: f"pvc:{namespace_of(o)}/{name_of(o)}",
            "persistentvolumes": lambda o: f"pv:{name_of(o)}",
            "csidrivers": lambda o: f"csidriver:{name_of(o)}",
            "volumeattachments": lambda o: f"va:{name_of(o)}",
        }
        for plural, key in keys.items():
            informer = self._informers[plural] = self._factory.informer_for(plural)

            def wake(obj: Obj, key: Any = key) -> None:
                self._wake(key(obj))

            informer.add_event_handler(on_add=wake, on_update=lambda _old, new, wake=wake: wake(new), on_delete=wake)
            informer.start()
        await asyncio.gather(*(i.wait_for_sync() for i in self._informers.values()))

    def _wake(self, key: str) -> None:
        for event in self._waiters.get(key, ()):
            event.set()

    def _get(self, plural: str, namespace: str | None, name: str) -> Obj | None:
        return self._informers[plural].lister().get(namespace, name)

    # --- checking ---------------------------------------------------------------------------------------------

    def check(self, pod: Obj, node: str) -> VolumeState:
        """Where ``pod``'s volumes stand on ``node`` (needs the informers: call after the first wait started)."""
        state = VolumeState()
        spec = spec_of(pod)
        mounts, devices = _used_volumes(spec)
        for volume in spec.get("volumes") or ():
            name = str(volume.get("name") or "")
            if name not in mounts and name not in devices:
                continue  # the populator skips a volume no container uses
            if not any(k in volume for k in _CLAIM_SOURCES):
                continue  # in-tree and projected sources: mounted at once
            try:
                self._check_claim_volume(pod, volume, node, name in mounts, name in devices, state)
            except _ProcessingError as exc:
                state.errors.append(str(exc))
                state.not_processed.add(name)
                state.unmounted.add(name)
        return state

    def _check_claim_volume(
        self, pod: Obj, volume: Mapping[str, Any], node: str, mounted: bool, mapped: bool, state: VolumeState
    ) -> None:
        name, namespace = str(volume.get("name")), namespace_of(pod)
        source = volume.get("persistentVolumeClaim")
        ephemeral = source is None
        claim = volume_claim_name(pod, volume) if ephemeral else str((source or {}).get("claimName") or "")
        prefix = f"error processing PVC {namespace}/{claim}: "
        state.depends_on.add(f"pvc:{namespace}/{claim}")
        pvc = self._get("persistentvolumeclaims", namespace, claim)
        if pvc is None:
            raise _ProcessingError(
                prefix + f'failed to fetch PVC from API server: persistentvolumeclaims "{claim}" not found'
            )
        if meta_of(pvc).get("deletionTimestamp"):
            raise _ProcessingError(prefix + "PVC is being deleted")
        if status_of(pvc).get("phase") != "Bound":
            raise _ProcessingError(prefix + "PVC is not bound")
        pv_name = str(spec_of(pvc).get("volumeName") or "")
        if not pv_name:
            raise _ProcessingError(prefix + "PVC has empty pvc.Spec.VolumeName")
        if ephemeral and (error := volume_is_for_pod(pod, pvc)) is not None:
            raise _ProcessingError(error)
        state.depends_on.add(f"pv:{pv_name}")
        pv = self._get("persistentvolumes", None, pv_name)
        if pv is None:
            raise _ProcessingError(
                prefix + f'failed to fetch PV {pv_name} from API server: persistentvolumes "{pv_name}" not found'
            )
        pv_spec = spec_of(pv)
        claim_ref = pv_spec.get("claimRef")
        if not claim_ref:
            raise _ProcessingError(
                prefix + f"found PV object {pv_name} but it has a nil pv.Spec.ClaimRef indicating it is not yet "
                "bound to the claim"
            )
        if (claim_ref.get("uid") or "") != uid_of(pvc):
            raise _ProcessingError(
                prefix + f"found PV object {pv_name} but its pv.Spec.ClaimRef.UID {claim_ref.get('uid') or ''} "
                f"does not point to claim.UID {uid_of(pvc)}"
            )
        mode = str(pv_spec.get("volumeMode") or "Filesystem")
        if mounted and mode != "Filesystem":
            raise _ProcessingError(f"volume {name} has volumeMode {mode}, but is specified in volumeMounts")
        if mapped and mode != "Block":
            raise _ProcessingError(f"volume {name} has volumeMode {mode}, but is specified in volumeDevices")
        csi = pv_spec.get("csi")
        if not csi:
            return
        driver, handle = str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        state.depends_on.add(f"csidriver:{driver}")
        if not attach_required(self._get("csidrivers", None, driver)):
            return
        va_name = attachment_name(handle, driver, node)
        state.depends_on.add(f"va:{va_name}")
        va = self._get("volumeattachments", None, va_name)
        if va is None or meta_of(va).get("deletionTimestamp") or not status_of(va).get("attached"):
            state.unattached.add(name)
            state.unmounted.add(name)

    # --- waiting ----------------------------------------------------------------------------------------------

    async def wait_for_attach_and_mount(self, sim: SimNode, rt: PodRuntime) -> None:
        """Return once every volume ``rt``'s containers use is ready on ``sim`` (see the module docstring for
        the events and the timing). Cancelled with the pod's task when the pod is deleted."""
        await self._ensure_started()
        window_ends = self._clock.monotonic() + POD_ATTACH_AND_MOUNT_TIMEOUT
        retry_at: float | None = None  # after a failed sync: when the pod worker syncs (and reports) again
        while True:
            now = self._clock.monotonic()
            state = self.check(rt.pod, sim.name)
            if state.ready:
                return
            if state.errors and (retry_at is None or now >= retry_at - 1e-9):
                message = "Unable to attach or mount volumes: " + state.message()
                self._events.pod(sim, rt.pod, "Warning", "FailedMount", message)
                retry_at = now + SYNC_BACKOFF
            elif not state.errors:
                retry_at = None
                if now >= window_ends - 1e-9:  # interrupted: no event in v1.37; the next sync waits afresh
                    window_ends = now + SYNC_BACKOFF + POD_ATTACH_AND_MOUNT_TIMEOUT
            until = retry_at if retry_at is not None else window_ends
            await self._sleep_or_change(state.depends_on, max(until - now, 0.0))

    async def _sleep_or_change(self, keys: Iterable[str], seconds: float) -> None:
        """Sleep ``seconds`` on the clock, or less if an informer event touches one of ``keys``."""
        event = asyncio.Event()
        keys = list(keys)
        for key in keys:
            self._waiters.setdefault(key, set()).add(event)
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        woken = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            woken.cancel()
            for key in keys:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(event)
                    if not waiting:
                        del self._waiters[key]
