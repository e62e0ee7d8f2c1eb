"""CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment validation against upstream's
pkg/apis/storage/validation (v1.37) as the registry strategies call it.

Each case names the upstream test it follows (validation_test.go: TestCSIDriverValidation,
TestCSIDriverValidationUpdate, TestCSINodeValidation, TestCSINodeUpdateValidation,
TestCSIStorageCapacityValidation, TestCSIStorageCapacityValidationUpdate, TestVolumeAttachmentValidation,
TestVolumeAttachmentUpdateValidation, TestVolumeAttachmentValidationV1) and asserts the complete list of
``str(error)``; the registry tables are checked through the API server's merged lookup.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubeplane.api.validation.field import dedupe
from kubeplane.api.validation.storage_csi import (
    CREATE_VALIDATORS,
    STATUS_UPDATE_VALIDATORS,
    UPDATE_VALIDATORS,
)

Obj = dict[str, Any]
G = "storage.k8s.io"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def driver(**spec: Any) -> Obj:
    """A defaulted CSIDriver (SetDefaults_CSIDriver's values)."""
    base = {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "volumeLifecycleModes": ["Persistent"],
        "requiresRepublish": False,
        "seLinuxMount": False,
    }
    return {"metadata": {"name": "csi.example.io"}, "spec": {**base, **spec}}


def csi_node(*drivers: Obj) -> Obj:
    return {"metadata": {"name": "node1"}, "spec": {"drivers": list(drivers)}}


def node_driver(name: str = "io.kubernetes.storage.csi.driver", **more: Any) -> Obj:
    return {"name": name, "nodeID": "nodeA", "topologyKeys": ["company.com/zone1"], **more}


def capacity(**more: Any) -> Obj:
    base = {"metadata": {"name": "c", "namespace": "default"}, "storageClassName": "fast", "capacity": "1Gi"}
    return {**base, **more}


def attachment(**spec: Any) -> Obj:
    base = {"attacher": "myattacher", "nodeName": "mynode", "source": {"persistentVolumeName": "myvolume"}}
    return {"metadata": {"name": "foo"}, "spec": {**base, **spec}}


def msgs(errs: list[Any]) -> list[str]:
    """What the API server shows: each message once (ErrorList.ToAggregate)."""
    return [str(e) for e in dedupe(errs)]


def create(kind: str, obj: Obj) -> list[str]:
    return msgs(CREATE_VALIDATORS[(G, kind)](obj))


def update(kind: str, new: Obj, old: Obj) -> list[str]:
    return msgs(UPDATE_VALIDATORS[(G, kind)](new, old))


# --- CSIDriver --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "spec", "want"),
    [
        ("valid defaulted", {}, []),
        ("attachRequired missing", {"attachRequired": None}, ["spec.attachedRequired: Required value"]),
        ("podInfoOnMount missing", {"podInfoOnMount": None}, ["spec.podInfoOnMount: Required value"]),
        ("storageCapacity missing", {"storageCapacity": None}, ["spec.storageCapacity: Required value"]),
        ("seLinuxMount missing (gate on)", {"seLinuxMount": None}, ["spec.seLinuxMount: Required value"]),
        (
            "invalid fsGroupPolicy",
            {"fsGroupPolicy": "invalid-mode"},
            [
                'spec.fsGroupPolicy: Unsupported value: "invalid-mode": supported values: "File", "None", '
                '"ReadWriteOnceWithFSType"'
            ],
        ),
        (
            "invalid volumeLifecycleModes",
            {"volumeLifecycleModes": ["no-such-mode"]},
            [
                'spec.volumeLifecycleModes: Unsupported value: "no-such-mode": supported values: "Persistent", '
                '"Ephemeral"'
            ],
        ),
        (
            "duplicate audience and short expiration",
            {"tokenRequests": [{"audience": "a"}, {"audience": "a"}, {"audience": "b", "expirationSeconds": 10}]},
            [
                'spec.tokenRequests[1].audience: Duplicate value: "a"',
                "spec.tokenRequests[2].expirationSeconds: Invalid value: 10: may not specify a duration less than "
                "10 minutes",
            ],
        ),
        (
            "expiration over 2^32",
            {"tokenRequests": [{"audience": "a", "expirationSeconds": (1 << 32) + 1}]},
            [
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 4294967297: may not specify a duration "
                "larger than 2^32 seconds"
            ],
        ),
        (
            "nodeAllocatableUpdatePeriodSeconds under 10",
            {"nodeAllocatableUpdatePeriodSeconds": 9},
            ["spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 9: must be greater than or equal to 10 seconds"],
        ),
    ],
)
def test_csi_driver_validation(case: str, spec: Obj, want: list[str]) -> None:
    """TestCSIDriverValidation."""
    obj = driver(**spec)
    obj["spec"] = {k: v for k, v in obj["spec"].items() if v is not None}
    assert create("CSIDriver", obj) == want, case


