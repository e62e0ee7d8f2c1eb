"""The node config's ``devices`` key (kubeplane.kubelet.dra.config via kubelet/config.py): expansion into API
device entries (upstream resource.k8s.io/v1 ``Device``: typed ``attributes``, ``capacity`` values) and one-line
errors."""

from __future__ import annotations

import pytest

from kubeplane.kubelet.config import NodeConfigError, parse_node_config
from kubeplane.kubelet.dra.slices import wanted_slices


def test_devices_expand_per_node_with_index_and_typed_attributes() -> None:
    [spec] = parse_node_config(
        [
            {
                "name": "node01",
                "devices": [
                    {
                        "driver": "gpu.example.com",
                        "count": 2,
                        "attributes": {
                            "model": "A100",
                            "cores": 6912,
                            "mig": False,
                            "driverVersion": {"version": "1.2.3"},
                            "uuid": "GPU-{node}-{index}",
                        },
                        "capacity": {"memory": "40Gi"},
                    },
                    {"driver": "nic.example.com", "namePattern": "eth{index}", "startIndex": 1},
                ],
            }
        ]
    )
    wanted = wanted_slices(spec)
    assert list(wanted) == ["gpu.example.com", "nic.example.com"]
    gpu0 = wanted["gpu.example.com"][0]["devices"][0]
    assert gpu0 == {
        "name": "gpu-0",
        "attributes": {
            "cores": {"int": 6912},
            "driverVersion": {"version": "1.2.3"},
            "index": {"int": 0},
            "mig": {"bool": False},
            "model": {"string": "A100"},
            "uuid": {"string": "GPU-node01-0"},
        },
        "capacity": {"memory": {"value": "40Gi"}},
    }
    assert [d["name"] for d in wanted["gpu.example.com"][0]["devices"]] == ["gpu-0", "gpu-1"]
    assert wanted["nic.example.com"] == [{"devices": [{"name": "eth1", "attributes": {"index": {"int": 1}}}]}]


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        ({"count": 1}, "needs a driver"),
        ({"driver": "Bad_Driver"}, "needs a driver"),
        ({"driver": "gpu.example.com", "count": -1}, "count must be a non-negative integer"),
        ({"driver": "gpu.example.com", "capacity": {"memory": "lots"}}, "devices capacity memory"),
        ({"driver": "gpu.example.com", "attributes": {"v": {"version": "1.2"}}}, "is not a semantic version"),
        ({"driver": "gpu.example.com", "attributes": {"x": 1.5}}, "use a string, an integer"),
        ({"driver": "gpu.example.com", "namePattern": "GPU_{index}"}, "is not a DNS label"),
        ({"driver": "gpu.example.com", "namePattern": "gpu", "count": 2}, "is defined twice"),
        ({"driver": "gpu.example.com", "colour": "red"}, "unknown field(s) colour"),
        (
            {"driver": "gpu.example.com", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": "1Gi"}}]},
            "consume counter set gpu-0, which is not declared",
        ),
        (
            [
                {"driver": "gpu.example.com", "count": 0, "sharedCounters": [{"name": "c", "counters": {"mem": "1"}}]},
                {"driver": "gpu.example.com", "consumesCounters": [{"counterSet": "c", "counters": {"cores": "1"}}]},
            ],
            "counter set c of gpu.example.com has no counter cores",
        ),
        (
            [
                {"driver": "gpu.example.com", "count": 0, "sharedCounters": [{"name": "c", "counters": {"m": "1"}}]},
                {"driver": "gpu.example.com", "sharedCounters": [{"name": "c", "counters": {"m": "1"}}]},
            ],
            "counter set c of gpu.example.com is defined twice",
        ),
        ({"driver": "gpu.example.com", "sharedCounters": [{"name": "c", "counters": {}}]}, "give 1 to 32 counters"),
        ({"driver": "gpu.example.com", "sharedCounters": [{"name": "C", "counters": {"m": "1"}}]}, "not a DNS label"),
        (
            {"driver": "gpu.example.com", "sharedCounters": [{"name": "c", "counters": {"m": "x"}}]},
            "sharedCounters c m",
        ),
        (
            {
                "driver": "gpu.example.com",
                "sharedCounters": [{"name": f"c{i}", "counters": {"m": "1"}} for i in range(9)],
            },
            "sharedCounters must be a list of at most 8",
        ),
        ({"driver": "gpu.example.com", "count": 129}, "at most 128 devices of gpu.example.com per node"),
    ],
)
def test_bad_devices_are_one_line_errors(devices: object, message: str) -> None:
    with pytest.raises(NodeConfigError, match="node group n1: ") as info:
        parse_node_config([{"name": "n1", "devices": devices}])
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_partitionable_devices_publish_counters_in_a_second_slice_of_the_pool() -> None:
    """v1.37's ResourceSlice validation allows only one of sharedCounters and devices in a slice (upstream
    validateResourceSliceSpec), so a driver with counter sets publishes two slices of one pool; the devices'
    consumesCounters use upstream's DeviceCounterConsumption shape."""
    (spec,) = parse_node_config(
        [
            {
                "name": "node01",
                "devices": [
                    {
                        "driver": "gpu.example.com",
                        "count": 2,
                        "namePattern": "gpu-0-half-{index}",
                        "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": "20Gi"}}],
                        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": "40Gi", "sm": 98}}],
                    },
                    {
                        "driver": "gpu.example.com",
                        "namePattern": "gpu-0-whole",
                        "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": "40Gi"}}],
                    },
                ],
            }
        ]
    )
    (devices, counters) = wanted_slices(spec)["gpu.example.com"]
    assert [d["name"] for d in devices["devices"]] == ["gpu-0-half-0", "gpu-0-half-1", "gpu-0-whole"]
    assert devices["devices"][0]["consumesCounters"] == [
        {"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}}}
    ]
    assert counters == {
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}, "sm": {"value": "98"}}}]
    }
