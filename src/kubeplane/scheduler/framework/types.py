"""The scheduler's views of pods and nodes: Resource, PodInfo, QueuedPodInfo, NodeInfo, HostPortInfo.

Mirrors ``pkg/scheduler/framework/types.go``. Invariants:

* A :class:`PodInfo` is built once per pod *version* (resourceVersion) and never mutated: everything a plugin
  needs repeatedly (requests, non-zero requests, host ports, compiled tolerations and node affinity) is computed
  on construction or lazily once (DESIGN decision 1).
* A :class:`NodeInfo` aggregates the pods on one node: ``requested`` is the sum of their requests,
  ``non_zero_requested`` the same with scoring defaults (100m / 200Mi), ``used_ports`` their host ports.
  ``generation`` increases on every change so snapshots copy only what changed.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api import nodeaffinity
from kubeplane.api.pods import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    pod_nonzero_requests,
    pod_requests,
)
from kubeplane.api.quantity import Quantity
from kubeplane.api.taints import CompiledTolerations, Taint
from kubeplane.api.views import EMPTY, is_being_deleted, meta_of, spec_of, status_of

__all__ = [
    "HostPortInfo",
    "ImageStateSummary",
    "NodeInfo",
    "PodInfo",
    "QueuedPodInfo",
    "Resource",
    "is_scalar_resource_name",
    "next_generation",
]

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing counter (upstream ``nextGeneration``), shared by every NodeInfo."""
    return next(_generation)


def is_scalar_resource_name(name: str) -> bool:
    """Extended (``example.com/foo``), hugepages-*, attachable-volumes-* or prefixed native resources."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


class Resource:
    """Amounts of compute resources: cpu in millicores, memory/storage in bytes, scalars in whole units."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_natural(cls, amounts: Mapping[str, int]) -> Resource:
        """From ``{name: natural units}`` (as :func:`kubeplane.api.pods.pod_requests` returns)."""
        r = cls()
        r.add_natural(amounts)
        return r

    @classmethod
    def from_resource_list(cls, resources: Mapping[str, Any] | None) -> Resource:
        """From a wire ResourceList (``{"cpu": "4", "memory": "8Gi", ...}``), e.g. node allocatable."""
        r = cls()
        for name, text in (resources or {}).items():
            q = Quantity.parse(text)
            r.add_one(name, q.milli_value() if name == "cpu" else q.value())
        return r

    def add_one(self, name: str, amount: int) -> None:
        if name == "cpu":
            self.milli_cpu += amount
        elif name == "memory":
            self.memory += amount
        elif name == "ephemeral-storage":
            self.ephemeral_storage += amount
        elif name == "pods":
            self.allowed_pod_number += amount
        elif is_scalar_resource_name(name):
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def add_natural(self, amounts: Mapping[str, int]) -> None:
        for name, amount in amounts.items():
            self.add_one(name, amount)

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - amount

    def get(self, name: str) -> int:
        """The amount of one resource by its API name."""
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        if name == "ephemeral-storage":
            return self.ephemeral_storage
        if name == "pods":
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number, dict(self.scalar))

    def is_zero(self) -> bool:
        return not (self.milli_cpu or self.memory or self.ephemeral_storage or any(self.scalar.values()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v} == {k: v for k, v in other.scalar.items() if v}
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, ephemeral_storage={self.ephemeral_storage},"
            f" allowed_pod_number={self.allowed_pod_number}, scalar={self.scalar})"
        )


@dataclass(frozen=True, slots=True)
class HostPort:
    """One requested host port: ``(ip, protocol, port)`` with ip defaulted to 0.0.0.0 and protocol to TCP."""

    ip: str
    protocol: str
    port: int


