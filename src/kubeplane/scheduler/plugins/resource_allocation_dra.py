"""Scoring extended resources backed by DRA by their devices (DRAExtendedResource, GA in v1.37): upstream
``noderesources/resource_allocation.go`` ``getDRAPreScoredParams``, ``calculateDRAExtendedResourceAllocatableRequest``
and ``calculateDRAResourceTotals``, used by NodeResourcesFit and NodeResourcesBalancedAllocation.

A scalar resource the node's ``status.allocatable`` does not offer (no device plugin) but a DeviceClass serves
(its ``extendedResourceName``, or the implicit ``deviceclass.resource.kubernetes.io/<class>``) is scored as
``allocatable`` = the node's devices matching the class and ``requested`` = those of them already allocated plus
the pod's request. Rules:

* PreScore gathers the state once per pod (:func:`dra_score_state`), only when one of the plugin's configured
  resources is a DRA extended-resource name that some DeviceClass serves; otherwise there is nothing to do and
  scoring stays exactly as before;
* a device counts on a node when its slice is the node's (``nodeName``), for all nodes, or its ``nodeSelector``
  matches -- per device with ``perDeviceNodeSelection`` (``allNodes``, ``nodeName``, then ``nodeSelector``) --
  and every CEL selector of the class accepts it (a class without selectors takes every device);
* a device is allocated when any claim's allocation holds it, fully or a share of it (``IsDeviceAllocated``),
  admin-access results excepted; the claims are the informer's with the DynamicResources plugin's in-flight
  allocations substituted, as upstream's shared DRA manager sees them;
* a node selector that does not parse or a CEL selector that fails makes the resource absent on that node
  (upstream logs the error and returns ``(0, 0)``);
* results are cached per (node name, resource) for the pod's cycle (the nodes, slices and claims do not change
  within it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.scheduler.dra.allocated import AllocatedState, gather_allocated_state
from kubeplane.scheduler.dra.extended import DeviceClassResolver, is_dra_extended_resource_name
from kubeplane.scheduler.dra.pools import PoolError, node_matches
from kubeplane.scheduler.dra.selectors import SelectorFailure, device_view, selectors_match
from kubeplane.scheduler.framework.handle import Handle

__all__ = ["DraScoreState", "dra_score_state"]

DYNAMIC_RESOURCES = "DynamicResources"


@dataclass(slots=True)
class DraScoreState:
    """Upstream ``draPreScoreState`` plus the resolver: what scoring DRA-backed resources reads for one pod."""

    resolver: DeviceClassResolver
    allocated: AllocatedState
    slices: Sequence[Mapping[str, Any]]
    _totals: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def serves(self, resource: str) -> bool:
        """Whether a DeviceClass backs ``resource`` (upstream ``DeviceClassResolver().GetDeviceClass != nil``)."""
        return self.resolver.get(resource) is not None

    def allocatable_allocated(self, node: Mapping[str, Any], resource: str) -> tuple[int, int]:
        """Upstream ``calculateDRAExtendedResourceAllocatableRequest``: (devices of the class on the node, those
        allocated); ``(0, 0)`` when no class serves the resource or a selector cannot be evaluated."""
        name = str((node.get("metadata") or {}).get("name") or "")
        key = (name, resource)
        found = self._totals.get(key)
        if found is None:
            device_class = self.resolver.get(resource)
            found = (0, 0) if device_class is None else _totals(node, device_class, self.allocated, self.slices)
            self._totals[key] = found
        return found


def _devices_on(node: Mapping[str, Any], spec: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The slice's devices available on ``node`` (upstream's slice- and per-device node selection)."""
    node_name = str((node.get("metadata") or {}).get("name") or "")
    devices: Sequence[Mapping[str, Any]] = spec.get("devices") or ()
    if spec.get("perDeviceNodeSelection"):
        out = []
        for device in devices:
            device_node, all_nodes = str(device.get("nodeName") or ""), bool(device.get("allNodes"))
            on_node = all_nodes or bool(device_node and device_node == node_name)
            selector = device.get("nodeSelector")
            if on_node or (selector is not None and node_matches(node, device_node, all_nodes, selector)):
                out.append(device)
        return out
    slice_node, all_nodes, selector = (
        str(spec.get("nodeName") or ""),
        bool(spec.get("allNodes")),
        spec.get("nodeSelector"),
    )
    if not all_nodes and slice_node != node_name and selector is not None:
        return devices if node_matches(node, slice_node, all_nodes, selector) else ()
    if not all_nodes and slice_node and slice_node != node_name:
        return ()
    return devices


def _totals(
    node: Mapping[str, Any],
    device_class: Mapping[str, Any],
    allocated: AllocatedState,
    slices: Sequence[Mapping[str, Any]],
) -> tuple[int, int]:
    """Upstream ``calculateDRAResourceTotals`` (errors: ``(0, 0)``)."""
    selectors = (device_class.get("spec") or {}).get("selectors") or ()
    owner = f"class {(device_class.get('metadata') or {}).get('name')}"
    capacity = in_use = 0
    try:
        for slice_ in slices:
            spec = slice_.get("spec") or {}
            driver, pool = str(spec.get("driver") or ""), str((spec.get("pool") or {}).get("name") or "")
            for device in _devices_on(node, spec):
                name = str(device.get("name") or "")
                if selectors and not selectors_match(
                    selectors, device_view(driver, device), f"{driver}/{pool}/{name}", owner, by_class=True
                ):
                    continue
                capacity += 1
                if allocated.is_allocated((driver, pool, name)):
                    in_use += 1
    except (PoolError, SelectorFailure):
        return 0, 0
    return capacity, in_use


def dra_score_state(handle: Handle | None, resources: Sequence[str]) -> DraScoreState | None:
    """Upstream ``getDRAPreScoredParams``: None unless a configured resource is a DRA extended-resource name some
    DeviceClass serves (then the classes, the allocated devices and the slices, listed once)."""
    names = [r for r in resources if is_dra_extended_resource_name(r)]
    if handle is None or not names:
        return None
    resolver = DeviceClassResolver.from_classes(handle.list_objects("deviceclasses", ""))
    if not any(resolver.get(r) is not None for r in names):
        return None
    claims: Sequence[Mapping[str, Any]] = handle.list_objects("resourceclaims", "")
    framework = handle.framework
    in_flight = getattr(framework.plugins.get(DYNAMIC_RESOURCES), "in_flight", None) if framework else None
    if in_flight is not None:
        claims = in_flight.overlay(claims, handle.clock.monotonic())
    return DraScoreState(resolver, gather_allocated_state(claims), handle.list_objects("resourceslices", ""))
