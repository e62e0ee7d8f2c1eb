"""kube-scheduler's metrics (upstream ``pkg/scheduler/metrics/metrics.go``): names, help, buckets, labels.

One :class:`SchedulerMetrics` per registry (:meth:`SchedulerMetrics.for_registry`); schedulers sharing a registry
share it, and ``scheduler_pending_pods`` then sums their queues. Label children are resolved once and cached, and
the histograms are :class:`~kubeplane.metrics.histogram.FastHistogram` (prometheus-client's exposition, a
bisection per observation), so an observation in the scheduling cycle costs one dict lookup and a few additions.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ._per_registry import PerRegistry
from .histogram import FastHistogram

__all__ = [
    "BINDING_CONDITIONS_BUCKETS",
    "EXTENSION_POINT_BUCKETS",
    "PENDING_QUEUES",
    "PLUGIN_BUCKETS",
    "SCHEDULING_BUCKETS",
    "VICTIMS_BUCKETS",
    "SchedulerMetrics",
]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Prometheus ``ExponentialBuckets``: ``count`` upper bounds starting at ``start``."""
    return tuple(start * factor**i for i in range(count))


SCHEDULING_BUCKETS = exponential_buckets(0.001, 2, 15)
EXTENSION_POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)
VICTIMS_BUCKETS = exponential_buckets(1, 2, 7)
BINDING_CONDITIONS_BUCKETS = exponential_buckets(0.1, 2, 14)
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")

PENDING_HELP = (
    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number "
    "of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted "
    "to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to "
    "schedule because they are gated."
)

PendingSource = Callable[[], Mapping[str, int]]


class _PendingPods(Collector):
    """``scheduler_pending_pods`` computed at scrape time from the registered queues (nothing in the hot path)."""

    def __init__(self) -> None:
        self._sources: list[weakref.WeakMethod[PendingSource] | Callable[[], PendingSource | None]] = []
        self._lock = threading.Lock()

    def add(self, source: PendingSource) -> None:
        ref: weakref.WeakMethod[PendingSource] | Callable[[], PendingSource | None]
        try:
            ref = weakref.WeakMethod(source)  # a bound method: do not keep its queue alive
        except TypeError:
            ref = lambda: source  # noqa: E731 - a plain function lives as long as its registration
        with self._lock:
            self._sources.append(ref)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        totals = dict.fromkeys(PENDING_QUEUES, 0)
        with self._lock:
            live = []
            for ref in self._sources:
                fn = ref()
                if fn is None:
                    continue
                live.append(ref)
                for queue, count in fn().items():
                    totals[queue] = totals.get(queue, 0) + count
            self._sources = live
        family = GaugeMetricFamily("scheduler_pending_pods", PENDING_HELP, labels=["queue"])
        for queue, count in totals.items():
            family.add_metric([queue], float(count))
        yield family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily("scheduler_pending_pods", PENDING_HELP, labels=["queue"])


class SchedulerMetrics:
    """The scheduler's metrics on one registry. Use :meth:`for_registry` (metrics register once per registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",  # prometheus-client appends _total
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=registry,
        )
        self.scheduling_attempt_duration = FastHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=SCHEDULING_BUCKETS,
            registry=registry,
        )
        self.preemption_victims = FastHistogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=VICTIMS_BUCKETS,
            registry=registry,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=registry,
        )
        self.framework_extension_point_duration = FastHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=EXTENSION_POINT_BUCKETS,
            registry=registry,
        )
        self.plugin_execution_duration = FastHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=PLUGIN_BUCKETS,
            registry=registry,
        )
        # DRADeviceBindingConditions (beta, on in v1.37; kubernetes/kubernetes#137284): upstream registers these
        # only with the gate on, which it is by default -- kubeplane registers them always.
        self.dra_bindingconditions_allocations = Counter(
            "scheduler_dra_bindingconditions_allocations",
            "Number of allocations using devices with BindingConditions, counted per driver per scheduling attempt",
            ["profile", "driver", "status"],
            registry=registry,
        )
        self.dra_bindingconditions_wait_duration = FastHistogram(
            "scheduler_dra_bindingconditions_wait_duration_seconds",
            "Time in seconds spent waiting for BindingConditions to be satisfied during PreBind.",
            ["profile", "driver", "status"],
            buckets=BINDING_CONDITIONS_BUCKETS,
            registry=registry,
        )
        self.pending_pods = _PendingPods()
        registry.register(self.pending_pods)
        self._attempts: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._points: dict[tuple[str, str, str], Any] = {}
        self._plugins: dict[tuple[str, str, str], Any] = {}

    @classmethod
    def for_registry(cls, registry: CollectorRegistry | None = None) -> SchedulerMetrics:
        """The scheduler metrics of ``registry`` (default: the process-wide ``prometheus_client.REGISTRY``)."""
        return _SETS.get(registry)

    def add_pending_pods_source(self, source: PendingSource) -> None:
        """``source()`` returns pod counts by queue (``active``, ``backoff``, ``unschedulable``, ``gated``); it is
        called at scrape time. A bound method is held weakly."""
        self.pending_pods.add(source)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended: ``result`` is ``scheduled``, ``unschedulable`` or ``error``."""
        key = (result, profile)
        children = self._attempts.get(key)
        if children is None:
            children = (
                self.schedule_attempts.labels(result, profile),
                self.scheduling_attempt_duration.labels(result, profile),
            )
            self._attempts[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        key = (point, status, profile)
        child = self._points.get(key)
        if child is None:
            child = self._points[key] = self.framework_extension_point_duration.labels(point, status, profile)
        child.observe(seconds)

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        key = (plugin, point, status)
        child = self._plugins.get(key)
        if child is None:
            child = self._plugins[key] = self.plugin_execution_duration.labels(plugin, point, status)
        child.observe(seconds)

    def binding_conditions(self, profile: str, status: str, results: Mapping[str, int], seconds: float) -> None:
        """One PreBind wait for binding conditions ended with ``status`` (``success``, ``failure``, ``timeout``,
        ``error``) after ``seconds``: each driver's allocated results with binding conditions (``results``: driver
        -> count) are counted, and the wait is observed once per driver."""
        for driver, count in results.items():
            self.dra_bindingconditions_allocations.labels(profile, driver, status).inc(count)
            self.dra_bindingconditions_wait_duration.labels(profile, driver, status).observe(seconds)

    def preemption_attempt(self) -> None:
        self.preemption_attempts.inc()

    def preemption(self, victims: int) -> None:
        self.preemption_victims.observe(float(victims))


_SETS: PerRegistry[SchedulerMetrics] = PerRegistry(SchedulerMetrics)