def _host_ports(pod: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """Host ports of the pod's containers and restartable init containers (upstream ``GetContainerPorts``)."""
    spec = spec_of(pod)
    out: list[HostPort] = []
    containers = list(spec.get("containers") or ())
    containers += [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for container in containers:
        for port in container.get("ports") or ():
            host_port = int(port.get("hostPort") or 0)
            if host_port <= 0:
                continue
            out.append(HostPort(port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", host_port))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _nanos(text: str | int | float) -> int:
    return Quantity.parse(text).nanos


_MILLI_NANOS = 1_000_000
_UNIT_NANOS = 1_000_000_000


def _natural(name: str, nanos: int) -> int:
    divisor = _MILLI_NANOS if name == "cpu" else _UNIT_NANOS
    magnitude = -(-abs(nanos) // divisor)
    return -magnitude if nanos < 0 else magnitude


def _simple_requests(pod: Mapping[str, Any]) -> tuple[Resource, int, int] | None:
    """Requests and non-zero (cpu, memory) of a pod with only regular containers, or None.

    The common case the scheduler meets thousands of times per second: no init containers, overhead,
    pod-level resources or resize status, so the effective requests are the plain sum over containers and
    :func:`kubeplane.api.pods.pod_requests` (the general formula, ~50 µs) is not needed. Sums are exact (in
    nanos, converted once), so the result equals the general formula's; a test holds them together.
    """
    spec = spec_of(pod)
    if spec.get("initContainers") or spec.get("overhead") or spec.get("resources"):
        return None
    status = status_of(pod)
    if status.get("resize"):
        return None
    for cs in status.get("containerStatuses") or ():
        if "allocatedResources" in cs or "resources" in cs:
            return None
    sums: dict[str, int] = {}
    nz_cpu = nz_mem = 0
    for container in spec.get("containers") or ():
        # a container has no view: read inline, api.views.section() costs ~12x here (per container, per pod)
        requests = (container.get("resources") or EMPTY).get("requests") or EMPTY
        for name, text in requests.items():
            sums[name] = sums.get(name, 0) + _nanos(text)
        nz_cpu += _nanos(requests["cpu"]) if "cpu" in requests else DEFAULT_MILLI_CPU_REQUEST * _MILLI_NANOS
        nz_mem += _nanos(requests["memory"]) if "memory" in requests else DEFAULT_MEMORY_REQUEST * _UNIT_NANOS
    resource = Resource()
    for name, nanos in sums.items():
        resource.add_one(name, _natural(name, nanos))
    return resource, _natural("cpu", nz_cpu), _natural("memory", nz_mem)


class PodInfo:
    """A pod plus what the scheduler derives from it, computed once per pod version.

    ``pod`` is the wire dict and is never mutated. Cheap fields are set eagerly; parsed affinity and
    tolerations are ``functools.cached_property`` so pods that never need them pay nothing.
    """

    def __init__(self, pod: Mapping[str, Any]) -> None:
        self.pod = pod
        meta = meta_of(pod)
        spec = spec_of(pod)
        self.name: str = meta.get("name") or ""
        self.namespace: str = meta.get("namespace") or ""
        self.uid: str = meta.get("uid") or self.key_fallback()
        self.key = f"{self.namespace}/{self.name}"
        self.labels: Mapping[str, str] = meta.get("labels") or {}
        self.resource_version: str = meta.get("resourceVersion") or ""
        self.node_name: str = spec.get("nodeName") or ""
        self.scheduler_name: str = spec.get("schedulerName") or "default-scheduler"
        self.priority: int = int(spec.get("priority") or 0)

    @functools.cached_property
    def _simple(self) -> tuple[Resource, int, int] | None:
        return _simple_requests(self.pod)

    @functools.cached_property
    def requests(self) -> Resource:
        """Effective requests (sidecars, overhead, pod-level resources; status resources for running pods)."""
        simple = self._simple
        if simple is not None:
            return simple[0]
        return Resource.from_natural(pod_requests(self.pod, use_status_resources=True))

    @functools.cached_property
    def _non_zero(self) -> tuple[int, int]:
        simple = self._simple
        if simple is not None:
            return simple[1], simple[2]
        return pod_nonzero_requests(self.pod, use_status_resources=True)

    @property
    def non_zero_cpu(self) -> int:
        return self._non_zero[0]

    @property
    def non_zero_memory(self) -> int:
        return self._non_zero[1]

    @functools.cached_property
    def host_ports(self) -> tuple[HostPort, ...]:
        return _host_ports(self.pod)

    @functools.cached_property
    def pvc_ref_keys(self) -> tuple[str, ...]:
        """``namespace/claimName`` of each ``persistentVolumeClaim`` volume, repeats kept (upstream counts a
        claim once per volume that names it in ``NodeInfo.PVCRefCounts``)."""
        ns = self.namespace
        return tuple(
            f"{ns}/{claim.get('claimName') or ''}"
            for volume in self.spec.get("volumes") or ()
            if (claim := volume.get("persistentVolumeClaim")) is not None
        )

    def with_node_name(self, node_name: str) -> PodInfo:
        """A PodInfo for a copy of the pod with ``spec.nodeName`` set (the assumed pod), reusing what was
        computed: requests, affinity and tolerations do not depend on the node name."""
        other = PodInfo.__new__(PodInfo)
        other.__dict__.update(self.__dict__)
        other.pod = {**self.pod, "spec": {**spec_of(self.pod), "nodeName": node_name}}
        other.node_name = node_name
        return other

    def key_fallback(self) -> str:
        meta = meta_of(self.pod)
        return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"

    # spec and status read inline, as api.views.spec_of/status_of do, without the extra call: preemption asks
    # pod.status for every victim on every candidate node (~300k times in bench/scheduler_perf PreemptionBasic).

    @property
    def spec(self) -> Mapping[str, Any]:
        spec: Mapping[str, Any] = self.pod.get("spec") or EMPTY
        return spec

    @property
    def status(self) -> Mapping[str, Any]:
        status: Mapping[str, Any] = self.pod.get("status") or EMPTY
        return status

    @functools.cached_property
    def tolerations(self) -> CompiledTolerations:
        return CompiledTolerations(self.spec.get("tolerations") or ())

    @functools.cached_property
    def required_node_affinity(self) -> nodeaffinity.RequiredNodeAffinity:
        """``spec.nodeSelector`` AND required node affinity, bad terms kept as lazy errors."""
        return nodeaffinity.get_required_node_affinity(self.pod)

    @functools.cached_property
    def affinity(self) -> Mapping[str, Any]:
        affinity: Mapping[str, Any] = self.spec.get("affinity") or EMPTY
        return affinity

    @functools.cached_property
    def pod_affinity(self) -> Mapping[str, Any]:
        """``spec.affinity.podAffinity``; empty when absent."""
        pod_affinity: Mapping[str, Any] = self.affinity.get("podAffinity") or EMPTY
        return pod_affinity

    @functools.cached_property
    def pod_anti_affinity(self) -> Mapping[str, Any]:
        """``spec.affinity.podAntiAffinity``; empty when absent."""
        anti: Mapping[str, Any] = self.affinity.get("podAntiAffinity") or EMPTY
        return anti

    # The two below read ``affinity`` directly, not through the cached properties above: every pod added to a
    # NodeInfo asks them, and each first access of a cached_property costs about 0.5 µs.

    @functools.cached_property
    def has_affinity(self) -> bool:
        """Has required or preferred pod affinity or anti-affinity (upstream ``podWithAffinity``)."""
        a = self.affinity
        return bool(a.get("podAffinity") or a.get("podAntiAffinity"))

    @functools.cached_property
    def has_required_anti_affinity(self) -> bool:
        anti: Mapping[str, Any] = self.affinity.get("podAntiAffinity") or EMPTY
        return bool(anti.get("requiredDuringSchedulingIgnoredDuringExecution"))

    @functools.cached_property
    def is_terminating(self) -> bool:
        return is_being_deleted(self.pod)

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


@dataclass(eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue with its queueing history (upstream ``QueuedPodInfo``).

    ``timestamp`` is when it was last added to the queue; ``initial_attempt_timestamp`` when it was first
    popped; ``attempts`` counts scheduling attempts; ``unschedulable_plugins``/``pending_plugins`` record which
    plugins rejected it last, so only events those plugins registered move it back to activeQ.
    """

    pod_info: PodInfo
    timestamp: float = 0.0
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""
    consecutive_errors: int = 0
    backoff_expiration: float | None = None
    """The backoff queue's cached expiry (upstream ``BackoffExpiration``): set when first computed, cleared when the
    pod is popped or put back after an attempt (attempts and timestamp are then about to change)."""

    @property
    def pod(self) -> Mapping[str, Any]:
        return self.pod_info.pod

    @property
    def key(self) -> str:
        return self.pod_info.key


@dataclass(slots=True)
class ImageStateSummary:
    """An image on a node: its size and on how many nodes of the cluster it is present."""

    size: int
    num_nodes: int


_WILDCARD_IP = "0.0.0.0"


class HostPortInfo:
    """Host ports in use on a node: ``{ip: {(protocol, port)}}`` with 0.0.0.0 conflicting with every IP."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        self._ports: dict[str, set[tuple[str, int]]] = {}

    def add(self, port: HostPort) -> None:
        self._ports.setdefault(port.ip, set()).add((port.protocol, port.port))

    def remove(self, port: HostPort) -> None:
        entries = self._ports.get(port.ip)
        if entries is not None:
            entries.discard((port.protocol, port.port))
            if not entries:
                del self._ports[port.ip]

    def check_conflict(self, port: HostPort) -> bool:
        """True when ``port`` clashes with a used one (upstream ``HostPortInfo.CheckConflict``)."""
        pp = (port.protocol, port.port)
        if port.ip == _WILDCARD_IP:
            return any(pp in entries for entries in self._ports.values())
        for ip in (_WILDCARD_IP, port.ip):
            entries = self._ports.get(ip)
            if entries is not None and pp in entries:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(v) for v in self._ports.values())

    def clone(self) -> HostPortInfo:
        other = HostPortInfo()
        other._ports = {ip: set(entries) for ip, entries in self._ports.items()}
        return other


class NodeInfo:
    """A node and the pods assigned (or assumed) to it, with their aggregated requests.

    ``node`` may be None while pods reference a node the cache has not seen yet (upstream keeps such
    "ghost" NodeInfos until the node arrives or its pods leave). ``taints`` and ``labels`` are parsed once
    per node version in :meth:`set_node`.
    """

    def __init__(self, node: Mapping[str, Any] | None = None, pods: Iterable[PodInfo] = ()) -> None:
        self.node: Mapping[str, Any] | None = None
        self.name = ""
        self.labels: Mapping[str, str] = {}
        self.taints: tuple[Taint, ...] = ()
        self.unschedulable = False
        self.allocatable = Resource()
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        """``namespace/claim`` -> how many volumes of this node's pods name the claim (upstream
        ``NodeInfo.PVCRefCounts``); a key is present only while its count is positive."""
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)
        for pod in pods:
            self.add_pod(pod)

    def set_node(self, node: Mapping[str, Any]) -> None:
        meta = meta_of(node)
        spec = spec_of(node)
        self.node = node
        self.name = meta.get("name") or ""
        self.labels = meta.get("labels") or {}
        self.taints = tuple(Taint.from_dict(t) for t in spec.get("taints") or ())
        self.unschedulable = bool(spec.get("unschedulable"))
        self.allocatable = Resource.from_resource_list(status_of(node).get("allocatable"))
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.generation = next_generation()

    @property
    def images(self) -> list[Mapping[str, Any]]:
        if self.node is None:
            return []
        images: list[Mapping[str, Any]] = status_of(self.node).get("images") or []
        return images

    def add_pod(self, pod: PodInfo) -> None:
        self.pods.append(pod)
        if pod.has_affinity:
            self.pods_with_affinity.append(pod)
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pod)
        self._update(pod, 1)

    def remove_pod(self, pod: PodInfo) -> bool:
        """Remove the pod with ``pod.uid``; False when it is not on this node."""
        for i, existing in enumerate(self.pods):
            if existing.uid == pod.uid:
                del self.pods[i]
                self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != pod.uid]
                self.pods_with_required_anti_affinity = [
                    p for p in self.pods_with_required_anti_affinity if p.uid != pod.uid
                ]
                # Subtract what was added for the stored version, not the caller's (it may differ).
                self._update(existing, -1)
                return True
        return False

    def _update(self, pod: PodInfo, sign: int) -> None:
        if sign > 0:
            self.requested.add(pod.requests)
            for port in pod.host_ports:
                self.used_ports.add(port)
        else:
            self.requested.sub(pod.requests)
            for port in pod.host_ports:
                self.used_ports.remove(port)
        if pod.pvc_ref_keys:
            self._update_pvc_ref_counts(pod.pvc_ref_keys, sign)
        self.non_zero_requested.milli_cpu += sign * pod.non_zero_cpu
        self.non_zero_requested.memory += sign * pod.non_zero_memory
        self.generation = next_generation()

    def _update_pvc_ref_counts(self, keys: tuple[str, ...], sign: int) -> None:
        counts = self.pvc_ref_counts
        for key in keys:
            count = counts.get(key, 0) + sign
            if count > 0:
                counts[key] = count
            else:
                counts.pop(key, None)

    def clone(self) -> NodeInfo:
        """A copy whose pod lists and aggregates can be changed without touching this one.

        ``allocatable`` and ``image_states`` are shared: nothing changes them in place (``set_node`` and the cache
        assign new objects), and preemption clones a node per candidate, so the copy must be cheap.
        """
        other = NodeInfo.__new__(NodeInfo)
        other.node = self.node
        other.name = self.name
        other.labels = self.labels
        other.taints = self.taints
        other.unschedulable = self.unschedulable
        other.allocatable = self.allocatable
        other.pods = list(self.pods)
        other.pods_with_affinity = list(self.pods_with_affinity)
        other.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        other.used_ports = self.used_ports.clone()
        other.requested = self.requested.clone()
        other.non_zero_requested = self.non_zero_requested.clone()
        other.image_states = self.image_states
        other.pvc_ref_counts = dict(self.pvc_ref_counts)
        other.generation = self.generation
        return other

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
