"""NodeAffinity's per-spec compile memo and its Filter column kept across cycles (node_affinity_memo.py, the
plugin's RowMemo) decide as upstream's per-node Filter, while nodes are relabelled, added and given pods between
cycles (the scheduler cache refreshing the snapshot's NodeTable rows), and pods of equal specs share one
compiled affinity."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins import node_affinity
from kubeplane.scheduler.plugins.node_affinity_memo import required_node_affinity

from .test_helper import LABEL_KEYS, LABEL_VALUES, random_node, random_pod

_labels = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=4)


@st.composite
def changes(draw: st.DrawFn, nodes: int) -> list[tuple[str, int, dict[str, str]]]:
    """Between two cycles: relabel node i, add a pod to node i, or add a new node (labels)."""
    kinds = st.sampled_from(("relabel", "pod", "pod", "node"))
    return [
        (draw(kinds), draw(st.integers(0, max(nodes - 1, 0))), draw(_labels)) for _ in range(draw(st.integers(0, 3)))
    ]


def _placed(i: int, node_name: str) -> PodInfo:
    return PodInfo({"metadata": {"name": f"x{i}", "namespace": "d", "uid": f"x{i}"}, "spec": {"nodeName": node_name}})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.lists(random_pod(), min_size=1, max_size=2), st.integers(1, 10))
def test_filter_column_follows_the_cluster(data: st.DataObject, pods: list[dict[str, Any]], count: int) -> None:
    """Eight cycles alternating the drawn pod specs (fresh PodInfos: columns are promoted after three asks and then
    only refreshed); each cycle's filter_vector over every row and over a reversed subset equals Filter."""
    cache = Cache(FakeClock())
    nodes = [data.draw(random_node(i)) for i in range(count)]
    for n in nodes:
        cache.add_node(n)
    snapshot = Snapshot()
    plugin = node_affinity.new({}, Handle(snapshot_lister=snapshot))
    placed = 0
    for cycle in range(8):
        for kind, i, labels in data.draw(changes(len(nodes))):
            if kind == "relabel":
                new = copy.deepcopy(nodes[i])
                new["metadata"]["labels"] = labels
                cache.update_node(nodes[i], new)
                nodes[i] = new
            elif kind == "pod":
                cache.add_pod(_placed(placed, nodes[i]["metadata"]["name"]))
                placed += 1
            else:
                node = data.draw(random_node(len(nodes)))
                cache.add_node(node)
                nodes.append(node)
        cache.update_snapshot(snapshot)
        pod = PodInfo(pods[cycle % len(pods)])
        infos = snapshot.list()
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, infos)
        if status is not None:
            continue
        expected = [plugin.filter(state, pod, ni) is None for ni in infos]
        table = snapshot.node_table
        rows = np.arange(len(infos), dtype=np.int64)
        assert plugin.filter_vector(state, pod, table, rows).tolist() == expected
        assert plugin.filter_vector(state, pod, table, rows[::-2].copy()).tolist() == expected[::-2]


def test_equal_specs_share_one_compiled_affinity() -> None:
    """Pods whose nodeSelector and required affinity are equal (key order aside) get the same compiled value;
    another spec gets another (upstream GetRequiredNodeAffinity reads only those two fields)."""
    required = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    a = {
        "spec": {
            "nodeSelector": {"x": "1", "y": "2"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
        }
    }
    b = copy.deepcopy(a)
    b["spec"]["nodeSelector"] = {"y": "2", "x": "1"}
    c = copy.deepcopy(a)
    c["spec"]["nodeSelector"] = {"x": "1"}
    key_a, comp_a = required_node_affinity(a, a["spec"], required)
    key_b, comp_b = required_node_affinity(b, b["spec"], required)
    key_c, comp_c = required_node_affinity(c, c["spec"], required)
    assert key_a == key_b
    assert comp_a is comp_b
    assert key_c != key_a
    assert comp_c is not comp_a
    assert comp_c.match_parts({"zone": "a", "x": "1"}, "n")[0]
    assert not comp_a.match_parts({"zone": "a", "x": "1"}, "n")[0]
