"""Storage in a simulation: the simulated CSI drivers' counters as time-series columns and summary fields.

A scenario declares storage through its cluster (the node config's ``csiDrivers`` and per-group ``csiCapacity``)
and its workload (StorageClass, PersistentVolumeClaim, StatefulSet manifests). The fleet's drivers
(:class:`kubeplane.kubelet.csi.driver.CSIPlugins`) count what they provisioned and deleted and the bytes they hold;
this module reads that API:

* time series (only when the cluster configures CSI: ``csiDrivers`` other than the default, or any
  ``csiCapacity``, so a run without storage keeps its columns): ``volumes`` held, ``storage_used_bytes``,
  ``storage_capacity_bytes`` (capacity-tracked drivers; 0 when all are unlimited);
* summary (same condition, or whenever a volume was provisioned): ``volumes_provisioned``, ``volumes_deleted``,
  ``volume_provisioning_failures``, ``storage_capacity_bytes``, ``storage_used_bytes`` (at the end),
  ``storage_used_bytes_peak`` and ``storage_used_pct_peak`` (of the tracked capacity).

Invariant: figures are sums over every driver of the fleet, read at sample time; nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.kubelet.config import NodeSpec
from kubeplane.kubelet.csi.config import DEFAULT_DRIVER
from kubeplane.kubelet.csi.driver import CSIPlugins

__all__ = ["STORAGE_COLUMNS", "STORAGE_FIELDS", "storage_declared", "storage_row", "storage_summary"]

STORAGE_COLUMNS: Final = ("volumes", "storage_used_bytes", "storage_capacity_bytes")
STORAGE_FIELDS: Final = (
    "volumes_provisioned",
    "volumes_deleted",
    "volume_provisioning_failures",
    "storage_capacity_bytes",
    "storage_used_bytes",
    "storage_used_bytes_peak",
    "storage_used_pct_peak",
)


def storage_declared(nodes: Sequence[NodeSpec]) -> bool:
    """Whether the cluster configures CSI beyond the default driver (so the run reports storage)."""
    return any(spec.csi_capacity or spec.csi_drivers != (DEFAULT_DRIVER,) for spec in nodes)


def storage_row(csi: CSIPlugins) -> dict[str, int]:
    stats = csi.stats().values()
    return {
        "volumes": sum(s.volumes for s in stats),
        "storage_used_bytes": sum(s.used_bytes for s in stats),
        "storage_capacity_bytes": sum(s.total_bytes or 0 for s in stats),
    }


def storage_summary(csi: CSIPlugins, timeseries: Sequence[Mapping[str, Any]], *, declared: bool) -> dict[str, Any]:
    stats = list(csi.stats().values())
    provisioned = sum(s.provisioned for s in stats)
    if not declared and not provisioned:
        return {}
    row = storage_row(csi)
    peak = max([int(r.get("storage_used_bytes", 0)) for r in timeseries] + [row["storage_used_bytes"]])
    capacity = row["storage_capacity_bytes"]
    return {
        "volumes_provisioned": provisioned,
        "volumes_deleted": sum(s.deleted for s in stats),
        "volume_provisioning_failures": sum(s.failed for s in stats),
        "storage_capacity_bytes": capacity,
        "storage_used_bytes": row["storage_used_bytes"],
        "storage_used_bytes_peak": peak,
        "storage_used_pct_peak": round(100 * peak / capacity, 4) if capacity else None,
    }
