"""The scheduler cache against upstream cache_test.go.

TestAssumePodScheduled, TestExpirePod, TestAddPodWillConfirm, TestAddPodWillReplaceAssumed,
TestAddPodAlwaysUpdatesPodInfoInNodeInfo, TestAddPodAfterExpiration, TestUpdatePod, TestForgetPod,
TestNodeOperators, TestDump, TestSchedulerCache_UpdateSnapshot and TestSchedulerCache_updateNodeInfoSnapshotList,
plus incremental-copy checks and a property test holding ``snapshot.node_table`` to a freshly built table.
Time is a FakeClock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache, CacheError
from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo, Resource

REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, "topologyKey": "zone"}
        ]
    }
}


def make_pod(
    name: str,
    node: str = "",
    cpu: str = "",
    mem: str = "",
    *,
    extended: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    uid: str | None = None,
    affinity: dict[str, Any] | None = None,
    pvc: str | None = None,
    priority: int | None = None,
) -> PodInfo:
    requests: dict[str, str] = {}
    if cpu:
        requests = {"cpu": cpu, "memory": mem, **(extended or {})}
    container: dict[str, Any] = {"name": "c", "image": "pause", "resources": {"requests": requests}}
    if ports:
        container["ports"] = ports
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    if pvc:
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": pvc}}]
    if priority is not None:
        spec["priority"] = priority
    meta = {"name": name, "namespace": "test-ns", "uid": uid or name}
    return PodInfo({"metadata": meta, "spec": spec})


def on_node(pod: PodInfo, node: str) -> PodInfo:
    return PodInfo({**pod.pod, "spec": {**pod.spec, "nodeName": node}})


def make_node(
    name: str,
    cpu: str = "1000m",
    mem: str = "100m",
    *,
    labels: dict[str, str] | None = None,
    images: list[tuple[list[str], int]] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"allocatable": {"cpu": cpu, "memory": mem, "pods": "110"}}
    if images:
        status["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec, "status": status}


def port(p: int, ip: str = "127.0.0.1") -> dict[str, Any]:
    return {"hostIP": ip, "hostPort": p, "protocol": "TCP"}


def summary(ni: NodeInfo | None) -> tuple[Any, ...] | None:
    """What must agree between the cache's NodeInfo and the snapshot's copy (generation aside)."""
    if ni is None:
        return None
    return (
        ni.name,
        id(ni.node),
        [p.uid for p in ni.pods],
        [p.uid for p in ni.pods_with_affinity],
        [p.uid for p in ni.pods_with_required_anti_affinity],
        ni.requested,
        ni.non_zero_requested,
        ni.allocatable,
        len(ni.used_ports),
        ni.taints,
    )


def cache_order(cache: Cache) -> list[str]:
    """The cache's NodeInfo list, most recently changed first (upstream walks from headNode)."""
    return list(reversed(cache.dump().nodes))


def assert_tables_equal(got: NodeTable, want: NodeTable) -> None:
    assert got.names == want.names
    assert got.size == want.size
    assert [id(ni) for ni in got.node_infos] == [id(ni) for ni in want.node_infos]
    for name in set(got.allocatable) | set(want.allocatable):
        np.testing.assert_array_equal(got.allocatable_of(name), want.allocatable_of(name), err_msg=name)
    for name in set(got.requested) | set(want.requested):
        np.testing.assert_array_equal(got.requested_of(name), want.requested_of(name), err_msg=name)
    for attr in ("non_zero_cpu", "non_zero_memory", "unschedulable", "has_taints", "has_ports"):
        np.testing.assert_array_equal(getattr(got, attr), getattr(want, attr), err_msg=attr)
    assert list(got.label(ZONE)) == list(want.label(ZONE))


def compare_cache_with_snapshot(cache: Cache, snapshot: Snapshot) -> None:
    """Upstream compareCacheWithNodeInfoSnapshot, plus the node table and a from-scratch snapshot."""
    fresh = Snapshot()
    cache.update_snapshot(fresh)
    assert [ni.name for ni in snapshot.node_info_list] == [ni.name for ni in fresh.node_info_list]
    assert set(snapshot.node_info_map) == set(fresh.node_info_map)
    dump = cache.dump()
    for name, ni in dump.nodes.items():
        want = ni if ni.node is not None else None
        assert summary(snapshot.get(name)) == summary(want), name
    assert [id(ni) for ni in snapshot.node_info_list] == [
        id(snapshot.node_info_map[ni.name]) for ni in fresh.node_info_list
    ]
    assert [ni.name for ni in snapshot.have_pods_with_affinity_list()] == [
        ni.name for ni in fresh.have_pods_with_affinity_list()
    ]
    assert [ni.name for ni in snapshot.have_pods_with_required_anti_affinity_list()] == [
        ni.name for ni in fresh.have_pods_with_required_anti_affinity_list()
    ]
    for ni in snapshot.have_pods_with_affinity_list():
        assert ni is snapshot.node_info_map[ni.name]
    assert snapshot.used_pvcs == fresh.used_pvcs
    assert_tables_equal(snapshot.node_table, NodeTable(snapshot.node_info_list))


