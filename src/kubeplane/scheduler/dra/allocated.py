"""Devices already in use (upstream ``schedulerapi.AllocatedState`` as the plugin's ``GatherAllocatedState`` fills
it from the claim assume cache plus in-flight allocations, ``allocateddevices.go``).

Invariants: a result with ``adminAccess: true`` does not make its device "in use" (admin access never blocks other
allocations); a result with a ``shareID`` (consumable capacity, ``allowMultipleAllocations`` devices) adds its
``consumedCapacity`` to the device's aggregated capacity instead of marking the device allocated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.quantity import Quantity

__all__ = ["AllocatedState", "DeviceID", "gather_allocated_state"]

DeviceID = tuple[str, str, str]
"""(driver, pool, device)."""


@dataclass(slots=True)
class AllocatedState:
    allocated_devices: set[DeviceID] = field(default_factory=set)
    shared_device_ids: set[tuple[str, str, str, str]] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, Quantity]] = field(default_factory=dict)

    def is_allocated(self, device_id: DeviceID) -> bool:
        """Upstream ``IsDeviceAllocated``: fully allocated, or some of its capacity consumed."""
        if device_id in self.allocated_devices or device_id in self.aggregated_capacity:
            return True
        return any(s[:3] == device_id for s in self.shared_device_ids)


def _add_result(state: AllocatedState, result: Mapping[str, Any]) -> None:
    if result.get("adminAccess"):
        return
    device_id = (str(result.get("driver") or ""), str(result.get("pool") or ""), str(result.get("device") or ""))
    share_id = result.get("shareID")
    if not share_id:
        state.allocated_devices.add(device_id)
        return
    state.shared_device_ids.add((*device_id, str(share_id)))
    consumed = state.aggregated_capacity.setdefault(device_id, {})
    for name, value in (result.get("consumedCapacity") or {}).items():
        q = Quantity.parse(value)
        consumed[name] = consumed[name] + q if name in consumed else q


def gather_allocated_state(claims: Iterable[Mapping[str, Any]]) -> AllocatedState:
    """The state of every allocated claim of ``claims`` (the informer's, with in-flight ones substituted)."""
    state = AllocatedState()
    for claim in claims:
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            continue
        for result in (allocation.get("devices") or {}).get("results") or ():
            _add_result(state, result)
    return state
