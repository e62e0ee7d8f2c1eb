"""The kubelet's DRA manager for the fleet (upstream ``pkg/kubelet/cm/dra/manager.go``, v1.37) with the
simulated drivers' ``NodePrepareResources`` / ``NodeUnprepareResources``.

**Prepare** (before the sandbox, as kuberuntime's ``SyncPod``): for each of the pod's claims
(``spec.resourceClaims`` and ``status.extendedResourceClaimStatus``) the claim is read live from the API server
(upstream GETs it; an informer could lag behind the scheduler's PreBind) and must be

1. recorded (a template's claim is named in ``status.resourceClaimStatuses``: ``pod "ns/name": ResourceClaim not
   created yet``),
2. fetched (``fetch ResourceClaim <name>: <error>``),
3. created for the pod when generated (``ResourceClaim ns/c was not created for pod ns/p (pod is not owner)``),
4. reserved for the pod (``pod <name> (<uid>) is not allowed to use ResourceClaim <name> (<uid>)``),
5. allocated (``ResourceClaim <name>: not allocated``), by drivers this node runs (``DRA driver <d> is not
   registered``), and then prepared by each driver: the simulated driver refuses an allocation whose nodeSelector
   does not match its node or whose devices are not its own on this node
   (``NodePrepareResources failed for ResourceClaim <name>: <driver's message>``).

Any failure: a Warning ``FailedPrepareDynamicResources`` ``Failed to prepare dynamic resources: prepare dynamic
resources: <error>`` on the pod, which stays ContainerCreating; the pod worker syncs again after the kubelet's
resync interval (one minute: upstream's branch returns without a sync error). Nothing is recorded for a pod until
every claim passed (upstream's validation pass), so a failing pod can be deleted without an unprepare.

**Unprepare** (when the pod is terminal or gone, upstream ``UnprepareResources`` from ``SyncTerminatedPod``): the
pod's reference is dropped from each prepared claim; the last reference unprepares the claim. Idempotent.

**Checkpoint** (upstream ``dra_manager_state``, :mod:`.checkpoint`): with a ``state_dir`` every change of a
node's cache is written to ``<state_dir>/<node>/dra_manager_state`` and a node's cache is read from it the first
time the node is used, so a restarted fleet keeps its running pods' claims prepared (no second prepare) and
unprepares them when the pods go. :meth:`DRAManager.reconcile` is upstream's reconcile loop at start: references of
pods that are no longer active on the node (deleted or finished while the fleet was down) are dropped, and claims
left without pods unprepared. An unreadable checkpoint is logged and the node starts empty (upstream's kubelet
refuses to start; one node's file must not stop a whole fleet).

Invariant: :attr:`DRAManager.prepared` is, per node, what the node's drivers prepared: claim ``namespace/name`` ->
:class:`PreparedClaim` (uid, the pods using it, the ``(driver, pool, device)`` results of this node), equal to the
node's checkpoint whenever there is a ``state_dir``. Nothing is written to ``claim.status.devices``: v1.37 drivers
do not by default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from kubeplane.api.nodeaffinity import node_selector_matches
from kubeplane.api.podclaims import ClaimNameError, claim_name, is_for_pod, is_reserved_for_pod
from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.client.clock import Clock
from kubeplane.client.errors import APIStatusError
from kubeplane.client.interface import Client
from kubeplane.kubelet.config import NodeSpec

from . import checkpoint
from .checkpoint import CheckpointError, PreparedClaim

__all__ = ["FAILED_PREPARE_REASON", "RESYNC_INTERVAL", "DRAError", "DRAManager", "PreparedClaim", "pod_uses_dra"]

log = logging.getLogger("kubeplane.kubelet.dra")

FAILED_PREPARE_REASON: Final = "FailedPrepareDynamicResources"
RESYNC_INTERVAL: Final = 60.0
"""The kubelet's ``--sync-frequency`` default: when a pod whose resources could not be prepared is synced again."""


class DRAError(Exception):
    """A prepare failure; the message is upstream's error text (without the event's prefix)."""


def pod_uses_dra(pod: Mapping[str, Any]) -> bool:
    """Whether the pod references any ResourceClaim (what makes the kubelet call the DRA manager)."""
    return bool(spec_of(pod).get("resourceClaims")) or bool(status_of(pod).get("extendedResourceClaimStatus"))