# --- pods ------------------------------------------------------------------------------------------------------

ASSUME_PODS = [
    make_pod("p0", "node", "100m", "500", ports=[port(80)]),
    make_pod("p1", "node", "100m", "500", ports=[port(80)]),
    make_pod("p2", "node", "200m", "1Ki", ports=[port(8080)]),
    make_pod("nonzero", "node", ports=[port(80)]),
    make_pod("ext1", "node", "100m", "500", extended={"example.com/foo": "3"}, ports=[port(80)]),
    make_pod("ext2", "node", "200m", "1Ki", extended={"example.com/foo": "5"}, ports=[port(8080)]),
    make_pod("badkey", "node", "100m", "500", extended={"random-invalid-extended-key": "100"}),
]


@pytest.mark.parametrize(
    ("pods", "requested", "non_zero", "n_ports"),
    [
        pytest.param([0], Resource(100, 500), Resource(100, 500), 1, id="one pod with request and port"),
        pytest.param([1, 2], Resource(300, 1524), Resource(300, 1524), 2, id="sum of the assumed pods"),
        pytest.param([3], Resource(), Resource(100, 200 * 1024 * 1024), 1, id="pod without request"),
        pytest.param([4], Resource(100, 500, scalar={"example.com/foo": 3}), Resource(100, 500), 1, id="extended"),
        pytest.param(
            [4, 5], Resource(300, 1524, scalar={"example.com/foo": 8}), Resource(300, 1524), 2, id="two extended"
        ),
        pytest.param([6], Resource(100, 500), Resource(100, 500), 0, id="random invalid extended key"),
    ],
)
def test_assume_pod_scheduled(pods: list[int], requested: Resource, non_zero: Resource, n_ports: int) -> None:
    cache = Cache(FakeClock())
    for i in pods:
        cache.assume_pod(ASSUME_PODS[i])
        with pytest.raises(CacheError, match="can't be assumed"):
            cache.assume_pod(ASSUME_PODS[i])  # already in the cache
    ni = cache.get_node_info("node")
    assert ni is not None
    assert (ni.requested, ni.non_zero_requested, len(ni.used_ports)) == (requested, non_zero, n_ports)
    assert [p.uid for p in ni.pods] == [ASSUME_PODS[i].uid for i in pods]
    for i in pods:
        assert cache.is_assumed_pod(ASSUME_PODS[i])
        cache.forget_pod(ASSUME_PODS[i])
        assert not cache.is_assumed_pod(ASSUME_PODS[i])
        assert cache.get_pod(ASSUME_PODS[i]) is None
    assert cache.node_count() == 0  # the ghost NodeInfo went with its last pod


def test_assume_pod_takes_the_node_explicitly() -> None:
    cache = Cache(FakeClock())
    pod = make_pod("p", cpu="100m", mem="1")  # spec.nodeName unset, as the popped pod
    with pytest.raises(ValueError, match="no node"):
        cache.assume_pod(pod)
    cache.assume_pod(pod, "n1")
    assert cache.assumed_node(pod) == "n1"
    ni = cache.get_node_info("n1")
    assert ni is not None
    assert ni.requested.milli_cpu == 100
    with pytest.raises(CacheError, match="was assumed on 'n1' but assigned to 'n2'"):
        cache.forget_pod(on_node(pod, "n2"))
    cache.forget_pod(pod)  # no node on the PodInfo: the cache knows it
    assert cache.pod_count() == 0


