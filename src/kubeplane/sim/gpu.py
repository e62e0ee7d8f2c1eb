"""GPU allocation and fragmentation of a simulated cluster, from the pods and nodes the informers deliver.

The FGD paper's measures (FGD-EXPERIMENT.md §2) applied to the real control plane: the allocated milli-GPU of
bound, unfinished pods; the fragmentation of each GPU node against the target workload M
(:mod:`kubeplane.gpu.frag`); both recorded at every pod arrival (with the arrived milli-GPU, failures included)
and on demand for the sampler. M comes from the scenario's declared workload (:func:`declared_pod_types`), the way
the paper derives it from the trace before replaying it.

DRA GPUs count as GPUs (docs/gpu.md, "DRA GPUs"): a node's devices are its ``nvidia.com/gpu`` devices followed
by the GPUs its ResourceSlices list (:mod:`kubeplane.gpu.dra`); an allocated claim's GPU results occupy their
devices whole, or, shared through consumable capacity, as ``gpu-milli`` shares of an extended-resource GPU do: a
shared device's used milli-GPU is the dominant share of what its claims consume together
(:func:`~kubeplane.gpu.dra.shared_device_milli`: ``10Gi`` of a ``40Gi`` GPU is 250, ``500m`` of ``cores: 1`` is
500), its idle the rest, and fragmentation reads that idle as it reads a shared extended-resource GPU's. A pod's
arrived milli-GPU includes its claims' demand (from the claim, else its ResourceClaimTemplate), a share as the
allocator would round it on the cluster's shareable GPU. The runner feeds slices, classes and claims only to
scenarios that declare DRA.

Invariant: a node's fragmentation is recomputed only when one of its inputs changes (its allocatable CPU, its pods'
requests, nodes or device annotations), memoised on the node state by :class:`FragModel`; the cluster figure is
the running sum, so recording one arrival costs O(1) beyond the changed node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.pods import pod_limits, pod_requests
from kubeplane.api.quantity import QuantityError, parse_milli
from kubeplane.api.views import is_pod_terminal, spec_of, status_of
from kubeplane.gpu.dra import ClaimDevices, DraIndex, claim_devices, pod_dra_request, shared_device_milli
from kubeplane.gpu.frag import FragModel, PodType, TargetWorkload, typical_pods
from kubeplane.gpu.model import (
    MILLI_PER_GPU,
    GpuRequest,
    assign_devices,
    devices_of,
    gpu_request_or_none,
    node_gpu_count,
    node_gpu_model,
)
from kubeplane.gpu.policies import PodDemand
from kubeplane.gpu.repro import RunResult, curves

__all__ = ["GPU_COLUMNS", "GpuMetrics", "binned_by_arrival", "declared_pod_types", "pod_type_of"]

GPU_COLUMNS: Final = ("gpu_alloc_pct", "gpu_unallocated", "gpu_frag_pct", "gpu_frag_ratio_pct")
"""The time-series columns of a simulation with GPU pods (percentages of GPU capacity; unallocated in GPUs)."""

Obj = Mapping[str, Any]
_WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController", "Job")


def _cpu(pod: Obj) -> int:
    """CPU request milli; limits stand for requests in a manifest the API has not defaulted yet."""
    return pod_requests(pod).get("cpu", 0) or pod_limits(pod).get("cpu", 0)


class DraDeclared:
    """What a scenario declares for DRA GPUs: its nodes' GPU devices (as slices), DeviceClasses, claims and
    ResourceClaimTemplates; a pod's demand through its claims is read against them before anything runs."""

    def __init__(self, slices: Iterable[Obj], objects: Iterable[Obj]) -> None:
        objects = list(objects)
        self.templates = _by_key(o for o in objects if o.get("kind") == "ResourceClaimTemplate")
        self.claims = _by_key(o for o in objects if o.get("kind") == "ResourceClaim")
        self.index = DraIndex(slices, [o for o in objects if o.get("kind") == "DeviceClass"])

    def request(self, pod: Obj) -> GpuRequest | None:
        return pod_dra_request(pod, self.index, _getter(self.claims), _getter(self.templates))


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def _by_key(objects: Iterable[Obj]) -> dict[tuple[str, str], Obj]:
    return {_key(o): o for o in objects}