def test_csi_driver_errors_are_reported_twice_as_upstreams_strategy_validates_twice() -> None:
    """csiDriverStrategy.Validate appends ValidateCSIDriver twice: two causes, one message."""
    errs = CREATE_VALIDATORS[(G, "CSIDriver")](driver(fsGroupPolicy="x"))
    assert len(errs) == 2
    assert len(dedupe(errs)) == 1


def test_csi_driver_update_immutable_fields() -> None:
    """TestCSIDriverValidationUpdate: attachRequired (reported at spec.attachedRequired) and volumeLifecycleModes
    are immutable; podInfoOnMount, storageCapacity, requiresRepublish, tokenRequests and seLinuxMount may change."""
    old = driver()
    mutable = driver(podInfoOnMount=True, storageCapacity=True, requiresRepublish=True, seLinuxMount=True)
    mutable["spec"]["tokenRequests"] = [{"audience": "gcp"}]
    assert update("CSIDriver", mutable, old) == []
    assert update("CSIDriver", driver(attachRequired=False), old) == [
        "spec.attachedRequired: Invalid value: false: field is immutable"
    ]
    assert update("CSIDriver", driver(volumeLifecycleModes=["Ephemeral"]), old) == [
        'spec.volumeLifecycleModes: Invalid value: ["Ephemeral"]: field is immutable'
    ]


# --- CSINode ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "drivers", "want"),
    [
        ("valid", [node_driver(), node_driver("io.kubernetes.storage.csi.driver-2")], []),
        ("valid without topology keys", [node_driver(topologyKeys=[])], []),
        ("valid allocatable count 0", [node_driver(allocatable={"count": 0})], []),
        (
            "negative allocatable count",
            [node_driver(allocatable={"count": -1})],
            ["spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            "duplicate driver names",
            [node_driver(), node_driver()],
            ['spec.drivers[1].name: Duplicate value: "io.kubernetes.storage.csi.driver"'],
        ),
        ("empty nodeID", [node_driver(nodeID="")], ["spec.drivers[0].nodeID: Required value"]),
        (
            "nodeID over 192",
            [node_driver(nodeID="a" * 193)],
            [f'spec.drivers[0].nodeID: Invalid value: "{"a" * 193}": must be 192 characters or less'],
        ),
        (
            "duplicate topology keys",
            [node_driver(topologyKeys=["company.com/zone1", "company.com/zone1"])],
            ['spec.drivers[0]: Duplicate value: "company.com/zone1"'],
        ),
        (
            "invalid driver name",
            [node_driver("$csi-driver@")],
            [f'spec.drivers[0].name: Invalid value: "$csi-driver@": {SUBDOMAIN}'],
        ),
        (
            "driver name too long",
            [node_driver("a" * 64)],
            ["spec.drivers[0].name: Too long: may not be more than 63 bytes"],
        ),
    ],
)
def test_csi_node_validation(case: str, drivers: list[Obj], want: list[str]) -> None:
    """TestCSINodeValidation."""
    assert create("CSINode", csi_node(*drivers)) == want, case


