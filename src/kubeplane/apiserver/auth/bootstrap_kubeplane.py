"""kubeplane's own bootstrap RBAC objects (no upstream counterpart).

``system:kubeplane:kubelet-fleet``: one fleet process hosts many simulated kubelets. Their writes go per node as
``system:node:<name>`` (group ``system:nodes``) via impersonation, so the Node authorizer and NodeRestriction see
each node as upstream would; the fleet's shared informers read once for all nodes as this user. The role thus
grants cluster-wide reads of what kubelets watch, ``impersonate`` on users and groups (to act as its nodes), and
the writes of the simulated CSI drivers' controller side and of the node labels kubelets may not set themselves.
Labelled ``kubeplane.io/bootstrapping=kubeplane-defaults``, without upstream's autoupdate annotation; reconcile
treats it as upstream treats an unannotated object (missing rules and subjects are added back).
"""

from __future__ import annotations

from .bootstrap_rules import (
    COORDINATION,
    LEGACY,
    NODE,
    RBAC_GROUP,
    RBAC_VERSION,
    READ,
    RESOURCE,
    STORAGE,
    Obj,
    rule,
)

KUBELET_FLEET = "system:kubeplane:kubelet-fleet"
KUBEPLANE_LABEL = {"kubeplane.io/bootstrapping": "kubeplane-defaults"}


def cluster_roles() -> list[Obj]:
    rules = [
        rule(*READ)
        .groups(LEGACY)
        .resources(
            "pods",
            "nodes",
            "services",
            "endpoints",
            "configmaps",
            "persistentvolumes",
            "persistentvolumeclaims",
        )
        .rule(),
        rule(*READ)
        .groups(STORAGE)
        .resources("storageclasses", "csidrivers", "csinodes", "volumeattachments", "csistoragecapacities")
        .rule(),
        rule(*READ).groups(RESOURCE).resources("resourceclaims", "resourceslices", "deviceclasses").rule(),
        rule(*READ).groups(COORDINATION).resources("leases").rule(),
        rule(*READ).groups(NODE).resources("runtimeclasses").rule(),
        # any user (RBAC cannot match the system:node: prefix), but only the nodes' groups: never system:masters
        rule("impersonate").groups(LEGACY).resources("users").rule(),
        rule("impersonate").groups(LEGACY).resources("groups").names("system:authenticated", "system:nodes").rule(),
        # the simulated CSI drivers' controller side (external-provisioner and -attacher, which a driver's install
        # would give ServiceAccounts of their own), and the node labels kubelets may not set (kubeadm's)
        rule("create", "get", "patch", "delete").groups(LEGACY).resources("persistentvolumes").rule(),
        rule("patch").groups(LEGACY).resources("persistentvolumeclaims", "nodes").rule(),
        rule("create", "patch", "update").groups(LEGACY).resources("events").rule(),
        rule("create", "patch", "update").groups("events.k8s.io").resources("events").rule(),
        rule("create", "get", "update").groups(STORAGE).resources("csidrivers").rule(),
        rule("create").groups(STORAGE).resources("storageclasses").rule(),
        rule("create", "patch", "delete").groups(STORAGE).resources("csistoragecapacities").rule(),
        rule("patch").groups(STORAGE).resources("volumeattachments", "volumeattachments/status").rule(),
    ]
    meta = {"name": KUBELET_FLEET, "labels": dict(KUBEPLANE_LABEL)}
    return [{"apiVersion": RBAC_VERSION, "kind": "ClusterRole", "metadata": meta, "rules": rules}]


def cluster_role_bindings() -> list[Obj]:
    return [
        {
            "apiVersion": RBAC_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": KUBELET_FLEET, "labels": dict(KUBEPLANE_LABEL)},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": KUBELET_FLEET},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": KUBELET_FLEET}],
        }
    ]
