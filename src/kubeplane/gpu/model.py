"""How GPUs appear on Nodes and Pods, and the per-device state derived from the pods bound to a node.

The model (documented in docs/gpu.md):

* A node advertises its whole GPUs as the extended resource ``nvidia.com/gpu`` (capacity and allocatable) and
  their model as the label :data:`GPU_MODEL_LABEL` (``nvidia.com/gpu.product``, the label NVIDIA's GPU feature
  discovery sets). Every device has 1000 milli-GPU.
* A pod asks for **whole GPUs** with ``nvidia.com/gpu: N`` in its container limits (extended resources are
  limits = requests), or for a **share of one GPU** with the annotation :data:`GPU_MILLI_ANNOTATION`
  (``gpu.kubeplane.io/milli: "460"``, 1–999) and no ``nvidia.com/gpu``. A share never spans devices; whole GPUs
  are always fully free devices.
* A pod restricts GPU models with a required node-affinity term on :data:`GPU_MODEL_LABEL` (``In`` a list), as the
  trace's ``gpu_spec`` does; the NodeAffinity plugin enforces it, the GPU plugins read it to know the pod's type.
* The device(s) a pod uses are the annotation :data:`GPU_DEVICES_ANNOTATION` (``gpu.kubeplane.io/devices:
  "0,3"``): written by the scheduler's GPU plugin at PreBind, and by the simulated kubelet when it admits a pod
  bound without it. Pods bound without one are placed first-fit in the order they are seen (as the kubelet does).

Invariant: everything here is a pure function of the objects; nothing depends on the scheduler or the kubelet, so
both (and the FGD replay) derive the same per-device state from the same pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.pods import pod_limits, pod_requests
from kubeplane.api.quantity import QuantityError, parse_value
from kubeplane.api.views import EMPTY, NodeView, annotations_of, items, labels_of, section, spec_of

__all__ = [
    "GPU_DEVICES_ANNOTATION",
    "GPU_MILLI_ANNOTATION",
    "GPU_MODEL_LABEL",
    "GPU_RESOURCE",
    "MILLI_PER_GPU",
    "GpuError",
    "GpuRequest",
    "assign_devices",
    "devices_fit",
    "devices_of",
    "fit_devices",
    "format_devices",
    "gpu_request",
    "gpu_request_or_none",
    "node_gpu_count",
    "node_gpu_model",
    "valid_devices",
]

GPU_RESOURCE: Final = "nvidia.com/gpu"
GPU_MODEL_LABEL: Final = "nvidia.com/gpu.product"
GPU_MILLI_ANNOTATION: Final = "gpu.kubeplane.io/milli"
GPU_DEVICES_ANNOTATION: Final = "gpu.kubeplane.io/devices"
MILLI_PER_GPU: Final = 1000


class GpuError(ValueError):
    """A pod's GPU request or device annotation that cannot be honoured; the message is one line."""


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """``count`` devices with ``milli`` each (``milli == 1000`` for whole GPUs; a share has ``count == 1``).

    ``models`` is the set of acceptable GPU models, None for any.
    """

    count: int
    milli: int
    models: frozenset[str] | None = None

    @property
    def total_milli(self) -> int:
        return self.count * self.milli

    @property
    def is_share(self) -> bool:
        return self.count == 1 and self.milli < MILLI_PER_GPU

    def accepts(self, model: str) -> bool:
        return self.models is None or model in self.models


def _models(pod: Mapping[str, Any]) -> frozenset[str] | None:
    """The models a pod's required node affinity allows: the union over its terms; None when a term allows any.

    Node selector terms are ORed: a term without an ``In`` on the model label lets every model through.
    """
    affinity = section(pod, "spec", "affinity", "nodeAffinity")
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        selector = spec_of(pod).get("nodeSelector") or {}
        model = selector.get(GPU_MODEL_LABEL)
        return None if model is None else frozenset([str(model)])
    allowed: set[str] = set()
    for term in terms:
        values: set[str] | None = None
        for expr in items(term or EMPTY, "matchExpressions"):
            if expr.get("key") == GPU_MODEL_LABEL and expr.get("operator") == "In":
                got = {str(v) for v in expr.get("values") or []}
                values = got if values is None else values & got
        if values is None:
            return None
        allowed |= values
    return frozenset(allowed)


