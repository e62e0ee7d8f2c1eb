"""The nominated pods' columns against a recount (upstream ``RunFilterPluginsWithNominatedPods`` adds, on each
node, the nominated pods whose priority is at least the incoming pod's; nominator.go keeps them per node).

The columns are refreshed from the nominator's change log, so the property test drives a real Nominator through
random nominations, re-nominations, updates (a new version of a pod, larger), clearing (``""``, upstream's
ModeOverride) and deletions, and after every step requires each threshold's columns to equal a count over
``pods_for_node``, including after the log was trimmed (a full rebuild).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.nominated_columns import NominatedColumnsCache
from kubeplane.scheduler.backend.nominator import Nominator
from kubeplane.scheduler.framework.types import PodInfo
from tests.scheduler.resource_objects import GPU, resource_node, resource_pod

NODES = ("n0", "n1", "n2", "n3")


_step = st.tuples(
    st.sampled_from(["add", "override", "clear", "update", "delete"]),
    st.integers(0, 5),  # which pod
    st.sampled_from(NODES),
    st.integers(0, 3),  # priority
    st.sampled_from([100, 500]),
    st.sampled_from([0, 1]),
)


def test_generation_counts_changes_and_names_the_nodes() -> None:
    nominator = Nominator()
    a, b = resource_pod(0, 1, 100, 0), resource_pod(1, 1, 100, 0)
    nominator.add(a, "n0")
    nominator.add(b, "n1")
    assert nominator.generation == 2
    assert nominator.changed_since(0) == {"n0", "n1"}
    assert nominator.changed_since(1) == {"n1"}
    nominator.add(a, "n2")  # a re-nomination touches both nodes
    assert nominator.changed_since(2) == {"n0", "n2"}
    nominator.add(resource_pod(2, 1, 100, 0), "")  # no nomination: nothing changed
    assert nominator.changed_since(nominator.generation) == set()
    assert nominator.node_of_uid(a.uid) == "n2"


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(_step, max_size=25), log_limit=st.sampled_from([4, 8192]))
def test_columns_follow_every_change_of_the_nominator(steps: list[tuple[Any, ...]], log_limit: int) -> None:
    nominator = Nominator()
    nominator._LOG_LIMIT = log_limit  # a short log makes readers that fell behind rebuild
    table = NodeTable([resource_node(n) for n in NODES])
    cache = NominatedColumnsCache(nominator, nominator.pods_for_node)
    versions: dict[int, int] = {}
    pods: dict[int, PodInfo] = {}
    for op, i, node, priority, cpu, gpus in steps:
        if op == "delete":
            if i in pods:
                nominator.delete(pods[i])
        elif op == "update":
            if i in pods:
                versions[i] = versions.get(i, 0) + 1
                old = pods[i]
                pods[i] = resource_pod(i, old.priority, cpu, gpus, versions[i])
                nominator.update(old, pods[i])
        else:
            pods.setdefault(i, resource_pod(i, priority, cpu, gpus))
            nominator.add(pods[i], "" if op == "clear" else node)
        for threshold in (0, 2):
            cols = cache.columns(table, threshold)
            for row, name in enumerate(NODES):
                counted = [p for p in nominator.pods_for_node(name) if p.priority >= threshold]
                assert cols.count[row] == len(counted)
                for resource in ("cpu", "memory", GPU):
                    assert cols.amount(resource)[row] == sum(p.requests.get(resource) for p in counted)


def test_a_new_table_gets_new_columns() -> None:
    """The snapshot rebuilds its table when nodes come or go: columns are per table object."""
    nominator = Nominator()
    cache = NominatedColumnsCache(nominator, nominator.pods_for_node)
    nominator.add(resource_pod(0, 1, 300, 0), "n1")
    first = cache.columns(NodeTable([resource_node(n) for n in NODES]), 0)
    assert first.count.tolist() == [0, 1, 0, 0]
    second = cache.columns(NodeTable([resource_node("n1")]), 0)
    assert second is not first
    assert np.array_equal(second.count, [1])
    assert second.amount("cpu").tolist() == [300]
