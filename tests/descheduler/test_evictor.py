"""DefaultEvictor, translated from upstream's ``TestDefaultEvictorFilter`` and ``TestDefaultEvictorPreEvictionFilter``
(pkg/framework/plugins/defaultevictor/defaultevictor_test.go, v0.36): pod protections (deprecated booleans and
podProtections), the evict and prefer-no-eviction annotations, priority threshold, minReplicas, minPodAge,
labelSelector, and nodeFit / namespaceLabelSelector at PreEvictionFilter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kubeplane.descheduler.args import PriorityThreshold
from kubeplane.descheduler.evictor import DefaultEvictor, DefaultEvictorArgs, EvictorContext, parse_args
from kubeplane.descheduler.framework import ClusterView
from kubeplane.descheduler.podutil import SYSTEM_CRITICAL_PRIORITY
from tests.descheduler.builders import NOW, node, pod, taint

EVICT = {"descheduler.alpha.kubernetes.io/evict": ""}
PREFER_NOT = {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}
MIRROR = {"kubernetes.io/config.mirror": "x"}
HOST_PATH = [{"name": "v", "hostPath": {"path": "/x"}}]
PVC = [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]


def _ctx(
    pods: Sequence[dict[str, Any]],
    nodes: Sequence[dict[str, Any]] = (),
    *,
    threshold: int = SYSTEM_CRITICAL_PRIORITY,
    pdbs: Sequence[dict[str, Any]] = (),
    namespaces: dict[str, Any] | None = None,
) -> EvictorContext:
    view = ClusterView(nodes=list(nodes), pods=list(pods), pdbs=list(pdbs), namespaces=namespaces or {}, now=NOW)
    return EvictorContext(nodes=view.nodes, pods_on_node=view.pods_on_node, pods_of_owner=view.pods_of_owner,
                          pdbs=view.pdbs, namespaces=view.namespaces, threshold=threshold, now=NOW)  # fmt: skip


FILTER_CASES = [
    ("failed-bare-pod-refused-by-default", pod("p", owner=None, phase="Failed"), {}, False),
    ("normal-bare-pod-refused-even-with-evictFailedBarePods", pod("p", owner=None), {"evictFailedBarePods": True},
     False),
    ("failed-bare-pod-with-evictFailedBarePods", pod("p", owner=None, phase="Failed"), {"evictFailedBarePods": True},
     True),
    ("normal-ownerRefs", pod("p"), {}, True),
    ("evict-annotation-on-bare-pod", pod("p", owner=None, annotations=EVICT), {}, True),
    ("prefer-no-eviction-preferred", pod("p", annotations=PREFER_NOT), {"noEvictionPolicy": "Preferred"}, True),
    ("prefer-no-eviction-mandatory", pod("p", annotations=PREFER_NOT), {"noEvictionPolicy": "Mandatory"}, False),
    ("statefulset-owner", pod("p", owner="StatefulSet"), {}, True),
    ("local-storage-protected", pod("p", volumes=HOST_PATH), {}, False),
    ("local-storage-evictLocalStoragePods", pod("p", volumes=HOST_PATH), {"evictLocalStoragePods": True}, True),
    ("local-storage-evict-annotation", pod("p", volumes=HOST_PATH, annotations=EVICT), {}, True),
    ("daemonset-protected", pod("p", owner="DaemonSet"), {}, False),
    ("daemonset-evict-annotation", pod("p", owner="DaemonSet", annotations=EVICT), {}, True),
    ("mirror-pod", pod("p", annotations=MIRROR), {}, False),
    ("mirror-pod-evict-annotation", pod("p", annotations={**MIRROR, **EVICT}), {}, True),
    ("static-pod", pod("p", annotations={"kubernetes.io/config.source": "file"}), {}, False),
    ("terminating", {**pod("p"), "metadata": {**pod("p")["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}},
     {}, False),
    ("system-critical", pod("p", priority=SYSTEM_CRITICAL_PRIORITY), {}, False),
    ("system-critical-evict-annotation", pod("p", priority=SYSTEM_CRITICAL_PRIORITY, annotations=EVICT), {}, True),
    ("system-critical-evictSystemCriticalPods", pod("p", priority=SYSTEM_CRITICAL_PRIORITY),
     {"evictSystemCriticalPods": True}, True),
    ("above-priority-threshold", pod("p", priority=2000), {"priorityThreshold": {"value": 1000}}, False),
    ("below-priority-threshold", pod("p", priority=500), {"priorityThreshold": {"value": 1000}}, True),
    ("above-threshold-evictSystemCriticalPods", pod("p", priority=2000),
     {"priorityThreshold": {"value": 1000}, "evictSystemCriticalPods": True}, True),
    ("minPodAge-not-reached", pod("p", age=600), {"minPodAge": "50m"}, False),
    ("minPodAge-reached", pod("p", age=3600), {"minPodAge": "50m"}, True),
    ("labelSelector-mismatch", pod("p", labels={"a": "b"}), {"labelSelector": {"matchLabels": {"a": "c"}}}, False),
    ("labelSelector-match", pod("p", labels={"a": "b"}), {"labelSelector": {"matchLabels": {"a": "b"}}}, True),
    ("ignorePvcPods", pod("p", volumes=PVC), {"ignorePvcPods": True}, False),
    ("pvc-evicted-by-default", pod("p", volumes=PVC), {}, True),
    ("ignorePodsWithoutPDB-no-pdb", pod("p"), {"ignorePodsWithoutPDB": True}, False),
    ("defaultDisabled-PodsWithLocalStorage", pod("p", volumes=HOST_PATH),
     {"podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}}, True),
    ("defaultDisabled-DaemonSetPods", pod("p", owner="DaemonSet"),
     {"podProtections": {"defaultDisabled": ["DaemonSetPods"]}}, True),
    ("extraEnabled-PodsWithPVC", pod("p", volumes=PVC), {"podProtections": {"extraEnabled": ["PodsWithPVC"]}}, False),
    ("extraEnabled-PodsWithResourceClaims", pod("p", resourceClaims=[{"name": "gpu"}]),
     {"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}}, False),
]  # fmt: skip


@pytest.mark.parametrize(("target", "raw", "evictable"), [c[1:] for c in FILTER_CASES],
                         ids=[c[0] for c in FILTER_CASES])  # fmt: skip
def test_filter(target: dict[str, Any], raw: dict[str, Any], evictable: bool) -> None:
    args = parse_args(raw)
    threshold = args.priority_threshold.value if args.priority_threshold and args.priority_threshold.value else 0
    ctx = _ctx([target], threshold=threshold or SYSTEM_CRITICAL_PRIORITY)
    assert DefaultEvictor(args).filter(target, ctx) is evictable


def test_ignore_pods_without_pdb_evicts_a_covered_pod() -> None:
    target = pod("p", labels={"app": "a"})
    pdb = {"metadata": {"name": "b", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "a"}}}}
    evictor = DefaultEvictor(DefaultEvictorArgs(ignore_pods_without_pdb=True))
    assert evictor.filter(target, _ctx([target], pdbs=[pdb])) is True


@pytest.mark.parametrize(
    ("min_replicas", "siblings", "evictable"),
    [(2, 2, True), (3, 2, False)],
    ids=["minReplicas-2-owner-with-2", "minReplicas-3-owner-with-2"],
)
def test_min_replicas(min_replicas: int, siblings: int, evictable: bool) -> None:
    pods = [pod(f"p{i}") for i in range(siblings)]
    evictor = DefaultEvictor(DefaultEvictorArgs(min_replicas=min_replicas))
    assert evictor.filter(pods[0], _ctx(pods)) is evictable


def test_named_threshold_uses_the_resolved_value() -> None:
    evictor = DefaultEvictor(DefaultEvictorArgs(priority_threshold=PriorityThreshold(name="high")))
    target = pod("p", priority=1500)
    assert evictor.filter(target, _ctx([target], threshold=1000)) is False
    assert evictor.filter(target, _ctx([target], threshold=2000)) is True


PRE_CASES = [
    ("no-tolerations-other-nodes-tainted", pod("p", node_name="n1"),
     [node("n1"), node("n2", taints=[taint("k")]), node("n3", taints=[taint("k")])], False),
    ("tolerations-other-node-tainted", pod("p", node_name="n1", tolerations=[{"key": "k", "operator": "Exists"}]),
     [node("n1"), node("n2", taints=[taint("k")])], True),
    ("incorrect-node-selector", pod("p", node_name="n1", node_selector={"zone": "b"}),
     [node("n1"), node("n2", labels={"zone": "a"})], False),
    ("correct-node-selector", pod("p", node_name="n1", node_selector={"zone": "a"}),
     [node("n1"), node("n2", labels={"zone": "a"})], True),
    ("only-available-node-lacks-cpu", pod("p", 1200, node_name="n1", node_selector={"zone": "a"}),
     [node("n1"), node("n2", 1000, labels={"zone": "a"})], False),
    ("other-node-has-enough-memory", pod("p", 0, 1000, node_name="n1"),
     [node("n1"), node("n2", memory=500), node("n3", memory=2000)], True),
    ("other-nodes-lack-memory", pod("p", 0, 1000, node_name="n1"), [node("n1"), node("n2", memory=500)], False),
]  # fmt: skip


@pytest.mark.parametrize(("target", "nodes", "fits"), [c[1:] for c in PRE_CASES], ids=[c[0] for c in PRE_CASES])
def test_pre_eviction_filter_node_fit(target: dict[str, Any], nodes: list[dict[str, Any]], fits: bool) -> None:
    assert DefaultEvictor(DefaultEvictorArgs(node_fit=True)).pre_eviction_filter(target, _ctx([target], nodes)) is fits
    assert DefaultEvictor(DefaultEvictorArgs()).pre_eviction_filter(target, _ctx([target], nodes)) is True


@pytest.mark.parametrize(("labels", "evictable"), [({"team": "a"}, True), ({"team": "b"}, False)],
                         ids=["namespace-matches-selector", "namespace-does-not-match"])  # fmt: skip
def test_namespace_label_selector(labels: dict[str, str], evictable: bool) -> None:
    target = pod("p")
    namespaces = {"default": {"metadata": {"name": "default", "labels": labels}}}
    evictor = DefaultEvictor(parse_args({"namespaceLabelSelector": {"matchLabels": {"team": "a"}}}))
    assert evictor.pre_eviction_filter(target, _ctx([target], namespaces=namespaces)) is evictable