async def test_expire_pod() -> None:
    """TestExpirePod: only assumed pods whose binding finished more than ttl ago expire."""
    clock = FakeClock()
    cache = Cache(clock, ttl=10.0)
    p1 = make_pod("p1", "node", "100m", "500", ports=[port(80)])
    p2 = make_pod("p2", "node", "200m", "1Ki", ports=[port(8080)])
    p3 = make_pod("p3", "node", "300m", "2Ki", ports=[port(8081)])
    cache.assume_pod(p1)
    cache.finish_binding(p1)  # deadline 10
    await clock.advance(5)
    cache.assume_pod(p2)
    cache.finish_binding(p2)  # deadline 15
    cache.assume_pod(p3)  # binding never finishes
    await clock.advance(7)  # t=12
    assert [p.uid for p in cache.cleanup_expired_assumed_pods()] == ["p1"]
    ni = cache.get_node_info("node")
    assert ni is not None
    assert [p.uid for p in ni.pods] == ["p2", "p3"]
    assert ni.requested == Resource(500, 3072)
    await clock.advance(100)
    assert [p.uid for p in cache.cleanup_expired_assumed_pods()] == ["p2"]
    assert cache.is_assumed_pod(p3)


async def test_assumed_pods_never_expire_with_zero_ttl() -> None:
    clock = FakeClock()
    cache = Cache(clock)
    pod = make_pod("p", "node", "100m", "1")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    await clock.advance(1e6)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.is_assumed_pod(pod)


async def test_run_expires_on_the_clock() -> None:
    import asyncio

    clock = FakeClock()
    cache = Cache(clock, ttl=1.0)
    pod = make_pod("p", "node", "100m", "1")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    task = asyncio.create_task(cache.run())
    await asyncio.sleep(0)
    await clock.advance(3)
    assert cache.get_pod(pod) is None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_add_pod_will_confirm() -> None:
    """TestAddPodWillConfirm: of two assumed pods, the added one is confirmed, the other can be forgotten."""
    cache = Cache(FakeClock())
    p1 = make_pod("test-1", "node", "100m", "500", ports=[port(80)])
    p2 = make_pod("test-2", "node", "200m", "1Ki", ports=[port(8080)])
    cache.assume_pod(p1)
    cache.assume_pod(p2)
    cache.add_pod(p1)
    with pytest.raises(CacheError, match="already in added state"):
        cache.add_pod(p1)
    assert not cache.is_assumed_pod(p1)
    assert cache.is_assumed_pod(p2)
    cache.forget_pod(p2)
    ni = cache.get_node_info("node")
    assert ni is not None
    assert ([p.uid for p in ni.pods], ni.requested, len(ni.used_ports)) == (["test-1"], Resource(100, 500), 1)


