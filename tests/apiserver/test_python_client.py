"""The official ``kubernetes`` Python client against a ``kubeplane apiserver`` process.

CRUD of every kind the API server core serves (through the dynamic client, which also exercises discovery),
then the semantics the client relies on: watch from a resourceVersion, pagination, selectors, binding,
eviction with and without a PodDisruptionBudget, scale, optimistic concurrency, status split, graceful
deletion and finalizers.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client, dynamic, watch

NS = "crud"

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
}
SELECTOR = {"matchLabels": {"app": "web"}}
RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]

# (apiVersion, kind, namespaced, body without metadata.name)
KINDS: list[tuple[str, str, bool, dict[str, Any]]] = [
    ("v1", "Node", False, {"status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}),
    ("v1", "Pod", True, {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}),
    (
        "v1",
        "Event",
        True,
        {
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
            "reason": "Test",
            "message": "hello",
            "type": "Normal",
            "source": {"component": "tests"},
        },
    ),
    ("v1", "ConfigMap", True, {"data": {"key": "value"}}),
    ("v1", "Service", True, {"spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}),
    ("v1", "ServiceAccount", True, {}),
    (
        "v1",
        "PersistentVolume",
        False,
        {"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}},
    ),
    (
        "v1",
        "PersistentVolumeClaim",
        True,
        {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
    ),
    ("apps/v1", "Deployment", True, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("apps/v1", "ReplicaSet", True, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("apps/v1", "DaemonSet", True, {"spec": {"selector": SELECTOR, "template": TEMPLATE}}),
    ("coordination.k8s.io/v1", "Lease", True, {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}),
    ("scheduling.k8s.io/v1", "PriorityClass", False, {"value": 1000}),
    ("policy/v1", "PodDisruptionBudget", True, {"spec": {"minAvailable": 1, "selector": SELECTOR}}),
    ("storage.k8s.io/v1", "StorageClass", False, {"provisioner": "example.com/disk"}),
    ("rbac.authorization.k8s.io/v1", "Role", True, {"rules": RULES}),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", False, {"rules": RULES}),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        True,
        {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice"}],
        },
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        False,
        {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "Group", "name": "devs"}],
        },
    ),
]


MERGE = "application/merge-patch+json"  # strategic merge patch arrives with the kubectl issue


def raw(call: Any, *args: Any) -> int:
    """Call an API whose answer is a Status where the client expects an object (binding, eviction: upstream
    returns Status{Success}); read and release the response so its connection goes back to the pool."""
    response = call(*args, _preload_content=False)
    response.read()
    response.release_conn()
    return int(response.status)


@pytest.fixture(scope="module", autouse=True)
def namespace(api_client: Any) -> None:
    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": NS}})


@pytest.fixture(scope="module")
def dyn(api_client: Any) -> dynamic.DynamicClient:
    return dynamic.DynamicClient(api_client)


@pytest.mark.parametrize(("api_version", "kind", "namespaced", "body"), KINDS, ids=[f"{a}/{k}" for a, k, _, _ in KINDS])
def test_crud_of_every_kind(
    dyn: dynamic.DynamicClient, api_version: str, kind: str, namespaced: bool, body: dict[str, Any]
) -> None:
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    ns = NS if namespaced else None
    name = f"crud-{kind.lower()}"
    created = resource.create(body={**body, "metadata": {"name": name, "labels": {"t": "1"}}}, namespace=ns)
    assert created.metadata.name == name
    assert created.metadata.uid
    assert created.metadata.creationTimestamp
    rv = int(created.metadata.resourceVersion)
    got = resource.get(name=name, namespace=ns)
    assert got.metadata.uid == created.metadata.uid
    listed = resource.get(namespace=ns, label_selector="t=1")
    assert name in [item.metadata.name for item in listed.items]
    replaced_body = got.to_dict()
    replaced_body["metadata"]["labels"] = {"t": "1", "replaced": "yes"}
    replaced = resource.replace(body=replaced_body, namespace=ns)
    assert int(replaced.metadata.resourceVersion) > rv
    assert replaced.metadata.labels["replaced"] == "yes"
    patched = resource.patch(
        name=name,
        namespace=ns,
        body={"metadata": {"labels": {"patched": "yes"}}},
        content_type="application/merge-patch+json",
    )
    assert dict(patched.metadata.labels) == {"t": "1", "replaced": "yes", "patched": "yes"}
    with pytest.raises(client.ApiException) as stale:  # the replace above made this resourceVersion stale
        resource.replace(body={**replaced_body, "metadata": {**replaced_body["metadata"]}}, namespace=ns)
    assert stale.value.status == 409
    resource.delete(name=name, namespace=ns, grace_period_seconds=0)
    if kind in ("PersistentVolume", "PersistentVolumeClaim"):
        # StorageObjectInUseProtection's finalizer holds it until its controller (not running here) lets go
        assert resource.get(name=name, namespace=ns).metadata.deletionTimestamp
        unprotect = {"metadata": {"finalizers": None}}
        resource.patch(name=name, namespace=ns, body=unprotect, content_type="application/merge-patch+json")
    with pytest.raises(client.ApiException) as gone:
        resource.get(name=name, namespace=ns)
    assert gone.value.status == 404


def test_namespace_delete_marks_it_terminating(dyn: dynamic.DynamicClient, api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespace({"metadata": {"name": "doomed"}})
    v1.delete_namespace("doomed")
    ns = v1.read_namespace("doomed")
    assert ns.status.phase == "Terminating"
    assert ns.metadata.deletion_timestamp is not None
    with pytest.raises(client.ApiException) as refused:
        v1.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert refused.value.status == 403
    assert "because it is being terminated" in json.loads(refused.value.body)["message"]


def test_events_k8s_io_reads_and_writes_core_events(dyn: dynamic.DynamicClient, api_client: Any) -> None:
    """Both event APIs share storage, each in its own field names (upstream events/v1 conversion)."""
    core = client.CoreV1Api(api_client)
    core.create_namespaced_event(
        NS,
        {
            "metadata": {"name": "seen"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
            "reason": "Seen",
            "message": "from core",
            "type": "Normal",
        },
    )
    events = dyn.resources.get(api_version="events.k8s.io/v1", kind="Event")
    seen = events.get(name="seen", namespace=NS)
    assert (seen.apiVersion, seen.note, seen.regarding.name) == ("events.k8s.io/v1", "from core", "p")
    assert "seen" in [e.metadata.name for e in events.get(namespace=NS).items]
    events.create(
        namespace=NS,
        body={
            "metadata": {"name": "written"},
            "eventTime": "2026-11-21T00:00:00.000000Z",
            "regarding": {"kind": "Pod", "name": "p1", "namespace": NS},
            "note": "from events/v1",
            "reason": "Written",
            "type": "Warning",
            "action": "Test",
            "reportingController": "example.com/tests",
            "reportingInstance": "tests-1",
        },
    )
    written = core.read_namespaced_event("written", NS)
    assert (written.message, written.involved_object.name, written.reporting_component) == (
        "from events/v1",
        "p1",
        "example.com/tests",
    )


def _pod(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def test_watch_from_resource_version_sees_every_change_in_order(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespace({"metadata": {"name": "watched"}})
    start = v1.list_namespaced_pod("watched").metadata.resource_version
    seen: list[tuple[str, str, int]] = []

    def follow() -> None:
        for event in watch.Watch().stream(v1.list_namespaced_pod, "watched", resource_version=start, timeout_seconds=4):
            obj = event["object"]
            seen.append((event["type"], obj.metadata.name, int(obj.metadata.resource_version)))

    thread = threading.Thread(target=follow)
    thread.start()
    time.sleep(0.3)
    v1.create_namespaced_pod("watched", _pod("a"))
    v1.create_namespaced_pod("watched", _pod("b"))
    v1.patch_namespaced_pod("a", "watched", {"metadata": {"labels": {"x": "1"}}}, _content_type=MERGE)
    v1.delete_namespaced_pod("b", "watched")
    thread.join()
    assert [(t, n) for t, n, _ in seen] == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    revisions = [rv for _, _, rv in seen]
    assert revisions == sorted(revisions)
    assert len(set(revisions)) == 4
    # resuming from the middle replays exactly the rest
    replay = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            v1.list_namespaced_pod, "watched", resource_version=str(revisions[1]), timeout_seconds=1
        )
    ]
    assert replay == [("MODIFIED", "a"), ("DELETED", "b")]


def test_paginated_list_is_one_snapshot(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespace({"metadata": {"name": "paged"}})
    for i in range(7):
        v1.create_namespaced_config_map("paged", {"metadata": {"name": f"cm-{i}"}})
    first = v1.list_namespaced_config_map("paged", limit=3)
    assert [c.metadata.name for c in first.items] == ["cm-0", "cm-1", "cm-2"]
    assert first.metadata.remaining_item_count == 4
    v1.delete_namespaced_config_map("cm-4", "paged")  # after the first page: not seen by the snapshot
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = v1.list_namespaced_config_map("paged", limit=3, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert names == [f"cm-{i}" for i in range(7)]


def test_label_and_field_selectors(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespace({"metadata": {"name": "selected"}})
    for name, tier in [("fe-1", "frontend"), ("fe-2", "frontend"), ("be-1", "backend")]:
        v1.create_namespaced_pod("selected", _pod(name, {"tier": tier}))
    by_label = v1.list_namespaced_pod("selected", label_selector="tier in (frontend),tier!=backend")
    assert [p.metadata.name for p in by_label.items] == ["fe-1", "fe-2"]
    by_field = v1.list_pod_for_all_namespaces(field_selector="metadata.namespace=selected,metadata.name!=fe-1")
    assert [p.metadata.name for p in by_field.items] == ["be-1", "fe-2"]
    pending = v1.list_namespaced_pod("selected", field_selector="status.phase=Pending,spec.nodeName=")
    assert len(pending.items) == 3
    with pytest.raises(client.ApiException) as bad:
        v1.list_namespaced_pod("selected", field_selector="spec.nosuchfield=x")
    assert bad.value.status == 400
    assert "field label not supported: spec.nosuchfield" in json.loads(bad.value.body)["message"]


def test_binding_sets_node_name_and_condition_once(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespace({"metadata": {"name": "bound"}})
    v1.create_namespaced_pod("bound", _pod("p"))
    binding = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node01"}}
    assert raw(v1.create_namespaced_pod_binding, "p", "bound", binding) == 201
    pod = v1.read_namespaced_pod("p", "bound")
    assert pod.spec.node_name == "node01"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    with pytest.raises(client.ApiException) as twice:
        raw(v1.create_namespaced_binding, "bound", {**binding, "target": {"kind": "Node", "name": "node02"}})
    assert twice.value.status == 409
    assert 'is already assigned to node "node01"' in json.loads(twice.value.body)["message"]


def test_eviction_with_and_without_a_budget(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    policy = client.PolicyV1Api(api_client)
    v1.create_namespace({"metadata": {"name": "evict"}})
    for name in ("free", "guarded"):
        v1.create_namespaced_pod("evict", _pod(name, {"app": name}))
        raw(v1.create_namespaced_pod_binding, name, "evict", {"metadata": {"name": name}, "target": {"name": "n"}})
        v1.patch_namespaced_pod_status(name, "evict", {"status": {"phase": "Running"}}, _content_type=MERGE)
    assert raw(v1.create_namespaced_pod_eviction, "free", "evict", {"metadata": {"name": "free"}}) == 201
    assert v1.read_namespaced_pod("free", "evict").metadata.deletion_timestamp is not None  # graceful: bound
    policy.create_namespaced_pod_disruption_budget(
        "evict",
        {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}},
    )
    with pytest.raises(client.ApiException) as refused:
        raw(v1.create_namespaced_pod_eviction, "guarded", "evict", {"metadata": {"name": "guarded"}})
    assert refused.value.status == 429
    assert (
        json.loads(refused.value.body)["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert v1.read_namespaced_pod("guarded", "evict").metadata.deletion_timestamp is None
    policy.patch_namespaced_pod_disruption_budget_status(
        "pdb",
        "evict",
        {"status": {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}},
        _content_type=MERGE,
    )
    raw(v1.create_namespaced_pod_eviction, "guarded", "evict", {"metadata": {"name": "guarded"}})
    assert v1.read_namespaced_pod("guarded", "evict").metadata.deletion_timestamp is not None
    status = policy.read_namespaced_pod_disruption_budget("pdb", "evict").status
    assert status.disruptions_allowed == 0
    assert "guarded" in status.disrupted_pods


def test_scale_subresource(api_client: Any) -> None:
    apps = client.AppsV1Api(api_client)
    body = {"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}}
    created = apps.create_namespaced_deployment(NS, body)
    assert created.metadata.generation == 1
    scale = apps.read_namespaced_deployment_scale("web", NS)
    assert (scale.spec.replicas, scale.status.selector) == (2, "app=web")
    apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 5}}, _content_type=MERGE)
    assert apps.read_namespaced_deployment("web", NS).spec.replicas == 5
    scale = apps.read_namespaced_deployment_scale("web", NS)
    scale.spec.replicas = 3
    assert apps.replace_namespaced_deployment_scale("web", NS, scale).spec.replicas == 3
    deployment = apps.read_namespaced_deployment("web", NS)
    assert deployment.spec.replicas == 3
    assert deployment.metadata.generation == 3  # each spec change moves generation


def test_status_and_main_resource_ignore_each_others_half(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespaced_pod(NS, _pod("halves"))
    v1.patch_namespaced_pod_status(
        "halves", NS, {"status": {"phase": "Running"}, "spec": {"nodeName": "sneaky"}}, _content_type=MERGE
    )
    pod = v1.read_namespaced_pod("halves", NS)
    assert (pod.status.phase, pod.spec.node_name) == ("Running", None)
    v1.patch_namespaced_pod(
        "halves", NS, {"status": {"phase": "Failed"}, "metadata": {"labels": {"k": "v"}}}, _content_type=MERGE
    )
    pod = v1.read_namespaced_pod("halves", NS)
    assert (pod.status.phase, pod.metadata.labels) == ("Running", {"k": "v"})


def test_graceful_pod_deletion_and_finalizers(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    v1.create_namespaced_pod(NS, _pod("graceful"))
    raw(v1.create_namespaced_pod_binding, "graceful", NS, {"metadata": {"name": "graceful"}, "target": {"name": "n"}})
    v1.delete_namespaced_pod("graceful", NS)
    pod = v1.read_namespaced_pod("graceful", NS)
    assert pod.metadata.deletion_grace_period_seconds == 30
    v1.delete_namespaced_pod("graceful", NS, grace_period_seconds=0)  # the kubelet's final delete
    with pytest.raises(client.ApiException):
        v1.read_namespaced_pod("graceful", NS)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    v1.delete_namespaced_config_map("held", NS)
    held = v1.read_namespaced_config_map("held", NS)
    assert held.metadata.deletion_timestamp is not None
    v1.patch_namespaced_config_map("held", NS, {"metadata": {"finalizers": None}}, _content_type=MERGE)
    with pytest.raises(client.ApiException) as gone:
        v1.read_namespaced_config_map("held", NS)
    assert gone.value.status == 404


def test_deletecollection_with_selector(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    for i in range(4):
        v1.create_namespaced_config_map(NS, {"metadata": {"name": f"dc-{i}", "labels": {"dc": str(i % 2)}}})
    v1.delete_collection_namespaced_config_map(NS, label_selector="dc=1")
    left = [c.metadata.name for c in v1.list_namespaced_config_map(NS, label_selector="dc").items]
    assert left == ["dc-0", "dc-2"]


def test_generate_name_priority_and_defaults(api_client: Any) -> None:
    v1 = client.CoreV1Api(api_client)
    sched = client.SchedulingV1Api(api_client)
    sched.create_priority_class({"metadata": {"name": "high"}, "value": 100000})
    pod = v1.create_namespaced_pod(
        NS,
        {
            "metadata": {"generateName": "gen-"},
            "spec": {"priorityClassName": "high", "containers": [{"name": "c", "image": "nginx"}]},
        },
    )
    assert pod.metadata.name.startswith("gen-")
    assert len(pod.metadata.name) == 9
    assert (pod.spec.priority, pod.spec.preemption_policy) == (100000, "PreemptLowerPriority")
    assert (pod.spec.scheduler_name, pod.spec.restart_policy, pod.spec.dns_policy) == (
        "default-scheduler",
        "Always",
        "ClusterFirst",
    )
    assert pod.spec.termination_grace_period_seconds == 30
    assert {t.key for t in pod.spec.tolerations} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert pod.status.qos_class == "BestEffort"
    with pytest.raises(client.ApiException) as unknown:
        v1.create_namespaced_pod(
            NS, {**_pod("nopc"), "spec": {"priorityClassName": "nope", "containers": [{"name": "c", "image": "i"}]}}
        )
    assert unknown.value.status == 403
    assert "no PriorityClass with name nope was found" in json.loads(unknown.value.body)["message"]
    spec = {"priorityClassName": "high", "preemptionPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
    with pytest.raises(client.ApiException) as policy:
        v1.create_namespaced_pod(NS, {**_pod("never"), "spec": spec})
    assert policy.value.status == 403
    assert json.loads(policy.value.body)["message"].endswith(
        "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission "
        "controller computed PreemptLowerPriority from the given PriorityClass name"
    )
    assert {pc.metadata.name for pc in sched.list_priority_class().items} >= {
        "system-node-critical",
        "system-cluster-critical",
    }
