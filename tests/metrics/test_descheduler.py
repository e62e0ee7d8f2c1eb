"""The descheduler's metrics: upstream's names and labels, the deprecated ``descheduler_pods_evicted`` exported
without a ``_total`` suffix next to ``descheduler_pods_evicted_total``, one set per registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from kubeplane.metrics.descheduler import descheduler_metrics


def test_both_eviction_counters_with_upstreams_labels() -> None:
    registry = CollectorRegistry()
    metrics = descheduler_metrics(registry)
    assert descheduler_metrics(registry) is metrics
    for _ in range(2):
        metrics.pods_evicted(result="success", strategy="PodLifeTime", profile="p", namespace="ns", node="n1")
    metrics.loop_duration.observe(0.2)
    text = generate_latest(registry).decode()
    labels = 'namespace="ns",node="n1",profile="p",result="success",strategy="PodLifeTime"'
    assert "# TYPE descheduler_pods_evicted untyped" in text
    assert "# TYPE descheduler_pods_evicted_total counter" in text
    assert f"descheduler_pods_evicted{{{labels}}} 2.0" in text
    assert f"descheduler_pods_evicted_total{{{labels}}} 2.0" in text
    assert "descheduler_loop_duration_seconds_count 1.0" in text
