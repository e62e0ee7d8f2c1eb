"""GPUs reached through Dynamic Resource Allocation: a node's DRA GPUs from its ResourceSlices, a pod's GPU demand
from its ResourceClaims (or their templates), and the devices a claim's allocation holds.

The GPU policies (:mod:`kubeplane.gpu.policies`) and the simulation's metrics (:mod:`kubeplane.sim.gpu`) see a DRA
GPU exactly as a device of the extended resource ``nvidia.com/gpu`` (docs/gpu.md, "DRA GPUs"):

* **Which devices are GPUs:** the devices of a driver in :attr:`DraGpuSource.drivers` (default
  ``gpu.example.com``, the simulated driver of docs/dra-drivers.md and the upstream example driver). Their model is
  the string attribute :attr:`DraGpuSource.model_attribute` (``model`` or ``<driver>/model``); each device is
  1000 milli-GPU. A node's DRA GPUs are the devices of the slices naming it in ``spec.nodeName``, in the order
  (driver, pool, slice name, position in the slice).
* **Which requests ask for GPUs:** an ``exactly`` request (or a ``firstAvailable`` list's first subrequest) whose
  DeviceClass is a GPU class: its name is a GPU driver or in :attr:`DraGpuSource.device_classes`, or one of its CEL
  selectors says ``device.driver == "<gpu driver>"``. ``count`` devices (ExactCount; default 1) are whole GPUs; a
  request with ``capacity.requests[share_capacity]`` (consumable capacity, e.g. ``memory: 10Gi`` of a 40Gi device)
  is a share of one device: ``ceil(1000 · requested / device capacity)`` milli. A selector comparing the model
  attribute with ``==`` to a string restricts the models (as node affinity on ``nvidia.com/gpu.product`` does for
  extended-resource pods). ``allocationMode: All`` has no count known before allocation and counts as none.
* **What is in use:** every allocated claim's results of a GPU driver, mapped to the node's device indices; a
  result with ``consumedCapacity[share_capacity]`` uses that share of its device, the others the whole device.

Invariant: everything here is a pure function of the objects (as :mod:`kubeplane.gpu.model`), so the scheduler's
plugins and the simulation's metrics derive the same per-device state from the same slices and claims.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.quantity import QuantityError, parse_quantity
from kubeplane.gpu.model import MILLI_PER_GPU, GpuRequest

__all__ = [
    "DEFAULT_SOURCE",
    "ClaimLookup",
    "DraGpuSource",
    "DraIndex",
    "claim_name",
    "claim_usage",
    "pod_claim_specs",
    "pod_dra_request",
    "request_of_specs",
    "usage_on",
]

Obj = Mapping[str, Any]
ClaimLookup = Callable[[str, str], Obj | None]
"""``(namespace, name) -> object or None``: a ResourceClaim (or ResourceClaimTemplate) by name."""
DeviceKey = tuple[str, str, str]
"""(driver, pool, device name): how an allocation result names a device."""


@dataclass(frozen=True, slots=True)
class DraGpuSource:
    """Which DRA devices are GPUs and how to read them (module docstring)."""

    drivers: frozenset[str] = frozenset({"gpu.example.com"})
    model_attribute: str = "model"
    share_capacity: str = "memory"
    device_classes: frozenset[str] = frozenset()

    def is_gpu_class(self, name: str, device_class: Obj | None) -> bool:
        if name in self.drivers or name in self.device_classes:
            return True
        if device_class is None:
            return False
        for selector in (device_class.get("spec") or {}).get("selectors") or ():
            expression = str((selector.get("cel") or {}).get("expression") or "")
            for driver in _DRIVER_EQ.findall(expression):
                if driver in self.drivers:
                    return True
        return False


DEFAULT_SOURCE: Final = DraGpuSource()
_DRIVER_EQ: Final = re.compile(r"device\.driver\s*==\s*[\"']([^\"']+)[\"']")


def _attribute(device: Obj, driver: str, name: str) -> Any:
    attributes = device.get("attributes") or {}
    found = attributes.get(name) or attributes.get(f"{driver}/{name}")
    if not isinstance(found, Mapping):
        return None
    return next(iter(found.values()), None)


def _capacity(device: Obj, driver: str, name: str) -> int | None:
    capacity = device.get("capacity") or {}
    found = capacity.get(name) or capacity.get(f"{driver}/{name}")
    if not isinstance(found, Mapping) or found.get("value") is None:
        return None
    try:
        return parse_quantity(str(found["value"])).value()
    except (QuantityError, ValueError):
        return None


@dataclass(slots=True)
class _NodeDevices:
    keys: list[DeviceKey] = field(default_factory=list)
    model: str = ""


class DraIndex:
    """The cluster's DRA GPUs: per node its devices (index order) and model; per device its node, index and share
    capacity; the GPU DeviceClasses. Built from every ResourceSlice and DeviceClass (cheap: one pass)."""

    def __init__(
        self, slices: Iterable[Obj], classes: Iterable[Obj] = (), source: DraGpuSource = DEFAULT_SOURCE
    ) -> None:
        self.source = source
        self.nodes: dict[str, _NodeDevices] = {}
        self.position: dict[DeviceKey, tuple[str, int]] = {}
        self.capacity: dict[DeviceKey, int] = {}
        self.share_base: int | None = None
        """The share capacity of the first GPU device that has one: a claim's share is measured against it
        before allocation (the simulated drivers publish one size per device group)."""
        self.classes: frozenset[str] = frozenset(
            name for c in classes if source.is_gpu_class(name := str((c.get("metadata") or {}).get("name") or ""), c)
        )
        ordered = []
        for item in slices:
            spec = item.get("spec") or {}
            driver, node = str(spec.get("driver") or ""), str(spec.get("nodeName") or "")
            if driver not in source.drivers or not node:
                continue
            pool = str((spec.get("pool") or {}).get("name") or "")
            ordered.append((driver, pool, str((item.get("metadata") or {}).get("name") or ""), node, spec))
        for driver, pool, _, node, spec in sorted(ordered, key=lambda t: t[:3]):
            devices = self.nodes.setdefault(node, _NodeDevices())
            for device in spec.get("devices") or ():
                key = (driver, pool, str(device.get("name") or ""))
                if key in self.position:
                    continue
                self.position[key] = (node, len(devices.keys))
                devices.keys.append(key)
                model = _attribute(device, driver, source.model_attribute)
                if not devices.model and model is not None:
                    devices.model = str(model)
                size = _capacity(device, driver, source.share_capacity)
                if size:
                    self.capacity[key] = size
                    if self.share_base is None:
                        self.share_base = size

    def __bool__(self) -> bool:
        return bool(self.position)

    def count(self, node: str) -> int:
        found = self.nodes.get(node)
        return 0 if found is None else len(found.keys)

    def model(self, node: str) -> str:
        found = self.nodes.get(node)
        return "" if found is None else found.model

    def is_gpu_class(self, name: str) -> bool:
        return name in self.classes or self.source.is_gpu_class(name, None)


def _milli(requested: int, base: int | None) -> int:
    if not base:
        return MILLI_PER_GPU
    return max(1, min(MILLI_PER_GPU, math.ceil(requested * MILLI_PER_GPU / base)))


def _models(request: Obj, source: DraGpuSource) -> frozenset[str] | None:
    pattern = re.compile(rf"\.{re.escape(source.model_attribute)}\s*==\s*[\"']([^\"']+)[\"']")
    found: set[str] = set()
    for selector in request.get("selectors") or ():
        found.update(pattern.findall(str((selector.get("cel") or {}).get("expression") or "")))
    return frozenset(found) or None


def request_of_specs(specs: Iterable[Obj], index: DraIndex) -> GpuRequest | None:
    """The GPU demand of claim specs (``spec`` of a claim, ``spec.spec`` of a template): whole GPUs summed over the
    GPU requests; a single GPU request for a capacity share is that share; None without GPU requests."""
    entries: list[tuple[int, int]] = []  # (devices, milli each)
    models: frozenset[str] | None = None
    for spec in specs:
        for request in (spec.get("devices") or {}).get("requests") or ():
            exact = request.get("exactly")
            if exact is None:
                exact = next(iter(request.get("firstAvailable") or ()), None)
            if not isinstance(exact, Mapping) or not index.is_gpu_class(str(exact.get("deviceClassName") or "")):
                continue
            if exact.get("allocationMode", "ExactCount") != "ExactCount":
                continue
            models = _models(exact, index.source) or models
            n, milli = int(exact.get("count") or 1), MILLI_PER_GPU
            wanted = ((exact.get("capacity") or {}).get("requests") or {}).get(index.source.share_capacity)
            if wanted is not None and n == 1:
                try:
                    milli = _milli(parse_quantity(str(wanted)).value(), index.share_base)
                except (QuantityError, ValueError):
                    milli = MILLI_PER_GPU
            entries.append((n, milli))
    if not entries:
        return None
    if len(entries) == 1 and entries[0][1] < MILLI_PER_GPU:
        return GpuRequest(1, entries[0][1], models)
    # several requests: whole devices each (a pod's share is one share of one device, as with the annotation)
    return GpuRequest(sum(n for n, _ in entries), MILLI_PER_GPU, models)


def claim_name(pod: Obj, entry: Obj) -> str | None:
    """Upstream ``resourceclaim.Name`` without its errors: the claim's name, None when not generated yet."""
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if status.get("name") == entry.get("name") and status.get("resourceClaimName"):
            return str(status["resourceClaimName"])
    return None


