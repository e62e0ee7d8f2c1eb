"""A bad ResourceSlice applied with real kubectl against ``kubeplane up`` is refused with upstream's 422 Invalid
Status (kubectl: ``The ResourceSlice "<name>" is invalid: <field errors>``) and nothing is stored; the same slice,
fixed, is accepted. Pins upstream ``validateDeviceBindingParameters`` (a failure condition without binding
conditions) and ``validateSingleAllocatableDeviceCapacity`` / ``validateRequestPolicyRange`` (a request policy on
a device that is not multi-allocatable; a default below ``validRange.min``) as kube-apiserver v1.37 answers them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.up_cluster import Cluster, running_up

NODES = """\
csiDrivers: []
nodes:
- name: node01
"""

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: shared-node01}
spec:
  driver: gpu.example.com
  nodeName: node01
  pool: {name: shared, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    bindingFailureConditions: [dra.example.com/failed]
    capacity:
      memory:
        value: 40Gi
        requestPolicy: {default: 1Gi, validRange: {min: 4Gi}}
  - name: gpu-1
    MULTI
    capacity:
      memory:
        value: 40Gi
        requestPolicy: {default: 1Gi, validRange: {min: 4Gi}}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=1) as cluster:
        yield cluster


def test_a_bad_resource_slice_is_refused_with_upstreams_message(cluster: Cluster) -> None:
    bad = SLICE.replace("MULTI", "allowMultipleAllocations: true")
    with pytest.raises(AssertionError) as info:
        cluster.kubectl("apply", "-f", "-", stdin=bad)
    stderr = str(info.value).split("\n--- up.log ---")[0]
    assert 'The ResourceSlice "shared-node01" is invalid: ' in stderr
    for line in (
        "spec.devices[0].bindingConditions: Invalid value: null: bindingConditions are required to use "
        "bindingFailureConditions",
        "spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true",
        'spec.devices[1].capacity[memory].requestPolicy.validRange.min: Invalid value: "1Gi": default is less '
        "than min: 4Gi",
    ):
        assert line in stderr, stderr
    assert "shared-node01" not in cluster.kubectl("get", "resourceslices", "-o", "name")

    good = (
        SLICE.replace("    bindingFailureConditions: [dra.example.com/failed]\n", "")
        .replace("MULTI", "allowMultipleAllocations: true")
        .replace("default: 1Gi", "default: 4Gi")
        .replace("        requestPolicy: {default: 4Gi, validRange: {min: 4Gi}}\n  - name: gpu-1", "  - name: gpu-1")
    )
    cluster.kubectl("apply", "-f", "-", stdin=good)
    stored = cluster.get("resourceslice", "shared-node01")
    policy = stored["spec"]["devices"][1]["capacity"]["memory"]["requestPolicy"]
    assert policy == {"default": "4Gi", "validRange": {"min": "4Gi"}}
