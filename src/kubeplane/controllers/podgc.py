"""The pod garbage collector (upstream ``pkg/controller/podgc``, v1.37, controller name ``pod-garbage-collector``).

Every ``gcCheckPeriod`` (20 s, on ``ctx.clock``) one pass over the informers' pods and nodes, in upstream's order:

1. **terminated** (``gcTerminated``, only when ``terminatedPodGCThreshold`` > 0, default 12500): when more pods
   than the threshold are terminated (phase neither Pending, Running nor Unknown), the excess is force-deleted,
   evicted pods (Failed, reason ``Evicted``) first, then oldest ``creationTimestamp`` first, name breaking ties;
2. **terminating on out-of-service nodes** (``gcTerminating``): pods being deleted on a node that is not Ready
   and carries the ``node.kubernetes.io/out-of-service`` taint;
3. **orphaned** (``gcOrphaned``): a pod bound to a node the informer does not know puts that node name in
   quarantine for ``quarantineTime`` (40 s); when it comes out and the node is still absent from the informer
   *and* a GET says NotFound, every pod bound to it gets phase Failed with the ``DisruptionTarget`` condition
   (reason ``DeletionByPodGC``, "PodGC: node no longer exists") and is force-deleted;
4. **unscheduled terminating** (``gcUnscheduledTerminating``): pods being deleted that were never bound.

"Force-deleted" is upstream's ``markFailedAndDeletePod``: a pod not yet Succeeded/Failed is first patched to
Failed through the status subresource (no kubelet will ever do it), then deleted with grace period 0.

The quarantine is the base class's delaying work queue keyed by node name: ``sync(node)`` is the end of a
quarantine (upstream drains its node queue at the start of the next pass instead; the pods go at most one
period sooner here). Everything else is recomputed from the listers on each pass, so a restart loses nothing
but quarantines under way, which the next pass starts again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.meta import parse_time
from kubeplane.api.pods import with_observed_generation
from kubeplane.api.views import (
    NodeView,
    PodView,
    is_being_deleted,
    is_pod_terminal,
    meta_of,
    name_of,
    spec_of,
)
from kubeplane.client.cache import NODE_NAME_INDEX
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj, PatchType
from kubeplane.controllers.base import Controller, ControllerContext
from kubeplane.controllers.controller_utils import DISRUPTION_TARGET
from kubeplane.controllers.podutil import pod_condition_patch

__all__ = ["PodGCController", "is_pod_terminated", "terminated_pods_to_delete"]

log = logging.getLogger(__name__)

TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
DEFAULTS: Mapping[str, float] = {"terminatedPodGCThreshold": 12500, "gcCheckPeriod": 20.0, "quarantineTime": 40.0}
ORPHAN_CONDITION: Mapping[str, str] = {
    "type": DISRUPTION_TARGET,
    "status": "True",
    "reason": "DeletionByPodGC",
    "message": "PodGC: node no longer exists",
}


def is_pod_terminated(pod: Mapping[str, Any]) -> bool:
    """Upstream ``isPodTerminated``: any phase but Pending, Running and Unknown (so also a missing phase)."""
    return PodView(pod).phase not in ("Pending", "Running", "Unknown")


def _is_evicted(pod: Mapping[str, Any]) -> bool:
    """Upstream ``eviction.PodIsEvicted``: Failed with reason ``Evicted`` (the kubelet's node-pressure kind)."""
    view = PodView(pod)
    return view.phase == "Failed" and view.reason == "Evicted"


def _created(pod: Mapping[str, Any]) -> float:
    value = meta_of(pod).get("creationTimestamp")
    try:
        return parse_time(value).timestamp() if isinstance(value, str) else 0.0
    except ValueError:
        return 0.0


def _gc_order(pod: Mapping[str, Any]) -> tuple[bool, float, str]:
    """Upstream ``byEvictionAndCreationTimestamp``: evicted first, then oldest, then by name."""
    return (not _is_evicted(pod), _created(pod), name_of(pod))


def terminated_pods_to_delete(pods: Sequence[Obj], threshold: int) -> list[Obj]:
    """The terminated pods ``gcTerminated`` deletes: the excess over ``threshold``, in :func:`_gc_order`."""
    terminated = [p for p in pods if is_pod_terminated(p)]
    excess = len(terminated) - threshold
    if threshold <= 0 or excess <= 0:
        return []
    return sorted(terminated, key=_gc_order)[:excess]


class PodGCController(Controller):
    """See the module docstring."""

    name = "pod-garbage-collector"
    workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        opts = {**DEFAULTS, **self.options}
        self.threshold = int(opts["terminatedPodGCThreshold"])
        self.check_period = float(opts["gcCheckPeriod"])
        self.quarantine = float(opts["quarantineTime"])
        pods = ctx.informers.informer_for("pods")
        nodes = ctx.informers.informer_for("nodes")
        self.pod_indexer = pods.indexer
        self.pod_lister = pods.lister()
        self.node_lister = nodes.lister()
        self.pods_res = self.client.resource("pods")
        self.nodes_res = self.client.resource("nodes")

    async def run(self, workers: int | None = None) -> None:
        loop = asyncio.ensure_future(self._gc_loop())
        try:
            await super().run(workers)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)

    async def _gc_loop(self) -> None:
        while True:
            try:
                await self.gc()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("pod GC pass failed")
            await self.clock.sleep(self.check_period)

    async def gc(self) -> None:
        """One pass (upstream ``gc``); see the module docstring."""
        pods = self.pod_lister.list()
        if self.threshold > 0:
            await self._delete_all(terminated_pods_to_delete(pods, self.threshold))
        await self._gc_terminating(pods)
        nodes = {n["metadata"]["name"] for n in self.node_lister.list()}
        for pod in pods:
            node_name = spec_of(pod).get("nodeName")
            if node_name and node_name not in nodes:
                self.enqueue_after(str(node_name), self.quarantine)
        await self._delete_all([p for p in pods if is_being_deleted(p) and not spec_of(p).get("nodeName")])

    async def _gc_terminating(self, pods: Sequence[Obj]) -> None:
        doomed: list[Obj] = []
        for pod in pods:
            if not is_being_deleted(pod):
                continue
            node = self.node_lister.get(None, str(spec_of(pod).get("nodeName") or ""))
            if node is None:
                continue
            taints = spec_of(node).get("taints") or ()
            if not NodeView(node).is_ready and any(t.get("key") == TAINT_OUT_OF_SERVICE for t in taints):
                doomed.append(pod)
        await self._delete_all(sorted(doomed, key=_gc_order))

    async def sync(self, key: str) -> None:
        """The quarantine of node ``key`` ended: if it is still gone, its pods are orphans."""
        if self.node_lister.get(None, key) is not None:
            return
        try:
            await self.client.get(self.nodes_res, key)
            return
        except NotFoundError:
            pass
        for pod in self.pod_indexer.by_index(NODE_NAME_INDEX, key):
            log.info("found orphaned pod %s on node %s; deleting", meta_of(pod).get("name"), key)
            try:
                await self.mark_failed_and_delete(pod, ORPHAN_CONDITION)
            except NotFoundError:
                continue

    async def _delete_all(self, pods: Sequence[Obj]) -> None:
        results = await asyncio.gather(*(self.mark_failed_and_delete(p) for p in pods), return_exceptions=True)
        for pod, result in zip(pods, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, NotFoundError):
                log.info("pod GC failed to delete %s: %s", meta_of(pod).get("name"), result)

    async def mark_failed_and_delete(self, pod: Obj, condition: Mapping[str, Any] | None = None) -> None:
        """Upstream ``markFailedAndDeletePodWithCondition``: phase Failed (plus ``condition``) unless already
        terminal, then delete with grace period 0."""
        meta = pod["metadata"]
        if not is_pod_terminal(pod):
            status: Obj = {"phase": "Failed"}
            if condition is not None:
                patch = pod_condition_patch(pod, with_observed_generation(condition, pod), self.clock.now())
                if patch is not None:
                    status["conditions"] = [patch]
            await self.client.patch(
                self.pods_res,
                meta["name"],
                {"status": status},
                patch_type=PatchType.STRATEGIC,
                namespace=meta.get("namespace"),
                subresource="status",
            )
        await self.client.delete(self.pods_res, meta["name"], namespace=meta.get("namespace"), grace_period_seconds=0)
