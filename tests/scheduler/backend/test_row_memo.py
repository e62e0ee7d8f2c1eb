"""RowMemo: a pod-keyed elementwise function of NodeTable rows, kept as a whole-table column across cycles, gives
exactly ``fn(rows)`` whatever changed in between (rows refilled through the change log, a log trimmed past the
memo, another table of the same size, a table of another size), whether the changed rows are refreshed one by
one or as an array; a key gets a column only once in steady use."""

from __future__ import annotations

import numpy as np

from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
from kubeplane.scheduler.backend.row_memo import _MAX_KEYS, _PROMOTE_AFTER, RowMemo
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo


def _node(name: str) -> NodeInfo:
    allocatable = {"cpu": "4", "memory": "1Gi", "pods": "110"}
    return NodeInfo({"metadata": {"name": name}, "status": {"allocatable": allocatable}})


def _pod(name: str, cpu: str) -> PodInfo:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}
    return PodInfo({"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": {"containers": [container]}})


class _Counted:
    """``free cpu - k`` per row, counting the rows each path computed."""

    def __init__(self, table: NodeTable, k: int) -> None:
        self.table, self.k = table, k
        self.vector_rows = 0
        self.single_rows = 0

    def fn(self, rows: IntArray) -> IntArray:
        self.vector_rows += len(rows)
        out: IntArray = self.table.free[1, rows] - self.k
        return out

    def one(self, row: int) -> int:
        self.single_rows += 1
        return int(self.table.free[1, row]) - self.k


def _table(n: int) -> NodeTable:
    return NodeTable([_node(f"n{i}") for i in range(n)])


def _add(table: NodeTable, row: int, name: str) -> None:
    table.node_infos[row].add_pod(_pod(name, "100m"))
    table.refresh_row(row)


def test_a_key_gets_a_column_after_steady_use_and_then_only_changed_rows_are_computed() -> None:
    table = _table(40)
    memo, f = RowMemo(), _Counted(table, 7)
    rows = np.arange(0, 40, 3, dtype=np.int64)
    for _ in range(_PROMOTE_AFTER - 1):
        assert memo.get(table, "k", f.fn, rows, one=f.one).tolist() == f.fn(rows).tolist()
    f.vector_rows = 0
    memo.get(table, "k", f.fn, rows, one=f.one)
    assert f.vector_rows == 40  # promoted: the whole table once
    _add(table, 3, "p1")
    _add(table, 3, "p2")  # the same row twice: computed once
    _add(table, 5, "p3")
    f.vector_rows = 0
    got = memo.get(table, "k", f.fn, rows, one=f.one)
    assert got.tolist() == f.fn(rows).tolist()
    assert f.single_rows == 2


def test_many_changed_rows_are_refreshed_as_one_array() -> None:
    table = _table(40)
    memo, f = RowMemo(), _Counted(table, 0)
    rows = np.arange(40, dtype=np.int64)
    for _ in range(_PROMOTE_AFTER):
        memo.get(table, "k", f.fn, rows, one=f.one)
    for r in range(20):
        _add(table, r, f"p{r}")
    f.vector_rows = 0
    assert memo.get(table, "k", f.fn, rows, one=f.one).tolist() == f.fn(rows).tolist()
    assert f.single_rows == 0


def test_a_trimmed_log_another_table_and_another_size_still_give_fn() -> None:
    table = _table(10)
    memo, f = RowMemo(), _Counted(table, 1)
    rows = np.arange(10, dtype=np.int64)
    for _ in range(_PROMOTE_AFTER):
        memo.get(table, "k", f.fn, rows)
    for i in range(4 * table.size + 1100):  # past the log's bound: generations are compared instead
        _add(table, i % 10, f"p{i}")
    assert memo.get(table, "k", f.fn, rows).tolist() == f.fn(rows).tolist()
    other = NodeTable([ni.clone() for ni in table.node_infos])  # same contents, another table
    _add(other, 4, "q")
    g = _Counted(other, 1)
    assert memo.get(other, "k", g.fn, rows).tolist() == g.fn(rows).tolist()
    bigger = _table(12)
    h = _Counted(bigger, 1)
    all_rows = np.arange(12, dtype=np.int64)
    assert memo.get(bigger, "k", h.fn, all_rows).tolist() == h.fn(all_rows).tolist()


def test_keys_are_separate_and_bounded() -> None:
    table = _table(8)
    memo = RowMemo()
    rows = np.arange(8, dtype=np.int64)
    for k in range(_MAX_KEYS + 3):
        f = _Counted(table, k)
        for _ in range(_PROMOTE_AFTER):
            assert memo.get(table, k, f.fn, rows).tolist() == f.fn(rows).tolist()
    assert len(memo._columns) == _MAX_KEYS
