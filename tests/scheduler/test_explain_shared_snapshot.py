"""``explain(..., snapshot=cluster_snapshot(...))``: one snapshot shared by many explains (the UI's Try) answers
exactly as a snapshot built per call. Upstream's cycle only reads the snapshot it was given (schedule_one's
``sched.nodeInfoSnapshot``; addNominatedPods and preemption's SelectVictimsOnNode work on ``NodeInfo.Snapshot()``
clones), so evaluating pods one after another on it must leave it as it was."""

from __future__ import annotations

from typing import Any

from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.explain import cluster_snapshot, explain


def _node(name: str, zone: str) -> dict[str, Any]:
    alloc = {"cpu": "2", "memory": "4Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _pod(name: str, cpu: str, *, node: str = "", priority: int = 0, app: str = "x", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        "priority": priority,
        **spec,
    }
    if node:
        body["nodeName"] = node
    meta = {"name": name, "namespace": "default", "uid": name, "labels": {"app": app}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Pending"}}


SPREAD = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
           "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}  # fmt: skip


def test_a_shared_snapshot_answers_as_one_per_call_and_is_left_unchanged() -> None:
    nodes = [_node("a", "z1"), _node("b", "z2"), _node("c", "z2")]
    placed = [
        _pod("w1", "1", node="a", app="web"),
        _pod("w2", "1500m", node="b", app="web"),
        _pod("low", "1500m", node="c", priority=1),
    ]
    pending = [
        _pod("plain", "500m"),
        _pod("spread", "250m", app="web", topologySpreadConstraints=SPREAD),
        _pod("anti", "250m", app="other", affinity=ANTI),
        _pod("urgent", "1800m", priority=1000),  # fits nowhere: preemption's dry run picks victims on a clone
        _pod("huge", "3"),
    ]
    pods = placed + pending
    fit = {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
    most = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                         "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [fit]}]})  # fmt: skip
    shared = cluster_snapshot(nodes, pods)
    before = {ni.name: (ni.requested.milli_cpu, len(ni.pods)) for ni in shared.list()}
    for config in (None, most):
        for pod in pending:
            alone = explain(pod, nodes=nodes, pods=pods, config=config)
            together = explain(pod, nodes=nodes, pods=pods, config=config, snapshot=shared)
            assert together == alone, pod["metadata"]["name"]
    assert {ni.name: (ni.requested.milli_cpu, len(ni.pods)) for ni in shared.list()} == before
    urgent = explain(pending[3], nodes=nodes, pods=pods, snapshot=shared)
    assert urgent["selected"] is None
    assert urgent["preemption"]["nominatedNode"] in ("b", "c")  # the dry run found victims (on clones)