def test_csi_node_update_validation() -> None:
    """TestCSINodeUpdateValidation: drivers may come and go and their allocatable may change
    (MutableCSINodeAllocatableCount), but a driver kept keeps its nodeID and topology keys; a long node ID (up to
    256) passes on update only when the old object already had one."""
    old = csi_node(node_driver(), node_driver("io.kubernetes.storage.csi.driver-2", allocatable={"count": 3}))
    grown = csi_node(
        node_driver(),
        node_driver("io.kubernetes.storage.csi.driver-2", allocatable={"count": 5}),
        node_driver("io.kubernetes.storage.csi.driver-3"),
    )
    assert update("CSINode", grown, old) == []
    changed = copy.deepcopy(old)
    changed["spec"]["drivers"][0]["nodeID"] = "nodeB"
    assert update("CSINode", changed, old) == [
        'spec.drivers: Invalid value: {"Name":"io.kubernetes.storage.csi.driver","NodeID":"nodeB",'
        '"TopologyKeys":["company.com/zone1"],"Allocatable":null}: field is immutable'
    ]
    long_old = csi_node(node_driver(nodeID="a" * 200))
    long_new = csi_node(node_driver(nodeID="a" * 200), node_driver("d2.io", nodeID="b" * 250))
    assert update("CSINode", long_new, long_old) == []
    assert create("CSINode", long_new) != []


# --- CSIStorageCapacity -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "more", "want"),
    [
        ("valid", {}, []),
        ("valid without capacity", {"capacity": None}, []),
        ("valid with topology", {"nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}}, []),
        (
            "negative capacity",
            {"capacity": "-1Gi"},
            ['capacity: Invalid value: "-1Gi": must be greater than or equal to 0'],
        ),
        (
            "empty storage class",
            {"storageClassName": ""},
            [f'storageClassName: Invalid value: "": {SUBDOMAIN}'],
        ),
        (
            "bad selector operator",
            {"nodeTopology": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}},
            ['nodeTopology.matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector operator'],
        ),
    ],
)
def test_csi_storage_capacity_validation(case: str, more: Obj, want: list[str]) -> None:
    """TestCSIStorageCapacityValidation."""
    obj = {k: v for k, v in capacity(**more).items() if v is not None}
    assert create("CSIStorageCapacity", obj) == want, case


def test_csi_storage_capacity_update() -> None:
    """TestCSIStorageCapacityValidationUpdate: capacity and maximumVolumeSize change, nodeTopology and
    storageClassName (the inputs of GetCapacity) do not."""
    old = capacity(nodeTopology={"matchLabels": {"zone": "a"}})
    assert update("CSIStorageCapacity", {**old, "capacity": "2Gi", "maximumVolumeSize": "1Gi"}, old) == []
    assert update("CSIStorageCapacity", {**old, "storageClassName": "slow"}, old) == [
        'storageClassName: Invalid value: "slow": field is immutable'
    ]
    moved = {**old, "nodeTopology": {"matchLabels": {"zone": "b"}}}
    assert update("CSIStorageCapacity", moved, old) == [
        'nodeTopology: Invalid value: {"matchLabels":{"zone":"b"}}: field is immutable'
    ]


