"""kubectl v1.37 and scheduling.k8s.io PodGroups and Workloads served at v1beta1 and v1alpha3.

kubectl's RESTMapper takes a resource from the group's versions in discovery order (upstream's version priority
v1, v1beta1, v1alpha3), so ``kubectl get podgroups`` reads v1beta1; ``podgroups.v1alpha3.scheduling.k8s.io`` names
the other version (kubectl's ``ResourceBuilder``: ``resource.version.group``). Both show the same stored objects.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from .conftest import start_server
from .test_kubectl import KUBECTL, Kubectl

PG_V1ALPHA3 = {
    "apiVersion": "scheduling.k8s.io/v1alpha3",
    "kind": "PodGroup",
    "metadata": {"name": "gang", "namespace": "default"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
}
WORKLOAD_V1BETA1 = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}]},
}


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root = tmp_path_factory.mktemp("kubectl-scheduling")
    server = start_server(root / "data", tls=True)
    yield Kubectl(server, root / "cache")
    server.stop()


def test_get_podgroups_reads_v1beta1_and_the_qualified_name_v1alpha3(kubectl: Kubectl) -> None:
    out = kubectl("apply", "-f", "-", stdin=json.dumps(PG_V1ALPHA3))
    assert out.stdout.strip() == "podgroup.scheduling.k8s.io/gang created"
    listed = kubectl.json("get", "podgroups")
    assert [(i["apiVersion"], i["metadata"]["name"]) for i in listed["items"]] == [
        ("scheduling.k8s.io/v1beta1", "gang")
    ]
    alpha = kubectl.json("get", "podgroups.v1alpha3.scheduling.k8s.io", "gang")
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert alpha["metadata"]["uid"] == listed["items"][0]["metadata"]["uid"]
    names = kubectl("get", "podgroups", "-o", "name").stdout.split()
    assert names == ["podgroup.scheduling.k8s.io/gang"]


def test_server_side_apply_of_a_v1beta1_workload_then_get_at_v1alpha3(kubectl: Kubectl) -> None:
    out = kubectl("apply", "--server-side", "-f", "-", stdin=json.dumps(WORKLOAD_V1BETA1))
    assert out.stdout.strip() == "workload.scheduling.k8s.io/train serverside-applied"
    beta = kubectl.json("get", "workloads", "train")
    assert beta["apiVersion"] == "scheduling.k8s.io/v1beta1"
    alpha = kubectl.json("get", "workloads.v1alpha3.scheduling.k8s.io", "train", "--show-managed-fields")
    assert alpha["apiVersion"] == "scheduling.k8s.io/v1alpha3"
    assert alpha["spec"] == beta["spec"]
    managers = [(e["manager"], e["operation"], e["apiVersion"]) for e in alpha["metadata"]["managedFields"]]
    assert managers == [("kubectl", "Apply", "scheduling.k8s.io/v1beta1")]
