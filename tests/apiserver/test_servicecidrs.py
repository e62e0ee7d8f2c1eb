"""IPAddress and ServiceCIDR (networking.k8s.io/v1) served as kube-apiserver v1.37 serves them.

Pinned upstream behaviour: pkg/apis/networking/validation/validation.go (ValidateIPAddressName, ValidateIPAddress,
ValidateIPAddressUpdate, ValidateServiceCIDR, ValidateServiceCIDRUpdate), apimachinery util/validation/ip.go
(IsValidIP, IsValidCIDR), pkg/registry/networking/servicecidr/strategy.go, pkg/controlplane/controller/
defaultservicecidr (the ``kubernetes`` ServiceCIDR with Ready=True) and pkg/printers/internalversion/printers.go
(printIPAddress, printServiceCIDR, printPersistentVolume, printPersistentVolumeClaim, printReplicationController).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeplane.api.meta import NameRule
from kubeplane.api.resources import default_table
from kubeplane.api.validation import networking
from kubeplane.apiserver.ipallocator import IPADDRESS_PREFIX, ClusterIPAllocator
from kubeplane.apiserver.printers import row_for

from .conftest import start_server
from .test_kubectl import KUBECTL, Kubectl

NOW = 1_700_000_000.0


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


# --- one storage place --------------------------------------------------------------------------------------


def test_the_allocator_and_the_api_share_one_key() -> None:
    """The allocator's IPAddress objects are what the API serves: /registry/ipaddresses/<ip> for both."""
    info = default_table().get("networking.k8s.io", "v1", "ipaddresses")
    assert info is not None
    assert info.storage_prefix == IPADDRESS_PREFIX
    assert info.key("10.96.0.10") == ClusterIPAllocator.key("10.96.0.10")


# --- validation -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("10.96.0.10", []),
        ("2001:db8::1", []),
        ("bad", ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]),
        ("10.096.0.10", ["must not have leading 0s"]),
        ("::ffff:10.0.0.1", ["must not be an IPv4-mapped IPv6 address"]),
        ("2001:DB8::1", ['must be in canonical form ("2001:db8::1")']),
        ("2001:db8:0:0::1", ['must be in canonical form ("2001:db8::1")']),
    ],
)
def test_ip_address_name_is_a_canonical_ip(name: str, expected: list[str]) -> None:
    """ValidateIPAddressName -> IsValidIP (strict, canonical)."""
    assert NameRule.IP_ADDRESS.validate(name) == expected


