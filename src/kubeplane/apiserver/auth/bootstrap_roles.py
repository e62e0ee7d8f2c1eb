"""Upstream's bootstrap ClusterRoles and ClusterRoleBindings (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
policy.go`` v1.37, at the default feature gates).

Rules are listed in upstream's order (the order ``ClusterRoles()`` builds them, which is what its golden
``testdata/cluster-roles.yaml`` shows). admin, edit and view carry only an aggregationRule: their rules come from
the ``system:aggregate-to-*`` roles through the clusterrole-aggregation controller, as upstream.
"""

from __future__ import annotations

from .bootstrap_rules import (
    APPS,
    AUTHENTICATION,
    AUTHORIZATION,
    AUTOSCALING,
    BATCH,
    CERTIFICATES,
    COORDINATION,
    DISCOVERY,
    EXTENSIONS,
    LEGACY,
    NETWORKING,
    NODE,
    POLICY,
    READ,
    READ_UPDATE,
    READ_WRITE,
    RESOURCE,
    STORAGE,
    Obj,
    cluster_role,
    cluster_role_binding,
    events_rule,
    group,
    rule,
    service_account,
    user,
)

AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"

CLUSTER_ROLES_TO_AGGREGATE = {
    "admin": "system:aggregate-to-admin",
    "edit": "system:aggregate-to-edit",
    "view": "system:aggregate-to-view",
}
"""``ClusterRolesToAggregate``: before aggregation existed these roles held the rules themselves; reconcile
moves a pre-aggregation copy's rules into the aggregate-to role (storage_rbac.go primeAggregatedClusterRoles)."""

_WRITE = ("create", "update", "patch", "delete", "deletecollection")


def _aggregate_to_view() -> list[Obj]:
    return [
        rule(*READ)
        .groups(LEGACY)
        .resources(
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "configmaps",
        )
        .rule(),
        rule(*READ)
        .groups(LEGACY)
        .resources(
            "limitranges",
            "resourcequotas",
            "bindings",
            "events",
            "pods/status",
            "resourcequotas/status",
            "namespaces/status",
            "replicationcontrollers/status",
            "pods/log",
        )
        .rule(),
        # read access to namespaces at the namespace scope means you can read *this* namespace
        rule(*READ).groups(LEGACY).resources("namespaces").rule(),
        rule(*READ).groups(DISCOVERY).resources("endpointslices").rule(),
        rule(*READ)
        .groups(APPS)
        .resources(
            "controllerrevisions",
            "statefulsets",
            "statefulsets/status",
            "statefulsets/scale",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/status",
            "deployments/scale",
            "replicasets",
            "replicasets/status",
            "replicasets/scale",
        )
        .rule(),
        rule(*READ).groups(AUTOSCALING).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
        rule(*READ).groups(BATCH).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").rule(),
        rule(*READ)
        .groups(EXTENSIONS)
        .resources(
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
            "networkpolicies",
        )
        .rule(),
        rule(*READ).groups(POLICY).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
        rule(*READ).groups(NETWORKING).resources("ingresses", "ingresses/status", "networkpolicies").rule(),
    ]


def _aggregate_to_edit() -> list[Obj]:
    return [
        # allow read-only access to secrets and proxies, without granting further read-write (escalating) powers
        rule(*READ)
        .groups(LEGACY)
        .resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy")
        .rule(),
        rule("impersonate").groups(LEGACY).resources("serviceaccounts").rule(),
        rule(*_WRITE)
        .groups(LEGACY)
        .resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward")
        .rule(),
        rule("create").groups(LEGACY).resources("pods/eviction").rule(),
        rule(*_WRITE)
        .groups(LEGACY)
        .resources(
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/proxy",
            "persistentvolumeclaims",
            "configmaps",
            "secrets",
            "events",
        )
        .rule(),
        rule("create").groups(LEGACY).resources("serviceaccounts/token").rule(),
        rule(*_WRITE)
        .groups(APPS)
        .resources(
            "statefulsets",
            "statefulsets/scale",
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "replicasets",
            "replicasets/scale",
        )
        .rule(),
        rule(*_WRITE).groups(AUTOSCALING).resources("horizontalpodautoscalers").rule(),
        rule(*_WRITE).groups(BATCH).resources("jobs", "cronjobs").rule(),
        rule(*_WRITE)
        .groups(EXTENSIONS)
        .resources(
            "daemonsets",
            "deployments",
            "deployments/scale",
            "deployments/rollback",
            "ingresses",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
            "networkpolicies",
        )
        .rule(),
        rule(*_WRITE).groups(POLICY).resources("poddisruptionbudgets").rule(),
        rule(*_WRITE).groups(NETWORKING).resources("ingresses", "networkpolicies").rule(),
        rule(*READ_WRITE).groups(COORDINATION).resources("leases").rule(),
    ]


