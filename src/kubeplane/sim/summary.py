"""A run's records as outputs: one row per pod (pods.csv) and the flat summary (summary.json), from what the
observer kept and the sampled time series.

The summary's pod counts come from the same place as pods.csv's ``end`` column (each pod's end,
:mod:`kubeplane.sim.outcomes`), so ``pods_completed`` … ``pods_pending_at_end`` are the column's counts and add up
to ``pods_created``. Percentiles are nearest-rank on the sorted values; every float is rounded to the microsecond
(or to the figure's own precision), so the summary of two runs with the same seed differs only in the wall-clock
figures (``wall_seconds``, ``sim_seconds_per_wall_second``, ``pods_scheduled_per_wall_second``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from . import outcomes

if TYPE_CHECKING:  # the scenario parser imports FIELDS: keep this module light
    from .observer import Observer, PodRecord

END_FIELDS: Final = {
    outcomes.COMPLETED: "pods_completed",
    outcomes.EVICTED: "pods_evicted",
    outcomes.PREEMPTED: "pods_preempted",
    outcomes.DELETED: "pods_deleted",
    outcomes.REJECTED: "pods_rejected",
    outcomes.RUNNING: "pods_running_at_end",
    outcomes.PENDING: "pods_pending_at_end",
}
"""The summary field counting each pods.csv ``end``."""

FIELDS: Final = frozenset(
    {
        "sim_seconds", "wall_seconds", "sim_seconds_per_wall_second", "pods_scheduled_per_wall_second", "nodes",
        "nodes_in_use", "nodes_in_use_peak", "nodes_in_use_mean", "pods_created", "pods_scheduled",
        *END_FIELDS.values(), "pods_succeeded", "pods_failed", "kubelet_evictions", "taint_evictions",
        "preemptions", "scheduling_attempts", "failed_scheduling_events", "scheduling_latency_p50",
        "scheduling_latency_p90", "scheduling_latency_p99", "pending_time_p50", "pending_time_p90",
        "pending_time_p99", "cpu_allocation_mean", "memory_allocation_mean", "event_log_lines", "event_log_hash",
        "gpu_capacity", "gpu_alloc_pct", "gpu_unallocated", "gpu_frag_pct", "gpu_frag_ratio_pct", "gpu_arrived_pct",
        "gpu_alloc_pct_peak", "gpu_alloc_pct_mean", "gpu_frag_pct_mean", "gpu_frag_ratio_pct_mean",
        *(f"gpu_alloc_pct_at_arrived_{r}" for r in (50, 80, 90, 100, 110, 120, 130)),
        "jobs_created", "jobs_completed", "jobs_failed", "job_completion_time_p50", "job_completion_time_p90",
        "job_completion_time_p99", "gangs", "gangs_bound", "gang_wait_time_p50", "gang_wait_time_p90",
        "gang_wait_time_p99", "volumes_provisioned", "volumes_deleted", "volume_provisioning_failures",
        "storage_capacity_bytes", "storage_used_bytes", "storage_used_bytes_peak", "storage_used_pct_peak",
        "descheduler_evictions",
        "nodes_added", "nodes_removed", "node_hours", "cost", "node_groups", "bytes_per_node", "bytes_per_pod",
    }
)  # fmt: skip
"""Every field a summary may have: what a scenario's ``headline`` may name (runs without GPU pods have no
``gpu_*``; runs without storage no ``volumes_*``/``storage_*``: :mod:`kubeplane.sim.storage`; runs without node
groups no ``nodes_added``, ``nodes_removed``, ``node_hours``, ``cost``, ``node_groups``: :mod:`.autoscaling`)."""


def pod_rows(records: Sequence[PodRecord]) -> list[dict[str, Any]]:
    """pods.csv: one row per pod in creation order (then namespace, name)."""
    rows = []
    for record in sorted(records, key=lambda r: (r.created, r.namespace, r.name)):
        rows.append(
            {
                "namespace": record.namespace,
                "name": record.name,
                "node": record.node,
                "created": round(record.created, 6),
                "scheduled": _opt(record.scheduled),
                "running": _opt(record.running),
                "finished": _opt(record.finished),
                "phase": record.phase,
                "end": record.final_end(),
                "scheduling_latency": None if record.scheduled is None else round(record.scheduled - record.created, 6),
                "pending_time": None if record.running is None else round(record.running - record.created, 6),
                "reason": record.reason,
            }
        )
    return rows


def summarise(
    observer: Observer,
    pods: Sequence[dict[str, Any]],
    timeseries: Sequence[dict[str, Any]],
    *,
    sim_seconds: float,
    wall: float,
    headline: Sequence[str] = (),
) -> dict[str, Any]:
    """summary.json's fields (without the run's identity, which the report adds). ``headline``: the scenario's
    headline fields, listed first as ``headline`` so the CLI and the report can show them before the rest."""
    latencies = [p["scheduling_latency"] for p in pods if p["scheduling_latency"] is not None]
    pending = [p["pending_time"] for p in pods if p["pending_time"] is not None]
    ends = Counter(p["end"] for p in pods)
    scheduled = sum(1 for p in pods if p["scheduled"] is not None)
    last = timeseries[-1] if timeseries else {}
    summary: dict[str, Any] = {"headline": list(headline)} if headline else {}
    summary |= {
        "sim_seconds": round(sim_seconds, 6),
        "wall_seconds": round(wall, 3),
        "sim_seconds_per_wall_second": round(sim_seconds / wall, 1) if wall > 0 else None,
        "pods_scheduled_per_wall_second": round(scheduled / wall, 1) if wall > 0 else None,
        "nodes": len(observer.nodes),
        "nodes_in_use": observer.nodes_in_use,
        "nodes_in_use_peak": observer.nodes_in_use_peak,
        "nodes_in_use_mean": _mean([r["nodes_in_use"] for r in timeseries]),
        "pods_created": len(pods),
        "pods_scheduled": scheduled,
        **{field: ends[end] for end, field in END_FIELDS.items()},
        "pods_succeeded": sum(1 for p in pods if p["phase"] == "Succeeded"),
        "pods_failed": sum(1 for p in pods if p["phase"] == "Failed"),
        "kubelet_evictions": observer.evictions,
        "taint_evictions": observer.events.get("TaintManagerEviction", 0),
        "preemptions": last.get("preemptions", 0),
        "scheduling_attempts": last.get("scheduling_attempts", 0),
        "failed_scheduling_events": observer.events.get("FailedScheduling", 0),
        "scheduling_latency_p50": percentile(latencies, 0.5),
        "scheduling_latency_p90": percentile(latencies, 0.9),
        "scheduling_latency_p99": percentile(latencies, 0.99),
        "pending_time_p50": percentile(pending, 0.5),
        "pending_time_p90": percentile(pending, 0.9),
        "pending_time_p99": percentile(pending, 0.99),
        "cpu_allocation_mean": _mean([r["cpu_allocation"] for r in timeseries]),
        "memory_allocation_mean": _mean([r["memory_allocation"] for r in timeseries]),
        "event_log_lines": observer.log_lines,
        "event_log_hash": observer.log.hexdigest(),
    }
    if observer.gpu is not None:
        summary |= observer.gpu.summary(sim_seconds)
        alloc = [r["gpu_alloc_pct"] for r in timeseries if "gpu_alloc_pct" in r]
        summary["gpu_alloc_pct_peak"] = max(alloc, default=None)
        summary["gpu_alloc_pct_mean"] = _mean(alloc, digits=4)
        summary["gpu_frag_pct_mean"] = _mean([r["gpu_frag_pct"] for r in timeseries if "gpu_frag_pct" in r], 4)
        ratio = [r["gpu_frag_ratio_pct"] for r in timeseries if "gpu_frag_ratio_pct" in r]
        summary["gpu_frag_ratio_pct_mean"] = _mean(ratio, digits=4)
    return summary


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 6)


def _mean(values: Sequence[float], digits: int = 6) -> float | None:
    return round(sum(values) / len(values), digits) if values else None


def _opt(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
