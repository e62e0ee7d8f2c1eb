"""Deleting the nodes scale-down chose (cluster-autoscaler's core/scaledown/actuation).

Per node, as its own task so the loop goes on (upstream deletes asynchronously too):

1. taint ``ToBeDeletedByClusterAutoscaler=<unix seconds>:NoSchedule`` (the scheduler stops placing pods there);
   event ``ScaleDown`` "marked the node as toBeDeleted/unschedulable" on the node;
2. drain: each pod to evict gets event ``ScaleDown`` "deleting pod for node scale down" and is evicted through
   the Eviction API with grace ``min(terminationGracePeriodSeconds, max-graceful-termination-sec)``; a refusal
   (429: a PodDisruptionBudget) is retried every 10 s until ``max-pod-eviction-time``; then the pods must be gone
   within ``max-graceful-termination-sec`` + 30 s;
3. ``provider.delete_nodes``; the status ConfigMap gets ``ScaleDownEmpty`` "Scale-down: empty node <name>
   removed" or ``ScaleDown`` "Scale-down: node <name> removed with drain".

A failure at any step untaints the node, records ``ScaleDownFailed`` on it and the time (for
``scale-down-delay-after-failure``); success records the time for ``scale-down-delay-after-delete``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kubeplane.api.views import name_of, namespace_of, spec_of
from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import CloudProvider, NodeGroupError
from kubeplane.autoscaler.scaledown import TO_BE_DELETED_TAINT, NodeRemoval, to_be_deleted_taint
from kubeplane.client.clock import Clock
from kubeplane.client.errors import APIStatusError, ConflictError, NotFoundError, TooManyRequestsError
from kubeplane.client.events import EventRecorder
from kubeplane.client.interface import Client

__all__ = ["EVICTION_RETRY", "Actuator"]

log = logging.getLogger(__name__)

EVICTION_RETRY = 10.0
"""Seconds between eviction attempts (upstream EvictionRetryTime)."""
POD_EVICTION_HEADROOM = 30.0
"""Seconds past the grace period the pods get to be gone (upstream PodEvictionHeadroom)."""
_POLL = 5.0


class DrainError(Exception):
    pass


class Actuator:
    """Runs node deletions; ``deleting`` maps node -> group while a deletion runs."""

    def __init__(
        self,
        client: Client,
        *,
        provider: CloudProvider,
        recorder: EventRecorder,
        clock: Clock,
        options: AutoscalerOptions,
    ) -> None:
        self._client, self._provider, self._recorder = client, provider, recorder
        self._clock, self._options = clock, options
        self.deleting: dict[str, str] = {}
        self.last_delete: float | None = None
        self.last_failure: float | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def deleting_per_group(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for group in self.deleting.values():
            out[group] = out.get(group, 0) + 1
        return out

    def start(self, removals: list[NodeRemoval]) -> None:
        for removal in removals:
            self.deleting[removal.node] = removal.group
            task = asyncio.get_running_loop().create_task(self._delete(removal), name=f"scale-down-{removal.node}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Until every deletion started so far has ended."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _status_ref(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self._options.status_config_map_name, "namespace": self._options.namespace},
        }

    async def _delete(self, removal: NodeRemoval) -> None:
        node_ref: Mapping[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": removal.node}}
        try:
            node_ref = await self._taint(removal.node)
            self._recorder.record(node_ref, "Normal", "ScaleDown", "marked the node as toBeDeleted/unschedulable")
            if removal.pods_to_evict:
                await self._drain(removal)
            await self._provider.delete_nodes(removal.group, [removal.node])
            if removal.empty:
                reason, text = "ScaleDownEmpty", f"Scale-down: empty node {removal.node} removed"
            else:
                reason, text = "ScaleDown", f"Scale-down: node {removal.node} removed with drain"
            self._recorder.record(self._status_ref(), "Normal", reason, text)
            self.last_delete = self._clock.now()
        except (APIStatusError, NodeGroupError, DrainError) as exc:
            log.warning("scale-down of %s failed: %s", removal.node, exc)
            self.last_failure = self._clock.now()
            message = (
                "failed to drain the node, aborting ScaleDown"
                if isinstance(exc, DrainError)
                else f"failed to delete the node: {exc}"
            )
            self._recorder.record(node_ref, "Warning", "ScaleDownFailed", message)
            await self._untaint(removal.node)
        finally:
            self.deleting.pop(removal.node, None)

    async def _taint(self, name: str) -> Mapping[str, Any]:
        nodes = self._client.resource("nodes")
        for _ in range(5):
            node = await self._client.get(nodes, name)
            taints = list(spec_of(node).get("taints") or ())
            if any(t.get("key") == TO_BE_DELETED_TAINT for t in taints):
                return node
            taints.append(to_be_deleted_taint(self._clock.now()))
            try:
                return await self._client.update(nodes, {**node, "spec": {**spec_of(node), "taints": taints}})
            except ConflictError:
                continue
        raise DrainError(f"could not taint node {name}")

    async def _untaint(self, name: str) -> None:
        nodes = self._client.resource("nodes")
        for _ in range(5):
            try:
                node = await self._client.get(nodes, name)
                taints = [t for t in spec_of(node).get("taints") or () if t.get("key") != TO_BE_DELETED_TAINT]
                await self._client.update(nodes, {**node, "spec": {**spec_of(node), "taints": taints}})
                return
            except ConflictError:
                continue
            except APIStatusError:
                return

    async def _drain(self, removal: NodeRemoval) -> None:
        results = await asyncio.gather(*(self._evict(pod) for pod in removal.pods_to_evict))
        if not all(results):
            raise DrainError(f"failed to evict pods from node {removal.node}")
        deadline = self._clock.now() + self._options.max_graceful_termination_sec + POD_EVICTION_HEADROOM
        pods = self._client.resource("pods")
        for pod in removal.pods_to_evict:
            while True:
                try:
                    current = await self._client.get(pods, name_of(pod), namespace=namespace_of(pod))
                except NotFoundError:
                    break
                if spec_of(current).get("nodeName") != removal.node:
                    break
                if self._clock.now() >= deadline:
                    raise DrainError(f"pod {namespace_of(pod)}/{name_of(pod)} still on node {removal.node}")
                await self._clock.sleep(_POLL)

    async def _evict(self, pod: Mapping[str, Any]) -> bool:
        self._recorder.record(pod, "Normal", "ScaleDown", "deleting pod for node scale down")
        grace = spec_of(pod).get("terminationGracePeriodSeconds")
        limit = self._options.max_graceful_termination_sec
        grace_s = min(int(grace), limit) if grace is not None else limit
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name_of(pod), "namespace": namespace_of(pod)},
            "deleteOptions": {"gracePeriodSeconds": grace_s},
        }
        pods = self._client.resource("pods")
        retry_until = self._clock.now() + self._options.max_pod_eviction_time
        while True:
            try:
                await self._client.create(
                    pods, body, namespace=namespace_of(pod), subresource="eviction", name=name_of(pod)
                )
                return True
            except NotFoundError:
                return True
            except TooManyRequestsError:
                if self._clock.now() >= retry_until:
                    return False
                await self._clock.sleep(EVICTION_RETRY)
            except APIStatusError as exc:
                log.warning("eviction of %s/%s failed: %s", namespace_of(pod), name_of(pod), exc)
                return False