def _node_rules() -> list[Obj]:
    """``NodeRules()``: what a kubelet needs (the Node authorizer narrows it per node)."""
    return [
        # Needed to check API access. These creates are non-mutating
        rule("create").groups(AUTHENTICATION).resources("tokenreviews").rule(),
        rule("create").groups(AUTHORIZATION).resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),
        # Needed to build serviceLister, to populate env vars for services
        rule(*READ).groups(LEGACY).resources("services").rule(),
        # Nodes can register Node API objects and report status
        rule("create", "get", "list", "watch").groups(LEGACY).resources("nodes").rule(),
        rule("update", "patch").groups(LEGACY).resources("nodes/status").rule(),
        rule("update", "patch").groups(LEGACY).resources("nodes").rule(),
        # TODO: restrict to the bound node as creator in the NodeRestrictions admission plugin
        rule("create", "update", "patch").groups(LEGACY).resources("events").rule(),
        # TODO: restrict to pods scheduled on the bound node once field selectors are supported by list/watch
        rule(*READ).groups(LEGACY).resources("pods").rule(),
        # Needed for the node to create/delete mirror pods
        rule("create", "delete").groups(LEGACY).resources("pods").rule(),
        # Needed for the node to report status of pods it is running
        rule("update", "patch").groups(LEGACY).resources("pods/status").rule(),
        # Needed for the node to create pod evictions
        rule("create").groups(LEGACY).resources("pods/eviction").rule(),
        # Needed for imagepullsecrets, secret/configmap volumes and envs (the Node authorizer limits to the node's)
        rule("get", "list", "watch").groups(LEGACY).resources("secrets", "configmaps").rule(),
        # Needed for persistent volumes
        rule("get").groups(LEGACY).resources("persistentvolumeclaims", "persistentvolumes").rule(),
        # Needed for glusterfs volumes
        rule("get").groups(LEGACY).resources("endpoints").rule(),
        # Used to create a certificatesigningrequest for a node-specific client certificate
        rule("create", "get", "list", "watch").groups(CERTIFICATES).resources("certificatesigningrequests").rule(),
        # Leases
        rule("get", "create", "update", "patch", "delete").groups(COORDINATION).resources("leases").rule(),
        # CSI
        rule("get").groups(STORAGE).resources("volumeattachments").rule(),
        # Use the Node authorizer to limit get to PVs and PVCs; tokens for pods' service accounts
        rule("create").groups(LEGACY).resources("serviceaccounts/token").rule(),
        # Needed for online volume expansion (ExpandPersistentVolumes, GA)
        rule("get", "update", "patch").groups(LEGACY).resources("persistentvolumeclaims/status").rule(),
        rule(*READ).groups(STORAGE).resources("csidrivers").rule(),
        rule("get", "create", "update", "patch", "delete").groups(STORAGE).resources("csinodes").rule(),
        # RuntimeClass
        rule(*READ).groups(NODE).resources("runtimeclasses").rule(),
        # DynamicResourceAllocation (GA, on by default): the kubelet reads its pods' claims and removes its slices
        rule("get").groups(RESOURCE).resources("resourceclaims").rule(),
        rule("deletecollection").groups(RESOURCE).resources("resourceslices").rule(),
    ]


