"""``leader_election_master_status`` (client-go's leader election metric, as kube-scheduler exposes it)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from ._per_registry import PerRegistry

__all__ = ["leader_election_master_status", "set_leader_status"]


def _gauge(registry: CollectorRegistry) -> Gauge:
    return Gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
        "1 indicates master. 'name' is the string used to identify the lease. Please make sure to "
        "group by name.",
        ["name"],
        registry=registry,
    )


_GAUGES: PerRegistry[Gauge] = PerRegistry(_gauge)


def leader_election_master_status(registry: CollectorRegistry | None = None) -> Gauge:
    """The gauge on ``registry`` (default: the process-wide one), registered on first use."""
    return _GAUGES.get(registry)


def set_leader_status(name: str, leading: bool, *, registry: CollectorRegistry | None = None) -> None:
    """Record whether this process holds the lease ``name`` (1) or is a backup (0)."""
    leader_election_master_status(registry).labels(name).set(1.0 if leading else 0.0)
