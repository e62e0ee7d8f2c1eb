"""Table columns of Endpoints, StorageClass, CSINode, RoleBinding, ClusterRoleBinding.

Pinned upstream: pkg/printers/internalversion/printers.go ``AddHandlers`` column definitions and ``printEndpoints``
(``formatEndpoints``), ``printStorageClass``, ``printCSINode``, ``printRoleBinding``/``printClusterRoleBinding``
(``rbac.SubjectsStrings``). Before this, these kinds fell back to the Name/Created At default printer.
"""

from __future__ import annotations

from kubeplane.apiserver.printers import column_definitions, row_for

NOW = 1_000_000.0
META = {"name": "x", "creationTimestamp": "1970-01-12T13:46:30Z"}  # 10 s before NOW


def _names(kind: tuple[str, str]) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in column_definitions(kind)]


def test_endpoints() -> None:
    assert _names(("", "Endpoints")) == [("Name", 0), ("Endpoints", 0), ("Age", 0)]
    assert column_definitions(("", "Endpoints"))[1]["description"].startswith("The set of all endpoints")
    assert row_for(("", "Endpoints"), {"metadata": META}, now=NOW) == ["x", "<none>", "10s"]
    subsets = [{"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 6)], "ports": [{"port": 80}]}]
    row = row_for(("", "Endpoints"), {"metadata": META, "subsets": subsets}, now=NOW)
    assert row[1] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."
    headless = [{"addresses": [{"ip": "fd00::1"}]}]
    assert row_for(("", "Endpoints"), {"metadata": META, "subsets": headless}, now=NOW)[1] == "fd00::1"
    v6 = [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 443}]}]
    assert row_for(("", "Endpoints"), {"metadata": META, "subsets": v6}, now=NOW)[1] == "[fd00::1]:443"


def test_storage_class_and_csi_node() -> None:
    kind = ("storage.k8s.io", "StorageClass")
    assert [n for n, _ in _names(kind)] == [
        "Name",
        "Provisioner",
        "ReclaimPolicy",
        "VolumeBindingMode",
        "AllowVolumeExpansion",
        "Age",
    ]
    sc = {"metadata": META, "provisioner": "example.com/p"}
    assert row_for(kind, sc, now=NOW) == ["x", "example.com/p", "Delete", "Immediate", False, "10s"]
    node = {"metadata": META, "spec": {"drivers": [{"name": "a"}, {"name": "b"}]}}
    assert row_for(("storage.k8s.io", "CSINode"), node, now=NOW) == ["x", 2, "10s"]


def test_bindings() -> None:
    kind = ("rbac.authorization.k8s.io", "RoleBinding")
    assert _names(kind) == [
        ("Name", 0),
        ("Role", 0),
        ("Age", 0),
        ("Users", 1),
        ("Groups", 1),
        ("ServiceAccounts", 1),
    ]
    binding = {
        "metadata": META,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "User", "name": "bob"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "robot", "namespace": "ci"},
        ],
    }
    assert row_for(kind, binding, now=NOW) == ["x", "ClusterRole/view", "10s", "alice, bob", "devs", "ci/robot"]
    crb = column_definitions(("rbac.authorization.k8s.io", "ClusterRoleBinding"))
    assert crb[3]["description"] == "Users in the clusterRoleBinding"
    assert crb[1]["description"].startswith("roleRef can only reference a ClusterRole in the global namespace.")
