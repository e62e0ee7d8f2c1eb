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
    gpu0 = wanted["gpu.example.com"][0]
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
    assert [d["name"] for d in wanted["gpu.example.com"]] == ["gpu-0", "gpu-1"]
    assert wanted["nic.example.com"] == [{"name": "eth1", "attributes": {"index": {"int": 1}}}]


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
    ],
)
def test_bad_devices_are_one_line_errors(devices: object, message: str) -> None:
    with pytest.raises(NodeConfigError, match="node group n1: ") as info:
        parse_node_config([{"name": "n1", "devices": devices}])
    assert message in str(info.value)
    assert "\n" not in str(info.value)
