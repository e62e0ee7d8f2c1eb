"""node_search.NodeRows: the vector Filter stage's feasible nodes as a lazy view over NodeTable rows reads as the
list it replaces (same nodes, same order), for every consumer of SearchResult.feasible; and the masks the search
leaves out (a plugin that passes every row) are ones that keep every row."""

from __future__ import annotations

import numpy as np
import pytest

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.node_search import NodeRows
from kubeplane.scheduler.plugins.node_name import NodeName
from kubeplane.scheduler.plugins.node_unschedulable import NodeUnschedulable
from kubeplane.scheduler.plugins.taint_toleration import TaintToleration


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


def _tainted(name: str, *, unschedulable: bool = False) -> NodeInfo:
    spec: dict[str, object] = {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": unschedulable}
    return NodeInfo({"metadata": {"name": name}, "spec": spec, "status": {"allocatable": {"cpu": "1", "pods": "9"}}})


def _pod(spec: dict[str, object]) -> PodInfo:
    return PodInfo({"metadata": {"name": "p", "namespace": "d", "uid": "p"}, "spec": {"containers": [], **spec}})


@pytest.mark.parametrize(
    ("plugin", "nodes", "spec", "claims"),
    [
        (TaintToleration(), ["plain"], {}, True),
        (TaintToleration(), ["plain", "tainted"], {}, False),
        (NodeUnschedulable(), ["plain", "tainted"], {}, True),
        (NodeUnschedulable(), ["plain", "cordoned"], {}, False),
        (
            NodeUnschedulable(),
            ["cordoned"],
            {"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]},
            True,
        ),
        (NodeName(), ["plain"], {}, True),
        (NodeName(), ["plain"], {"nodeName": "n0"}, False),
    ],
    ids=[
        "TaintToleration-no-tainted-node",
        "TaintToleration-a-tainted-node",
        "NodeUnschedulable-none-cordoned",
        "NodeUnschedulable-a-cordoned-node",
        "NodeUnschedulable-tolerated",
        "NodeName-unset",
        "NodeName-set",
    ],
)
def test_passes_every_row_claims_only_what_filter_vector_passes(
    plugin: TaintToleration | NodeUnschedulable | NodeName, nodes: list[str], spec: dict[str, object], claims: bool
) -> None:
    """The node search leaves a plugin's mask out when it claims every row passes: the claim must imply an
    all-True mask (and is made exactly where it is cheap to know)."""

    def make(kind: str, name: str) -> NodeInfo:
        return _node(name) if kind == "plain" else _tainted(name, unschedulable=kind == "cordoned")

    infos = [make(kind, f"n{i}") for i, kind in enumerate(nodes)]
    table = NodeTable(infos)
    pod, state = _pod(spec), CycleState()
    assert plugin.passes_every_row(state, pod, table) is claims
    if claims:
        assert plugin.filter_vector(state, pod, table, np.arange(len(infos), dtype=np.int64)).all()
