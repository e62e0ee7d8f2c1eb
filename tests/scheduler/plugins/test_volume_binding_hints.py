"""VolumeBinding's queueing hints and events, pinned to upstream ``volume_binding_test.go``'s tables
(``TestIsSchedulableAfterCSINodeChange``, ``TestIsSchedulableAfterPersistentVolumeClaimChange``,
``TestIsSchedulableAfterStorageClassChange``, ``TestIsSchedulableAfterCSIStorageCapacityChange``,
``TestIsSchedulableAfterCSIDriverChange``), case names verbatim. Upstream's "type conversion error" /
"unexpected objects are passed" cases test Go's type assertions and have no Python counterpart.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.framework.interface import ActionType, QueueingHint
from kubeplane.scheduler.plugins import volume_binding_hints as hints

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP
ANN = "storage.alpha.kubernetes.io/migrated-plugins"


def make_pod(name: str = "pod-a", namespace: str = "default", volumes: list[dict[str, Any]] | None = None) -> Any:
    """Upstream test_utils ``makePod`` (+ withPVCVolume / withGenericEphemeralVolume / withCSI)."""
    return {"metadata": {"name": name, "namespace": namespace, "uid": name}, "spec": {"volumes": volumes or []}}


def pvc_vol(claim: str) -> dict[str, Any]:
    return {"name": "", "persistentVolumeClaim": {"claimName": claim}}


def eph_vol(name: str) -> dict[str, Any]:
    return {"name": name, "ephemeral": {}}


def csi_vol(driver: str) -> dict[str, Any]:
    return {"name": "", "csi": {"driver": driver}}


def make_pvc(name: str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {}}


def csinode(ann: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "csinode-a"}
    if ann is not None:
        meta["annotations"] = {ANN: ann}
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("CSINode is newly created", None, csinode(None), Q),
        ("CSINode's migrated-plugins annotations is added", csinode("test1"), csinode("test1, test2"), Q),
        ("CSINode's migrated-plugins annotation is updated", csinode("test1"), csinode("test2"), Q),
        ("CSINode is updated but migrated-plugins annotation gets unchanged", csinode("test1"), csinode("test1"), SKIP),
    ],
)
def test_is_schedulable_after_csi_node_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_csi_node_change(make_pod(), old, new) == want, name


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        (
            "pod has no pvc or ephemeral volumes",
            make_pod(volumes=[{"name": "", "emptyDir": {}}]),
            make_pvc("pvc-b"),
            make_pvc("pvc-b"),
            SKIP,
        ),
        (
            "pvc with the same name as the one used by the pod in a different namespace is modified",
            make_pod(namespace="ns-a", volumes=[pvc_vol("pvc-a"), pvc_vol("pvc-b")]),
            None,
            make_pvc("pvc-b"),
            SKIP,
        ),
        (
            "pod has no pvc that is being modified",
            make_pod(volumes=[pvc_vol("pvc-a"), pvc_vol("pvc-c")]),
            make_pvc("pvc-b"),
            make_pvc("pvc-b"),
            SKIP,
        ),
        (
            "pod has no generic ephemeral volume that is being modified",
            make_pod(volumes=[eph_vol("ephemeral-a"), eph_vol("ephemeral-c")]),
            make_pvc("pod-a-ephemeral-b"),
            make_pvc("pod-a-ephemeral-b"),
            SKIP,
        ),
        (
            "pod has the pvc that is being modified",
            make_pod(volumes=[pvc_vol("pvc-a"), pvc_vol("pvc-b")]),
            make_pvc("pvc-b"),
            make_pvc("pvc-b"),
            Q,
        ),
        (
            "pod has the generic ephemeral volume that is being modified",
            make_pod(volumes=[eph_vol("ephemeral-a"), eph_vol("ephemeral-b")]),
            make_pvc("pod-a-ephemeral-b"),
            make_pvc("pod-a-ephemeral-b"),
            Q,
        ),
    ],
)
def test_is_schedulable_after_pvc_change(name: str, pod: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_pvc_change(pod, old, new) == want, name


TOPOLOGY = [{"matchLabelExpressions": [{"key": "kubernetes.io/hostname", "values": ["node-a"]}]}]


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("When a new StorageClass is created, it returns Queue", None, {"metadata": {"name": "sc-a"}}, Q),
        (
            "When the AllowedTopologies are changed, it returns Queue",
            {"metadata": {"name": "sc-a"}},
            {"metadata": {"name": "sc-a"}, "allowedTopologies": TOPOLOGY},
            Q,
        ),
        (
            "When there are no changes to the StorageClass, it returns QueueSkip",
            {"metadata": {"name": "sc-a"}},
            {"metadata": {"name": "sc-a"}},
            SKIP,
        ),
    ],
)
def test_is_schedulable_after_storage_class_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_storage_class_change(make_pod(), old, new) == want, name


def cap(capacity: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"metadata": {"name": "cap-a"}}
    if capacity is not None:
        out["capacity"] = str(capacity)
    if maximum is not None:
        out["maximumVolumeSize"] = str(maximum)
    return out


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("When a new CSIStorageCapacity is created, it returns Queue", None, cap(), Q),
        ("When the volume limit is increase(Capacity set), it returns Queue", cap(), cap(100), Q),
        ("When the volume limit is increase(MaximumVolumeSize set), it returns Queue", cap(), cap(maximum=100), Q),
        ("When the volume limit is increase(Capacity increase), it returns Queue", cap(50), cap(100), Q),
        ("When the volume limit is increase(MaximumVolumeSize unset), it returns Queue", cap(100, 50), cap(100), Q),
        (
            "When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
            cap(100, 50),
            cap(100, 60),
            Q,
        ),
        ("When there are no changes to the CSIStorageCapacity, it returns QueueSkip", cap(100, 50), cap(100, 50), SKIP),
        ("When the volume limit is equal(Capacity), it returns QueueSkip", cap(100), cap(100), SKIP),
        ("When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip", cap(100, 50), cap(50), SKIP),
        ("When the volume limit is decrease(Capacity), it returns QueueSkip", cap(100), cap(90), SKIP),
        (
            "When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
            cap(maximum=100),
            cap(maximum=90),
            SKIP,
        ),
    ],
)
def test_is_schedulable_after_csi_storage_capacity_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_csi_storage_capacity_change(make_pod(), old, new) == want, name


def driver(name: str, storage_capacity: bool | None) -> dict[str, Any]:
    spec = {} if storage_capacity is None else {"storageCapacity": storage_capacity}
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        ("pod has no CSIDriver", make_pod(), driver("test1", None), driver("test1", True), SKIP),
        (
            "driver name in pod and csidriver name are different",
            make_pod(volumes=[csi_vol("test1")]),
            driver("test2", True),
            driver("test2", False),
            SKIP,
        ),
        (
            "original StorageCapacity is nil",
            make_pod(volumes=[csi_vol("test1")]),
            driver("test1", None),
            driver("test1", None),
            SKIP,
        ),
        (
            "original StorageCapacity is false",
            make_pod(volumes=[csi_vol("test1")]),
            driver("test1", False),
            driver("test1", False),
            SKIP,
        ),
        (
            "modified StorageCapacity is nil",
            make_pod(volumes=[csi_vol("test1")]),
            driver("test1", True),
            driver("test1", None),
            Q,
        ),
        (
            "modified StorageCapacity is true",
            make_pod(volumes=[csi_vol("test1")]),
            driver("test1", True),
            driver("test1", True),
            SKIP,
        ),
        (
            "modified StorageCapacity is false",
            make_pod(volumes=[csi_vol("test1")]),
            driver("test1", True),
            driver("test1", False),
            Q,
        ),
    ],
)
def test_is_schedulable_after_csi_driver_change(name: str, pod: Any, old: Any, new: Any, want: QueueingHint) -> None:
    assert hints.is_schedulable_after_csi_driver_change(pod, old, new) == want, name


def test_events_to_register_are_upstreams_list_with_queueing_hints_on() -> None:
    """Upstream ``EventsToRegister``: with SchedulerQueueingHints (GA) the Node event is Add|UpdateNodeLabel
    (no UpdateNodeTaint); PersistentVolume has no hint; CSIDriver registers Update only."""
    update = ActionType.update()
    got = [(e.event.resource, e.event.action_type, e.hint) for e in hints.events_to_register()]
    assert got == [
        ("StorageClass", ActionType.ADD | update, hints.is_schedulable_after_storage_class_change),
        ("PersistentVolumeClaim", ActionType.ADD | update, hints.is_schedulable_after_pvc_change),
        ("PersistentVolume", ActionType.ADD | update, None),
        ("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL, None),
        ("CSINode", ActionType.ADD | update, hints.is_schedulable_after_csi_node_change),
        ("CSIDriver", update, hints.is_schedulable_after_csi_driver_change),
        ("CSIStorageCapacity", ActionType.ADD | update, hints.is_schedulable_after_csi_storage_capacity_change),
    ]
