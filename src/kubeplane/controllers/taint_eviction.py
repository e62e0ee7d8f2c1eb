"""The taint eviction controller: pods leave nodes whose NoExecute taints they do not tolerate (upstream
``pkg/controller/tainteviction``, v1.37, controller name ``taint-eviction-controller``).

For every pod bound to a node with NoExecute taints (upstream ``processPodOnNode``):

* a taint no toleration matches: the pod is deleted at once;
* every taint tolerated: the pod is deleted after the smallest ``tolerationSeconds`` among the tolerations that
  matched (the first matching toleration per taint, upstream ``GetMatchingTolerations``); a matched toleration
  without ``tolerationSeconds`` tolerates forever unless another matched one is bounded; ``<= 0`` means now;
* once scheduled, a deletion keeps its original start time: later node or pod updates never postpone it.

A scheduled deletion is cancelled (event ``TaintManagerEviction`` "Cancelling deletion of Pod <ns>/<name>") when
the node loses its NoExecute taints, when the pod's tolerations now tolerate forever, or when the pod is gone.
Deleting records ``TaintManagerEviction`` "Marking for deletion Pod <ns>/<name>", patches the pod's
``DisruptionTarget`` condition (reason ``DeletionByTaintManager``) and deletes it gracefully.

Keys: node names (no ``/``) re-evaluate every pod of the node (``handleNodeUpdate``); pod keys
(``namespace/name``) re-evaluate one pod (``handlePodUpdate``). Both only read the listers and change the timer
table without awaiting, so the one-loop scheduling makes them atomic with respect to each other (upstream
shards pods and nodes onto the same worker for the same reason). Timers run on ``ctx.clock``.

Invariant: the timer table holds at most one entry per pod key; an entry whose delay was ``<= 0`` is ``None``
while its deletion runs (upstream's nil worker), so cancelling it removes it without an event.

The pod-condition helper it shares with the node lifecycle and pod GC controllers,
:func:`~kubeplane.controllers.controller_utils.pod_condition_patch`, lives in ``controller_utils``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.pods import with_observed_generation
from kubeplane.api.taints import EFFECT_NO_EXECUTE, toleration_tolerates_taint
from kubeplane.api.views import spec_of
from kubeplane.client.cache import NODE_NAME_INDEX
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj, PatchType
from kubeplane.controllers.base import Controller, ControllerContext, key_of, split_key
from kubeplane.controllers.controller_utils import DISRUPTION_TARGET
from kubeplane.controllers.podutil import pod_condition_patch

__all__ = [
    "TaintEvictionController",
    "get_matching_tolerations",
    "get_min_toleration_time",
]

log = logging.getLogger(__name__)

EVICTION_REASON = "TaintManagerEviction"
DELETE_RETRIES = 5  # upstream ``retries``


# --- pure helpers (shared) --------------------------------------------------------------------------------


def get_matching_tolerations(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> tuple[bool, list[Mapping[str, Any]]]:
    """``(all tolerated, the first toleration matching each taint)`` (upstream ``GetMatchingTolerations``);
    matching itself is :func:`kubeplane.api.taints.toleration_tolerates_taint`."""
    used: list[Mapping[str, Any]] = []
    for taint in taints:
        match = next((t for t in tolerations if toleration_tolerates_taint(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def get_min_toleration_time(tolerations: Sequence[Mapping[str, Any]]) -> float:
    """Seconds until eviction: the smallest ``tolerationSeconds`` (``<= 0`` -> 0), ``-1`` when none is bounded
    (tolerate forever), 0 for no tolerations (upstream ``getMinTolerationTime``)."""
    if not tolerations:
        return 0.0
    bounded = [t["tolerationSeconds"] for t in tolerations if isinstance(t.get("tolerationSeconds"), int)]
    if not bounded:
        return -1.0
    return float(max(min(bounded), 0))


def no_execute_taints(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in spec_of(node).get("taints") or () if t.get("effect") == EFFECT_NO_EXECUTE]


def _pod_ref(key: str) -> Obj:
    namespace, name = split_key(key)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}}


# --- the timed worker queue -------------------------------------------------------------------------------


@dataclass(eq=False)
class _TimedWork:
    """One scheduled deletion; ``timer`` is False for a deletion started at once (upstream's nil worker)."""

    created_at: float
    fire_at: float
    timer: bool
    fired: bool = False
    task: asyncio.Task[None] | None = None


class TaintEvictionController(Controller):
    """See the module docstring."""

    name = "taint-eviction-controller"
    workers = 8  # upstream UpdateWorkerSize

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.recorder = ctx.recorder(self.name)
        pods = ctx.informers.informer_for("pods")
        nodes = ctx.informers.informer_for("nodes")
        self.pod_indexer = pods.indexer
        self.pod_lister = pods.lister()
        self.node_lister = nodes.lister()
        self.pods_res = self.client.resource("pods")
        self.work: dict[str, _TimedWork] = {}  # pod key -> its scheduled (or running) deletion
        self._running: set[asyncio.Task[None]] = set()
        pods.add_event_handler(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        nodes.add_event_handler(on_add=self._node_added, on_update=self._node_updated, on_delete=self.enqueue)

    # --- handlers (upstream PodUpdated / NodeUpdated) ------------------------------------------------------

    def _pod_added(self, pod: Obj) -> None:
        self.enqueue(pod)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        o, n = spec_of(old), spec_of(new)
        if o.get("tolerations") == n.get("tolerations") and o.get("nodeName") == n.get("nodeName"):
            return
        self.enqueue(new)

    def _pod_deleted(self, pod: Obj) -> None:
        self.enqueue(pod)

    def _node_added(self, node: Obj) -> None:
        self.enqueue(node)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self.enqueue(new)

    # --- sync --------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        if "/" in key:
            self._handle_pod(key)
        else:
            self._handle_node(key)

    def _handle_pod(self, key: str) -> None:
        namespace, name = split_key(key)
        pod = self.pod_lister.get(namespace, name)
        if pod is None:
            self._cancel_with_event(key)
            return
        node_name = spec_of(pod).get("nodeName") or ""
        if not node_name:
            return
        node = self.node_lister.get(None, node_name)
        taints = no_execute_taints(node) if node is not None else []
        if not taints:
            return  # the node update that removed them (or the node) cancelled the work
        self._process_pod_on_node(key, pod, taints, self.clock.monotonic())

    def _handle_node(self, node_name: str) -> None:
        node = self.node_lister.get(None, node_name)
        taints = no_execute_taints(node) if node is not None else []
        pods = self.pod_indexer.by_index(NODE_NAME_INDEX, node_name)
        if node is None:
            return  # upstream forgets the node; each pod's deletion event cancels its own work
        if not taints:
            for pod in pods:
                self._cancel_with_event(key_of(pod))
            return
        now = self.clock.monotonic()
        for pod in pods:
            self._process_pod_on_node(key_of(pod), pod, taints, now)

    def _process_pod_on_node(self, key: str, pod: Obj, taints: list[Mapping[str, Any]], now: float) -> None:
        tolerations = spec_of(pod).get("tolerations") or []
        all_tolerated, used = get_matching_tolerations(taints, tolerations)
        if not all_tolerated:
            self._cancel_with_event(key)
            self._add_work(key, now, now)
            return
        min_time = get_min_toleration_time(used)
        if min_time < 0:
            self._cancel_with_event(key)
            return
        start = now
        trigger = start + min_time
        scheduled = self.work.get(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + min_time < trigger:
                return  # keep the earlier schedule
            self._cancel_with_event(key)
        self._add_work(key, start, trigger)

    # --- timers (upstream TimedWorkerQueue) ---------------------------------------------------------------

    def _add_work(self, key: str, created_at: float, fire_at: float) -> None:
        if key in self.work:
            return
        work = _TimedWork(created_at, fire_at, timer=fire_at - created_at > 0)
        work.task = asyncio.ensure_future(self._fire(key, work))
        self._running.add(work.task)
        work.task.add_done_callback(self._running.discard)
        self.work[key] = work

    def _cancel(self, key: str) -> bool:
        """Drop ``key``'s work; True when it was a timer (upstream: only those report a cancellation). A
        deletion already under way finishes."""
        work = self.work.pop(key, None)
        if work is None or not work.timer:
            return False
        if not work.fired and work.task is not None:
            work.task.cancel()
        return True

    def _cancel_with_event(self, key: str) -> None:
        if self._cancel(key):
            self._event(key, f"Cancelling deletion of Pod {key}")

    def _event(self, key: str, message: str) -> None:
        task = asyncio.ensure_future(self.recorder.event(_pod_ref(key), "Normal", EVICTION_REASON, message))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _fire(self, key: str, work: _TimedWork) -> None:
        if work.timer:
            await self.clock.sleep(work.fire_at - self.clock.monotonic())
        work.fired = True
        try:
            self._event(key, f"Marking for deletion Pod {key}")
            await self._delete_with_retries(key)
        finally:
            if self.work.get(key) is work:
                del self.work[key]

    async def _delete_with_retries(self, key: str) -> None:
        namespace, name = split_key(key)
        for attempt in range(DELETE_RETRIES):
            try:
                await self._add_condition_and_delete(namespace, name)
                return
            except NotFoundError:
                return
            except Exception as exc:
                log.info("deleting pod %s failed (attempt %d): %s", key, attempt + 1, exc)
                await asyncio.sleep(0)

    async def _add_condition_and_delete(self, namespace: str, name: str) -> None:
        pod = await self.client.get(self.pods_res, name, namespace=namespace)
        condition = pod_condition_patch(
            pod,
            with_observed_generation(
                {
                    "type": DISRUPTION_TARGET,
                    "status": "True",
                    "reason": "DeletionByTaintManager",
                    "message": "Taint manager: deleting due to NoExecute taint",
                },
                pod,
            ),
            self.clock.now(),
        )
        if condition is not None:
            await self.client.patch(
                self.pods_res,
                name,
                {"status": {"conditions": [condition]}},
                patch_type=PatchType.STRATEGIC,
                namespace=namespace,
                subresource="status",
            )
        await self.client.delete(self.pods_res, name, namespace=namespace)

    async def run(self, workers: int | None = None) -> None:
        try:
            await super().run(workers)
        finally:
            for task in list(self._running):
                task.cancel()
            await asyncio.gather(*self._running, return_exceptions=True)
            self.work.clear()
