"""NodeTable's derived ``free`` matrix: allocatable minus requested of pods, cpu, memory and ephemeral-storage per
row, kept equal to the columns it derives from through fills and row refreshes (what NodeResourcesFit's vector
Filter reads)."""

from __future__ import annotations

import numpy as np

from kubeplane.scheduler.backend.node_table import FREE_RESOURCES, NodeTable
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo


def _node(name: str, cpu: str) -> NodeInfo:
    allocatable = {"cpu": cpu, "memory": "1Gi", "ephemeral-storage": "10Gi", "pods": "3"}
    return NodeInfo({"metadata": {"name": name}, "status": {"allocatable": allocatable}})


def _pod(name: str, cpu: str) -> PodInfo:
    requests = {"cpu": cpu, "memory": "100Mi"}
    container = {"name": "c", "image": "i", "resources": {"requests": requests}}
    return PodInfo({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": {"containers": [container]}})


def _expected(table: NodeTable) -> list[list[int]]:
    return [(table.allocatable[name] - table.requested[name]).tolist() for name in FREE_RESOURCES]


def test_free_is_allocatable_minus_requested_after_fills_and_refreshes() -> None:
    infos = [_node("a", "1"), _node("b", "500m")]
    infos[1].add_pod(_pod("p1", "800m"))  # overcommitted: negative free cpu
    table = NodeTable(infos)
    assert table.free.tolist() == _expected(table)
    assert table.free[:, 1].tolist() == [2, -300, 1024**3 - 100 * 1024**2, 10 * 1024**3]
    infos[0].add_pod(_pod("p2", "250m"))
    table.refresh_row(0)
    assert table.free.tolist() == _expected(table)
    assert table.free[FREE_RESOURCES.index("cpu"), 0] == 750
    assert np.array_equal(table.free[FREE_RESOURCES.index("pods")], [2, 2])