def _scheduler_rules() -> list[Obj]:
    return [
        events_rule(),
        # This is for leaderlease access
        rule("create").groups(COORDINATION).resources("leases").rule(),
        rule("get", "update", "list", "watch").groups(COORDINATION).resources("leases").names("kube-scheduler").rule(),
        rule(*READ_WRITE).groups(COORDINATION).resources("leasecandidates").rule(),
        # Fundamental resources
        rule(*READ).groups(LEGACY).resources("nodes").rule(),
        rule("get", "list", "watch", "delete").groups(LEGACY).resources("pods").rule(),
        rule("create").groups(LEGACY).resources("pods/binding", "bindings").rule(),
        rule("patch", "update").groups(LEGACY).resources("pods/status").rule(),
        # Things that select pods
        rule(*READ).groups(LEGACY).resources("services", "replicationcontrollers").rule(),
        rule(*READ).groups(APPS, EXTENSIONS).resources("replicasets").rule(),
        rule(*READ).groups(APPS).resources("statefulsets").rule(),
        # Things that pods use or applies to them
        rule(*READ).groups(POLICY).resources("poddisruptionbudgets").rule(),
        rule(*READ).groups(LEGACY).resources("persistentvolumeclaims", "persistentvolumes").rule(),
        # Needed to check API access. These creates are non-mutating
        rule("create").groups(AUTHENTICATION).resources("tokenreviews").rule(),
        rule("create").groups(AUTHORIZATION).resources("subjectaccessreviews").rule(),
        # Needed for volume limits
        rule(*READ).groups(STORAGE).resources("csinodes").rule(),
        rule(*READ).groups(STORAGE).resources("volumeattachments").rule(),
        # Needed for namespaceSelector feature in pod affinity
        rule(*READ).groups(LEGACY).resources("namespaces").rule(),
        rule(*READ).groups(STORAGE).resources("csidrivers").rule(),
        rule(*READ).groups(STORAGE).resources("csistoragecapacities").rule(),
        # DynamicResourceAllocation (GA, on by default)
        rule(*READ).groups(RESOURCE).resources("deviceclasses").rule(),
        rule(*READ_UPDATE).groups(RESOURCE).resources("resourceclaims").rule(),
        rule(*READ_UPDATE).groups(RESOURCE).resources("resourceclaims/status").rule(),
        rule(*READ_UPDATE).groups(LEGACY).resources("pods/finalizers").rule(),
        rule(*READ).groups(RESOURCE).resources("resourceslices").rule(),
        # DRAExtendedResource (GA, on in v1.37): PreBind creates a pod's claim for extended resources backed by
        # DRA, Unreserve/PostFilter delete it (newer than the golden file tests/apiserver/auth pins)
        rule("create", "delete").groups(RESOURCE).resources("resourceclaims").rule(),
    ]


def _controller_manager_rules() -> list[Obj]:
    return [
        events_rule(),
        # Needed for leader election
        rule("create").groups(COORDINATION).resources("leases").rule(),
        rule("get", "update").groups(COORDINATION).resources("leases").names("kube-controller-manager").rule(),
        # Fundamental resources
        rule("create").groups(LEGACY).resources("secrets", "serviceaccounts").rule(),
        rule("delete").groups(LEGACY).resources("secrets").rule(),
        rule("get").groups(LEGACY).resources("namespaces", "secrets", "serviceaccounts", "configmaps").rule(),
        rule("update").groups(LEGACY).resources("secrets", "serviceaccounts").rule(),
        # Needed to check API access. These creates are non-mutating
        rule("create").groups(AUTHENTICATION).resources("tokenreviews").rule(),
        rule("create").groups(AUTHORIZATION).resources("subjectaccessreviews").rule(),
        # Needed for all shared informers
        rule("list", "watch").groups("*").resources("*").rule(),
        rule("create").groups(LEGACY).resources("serviceaccounts/token").rule(),
    ]


def _signer_approver(name: str, signer: str) -> Obj:
    return cluster_role(name, [rule("approve").groups(CERTIFICATES).resources("signers").names(signer).rule()])


