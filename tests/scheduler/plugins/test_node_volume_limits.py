"""NodeVolumeLimits (CSILimits) against upstream's nodevolumelimits/csi_test.go (v1.37, fwk era): the TestCSILimits
cases the conformance table does not carry (odd-numbered there), TestCSILimitsQHint, TestCSILimitsAddedPVCQHint,
TestCSILimitsDeletedVolumeAttachmentQHint; the CSINode-update hint, the events and VolumeLimitScaling's driver
check."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_volume_limits
from kubeplane.scheduler.plugins.node_volume_limits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits

from .volume_fixtures import handle_with, pod, pvc, pvc_volume

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
AWS_IN_TREE = "kubernetes.io/aws-ebs"
HOSTPATH = "kubernetes.io/hostpath"
NODE = "node-for-max-pd-test-1"
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


def _objects(
    drivers: list[str],
    limit_source: str,
    max_vols: int,
    va_count: int = 0,
    extra: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> list[dict[str, Any]]:
    """Upstream's fake listers: getFakeCSIPVLister, getFakeCSIPVCLister, getFakeCSIStorageClassLister,
    getFakeVolumeAttachmentLister and the CSINode of getNodeWithPodAndVolumeLimits (+ enableMigrationOnNode)."""
    out: list[dict[str, Any]] = []
    for driver in drivers:
        for j in range(4):
            name = f"csi-{driver}-{j}"
            if driver == AWS_IN_TREE:
                source: dict[str, Any] = {"awsElasticBlockStore": {"volumeID": name}}
            elif driver == HOSTPATH:
                source = {"hostPath": {"path": "/tmp"}}
            else:
                source = {"csi": {"driver": driver, "volumeHandle": name}}
            out.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": source})
            out.append(pvc(name, volume_name=name))
        for j in range(va_count):
            out.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": f"va-{driver}-{j}"},
                    "spec": {
                        "nodeName": NODE,
                        "attacher": driver,
                        "source": {"persistentVolumeName": f"csi-{driver}-{j}"},
                    },
                }
            )
    out += [
        pvc("csi-4", class_name="csi-sc"),
        pvc("csi-5"),
        pvc("csi-6", class_name="csi-sc", volume_name="missing-in-action"),
    ]
    out.append(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "csi-sc"},
            "provisioner": drivers[0],
        }
    )
    if limit_source in ("csinode", "csinode-with-no-limit"):
        entries = []
        for driver in drivers:
            entry: dict[str, Any] = {"name": driver, "nodeID": NODE}
            if limit_source == "csinode":
                entry["allocatable"] = {"count": max_vols}
            entries.append(entry)
        out.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {
                    "name": NODE,
                    "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": AWS_IN_TREE},
                },
                "spec": {"drivers": entries},
            }
        )
    return [*out, *extra]


def _claims(*names: str, name: str = "p") -> dict[str, Any]:
    return pod(name, *(pvc_volume(n) for n in names))


EPHEMERAL_POD = pod("abc", {"name": "xyz", "ephemeral": {}}, namespace="test", uid="12345")
EPHEMERAL_CLAIM = {
    **pvc("abc-xyz", "test", class_name="csi-sc"),
    "metadata": {
        "name": "abc-xyz",
        "namespace": "test",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "abc", "uid": "12345", "controller": True}],
    },
}
EPHEMERAL_TWO = pod(
    "abc", {"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}, namespace="test", uid="12345II"
)


def _owned(name: str, uid: str) -> dict[str, Any]:
    claim = pvc(name, "test", class_name="csi-sc")
    claim["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "abc", "uid": uid, "controller": True}]
    return claim


INLINE_SAME_ID = pod("inline", {"name": "", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}})


@pytest.mark.parametrize(
    ("name", "new", "existing", "drivers", "limit_source", "max_vols", "va_count", "extra", "want_pre", "want"),
    [
        (
            "should schedule pod when VolumeAttachments count does not exceed limit",
            _claims(f"csi-{EBS}-0"),
            [],
            [EBS],
            "csinode",
            2,
            1,
            [],
            None,
            None,
        ),
        (
            "doesn't when node volume limit <= pods CSI volume",
            _claims(f"csi-{EBS}-0"),
            [_claims(f"csi-{EBS}-3"), _claims(f"csi-{EBS}-1", f"csi-{EBS}-2")],
            [EBS],
            "csinode",
            2,
            0,
            [],
            None,
            EXCEEDED,
        ),
        (
            "count pending PVCs towards volume limit <= pods CSI volume",
            _claims(f"csi-{EBS}-0"),
            [_claims("csi-4"), _claims(f"csi-{EBS}-1", f"csi-{EBS}-2")],
            [EBS],
            "csinode",
            2,
            0,
            [],
            None,
            EXCEEDED,
        ),
        (
            "should count PVCs with invalid PV name but valid SC",
            _claims(f"csi-{EBS}-0"),
            [_claims("csi-6"), _claims(f"csi-{EBS}-1", f"csi-{EBS}-2")],
            [EBS],
            "csinode",
            2,
            0,
            [],
            None,
            EXCEEDED,
        ),
        (
            "count pvcs with the same type towards volume limit",
            _claims(f"csi-{EBS}-0"),
            [_claims(f"csi-{GCE}-1", f"csi-{GCE}-2"), _claims(f"csi-{EBS}-1", f"csi-{EBS}-2")],
            [EBS, GCE],
            "csinode",
            2,
            0,
            [],
            None,
            EXCEEDED,
        ),
        (
            "should count in-tree volumes if migration is enabled",
            _claims(f"csi-{AWS_IN_TREE}-0"),
            [_claims(f"csi-{AWS_IN_TREE}-1", f"csi-{AWS_IN_TREE}-2")],
            [AWS_IN_TREE, EBS],
            "csinode",
            2,
            0,
            [],
            None,
            EXCEEDED,
        ),
        (
            "should count unbound in-tree volumes if migration is enabled",
            _claims("csi-4"),
            [_claims(f"csi-{AWS_IN_TREE}-1", f"csi-{AWS_IN_TREE}-2")],
            [AWS_IN_TREE, EBS],
            "csinode",
            2,
            0,
            [],
            None,
            EXCEEDED,
        ),
        (
            "should not count non-migratable in-tree volumes",
            _claims(f"csi-{HOSTPATH}-0"),
            [_claims(f"csi-{EBS}-1", f"csi-{EBS}-2")],
            [HOSTPATH, EBS],
            "csinode",
            2,
            0,
            [],
            None,
            None,
        ),
        (
            "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",  # noqa: E501 - upstream's name
            INLINE_SAME_ID,
            [_claims(f"csi-{EBS}-1", f"csi-{EBS}-2"), _claims(f"csi-{AWS_IN_TREE}-0")],
            [AWS_IN_TREE, EBS],
            "csinode",
            3,
            0,
            [],
            None,
            None,
        ),
        (
            "ephemeral volume missing",
            EPHEMERAL_POD,
            [],
            [EBS],
            "csinode-with-no-limit",
            0,
            0,
            [],
            None,
            Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
        ),
        (
            "ephemeral volume unbound",
            EPHEMERAL_POD,
            [],
            [EBS],
            "csinode-with-no-limit",
            0,
            0,
            [EPHEMERAL_CLAIM],
            None,
            None,
        ),
        (
            "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
            _claims(f"csi-{EBS}-0"),
            [_claims(f"csi-{EBS}-3"), EPHEMERAL_TWO],
            [EBS],
            "csinode",
            2,
            0,
            [_owned("abc-x", "12345II"), _owned("abc-y", "12345II")],
            None,
            EXCEEDED,
        ),
        (
            "skip Filter when the pod only uses secrets and configmaps",
            pod("p", {"name": "", "configMap": {}}, {"name": "", "secret": {}}),
            [],
            [EBS],
            "csinode",
            2,
            0,
            [],
            Status.skip(),
            None,
        ),
        (
            "don't skip Filter when the pod has ephemeral volumes",
            pod("abc", {"name": "", "configMap": {}}, {"name": "xyz", "ephemeral": {}}, namespace="test"),
            [],
            [EBS],
            "csinode-with-no-limit",
            0,
            0,
            [],
            None,
            Status.unresolvable('looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'),
        ),
    ],
)
def test_csi_limits(
    name: str,
    new: dict[str, Any],
    existing: list[dict[str, Any]],
    drivers: list[str],
    limit_source: str,
    max_vols: int,
    va_count: int,
    extra: list[dict[str, Any]],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    """TestCSILimits; statuses as upstream's statusCmpOpts compare them (code and message). The NotFound texts
    are an informer lister's (``persistentvolumeclaim``); upstream's fake lister says ``persistentvolumeclaims``."""
    pl = NodeVolumeLimits(handle_with(_objects(drivers, limit_source, max_vols, va_count, extra)))
    state = CycleState()
    p = PodInfo(new)
    _, pre = pl.pre_filter(state, p, ())
    assert pre == want_pre, name
    if pre is None:
        ni = NodeInfo({"metadata": {"name": NODE}, "status": {"allocatable": {}}}, [PodInfo(e) for e in existing])
        assert pl.filter(state, p, ni) == want, name


def test_the_unbound_claim_prefix_is_reproducible_and_leaves_the_schedulers_rng_alone() -> None:
    """``randomVolumeIDPrefix`` is ``rand.String(32)`` upstream (a process-wide RNG, not the scheduler's): here a
    private fixed-seed stream, so runs are reproducible and building the plugin draws nothing from the handle's
    RNG (the scheduler's tie-breaks stay where they were without the plugin)."""
    handle = handle_with()
    before = handle.rng.getstate()
    a, b = NodeVolumeLimits(handle), NodeVolumeLimits(handle_with())
    assert len(a._prefix) == 32
    assert a._prefix == b._prefix
    assert handle.rng.getstate() == before


def test_a_driver_that_prevents_scheduling_when_missing_must_be_on_the_node() -> None:
    """VolumeLimitScaling (beta, on in v1.37): CSIDriver.spec.preventPodSchedulingIfMissing."""
    driver: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": GCE},
        "spec": {"preventPodSchedulingIfMissing": True},
    }
    objects = _objects([EBS, GCE], "csinode", 5, extra=[driver])
    csi_node = next(o for o in objects if o["kind"] == "CSINode")
    csi_node["spec"]["drivers"] = [d for d in csi_node["spec"]["drivers"] if d["name"] == EBS]
    pl = NodeVolumeLimits(handle_with(objects))
    ni = NodeInfo({"metadata": {"name": NODE}})
    for claim, want in (
        (f"csi-{EBS}-0", None),
        (f"csi-{GCE}-0", Status.unschedulable(f"{GCE} CSI driver is not installed on the node")),
    ):
        state = CycleState()
        p = PodInfo(_claims(claim))
        assert pl.pre_filter(state, p, ()) == (None, None)
        assert pl.filter(state, p, ni) == want
    driver["spec"]["preventPodSchedulingIfMissing"] = False
    state = CycleState()
    p = PodInfo(_claims(f"csi-{GCE}-0"))
    pl.pre_filter(state, p, ())
    assert pl.filter(state, p, ni) is None


def test_a_va_of_a_volume_a_pod_on_the_node_uses_counts_once() -> None:
    """getNodeVolumeAttachmentInfo: an attachment of a volume the node's pods already mount is not counted twice."""
    pl = NodeVolumeLimits(handle_with(_objects([EBS], "csinode", 2, va_count=2)))
    state = CycleState()
    p = PodInfo(_claims(f"csi-{EBS}-3"))
    pl.pre_filter(state, p, ())
    with_users = NodeInfo({"metadata": {"name": NODE}}, [PodInfo(_claims(f"csi-{EBS}-0", f"csi-{EBS}-1", name="u"))])
    assert pl.filter(state, p, with_users) == EXCEEDED  # 2 attached + 1 new > 2
    pl = NodeVolumeLimits(handle_with(_objects([EBS], "csinode", 3, va_count=2)))
    state = CycleState()
    pl.pre_filter(state, p, ())
    assert pl.filter(state, p, with_users) is None  # 2 + 1 <= 3: the two VAs are the pod's volumes


@pytest.mark.parametrize(
    ("name", "deleted", "scheduled", "want"),
    [
        ("return a Queue when a deleted pod has a PVC", pod("d", pvc_volume("placeholder")), True, QueueingHint.QUEUE),
        (
            "return a Queue when a deleted pod has a inline migratable volume",
            pod("d", {"name": "", "awsElasticBlockStore": {}}),
            True,
            QueueingHint.QUEUE,
        ),
        ("return a QueueSkip when a deleted pod doesn't have any volume", pod("d"), True, QueueingHint.QUEUE_SKIP),
        (
            "return a QueueSkip when a deleted pod is not scheduled.",
            pod("d", pvc_volume(f"csi-{EBS}-0")),
            False,
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "return a QueueSkip when a deleted pod has only a configmap",
            pod("d", {"name": "", "configMap": {}}),
            True,
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_is_schedulable_after_assigned_pod_deleted(
    name: str, deleted: dict[str, Any], scheduled: bool, want: QueueingHint
) -> None:
    """TestCSILimitsQHint."""
    if scheduled:
        deleted["spec"]["nodeName"] = NODE
    pl = NodeVolumeLimits(handle_with())
    assert pl._is_schedulable_after_assigned_pod_deleted(PodInfo(_claims(f"csi-{EBS}-2")), deleted, None) == want, name


@pytest.mark.parametrize(
    ("name", "target", "added", "want"),
    [
        (
            "a pod isn't in the same namespace as an added PVC",
            pod("p", namespace="ns1"),
            pvc("x", "ns2"),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "a pod is in the same namespace as an added PVC",
            pod("p", pvc_volume("pvc1"), namespace="ns1"),
            pvc("pvc1", "ns1"),
            QueueingHint.QUEUE,
        ),
        (
            "a pod has an ephemeral volume related to an added PVC",
            pod("pod1", {"name": "ephemeral", "ephemeral": {}}, namespace="ns1"),
            pvc("pod1-ephemeral", "ns1"),
            QueueingHint.QUEUE,
        ),
        (
            "a pod doesn't have the same PVC as an added PVC",
            pod("p", pvc_volume("pvc1"), namespace="ns1"),
            pvc("pvc2", "ns1"),
            QueueingHint.QUEUE_SKIP,
        ),
        ("a pod doesn't have any PVC attached", pod("p", namespace="ns1"), pvc("pvc2", "ns1"), QueueingHint.QUEUE_SKIP),
    ],
)
def test_is_schedulable_after_pvc_added(
    name: str, target: dict[str, Any], added: dict[str, Any], want: QueueingHint
) -> None:
    """TestCSILimitsAddedPVCQHint."""
    pl = NodeVolumeLimits(handle_with())
    assert pl._is_schedulable_after_pvc_added(PodInfo(target), None, added) == want, name


def _va(attacher: str, source: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "VolumeAttachment",
        "metadata": {"name": "volumeattachment1"},
        "spec": {"nodeName": "fake-node", "attacher": attacher, "source": source},
    }


_INLINE_EBS_VA = _va(EBS, {"inlineVolumeSpec": {"csi": {"driver": EBS}}})
_PV1_VA = _va("test.storage.gke.io", {"persistentVolumeName": "pv1"})
_EBS_INLINE = {"name": "", "awsElasticBlockStore": {"volumeID": "test"}}


@pytest.mark.parametrize(
    ("name", "target", "existing_pvc", "deleted", "want"),
    [
        (
            "a pod has PVC when VolumeAttachment is deleting",
            pod("p", pvc_volume("pvc1"), namespace="ns1"),
            True,
            _PV1_VA,
            QueueingHint.QUEUE,
        ),
        (
            "a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) is deleting (match)",  # noqa: E501 - upstream's name
            pod("p", _EBS_INLINE, namespace="ns1"),
            False,
            _INLINE_EBS_VA,
            QueueingHint.QUEUE,
        ),
        (
            "a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) is deleting (no match)",  # noqa: E501 - upstream's name
            pod("p", {"name": "", "gcePersistentDisk": {"pdName": "test"}}, namespace="ns1"),
            False,
            _INLINE_EBS_VA,
            QueueingHint.QUEUE_SKIP,
        ),
        (
            "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver) is deleting",  # noqa: E501 - upstream's name
            pod("p", _EBS_INLINE, pvc_volume("pvc1"), namespace="ns1"),
            True,
            _INLINE_EBS_VA,
            QueueingHint.QUEUE,
        ),
        (
            "a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver)  is deleting",  # noqa: E501 - upstream's name
            pod("p", _EBS_INLINE, pvc_volume("pvc1"), namespace="ns1"),
            True,
            _PV1_VA,
            QueueingHint.QUEUE,
        ),
        (
            "a pod has no PVC when VolumeAttachment is deleting",
            pod("p", namespace="ns1"),
            False,
            _PV1_VA,
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_is_schedulable_after_va_deleted(
    name: str, target: dict[str, Any], existing_pvc: bool, deleted: dict[str, Any], want: QueueingHint
) -> None:
    """TestCSILimitsDeletedVolumeAttachmentQHint."""
    objects = [pvc("pvc1", "ns1", volume_name="pv1")] if existing_pvc else []
    pl = NodeVolumeLimits(handle_with(objects))
    assert pl._is_schedulable_after_va_deleted(PodInfo(target), deleted, None) == want, name


def _csi_node(*drivers: tuple[str, int | None]) -> dict[str, Any]:
    entries = [{"name": n, **({"allocatable": {"count": c}} if c is not None else {})} for n, c in drivers]
    return {"kind": "CSINode", "metadata": {"name": NODE}, "spec": {"drivers": entries}}


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (_csi_node((EBS, 2)), _csi_node((EBS, 3)), QueueingHint.QUEUE),
        (_csi_node((EBS, 2)), _csi_node((EBS, 2)), QueueingHint.QUEUE_SKIP),
        (_csi_node((EBS, 2)), _csi_node((EBS, 1)), QueueingHint.QUEUE_SKIP),
        (_csi_node((EBS, 2)), _csi_node((EBS, None)), QueueingHint.QUEUE),  # no limit any more
        (_csi_node((EBS, 2)), _csi_node((EBS, 2), (GCE, 1)), QueueingHint.QUEUE_SKIP),
    ],
)
def test_is_schedulable_after_csi_node_updated(old: dict[str, Any], new: dict[str, Any], want: QueueingHint) -> None:
    pl = NodeVolumeLimits(handle_with())
    assert pl._is_schedulable_after_csi_node_updated(PodInfo(_claims("c")), old, new) == want


def test_events_to_register_with_queueing_hints() -> None:
    pl = node_volume_limits.new({}, handle_with())
    events = [(e.event.resource, e.event.action_type, e.hint is not None) for e in pl.events_to_register()]
    assert events == [
        ("CSINode", ActionType.ADD, False),
        ("CSINode", ActionType.update(), True),
        ("AssignedPod", ActionType.DELETE, True),
        ("PersistentVolumeClaim", ActionType.ADD, True),
        ("VolumeAttachment", ActionType.DELETE, True),
    ]


def test_a_claim_without_a_name_is_an_error() -> None:
    pl = NodeVolumeLimits(handle_with(_objects([EBS], "csinode", 2)))
    state = CycleState()
    p = PodInfo(pod("p", pvc_volume("", name="v")))
    pl.pre_filter(state, p, ())
    status = pl.filter(state, p, NodeInfo({"metadata": {"name": NODE}}))
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ("PersistentVolumeClaim had no name",)
