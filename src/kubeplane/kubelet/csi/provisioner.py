"""The provisioner: external-provisioner's claim and volume workers over the simulated drivers' pools.

Follows kubernetes-sigs/sig-storage-lib-external-provisioner ``controller/controller.go`` with
kubernetes-csi/external-provisioner ``pkg/controller/controller.go`` as its ``Provisioner``:

* ``shouldProvision``: no ``spec.volumeName``; ``volume.kubernetes.io/storage-provisioner`` (else the beta
  annotation) names one of the fleet's drivers; the claim's class exists (else retry); for a WaitForFirstConsumer
  class only once ``volume.kubernetes.io/selected-node`` is set.
* ``provisionClaimOperation``: PV ``pvc-<claim uid>`` already there: done. Event ``Provisioning`` ("External
  provisioner is provisioning volume for claim "ns/name""), then CreateVolume (``provisionTime`` on the clock);
  the PV gets claimRef, the ``external-provisioner.volume.kubernetes.io/finalizer`` (v1.37's external-provisioner
  runs the library with ``AddFinalizer(true)``) and ``pv.kubernetes.io/provisioned-by``; event
  ``ProvisioningSucceeded`` ("Successfully provisioned volume pvc-<uid>"). Errors: event ``ProvisioningFailed``
  with the error's text and a retry with the work queue's backoff; ``ResourceExhausted`` on a claim with a
  selected node is ``ProvisioningReschedule``: the annotation is removed (``rescheduleProvisioning``) so the
  scheduler picks again, and the claim is not retried.
* Topology (``GenerateAccessibilityRequirements``): the selected node's segment; without one (Immediate) the
  segments allowed by the class's ``allowedTopologies``, in the order upstream prefers them (rotated by a hash
  of the claim name), the first with room taking the volume.
* ``shouldDelete``/``deleteVolumeOperation``: a ``Released`` PV of this driver with reclaim policy ``Delete``
  (and the finalizer, or no deletion timestamp): DeleteVolume (``deleteTime``), delete the PV, remove the
  finalizer.

Capacity is reserved when CreateVolume starts and returned when it fails or the volume is deleted, so two claims
never share the last bytes. Invariant: a PV name is counted in its driver's pools iff the driver created it (or
found it at start) and has not deleted it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.api.quantity import QuantityError, parse_quantity
from kubeplane.api.views import annotations_of, meta_of, name_of, spec_of, status_of
from kubeplane.client.clock import Clock
from kubeplane.client.errors import AlreadyExistsError, NotFoundError
from kubeplane.client.events import EventRecorder
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Client, Obj
from kubeplane.client.workqueue import (
    ExponentialBackoffConfig,
    ItemExponentialFailureRateLimiter,
    QueueShutDown,
    RateLimitingQueue,
)

from .capacity import Pools, Segment
from .objects import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    PV_FINALIZER,
    persistent_volume,
    quantity_text,
)

__all__ = ["Counters", "ProvisionError", "Provisioner", "volume_segment"]

log = logging.getLogger(__name__)
WORKERS = 100  # external-provisioner --worker-threads
RETRY = ExponentialBackoffConfig(base_delay=1.0, max_delay=300.0)  # --retry-interval-start 1s, --retry-interval-max 5m


@dataclass(slots=True)
class Counters:
    provisioned: int = 0
    deleted: int = 0
    failed: int = 0


class ProvisionError(Exception):
    """A failed CreateVolume: ``str()`` is the event message; ``reschedule`` is ProvisioningReschedule."""

    def __init__(self, message: str, *, reschedule: bool = False) -> None:
        super().__init__(message)
        self.reschedule = reschedule


def claim_size(claim: Obj) -> int:
    request = ((spec_of(claim).get("resources") or {}).get("requests") or {}).get("storage")
    try:
        return parse_quantity(str(request)).value() if request is not None else 0
    except QuantityError:
        return 0


def volume_segment(pv: Obj, topology_key: str) -> str | None:
    """The segment a PV's required node affinity pins it to (what ``GenerateVolumeNodeAffinity`` wrote)."""
    required = ((spec_of(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms") or []
    for term in required:
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == topology_key and expr.get("operator") == "In" and expr.get("values"):
                return str(expr["values"][0])
    return None


def _allowed(seg: Segment, terms: list[Obj]) -> bool:
    """Whether a segment is in a class's ``allowedTopologies`` (any term whose every expression it matches)."""
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchLabelExpressions") or []
        if all(str(seg.labels.get(str(e.get("key")), "\0")) in [str(v) for v in e.get("values") or []] for e in exprs):
            return True
    return False


class Provisioner:
    """Claim and volume workers for every driver of a fleet (module docstring)."""

    def __init__(
        self,
        client: Client,
        pools: Mapping[str, Pools],
        *,
        clock: Clock,
        rng: random.Random,
        claims: SharedInformer,
        volumes: SharedInformer,
        classes: SharedInformer,
        recorders: Mapping[str, EventRecorder],
        capacity_changed: Callable[[str, str], None],
        own_node: Callable[[str], bool],
    ) -> None:
        self.client, self.pools, self.clock = client, pools, clock
        self.claims, self.volumes, self.classes = claims, volumes, classes
        self.recorders = recorders
        self.capacity_changed = capacity_changed
        self.own_node = own_node
        self._deleted: set[str] = set()
        self._rescheduled: dict[str, Any] = {}  # claim key -> the resourceVersion we removed selected-node from
        self.counters = {name: Counters() for name in pools}
        self.identity = {name: f"{int(clock.now() * 1000)}-{rng.randrange(10000)}-{name}" for name in pools}
        self._rng = rng
        self.claim_queue: RateLimitingQueue[str] = RateLimitingQueue(
            clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(RETRY)
        )
        self.volume_queue: RateLimitingQueue[str] = RateLimitingQueue(
            clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(RETRY)
        )
        self._pv_res = client.resource("persistentvolumes")
        self._pvc_res = client.resource("persistentvolumeclaims")
        claims.add_event_handler(on_add=self._claim_event, on_update=lambda _o, c: self._claim_event(c))
        volumes.add_event_handler(
            on_add=self._volume_event, on_update=lambda _o, v: self._volume_event(v), on_delete=self._volume_deleted
        )

    # --- events --------------------------------------------------------------------------------------------

    def _driver_of_claim(self, claim: Obj) -> str | None:
        ann = annotations_of(claim)
        name = ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER)
        return name if name in self.pools else None

    def _claim_event(self, claim: Obj) -> None:
        if not spec_of(claim).get("volumeName") and self._driver_of_claim(claim) is not None:
            self.claim_queue.add(f"{meta_of(claim).get('namespace')}/{name_of(claim)}")

    def _volume_event(self, pv: Obj) -> None:
        if annotations_of(pv).get(ANN_PROVISIONED_BY) in self.pools:
            if not meta_of(pv).get("deletionTimestamp") and name_of(pv) not in self._deleted:
                self._adopt(pv)  # one created elsewhere (a snapshot's, another fleet's restart) counts too
            self.volume_queue.add(name_of(pv))

    def _volume_deleted(self, pv: Obj) -> None:
        """A PV gone by any way (ours after DeleteVolume, or by hand): its capacity is free again."""
        driver = annotations_of(pv).get(ANN_PROVISIONED_BY)
        pools = self.pools.get(str(driver))
        if pools is not None:
            seg = pools.release(name_of(pv))
            if seg is not None:
                self.capacity_changed(pools.driver.name, seg)

    def recover(self) -> None:
        """Count every existing PV of our drivers in its segment (a restarted fleet); call after the PV
        informer synced."""
        for pv in self.volumes.indexer.list():
            self._adopt(pv)

    def _adopt(self, pv: Obj) -> None:
        """Count an existing PV of one of our drivers in its segment (idempotent)."""
        pools = self.pools.get(str(annotations_of(pv).get(ANN_PROVISIONED_BY)))
        if pools is None or (spec_of(pv).get("csi") or {}).get("driver") != pools.driver.name:
            return
        seg = volume_segment(pv, pools.driver.topology_key)
        if seg is None or pools.holds(name_of(pv)):
            return
        try:
            size = parse_quantity(str((spec_of(pv).get("capacity") or {}).get("storage", "0"))).value()
        except QuantityError:
            return
        if pools.consume(seg, name_of(pv), size):
            self.capacity_changed(pools.driver.name, seg)

    # --- running -------------------------------------------------------------------------------------------

    async def run(self) -> None:
        workers = [self._worker(self.claim_queue, self.sync_claim) for _ in range(WORKERS)]
        workers += [self._worker(self.volume_queue, self.sync_volume) for _ in range(WORKERS // 10)]
        tasks = [asyncio.ensure_future(w) for w in workers]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.claim_queue.shut_down()
            self.volume_queue.shut_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self, queue: RateLimitingQueue[str], sync: Callable[[str], Any]) -> None:
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            try:
                retry = await sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("csi provisioner: %s failed (retrying): %s", key, exc)
                retry = True
            if retry:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            queue.done(key)

    # --- provisioning --------------------------------------------------------------------------------------

    def _class(self, claim: Obj) -> Obj | None:
        return self.classes.indexer.get(str(spec_of(claim).get("storageClassName") or ""))

    async def sync_claim(self, key: str) -> bool:
        """One claim; True asks for a retry with backoff."""
        claim = self.claims.indexer.get(key)
        if claim is None or spec_of(claim).get("volumeName"):
            return False
        if self._rescheduled.get(key) == meta_of(claim).get("resourceVersion"):
            return False  # the informer still shows the claim we took the selected node from
        driver = self._driver_of_claim(claim)
        if driver is None:
            return False
        cls = self._class(claim)
        if cls is None:
            return True  # shouldProvision's getStorageClass error: retried (the class may be created)
        selected = annotations_of(claim).get(ANN_SELECTED_NODE, "")
        if cls.get("volumeBindingMode") == "WaitForFirstConsumer" and not selected:
            return False
        if cls.get("provisioner") != driver:
            return False  # knownProvisioner(class.Provisioner) failed: errStopProvision
        pools = self.pools[driver]
        pv_name = f"pvc-{meta_of(claim).get('uid')}"
        if pools.holds(pv_name) or self.volumes.indexer.get(pv_name) is not None:
            return False
        if selected and pools.segment_of_node(selected) is None and not self.own_node(selected):
            return False  # another fleet's node: its provisioner acts
        recorder = self.recorders[driver]
        recorder.record(
            claim, "Normal", "Provisioning", f'External provisioner is provisioning volume for claim "{key}"'
        )
        try:
            created = await self._provision(pools, claim, cls, selected, pv_name)
        except ProvisionError as exc:
            self.counters[driver].failed += 1
            recorder.record(claim, "Warning", "ProvisioningFailed", str(exc))
            if exc.reschedule and selected:
                await self._reschedule(claim)
                self._rescheduled[key] = meta_of(claim).get("resourceVersion")
                return False
            return True
        self._rescheduled.pop(key, None)
        if created:  # AlreadyExists is success too (StoreVolume), but the other creator counts the volume
            self.counters[driver].provisioned += 1
        recorder.record(claim, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}")
        return False

    def _segment(self, pools: Pools, claim: Obj, cls: Obj, selected: str, size: int) -> Segment:
        if selected:
            seg = pools.segment_of_node(selected)
            if seg is None:
                raise ProvisionError(
                    f"error generating accessibility requirements: no topology key found for node {selected}"
                )
            return seg
        terms = list(cls.get("allowedTopologies") or [])
        candidates = [pools.segments[v] for v in sorted(pools.segments) if _allowed(pools.segments[v], terms)]
        if not candidates:
            raise ProvisionError("error generating accessibility requirements: no available topology found")
        offset = zlib.crc32(name_of(claim).encode()) % len(candidates)  # getPVCNameHashAndIndexOffset's idea
        ordered = candidates[offset:] + candidates[:offset]
        return next((seg for seg in ordered if seg.fits(size)), ordered[0])

    async def _provision(self, pools: Pools, claim: Obj, cls: Obj, selected: str, pv_name: str) -> bool:
        """CreateVolume and the PV; False when the PV turned out to exist already."""
        size = claim_size(claim)
        seg = self._segment(pools, claim, cls, selected, size)
        driver = pools.driver
        if not seg.fits(size):
            total = quantity_text(seg.total or 0)
            raise ProvisionError(
                f"rpc error: code = ResourceExhausted desc = requested capacity {size} exceeds remaining capacity "
                f'for "{seg.value}", {quantity_text(seg.used)} out of {total} already used',
                reschedule=True,
            )
        pools.consume(seg.value, pv_name, size)  # reserved while CreateVolume runs
        self.capacity_changed(driver.name, seg.value)
        try:
            if driver.provision_time > 0:
                await self.clock.sleep(driver.provision_time)
            handle = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
            pv = persistent_volume(
                driver=driver,
                claim=claim,
                storage_class=cls,
                size=size,
                segment=seg.value,
                volume_handle=handle,
                identity=self.identity[driver.name],
            )
            await self.client.create(self._pv_res, pv)
        except AlreadyExistsError:
            pools.release(pv_name)  # StoreVolume: it is there already (another worker or fleet made it)
            self.capacity_changed(driver.name, seg.value)
            return False
        except BaseException:
            pools.release(pv_name)
            self.capacity_changed(driver.name, seg.value)
            raise
        return True

    async def _reschedule(self, claim: Obj) -> None:
        """``rescheduleProvisioning``: drop the selected-node annotation so the scheduler chooses again."""
        meta = meta_of(claim)
        patch = {"metadata": {"annotations": {ANN_SELECTED_NODE: None}}}
        with contextlib.suppress(NotFoundError):
            await self.client.patch(self._pvc_res, str(meta.get("name")), patch, namespace=str(meta.get("namespace")))

    # --- deleting ------------------------------------------------------------------------------------------

    def should_delete(self, pv: Obj) -> bool:
        meta = meta_of(pv)
        if PV_FINALIZER not in (meta.get("finalizers") or []) and meta.get("deletionTimestamp"):
            return False
        if status_of(pv).get("phase") != "Released":
            return False
        return spec_of(pv).get("persistentVolumeReclaimPolicy") == "Delete"

    async def sync_volume(self, name: str) -> bool:
        pv = self.volumes.indexer.get(name)
        if pv is None:
            return False
        pools = self.pools.get(str(annotations_of(pv).get(ANN_PROVISIONED_BY)))
        if pools is None or (spec_of(pv).get("csi") or {}).get("driver") != pools.driver.name:
            return False
        if not self.should_delete(pv):
            return False
        first = name not in self._deleted  # a lagging informer may show it again after we deleted it
        if first and pools.driver.delete_time > 0:
            await self.clock.sleep(pools.driver.delete_time)
        try:
            if first:
                await self.client.delete(self._pv_res, name)
            fresh = await self.client.get(self._pv_res, name)
        except NotFoundError:
            fresh = None
        if first:
            self._deleted.add(name)
            self.counters[pools.driver.name].deleted += 1
        if fresh is not None:
            finalizers = [f for f in meta_of(fresh).get("finalizers") or [] if f != PV_FINALIZER]
            if finalizers != list(meta_of(fresh).get("finalizers") or []):
                version = meta_of(fresh).get("resourceVersion")
                patch = {"metadata": {"finalizers": finalizers, "resourceVersion": version}}
                with contextlib.suppress(NotFoundError):
                    await self.client.patch(self._pv_res, name, patch)
        seg = pools.release(name)
        if seg is not None:
            self.capacity_changed(pools.driver.name, seg)
        return False
