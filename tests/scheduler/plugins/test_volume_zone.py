"""VolumeZone against upstream's volume_zone_test.go (v1.37, fwk era): TestSingleZone, TestMultiZone,
TestWithBinding (the lister-error cases the conformance table leaves out, with the informer lister's NotFound
texts), TestIsSchedulableAfterPersistentVolumeClaimAdded, TestIsSchedulableAfterStorageClassAdded,
TestIsSchedulableAfterPersistentVolumeChange; the events; and the vectorised Filter held to the reference on
random clusters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.interface import ActionType, CycleState, QueueingHint, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import volume_zone
from kubeplane.scheduler.plugins.volume_zone import ERR_REASON_CONFLICT, VolumeZone

from .volume_fixtures import handle_with, node, pod, pvc, pvc_volume

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def pv(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {},
    }


def storage_class(name: str, mode: str | None = None) -> dict[str, Any]:
    sc: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}}
    if mode is not None:
        sc["volumeBindingMode"] = mode
    return sc


MULTI_ZONE_OBJECTS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_2", volume_name="Vol_2"),
    pvc("PVC_3", volume_name="Vol_3"),
    pvc("PVC_4", volume_name="Vol_not_exist"),
    pvc("PVC_Stable_1", volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", volume_name="Vol_Stable_2"),
]
CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)


def _run(objects: list[dict[str, Any]], claim: str, labels: dict[str, str]) -> tuple[Status | None, Status | None]:
    """Upstream's loop: PreFilter, then Filter unconditionally on a NodeInfo holding only the node."""
    pl = VolumeZone(handle_with(objects))
    state = CycleState()
    p = PodInfo(pod("pod_1", pvc_volume(claim)))
    _, pre = pl.pre_filter(state, p, ())
    return pre, pl.filter(state, p, NodeInfo(node("host1", labels)))


@pytest.mark.parametrize(
    ("name", "claim", "labels", "want"),
    [
        ("node without labels", "PVC_3", {}, None),
        ("beta zone label matched", "PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("beta zone label matched multi-zone", "PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}, CONFLICT),
        ("zone label matched multi-zone", "PVC_Stable_2", {ZONE: "us-west1-a", "uselessLabel": "none"}, None),
        ("zone label doesn't match", "PVC_Stable_1", {ZONE: "us-west1-b", "uselessLabel": "none"}, CONFLICT),
        ("pv with beta label, node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None),
        ("pv with beta label, node with ga label, don't match", "PVC_1", {ZONE: "us-west1-b"}, CONFLICT),
    ],
)
def test_multi_zone(name: str, claim: str, labels: dict[str, str], want: Status | None) -> None:
    """TestMultiZone (a ``__``-separated label is a set of zones)."""
    _, got = _run(MULTI_ZONE_OBJECTS, claim, labels)
    assert got == want, name


BINDING_OBJECTS = [
    storage_class("Class_Immediate"),
    storage_class("Class_Wait", "WaitForFirstConsumer"),
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", volume_name="Vol_1"),
    pvc("PVC_NoSC", class_name="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", class_name="Class_Wait"),
    pvc("PVC_ImmediateSC", class_name="Class_Immediate"),
]


@pytest.mark.parametrize(
    ("name", "objects", "claim", "want_pre", "want_filter"),
    [
        ("label zone failure domain matched", BINDING_OBJECTS, "PVC_1", None, None),
        (
            # upstream's fake lister says `storageclasses.storage.k8s.io "Class_0" not found`; an informer's
            # lister (what the scheduler runs with) names the resource in the singular
            "unbound volume empty storage class",
            BINDING_OBJECTS,
            "PVC_NoSC",
            Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
            Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
        ),
        ("unbound volume wait binding mode", BINDING_OBJECTS, "PVC_WaitSC", Status.skip(), None),
        (
            "missing PVC",
            BINDING_OBJECTS,
            "PVC_missing",
            Status.unresolvable('persistentvolumeclaim "PVC_missing" not found'),
            Status.unresolvable('persistentvolumeclaim "PVC_missing" not found'),
        ),
        (
            "missing PV",
            MULTI_ZONE_OBJECTS,
            "PVC_4",
            Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
            Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
        ),
        (
            "unbound claim of an Immediate class",
            [*BINDING_OBJECTS, storage_class("Class_Imm", "Immediate"), pvc("PVC_Imm", class_name="Class_Imm")],
            "PVC_Imm",
            Status.unresolvable("PersistentVolume had no name"),
            Status.unresolvable("PersistentVolume had no name"),
        ),
        ("claim without a name", BINDING_OBJECTS, "", Status.unresolvable("PersistentVolumeClaim had no name"), None),
    ],
)
def test_with_binding(
    name: str, objects: list[dict[str, Any]], claim: str, want_pre: Status | None, want_filter: Status | None
) -> None:
    """TestWithBinding: PreFilter's status, and Filter's (which recomputes when PreFilter wrote nothing)."""
    pre, got = _run(objects, claim, {BETA_ZONE: "us-west1-a", "uselessLabel": "none"})
    assert pre == want_pre, name
    if claim:
        assert got == want_filter, name


