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


def test_change_log_lists_the_rows_refilled_since_an_epoch() -> None:
    infos = [_node("a", "1"), _node("b", "1"), _node("c", "1")]
    table = NodeTable(infos)
    start = table.epoch
    assert table.changed_since(start) == []  # construction is not a change
    infos[2].add_pod(_pod("p1", "100m"))
    table.refresh_row(2)
    infos[0].add_pod(_pod("p2", "100m"))
    assert table.sync() == 1
    assert table.changed_since(start) == [2, 0]
    assert table.changed_since(start + 1) == [0]
    assert table.changed_since(table.epoch) == []
    assert table.changed_since(table.epoch + 1) is None  # an epoch the table never reached


def test_change_log_is_bounded_and_an_epoch_before_its_start_gets_none() -> None:
    infos = [_node("a", "1")]
    table = NodeTable(infos)
    start = table.epoch
    for _ in range(4 * table.size + 1030):
        table.refresh_row(0)
    assert table.changed_since(start) is None  # trimmed: the memo compares generations instead
    assert table.changed_since(table.epoch) == []
    assert table.epoch == start + 4 * table.size + 1030


def test_unschedulable_and_tainted_counts_follow_the_rows() -> None:
    plain = _node("a", "1")
    tainted = NodeInfo(
        {
            "metadata": {"name": "b"},
            "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "1", "pods": "3"}},
        }
    )
    table = NodeTable([plain, tainted])
    assert (table.unschedulable_count, table.tainted_count) == (1, 1)
    table.node_infos[1] = _node("b", "1")  # the row's node lost its taint and was made schedulable again
    table.refresh_row(1)
    assert (table.unschedulable_count, table.tainted_count) == (0, 0)
    table.refresh_row(1)
    assert (table.unschedulable_count, table.tainted_count) == (0, 0)
