"""node_search.NodeRows: the vector Filter stage's feasible nodes as a lazy view over NodeTable rows reads as the
list it replaces (same nodes, same order), for every consumer of SearchResult.feasible."""

from __future__ import annotations

import numpy as np

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.types import NodeInfo
from kubeplane.scheduler.node_search import NodeRows


def _node(name: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}})


def test_node_rows_reads_as_the_list_of_its_rows() -> None:
    infos = [_node(f"n{i}") for i in range(6)]
    table = NodeTable(infos)
    rows = np.array([4, 1, 5], dtype=np.int64)
    view = NodeRows(table, rows)
    expected = [infos[4], infos[1], infos[5]]
    assert len(view) == 3
    assert bool(view)
    assert view[0] is infos[4]
    assert view[-1] is infos[5]
    assert view[1:] == expected[1:]
    assert list(view) == expected
    assert view.as_list() is view.as_list()  # built once
    assert view.names() == ["n4", "n1", "n5"]
    assert infos[1] in view
    assert infos[0] not in view
    assert view.index(infos[5]) == 2
    assert not NodeRows(table, np.zeros(0, np.int64))