def test_ip_address_parent_ref_is_required_and_checked() -> None:
    """validateIPAddressParentReference: parentRef, resource and name required; path-segment names."""
    assert _msgs(networking.validate_ip_address({"spec": {}})) == ["spec.parentRef: Required value"]
    errs = networking.validate_ip_address({"spec": {"parentRef": {"group": "Bad_Group", "namespace": "a/b"}}})
    assert _msgs(errs)[1:] == [
        "spec.parentRef.resource: Required value",
        "spec.parentRef.name: Required value",
        "spec.parentRef.namespace: Invalid value: \"a/b\": may not contain '/'",
    ]
    assert _msgs(errs)[0].startswith('spec.parentRef.group: Invalid value: "Bad_Group": a lowercase RFC 1123')
    ok = {"spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "s"}}}
    assert networking.validate_ip_address(ok) == []


def test_ip_address_parent_ref_is_immutable() -> None:
    """ValidateIPAddressUpdate: ValidateImmutableField(spec.parentRef)."""
    old = {"spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "a"}}}
    new = {"spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "b"}}}
    [err] = networking.validate_ip_address_update(new, old)
    assert str(err).startswith("spec.parentRef: Invalid value: ")
    assert str(err).endswith(": field is immutable")
    assert networking.validate_ip_address_update(old, old) == []


@pytest.mark.parametrize(
    ("cidrs", "expected"),
    [
        (["10.0.0.0/24"], []),
        (["10.0.0.0/24", "fd00::/108"], []),
        ([], ["spec.cidrs: Required value: at least one CIDR required"]),
        (
            ["10.0.0.0/24", "10.1.0.0/24"],
            [
                'spec.cidrs: Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one IP for each IP '
                "family, i.e 192.168.0.0/24 and 2001:db8::/64"
            ],
        ),
        (
            ["10.0.0.1/24"],
            ['spec.cidrs[0]: Invalid value: "10.0.0.1/24": must not have bits set beyond the prefix length'],
        ),
        (
            ["10.0.0.0/024"],
            ['spec.cidrs[0]: Invalid value: "10.0.0.0/024": must not have leading 0s in IP or prefix length'],
        ),
        (["FD00::/108"], ['spec.cidrs[0]: Invalid value: "FD00::/108": must be in canonical form ("fd00::/108")']),
        (["x"], ['spec.cidrs[0]: Invalid value: "x": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)']),
    ],
)
def test_service_cidr_spec(cidrs: list[str], expected: list[str]) -> None:
    """validateServiceCIDRSpec with IsValidCIDR."""
    assert _msgs(networking.validate_service_cidr({"spec": {"cidrs": cidrs}})) == expected


def test_service_cidr_update_allows_only_the_dual_stack_upgrade() -> None:
    """ValidateServiceCIDRUpdate: same length -> each immutable; 1 -> 2 keeps the first; anything else refused."""
    one, two = {"spec": {"cidrs": ["10.0.0.0/24"]}}, {"spec": {"cidrs": ["10.0.0.0/24", "fd00::/108"]}}
    assert networking.validate_service_cidr_update(two, one) == []
    changed = {"spec": {"cidrs": ["10.1.0.0/24"]}}
    assert _msgs(networking.validate_service_cidr_update(changed, one)) == [
        'spec.cidrs[0]: Invalid value: "10.1.0.0/24": field is immutable'
    ]
    assert _msgs(networking.validate_service_cidr_update(one, two)) == [
        'spec.cidrs: Invalid value: ["10.0.0.0/24"]: field is immutable'
    ]


# --- printers -------------------------------------------------------------------------------------------------


def test_ip_address_and_service_cidr_rows() -> None:
    """printIPAddress (lower-cased group/resource, namespace, name; the extra age cell) and printServiceCIDR."""
    created = {"name": "10.96.0.10", "creationTimestamp": "2023-11-14T22:13:20Z"}
    ref = {"resource": "services", "namespace": "default", "name": "web"}
    assert row_for(("networking.k8s.io", "IPAddress"), {"metadata": created, "spec": {"parentRef": ref}}, now=NOW) == [
        "10.96.0.10",
        "services/default/web",
        "0s",
    ]
    gw = {"group": "Gateway.networking.k8s.io", "resource": "Gateways", "name": "g"}
    assert row_for(("networking.k8s.io", "IPAddress"), {"spec": {"parentRef": gw}}, now=NOW)[1] == (
        "gateways.gateway.networking.k8s.io/g"
    )
    assert row_for(("networking.k8s.io", "IPAddress"), {}, now=NOW)[1] == "<none>"
    cidr = {"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}}
    assert row_for(("networking.k8s.io", "ServiceCIDR"), cidr, now=NOW)[:2] == ["kubernetes", "10.96.0.0/12,fd00::/108"]


def test_persistent_volume_row() -> None:
    """printPersistentVolume: canonical capacity, access modes in RWO,ROX,RWX,RWOP order, namespace/name claim,
    the storage-class annotation over the field, <unset> defaults, Terminating while deleted."""
    pv: dict[str, Any] = {
        "metadata": {"name": "pv1", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
        "spec": {
            "capacity": {"storage": "1024Mi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "ns", "name": "claim"},
            "storageClassName": "fast",
            "volumeMode": "Filesystem",
        },
        "status": {"phase": "Bound", "reason": "R"},
    }
    row = row_for(("", "PersistentVolume"), pv, now=NOW)
    assert row[:9] == ["pv1", "1Gi", "RWO,RWX", "Retain", "Bound", "ns/claim", "old", "<unset>", "R"]
    assert row[10] == "Filesystem"
    pv["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z"
    assert row_for(("", "PersistentVolume"), pv, now=NOW)[4] == "Terminating"
    assert row_for(("", "PersistentVolume"), {}, now=NOW)[1:3] == ["0", ""]


def test_persistent_volume_claim_row() -> None:
    """printPersistentVolumeClaim: capacity and access modes only once bound (spec.volumeName)."""
    pvc: dict[str, Any] = {
        "metadata": {"name": "c"},
        "spec": {"resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"},
        "status": {"phase": "Pending", "capacity": {"storage": "2Gi"}, "accessModes": ["ReadOnlyMany"]},
    }
    assert row_for(("", "PersistentVolumeClaim"), pvc, now=NOW)[:7] == ["c", "Pending", "", "", "", "fast", "<unset>"]
    pvc["spec"]["volumeName"] = "pv1"
    pvc["spec"]["volumeAttributesClassName"] = "gold"
    assert row_for(("", "PersistentVolumeClaim"), pvc, now=NOW)[2:7] == ["pv1", "2Gi", "ROX", "fast", "gold"]


def test_replication_controller_row() -> None:
    """printReplicationController: integer counts, containers, images and the label-map selector."""
    rc = {
        "metadata": {"name": "rc"},
        "spec": {
            "replicas": 3,
            "selector": {"b": "2", "a": "1"},
            "template": {"spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}},
        },
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    row = row_for(("", "ReplicationController"), rc, now=NOW)
    assert row[:4] == ["rc", 3, 2, 1]
    assert row[5:] == ["c1,c2", "i1,i2", "a=1,b=2"]
    assert row_for(("", "ReplicationController"), {}, now=NOW)[7] == "<none>"


# --- over the API, with kubectl ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root: Path = tmp_path_factory.mktemp("servicecidrs")
    server = start_server(root / "data", tls=True)
    yield Kubectl(server, root / "cache")
    server.stop()


def test_default_service_cidr_is_created_ready(kubectl: Kubectl) -> None:
    """defaultservicecidr: ServiceCIDR ``kubernetes`` from --service-cluster-ip-range, Ready=True, no generation."""
    obj = kubectl.json("get", "servicecidr", "kubernetes")
    assert obj["spec"] == {"cidrs": ["10.96.0.0/12"]}
    [ready] = obj["status"]["conditions"]
    assert (ready["type"], ready["status"], ready["message"]) == (
        "Ready",
        "True",
        "Kubernetes default Service CIDR is ready",
    )
    assert "generation" not in obj["metadata"]


def test_get_ipaddresses_and_servicecidrs_after_a_service(kubectl: Kubectl) -> None:
    """The Service's ClusterIP allocation is an IPAddress served by the API; kubectl prints upstream's columns."""
    kubectl("create", "service", "clusterip", "web", "--tcp=80:8080")
    ip = kubectl.json("get", "service", "web")["spec"]["clusterIP"]
    out = kubectl("get", "ipaddresses,servicecidrs").stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert ["NAME", "PARENTREF"] in lines
    assert [f"ipaddress.networking.k8s.io/{ip}", "services/default/web"] in lines
    assert ["NAME", "CIDRS", "AGE"] in lines
    assert any(line[:2] == ["servicecidr.networking.k8s.io/kubernetes", "10.96.0.0/12"] for line in lines)
    got = kubectl.json("get", "ip", ip)
    assert got["spec"]["parentRef"] == {"resource": "services", "namespace": "default", "name": "web"}
    kubectl("delete", "service", "web")
    assert kubectl("get", "ipaddress", ip, check=False).returncode != 0


def test_bad_writes_are_422_with_upstream_messages(kubectl: Kubectl) -> None:
    """Invalid IPAddress names and ServiceCIDR updates are refused with ValidateIPAddress*/ValidateServiceCIDR*'s
    messages, and nothing is stored."""
    bad_ip = {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": {"name": "10.0.0.01"}, "spec": {}}
    result = kubectl("create", "-f", "-", stdin=json.dumps(bad_ip), check=False)
    assert result.returncode != 0
    assert 'metadata.name: Invalid value: "10.0.0.01": must not have leading 0s' in result.stderr
    no_ref = {**bad_ip, "metadata": {"name": "10.0.0.1"}}
    result = kubectl("create", "-f", "-", stdin=json.dumps(no_ref), check=False)
    assert 'The IPAddress "10.0.0.1" is invalid: spec.parentRef: Required value' in result.stderr
    cidr = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "extra"},
        "spec": {"cidrs": ["10.200.0.0/24"]},
    }
    kubectl("create", "-f", "-", stdin=json.dumps(cidr))
    patch = json.dumps({"spec": {"cidrs": ["10.201.0.0/24"]}})
    result = kubectl("patch", "servicecidr", "extra", "--type=merge", "-p", patch, check=False)
    assert 'spec.cidrs[0]: Invalid value: "10.201.0.0/24": field is immutable' in result.stderr
    assert kubectl.json("get", "servicecidr", "extra")["spec"]["cidrs"] == ["10.200.0.0/24"]
    upgrade = json.dumps({"spec": {"cidrs": ["10.200.0.0/24", "fd00:1::/112"]}})
    kubectl("patch", "servicecidr", "extra", "--type=merge", "-p", upgrade)
    assert kubectl.json("get", "servicecidr", "extra")["spec"]["cidrs"] == ["10.200.0.0/24", "fd00:1::/112"]