def _getter(objects: Mapping[tuple[str, str], Obj]) -> Any:
    return lambda namespace, name: objects.get((namespace, name))


def pod_type_of(pod: Obj, dra: DraDeclared | None = None) -> PodType:
    """The fragmentation key of a pod: CPU request milli and its GPU request (memory is ignored, as the paper);
    with ``dra``, a pod without an extended-resource GPU request gets its claims' GPU demand."""
    request = gpu_request_or_none(pod)
    if request is None and dra is not None:
        request = dra.request(pod)
    return PodDemand.of(_cpu(pod), 0, request).pod_type()


def declared_pod_types(
    objects: Iterable[Obj], extra: Iterable[tuple[Obj, int]] = (), dra: DraDeclared | None = None
) -> list[PodType]:
    """One PodType per pod a scenario declares: Pods, workload templates × replicas (Jobs × parallelism), plus
    ``extra`` (template, count) pairs such as generators."""
    out: list[PodType] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "Pod":
            out.append(pod_type_of(obj, dra))
        elif kind in _WORKLOAD_KINDS:
            spec = obj.get("spec") or {}
            count = spec.get("parallelism", 1) if kind == "Job" else spec.get("replicas", 1)
            template = spec.get("template") or {}
            out.extend([pod_type_of(template, dra)] * int(count if isinstance(count, int) else 1))
    for template, count in extra:
        out.extend([pod_type_of(template, dra)] * count)
    return out


@dataclass
class _Pod:
    node: str
    request: GpuRequest | None
    devices: tuple[int, ...] | None
    cpu: int
    created: float


class _Node:
    __slots__ = ("cpu", "dra", "frag", "gpus", "model", "pods", "used")

    def __init__(self) -> None:
        self.cpu = 0
        self.used = 0
        self.gpus = 0
        self.dra = 0
        """DRA GPUs (after the ``gpus`` extended-resource devices)."""
        self.model = ""
        self.frag = 0.0
        self.pods: dict[str, _Pod] = {}


