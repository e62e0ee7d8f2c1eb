"""framework.interface: FeasibleRows, the Filter stage's rows handed to PreScore, hold only for the very node
list and table."""

from __future__ import annotations

import numpy as np

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.interface import FeasibleRows
from kubeplane.scheduler.framework.types import NodeInfo


def _node(name: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}})


def test_rows_only_for_the_same_list_and_table() -> None:
    infos = [_node("a"), _node("b"), _node("c")]
    table = NodeTable(infos)
    feasible = [infos[2], infos[0]]
    rows = np.array([2, 0], dtype=np.int64)
    known = FeasibleRows(feasible, table, rows)
    assert known.rows_for(table, feasible) is rows
    assert known.rows_for(table, list(feasible)) is None  # an equal list is not the list the cycle scored
    assert known.rows_for(NodeTable(infos), feasible) is None  # another table's rows may differ
