"""Pins the read-only views over wire-format objects (``kubeplane.api.views``).

Absent or null levels read as Go's zero values, as a typed client-go object would show the same JSON; the
helpers named after upstream (``GetControllerOf``, ``IsPodTerminal``, ``IsPodReady``, ``GetZoneKey``) pin
upstream's behaviour, the rest pin the no-copy, read-only contract.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import views
from kubeplane.api.views import EMPTY, Body, Meta, NodeView, PodView

T = dict[str, Any]

POD: T = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u1",
        "generateName": "p-",
        "resourceVersion": "7",
        "generation": 2,
        "labels": {"app": "a"},
        "annotations": {"note": "x"},
        "finalizers": ["f"],
        "ownerReferences": [
            {"kind": "ReplicaSet", "name": "rs", "uid": "o1"},
            {"kind": "ReplicaSet", "name": "rs2", "uid": "o2", "controller": True},
        ],
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "deletionTimestamp": "2026-01-02T00:00:00Z",
        "deletionGracePeriodSeconds": 30,
    },
    "spec": {
        "nodeName": "n1",
        "schedulerName": "default-scheduler",
        "priority": 100,
        "containers": [{"name": "c"}],
        "initContainers": [{"name": "i"}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "nodeSelector": {"disk": "ssd"},
    },
    "status": {
        "phase": "Running",
        "reason": "Evicted",
        "nominatedNodeName": "n2",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "c", "ready": True}],
        "initContainerStatuses": [{"name": "i"}],
    },
}

NODE: T = {
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z", "topology.kubernetes.io/region": "r"}},
    "spec": {"unschedulable": True, "taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {
        "allocatable": {"cpu": "4"},
        "capacity": {"cpu": "8"},
        "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "False"}],
    },
}


def test_meta_reads_every_well_known_field() -> None:
    meta = Body(POD).meta
    assert (meta.name, meta.namespace, meta.uid, meta.generate_name) == ("p", "ns", "u1", "p-")
    assert (meta.resource_version, meta.generation) == ("7", 2)
    assert meta.labels == {"app": "a"}
    assert meta.annotations == {"note": "x"}
    assert list(meta.finalizers) == ["f"]
    assert [r["uid"] for r in meta.owner_references] == ["o1", "o2"]
    assert meta.creation_timestamp == "2026-01-01T00:00:00Z"
    assert meta.deletion_timestamp == "2026-01-02T00:00:00Z"
    assert meta.deletion_grace_period_seconds == 30
    assert meta.is_being_deleted


def test_meta_is_a_read_only_mapping_of_metadata() -> None:
    meta = Body(POD).meta
    assert meta["name"] == "p"
    assert meta.get("missing", "d") == "d"
    assert set(meta) == set(POD["metadata"])
    assert len(meta) == len(POD["metadata"])
    assert dict(meta) == POD["metadata"]


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param({}, id="no-levels"),
        pytest.param({"metadata": None, "spec": None, "status": None}, id="null-levels"),
        pytest.param({"metadata": {}, "spec": {}, "status": {"conditions": None}}, id="empty-levels"),
    ],
)
def test_absent_reads_as_go_zero_values(obj: T) -> None:
    """A typed Go object decoded from the same JSON: empty strings, zero ints, nil maps and slices, nil times."""
    pod, node = PodView(obj), NodeView(obj)
    meta = pod.meta
    assert (meta.name, meta.namespace, meta.uid, meta.resource_version, meta.generation) == ("", "", "", "", 0)
    assert meta.labels == {}
    assert meta.annotations == {}
    assert tuple(meta.owner_references) == ()
    assert tuple(meta.finalizers) == ()
    assert meta.controller_ref is None
    assert meta.creation_timestamp is None
    assert meta.deletion_timestamp is None
    assert meta.deletion_grace_period_seconds is None
    assert not meta.is_being_deleted
    assert pod.spec == {}
    assert pod.status == (obj.get("status") or {})
    assert tuple(pod.conditions) == ()
    assert (pod.phase, pod.reason, pod.node_name, pod.nominated_node_name, pod.priority) == ("", "", "", "", 0)
    assert tuple(pod.containers) == ()
    assert tuple(pod.container_statuses) == ()
    assert pod.node_selector == {}
    assert not pod.is_terminal
    assert not pod.is_ready
    assert pod.ready_condition is None
    assert (node.name, node.labels, tuple(node.taints), node.unschedulable) == ("", {}, (), False)
    assert node.allocatable == {}
    assert node.capacity == {}
    assert not node.is_ready
    assert node.zone_key == ""
    assert (views.name_of(obj), views.namespace_of(obj), views.uid_of(obj)) == ("", "", "")
    assert views.labels_of(obj) == {}
    assert views.annotations_of(obj) == {}
    assert views.meta_of(obj) == {}
    assert views.spec_of(obj) == {}
    assert views.status_of(obj) == (obj.get("status") or {})


def test_views_wrap_without_copying() -> None:
    """A view holds the dict itself: it sees later changes and hands back the very sub-dicts it wraps."""
    pod: T = {"metadata": {"labels": {"a": "1"}}, "spec": {"nodeName": "n"}, "status": {"phase": "Pending"}}
    view = PodView(pod)
    assert view.raw is pod
    assert view.meta.labels is pod["metadata"]["labels"]
    assert view.spec is pod["spec"]
    pod["status"]["phase"] = "Running"
    assert view.phase == "Running"
    assert not hasattr(view, "__dict__")
    assert not hasattr(view.meta, "__dict__")


def test_empty_is_read_only() -> None:
    """Absent levels all read as the one shared EMPTY; writing to it would leak into every object."""
    with pytest.raises(TypeError):
        EMPTY["x"] = 1  # type: ignore[index]


def test_pod_view() -> None:
    pod = PodView(POD)
    assert (pod.phase, pod.reason, pod.node_name, pod.nominated_node_name) == ("Running", "Evicted", "n1", "n2")
    assert (pod.scheduler_name, pod.priority) == ("default-scheduler", 100)
    assert [c["name"] for c in pod.containers] == ["c"]
    assert [c["name"] for c in pod.init_containers] == ["i"]
    assert [c["name"] for c in pod.container_statuses] == ["c"]
    assert [c["name"] for c in pod.init_container_statuses] == ["i"]
    assert [t["key"] for t in pod.tolerations] == ["k"]
    assert pod.node_selector == {"disk": "ssd"}
    assert pod.ready_condition == {"type": "Ready", "status": "True"}
    assert pod.is_ready
    assert not pod.is_terminal
    assert pod.condition("PodScheduled") == {"type": "PodScheduled", "status": "True"}
    assert pod.condition("Initialized") is None
    assert (pod.kind, pod.api_version) == ("Pod", "v1")
    assert repr(pod) == "PodView(Pod ns/p)"


def test_node_view() -> None:
    node = NodeView(NODE)
    assert (node.name, node.unschedulable) == ("n1", True)
    assert node.labels["topology.kubernetes.io/zone"] == "z"
    assert [t["key"] for t in node.taints] == ["k"]
    assert node.allocatable == {"cpu": "4"}
    assert node.capacity == {"cpu": "8"}
    assert node.ready_condition == {"type": "Ready", "status": "False"}
    assert not node.is_ready
    assert node.condition_is_true("MemoryPressure") is False
    assert node.zone_key == "r:\x00:z"


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        pytest.param(None, None, id="no-refs"),
        pytest.param([{"uid": "a"}], None, id="no-controller"),
        pytest.param([{"uid": "a", "controller": False}, {"uid": "b", "controller": True}], "b", id="controller"),
        pytest.param([{"uid": "a", "controller": "true"}], None, id="controller-must-be-bool-true"),
        pytest.param([{"uid": "a", "controller": True}, {"uid": "b", "controller": True}], "a", id="first-wins"),
    ],
)
def test_controller_ref_is_upstream_get_controller_of(refs: list[T] | None, expected: str | None) -> None:
    """``metav1.GetControllerOf``: the first ownerReference whose ``controller`` is true, else nil."""
    obj: T = {"metadata": {"ownerReferences": refs}}
    for found in (views.controller_ref_of(obj), Meta(obj["metadata"]).controller_ref):
        assert (found or {}).get("uid") == expected


@pytest.mark.parametrize(
    ("phase", "terminal"),
    [("Pending", False), ("Running", False), ("Unknown", False), ("Succeeded", True), ("Failed", True), ("", False)],
)
def test_is_pod_terminal_is_upstream_is_pod_terminal(phase: str, terminal: bool) -> None:
    """``podutil.IsPodTerminal``: only Succeeded and Failed are terminal."""
    pod: T = {"status": {"phase": phase}}
    assert views.is_pod_terminal(pod) is terminal
    assert PodView(pod).is_terminal is terminal


@pytest.mark.parametrize(
    ("labels", "key"),
    [
        pytest.param({}, "", id="no-labels"),
        pytest.param({"topology.kubernetes.io/region": "r"}, "r:\x00:", id="region-only"),
        pytest.param({"topology.kubernetes.io/zone": "z"}, ":\x00:z", id="zone-only"),
        pytest.param({"failure-domain.beta.kubernetes.io/zone": "z"}, ":\x00:z", id="beta-zone"),
        pytest.param(
            {
                "topology.kubernetes.io/region": "r",
                "topology.kubernetes.io/zone": "z",
                "failure-domain.beta.kubernetes.io/zone": "bz",
            },
            "r:\x00:bz",
            id="beta-zone-wins",
        ),
        pytest.param(
            {"topology.kubernetes.io/region": "r", "failure-domain.beta.kubernetes.io/region": "br"},
            "br:\x00:",
            id="beta-region-wins",
        ),
        pytest.param(
            {"failure-domain.beta.kubernetes.io/zone": "", "topology.kubernetes.io/zone": "z"},
            "",
            id="present-empty-beta-label-still-wins",
        ),
    ],
)
def test_zone_key_is_upstream_get_zone_key(labels: dict[str, str], key: str) -> None:
    """``utilnode.GetZoneKey``: the beta failure-domain label wins when *present*, even empty."""
    assert views.zone_key({"metadata": {"labels": labels}}) == key


def test_find_condition_returns_the_first_match() -> None:
    conditions = [{"type": "Ready", "status": "False"}, {"type": "Ready", "status": "True"}]
    assert views.find_condition(conditions, "Ready") == {"type": "Ready", "status": "False"}
    assert views.find_condition(None, "Ready") is None


def test_defensive_accessors_read_bad_shapes_as_zero() -> None:
    obj: T = {"a": {"b": {"c": 1}}, "s": "not-an-object", "l": [1, {"x": 1}], "n": None, "i": 3, "t": True}
    assert views.section(obj, "a", "b") == {"c": 1}
    assert views.section(obj, "s", "b") == {}
    assert views.section(obj, "missing") == {}
    assert list(views.items(obj, "l")) == [1, {"x": 1}]
    assert list(views.items(obj, "s")) == []
    assert views.mappings(obj, "l") == [{}, {"x": 1}]
    assert views.mappings(obj, "n") == []
    assert views.int_field(obj, "i") == 3
    assert views.int_field(obj, "t", 5) == 5
    assert views.int_field(obj, "missing", 1) == 1


def test_is_being_deleted() -> None:
    assert views.is_being_deleted(POD)
    assert not views.is_being_deleted({"metadata": {"deletionTimestamp": None}})