class GpuMetrics:
    """Allocated milli-GPU and fragmentation of the cluster, kept current from pod and node updates."""

    def __init__(self, workload: TargetWorkload) -> None:
        self.frag_model = FragModel(workload)
        self.workload = workload
        self.nodes: dict[str, _Node] = {}
        self.pods: dict[str, _Pod] = {}
        self.capacity = 0
        self.used = 0
        self.frag = 0.0
        self.arrived = 0
        self.arrivals: list[dict[str, Any]] = []
        self.declared: DraDeclared | None = None
        """The scenario's DRA objects (templates for the arrived demand); None without DRA."""
        self.index = DraIndex(())
        self._slices: dict[str, Obj] = {}
        self._classes: dict[str, Obj] = {}
        self._claims: dict[tuple[str, str], Obj] = {}
        self._claim_use: dict[tuple[str, str], ClaimDevices] = {}

    @classmethod
    def for_pod_types(cls, types: Iterable[PodType]) -> GpuMetrics | None:
        """A tracker against the typical pods of ``types``; None when no declared pod asks for a GPU."""
        types = list(types)
        if not any(t.count for t in types):
            return None
        return cls(typical_pods(types))

    # --- updates -----------------------------------------------------------------------------------------

    def node(self, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        state = self.nodes.setdefault(name, _Node())
        allocatable = status_of(node).get("allocatable") or {}
        try:
            cpu = parse_milli(allocatable.get("cpu", 0))
        except (QuantityError, ValueError):
            cpu = 0
        gpus, model = node_gpu_count(node), node_gpu_model(node)
        if (cpu, gpus, model) != (state.cpu, state.gpus, state.model):
            self.capacity += (gpus - state.gpus) * MILLI_PER_GPU
            state.cpu, state.gpus, state.model = cpu, gpus, model
            self._refresh(name)

    def node_deleted(self, node: Obj) -> None:
        name = str(node["metadata"]["name"])
        state = self.nodes.pop(name, None)
        if state is not None:
            self.capacity -= (state.gpus + state.dra) * MILLI_PER_GPU
            self.frag -= state.frag
            self.used -= state.used

    def pod(self, pod: Obj, now: float) -> None:
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        old = self.pods.get(key)
        if old is None:
            request = gpu_request_or_none(pod)
            cpu = _cpu(pod)
            old = self.pods[key] = _Pod("", request, None, cpu, now)
            arrived = request if request is not None else self._dra_request(pod)
            self.arrived += 0 if arrived is None else arrived.total_milli
            self._arrival(now, key)
        node = str(spec_of(pod).get("nodeName") or "") if not is_pod_terminal(pod) else ""
        devices = devices_of(pod)
        if (node, devices) != (old.node, old.devices):
            self._move(key, old, node, devices)

    def pod_deleted(self, pod: Obj) -> None:
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        old = self.pods.pop(key, None)
        if old is not None and old.node:
            self._move(key, old, "", None)

    def _move(self, key: str, pod: _Pod, node: str, devices: tuple[int, ...] | None) -> None:
        previous = pod.node
        if previous and previous in self.nodes:
            self.nodes[previous].pods.pop(key, None)
        pod.node, pod.devices = node, devices
        if node:
            self.nodes.setdefault(node, _Node()).pods[key] = pod
        for name in {previous, node} - {""}:
            if name in self.nodes:
                self._refresh(name)

    # --- DRA -------------------------------------------------------------------------------------------

    def _dra_request(self, pod: Obj) -> GpuRequest | None:
        """A pod's GPU demand through its claims: the claim as seen, else the declared claim or template."""
        if self.declared is None:
            return None
        claims = {**self.declared.claims, **self._claims}
        return pod_dra_request(
            pod, self.index or self.declared.index, _getter(claims), _getter(self.declared.templates)
        )

    def resource_slice(self, obj: Obj) -> None:
        self._slices[str(obj["metadata"]["name"])] = obj
        self._reindex()

    def resource_slice_deleted(self, obj: Obj) -> None:
        if self._slices.pop(str(obj["metadata"]["name"]), None) is not None:
            self._reindex()

    def device_class(self, obj: Obj) -> None:
        self._classes[str(obj["metadata"]["name"])] = obj
        self._reindex()

    def resource_claim(self, obj: Obj) -> None:
        key = _key(obj)
        self._claims[key] = obj
        self._use(key, claim_devices(obj, self.index))

    def resource_claim_deleted(self, obj: Obj) -> None:
        key = _key(obj)
        self._claims.pop(key, None)
        self._use(key, None)

    def _use(self, key: tuple[str, str], use: ClaimDevices | None) -> None:
        old = self._claim_use.pop(key, None)
        if use is not None:
            self._claim_use[key] = use
        if old != use:
            for name in {u.node for u in (old, use) if u is not None}:
                self.nodes.setdefault(name, _Node())
                self._refresh(name)

    def _reindex(self) -> None:
        """A slice or class changed: the devices of every node and every claim's devices are read again."""
        self.index = DraIndex(self._slices.values(), self._classes.values())
        for name in self.index.nodes.keys() | {n for n, s in self.nodes.items() if s.dra}:
            state = self.nodes.setdefault(name, _Node())
            count = self.index.count(name)
            self.capacity += (count - state.dra) * MILLI_PER_GPU
            state.dra = count
        self._claim_use = {k: u for k, c in self._claims.items() if (u := claim_devices(c, self.index)) is not None}
        for name in list(self.nodes):
            self._refresh(name)

    def _refresh(self, name: str) -> None:
        """Recompute one node's used milli-GPU and fragmentation; adjust the cluster totals by the difference."""
        state = self.nodes[name]
        pods = sorted(state.pods.values(), key=lambda p: p.created)
        # DRA claims first: their devices are the allocator's (whole ones per claim, each shared device once, with
        # what its shares take together); then the extended-resource pods (first fit).
        held = [use for key in sorted(self._claim_use) if (use := self._claim_use[key]).node == name]
        gpu_pods: list[tuple[GpuRequest, tuple[int, ...] | None]] = [
            (GpuRequest(len(use.whole), MILLI_PER_GPU), tuple(d + state.gpus for d in use.whole))
            for use in held
            if use.whole
        ]
        shared = shared_device_milli((share for use in held for share in use.shares), self.index)
        gpu_pods += [(GpuRequest(1, milli), (device + state.gpus,)) for device, milli in sorted(shared.items())]
        gpu_pods += [(p.request, p.devices) for p in pods if p.request is not None]
        total = state.gpus + state.dra
        idle, placed = assign_devices(total, gpu_pods)
        used = sum(req.total_milli for (req, _), devs in zip(gpu_pods, placed, strict=True) if devs is not None)
        cpu_left = state.cpu - sum(p.cpu for p in pods)
        model = state.model or self.index.model(name)
        frag = self.frag_model.node(cpu_left, [max(free, 0) for free in idle], model) if total else 0.0
        self.used += used - state.used
        self.frag += frag - state.frag
        state.used, state.frag = used, frag

    # --- readings ----------------------------------------------------------------------------------------

    def _arrival(self, now: float, key: str) -> None:
        self.arrivals.append(self.reading(now) | {"pod": key})

    def reading(self, now: float) -> dict[str, Any]:
        """The figures at ``now``: arrived, allocated, fragmented and idle milli-GPU, and their percentages."""
        cap = self.capacity
        idle = cap - self.used
        return {
            "t": round(now, 6),
            "arrived_gpu_milli": self.arrived,
            "used_gpu_milli": self.used,
            "frag_milli": round(self.frag, 3),
            "idle_milli": idle,
            "gpu_alloc_pct": round(self.used / cap * 100, 4) if cap else 0.0,
            "gpu_unallocated": round(idle / MILLI_PER_GPU, 3),
            "gpu_frag_pct": round(self.frag / cap * 100, 4) if cap else 0.0,
            "gpu_frag_ratio_pct": round(self.frag / idle * 100, 4) if idle > 0 else 0.0,
        }

    def summary(self, now: float) -> dict[str, Any]:
        """End-of-run figures for summary.json: the final reading and the allocation binned by arrived load."""
        final = self.reading(now)
        out: dict[str, Any] = {
            "gpu_capacity": self.capacity // MILLI_PER_GPU,
            "gpu_alloc_pct": final["gpu_alloc_pct"],
            "gpu_unallocated": final["gpu_unallocated"],
            "gpu_frag_pct": final["gpu_frag_pct"],
            "gpu_frag_ratio_pct": final["gpu_frag_ratio_pct"],
            "gpu_arrived_pct": round(self.arrived / self.capacity * 100, 4) if self.capacity else 0.0,
        }
        binned = binned_by_arrival(self.arrivals, self.capacity)
        for r in (50, 80, 90, 100, 110, 120, 130):
            if r in binned:
                out[f"gpu_alloc_pct_at_arrived_{r}"] = binned[r]["gpu_alloc_pct"]
        return out


def binned_by_arrival(arrivals: list[dict[str, Any]], capacity: int) -> dict[int, dict[str, float]]:
    """Per rounded arrived % (0..130): the mean allocation, fragmentation / capacity and / idle of the arrivals
    there, as the FGD paper bins its curves (:func:`kubeplane.gpu.repro.binned`); ``capacity`` in milli-GPU."""
    if not arrivals or capacity <= 0:
        return {}
    record = RunResult(
        "sim",
        0,
        capacity,
        arrived=[a["arrived_gpu_milli"] for a in arrivals],
        used=[a["used_gpu_milli"] for a in arrivals],
        frag=[a["frag_milli"] for a in arrivals],
    )
    by_curve = curves(record)
    names = {"alloc": "gpu_alloc_pct", "frag_total": "gpu_frag_pct", "frag_ratio": "gpu_frag_ratio_pct"}
    out: dict[int, dict[str, float]] = {}
    for curve, name in names.items():
        for r, value in by_curve[curve].items():
            out.setdefault(r, {})[name] = round(value, 4)
    return out