# --- VolumeAttachment -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "mutate", "want"),
    [
        ("valid", lambda s: None, []),
        (
            "no attacher",
            lambda s: s.update(attacher=""),
            ["spec.attacher: Required value", f'spec.attacher: Invalid value: "": {SUBDOMAIN}'],
        ),
        (
            "no source",
            lambda s: s.update(source={}),
            ["spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"],
        ),
        (
            "both sources",
            lambda s: s["source"].update(inlineVolumeSpec={"accessModes": ["ReadWriteOnce"], "csi": {}}),
            ["spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName"],
        ),
        (
            "empty PV name",
            lambda s: s.update(source={"persistentVolumeName": ""}),
            [
                "spec.source.persistentVolumeName: Required value: must specify non empty persistentVolumeName",
                f'spec.source.persistentVolumeName: Invalid value: "": {SUBDOMAIN}',
            ],
        ),
        (
            "no node",
            lambda s: s.update(nodeName=""),
            [f'spec.nodeName: Invalid value: "": {SUBDOMAIN}'],
        ),
        (
            "inline without csi",
            lambda s: s.update(source={"inlineVolumeSpec": {"accessModes": ["ReadWriteOnce"]}}),
            ["spec.source.inlineVolumeSpec.csi: Required value: has to be specified in the context of inline volumes"],
        ),
    ],
)
def test_volume_attachment_validation(case: str, mutate: Callable[[Obj], None], want: list[str]) -> None:
    """TestVolumeAttachmentValidation and TestVolumeAttachmentValidationV1."""
    obj = attachment()
    mutate(obj["spec"])
    assert create("VolumeAttachment", obj) == want, case


def test_volume_attachment_status_validation() -> None:
    """validateVolumeAttachmentStatus: attachError.errorCode not negative, messages at most 1024 bytes (the
    TooLong bound printed is upstream's: the metadata size)."""
    obj = attachment()
    obj["status"] = {"attached": True, "attachError": {"message": "x" * 1025, "errorCode": -1}}
    assert msgs(STATUS_UPDATE_VALIDATORS[(G, "VolumeAttachment")](obj, attachment())) == [
        "status.attachError.message: Too long: may not be more than 262144 bytes",
        "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
    ]


def test_volume_attachment_spec_is_read_only() -> None:
    """TestVolumeAttachmentUpdateValidation: any spec change is ``spec: Invalid value: ...: field is immutable``;
    a status change alone passes."""
    old = attachment()
    assert update("VolumeAttachment", {**old, "status": {"attached": True}}, old) == []
    moved = attachment(nodeName="other")
    assert update("VolumeAttachment", moved, old) == [
        'spec: Invalid value: {"Attacher":"myattacher","Source":{"PersistentVolumeName":"myvolume",'
        '"InlineVolumeSpec":null},"NodeName":"other"}: field is immutable'
    ]


def test_registry_tables_reach_the_api_server() -> None:
    """The strategies merge this module's tables (strategies._VALIDATION_MODULES)."""
    from kubeplane.apiserver.strategies import _validators

    for kind in ("CSIDriver", "CSINode", "CSIStorageCapacity", "VolumeAttachment"):
        assert (G, kind) in _validators("CREATE_VALIDATORS")
        assert (G, kind) in _validators("UPDATE_VALIDATORS")
    assert (G, "VolumeAttachment") in _validators("STATUS_UPDATE_VALIDATORS")


def test_persistent_volume_csi_source_driver_name() -> None:
    """validateCSIPersistentVolumeSource (pkg/apis/core/validation, TestValidateCSIVolumeSource cases "driver name:
    ... invalid", "missing driver name"): the driver is a CSI driver name, then the volume handle is required."""
    from kubeplane.api.validation.core import CREATE_VALIDATORS as CORE

    def volume(csi: Obj) -> Obj:
        spec = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "csi": csi}
        return {"metadata": {"name": "pv"}, "spec": spec}

    assert msgs(CORE[("", "PersistentVolume")](volume({"driver": "csi.example.io", "volumeHandle": "h"}))) == []
    assert msgs(CORE[("", "PersistentVolume")](volume({"driver": "", "volumeHandle": ""}))) == [
        "spec.csi.driver: Required value",
        f'spec.csi.driver: Invalid value: "": {SUBDOMAIN}',
        "spec.csi.volumeHandle: Required value",
    ]
    assert msgs(CORE[("", "PersistentVolume")](volume({"driver": "Bad_Driver", "volumeHandle": "h"}))) == [
        f'spec.csi.driver: Invalid value: "Bad_Driver": {SUBDOMAIN}'
    ]
