"""Kubernetes protobuf bodies of storage.k8s.io/v1 kinds decode to their JSON form (tables generated from
k8s.io/api storage/v1/generated.proto by tools/gen_proto_tables.py): pointer scalars keep their zero values
(CSIDriverSpec.attachRequired false, VolumeNodeResources.count 0), VolumeAttachmentStatus.attached (no omitempty)
too, quantities and label selectors take their JSON shapes."""

from __future__ import annotations

from kubeplane.api.protobuf import decode_object

from .test_protobuf import envelope, ld, meta, msg, num, quantity


def test_csi_driver() -> None:
    spec = msg(2, num(1, False), num(2, True), ld(3, "Persistent"), num(4, False), msg(6, ld(1, "vault"), num(2, 600)))
    body = envelope("storage.k8s.io/v1", "CSIDriver", meta("d.io") + spec)
    assert decode_object(body) == {
        "kind": "CSIDriver",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": "d.io"},
        "spec": {
            "attachRequired": False,
            "podInfoOnMount": True,
            "volumeLifecycleModes": ["Persistent"],
            "storageCapacity": False,
            "tokenRequests": [{"audience": "vault", "expirationSeconds": 600}],
        },
    }


def test_csi_node_allocatable_zero_is_kept() -> None:
    driver = msg(1, ld(1, "d.io"), ld(2, "node1"), ld(3, "zone"), msg(4, num(1, 0)))
    body = envelope("storage.k8s.io/v1", "CSINode", meta("node1") + msg(2, driver))
    assert decode_object(body)["spec"] == {
        "drivers": [{"name": "d.io", "nodeID": "node1", "topologyKeys": ["zone"], "allocatable": {"count": 0}}]
    }


def test_csi_storage_capacity() -> None:
    selector = msg(2, msg(1, ld(1, "topology.csi.kubeplane.io/node"), ld(2, "n1")))
    body = envelope(
        "storage.k8s.io/v1",
        "CSIStorageCapacity",
        meta("c", ld(3, "kube-system")) + selector + ld(3, "standard") + msg(4, quantity("10Gi")),
    )
    decoded = decode_object(body)
    assert decoded["nodeTopology"] == {"matchLabels": {"topology.csi.kubeplane.io/node": "n1"}}
    assert (decoded["storageClassName"], decoded["capacity"]) == ("standard", "10Gi")


def test_volume_attachment_status_attached_false() -> None:
    spec = msg(2, ld(1, "d.io"), msg(2, ld(1, "pv1")), ld(3, "n1"))
    body = envelope("storage.k8s.io/v1", "VolumeAttachment", meta("va") + spec + msg(3, num(1, False)))
    decoded = decode_object(body)
    assert decoded["spec"] == {"attacher": "d.io", "source": {"persistentVolumeName": "pv1"}, "nodeName": "n1"}
    assert decoded["status"] == {"attached": False}
