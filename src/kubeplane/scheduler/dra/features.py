"""The allocator's feature set (upstream ``structured/internal.Features``) and its v1.37 defaults.

Upstream ``NewAllocator`` picks the first of stable / incubating / experimental whose supported features cover the
enabled ones. With v1.37's defaults (DRAAdminAccess GA, DRAPrioritizedList GA, DRADeviceTaints, DRAPartitionable-
Devices, DRAConsumableCapacity, DRADeviceBindingConditions + DRAResourceClaimDeviceStatus beta and on) only
"incubating" supports the set, so kubeplane implements that variant. A feature switched off behaves as upstream's
checks for it do (subrequests or capacity requests refused, counters or taints ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_FEATURES", "DRA_GATE_DEFAULTS", "Features", "features_from_gates", "gate"]

DRA_GATE_DEFAULTS: Final[Mapping[str, bool]] = {
    "DRAAdminAccess": True,
    "DRAPrioritizedList": True,
    "DRADeviceTaints": True,
    "DRAPartitionableDevices": True,
    "DRAConsumableCapacity": True,
    "DRAFractionalCapacityRange": True,
    "DRADeviceBindingConditions": True,
    "DRAResourceClaimDeviceStatus": True,
    "DRAExtendedResource": True,
    "DRASchedulerFilterTimeout": True,
}
"""v1.37's defaults of the DRA gates the plugin reads (pkg/features/kube_features.go)."""


@dataclass(frozen=True, slots=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_binding_and_status: bool = True
    consumable_capacity: bool = True
    fractional_capacity_range: bool = True


DEFAULT_FEATURES: Final = Features()


def gate(gates: Mapping[str, bool] | None, name: str) -> bool:
    """A DRA gate's value: from ``gates`` when it knows the gate, else v1.37's default."""
    if gates is not None and name in gates:
        return bool(gates[name])
    return DRA_GATE_DEFAULTS.get(name, False)


def features_from_gates(gates: Mapping[str, bool] | None) -> Features:
    """Upstream ``AllocatorFeatures(fts)``."""
    return Features(
        admin_access=gate(gates, "DRAAdminAccess"),
        prioritized_list=gate(gates, "DRAPrioritizedList"),
        partitionable_devices=gate(gates, "DRAPartitionableDevices"),
        device_taints=gate(gates, "DRADeviceTaints"),
        device_binding_and_status=gate(gates, "DRADeviceBindingConditions")
        and gate(gates, "DRAResourceClaimDeviceStatus"),
        consumable_capacity=gate(gates, "DRAConsumableCapacity"),
        fractional_capacity_range=gate(gates, "DRAFractionalCapacityRange"),
    )