def _pod_claims(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``spec.resourceClaims`` plus the extended-resource claim as one more (unnamed) pod claim."""
    claims = [c for c in spec_of(pod).get("resourceClaims") or () if isinstance(c, Mapping)]
    extended = status_of(pod).get("extendedResourceClaimStatus")
    if isinstance(extended, Mapping) and extended.get("resourceClaimName"):
        claims.append({"name": "", "resourceClaimName": extended["resourceClaimName"]})
    return claims


def _results(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    allocation = status_of(claim).get("allocation") or {}
    devices = allocation.get("devices") or {}
    return [r for r in devices.get("results") or () if isinstance(r, Mapping)]


class DRAManager:
    """Prepares and unprepares the fleet's pods' claims (module docstring). ``node_of`` gives a node's spec (its
    devices say which drivers run there) and its Node object (for nodeSelector matching)."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock,
        node_of: Callable[[str], tuple[NodeSpec, Mapping[str, Any]]],
        node_client: Callable[[str], Client] | None = None,
        state_dir: Path | None = None,
    ) -> None:
        """A node's kubelet reads its pods' claims with ``node_client(node)`` (its own identity: the Node
        authorizer lets it get the claims of the pods bound to it). ``state_dir``: where the nodes' checkpoints
        live (None: in memory only)."""
        self.client = client
        self.node_client = node_client or (lambda _node: client)
        self.clock = clock
        self.claims = client.resource("resourceclaims")
        self.node_of = node_of
        self.state_dir = state_dir
        self.prepared: dict[str, dict[str, PreparedClaim]] = {}

    def _cache(self, node: str) -> dict[str, PreparedClaim]:
        """The node's cache, read from its checkpoint the first time."""
        cache = self.prepared.get(node)
        if cache is None:
            cache = {}
            if self.state_dir is not None:
                try:
                    cache = checkpoint.load(self.state_dir, node)
                except CheckpointError as exc:
                    log.error("kubelet %s: %s; starting with no prepared claims", node, exc)
            self.prepared[node] = cache
        return cache

    def _sync_to_checkpoint(self, node: str) -> None:
        if self.state_dir is not None:
            checkpoint.store(self.state_dir, node, self.prepared.get(node, {}))

    # --- prepare -----------------------------------------------------------------------------------------------

    async def prepare(self, node: str, pod: Mapping[str, Any]) -> None:
        """``PrepareResources``: raises :class:`DRAError` with upstream's wrapped text."""
        try:
            planned = await self._validate(node, pod)
        except DRAError as exc:
            raise DRAError(f"prepare dynamic resources: {exc}") from None
        cache = self._cache(node)
        uid = str(meta_of(pod).get("uid") or "")
        changed = False
        for key, claim_uid, devices in planned:
            entry = cache.get(key)
            if entry is None:
                entry = cache[key] = PreparedClaim(uid=claim_uid, devices=devices)
            changed |= uid not in entry.pods
            entry.pods.add(uid)
        if changed:
            self._sync_to_checkpoint(node)

    async def _validate(self, node: str, pod: Mapping[str, Any]) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
        """The validation pass: every claim checked (and its driver's prepare simulated) before anything is kept."""
        spec, node_obj = self.node_of(node)
        drivers: dict[str, set[str]] = {}  # the drivers registered on this node -> their devices here
        for group in spec.devices:
            drivers.setdefault(group.driver, set()).update(d.name for d in group.devices_for(node))
        namespace = str(meta_of(pod).get("namespace") or "")
        pod_name, pod_uid = meta_of(pod).get("name"), meta_of(pod).get("uid")
        planned = []
        cache = self._cache(node)
        for pod_claim in _pod_claims(pod):
            try:
                name, must_check_owner = claim_name(pod, pod_claim)
            except ClaimNameError as exc:
                raise DRAError(str(exc)) from None
            if name is None:
                continue
            try:
                claim = await self.node_client(node).get(self.claims, name, namespace=namespace)
            except APIStatusError as exc:
                raise DRAError(f"fetch ResourceClaim {name}: {exc.message}") from None
            if must_check_owner and (err := is_for_pod(pod, claim)) is not None:
                raise DRAError(err)
            claim_uid = str(meta_of(claim).get("uid") or "")
            if not is_reserved_for_pod(pod, claim):
                raise DRAError(f"pod {pod_name} ({pod_uid}) is not allowed to use ResourceClaim {name} ({claim_uid})")
            if status_of(claim).get("allocation") is None:
                raise DRAError(f"ResourceClaim {name}: not allocated")
            results = _results(claim)
            for driver in dict.fromkeys(str(r.get("driver") or "") for r in results):
                if driver not in drivers:
                    raise DRAError(f"DRA driver {driver} is not registered")
            key = f"{namespace}/{name}"
            known = cache.get(key)
            if known is not None and known.uid != claim_uid:
                raise DRAError(
                    f"old ResourceClaim with same name {name} and different UID {known.uid} still exists "
                    "(previous pod force-deleted?!)"
                )
            devices = []
            for result in results:
                driver = str(result.get("driver") or "")
                problem = self._driver_refuses(node, node_obj, claim, result, drivers[driver])
                if problem:
                    raise DRAError(f"NodePrepareResources failed for ResourceClaim {name}: {problem}")
                devices.append((driver, str(result.get("pool") or ""), str(result.get("device") or "")))
            planned.append((key, claim_uid, devices))
        return planned

    @staticmethod
    def _driver_refuses(
        node: str, node_obj: Mapping[str, Any], claim: Mapping[str, Any], result: Mapping[str, Any], own: set[str]
    ) -> str:
        """The simulated driver's NodePrepareResources check for one result ("" = prepared)."""
        selector = (status_of(claim).get("allocation") or {}).get("nodeSelector")
        if isinstance(selector, Mapping) and not node_selector_matches(selector, node_obj):
            return f"allocation is for another node: its nodeSelector does not match node {node}"
        pool, device = str(result.get("pool") or ""), str(result.get("device") or "")
        if pool != node or device not in own:
            return f"device {pool}/{device} of driver {result.get('driver')} is not on node {node}"
        return ""

    async def wait_for_prepare(
        self, node: str, pod: Callable[[], Mapping[str, Any]], report: Callable[[str], None]
    ) -> None:
        """Prepare, or report the failure (the event's message) and try again after :data:`RESYNC_INTERVAL`;
        returns once prepared. Cancelled with the pod's task when the pod is deleted."""
        while True:
            try:
                await self.prepare(node, pod())
                return
            except DRAError as exc:
                report(f"Failed to prepare dynamic resources: {exc}")
            await self.clock.sleep(RESYNC_INTERVAL)

    # --- unprepare ---------------------------------------------------------------------------------------------

    def unprepare(self, node: str, pod: Mapping[str, Any]) -> None:
        """``UnprepareResources``: drop the pod from its claims; a claim no pod uses any more is unprepared."""
        cache = self._cache(node)
        if not cache:
            return
        uid = str(meta_of(pod).get("uid") or "")
        namespace = str(meta_of(pod).get("namespace") or "")
        changed = False
        for pod_claim in _pod_claims(pod):
            try:
                name, _ = claim_name(pod, pod_claim)
            except ClaimNameError:
                continue
            entry = cache.get(f"{namespace}/{name}") if name is not None else None
            if entry is None or uid not in entry.pods:
                continue
            changed = True
            entry.pods.discard(uid)
            if not entry.pods:
                del cache[f"{namespace}/{name}"]
                log.debug("kubelet %s: unprepared claim %s/%s", node, namespace, name)
        if changed:
            self._sync_to_checkpoint(node)

    def reconcile(self, node: str, active: set[str]) -> None:
        """Upstream's reconcile loop: drop the references of pods not in ``active`` (the uids of the pods running
        or starting on the node) and unprepare the claims no active pod uses. Run when the fleet starts."""
        cache = self._cache(node)
        changed = False
        for key in list(cache):
            entry = cache[key]
            gone = entry.pods - active
            if gone:
                changed = True
                entry.pods -= gone
                if not entry.pods:
                    del cache[key]
                    log.debug("kubelet %s: unprepared claim %s of pods gone while down", node, key)
        if changed:
            self._sync_to_checkpoint(node)

    def prepared_devices(self, node: str) -> dict[str, list[tuple[str, str, str]]]:
        """Claim ``namespace/name`` -> its prepared (driver, pool, device) on ``node`` (tests, simulations)."""
        return {key: list(entry.devices) for key, entry in self._cache(node).items()}