def cluster_roles() -> list[Obj]:
    """``bootstrappolicy.ClusterRoles()`` (without the controller roles, which ``ControllerRoles()`` adds)."""
    return [
        # a "root" role which can do absolutely anything
        cluster_role("cluster-admin", [rule("*").groups("*").resources("*").rule(), rule("*").urls("*").rule()]),
        # a role which provides just enough power to determine if the server is ready and discover API versions
        cluster_role(
            "system:discovery",
            [
                rule("get")
                .urls(
                    "/healthz",
                    "/livez",
                    "/readyz",
                    "/version",
                    "/version/",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/openapi",
                    "/openapi/*",
                )
                .rule()
            ],
        ),
        # a role which provides minimal read access to the monitoring endpoints
        cluster_role(
            "system:monitoring",
            [
                rule("get")
                .urls(
                    "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"
                )
                .rule()
            ],
        ),
        # a role which provides minimal resource access to allow a "normal" user to learn information about themselves
        cluster_role(
            "system:basic-user",
            [
                rule("create")
                .groups(AUTHORIZATION)
                .resources("selfsubjectaccessreviews", "selfsubjectrulesreviews")
                .rule(),
                rule("create").groups(AUTHENTICATION).resources("selfsubjectreviews").rule(),
            ],
        ),
        # a role which provides just enough power read insensitive cluster information
        cluster_role(
            "system:public-info-viewer",
            [rule("get").urls("/healthz", "/livez", "/readyz", "/version", "/version/").rule()],
        ),
        # a role for a namespace level admin; `edit` plus the power to grant permissions to other users
        cluster_role("admin", [], aggregate_from=AGGREGATE_TO_ADMIN),
        # a role for a namespace level editor: all user level actions in a namespace
        cluster_role("edit", [], labels={AGGREGATE_TO_ADMIN: "true"}, aggregate_from=AGGREGATE_TO_EDIT),
        # a role for namespace level viewing: read-only access to non-escalating resources
        cluster_role("view", [], labels={AGGREGATE_TO_EDIT: "true"}, aggregate_from=AGGREGATE_TO_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            [
                rule("create").groups(AUTHORIZATION).resources("localsubjectaccessreviews").rule(),
                rule(*READ_WRITE).groups("rbac.authorization.k8s.io").resources("roles", "rolebindings").rule(),
            ],
            labels={AGGREGATE_TO_ADMIN: "true"},
        ),
        cluster_role("system:aggregate-to-edit", _aggregate_to_edit(), labels={AGGREGATE_TO_EDIT: "true"}),
        cluster_role("system:aggregate-to-view", _aggregate_to_view(), labels={AGGREGATE_TO_VIEW: "true"}),
        cluster_role(
            "system:heapster",
            [
                rule(*READ).groups(LEGACY).resources("events", "pods", "nodes", "namespaces").rule(),
                rule(*READ).groups(EXTENSIONS).resources("deployments").rule(),
            ],
        ),
        # a role for nodes to use to have the access they need for running pods
        cluster_role("system:node", _node_rules()),
        # a role to use for node-problem-detector access
        cluster_role(
            "system:node-problem-detector",
            [
                rule("get").groups(LEGACY).resources("nodes").rule(),
                rule("patch").groups(LEGACY).resources("nodes/status").rule(),
                events_rule(),
            ],
        ),
        # a role to use for full access to the kubelet API
        cluster_role(
            "system:kubelet-api-admin",
            [
                # Allow read-only access to the Node API objects
                rule(*READ).groups(LEGACY).resources("nodes").rule(),
                # Allow all API calls to the nodes
                rule("proxy").groups(LEGACY).resources("nodes").rule(),
                rule("*").groups(LEGACY).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log").rule(),
            ],
        ),
        # a role to use for bootstrapping a node's client certificates
        cluster_role(
            "system:node-bootstrapper",
            [
                rule("create", "get", "list", "watch")
                .groups(CERTIFICATES)
                .resources("certificatesigningrequests")
                .rule()
            ],
        ),
        # a role to use for allowing authentication and authorization delegation
        cluster_role(
            "system:auth-delegator",
            [
                rule("create").groups(AUTHENTICATION).resources("tokenreviews").rule(),
                rule("create").groups(AUTHORIZATION).resources("subjectaccessreviews").rule(),
            ],
        ),
        # a role to use for the API registry, summarization, and proxy handling
        cluster_role("system:kube-aggregator", [rule(*READ).groups(LEGACY).resources("services", "endpoints").rule()]),
        # a role to use for bootstrapping the kube-controller-manager
        cluster_role("system:kube-controller-manager", _controller_manager_rules()),
        # a role to use for the kube-dns pod
        cluster_role(
            "system:kube-dns", [rule("list", "watch").groups(LEGACY).resources("endpoints", "services").rule()]
        ),
        # a role for an external/out-of-tree persistent volume provisioner
        cluster_role(
            "system:persistent-volume-provisioner",
            [
                rule("get", "list", "watch", "create", "delete").groups(LEGACY).resources("persistentvolumes").rule(),
                # update is needed in addition to read access for setting lock annotations on PVCs
                rule("get", "list", "watch", "update").groups(LEGACY).resources("persistentvolumeclaims").rule(),
                rule(*READ).groups(STORAGE).resources("storageclasses").rule(),
                # Needed for watching provisioning success and failure events
                rule("watch").groups(LEGACY).resources("events").rule(),
                events_rule(),
            ],
        ),
        # a role making the csrapprover controller approve a node client CSR
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            [rule("create").groups(CERTIFICATES).resources("certificatesigningrequests/nodeclient").rule()],
        ),
        # a role making the csrapprover controller approve a node client CSR requested by the node itself
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            [rule("create").groups(CERTIFICATES).resources("certificatesigningrequests/selfnodeclient").rule()],
        ),
        cluster_role(
            "system:volume-scheduler",
            [
                rule(*READ_UPDATE).groups(LEGACY).resources("persistentvolumes").rule(),
                rule(*READ).groups(STORAGE).resources("storageclasses").rule(),
                rule(*READ_UPDATE).groups(LEGACY).resources("persistentvolumeclaims").rule(),
            ],
        ),
        _signer_approver("system:certificates.k8s.io:legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
        _signer_approver("system:certificates.k8s.io:kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
        _signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver", "kubernetes.io/kube-apiserver-client"
        ),
        _signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        # a role to use for setting up a proxy
        cluster_role(
            "system:node-proxier",
            [
                # Used to build serviceLister
                rule("list", "watch").groups(LEGACY).resources("services", "endpoints").rule(),
                rule(*READ).groups(LEGACY).resources("nodes").rule(),
                events_rule(),
                rule("list", "watch").groups(DISCOVERY).resources("endpointslices").rule(),
            ],
        ),
        # a role to use for the kube-scheduler
        cluster_role("system:kube-scheduler", _scheduler_rules()),
        # service account issuer discovery (the OIDC discovery document and the key set)
        cluster_role(
            "system:service-account-issuer-discovery",
            [
                rule("get")
                .urls(
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                )
                .rule()
            ],
        ),
    ]


