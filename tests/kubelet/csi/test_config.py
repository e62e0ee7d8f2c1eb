"""The node config's CSI keys (kubeplane.kubelet.csi.config via kubelet/config.py): defaults, parsing, errors.

Defaults pin the contract of issue 26 (driver ``csi.kubeplane.io``, node-local, unlimited); the PV/object shapes
pin external-provisioner's ``pkg/controller/controller.go`` ``Provision`` and ``pkg/capacity/capacity.go``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.kubelet.config import NodeConfigError, demo_cluster, parse_node_config
from kubeplane.kubelet.csi.capacity import Pools
from kubeplane.kubelet.csi.config import DEFAULT_DRIVER, NODE_TOPOLOGY_KEY, ZONE_TOPOLOGY_KEY
from kubeplane.kubelet.csi.objects import capacity_object, csidriver_object, csinode_driver, quantity_text


def test_default_driver_when_absent() -> None:
    specs = demo_cluster()
    assert all(s.csi_drivers == (DEFAULT_DRIVER,) for s in specs)
    assert DEFAULT_DRIVER.name == "csi.kubeplane.io"
    assert DEFAULT_DRIVER.topology_key == NODE_TOPOLOGY_KEY
    assert {s.labels[NODE_TOPOLOGY_KEY] for s in specs} == {"master", "node01", "node02"}
    pools = Pools(DEFAULT_DRIVER, specs)
    assert not pools.tracked
    assert pools.total is None
    assert pools.segments["node01"].fits(10**15)


def test_full_driver_config() -> None:
    specs = parse_node_config(
        {
            "csiDrivers": [
                {
                    "name": "zonal.example.com",
                    "topology": "zone",
                    "attachRequired": True,
                    "provisionTime": "1.5s",
                    "deleteTime": 2,
                    "attachTime": "500ms",
                    "detachTime": "1s",
                    "maxVolumesPerNode": 8,
                    "storageClasses": [{"name": "fast", "volumeBindingMode": "Immediate", "default": True}],
                }
            ],
            "nodes": [{"count": 3, "zones": ["a", "b"], "csiCapacity": {"zonal.example.com": "10Gi"}}],
        }
    )
    (driver,) = specs[0].csi_drivers
    assert (driver.attach_required, driver.provision_time, driver.delete_time) == (True, 1.5, 2.0)
    assert (driver.attach_time, driver.detach_time) == (0.5, 1.0)
    assert driver.topology_key == ZONE_TOPOLOGY_KEY
    assert driver.max_volumes_per_node == 8
    assert driver.storage_classes[0]["volumeBindingMode"] == "Immediate"
    assert driver.storage_classes[0]["provisioner"] == "zonal.example.com"
    assert driver.storage_classes[0]["metadata"]["annotations"] == {
        "storageclass.kubernetes.io/is-default-class": "true"
    }
    assert NODE_TOPOLOGY_KEY not in specs[0].labels  # no node-topology driver: no label
    pools = Pools(driver, specs)
    # zone a holds node-1 and node-3: the zone's capacity is summed over its nodes
    assert {v: s.total for v, s in pools.segments.items()} == {"a": 20 * 2**30, "b": 10 * 2**30}
    assert csinode_driver(driver, "node-1") == {
        "name": "zonal.example.com",
        "nodeID": "node-1",
        "topologyKeys": [ZONE_TOPOLOGY_KEY],
        "allocatable": {"count": 8},
    }
    assert csidriver_object(driver, storage_capacity=True)["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": True,
        "volumeLifecycleModes": ["Persistent"],
    }


def test_empty_list_runs_no_driver_and_unconfigured_nodes_have_no_capacity() -> None:
    assert parse_node_config({"csiDrivers": [], "nodes": [{"name": "a"}]})[0].csi_drivers == ()
    specs = parse_node_config({"nodes": [{"name": "a", "csiCapacity": {"csi.kubeplane.io": "1Gi"}}, {"name": "b"}]})
    pools = Pools(specs[0].csi_drivers[0], specs)
    assert pools.tracked
    assert pools.segments["a"].total == 2**30
    assert pools.segments["b"].total == 0


def test_capacity_object_shape() -> None:
    # capacity.go syncCapacity: generateName csisc-, driver-name / managed-by labels, matchLabels topology
    obj = capacity_object(DEFAULT_DRIVER, "standard", "node01", 5 * 2**30)
    assert obj["metadata"] == {
        "generateName": "csisc-",
        "namespace": "kube-system",
        "labels": {
            "csi.storage.k8s.io/drivername": "csi.kubeplane.io",
            "csi.storage.k8s.io/managed-by": "external-provisioner",
        },
    }
    assert obj["nodeTopology"] == {"matchLabels": {NODE_TOPOLOGY_KEY: "node01"}}
    assert obj["capacity"] == obj["maximumVolumeSize"] == "5Gi"
    assert quantity_text(1500) == "1500"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"csiDrivers": {"name": "x"}}, "node config: csiDrivers must be a list of drivers"),
        ({"csiDrivers": [{}]}, "node config: csiDrivers[0]: every CSI driver needs a name"),
        ({"csiDrivers": [{"name": "Bad_Name"}]}, "node config: CSI driver Bad_Name: the name must be a DNS-1123"),
        ({"csiDrivers": [{"name": "a.b", "topology": "rack"}]}, "CSI driver a.b: topology must be node or zone"),
        ({"csiDrivers": [{"name": "a.b", "provisionTime": "soon"}]}, "provisionTime 'soon' is not a duration"),
        ({"csiDrivers": [{"name": "a.b", "deleteTime": "-1s"}]}, "deleteTime must not be negative"),
        ({"csiDrivers": [{"name": "a.b", "maxVolumesPerNode": -1}]}, "maxVolumesPerNode must be a non-negative"),
        ({"csiDrivers": [{"name": "a.b", "attachRequired": "yes"}]}, "attachRequired must be true or false"),
        ({"csiDrivers": [{"name": "a.b", "colour": 1}]}, "CSI driver a.b: unknown field(s) colour"),
        ({"csiDrivers": [{"name": "a.b"}, {"name": "a.b"}]}, "CSI driver a.b is defined twice"),
        (
            {"csiDrivers": [{"name": "a.b", "storageClasses": [{"name": "s", "volumeBindingMode": "Later"}]}]},
            "storage class s: volumeBindingMode must be Immediate or WaitForFirstConsumer",
        ),
        ({"csiCapacity": {"other.io": "1Gi"}}, "node group w: csiCapacity names other.io, which is not a configured"),
        ({"csiCapacity": {"csi.kubeplane.io": "lots"}}, "node group w: csiCapacity.csi.kubeplane.io: "),
        ({"csiCapacity": {"csi.kubeplane.io": "-1Gi"}}, "node group w: csiCapacity.csi.kubeplane.io must not be neg"),
        ({"csiCapacity": ["1Gi"]}, "node group w: csiCapacity must be a mapping"),
    ],
)
def test_errors_are_one_line(config: dict[str, Any], message: str) -> None:
    data: dict[str, Any] = {"nodes": [{"name": "w"}]}
    if "csiCapacity" in config:
        data["nodes"][0]["csiCapacity"] = config["csiCapacity"]
    else:
        data.update(config)
    with pytest.raises(NodeConfigError) as info:
        parse_node_config(data)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
