"""GPU allocation and fragmentation tracked from pod and node updates (kubeplane.sim.gpu)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.gpu.frag import FragModel, PodType, typical_pods
from kubeplane.sim.gpu import GpuMetrics, declared_pod_types, pod_type_of


def gpu_node(name: str, gpus: int, cpu: str = "16", model: str = "T4") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": model}},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "nvidia.com/gpu": str(gpus)}},
    }


def pod(
    name: str, *, cpu: str = "1", share: int | None = None, whole: int = 0, node: str = "", devices: str = ""
) -> dict[str, Any]:
    annotations = {}
    if share is not None:
        annotations["gpu.kubeplane.io/milli"] = str(share)
    if devices:
        annotations["gpu.kubeplane.io/devices"] = devices
    limits: dict[str, Any] = {"cpu": cpu}
    if whole:
        limits["nvidia.com/gpu"] = str(whole)
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": limits}}]},
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_pod_types_of_pods_and_workloads() -> None:
    assert pod_type_of(pod("a", cpu="2", share=300)) == PodType(2000, 300, 1)
    assert pod_type_of(pod("b", whole=2)) == PodType(1000, 1000, 2)
    assert pod_type_of(pod("c")) == PodType(1000, 0, 0)
    deployment = {"kind": "Deployment", "spec": {"replicas": 3, "template": pod("t", share=500)}}
    types = declared_pod_types([pod("a", share=300), deployment, {"kind": "Service"}], [(pod("g"), 2)])
    assert types == [PodType(1000, 300, 1)] + [PodType(1000, 500, 1)] * 3 + [PodType(1000, 0, 0)] * 2
    assert GpuMetrics.for_pod_types([PodType(1000, 0, 0)]) is None


def test_tracker_follows_arrivals_bindings_devices_and_deletions() -> None:
    types = [PodType(1000, 500, 1)] * 3 + [PodType(1000, 1000, 1)]
    tracker = GpuMetrics.for_pod_types(types)
    assert tracker is not None
    model = FragModel(typical_pods(types))
    tracker.node(gpu_node("n1", 2))
    assert tracker.capacity == 2000
    assert tracker.frag == pytest.approx(model.node(16000, [1000, 1000], "T4"))
    tracker.pod(pod("a", share=700), now=1.0)
    assert (tracker.arrived, tracker.used) == (700, 0)
    assert (tracker.arrivals[-1]["arrived_gpu_milli"], tracker.arrivals[-1]["pod"]) == (700, "default/a")
    tracker.pod(pod("a", share=700, node="n1", devices="1"), now=2.0)
    assert tracker.used == 700
    assert tracker.frag == pytest.approx(model.node(15000, [1000, 300], "T4"))
    reading = tracker.reading(3.0)
    assert (reading["gpu_alloc_pct"], reading["gpu_unallocated"]) == (35.0, 1.3)
    assert reading["idle_milli"] == 1300
    assert reading["gpu_frag_pct"] == pytest.approx(tracker.frag / 2000 * 100, abs=1e-3)
    # A whole-GPU pod bound without an annotation takes the first free device (0).
    tracker.pod(pod("b", whole=1, node="n1"), now=4.0)
    assert tracker.used == 1700
    assert tracker.frag == pytest.approx(model.node(14000, [0, 300], "T4"))
    # Finishing frees the devices; deletion too.
    done = pod("a", share=700, node="n1", devices="1")
    done["status"]["phase"] = "Succeeded"
    tracker.pod(done, now=5.0)
    assert tracker.used == 1000
    tracker.pod_deleted(pod("b", whole=1, node="n1"))
    assert tracker.used == 0
    assert tracker.frag == pytest.approx(model.node(16000, [1000, 1000], "T4"))
    assert tracker.arrived == 1700  # arrivals never go back