def cluster_role_bindings() -> list[Obj]:
    """``bootstrappolicy.ClusterRoleBindings()``. system:node is bound to no one: the Node authorizer grants
    kubelets their access (upstream keeps the binding, emptied, so a reconcile does not re-add system:nodes)."""
    return [
        cluster_role_binding("cluster-admin", [group("system:masters")]),
        cluster_role_binding("system:monitoring", [group("system:monitoring")]),
        cluster_role_binding("system:discovery", [group("system:authenticated")]),
        cluster_role_binding("system:basic-user", [group("system:authenticated")]),
        cluster_role_binding(
            "system:public-info-viewer", [group("system:authenticated"), group("system:unauthenticated")]
        ),
        cluster_role_binding("system:node-proxier", [user("system:kube-proxy")]),
        cluster_role_binding("system:kube-controller-manager", [user("system:kube-controller-manager")]),
        cluster_role_binding("system:kube-dns", [service_account("kube-system", "kube-dns")]),
        cluster_role_binding("system:kube-scheduler", [user("system:kube-scheduler")]),
        cluster_role_binding("system:volume-scheduler", [user("system:kube-scheduler")]),
        cluster_role_binding("system:node", []),
        cluster_role_binding("system:service-account-issuer-discovery", [group("system:serviceaccounts")]),
    ]
