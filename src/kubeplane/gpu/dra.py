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
  selectors says ``device.driver == "<gpu driver>"``. ``count`` devices (ExactCount; default 1) are whole GPUs. One
  device (``count: 1``) of a cluster with shareable GPUs (``allowMultipleAllocations: true``; DRAConsumableCapacity)
  is a share when the request names ``capacity.requests``, or names none and every GPU is shareable: what the
  allocator would consume on the first shareable GPU (:func:`kubeplane.scheduler.dra.capacity.consumed_capacity`:
  the policy's ``default`` for an unnamed capacity, the whole value without one, requests rounded up by
  ``requestPolicy``; ``12Gi`` on a ``5Gi`` grid takes ``15Gi``), as the dominant share below. Without shareable
  GPUs, ``capacity.requests[share_capacity]`` is ``ceil(1000 · requested / the first GPU's capacity)`` milli. A
  selector comparing the model attribute with ``==`` to a string restricts the models (as node affinity on
  ``nvidia.com/gpu.product`` does for extended-resource pods). ``allocationMode: All`` has no count known before
  allocation and counts as none.
* **What is in use:** every allocated claim's results of a GPU driver, mapped to the node's device indices; a
  result with ``consumedCapacity`` uses its **dominant share** of the device, ``ceil(1000 · max over the device's
  capacities of consumed / value)`` milli-GPU (exact: ``300m`` of ``cores: 1`` is 300), as a ``gpu-milli`` share of
  an extended-resource GPU uses its milli; a result without it, or whose share reaches 1000, the whole device.
  Upstream consumes every capacity of a shared device for every share (an unnamed one its default, else the whole
  value), so the dominant share is what the device has left for others.

Invariant: everything here is a pure function of the objects (as :mod:`kubeplane.gpu.model`), so the scheduler's
plugins and the simulation's metrics derive the same per-device state from the same slices and claims.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from kubeplane.api.quantity import Quantity, QuantityError, parse_quantity
from kubeplane.gpu.model import MILLI_PER_GPU, GpuRequest
from kubeplane.scheduler.dra.capacity import consumed_capacity

__all__ = [
    "DEFAULT_SOURCE",
    "ClaimDevices",
    "ClaimLookup",
    "DraGpuSource",
    "DraIndex",
    "Share",
    "claim_devices",
    "claim_name",
    "claim_usage",
    "dominant_milli",
    "pod_claim_specs",
    "pod_dra_request",
    "request_of_specs",
    "shared_device_milli",
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


def _capacities(device: Obj) -> dict[str, Fraction]:
    """A device's capacity values, exact (``cores: 1`` is 1, ``memory: 40Gi`` its bytes); unparsable ones left out."""
    out: dict[str, Fraction] = {}
    for name, entry in (device.get("capacity") or {}).items():
        if isinstance(entry, Mapping) and entry.get("value") is not None:
            try:
                out[str(name)] = Quantity.parse(entry["value"]).as_fraction()
            except (QuantityError, ValueError, TypeError):
                continue
    return out


def dominant_milli(consumed: Mapping[str, Fraction], capacities: Mapping[str, Fraction]) -> int | None:
    """The milli-GPU a share takes: ``ceil(1000 · max consumed / value)`` over the device's capacities (at least 1,
    at most 1000); None when no consumed capacity is one the device has."""
    fractions = [amount / total for name, amount in consumed.items() if (total := capacities.get(name))]
    if not fractions:
        return None
    return max(1, min(MILLI_PER_GPU, math.ceil(max(fractions) * MILLI_PER_GPU)))


def _consumed(raw: object) -> dict[str, Fraction]:
    """A result's ``consumedCapacity``, exact; unparsable entries left out."""
    out: dict[str, Fraction] = {}
    for name, amount in raw.items() if isinstance(raw, Mapping) else ():
        try:
            q = amount if isinstance(amount, Quantity) else Quantity.parse(amount)
        except (QuantityError, ValueError, TypeError):
            continue
        out[str(name)] = q.as_fraction()
    return out


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
        self.capacities: dict[DeviceKey, dict[str, Fraction]] = {}
        """Every capacity value of each GPU device, exact: a share's dominant fraction is measured against them."""
        self.share_device: Obj | None = None
        """The first GPU device with ``allowMultipleAllocations: true``: a claim's share is what the allocator would
        consume on it (the simulated drivers publish one kind of device per device group)."""
        self.all_shared = False
        """Every GPU device is shareable: a request naming no capacity is a share too (the policy's default)."""
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
                self.capacities[key] = _capacities(device)
                if device.get("allowMultipleAllocations") is True and self.share_device is None:
                    self.share_device = device
                size = _capacity(device, driver, source.share_capacity)
                if size:
                    self.capacity[key] = size
                    if self.share_base is None:
                        self.share_base = size
        self.all_shared = bool(self.position) and all(
            d.get("allowMultipleAllocations") is True
            for item in ordered
            for d in item[4].get("devices") or ()
            if (item[0], item[1], str(d.get("name") or "")) in self.position
        )

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


def _share_milli(exact: Obj, index: DraIndex) -> int:
    """The milli-GPU one device of ``exact`` (an ExactCount request of one device) takes (module docstring)."""
    requests = (exact.get("capacity") or {}).get("requests") or {}
    device = index.share_device
    if device is not None and (requests or index.all_shared):
        capacity = device.get("capacity") or {}
        if any(name not in capacity for name in requests):
            return MILLI_PER_GPU  # the shareable GPU lacks a named capacity: not this kind of device
        try:
            consumed = consumed_capacity(requests, capacity)
        except (QuantityError, ValueError, TypeError, KeyError):
            return MILLI_PER_GPU
        milli = dominant_milli(_consumed(consumed), _capacities(device))
        return MILLI_PER_GPU if milli is None else milli
    wanted = requests.get(index.source.share_capacity)
    if wanted is None:
        return MILLI_PER_GPU
    try:
        return _milli(parse_quantity(str(wanted)).value(), index.share_base)
    except (QuantityError, ValueError):
        return MILLI_PER_GPU


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
            n = int(exact.get("count") or 1)
            milli = _share_milli(exact, index) if n == 1 else MILLI_PER_GPU
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


Share = tuple[int, DeviceKey, tuple[tuple[str, Fraction], ...]]
"""A share of a device a claim holds: the node's device index, the device, and what it consumes (exact)."""


@dataclass(frozen=True, slots=True)
class ClaimDevices:
    """The GPUs an allocated claim holds on its node: whole devices and shares (by node device index)."""

    node: str
    whole: tuple[int, ...]
    shares: tuple[Share, ...]


def claim_devices(claim: Obj, index: DraIndex) -> ClaimDevices | None:
    """An allocated claim's GPU results of a known node: a result with ``consumedCapacity`` (a share of a
    multi-allocatable device) among ``shares``, the others ``whole``; None when it holds none."""
    results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or ()
    node = ""
    whole: list[int] = []
    shares: list[Share] = []
    for result in results:
        key = (str(result.get("driver") or ""), str(result.get("pool") or ""), str(result.get("device") or ""))
        found = index.position.get(key)
        if found is None or (node and found[0] != node):
            continue
        node = found[0]
        consumed = _consumed(result.get("consumedCapacity"))
        if consumed and dominant_milli(consumed, index.capacities.get(key, {})) is not None:
            shares.append((found[1], key, tuple(sorted(consumed.items()))))
        else:
            whole.append(found[1])
    return ClaimDevices(node, tuple(whole), tuple(shares)) if whole or shares else None


def claim_usage(claim: Obj, index: DraIndex) -> tuple[str, list[tuple[GpuRequest, tuple[int, ...]]]] | None:
    """An allocated claim's GPUs: (node, [(request, device indices)]) -- whole devices grouped in one entry, each
    share its own, of its dominant share's milli (a share taking a whole device counts whole); None when the claim
    holds no GPU of a known node."""
    held = claim_devices(claim, index)
    if held is None:
        return None
    whole = list(held.whole)
    out: list[tuple[GpuRequest, tuple[int, ...]]] = []
    for device, key, consumed in held.shares:
        milli = dominant_milli(dict(consumed), index.capacities.get(key, {})) or MILLI_PER_GPU
        if milli < MILLI_PER_GPU:
            out.append((GpuRequest(1, milli), (device,)))
        else:
            whole.append(device)
    if whole:
        out.insert(0, (GpuRequest(len(whole), MILLI_PER_GPU), tuple(whole)))
    return held.node, out


def shared_device_milli(shares: Iterable[Share], index: DraIndex) -> dict[int, int]:
    """Per device index, the milli-GPU its shares take together: the dominant share of their summed consumption
    (``ceil`` once per device, so three thirds make 1000, not 1002; and two shares heavy on different capacities
    take what the device has lost, not the sum of their own dominant shares)."""
    summed: dict[int, tuple[DeviceKey, dict[str, Fraction]]] = {}
    for device, key, consumed in shares:
        _, total = summed.setdefault(device, (key, {}))
        for name, amount in consumed:
            total[name] = total.get(name, Fraction(0)) + amount
    return {
        device: dominant_milli(total, index.capacities.get(key, {})) or MILLI_PER_GPU
        for device, (key, total) in summed.items()
    }


def usage_on(node: str, claims: Sequence[Obj], index: DraIndex) -> list[tuple[GpuRequest, tuple[int, ...]]]:
    """Every allocated claim's GPU entries on ``node`` (in the order of ``claims``)."""
    out: list[tuple[GpuRequest, tuple[int, ...]]] = []
    for claim in claims:
        usage = claim_usage(claim, index)
        if usage is not None and usage[0] == node:
            out.extend(usage[1])
    return out
