"""Rows of the storage printers (upstream pkg/printers/internalversion/printers.go, v1.37: printCSIDriver,
printCSIStorageCapacity, printVolumeAttachment, printStorageClass's `` (default)`` suffix); the columns are pinned in
test_printers.UPSTREAM_COLUMNS."""

from __future__ import annotations

from kubeplane.apiserver.printers import row_for

NOW = 1_000_000.0
META = {"name": "x", "creationTimestamp": "1970-01-12T13:46:30Z"}  # 10 s before NOW
G = "storage.k8s.io"


def test_csi_driver_row_unset_values() -> None:
    """Unset attachRequired prints true, the other booleans false; nil tokenRequests ``<unset>``, no modes
    ``<none>``; an empty (non-nil) tokenRequests list prints empty."""
    assert row_for((G, "CSIDriver"), {"metadata": META}, now=NOW) == [
        "x", True, False, False, "<unset>", False, "<none>", "10s",
    ]  # fmt: skip
    spec = {
        "attachRequired": False,
        "podInfoOnMount": True,
        "storageCapacity": True,
        "tokenRequests": [{"audience": "a"}, {"audience": ""}],
        "requiresRepublish": True,
        "volumeLifecycleModes": ["Persistent", "Ephemeral"],
    }
    assert row_for((G, "CSIDriver"), {"metadata": META, "spec": spec}, now=NOW) == [
        "x", False, True, True, "a,", True, "Persistent,Ephemeral", "10s",
    ]  # fmt: skip
    empty = {"metadata": META, "spec": {"tokenRequests": []}}
    assert row_for((G, "CSIDriver"), empty, now=NOW)[4] == ""


def test_csi_storage_capacity_row() -> None:
    """Capacity canonical (Quantity.String()), ``<unset>`` when nil; no Age cell."""
    cap = {"metadata": META, "storageClassName": "fast", "capacity": "1.5Gi"}
    assert row_for((G, "CSIStorageCapacity"), cap, now=NOW) == ["x", "fast", "1536Mi"]
    assert row_for((G, "CSIStorageCapacity"), {"metadata": META}, now=NOW) == ["x", "", "<unset>"]


def test_volume_attachment_row() -> None:
    va = {
        "metadata": META,
        "spec": {"attacher": "d.io", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}},
        "status": {"attached": True},
    }
    assert row_for((G, "VolumeAttachment"), va, now=NOW) == ["x", "d.io", "pv1", "n1", True, "10s"]
    inline = {"metadata": META, "spec": {"attacher": "d.io", "nodeName": "n1", "source": {"inlineVolumeSpec": {}}}}
    assert row_for((G, "VolumeAttachment"), inline, now=NOW) == ["x", "d.io", "", "n1", False, "10s"]


def test_default_storage_class_name_suffix() -> None:
    """IsDefaultAnnotation: the GA or the beta annotation, exactly "true"."""
    for key in ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"):
        sc = {"metadata": {**META, "annotations": {key: "true"}}, "provisioner": "p"}
        assert row_for((G, "StorageClass"), sc, now=NOW)[0] == "x (default)"
    other = {"metadata": {**META, "annotations": {"storageclass.kubernetes.io/is-default-class": "True"}}}
    assert row_for((G, "StorageClass"), other, now=NOW)[0] == "x"
