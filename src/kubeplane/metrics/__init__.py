"""Prometheus metrics with upstream's names, help strings, buckets and labels (``prometheus-client``).

A base layer like ``api/``: it imports nothing of kubeplane, so the API server, the scheduler and the CLI can all
use it. Each component's metrics live on a :class:`prometheus_client.CollectorRegistry` (the process-wide
``prometheus_client.REGISTRY`` unless one is injected, so tests can use a fresh registry per component).
"""

from __future__ import annotations

from prometheus_client import disable_created_metrics

from .apiserver import APIServerMetrics
from .leader import leader_election_master_status, set_leader_status
from .scheduler import SchedulerMetrics
from .server import CONTENT_TYPE, MetricsServer, exposition, start_metrics_server

__all__ = [
    "CONTENT_TYPE",
    "APIServerMetrics",
    "MetricsServer",
    "SchedulerMetrics",
    "exposition",
    "leader_election_master_status",
    "set_leader_status",
    "start_metrics_server",
]

# Upstream's component-base exposes no ``*_created`` series; prometheus-client would add one per counter,
# histogram and summary (a process-wide switch of the library).
disable_created_metrics()  # type: ignore[no-untyped-call]
