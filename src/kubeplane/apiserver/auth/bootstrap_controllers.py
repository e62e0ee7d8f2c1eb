"""Upstream's controller roles and the namespaced bootstrap roles (``bootstrappolicy/controller_policy.go`` and
``namespace_policy.go`` v1.37, at the default feature gates).

Each kube-controller-manager controller runs, with ``--use-service-account-credentials``, as the ServiceAccount
``kube-system/<name>`` bound to ClusterRole ``system:controller:<name>``; the bindings are derived from the roles
one for one, as upstream's ``ControllerRoleBindings()``. Rules are in upstream's order.
"""

from __future__ import annotations

from .bootstrap_rules import (
    ADMISSIONREGISTRATION,
    APPS,
    AUTHORIZATION,
    AUTOSCALING,
    BATCH,
    CERTIFICATES,
    COORDINATION,
    DISCOVERY,
    EXTENSIONS,
    LEGACY,
    NETWORKING,
    POLICY,
    READ,
    RESOURCE,
    STORAGE,
    Obj,
    cluster_role,
    cluster_role_binding,
    events_rule,
    role,
    role_binding,
    rule,
    service_account,
    user,
)

CONTROLLER_PREFIX = "system:controller:"
"""``saRolePrefix``."""
SYSTEM_NAMESPACE = "kube-system"
PUBLIC_NAMESPACE = "kube-public"


def _controller(name: str, rules: list[Obj]) -> Obj:
    return cluster_role(CONTROLLER_PREFIX + name, rules)