def test_add_pod_always_updates_pod_info() -> None:
    cache = Cache(FakeClock())
    p1 = make_pod("test-1", "node1", "100m", "500", ports=[{"hostPort": 80}])
    p2 = PodInfo({**p1.pod, "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}})
    cache.assume_pod(p1)
    cache.add_pod(p2)
    ni = cache.get_node_info("node1")
    assert ni is not None
    assert ni.pods == [p2]
    assert cache.get_pod(p1) is p2


def test_add_pod_will_replace_assumed() -> None:
    """TestAddPodWillReplaceAssumed: the API server put the pod elsewhere; the assumed node's ghost goes away."""
    cache = Cache(FakeClock())
    assumed = make_pod("test-1", "assumed-node", "100m", "500", ports=[{"hostPort": 80}])
    added = make_pod("test-1", "actual-node", "100m", "500", ports=[{"hostPort": 80}])
    updated = make_pod("test-1", "actual-node", "200m", "500", ports=[{"hostPort": 90}])
    cache.assume_pod(assumed)
    cache.add_pod(added)
    cache.update_pod(added, updated)
    assert cache.get_node_info("assumed-node") is None
    ni = cache.get_node_info("actual-node")
    assert ni is not None
    assert (ni.pods, ni.requested, ni.non_zero_requested) == ([updated], Resource(200, 500), Resource(200, 500))


async def test_add_pod_after_expiration() -> None:
    clock = FakeClock()
    cache = Cache(clock, ttl=10.0)
    pod = make_pod("p", "node", "100m", "500")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    await clock.advance(20)
    cache.cleanup_expired_assumed_pods()
    assert cache.get_pod(pod) is None
    cache.add_pod(pod)  # expired, then the informer confirms it: Initial -> Added
    assert not cache.is_assumed_pod(pod)
    ni = cache.get_node_info("node")
    assert ni is not None
    assert ni.requested == Resource(100, 500)


def test_update_pod() -> None:
    """TestUpdatePod: add, then update back and forth."""
    cache = Cache(FakeClock())
    v1 = make_pod("test", "node", "100m", "500", ports=[port(80)])
    v2 = make_pod("test", "node", "200m", "1Ki", ports=[port(8080)])
    cache.add_pod(v1)
    for old, new, want in ((v1, v2, Resource(200, 1024)), (v2, v1, Resource(100, 500))):
        cache.update_pod(old, new)
        ni = cache.get_node_info("node")
        assert ni is not None
        assert (ni.pods, ni.requested) == ([new], want)


def test_update_pod_errors() -> None:
    cache = Cache(FakeClock())
    pod = make_pod("p", "node", "100m", "1")
    with pytest.raises(CacheError, match="not added"):
        cache.update_pod(pod, pod)
    cache.assume_pod(pod)
    with pytest.raises(CacheError, match="should not be updated"):
        cache.update_pod(pod, pod)
    cache.add_pod(pod)
    with pytest.raises(CacheError, match="updated on node"):
        cache.update_pod(pod, on_node(pod, "other"))


def test_forget_pod() -> None:
    """TestForgetPod: assumed pods are forgotten; added pods cannot be; unknown pods are ignored."""
    cache = Cache(FakeClock())
    pods = [make_pod("p1", "node", "100m", "500", ports=[port(80)]), make_pod("p2", "node", "200m", "1Ki")]
    for p in pods:
        cache.assume_pod(p)
        assert cache.get_pod(p) is p
    for p in pods:
        cache.forget_pod(p)
        assert cache.get_pod(p) is None
        assert not cache.is_assumed_pod(p)
    cache.forget_pod(pods[0])  # no longer in the cache
    cache.add_pod(pods[0])
    with pytest.raises(CacheError, match="is not assumed"):
        cache.forget_pod(pods[0])


def test_remove_pod() -> None:
    cache = Cache(FakeClock())
    pod = make_pod("p", "node", "100m", "1")
    with pytest.raises(CacheError, match="not found"):
        cache.remove_pod(pod)
    cache.add_node(make_node("node"))
    cache.add_pod(pod)
    with pytest.raises(CacheError, match="corrupted"):
        cache.remove_pod(on_node(pod, "elsewhere"))
    cache.remove_pod(make_pod("p"))  # an empty nodeName is accepted (missed delete)
    assert cache.pod_count() == 0
    assert cache.node_count() == 1


def test_dump() -> None:
    cache = Cache(FakeClock())
    p1, p2 = make_pod("t1", "node", "100m", "500"), make_pod("t2", "node", "200m", "1Ki")
    cache.assume_pod(p1)
    cache.assume_pod(p2)
    cache.add_pod(p1)
    dump = cache.dump()
    assert dump.assumed_pods == {"t2"}
    assert set(dump.nodes) == {"node"}
    assert sorted(p.uid for p in dump.nodes["node"].pods) == ["t1", "t2"]
    dump.nodes["node"].pods.clear()  # a copy
    assert cache.pod_count() == 2


# --- nodes -----------------------------------------------------------------------------------------------------


def test_node_operators() -> None:
    """TestNodeOperators: add, update, remove a node with pods; the ghost keeps the pods until they go."""
    cache = Cache(FakeClock())
    node = make_node("test-node", "1000m", "100m", images=[(["gcr.io/80:latest", "gcr.io/80:v1"], 800)])
    other = make_node("other", images=[(["gcr.io/80:latest"], 800), (["gcr.io/300:latest"], 300)])
    pods = [make_pod("p1", "test-node", "100m", "500", ports=[port(80)]), make_pod("p2", "test-node", "200m", "1Ki")]
    for p in pods:
        cache.add_pod(p)
    added = cache.add_node(node)
    cache.add_node(other)
    assert added.name == "test-node"
    ni = cache.get_node_info("test-node")
    assert ni is not None
    assert (ni.requested, ni.allocatable.milli_cpu, len(ni.pods)) == (Resource(300, 1524), 1000, 2)
    assert ni.image_states == {"gcr.io/80:latest": ImageStateSummary(800, 1), "gcr.io/80:v1": ImageStateSummary(800, 1)}
    assert cache.node_count() == 2

    generation = ni.generation
    updated = make_node("test-node", "2000m", "500m", images=[(["gcr.io/80:latest"], 800)])
    cache.update_node(node, updated)
    ni = cache.get_node_info("test-node")
    assert ni is not None
    assert ni.generation > generation
    assert ni.allocatable.milli_cpu == 2000
    assert ni.image_states == {"gcr.io/80:latest": ImageStateSummary(800, 2)}

    cache.remove_node(updated)
    ghost = cache.get_node_info("test-node")
    assert ghost is not None
    assert ghost.node is None
    with pytest.raises(CacheError, match="not found"):
        cache.remove_node(updated)
    for p in pods:
        assert cache.get_pod(p) is p
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert [ni.name for ni in snapshot.list()] == ["other"]
    assert snapshot.get("test-node") is None
    assert snapshot.get("other") is not None
    assert snapshot.node_info_map["other"].image_states == {
        "gcr.io/80:latest": ImageStateSummary(800, 1),
        "gcr.io/300:latest": ImageStateSummary(300, 1),
    }
    for p in pods:
        cache.remove_pod(p)
        assert cache.get_pod(p) is None
    assert cache.get_node_info("test-node") is None
    assert cache.node_count() == 1


def test_image_states_count_nodes_when_copied() -> None:
    """Image summaries: num_nodes is counted when the NodeInfo is copied into the snapshot."""
    cache = Cache(FakeClock())
    cache.add_node(make_node("a", images=[(["img"], 10)]))
    cache.add_node(make_node("b", images=[(["img"], 10), (["other"], 5)]))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    assert snapshot.node_info_map["a"].image_states == {"img": ImageStateSummary(10, 2)}
    assert snapshot.node_info_map["b"].image_states == {
        "img": ImageStateSummary(10, 2),
        "other": ImageStateSummary(5, 1),
    }
    cache.remove_node(make_node("b"))
    cache.update_node(None, make_node("a", images=[(["img"], 10)]))
    cache.update_snapshot(snapshot)
    assert snapshot.node_info_map["a"].image_states == {"img": ImageStateSummary(10, 1)}


# --- snapshots -------------------------------------------------------------------------------------------------

NODES = [make_node(f"test-node{i}") for i in range(10)]
UPDATED_NODES = [make_node(f"test-node{i}", "2000m", "500m") for i in range(10)]
PODS = [make_pod(f"test-pod{i}", f"test-node{i % 10}", uid=f"test-puid{i}") for i in range(20)]
UPDATED_PODS = [PodInfo({**p.pod, "spec": {**p.spec, "priority": 1000}}) for p in PODS]
AFFINITY_PODS = [make_pod(f"p-affinity-{i}", f"test-node{i}", affinity=AFFINITY) for i in range(2)]
PVC_PODS = [make_pod(f"p-pvc-{i}", f"test-node{i % 2}", pvc=f"test-pvc{i % 4}") for i in range(8)]

Op = Callable[[Cache, Snapshot], None]


def add_node(i: int) -> Op:
    def op(c: Cache, s: Snapshot) -> None:
        c.add_node(NODES[i])

    return op


def remove_node(i: int) -> Op:
    return lambda c, s: c.remove_node(NODES[i])


def update_node(i: int) -> Op:
    def op(c: Cache, s: Snapshot) -> None:
        c.update_node(NODES[i], UPDATED_NODES[i])

    return op


def add_pod(i: int, pods: list[PodInfo] = PODS) -> Op:
    return lambda c, s: c.add_pod(pods[i])


def remove_pod(i: int, pods: list[PodInfo] = PODS) -> Op:
    return lambda c, s: c.remove_pod(pods[i])


def update_pod(i: int) -> Op:
    return lambda c, s: c.update_pod(PODS[i], UPDATED_PODS[i])


def assume_pod(i: int) -> Op:
    return lambda c, s: c.assume_pod(PODS[i])


def forget_pod(i: int) -> Op:
    return lambda c, s: c.forget_pod(PODS[i])


def snap(c: Cache, s: Snapshot) -> None:
    c.update_snapshot(s)
    compare_cache_with_snapshot(c, s)


def names(*idx: int) -> list[str]:
    return [f"test-node{i}" for i in idx]


@pytest.mark.parametrize(
    ("operations", "expected", "with_affinity", "pvcs"),
    [
        pytest.param([], [], 0, set(), id="empty cache"),
        pytest.param([add_node(1)], names(1), 0, set(), id="single node"),
        pytest.param([add_node(1), snap, remove_node(1), add_node(1)], names(1), 0, set(), id="add remove add"),
        pytest.param([add_node(1), snap, add_node(2), remove_node(1)], names(2), 0, set(), id="add remove same cycle"),
        pytest.param(
            [add_node(0), snap, add_node(1), snap, add_node(2), snap, add_node(3)],
            names(3, 2, 1, 0),
            0,
            set(),
            id="snapshot in the middle",
        ),
        pytest.param([add_node(0), add_node(2), add_node(5), add_node(6)], names(6, 5, 2, 0), 0, set(), id="at end"),
        pytest.param(
            [add_node(0), add_node(1), add_node(5), snap, update_node(1)], names(1, 5, 0), 0, set(), id="update"
        ),
        pytest.param(
            [add_node(0), add_node(2), add_node(5), add_node(6), snap, *map(remove_node, (0, 2, 5, 6))],
            [],
            0,
            set(),
            id="remove all",
        ),
        pytest.param(
            [add_node(0), add_node(2), add_node(5), add_node(6), snap, remove_node(0), remove_node(6)],
            names(5, 2),
            0,
            set(),
            id="remove some",
        ),
        pytest.param(
            [add_node(2), add_node(5), add_node(6), snap, *map(remove_node, (2, 5, 6)), snap, add_node(7), add_node(9)],
            names(9, 7),
            0,
            set(),
            id="remove all and add more",
        ),
        pytest.param(
            [add_node(8), update_node(2), update_node(8), snap, add_node(1)], names(1, 8, 2), 0, set(), id="order"
        ),
        pytest.param(
            [add_node(0), add_node(2), add_node(8), snap, add_pod(8), add_pod(2)],
            names(2, 8, 0),
            0,
            set(),
            id="nodes and pods",
        ),
        pytest.param(
            [add_node(0), add_pod(0), add_node(2), add_node(4), update_pod(0)],
            names(0, 4, 2),
            0,
            set(),
            id="updating a pod moves its node to the head",
        ),
        pytest.param(
            [add_node(0), add_pod(1), update_pod(1), add_node(1)], names(1, 0), 0, set(), id="pod before its node"
        ),
        pytest.param(
            [
                add_node(0),
                add_node(1),
                add_pod(1),
                add_pod(11),
                snap,
                remove_node(1),
                snap,
                update_pod(1),
                update_pod(11),
                remove_pod(1, UPDATED_PODS),
                remove_pod(11, UPDATED_PODS),
            ],
            names(0),
            0,
            set(),
            id="remove node before its pods",
        ),
        pytest.param(
            [add_node(0), add_pod(0, AFFINITY_PODS), snap, add_node(1)], names(1, 0), 1, set(), id="affinity pods"
        ),
        pytest.param(
            [add_node(0), add_pod(0, PVC_PODS), snap, add_node(1)],
            names(1, 0),
            0,
            {"test-ns/test-pvc0"},
            id="pvc pods",
        ),
        pytest.param(
            [add_node(0), add_pod(0, AFFINITY_PODS), snap, add_node(1), add_pod(1, AFFINITY_PODS), snap],
            names(1, 0),
            2,
            set(),
            id="multiple nodes with affinity pods",
        ),
        pytest.param(
            [add_node(0), add_node(1), add_pod(0, AFFINITY_PODS), snap, remove_pod(0, AFFINITY_PODS), snap],
            names(0, 1),
            0,
            set(),
            id="add then remove affinity pods",
        ),
        pytest.param(
            [add_node(0), add_pod(0, PVC_PODS), snap, remove_pod(0, PVC_PODS), add_pod(2, PVC_PODS), snap],
            names(0),
            0,
            {"test-ns/test-pvc2"},
            id="add then remove pvc pod",
        ),
        pytest.param(
            [
                add_node(0),
                add_node(1),
                *(add_pod(i, PVC_PODS) for i in (0, 1, 2)),
                snap,
                remove_pod(0, PVC_PODS),
                remove_pod(1, PVC_PODS),
                snap,
                add_pod(0, PVC_PODS),
                snap,
                *(add_pod(i, PVC_PODS) for i in (3, 4, 5)),
                snap,
                *(remove_pod(i, PVC_PODS) for i in (0, 3, 4)),
                snap,
            ],
            names(0, 1),
            0,
            {"test-ns/test-pvc1", "test-ns/test-pvc2"},
            id="add and remove multiple pvc pods",
        ),
        pytest.param(
            [
                add_node(0),
                add_node(2),
                add_node(4),
                add_node(8),
                snap,
                assume_pod(8),
                assume_pod(0),
                forget_pod(0),
                snap,
            ],
            names(0, 8, 4, 2),
            0,
            set(),
            id="assume and forget",
        ),
    ],
)
def test_update_snapshot(operations: list[Op], expected: list[str], with_affinity: int, pvcs: set[str]) -> None:
    """TestSchedulerCache_UpdateSnapshot."""
    cache = Cache(FakeClock())
    snapshot = Snapshot()
    for op in operations:
        op(cache, snapshot)
    assert [n for n in cache_order(cache) if cache.dump().nodes[n].node is not None] == expected
    assert len(snapshot.have_pods_with_affinity_list()) == with_affinity or snapshot.generation == 0
    cache.update_snapshot(snapshot)
    compare_cache_with_snapshot(cache, snapshot)
    assert len(snapshot.have_pods_with_affinity_list()) == with_affinity
    assert snapshot.used_pvcs == pvcs
    assert all(snapshot.is_pvc_used_by_pods(p) for p in pvcs)


def zoned(i: int, zone: int) -> dict[str, Any]:
    return make_node(f"node-{i}", labels={REGION: f"region-{zone}", ZONE: f"zone-{zone}"})


ZONED = [zoned(i, 0) for i in range(2)] + [zoned(i, 1) for i in range(2, 8)]


@pytest.mark.parametrize(
    ("batches", "expected"),
    [
        pytest.param([], [], id="empty"),
        pytest.param([[0]], ["node-0"], id="single node"),
        pytest.param([[0], [1]], ["node-0", "node-1"], id="two nodes"),
        pytest.param([[2, 3], [4, 0]], ["node-2", "node-0", "node-3", "node-4"], id="bug 91601, two zones"),
        pytest.param(
            [[2, 3, 4, 5], [6, 0]],
            ["node-2", "node-0", "node-3", "node-4", "node-5", "node-6"],
            id="bug 91601, 6 nodes",
        ),
        pytest.param(
            [[2], [3, 4], [5, 6, 0, 1]],
            ["node-2", "node-0", "node-3", "node-1", "node-4", "node-5", "node-6"],
            id="bug 91601, 7 nodes",
        ),
        pytest.param(
            [[2, 1], [3, 4], [5, 6, 0]],
            ["node-2", "node-1", "node-3", "node-0", "node-4", "node-5", "node-6"],
            id="bug 91601, different zone order",
        ),
    ],
)
def test_snapshot_lists_nodes_in_zone_order(batches: list[list[int]], expected: list[str]) -> None:
    """TestSchedulerCache_updateNodeInfoSnapshotList: zones round-robin, however the nodes arrived."""
    cache = Cache(FakeClock())
    snapshot = Snapshot()
    for batch in batches:
        for i in batch:
            cache.add_node(ZONED[i])
        cache.update_snapshot(snapshot)
    assert [ni.name for ni in snapshot.list()] == expected
    assert snapshot.node_table.names == expected


def test_zone_change_reorders_the_snapshot() -> None:
    cache = Cache(FakeClock())
    snapshot = Snapshot()
    for i in range(4):
        cache.add_node(zoned(i, i % 2))
    cache.update_snapshot(snapshot)
    assert snapshot.node_table.names == ["node-0", "node-1", "node-2", "node-3"]
    cache.update_node(zoned(0, 0), zoned(0, 1))
    cache.update_snapshot(snapshot)
    assert snapshot.node_table.names == ["node-2", "node-1", "node-3", "node-0"]
    compare_cache_with_snapshot(cache, snapshot)


def test_update_snapshot_copies_only_changed_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Incremental: a second update copies only the changed NodeInfo, in place; others stay the same objects."""
    cache = Cache(FakeClock())
    for i in range(100):
        cache.add_node(make_node(f"n{i}"))
        cache.add_pod(make_pod(f"p{i}", f"n{i}", "100m", "1"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    before = dict(snapshot.node_info_map)
    table = snapshot.node_table
    list_before = snapshot.node_info_list

    copies: list[str] = []
    original = Cache._copy_for_snapshot

    def spy(self: Cache, ni: NodeInfo) -> NodeInfo:
        copies.append(ni.name)
        return original(self, ni)

    monkeypatch.setattr(Cache, "_copy_for_snapshot", spy)
    cache.update_snapshot(snapshot)
    assert copies == []
    cache.add_pod(make_pod("extra", "n42", "250m", "1"))
    cache.assume_pod(make_pod("assumed", "", "50m", "1"), "n7")
    cache.update_snapshot(snapshot)
    assert sorted(copies) == ["n42", "n7"]
    assert all(snapshot.node_info_map[name] is ni for name, ni in before.items())
    assert snapshot.node_table is table
    assert snapshot.node_info_list is list_before
    assert snapshot.node_info_map["n42"].requested.milli_cpu == 350
    assert table.requested["cpu"][table.index["n42"]] == 350
    assert table.requested["cpu"][table.index["n7"]] == 150
    assert table.requested["pods"][table.index["n42"]] == 2
    compare_cache_with_snapshot(cache, snapshot)


def test_snapshot_is_not_changed_by_the_cache_until_updated() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n"))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    cache.add_pod(make_pod("p", "n", "100m", "1"))
    ni = snapshot.get("n")
    assert ni is not None
    assert ni.pods == []
    assert snapshot.node_table.requested["cpu"][0] == 0


# --- the node table under random operations --------------------------------------------------------------------

H_NODES = [
    [
        make_node(f"h{i}", labels={ZONE: f"z{i % 2}"}),
        make_node(f"h{i}", "4", "8Gi", labels={ZONE: f"z{(i + 1) % 2}"}, taints=[{"key": "k", "effect": "NoSchedule"}]),
    ]
    for i in range(5)
]
H_PODS = [
    [
        make_pod(
            f"hp{j}",
            f"h{j % 5}",
            f"{100 * (j + 1)}m",
            "1Ki",
            ports=[port(8000 + j)] if j % 3 == 0 else None,
            affinity=AFFINITY if j % 4 == 1 else None,
            pvc=f"c{j % 3}" if j % 2 else None,
            extended={"example.com/gpu": "1"} if j == 2 else None,
        ),
        make_pod(f"hp{j}", f"h{j % 5}", f"{50 * (j + 1)}m", "2Ki"),
    ]
    for j in range(8)
]

operations = st.one_of(
    st.tuples(st.sampled_from(["add_node", "update_node", "remove_node"]), st.integers(0, 4), st.integers(0, 1)),
    st.tuples(
        st.sampled_from(["add_pod", "update_pod", "remove_pod", "assume", "forget", "confirm"]),
        st.integers(0, 7),
        st.integers(0, 1),
    ),
    st.tuples(st.just("snapshot"), st.just(0), st.just(0)),
)


def apply(cache: Cache, versions: dict[str, int], op: tuple[str, int, int]) -> None:
    kind, i, v = op
    try:
        if kind == "add_node":
            cache.add_node(H_NODES[i][v])
        elif kind == "update_node":
            cache.update_node(H_NODES[i][1 - v], H_NODES[i][v])
        elif kind == "remove_node":
            cache.remove_node(H_NODES[i][v])
        else:
            key = f"hp{i}"
            current = H_PODS[i][versions.get(key, 0)]
            if kind == "add_pod":
                cache.add_pod(H_PODS[i][v])
                versions[key] = v
            elif kind == "update_pod":
                cache.update_pod(current, H_PODS[i][v])
                versions[key] = v
            elif kind == "remove_pod":
                cache.remove_pod(current)
            elif kind == "assume":
                cache.assume_pod(H_PODS[i][v], f"h{(i + v) % 5}")
                versions[key] = v
            elif kind == "forget":
                cache.forget_pod(make_pod(key, uid=key))
            else:
                cache.add_pod(H_PODS[i][v])
                versions[key] = v
    except CacheError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operations, max_size=60))
def test_node_table_matches_a_fresh_table(ops: list[tuple[str, int, int]]) -> None:
    """After any sequence of cache operations, snapshot.node_table equals NodeTable(snapshot.list()) and the
    incremental snapshot equals one built from scratch."""
    cache = Cache(FakeClock())
    snapshot = Snapshot()
    versions: dict[str, int] = {}
    for op in [*ops, ("snapshot", 0, 0)]:
        if op[0] == "snapshot":
            cache.update_snapshot(snapshot)
            compare_cache_with_snapshot(cache, snapshot)
        else:
            apply(cache, versions, op)


def test_confirming_an_assumed_pod_keeps_the_node_generation() -> None:
    """Assumed -> Added for the bound version of the same spec swaps the PodInfo without dirtying the node,
    so the next snapshot copies nothing (the per-binding common case); a changed spec re-adds it."""
    cache = Cache(FakeClock())
    cache.add_node(make_node("n1", "4", "8Gi"))
    assumed = make_pod("p", "n1", "100m", "64Mi")
    cache.assume_pod(assumed)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    generation = snapshot.get("n1").generation  # type: ignore[union-attr]
    bound = PodInfo({**assumed.pod, "metadata": {**assumed.pod["metadata"], "resourceVersion": "7"}})
    cache.add_pod(bound)
    assert not cache.is_assumed_pod(bound)
    assert cache.get_pod(bound) is bound
    ni = cache.get_node_info("n1")
    assert ni is not None
    assert ni.generation == generation
    assert ni.pods == [bound]
    assert ni.requested.milli_cpu == 100

    changed = make_pod("q", "n1", "200m", "64Mi")
    cache.assume_pod(changed)
    cache.add_pod(on_node(make_pod("q", "", "300m", "64Mi"), "n1"))
    ni = cache.get_node_info("n1")
    assert ni is not None
    assert ni.requested.milli_cpu == 400
