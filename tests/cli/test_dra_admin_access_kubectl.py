"""A ResourceClaim asking for ``adminAccess`` applied with real kubectl against ``kubeplane up``: refused in a
namespace without the admin label with kube-apiserver v1.37's 422 (``AuthorizedForAdmin`` in
pkg/registry/resource/utils.go: ``spec.devices.requests[0].adminAccess: Forbidden: admin access to devices
requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace``), nothing stored;
admitted once ``kubectl label`` gave the namespace the label."""

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

CLAIM = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: monitor, namespace: ops}
spec:
  devices:
    requests:
    - name: gpus
      exactly: {deviceClassName: gpu.example.com, allocationMode: All, adminAccess: true}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=1) as cluster:
        yield cluster


def test_admin_access_needs_the_namespace_label(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "ops")
    with pytest.raises(AssertionError) as info:
        cluster.kubectl("apply", "-f", "-", stdin=CLAIM)
    stderr = str(info.value).split("\n--- up.log ---")[0]
    expected = (
        'The ResourceClaim "monitor" is invalid: spec.devices.requests[0].adminAccess: Forbidden: admin access to '
        "devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
    )
    assert expected in stderr, stderr
    assert cluster.kubectl("get", "resourceclaims", "-n", "ops", "-o", "name") == ""

    cluster.kubectl("label", "namespace", "ops", "resource.kubernetes.io/admin-access=true")
    cluster.kubectl("apply", "-f", "-", stdin=CLAIM)
    stored = cluster.get("resourceclaim", "monitor", "-n", "ops")
    assert stored["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] is True