def test_pv_topologies_ignore_a_label_that_does_not_parse() -> None:
    """volumehelpers.LabelZonesToSet rejects an empty element: the label is ignored (logged upstream)."""
    assert volume_zone.pv_topologies(pv("v", {ZONE: "a____b", REGION: "r"})) == [
        volume_zone.PVTopology("v", REGION, frozenset({"r"}))
    ]


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"),
    [
        ("pvc-was-added-but-pod-refers-no-pvc", pod("pod_1"), None, pvc("PVC_1", volume_name="Vol_1"), 0),
        (
            "pvc-was-added-and-pod-was-bound-to-different-pvc",
            pod("pod_1", pvc_volume("PVC_2")),
            None,
            pvc("PVC_1", volume_name="Vol_1"),
            0,
        ),
        (
            "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
            pod("pod_1", pvc_volume("PVC_1")),
            None,
            pvc("PVC_1", "ns1", volume_name="Vol_1"),
            0,
        ),
        ("pvc-was-added-and-pod-was-bound-to-the-pvc", pod("pod_1", pvc_volume("PVC_1")), None, pvc("PVC_1"), 1),
        (
            "pvc-was-updated-and-pod-was-bound-to-the-pvc",
            pod("pod_1", pvc_volume("PVC_1")),
            pvc("PVC_1"),
            pvc("PVC_1", volume_name="Vol_1"),
            1,
        ),
        ("pvc-was-updated-but-pod-refers-no-pvc", pod("pod_1"), pvc("PVC_1"), pvc("PVC_1", volume_name="Vol_1"), 0),
    ],
)
def test_is_schedulable_after_pvc_change(name: str, target: Any, old: Any, new: Any, want: int) -> None:
    pl = VolumeZone(handle_with())
    assert pl._is_schedulable_after_pvc_change(PodInfo(target), old, new) == QueueingHint(want), name


@pytest.mark.parametrize(
    ("name", "added", "want"),
    [
        ("sc-doesn't-have-volume-binding-mode", storage_class("SC_1"), QueueingHint.QUEUE_SKIP),
        ("new-sc-is-wait-for-first-consumer-mode", storage_class("SC_1", "WaitForFirstConsumer"), QueueingHint.QUEUE),
        ("immediate", storage_class("SC_1", "Immediate"), QueueingHint.QUEUE_SKIP),
    ],
)
def test_is_schedulable_after_storage_class_added(name: str, added: Any, want: QueueingHint) -> None:
    pl = VolumeZone(handle_with())
    assert pl._is_schedulable_after_storage_class_added(PodInfo(pod("pod_1", pvc_volume("PVC_1"))), None, added) == want


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("new-pv-was-added", None, pv("Vol_1", {BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE),
        (
            "pv-was-updated-and-changed-topology",
            pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", {BETA_ZONE: "us-west1-b"}),
            QueueingHint.QUEUE,
        ),
        (
            "pv-was-updated-and-added-topology-label",
            pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QueueingHint.QUEUE,
        ),
        (
            "pv-was-updated-but-no-topology-is-changed",
            pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone", "other": "x"}),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_is_schedulable_after_pv_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    pl = VolumeZone(handle_with())
    assert pl._is_schedulable_after_pv_change(PodInfo(pod("pod_1", pvc_volume("PVC_1"))), old, new) == want, name


def test_events_to_register_with_queueing_hints() -> None:
    pl = volume_zone.new({}, handle_with())
    events = [(e.event.resource, e.event.action_type, e.hint is not None) for e in pl.events_to_register()]
    assert events == [
        ("StorageClass", ActionType.ADD, True),
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL, False),
        ("PersistentVolumeClaim", ActionType.ADD | ActionType.update(), True),
        ("PersistentVolume", ActionType.ADD | ActionType.update(), True),
    ]


_ZONES = ("a", "b", "c")
_label_value = st.sampled_from(_ZONES)
_node_labels = st.dictionaries(st.sampled_from((BETA_ZONE, BETA_REGION, ZONE, REGION, "other")), _label_value)
_pv_labels = st.dictionaries(
    st.sampled_from((BETA_ZONE, BETA_REGION, ZONE, REGION)),
    st.lists(_label_value, min_size=1, max_size=2).map("__".join),
    min_size=1,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_node_labels, min_size=1, max_size=12), st.lists(_pv_labels, min_size=1, max_size=3), st.data())
def test_vector_filter_agrees_with_reference(
    node_labels: list[dict[str, str]], pv_labels: list[dict[str, str]], data: st.DataObject
) -> None:
    objects: list[dict[str, Any]] = []
    volumes = []
    for i, labels in enumerate(pv_labels):
        objects += [pv(f"v{i}", labels), pvc(f"c{i}", volume_name=f"v{i}")]
        volumes.append(pvc_volume(f"c{i}"))
    pl = VolumeZone(handle_with(objects))
    p = PodInfo(pod("p", *volumes))
    state = CycleState()
    assert pl.pre_filter(state, p, ()) == (None, None)
    infos = [NodeInfo(node(f"n{i}", labels)) for i, labels in enumerate(node_labels)]
    rows = data.draw(st.lists(st.integers(0, len(infos) - 1), max_size=len(infos), unique=True))
    mask = pl.filter_vector(state, p, NodeTable(infos), np.array(rows, dtype=np.int64))
    assert mask.tolist() == [pl.filter(state, p, infos[r]) is None for r in rows]
