"""DefaultPreemption's memo of SelectVictimsOnNode results (upstream default_preemption.go ``SelectVictimsOnNode``
is a function of the node's pods, the preemptor's priority and requests, the nominated pods, the PDBs and, for
victims without a startTime, the clock): the per-node entries and their columns over a NodeTable.

The columns answer for a row exactly when the node's entry would be returned for a node without nominated pods:
same generation, same epoch (priority, checked requests, PDB objects by identity), no clock, no nominated pods.
The dry run's use of them is held to the generic path by ``test_resource_only.py``'s property tests."""

from __future__ import annotations

import numpy as np
import pytest

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.interface import Status
from kubeplane.scheduler.plugins.victim_cache import Checks, Selection, VictimCache
from tests.scheduler.resource_objects import resource_node, resource_pod

CHECKS: Checks = (("cpu", 3000, False, "Insufficient cpu"),)
OTHER_CHECKS: Checks = (("cpu", 2000, False, "Insufficient cpu"),)


def _cluster() -> tuple[NodeTable, VictimCache, list[Selection]]:
    nodes = [resource_node(f"n{i}") for i in range(3)]
    for i, node in enumerate(nodes):
        node.add_pod(resource_pod(i, 0, 900, 0))
    table = NodeTable(nodes)
    cache = VictimCache()
    cache.begin([], nodes, table)
    selections: list[Selection] = []
    for node in nodes:
        selection: Selection = (list(node.pods), 0, None)
        cache.put(node, 10, CHECKS, [], None, selection)
        selections.append(selection)
    return table, cache, selections


ROWS = np.arange(3, dtype=np.int64)


def test_columns_keep_the_results_that_need_no_nominated_pod_and_no_clock() -> None:
    table, cache, selections = _cluster()
    kept = cache.kept_rows(table, ROWS, 10, CHECKS)
    assert kept is not None
    assert kept.tolist() == [True, True, True]
    for row, selection in enumerate(selections):
        got = cache.row_selection(row)
        assert got == selection
        assert got is cache.get(table.node_infos[row], 10, CHECKS, [], 0.0).selection  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("priority", "checks"),
    [(9, CHECKS), (10, OTHER_CHECKS)],
    ids=["another-preemptor-priority", "other-requests-checked"],
)
def test_another_epoch_keeps_nothing(priority: int, checks: Checks) -> None:
    table, cache, _ = _cluster()
    kept = cache.kept_rows(table, ROWS, priority, checks)
    assert kept is not None
    assert not kept.any()


def test_other_pdb_objects_keep_nothing_the_same_ones_keep_all() -> None:
    """PDBs are compared by identity (an update replaces the object), as the per-node entries compare them."""
    table, cache, _ = _cluster()
    cache.begin([{"metadata": {"name": "pdb"}}], table.node_infos, table)
    kept = cache.kept_rows(table, ROWS, 10, CHECKS)
    assert kept is not None
    assert not kept.any()
    cache.begin([], table.node_infos, table)
    kept = cache.kept_rows(table, ROWS, 10, CHECKS)
    assert kept is not None
    assert kept.all()


def test_a_changed_node_is_not_kept() -> None:
    table, cache, _ = _cluster()
    table.node_infos[1].add_pod(resource_pod(9, 0, 100, 0))
    table.sync()
    kept = cache.kept_rows(table, ROWS, 10, CHECKS)
    assert kept is not None
    assert kept.tolist() == [True, False, True]


@pytest.mark.parametrize(
    ("nominated", "now"),
    [(True, None), (False, 5.0)],
    ids=["result-with-nominated-pods", "result-ordered-by-the-clock"],
)
def test_a_result_that_needs_more_voids_its_row(nominated: bool, now: float | None) -> None:
    """The entry is replaced by one the columns cannot hold: the row's older column result must not answer."""
    table, cache, _ = _cluster()
    node = table.node_infos[2]
    others = [resource_pod(20, 10, 100, 0)] if nominated else []
    cache.put(node, 10, CHECKS, others, now, ([], 0, Status.unresolvable("x")))
    kept = cache.kept_rows(table, ROWS, 10, CHECKS)
    assert kept is not None
    assert kept.tolist() == [True, True, False]


def test_columns_over_another_table_answer_nothing() -> None:
    table, cache, _ = _cluster()
    other = NodeTable(table.node_infos)
    assert cache.kept_rows(other, ROWS, 10, CHECKS) is None
    cache.begin([], other.node_infos, other)  # a new table: its columns start empty
    kept = cache.kept_rows(other, ROWS, 10, CHECKS)
    assert kept is not None
    assert not kept.any()
