"""Seed 002 inside kubeplane: ``kubectl apply -f deploy/custom-scheduler/`` on ``kubeplane up`` starts the custom
scheduler's three replicas as real kubeplane processes (the simulated kubelet runs kubeplane's own image,
``kubeplane/kubeplane-scheduler``, docs/kubelet.md), in their pods' in-cluster environment.

Pinned upstream behaviour: kube-scheduler's leader election (``staging/src/k8s.io/client-go/tools/leaderelection``:
one holder of the Lease, ``ReleaseOnCancel`` handing it over when the leader's pod is deleted and its process gets
SIGTERM); the scheduler's ``Scheduled`` event from the profile's ``schedulerName`` (``pkg/scheduler/schedule_one.go``);
the kubelet starting a container's process with the pod's args and volumes (``pkg/kubelet/kuberuntime``) and serving
its output to ``kubectl logs``; RBAC (``plugin/pkg/auth/authorizer/rbac``): without the ClusterRoleBinding to
``system:kube-scheduler`` the ServiceAccount's requests are Forbidden (403).

Every wait is bounded; the replicas use the Deployment's own leader-election flags (15 s lease, 2 s retry).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.up_cluster import Cluster, running_up

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "custom-scheduler"
NODES = """\
nodes:
- {name: node01, capacity: {cpu: "8", memory: 16Gi}}
"""
ACQUIRED = "acquired lease kube-system/custom-scheduler"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_up(tmp_path_factory.mktemp("seed002"), NODES, ready_nodes=1) as running:
        yield running


def replicas(cluster: Cluster) -> list[dict[str, Any]]:
    return list(cluster.get("pods", "-n", "kube-system", "-l", "app=custom-scheduler")["items"])


def logs(cluster: Cluster, pod: str) -> str:
    """``kubectl logs`` of the replica ("" while its container has not started or once the pod is gone)."""
    try:
        return cluster.kubectl("logs", "-n", "kube-system", pod)
    except AssertionError:
        return ""


def names(cluster: Cluster) -> list[str]:
    return [p["metadata"]["name"] for p in replicas(cluster)]


def leader(cluster: Cluster, pods: list[str]) -> str:
    """The replica whose log says it acquired the Lease ("" while none has)."""
    return next((p for p in pods if ACQUIRED in logs(cluster, p)), "")


def running(cluster: Cluster, count: int) -> list[str]:
    """The names of ``count`` Running replicas not being deleted, [] until there are that many."""
    names = [
        p["metadata"]["name"]
        for p in replicas(cluster)
        if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
    ]
    return names if len(names) == count else []


def test_seed_002_runs_inside_kubeplane(cluster: Cluster) -> None:
    applied = cluster.kubectl("apply", "-f", str(DEPLOY))
    for expected in (
        "configmap/custom-scheduler-config created",
        "deployment.apps/custom-scheduler created",
        "pod/custom-scheduled-pod created",
        "serviceaccount/custom-scheduler created",
    ):
        assert expected in applied

    pods = cluster.wait("three Running custom-scheduler replicas", lambda: running(cluster, 3))
    statuses = [s for p in replicas(cluster) for s in p["status"]["containerStatuses"]]
    assert {s["image"] for s in statuses} == {"docker.io/kubeplane/kubeplane-scheduler:v1"}

    first = cluster.wait("a replica to take the Lease", lambda: leader(cluster, pods))
    lease = cluster.get("lease", "custom-scheduler", "-n", "kube-system")
    holder = lease["spec"]["holderIdentity"]
    assert holder.startswith(f"{first}_")  # upstream's identity: the pod's hostname (its name), "_", a uuid
    assert holder in logs(cluster, first)  # the identity the leader logged
    assert [p for p in pods if ACQUIRED in logs(cluster, p)] == [first]  # one leader
    for other in set(pods) - {first}:
        assert "waiting for lease kube-system/custom-scheduler" in logs(cluster, other)

    node = cluster.wait(
        "custom-scheduled-pod bound",
        lambda: cluster.get("pod", "custom-scheduled-pod").get("spec", {}).get("nodeName"),
    )
    assert node == "node01"
    events = cluster.get("events", "--field-selector", "involvedObject.name=custom-scheduled-pod")["items"]
    scheduled = [e for e in events if e["reason"] == "Scheduled"]
    assert scheduled
    assert scheduled[0].get("reportingComponent") == "custom-scheduler" or (
        scheduled[0].get("source", {}).get("component") == "custom-scheduler"
    )
    assert "with profiles custom-scheduler" in logs(cluster, first)

    # the leader's pod is deleted: its process gets SIGTERM and releases the Lease (ReleaseOnCancel); another
    # replica takes it (a survivor, or the Deployment's replacement if it starts first)
    cluster.kubectl("delete", "pod", "-n", "kube-system", first, "--wait=false")
    second = cluster.wait(
        "another replica to take the Lease",
        lambda: leader(cluster, [p for p in names(cluster) if p != first]),
        timeout=60,
    )
    lease = cluster.get("lease", "custom-scheduler", "-n", "kube-system")
    assert lease["spec"]["holderIdentity"].startswith(f"{second}_")
    assert lease["spec"]["leaseTransitions"] >= 1
    # the Deployment replaces the deleted replica: three run again, still one leader
    again = cluster.wait("three Running replicas again", lambda: running(cluster, 3))
    assert first not in again
    assert [p for p in again if ACQUIRED in logs(cluster, p)] == [second]


def test_without_its_cluster_role_binding_the_scheduler_is_forbidden(cluster: Cluster) -> None:
    """Runs after the seed test on the same cluster: remove ``custom-scheduler-role-binding`` (the binding to
    ``system:kube-scheduler``) and the leader's requests fail with 403, so a new pod for it stays unbound."""
    pods = cluster.wait("Running replicas", lambda: running(cluster, 3))
    current = cluster.wait("a leader", lambda: leader(cluster, pods))
    cluster.kubectl("delete", "clusterrolebinding", "custom-scheduler-role-binding")
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "custom-scheduled-pod-2"},
        "spec": {"schedulerName": "custom-scheduler", "containers": [{"name": "nginx", "image": "nginx"}]},
    }
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(body))
    cluster.wait(
        "a 403 in the scheduler's log",
        lambda: any("403" in logs(cluster, p) or "forbidden" in logs(cluster, p).lower() for p in pods),
        timeout=30,
    )
    assert not cluster.get("pod", "custom-scheduled-pod-2").get("spec", {}).get("nodeName")
    assert "403" in logs(cluster, current) or "forbidden" in logs(cluster, current).lower()