def pod_claim_specs(pod: Obj, claims: ClaimLookup, templates: ClaimLookup | None = None) -> list[Obj]:
    """The claim specs of a pod's ``spec.resourceClaims``: the claim's when it exists, else its template's."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    out: list[Obj] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
        name = claim_name(pod, entry)
        claim = claims(namespace, name) if name else None
        if claim is not None:
            out.append(claim.get("spec") or {})
        elif templates is not None and entry.get("resourceClaimTemplateName"):
            template = templates(namespace, str(entry["resourceClaimTemplateName"]))
            if template is not None:
                out.append((template.get("spec") or {}).get("spec") or {})
    return out


def pod_dra_request(
    pod: Obj, index: DraIndex, claims: ClaimLookup, templates: ClaimLookup | None = None
) -> GpuRequest | None:
    """The pod's GPU demand through its ResourceClaims (module docstring); None without one."""
    if not (pod.get("spec") or {}).get("resourceClaims"):
        return None
    return request_of_specs(pod_claim_specs(pod, claims, templates), index)


def claim_usage(claim: Obj, index: DraIndex) -> tuple[str, list[tuple[GpuRequest, tuple[int, ...]]]] | None:
    """An allocated claim's GPUs: (node, [(request, device indices)]) -- whole devices grouped in one entry, each
    share its own; None when the claim holds no GPU of a known node."""
    results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or ()
    node = ""
    whole: list[int] = []
    out: list[tuple[GpuRequest, tuple[int, ...]]] = []
    for result in results:
        key = (str(result.get("driver") or ""), str(result.get("pool") or ""), str(result.get("device") or ""))
        found = index.position.get(key)
        if found is None or (node and found[0] != node):
            continue
        node = found[0]
        consumed = (result.get("consumedCapacity") or {}).get(index.source.share_capacity)
        if consumed is not None:
            try:
                milli = _milli(parse_quantity(str(consumed)).value(), index.capacity.get(key))
            except (QuantityError, ValueError):
                milli = MILLI_PER_GPU
            if milli < MILLI_PER_GPU:
                out.append((GpuRequest(1, milli), (found[1],)))
                continue
        whole.append(found[1])
    if whole:
        out.insert(0, (GpuRequest(len(whole), MILLI_PER_GPU), tuple(whole)))
    return (node, out) if out else None


def usage_on(node: str, claims: Sequence[Obj], index: DraIndex) -> list[tuple[GpuRequest, tuple[int, ...]]]:
    """Every allocated claim's GPU entries on ``node`` (in the order of ``claims``)."""
    out: list[tuple[GpuRequest, tuple[int, ...]]] = []
    for claim in claims:
        usage = claim_usage(claim, index)
        if usage is not None and usage[0] == node:
            out.extend(usage[1])
    return out
