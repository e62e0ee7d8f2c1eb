"""Nodes and pods with only resource requests, for the tests of the preemption columns (nominated pods' and
lower-priority pods' summed requests): cpu, memory and an extended GPU resource."""

from __future__ import annotations

from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

GPU = "example.com/gpu"


def resource_node(name: str) -> NodeInfo:
    """4 cpu, 8Gi, 10 pods, 4 GPUs."""
    allocatable = {"cpu": "4", "memory": "8Gi", "pods": "10", GPU: "4"}
    return NodeInfo({"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}})


def resource_pod(i: int, priority: int, cpu: int, gpus: int, version: int = 0) -> PodInfo:
    """Pod ``p<i>`` (uid ``uid-<i>``) requesting ``cpu`` millicores (100 more per ``version``: a larger new
    version of the same pod), 1Gi and ``gpus`` GPUs."""
    requests = {"cpu": f"{cpu + 100 * version}m", "memory": "1Gi"}
    if gpus:
        requests[GPU] = str(gpus)
    return PodInfo(
        {
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"uid-{i}"},
            "spec": {
                "priority": priority,
                "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
            },
        }
    )
