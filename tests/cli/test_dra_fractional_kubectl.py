"""A ResourceSlice whose consumable capacity has a fractional ``validRange`` (DRAFractionalCapacityRange, beta and on
in v1.37), applied with real kubectl against ``kubeplane up``: the step rule is checked in thousandths
(``validateRequestPolicyRange``: a 250m default is not ``200m + k*100m``; in whole units both read 1 and would pass)
and a too-fine value cannot be counted in milli units; both refused with kube-apiserver's 422, nothing stored; the
aligned range is accepted as written."""

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
metadata: {name: cores-node01}
spec:
  driver: gpu.example.com
  nodeName: node01
  pool: {name: cores, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    allowMultipleAllocations: true
    capacity:
      cores:
        value: "1"
        requestPolicy: {default: DEFAULT, validRange: {min: MIN, step: 100m, max: "1"}}
"""
RANGE = "spec.devices[0].capacity[cores].requestPolicy.validRange"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=1) as cluster:
        yield cluster


def _refused(cluster: Cluster, manifest: str) -> str:
    with pytest.raises(AssertionError) as info:
        cluster.kubectl("apply", "-f", "-", stdin=manifest)
    return str(info.value).split("\n--- up.log ---")[0]


def test_fractional_ranges_are_checked_in_thousandths(cluster: Cluster) -> None:
    stderr = _refused(cluster, SLICE.replace("DEFAULT", "250m").replace("MIN", "200m"))
    expected = (
        f'The ResourceSlice "cores-node01" is invalid: {RANGE}.step: Invalid value: "250m": value is not a multiple '
        "of a given step (100m) from (200m)"
    )
    assert expected in stderr, stderr
    stderr = _refused(cluster, SLICE.replace("DEFAULT", "200m").replace("MIN", "100u"))
    assert f'{RANGE}.min: Invalid value: "100u": value cannot be represented as a milli value' in stderr, stderr
    assert "cores-node01" not in cluster.kubectl("get", "resourceslices", "-o", "name")

    cluster.kubectl("apply", "-f", "-", stdin=SLICE.replace("DEFAULT", "200m").replace("MIN", "200m"))
    stored = cluster.get("resourceslice", "cores-node01")
    policy = stored["spec"]["devices"][0]["capacity"]["cores"]["requestPolicy"]
    assert policy == {"default": "200m", "validRange": {"min": "200m", "step": "100m", "max": "1"}}
