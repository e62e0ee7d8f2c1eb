"""VolumeRestrictions against upstream's volume_restrictions_test.go (v1.37, fwk era): TestGCEDiskConflicts,
TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts, TestAccessModeConflicts,
Test_isSchedulableAfterPodDeleted, Test_isSchedulableAfterPersistentVolumeClaimChange; plus the PreFilterExtensions,
the events and NodeInfo's PVC reference counts the RWOP check reads."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import volume_restrictions
from kubeplane.scheduler.plugins.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    VolumeRestrictions,
)

from .volume_fixtures import handle_with, node, pod, pvc, pvc_volume

GCE_FOO = {"name": "", "gcePersistentDisk": {"pdName": "foo"}}
GCE_BAR = {"name": "", "gcePersistentDisk": {"pdName": "bar"}}
AWS_FOO = {"name": "", "awsElasticBlockStore": {"volumeID": "foo"}}
AWS_BAR = {"name": "", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD_AB = {"name": "", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_CD = {"name": "", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI_16 = {"name": "", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01"}}
ISCSI_17 = {"name": "", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01"}}


def _read_only(volume: dict[str, Any]) -> dict[str, Any]:
    kind = next(k for k in volume if k != "name")
    return {**volume, kind: {**volume[kind], "readOnly": True}}


def _run(p: dict[str, Any], existing: list[dict[str, Any]], objects: list[dict[str, Any]] = ()) -> Status | None:  # type: ignore[assignment]
    """PreFilter then (unless skipped or rejected) Filter on node1 holding ``existing`` (upstream's loop)."""
    handle = handle_with(
        objects, [node("node1")], [{**e, "spec": {**e["spec"], "nodeName": "node1"}} for e in existing]
    )
    pl = VolumeRestrictions(handle)
    state = CycleState()
    pod_info = PodInfo(p)
    _, pre = pl.pre_filter(state, pod_info, ())
    if pre is not None:
        return None if pre.is_skip() else pre
    ni = handle.snapshot().get("node1")
    assert ni is not None
    return pl.filter(state, pod_info, ni)


CONFLICT = Status.unschedulable(ERR_REASON_DISK_CONFLICT)


@pytest.mark.parametrize(
    ("volume", "existing", "want"),
    [
        # TestGCEDiskConflicts
        (None, [], None),
        (None, [GCE_FOO], None),
        (GCE_FOO, [GCE_FOO], CONFLICT),
        (GCE_BAR, [GCE_FOO], None),
        # TestAWSDiskConflicts: the same volume ID conflicts even when both are read-only
        (AWS_FOO, [AWS_FOO], CONFLICT),
        (AWS_BAR, [AWS_FOO], None),
        (_read_only(AWS_FOO), [_read_only(AWS_FOO)], CONFLICT),
        # TestRBDDiskConflicts: a shared monitor, pool and image
        (RBD_AB, [RBD_AB], CONFLICT),
        (RBD_CD, [RBD_AB], None),
        # TestISCSIDiskConflicts: the same IQN
        (ISCSI_16, [ISCSI_16], CONFLICT),
        (ISCSI_17, [ISCSI_16], None),
        # the read-only rule (isVolumeConflict): GCE PD, iSCSI and RBD may be shared read-only by all
        (_read_only(GCE_FOO), [_read_only(GCE_FOO)], None),
        (_read_only(GCE_FOO), [GCE_FOO], CONFLICT),
        (GCE_FOO, [_read_only(GCE_FOO)], CONFLICT),
        (_read_only(ISCSI_16), [_read_only(ISCSI_16)], None),
        (_read_only(RBD_AB), [_read_only(RBD_AB)], None),
        (_read_only(RBD_AB), [RBD_AB], CONFLICT),
    ],
)
def test_disk_conflicts(volume: dict[str, Any] | None, existing: list[dict[str, Any]], want: Status | None) -> None:
    new = pod("new", *([volume] if volume else []))
    on_node = [pod(f"e{i}", v) for i, v in enumerate(existing)]
    assert _run(new, on_node) == want


RWOP_1 = pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", access_modes=["ReadWriteMany"])
POD_ONE_PVC = pod("pod-with-one-pvc", pvc_volume("claim-with-rwop-1"), node="node-1")
POD_TWO_PVCS = pod("pod-with-two-pvcs", pvc_volume("claim-with-rwop-1"), pvc_volume("claim-with-rwop-2"))
POD_ONE_CONFLICT = pod("pod-with-one-conflict", pvc_volume("claim-with-rwop-1"))
POD_TWO_CONFLICTS = pod("pod-with-two-conflicts", pvc_volume("claim-with-rwop-1"), pvc_volume("claim-with-rwop-2"))
POD_RWX = pod("pod-with-rwx", pvc_volume("claim-with-rwx"))


@pytest.mark.parametrize(
    ("name", "new", "existing", "pvcs", "want_pre", "want"),
    [
        ("nothing", pod("p"), [], [], Status.skip(), None),
        (
            "failed to get PVC",
            POD_ONE_PVC,
            [],
            [],
            Status.unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found'),
            None,
        ),
        ("no access mode conflict", POD_ONE_PVC, [POD_RWX], [RWOP_1, RWX], Status.skip(), None),
        (
            "access mode conflict, unschedulable",
            POD_ONE_CONFLICT,
            [POD_ONE_PVC, POD_RWX],
            [RWOP_1, RWX],
            None,
            Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
        ),
        (
            "two conflicts, unschedulable",
            POD_TWO_CONFLICTS,
            [POD_TWO_PVCS, POD_RWX],
            [RWOP_1, RWOP_2, RWX],
            None,
            Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT),
        ),
    ],
)
def test_access_mode_conflicts(
    name: str,
    new: dict[str, Any],
    existing: list[dict[str, Any]],
    pvcs: list[dict[str, Any]],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    """TestAccessModeConflicts: PreFilter's status, then Filter's when PreFilter succeeded."""
    handle = handle_with(pvcs, [node("node-1")], [{**e, "spec": {**e["spec"], "nodeName": "node-1"}} for e in existing])
    pl = VolumeRestrictions(handle)
    state = CycleState()
    _, pre = pl.pre_filter(state, PodInfo(new), ())
    assert pre == want_pre, name
    if pre is None:
        ni = handle.snapshot().get("node-1")
        assert ni is not None
        assert pl.filter(state, PodInfo(new), ni) == want


def test_the_rwop_conflict_is_unschedulable_so_preemption_may_remove_the_user() -> None:
    """Upstream returns Unschedulable (not ...AndUnresolvable); RemovePod of the claim's user clears the conflict,
    AddPod brings it back (preemption's what-ifs; the clone keeps its own count)."""
    handle = handle_with([RWOP_1], [node("node-1")], [POD_ONE_PVC])
    pl = VolumeRestrictions(handle)
    state = CycleState()
    pod_info = PodInfo(POD_ONE_CONFLICT)
    assert pl.pre_filter(state, pod_info, ()) == (None, None)
    ni = handle.snapshot().get("node-1")
    assert ni is not None
    status = pl.filter(state, pod_info, ni)
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE
    what_if = state.clone()
    ext = pl.pre_filter_extensions()
    assert ext is not None
    assert ext.remove_pod(what_if, pod_info, PodInfo(POD_ONE_PVC), ni) is None
    assert pl.filter(what_if, pod_info, ni) is None
    assert pl.filter(state, pod_info, ni) == Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
    assert ext.add_pod(what_if, pod_info, PodInfo(POD_ONE_PVC), ni) is None
    assert pl.filter(what_if, pod_info, ni) == Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
    # a pod using another claim changes nothing
    assert ext.remove_pod(what_if, pod_info, PodInfo(POD_RWX), ni) is None
    assert pl.filter(what_if, pod_info, ni) is not None


def test_filter_without_pre_filter_state_is_an_error() -> None:
    pl = VolumeRestrictions(handle_with())
    status = pl.filter(CycleState(), PodInfo(pod("p")), NodeInfo(node("n")))
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('cannot read "PreFilterVolumeRestrictions" from cycleState',)


@pytest.mark.parametrize(
    ("name", "target", "deleted", "want"),
    [
        ("queue-new-object-gcedisk-conflict", pod("a", GCE_FOO), pod("b", GCE_FOO), QueueingHint.QUEUE),
        ("skip-new-object-gcedisk-no-conflict", pod("a", GCE_FOO), pod("b", GCE_BAR), QueueingHint.QUEUE_SKIP),
        ("queue-new-object-awsdisk-conflict", pod("a", AWS_FOO), pod("b", AWS_FOO), QueueingHint.QUEUE),
        ("skip-new-object-awsdisk-no-conflict", pod("a", AWS_FOO), pod("b", AWS_BAR), QueueingHint.QUEUE_SKIP),
        ("queue-new-object-rbddisk-conflict", pod("a", RBD_AB), pod("b", RBD_AB), QueueingHint.QUEUE),
        ("skip-new-object-rbddisk-no-conflict", pod("a", RBD_AB), pod("b", RBD_CD), QueueingHint.QUEUE_SKIP),
        ("queue-new-object-iscsidisk-conflict", pod("a", ISCSI_16), pod("b", ISCSI_16), QueueingHint.QUEUE),
        ("skip-new-object-iscsidisk-no-conflict", pod("a", ISCSI_16), pod("b", ISCSI_17), QueueingHint.QUEUE_SKIP),
        ("queue-has-same-claim", pod("pod1", pvc_volume("claim-rwop")), pod("pod2", pvc_volume("claim-rwop")), 1),
        (
            "skip-no-same-claim",
            pod("pod1", pvc_volume("claim-1-rwop")),
            pod("pod2", pvc_volume("claim-2-rwop")),
            QueueingHint.QUEUE_SKIP,
        ),
        # the deleted pod must be in the pod's namespace
        ("skip-other-namespace", pod("a", GCE_FOO), pod("b", GCE_FOO, namespace="other"), QueueingHint.QUEUE_SKIP),
    ],
)
def test_is_schedulable_after_pod_deleted(
    name: str, target: dict[str, Any], deleted: dict[str, Any], want: QueueingHint
) -> None:
    pl = VolumeRestrictions(handle_with())
    assert pl._is_schedulable_after_pod_deleted(PodInfo(target), deleted, None) == want, name


PVC1 = pvc("claim-with-rwx-1", access_modes=["ReadWriteMany"])
PVC2 = pvc("claim-with-rwx-2", access_modes=["ReadWriteMany"])


@pytest.mark.parametrize(
    ("name", "target", "added", "want"),
    [
        (
            "queue-new-object-pvc-belong-pod",
            pod("p", pvc_volume("claim-with-rwx-1"), pvc_volume("claim-with-rwx-2")),
            PVC1,
            QueueingHint.QUEUE,
        ),
        ("skip-new-object-unused", pod("p", pvc_volume("claim-with-rwx-1")), PVC2, QueueingHint.QUEUE_SKIP),
        ("skip-new-object-not-belong-pod", pod("p", pvc_volume("claim-with-rwx-1")), PVC2, QueueingHint.QUEUE_SKIP),
        (
            "skip-new-object-namespace-not-equal-pod",
            pod("p", pvc_volume("claim-with-rwx-1"), namespace="kube-system"),
            PVC1,
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_is_schedulable_after_pvc_added(name: str, target: dict[str, Any], added: dict[str, Any], want: int) -> None:
    pl = VolumeRestrictions(handle_with())
    assert pl._is_schedulable_after_pvc_added(PodInfo(target), None, added) == want, name


def test_events_to_register_with_queueing_hints() -> None:
    """EventsToRegister with queueing hints enabled: Pod/Delete and PVC/Add with hints, Node/Add without."""
    pl = volume_restrictions.new({}, handle_with())
    events = [(e.event.resource, e.event.action_type, e.hint is not None) for e in pl.events_to_register()]
    assert events == [
        ("Pod", ActionType.DELETE, True),
        ("Node", ActionType.ADD, False),
        ("PersistentVolumeClaim", ActionType.ADD, True),
    ]


def test_node_info_counts_pvc_references_in_step_with_its_pods() -> None:
    """Upstream NodeInfo.PVCRefCounts: per ``namespace/claim``, once per volume naming it; gone at zero; clones
    are independent."""
    a = PodInfo(pod("a", pvc_volume("c1"), pvc_volume("c2", name="v2")))
    b = PodInfo(pod("b", pvc_volume("c1"), namespace="other"))
    c = PodInfo(pod("c", pvc_volume("c1")))
    ni = NodeInfo(node("n"), [a, b, c])
    assert ni.pvc_ref_counts == {"default/c1": 2, "default/c2": 1, "other/c1": 1}
    copy = ni.clone()
    assert ni.remove_pod(a)
    assert ni.pvc_ref_counts == {"default/c1": 1, "other/c1": 1}
    assert copy.pvc_ref_counts == {"default/c1": 2, "default/c2": 1, "other/c1": 1}
    assert ni.remove_pod(c)
    assert ni.remove_pod(b)
    assert ni.pvc_ref_counts == {}
