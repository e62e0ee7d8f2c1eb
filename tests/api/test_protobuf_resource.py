"""Kubernetes protobuf bodies of resource.k8s.io/v1 kinds decode to their JSON form (tables generated from
k8s.io/api resource/v1/generated.proto by tools/gen_proto_tables.py --add k8s.io.api.resource.v1): a device
attribute's pointer scalars keep their zero values (``{"bool": false}``, ``{"int": 0}``), ResourcePool's
generation (no omitempty) too; maps of attributes and capacities take their JSON shapes."""

from __future__ import annotations

from kubeplane.api.protobuf import decode_object

from .test_protobuf import envelope, ld, meta, msg, num, quantity


def _entry(key: str, value: bytes) -> bytes:
    """One map entry (key 1, value 2) of Device.attributes / Device.capacity."""
    return ld(1, key) + ld(2, value)


def test_resource_slice_device_attributes_keep_zero_values() -> None:
    attributes = msg(2, _entry("healthy", num(3, False))) + msg(2, _entry("index", num(2, 0)))
    capacity = msg(3, _entry("memory", msg(1, quantity("80Gi"))))
    device = msg(6, ld(1, "gpu-0"), attributes, capacity)
    spec = msg(2, ld(1, "gpu.example.com"), msg(2, ld(1, "node01"), num(2, 0), num(3, 1)), ld(3, "node01"), device)
    body = envelope("resource.k8s.io/v1", "ResourceSlice", meta("s") + spec)
    assert decode_object(body) == {
        "kind": "ResourceSlice",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node01", "generation": 0, "resourceSliceCount": 1},
            "nodeName": "node01",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {"healthy": {"bool": False}, "index": {"int": 0}},
                    "capacity": {"memory": {"value": "80Gi"}},
                }
            ],
        },
    }


def test_resource_claim_with_a_cel_selector() -> None:
    selector = msg(2, msg(1, ld(1, 'device.attributes["gpu.example.com"].model == "A100"')))
    request = msg(1, ld(1, "gpu"), msg(2, ld(1, "gpu.example.com"), selector, ld(3, "ExactCount"), num(4, 1)))
    body = envelope("resource.k8s.io/v1", "ResourceClaim", meta("c") + msg(2, msg(1, request)))
    assert decode_object(body)["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "A100"'}}],
                        "allocationMode": "ExactCount",
                        "count": 1,
                    },
                }
            ]
        }
    }