def gpu_request(pod: Mapping[str, Any]) -> GpuRequest | None:
    """The pod's GPU request, None for a pod without GPUs. Raises :class:`GpuError` for a malformed one."""
    # Extended resources have requests = limits; an object not yet defaulted by the API may carry only limits.
    whole = pod_requests(pod).get(GPU_RESOURCE, 0) or pod_limits(pod).get(GPU_RESOURCE, 0)
    text = annotations_of(pod).get(GPU_MILLI_ANNOTATION)
    if text is not None:
        try:
            milli = int(str(text))
        except ValueError:
            raise GpuError(f"annotation {GPU_MILLI_ANNOTATION}: {text!r} is not an integer") from None
        if not 0 < milli < MILLI_PER_GPU:
            raise GpuError(f"annotation {GPU_MILLI_ANNOTATION}: {milli} must be between 1 and 999")
        if whole:
            raise GpuError(f"annotation {GPU_MILLI_ANNOTATION} asks for a share; the pod also requests {GPU_RESOURCE}")
        return GpuRequest(1, milli, _models(pod))
    if whole <= 0:
        return None
    return GpuRequest(int(whole), MILLI_PER_GPU, _models(pod))


def gpu_request_or_none(pod: Mapping[str, Any]) -> GpuRequest | None:
    """:func:`gpu_request`, a malformed one counting as none: the pod is in (the API server let it in) and uses
    no device. For the readers of the cluster's state; admission and PreFilter reject it instead."""
    try:
        return gpu_request(pod)
    except GpuError:
        return None


def devices_of(pod: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The device indices recorded on the pod, None when none are (or the annotation is malformed)."""
    text = annotations_of(pod).get(GPU_DEVICES_ANNOTATION)
    if not text:
        return None
    try:
        return tuple(int(part) for part in str(text).split(","))
    except ValueError:
        return None


def format_devices(devices: Iterable[int]) -> str:
    return ",".join(str(d) for d in devices)


def node_gpu_count(node: Mapping[str, Any]) -> int:
    """Whole GPUs the node advertises (``status.allocatable``, else capacity)."""
    view = NodeView(node)
    value = view.allocatable.get(GPU_RESOURCE, view.capacity.get(GPU_RESOURCE))
    if value is None:
        return 0
    try:
        return parse_value(value)
    except (QuantityError, ValueError):
        return 0


def node_gpu_model(node: Mapping[str, Any]) -> str:
    return str(labels_of(node).get(GPU_MODEL_LABEL, ""))


def valid_devices(devices: Sequence[int], request: GpuRequest, device_count: int) -> bool:
    """Whether recorded ``devices`` can hold ``request`` on a node of ``device_count`` devices: as many as it asks,
    distinct, each on the node. The scheduler, the kubelet and the simulation's metrics all judge by this."""
    return (
        len(devices) == request.count
        and len(set(devices)) == len(devices)
        and all(0 <= d < device_count for d in devices)
    )


def devices_fit(idle: Sequence[int], request: GpuRequest, devices: Sequence[int]) -> bool:
    """Whether ``devices`` are valid for ``request`` and each has ``request.milli`` free in ``idle``."""
    return valid_devices(devices, request, len(idle)) and all(idle[d] >= request.milli for d in devices)


def fit_devices(idle: Sequence[int], request: GpuRequest) -> tuple[int, ...] | None:
    """First fit: the lowest-index devices with ``idle >= milli``; None when fewer than ``count`` have it."""
    chosen = tuple(i for i, free in enumerate(idle) if free >= request.milli)[: request.count]
    return chosen if len(chosen) == request.count else None


def assign_devices(
    device_count: int, pods: Iterable[tuple[GpuRequest, tuple[int, ...] | None]]
) -> tuple[list[int], list[tuple[int, ...] | None]]:
    """Per-device idle milli after placing ``pods`` (request, recorded devices) in order, and each pod's devices.

    A pod with valid recorded devices (:func:`valid_devices`) uses them (even past a device's capacity: the state is
    what it is, idle goes negative and nothing more fits there); a pod without gets first fit, None when nothing
    fits (it uses no device).
    """
    idle = [MILLI_PER_GPU] * device_count
    placed: list[tuple[int, ...] | None] = []
    for request, recorded in pods:
        devices = recorded
        if devices is None or not valid_devices(devices, request, device_count):
            devices = fit_devices(idle, request)
        if devices is not None:
            for d in devices:
                idle[d] -= request.milli
        placed.append(devices)
    return idle, placed
