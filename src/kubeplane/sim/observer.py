"""What a simulation run sees: the pods, nodes and events its informers deliver, kept as records, counters and
one ordered event log (hashed: the determinism check).

The observer is fed by the runner's informers and never writes to the API. Per pod it keeps a
:class:`PodRecord` (created, bound, Running, finished, node, phase, reason, requests) and the pod's end
(:mod:`kubeplane.sim.outcomes`), decided at its end moment. Per node it keeps the last object and how many
non-terminal bound pods it holds, so "nodes in use" (nodes with at least one non-terminal pod bound: Pending on
the node, Running, or terminating) is known after every change, and its peak is exact rather than sampled.

Invariants: the event log's lines (and so ``event_log_hash``) are exactly those of the runner before pod ends
and nodes in use were added: new bookkeeping never changes the hash of a run. A pod counts toward its node's use
from the change that shows it bound until it is seen terminal or gone.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.pods import pod_requests
from kubeplane.api.views import spec_of, status_of

from . import outcomes
from .clock import RealTimeClock, VirtualClock
from .gpu import GpuMetrics
from .scaling import REASONS as SCALING_REASONS
from .scaling import ScalingEvent
from .workloads import pod_group

Obj = Mapping[str, Any]


@dataclass(slots=True)
class PodRecord:
    """What the collector keeps of one pod for the whole run (one per pod ever created, so kept small: slotted,
    and pods asking the same resources share one read-only ``requests`` mapping)."""

    namespace: str
    name: str
    created: float
    scheduled: float | None = None
    running: float | None = None
    finished: float | None = None
    node: str = ""
    phase: str = "Pending"
    reason: str = ""
    requests: dict[str, int] = field(default_factory=dict)
    end: str = ""
    """One of :data:`outcomes.ENDED` once the pod ended; empty while it has not."""
    group: str = ""
    """The PodGroup the pod belongs to (``spec.schedulingGroup.podGroupName``; :mod:`.workloads`' gangs)."""

    def final_end(self) -> str:
        """The pod's end, or where it stands (running / pending) if it has not ended."""
        return self.end or outcomes.classify(None, phase=self.phase)


def event_digest(event: Obj) -> dict[str, Any]:
    """What the observer reads of an Event (:meth:`Observer.event`, :meth:`ScalingEvent.of`) and what its
    informer needs to cache it (name, namespace, resourceVersion): the transform of the runner's Event informer.
    Events are never deleted within the hour (``--event-ttl``), so that informer's cache of full Events would be
    the largest thing the run keeps; a digest is a tenth of one. The message and the involved object are
    read only for the reasons the observer looks into (:data:`_READ_IN_FULL`), so only those digests keep them."""
    meta = event["metadata"]
    reason = event.get("reason")
    digest: dict[str, Any] = {
        "metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion") if k in meta},
        "reason": reason,
    }
    if reason in _READ_IN_FULL:
        digest["message"] = event.get("message")
        involved = event.get("involvedObject")
        if involved is not None:
            digest["involvedObject"] = {k: involved[k] for k in ("kind", "namespace", "name") if k in involved}
    return digest


_READ_IN_FULL = SCALING_REASONS | {"TaintManagerEviction"}


def ready(node: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status_of(node).get("conditions") or [])


