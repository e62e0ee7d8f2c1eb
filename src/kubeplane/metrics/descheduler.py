"""The descheduler's metrics (upstream ``metrics/metrics.go``, v0.36): ``descheduler_pods_evicted`` (deprecated
in 0.34, still exported) and ``descheduler_pods_evicted_total``, both counters by ``result``, ``strategy``,
``profile``, ``namespace``, ``node``; ``descheduler_loop_duration_seconds`` and
``descheduler_strategy_duration_seconds``.

Upstream's deprecated counter has no ``_total`` suffix, which prometheus-client's ``Counter`` always adds, so
both eviction counters are one table of counts exported by a collector under the two names (the deprecated one
as an untyped family: the text format gives counters the ``_total`` suffix).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ._per_registry import PerRegistry

__all__ = ["EVICTED_LABELS", "DeschedulerMetrics", "descheduler_metrics"]

EVICTED_LABELS: Final = ("result", "strategy", "profile", "namespace", "node")
EVICTED_HELP: Final = (
    "Number of total evicted pods, by the result, by the strategy, by the namespace, by the node name. "
    "'error' result means a pod could not be evicted"
)
LOOP_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500)
STRATEGY_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100)


class _Evicted(Collector):
    def __init__(self) -> None:
        self.counts: dict[tuple[str, ...], float] = {}

    def collect(self) -> Iterator[Metric]:
        # The deprecated family has no _total suffix, which the text format allows only for untyped families;
        # the current one is a counter (its family name is the sample name without _total).
        for family_name, kind, sample in (
            ("descheduler_pods_evicted", "unknown", "descheduler_pods_evicted"),
            ("descheduler_pods_evicted", "counter", "descheduler_pods_evicted_total"),
        ):
            family = Metric(family_name, EVICTED_HELP, kind)
            for labels, value in sorted(self.counts.items()):
                family.add_sample(sample, dict(zip(EVICTED_LABELS, labels, strict=True)), value)
            yield family


class DeschedulerMetrics:
    """The descheduler's metrics on one registry (use :func:`descheduler_metrics`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._evicted = _Evicted()
        registry.register(self._evicted)
        self.loop_duration = Histogram(
            "descheduler_loop_duration_seconds",
            "Time taken to complete a full descheduling cycle",
            buckets=LOOP_BUCKETS,
            registry=registry,
        )
        self.strategy_duration = Histogram(
            "descheduler_strategy_duration_seconds",
            "Time taken to complete Each strategy of the descheduling operation",
            ["strategy", "profile"],
            buckets=STRATEGY_BUCKETS,
            registry=registry,
        )

    def pods_evicted(self, *, result: str, strategy: str, profile: str, namespace: str, node: str) -> None:
        """Count one eviction attempt under both counters' names."""
        key = (result, strategy, profile, namespace, node)
        self._evicted.counts[key] = self._evicted.counts.get(key, 0.0) + 1.0

    def evicted_counts(self) -> dict[tuple[str, ...], float]:
        """A copy of the counts by (result, strategy, profile, namespace, node)."""
        return dict(self._evicted.counts)


_SETS: PerRegistry[DeschedulerMetrics] = PerRegistry(DeschedulerMetrics)


def descheduler_metrics(registry: CollectorRegistry | None = None) -> DeschedulerMetrics:
    """The set on ``registry`` (default: the process-wide one), registered on first use."""
    return _SETS.get(registry)