def controller_roles() -> list[Obj]:
    """``ControllerRoles()``: one ClusterRole per controller, named ``system:controller:<controller SA>``."""
    ev = events_rule
    return [
        _controller(
            "attachdetach-controller",
            [
                rule("list", "watch").groups(LEGACY).resources("persistentvolumes", "persistentvolumeclaims").rule(),
                rule(*READ).groups(LEGACY).resources("nodes").rule(),
                rule("patch", "update").groups(LEGACY).resources("nodes/status").rule(),
                rule("list", "watch").groups(LEGACY).resources("pods").rule(),
                ev(),
                rule("get", "create", "delete", "list", "watch").groups(STORAGE).resources("volumeattachments").rule(),
                rule(*READ).groups(STORAGE).resources("csidrivers").rule(),
                rule(*READ).groups(STORAGE).resources("csinodes").rule(),
            ],
        ),
        _controller(
            "clusterrole-aggregation-controller",
            [
                # the controller writes aggregated rules it does not hold itself: escalate
                rule("escalate", "get", "list", "watch", "update", "patch")
                .groups("rbac.authorization.k8s.io")
                .resources("clusterroles")
                .rule()
            ],
        ),
        _controller(
            "cronjob-controller",
            [
                rule("get", "list", "watch", "update").groups(BATCH).resources("cronjobs").rule(),
                rule("get", "list", "watch", "create", "update", "delete", "patch")
                .groups(BATCH)
                .resources("jobs")
                .rule(),
                rule("update").groups(BATCH).resources("cronjobs/status").rule(),
                rule("update").groups(BATCH).resources("cronjobs/finalizers").rule(),
                rule("list", "watch", "delete").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "daemon-set-controller",
            [
                rule(*READ).groups(EXTENSIONS, APPS).resources("daemonsets").rule(),
                rule("update").groups(EXTENSIONS, APPS).resources("daemonsets/status").rule(),
                rule("update").groups(EXTENSIONS, APPS).resources("daemonsets/finalizers").rule(),
                rule("list", "watch").groups(LEGACY).resources("nodes").rule(),
                rule("list", "watch", "create", "delete", "patch").groups(LEGACY).resources("pods").rule(),
                rule("create").groups(LEGACY).resources("pods/binding").rule(),
                rule("get", "list", "watch", "create", "delete", "update", "patch")
                .groups(APPS)
                .resources("controllerrevisions")
                .rule(),
                ev(),
            ],
        ),
        _controller(
            "deployment-controller",
            [
                rule("get", "list", "watch", "update").groups(EXTENSIONS, APPS).resources("deployments").rule(),
                rule("update").groups(EXTENSIONS, APPS).resources("deployments/status").rule(),
                rule("update").groups(EXTENSIONS, APPS).resources("deployments/finalizers").rule(),
                rule("get", "list", "watch", "create", "update", "patch", "delete")
                .groups(APPS, EXTENSIONS)
                .resources("replicasets")
                .rule(),
                # TODO: remove "update" once https://github.com/kubernetes/kubernetes/issues/36897 is resolved.
                rule("get", "list", "watch", "update").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "disruption-controller",
            [
                rule(*READ).groups(EXTENSIONS, APPS).resources("deployments").rule(),
                rule(*READ).groups(APPS, EXTENSIONS).resources("replicasets").rule(),
                rule(*READ).groups(LEGACY).resources("replicationcontrollers").rule(),
                rule(*READ).groups(POLICY).resources("poddisruptionbudgets").rule(),
                rule(*READ).groups(APPS).resources("statefulsets").rule(),
                rule("update").groups(POLICY).resources("poddisruptionbudgets/status").rule(),
                rule("patch", "update").groups(LEGACY).resources("pods/status").rule(),
                rule("get").groups("*").resources("*/scale").rule(),
                ev(),
            ],
        ),
        _controller(
            "endpoint-controller",
            [
                rule(*READ).groups(LEGACY).resources("services", "pods").rule(),
                rule("get", "list", "create", "update", "delete", "watch").groups(LEGACY).resources("endpoints").rule(),
                rule("create").groups(LEGACY).resources("endpoints/restricted").rule(),
                ev(),
            ],
        ),
        _controller(
            "endpointslice-controller",
            [
                rule(*READ).groups(LEGACY).resources("services", "pods", "nodes").rule(),
                # The controller needs to be able to set a service's finalizers to be able to create an
                # EndpointSlice resource that is owned by the service and sets blockOwnerDeletion=true
                rule("update").groups(LEGACY).resources("services/finalizers").rule(),
                rule("get", "list", "create", "update", "delete", "watch")
                .groups(DISCOVERY)
                .resources("endpointslices")
                .rule(),
                ev(),
            ],
        ),
        _controller(
            "endpointslicemirroring-controller",
            [
                rule(*READ).groups(LEGACY).resources("services", "endpoints").rule(),
                rule("update").groups(LEGACY).resources("services/finalizers").rule(),
                rule("update").groups(LEGACY).resources("endpoints/finalizers").rule(),
                rule("get", "list", "create", "update", "delete", "watch")
                .groups(DISCOVERY)
                .resources("endpointslices")
                .rule(),
                ev(),
            ],
        ),
        _controller(
            "expand-controller",
            [
                rule("get", "list", "watch", "update", "patch").groups(LEGACY).resources("persistentvolumes").rule(),
                rule("update", "patch").groups(LEGACY).resources("persistentvolumeclaims/status").rule(),
                rule(*READ).groups(LEGACY).resources("persistentvolumeclaims").rule(),
                ev(),
            ],
        ),
        _controller(
            "ephemeral-volume-controller",
            [
                rule(*READ).groups(LEGACY).resources("pods").rule(),
                rule("update").groups(LEGACY).resources("pods/finalizers").rule(),
                rule("get", "list", "watch", "create").groups(LEGACY).resources("persistentvolumeclaims").rule(),
                ev(),
            ],
        ),
        _controller(
            "generic-garbage-collector",
            [
                # the GC controller needs to run list/watches, selective gets, and updates against any resource
                rule("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").rule(),
                ev(),
            ],
        ),
        _controller(
            "horizontal-pod-autoscaler",
            [
                rule(*READ).groups(AUTOSCALING).resources("horizontalpodautoscalers").rule(),
                rule("update").groups(AUTOSCALING).resources("horizontalpodautoscalers/status").rule(),
                rule("get", "update").groups("*").resources("*/scale").rule(),
                rule("list", "watch").groups(LEGACY).resources("pods").rule(),
                # allow listing resource, custom, and external metrics
                rule("list", "watch").groups("metrics.k8s.io").resources("pods").rule(),
                rule("get", "list", "watch").groups("custom.metrics.k8s.io").resources("*").rule(),
                rule("get", "list", "watch").groups("external.metrics.k8s.io").resources("*").rule(),
                ev(),
            ],
        ),
        _controller(
            "job-controller",
            [
                rule("get", "list", "watch", "update", "patch").groups(BATCH).resources("jobs").rule(),
                rule("update").groups(BATCH).resources("jobs/status").rule(),
                rule("update").groups(BATCH).resources("jobs/finalizers").rule(),
                rule("list", "watch", "create", "delete", "patch").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "namespace-controller",
            [
                rule("get", "list", "watch", "delete").groups(LEGACY).resources("namespaces").rule(),
                rule("update").groups(LEGACY).resources("namespaces/finalize", "namespaces/status").rule(),
                rule("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*").rule(),
            ],
        ),
        _controller(
            "node-controller",
            [
                rule("get", "list", "update", "delete", "patch", "watch").groups(LEGACY).resources("nodes").rule(),
                rule("patch", "update").groups(LEGACY).resources("nodes/status").rule(),
                # used for pod deletion
                rule("patch", "update").groups(LEGACY).resources("pods/status").rule(),
                rule("list", "watch", "get", "delete").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "persistent-volume-binder",
            [
                rule("get", "list", "watch", "update", "create", "delete")
                .groups(LEGACY)
                .resources("persistentvolumes")
                .rule(),
                rule("update").groups(LEGACY).resources("persistentvolumes/status").rule(),
                rule("get", "list", "watch", "update").groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule("update").groups(LEGACY).resources("persistentvolumeclaims/status").rule(),
                rule("list", "watch", "get", "create", "delete").groups(LEGACY).resources("pods").rule(),
                # glusterfs
                rule(*READ).groups(STORAGE).resources("storageclasses").rule(),
                # openstack
                rule("list", "watch").groups(LEGACY).resources("nodes").rule(),
                # recyclerClient.WatchPod
                ev(),
                rule("watch").groups(LEGACY).resources("events").rule(),
            ],
        ),
        _controller(
            "pod-garbage-collector",
            [
                rule("list", "watch", "delete").groups(LEGACY).resources("pods").rule(),
                rule("get", "list", "watch").groups(LEGACY).resources("nodes").rule(),
                rule("patch").groups(LEGACY).resources("pods/status").rule(),
            ],
        ),
        _controller(
            "replicaset-controller",
            [
                rule("get", "list", "watch", "update").groups(APPS, EXTENSIONS).resources("replicasets").rule(),
                rule("update").groups(APPS, EXTENSIONS).resources("replicasets/status").rule(),
                rule("update").groups(APPS, EXTENSIONS).resources("replicasets/finalizers").rule(),
                rule("list", "watch", "patch", "create", "delete").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "replication-controller",
            [
                # 1.0 controllers needed get, update, so without these old controllers break on new servers
                rule("get", "list", "watch", "update").groups(LEGACY).resources("replicationcontrollers").rule(),
                rule("update").groups(LEGACY).resources("replicationcontrollers/status").rule(),
                rule("update").groups(LEGACY).resources("replicationcontrollers/finalizers").rule(),
                rule("list", "watch", "patch", "create", "delete").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "resourcequota-controller",
            [
                # quota can count quota on anything for reconciliation, so it needs full viewing powers
                rule("list", "watch").groups("*").resources("*").rule(),
                rule("update").groups(LEGACY).resources("resourcequotas/status").rule(),
                ev(),
            ],
        ),
        _controller(
            "route-controller",
            [
                rule("list", "watch").groups(LEGACY).resources("nodes").rule(),
                rule("patch").groups(LEGACY).resources("nodes/status").rule(),
                ev(),
            ],
        ),
        _controller(
            "service-account-controller",
            [rule("create").groups(LEGACY).resources("serviceaccounts").rule(), ev()],
        ),
        _controller(
            "service-controller",
            [
                rule(*READ).groups(LEGACY).resources("services").rule(),
                rule("patch", "update").groups(LEGACY).resources("services/status").rule(),
                rule("list", "watch").groups(LEGACY).resources("nodes").rule(),
                ev(),
            ],
        ),
        _controller(
            "statefulset-controller",
            [
                rule("list", "watch").groups(LEGACY).resources("pods").rule(),
                rule(*READ).groups(APPS).resources("statefulsets").rule(),
                rule("update").groups(APPS).resources("statefulsets/status").rule(),
                rule("update").groups(APPS).resources("statefulsets/finalizers").rule(),
                rule("get", "create", "delete", "update", "patch").groups(LEGACY).resources("pods").rule(),
                rule("get", "create", "delete", "update", "patch", "list", "watch")
                .groups(APPS)
                .resources("controllerrevisions")
                .rule(),
                rule("get", "create", "list", "watch").groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule("update", "delete").groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule("update").groups(LEGACY).resources("pods/finalizers").rule(),
                ev(),
            ],
        ),
        _controller(
            "ttl-controller",
            [rule("update", "patch", "list", "watch").groups(LEGACY).resources("nodes").rule(), ev()],
        ),
        _controller(
            "certificate-controller",
            [
                rule("get", "list", "watch", "delete")
                .groups(CERTIFICATES)
                .resources("certificatesigningrequests")
                .rule(),
                rule("update")
                .groups(CERTIFICATES)
                .resources("certificatesigningrequests/status", "certificatesigningrequests/approval")
                .rule(),
                rule("approve")
                .groups(CERTIFICATES)
                .resources("signers")
                .names("kubernetes.io/kube-apiserver-client-kubelet")
                .rule(),
                rule("sign")
                .groups(CERTIFICATES)
                .resources("signers")
                .names(
                    "kubernetes.io/legacy-unknown",
                    "kubernetes.io/kube-apiserver-client",
                    "kubernetes.io/kube-apiserver-client-kubelet",
                    "kubernetes.io/kubelet-serving",
                )
                .rule(),
                rule("create").groups(AUTHORIZATION).resources("subjectaccessreviews").rule(),
                ev(),
            ],
        ),
        _controller(
            "pvc-protection-controller",
            [
                rule("get", "list", "watch", "update").groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule("update").groups(LEGACY).resources("persistentvolumeclaims/status").rule(),
                rule("list", "watch", "get").groups(LEGACY).resources("pods").rule(),
                ev(),
            ],
        ),
        _controller(
            "pv-protection-controller",
            [
                rule("get", "list", "watch", "update").groups(LEGACY).resources("persistentvolumes").rule(),
                ev(),
            ],
        ),
        _controller(
            "ttl-after-finished-controller",
            [rule("get", "list", "watch", "delete").groups(BATCH).resources("jobs").rule(), ev()],
        ),
        _controller(
            "root-ca-cert-publisher",
            [rule("create", "update").groups(LEGACY).resources("configmaps").rule(), ev()],
        ),
        _controller(
            "validatingadmissionpolicy-status-controller",
            [
                rule(*READ).groups(ADMISSIONREGISTRATION).resources("validatingadmissionpolicies").rule(),
                rule("get", "patch", "update")
                .groups(ADMISSIONREGISTRATION)
                .resources("validatingadmissionpolicies/status")
                .rule(),
                ev(),
            ],
        ),
        _controller(
            "legacy-service-account-token-cleaner",
            [
                rule("get")
                .groups(LEGACY)
                .resources("configmaps")
                .names("kube-apiserver-legacy-service-account-token-tracking")
                .rule(),
                rule("patch", "delete").groups(LEGACY).resources("secrets").rule(),
            ],
        ),
        # DynamicResourceAllocation (GA); resourceclaims/binding: DRADeviceBindingConditions (on by default)
        _controller(
            "resource-claim-controller",
            [
                rule(*READ).groups(LEGACY).resources("pods").rule(),
                rule("update").groups(LEGACY).resources("pods/finalizers").rule(),
                rule("get", "list", "watch", "create", "delete").groups(RESOURCE).resources("resourceclaims").rule(),
                rule("update", "patch").groups(RESOURCE).resources("resourceclaims", "resourceclaims/status").rule(),
                rule("update", "patch").groups(LEGACY).resources("pods/status").rule(),
                ev(),
                rule("update", "patch").groups(RESOURCE).resources("resourceclaims/binding").rule(),
            ],
        ),
        # DRADeviceTaints (on by default)
        _controller(
            "device-taint-eviction-controller",
            [
                rule("get", "list", "watch", "delete").groups(LEGACY).resources("pods").rule(),
                rule("update", "patch").groups(LEGACY).resources("pods/status").rule(),
                rule(*READ).groups(RESOURCE).resources("resourceclaims").rule(),
                rule(*READ).groups(RESOURCE).resources("resourceslices").rule(),
                rule(*READ).groups(RESOURCE).resources("deviceclasses").rule(),
                ev(),
            ],
        ),
        # MultiCIDRServiceAllocator (GA)
        _controller(
            "service-cidrs-controller",
            [
                rule("get", "list", "watch", "patch", "update").groups(NETWORKING).resources("servicecidrs").rule(),
                rule("patch", "update").groups(NETWORKING).resources("servicecidrs/finalizers").rule(),
                rule("patch", "update").groups(NETWORKING).resources("servicecidrs/status").rule(),
                rule(*READ).groups(NETWORKING).resources("ipaddresses").rule(),
                ev(),
            ],
        ),
        # SELinuxChangePolicy
        _controller(
            "selinux-warning-controller",
            [
                ev(),
                rule(*READ).groups(LEGACY).resources("persistentvolumes").rule(),
                rule(*READ).groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule(*READ).groups(LEGACY).resources("pods").rule(),
                rule(*READ).groups(STORAGE).resources("csidrivers").rule(),
            ],
        ),
        # VolumeAttributesClass (GA)
        _controller(
            "volumeattributesclass-protection-controller",
            [
                rule(*READ).groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule(*READ).groups(LEGACY).resources("persistentvolumes").rule(),
                rule("get", "list", "watch", "update").groups(STORAGE).resources("volumeattributesclasses").rule(),
                ev(),
            ],
        ),
    ]


def controller_role_bindings() -> list[Obj]:
    """``ControllerRoleBindings()``: each controller role bound to its ServiceAccount in kube-system."""
    out = []
    for controller in controller_roles():
        name = controller["metadata"]["name"]
        sa = name.removeprefix(CONTROLLER_PREFIX)
        out.append(cluster_role_binding(name, [service_account(SYSTEM_NAMESPACE, sa)]))
    return out


_LEADER_VERBS = ("get", "list", "watch", "create", "update")


def namespace_roles() -> dict[str, list[Obj]]:
    """``NamespaceRoles()``: the Roles of kube-system and kube-public."""
    system = SYSTEM_NAMESPACE
    return {
        system: [
            # role for finding authentication config info for starting a server
            role(
                "extension-apiserver-authentication-reader",
                system,
                [rule(*READ).groups(LEGACY).resources("configmaps").names("extension-apiserver-authentication").rule()],
            ),
            # role for the bootstrap signer to be able to inspect kube-system secrets
            role(
                CONTROLLER_PREFIX + "bootstrap-signer", system, [rule(*READ).groups(LEGACY).resources("secrets").rule()]
            ),
            # role for the cloud providers to access/create kube-system configmaps
            role(
                CONTROLLER_PREFIX + "cloud-provider",
                system,
                [rule("create", "get", "list", "watch").groups(LEGACY).resources("configmaps").rule()],
            ),
            # role for the token-cleaner to be able to remove secrets, but only in kube-system
            role(
                CONTROLLER_PREFIX + "token-cleaner",
                system,
                [rule("delete", *READ).groups(LEGACY).resources("secrets").rule(), events_rule()],
            ),
            # role for the leader locking on supplied configmap (leases only since 1.x; and lease candidates)
            role(
                "system::leader-locking-kube-controller-manager",
                system,
                [
                    rule(*_LEADER_VERBS).groups(COORDINATION).resources("leases").rule(),
                    rule(*_LEADER_VERBS).groups(COORDINATION).resources("leasecandidates").rule(),
                ],
            ),
            role(
                "system::leader-locking-kube-scheduler",
                system,
                [
                    rule(*_LEADER_VERBS).groups(COORDINATION).resources("leases").rule(),
                    rule(*_LEADER_VERBS).groups(COORDINATION).resources("leasecandidates").rule(),
                ],
            ),
        ],
        PUBLIC_NAMESPACE: [
            # role for the bootstrap signer to be able to write its configmap
            role(
                CONTROLLER_PREFIX + "bootstrap-signer",
                PUBLIC_NAMESPACE,
                [
                    rule(*READ).groups(LEGACY).resources("configmaps").rule(),
                    rule("update").groups(LEGACY).resources("configmaps").names("cluster-info").rule(),
                    events_rule(),
                ],
            ),
        ],
    }


def namespace_role_bindings() -> dict[str, list[Obj]]:
    """``NamespaceRoleBindings()``."""
    system = SYSTEM_NAMESPACE
    sa = service_account
    return {
        system: [
            role_binding(
                "system::extension-apiserver-authentication-reader",
                system,
                [user("system:kube-controller-manager"), user("system:kube-scheduler")],
                role_name="extension-apiserver-authentication-reader",
            ),
            role_binding(
                "system::leader-locking-kube-controller-manager",
                system,
                [
                    user("system:kube-controller-manager"),
                    sa(system, "kube-controller-manager"),
                    sa(system, "leader-election-controller"),
                ],
            ),
            role_binding(
                "system::leader-locking-kube-scheduler",
                system,
                [user("system:kube-scheduler"), sa(system, "kube-scheduler")],
            ),
            role_binding(CONTROLLER_PREFIX + "bootstrap-signer", system, [sa(system, "bootstrap-signer")]),
            role_binding(CONTROLLER_PREFIX + "cloud-provider", system, [sa(system, "cloud-provider")]),
            role_binding(CONTROLLER_PREFIX + "token-cleaner", system, [sa(system, "token-cleaner")]),
        ],
        PUBLIC_NAMESPACE: [
            role_binding(CONTROLLER_PREFIX + "bootstrap-signer", PUBLIC_NAMESPACE, [sa(system, "bootstrap-signer")]),
        ],
    }