class Observer:
    """Keeps the pod records, the node view, counters and the ordered event log from the informers."""

    def __init__(self, clock: VirtualClock | RealTimeClock) -> None:
        self.clock = clock
        self.pods: dict[str, PodRecord] = {}
        self.nodes: dict[str, Obj] = {}
        self.log = hashlib.sha256()
        self.log_lines = 0
        self.evictions = 0
        """Pods the kubelet evicted (status reason ``Evicted`` on a pod that ran)."""
        self.events: dict[str, int] = {}
        self.gpu: GpuMetrics | None = None
        self.ended: Counter[str] = Counter()
        """Pods per end (:data:`outcomes.ENDED`), as they end: the cumulative series."""
        self.api_evicted: set[str] = set()
        """Pods the simulation evicted through the Eviction API (the runner adds a key before its call)."""
        self._holding: dict[str, str] = {}  # pod key -> node, for non-terminal bound pods
        self._in_use: Counter[str] = Counter()  # node -> such pods
        self.nodes_in_use_peak = 0
        self.scaling: list[ScalingEvent] = []
        self._requests: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}  # shared PodRecord.requests
        """The cluster-autoscaler's Events (:mod:`.scaling`), in the order seen; kept out of the event log."""

    @property
    def nodes_in_use(self) -> int:
        return len(self._in_use)

    def _note(self, *fields: Any) -> None:
        self.log.update(json.dumps([round(self.clock.monotonic(), 6), *fields]).encode() + b"\n")
        self.log_lines += 1

    def _hold(self, key: str, node: str) -> None:
        """``key`` holds ``node`` (``""``: nothing) from now on."""
        held = self._holding.get(key, "")
        if held == node:
            return
        if held:
            del self._holding[key]
            self._in_use[held] -= 1
            if not self._in_use[held]:
                del self._in_use[held]
        if node:
            self._holding[key] = node
            self._in_use[node] += 1
            self.nodes_in_use_peak = max(self.nodes_in_use_peak, len(self._in_use))

    def _end(self, key: str, record: PodRecord, pod: Obj, *, by_deletion: bool) -> None:
        if record.end:
            return
        evidence = outcomes.EndEvidence.of(pod, by_deletion=by_deletion, ran=record.running is not None)
        record.end = outcomes.classify(evidence, phase=record.phase, api_evicted=key in self.api_evicted)
        self.ended[record.end] += 1

    def pod(self, _old: Obj | None, pod: Obj) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        key = f"{meta.get('namespace')}/{meta['name']}"
        now = self.clock.monotonic()
        record = self.pods.get(key)
        if record is None:
            record = self.pods[key] = PodRecord(str(meta.get("namespace")), str(meta["name"]), now)
            requests = pod_requests(pod)
            record.requests = self._requests.setdefault(tuple(sorted(requests.items())), requests)
            record.group = pod_group(pod)
        node = str(spec.get("nodeName") or "")
        phase = str(status.get("phase") or "Pending")
        if node and record.scheduled is None:
            record.scheduled = now
        if phase == "Running" and record.running is None:
            record.running = now
        if phase in outcomes.TERMINAL and record.finished is None:
            record.finished = now
            if status.get("reason") == outcomes.KUBELET_EVICTED and record.running is not None:
                self.evictions += 1
        record.node, record.phase, record.reason = node, phase, str(status.get("reason") or "")
        deleting = bool(meta.get("deletionTimestamp"))
        if phase in outcomes.TERMINAL or deleting:
            self._end(key, record, pod, by_deletion=phase not in outcomes.TERMINAL)
        self._hold(key, node if phase not in outcomes.TERMINAL else "")
        self._note("pod", key, node, phase, deleting)
        if self.gpu is not None:
            self.gpu.pod(pod, now)

    def pod_deleted(self, pod: Obj) -> None:
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        record = self.pods.get(key)
        if record is not None:
            self._end(key, record, pod, by_deletion=True)
            if record.finished is None:
                record.finished = self.clock.monotonic()
                record.phase = record.phase if record.phase in outcomes.TERMINAL else "Deleted"
        self._hold(key, "")
        self._note("pod-deleted", key)
        if self.gpu is not None:
            self.gpu.pod_deleted(pod)

    def node(self, _old: Obj | None, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        self.nodes[name] = node
        spec = spec_of(node)
        taints = sorted(str(t.get("key")) for t in spec.get("taints") or [])
        self._note("node", name, ready(node), taints, bool(spec.get("unschedulable")))
        if self.gpu is not None:
            self.gpu.node(node)

    def node_deleted(self, node: Obj) -> None:
        self.nodes.pop(str(node["metadata"]["name"]), None)
        self._note("node-deleted", node["metadata"]["name"])
        if self.gpu is not None:
            self.gpu.node_deleted(node)

    def event(self, _old: Obj | None, event: Obj) -> None:
        if _old is None:
            reason = str(event.get("reason") or "")
            if reason == "TaintManagerEviction":
                if not str(event.get("message", "")).startswith("Marking for"):
                    return  # "Cancelling deletion" shares the reason
                involved = event.get("involvedObject") or {}
                record = self.pods.get(f"{involved.get('namespace')}/{involved.get('name')}")
                if record is not None and record.phase in outcomes.TERMINAL:
                    return  # a finished pod marked for deletion was not running: not an eviction
            self.events[reason] = self.events.get(reason, 0) + 1
            if reason in SCALING_REASONS:
                self.scaling.append(ScalingEvent.of(event, self.clock.monotonic()))
