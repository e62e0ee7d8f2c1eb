"""Snapshot against upstream snapshot.go / snapshot_test.go (NewSnapshot, createImageExistenceMap,
getNodeImageStates, createUsedPVCSet) and the NodeInfoLister protocol."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.snapshot import Snapshot, node_image_sizes, pod_pvc_keys
from kubeplane.scheduler.framework.handle import Handle, NodeInfoLister
from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo

ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str = "", images: list[tuple[list[str], int]] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    if images is not None:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return {"metadata": {"name": name, "labels": {ZONE: zone} if zone else {}}, "status": status}


def pod(
    name: str, node_name: str = "", cpu: str = "100m", *, affinity: dict[str, Any] | None = None, pvc: str = ""
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    if pvc:
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": pvc}}]
    return {"metadata": {"name": name, "namespace": "ns", "uid": name}, "spec": spec}


ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "x"}]}}
PREFERRED = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}}


def test_empty_snapshot() -> None:
    s = Snapshot()
    assert list(s.list()) == []
    assert s.get("n") is None
    assert s.num_nodes() == 0
    assert s.node_table.size == 0
    assert list(s.have_pods_with_affinity_list()) == list(s.have_pods_with_required_anti_affinity_list()) == []


def test_snapshot_is_a_node_info_lister() -> None:
    lister: NodeInfoLister = Snapshot.from_objects([node("a")], [])
    handle = Handle(snapshot_lister=lister)
    got = handle.snapshot().get("a")
    assert got is not None
    assert got.name == "a"


def test_get_skips_ghost_node_infos() -> None:
    s = Snapshot()
    s.node_info_map["ghost"] = NodeInfo()
    assert s.get("ghost") is None


def test_from_objects_counts_bound_pods_only() -> None:
    nodes = [node("a", "z1"), node("b", "z1"), node("c", "z2")]
    pods = [
        pod("p1", "a", "100m"),
        pod("p2", "a", "200m", affinity=PREFERRED),
        pod("p3", "c", "300m", affinity=ANTI, pvc="claim-1"),
        pod("pending", "", "1", pvc="claim-2"),
        pod("elsewhere", "gone", "1", pvc="claim-3"),
    ]
    s = Snapshot.from_objects(nodes, pods)
    assert [ni.name for ni in s.list()] == ["a", "c", "b"]  # zones round-robin
    a, b, c = s.node_info_map["a"], s.node_info_map["b"], s.node_info_map["c"]
    assert ([p.name for p in a.pods], a.requested.milli_cpu) == (["p1", "p2"], 300)
    assert (b.pods, c.requested.milli_cpu) == ([], 300)
    assert [ni.name for ni in s.have_pods_with_affinity_list()] == ["a", "c"]
    assert [ni.name for ni in s.have_pods_with_required_anti_affinity_list()] == ["c"]
    assert s.used_pvcs == {"ns/claim-1", "ns/claim-3"}
    assert s.is_pvc_used_by_pods("ns/claim-1")
    assert not s.is_pvc_used_by_pods("ns/claim-2")
    assert s.get("gone") is None
    assert s.generation == max(ni.generation for ni in s.list())


def test_from_objects_builds_the_node_table() -> None:
    s = Snapshot.from_objects([node("a", "z1"), node("b", "z2")], [pod("p", "b", "1500m")])
    table = s.node_table
    assert table.names == ["a", "b"]
    assert table.node_infos == list(s.list())
    np.testing.assert_array_equal(table.requested["cpu"], [0, 1500])
    np.testing.assert_array_equal(table.requested["pods"], [0, 1])
    np.testing.assert_array_equal(table.allocatable["cpu"], [4000, 4000])
    fresh = NodeTable(s.list())
    np.testing.assert_array_equal(table.requested["cpu"], fresh.requested["cpu"])
    assert list(table.label(ZONE)) == ["z1", "z2"]


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param(
            [
                node("n1", images=[(["gcr.io/10:v1"], 10 * 1024 * 1024), (["gcr.io/200:v1"], 200 * 1024 * 1024)]),
                node("n2", images=[(["gcr.io/10:v1"], 10 * 1024 * 1024)]),
            ],
            {
                "n1": {
                    "gcr.io/10:v1": ImageStateSummary(10 * 1024 * 1024, 2),
                    "gcr.io/200:v1": ImageStateSummary(200 * 1024 * 1024, 1),
                },
                "n2": {"gcr.io/10:v1": ImageStateSummary(10 * 1024 * 1024, 2)},
            },
            id="shared image",
        ),
        pytest.param(
            [node("n1", images=[(["gcr.io/a:v1", "gcr.io/a@sha256:1"], 5)]), node("n2"), node("n3", images=[])],
            {
                "n1": {"gcr.io/a:v1": ImageStateSummary(5, 1), "gcr.io/a@sha256:1": ImageStateSummary(5, 1)},
                "n2": {},
                "n3": {},
            },
            id="every name of an image counts; nodes without images",
        ),
    ],
)
def test_from_objects_image_states(
    nodes: list[dict[str, Any]], expected: dict[str, dict[str, ImageStateSummary]]
) -> None:
    s = Snapshot.from_objects(nodes, [])
    assert {ni.name: ni.image_states for ni in s.list()} == expected


def test_helpers() -> None:
    assert node_image_sizes(None) == {}
    assert node_image_sizes(node("n", images=[(["a", "b"], 3)])) == {"a": 3, "b": 3}
    assert pod_pvc_keys(PodInfo(pod("p", pvc="c"))) == ["ns/c"]
    assert pod_pvc_keys(PodInfo(pod("p"))) == []


def test_rebuild_lists_without_order_keeps_the_node_list() -> None:
    s = Snapshot.from_objects([node("a"), node("b")], [])
    node_list, table = s.node_info_list, s.node_table
    s.node_info_map["b"].add_pod(PodInfo(pod("x", "b", affinity=PREFERRED)))
    s.rebuild_lists(None)
    assert s.node_info_list is node_list
    assert s.node_table is table
    assert [ni.name for ni in s.have_pods_with_affinity_list()] == ["b"]


def test_update_affinity_lists_keeps_node_order_incrementally() -> None:
    s = Snapshot.from_objects([node(n) for n in "abcd"], [])
    order = [ni.name for ni in s.list()]
    for name in ("d", "b"):
        s.node_info_map[name].add_pod(PodInfo(pod(f"x{name}", name, affinity=PREFERRED)))
    s.update_affinity_lists([s.node_info_map["d"], s.node_info_map["b"]])
    assert [ni.name for ni in s.have_pods_with_affinity_list()] == [n for n in order if n in "bd"]
    s.node_info_map["d"].remove_pod(PodInfo(pod("xd", "d", affinity=PREFERRED)))
    s.update_affinity_lists([s.node_info_map["d"]])
    assert [ni.name for ni in s.have_pods_with_affinity_list()] == ["b"]
    scanned = Snapshot.from_objects([node(n) for n in "abcd"], [])
    scanned.node_info_map["b"].add_pod(PodInfo(pod("xb", "b", affinity=PREFERRED)))
    scanned.rebuild_lists(None)
    assert [ni.name for ni in scanned.have_pods_with_affinity_list()] == ["b"]


# --- Snapshot.with_nodes: a what-if's relabelled node without re-adding every pod ---------------------------------


def _wn_node(name: str, zone: str, **labels: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    meta = {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone, **labels}}
    images = [{"names": [f"img-{name}"], "sizeBytes": 100}]
    return {"metadata": meta, "status": {"allocatable": alloc, "images": images}}


def _wn_pod(name: str, node: str) -> dict[str, Any]:
    spec = {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "300m"}}}]}
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def _wn_view(snapshot: Snapshot) -> list[tuple[Any, ...]]:
    return [
        (ni.name, dict(ni.labels), ni.requested.milli_cpu, [p.key for p in ni.pods], sorted(ni.image_states))
        for ni in snapshot.list()
    ]


def test_with_nodes_equals_building_from_objects_and_leaves_the_original_as_it_was() -> None:
    nodes = [_wn_node("a", "z1"), _wn_node("b", "z2"), _wn_node("c", "z1")]
    pods = [_wn_pod("p1", "a"), _wn_pod("p2", "b"), _wn_pod("p3", "b")]
    base = Snapshot.from_objects(nodes, pods)
    before = _wn_view(base)
    relabelled = [nodes[0], _wn_node("b", "z1", disk="ssd"), nodes[2]]  # b moves zone: the tree order changes
    derived = base.with_nodes(relabelled)
    assert derived is not None
    assert _wn_view(derived) == _wn_view(Snapshot.from_objects(relabelled, pods))
    assert derived.get("a") is base.get("a")  # unchanged nodes are shared
    assert _wn_view(base) == before


def test_with_nodes_declines_what_it_cannot_derive() -> None:
    nodes = [_wn_node("a", "z1"), _wn_node("b", "z2")]
    base = Snapshot.from_objects(nodes, [_wn_pod("p1", "a")])
    assert base.with_nodes([*nodes, _wn_node("c", "z1")]) is None  # a new node
    assert base.with_nodes(nodes[:1]) is None  # a node gone
    other_images = _wn_node("b", "z2")
    other_images["status"]["images"] = [{"names": ["other"], "sizeBytes": 5}]
    assert base.with_nodes([nodes[0], other_images]) is None  # image counts would change
