"""The Node authorizer: what a kubelet (``system:node:<name>`` in ``system:nodes``) may do (upstream
``plugin/pkg/auth/authorizer/node/node_authorizer.go`` and ``pkg/auth/nodeidentifier``, v1.37, where
AuthorizeNodeWithSelectors is GA and locked on, and KubeletServiceAccountTokenForCredentialProviders is on).

Decision procedure, as upstream's ``Authorize``:

1. A user that is not a node (:func:`node_identity`) gets NO_OPINION with no reason (RBAC decides).
2. A node user whose name is empty gets NO_OPINION, ``unknown node for user "<name>"``.
3. Secrets, configmaps, PVCs (and their status), PVs, resource claims, volume attachments, service accounts
   (get, and create of ``token``), pods and resource slices are subdivided: allowed only for objects related to
   the node in the graph (:mod:`.node_graph`); nodes, leases and CSINodes by name; list/watch of pods and
   resource slices only with the ``spec.nodeName`` / ``nodeName`` field selector naming the node. Every refusal
   is NO_OPINION with upstream's reason, so RBAC may still allow (upstream's ``system:node`` ClusterRole is bound
   to nobody by default).
4. Anything else is allowed when upstream's static ``bootstrappolicy.NodeRules()`` allow it (:data:`NODE_RULES`).

The node's own writes are held to its own objects by NodeRestriction admission (:mod:`.noderestriction`), since
the authorizer does not see request bodies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubeplane.apiserver.tokens import UserInfo

from .authorizer import NODE_USER_PREFIX, NODES_GROUP, Attributes, Decision
from .node_graph import (
    CONFIGMAP,
    POD,
    PV,
    PVC,
    RESOURCECLAIM,
    RESOURCESLICE,
    SECRET,
    SERVICEACCOUNT,
    VOLUMEATTACHMENT,
    NodeGraph,
)

if TYPE_CHECKING:
    from kubeplane.apiserver.registry import Registry

NODE_LEASE_NAMESPACE = "kube-node-lease"
"""``api.NamespaceNodeLease``."""


def node_identity(user: UserInfo | None) -> tuple[str, bool]:
    """``nodeidentifier.NewDefaultNodeIdentifier().NodeIdentity``: ``(node name, is a node)``. A node is a user
    named ``system:node:<name>`` in the ``system:nodes`` group; the name may be empty (then it is a node whose
    node is unknown)."""
    if user is None or not user.name.startswith(NODE_USER_PREFIX) or NODES_GROUP not in user.groups:
        return "", False
    return user.name[len(NODE_USER_PREFIX) :], True


@dataclass(frozen=True, slots=True)
class Rule:
    """An ``rbacv1.PolicyRule`` of resources (verbs, API groups, resources with ``res/sub`` subresources)."""

    verbs: tuple[str, ...]
    groups: tuple[str, ...]
    resources: tuple[str, ...]

    def allows(self, attrs: Attributes) -> bool:
        """``rbac.RuleAllows`` for a resource request (no resourceNames in node rules)."""
        if not attrs.resource_request:
            return False
        combined = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        return (
            ("*" in self.verbs or attrs.verb in self.verbs)
            and ("*" in self.groups or attrs.api_group in self.groups)
            and (
                "*" in self.resources
                or combined in self.resources
                or (bool(attrs.subresource) and f"*/{attrs.subresource}" in self.resources)
            )
        )


_READ = ("get", "list", "watch")
_CORE, _STORAGE, _RESOURCE = "", "storage.k8s.io", "resource.k8s.io"

NODE_RULES: tuple[Rule, ...] = (
    Rule(("create",), ("authentication.k8s.io",), ("tokenreviews",)),
    Rule(("create",), ("authorization.k8s.io",), ("subjectaccessreviews", "localsubjectaccessreviews")),
    Rule(_READ, (_CORE,), ("services",)),
    Rule(("create", "get", "list", "watch"), (_CORE,), ("nodes",)),
    Rule(("update", "patch"), (_CORE,), ("nodes/status",)),
    Rule(("update", "patch"), (_CORE,), ("nodes",)),
    Rule(("create", "update", "patch"), (_CORE, "events.k8s.io"), ("events",)),
    Rule(_READ, (_CORE,), ("pods",)),
    Rule(("create", "delete"), (_CORE,), ("pods",)),
    Rule(("update", "patch"), (_CORE,), ("pods/status",)),
    Rule(("create",), (_CORE,), ("pods/eviction",)),
    Rule(_READ, (_CORE,), ("secrets", "configmaps")),
    Rule(("get",), (_CORE,), ("persistentvolumeclaims", "persistentvolumes")),
    Rule(("get",), (_CORE,), ("endpoints",)),
    Rule(("create", "get", "list", "watch"), ("certificates.k8s.io",), ("certificatesigningrequests",)),
    Rule(("get", "create", "update", "patch", "delete"), ("coordination.k8s.io",), ("leases",)),
    Rule(("get",), (_STORAGE,), ("volumeattachments",)),
    Rule(("create",), (_CORE,), ("serviceaccounts/token",)),
    Rule(("get", "update", "patch"), (_CORE,), ("persistentvolumeclaims/status",)),
    Rule(_READ, (_STORAGE,), ("csidrivers",)),
    Rule(("get", "create", "update", "patch", "delete"), (_STORAGE,), ("csinodes",)),
    Rule(_READ, ("node.k8s.io",), ("runtimeclasses",)),
    Rule(("get",), (_RESOURCE,), ("resourceclaims",)),
    Rule(
        ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"),
        (_RESOURCE,),
        ("resourceslices",),
    ),
)
"""``bootstrappolicy.NodeRules()`` at v1.37 with its default feature gates (DynamicResourceAllocation GA,
KubeletServiceAccountTokenForCredentialProviders on; ClusterTrustBundle and PodCertificateRequest off, and
kubeplane serves neither): what the Node authorizer allows for the resources it does not subdivide."""

_NO_RELATIONSHIP = "no relationship found between node '{}' and this object"

Result = tuple[Decision, str]
_ALLOW: Result = (Decision.ALLOW, "")


def _no(reason: str = "") -> Result:
    return Decision.NO_OPINION, reason


def _field_names(attrs: Attributes, field: str, node: str) -> bool:
    """Whether the request's field selector has the requirement ``<field> = <node>`` (``selection.Equals``;
    ``==`` parses to the same operator upstream)."""
    return any(req.key == field and req.op in ("=", "==") and req.values == (node,) for req in attrs.field_selector)


class NodeAuthorizer:
    """``node.NodeAuthorizer`` over ``registry``'s watch caches (read your writes: the graph refreshes from the
    caches' rings before each decision that consults it)."""

    def __init__(self, registry: Registry) -> None:
        self.graph = NodeGraph(registry)
        self.rules = NODE_RULES

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, object]], list[dict[str, object]], bool, str]:
        """``NodeAuthorizer.RulesFor``: nodes' permissions are not enumerable (incomplete, with upstream's
        error); nothing for anyone else."""
        if node_identity(user)[1]:
            return [], [], True, "node authorizer does not support user rule resolution"
        return [], [], False, ""

    def authorize(self, attrs: Attributes) -> Result:
        node, is_node = node_identity(attrs.user)
        if not is_node:
            return _no()
        if not node:
            return _no(f'unknown node for user "{attrs.user.name}"')
        if attrs.resource_request:
            decided = self._subdivided(node, attrs)
            if decided is not None:
                return decided
        if any(rule.allows(attrs) for rule in self.rules):
            return _ALLOW
        return _no()

    def _subdivided(self, node: str, attrs: Attributes) -> Result | None:
        group, resource = attrs.api_group, attrs.resource
        if group == _CORE:
            if resource == "secrets":
                return self._read_namespaced(node, SECRET, attrs)
            if resource == "configmaps":
                return self._read_namespaced(node, CONFIGMAP, attrs)
            if resource == "persistentvolumeclaims":
                if attrs.subresource == "status":
                    return self._status_update(node, PVC, attrs)
                return self._get(node, PVC, attrs)
            if resource == "persistentvolumes":
                return self._get(node, PV, attrs)
            if resource == "serviceaccounts":
                return self._service_account(node, attrs)
            if resource == "nodes":
                return self._node(node, attrs)
            if resource == "pods":
                return self._pod(node, attrs)
        elif group == _RESOURCE:
            if resource == "resourceclaims":
                return self._get(node, RESOURCECLAIM, attrs)
            if resource == "resourceslices":
                return self._resource_slice(node, attrs)
        elif group == _STORAGE:
            if resource == "volumeattachments":
                return self._get(node, VOLUMEATTACHMENT, attrs)
            if resource == "csinodes":
                return self._csinode(node, attrs)
        elif group == "coordination.k8s.io" and resource == "leases":
            return self._lease(node, attrs)
        return None

    # -- upstream's authorize* helpers, in its order ---------------------------------------------------------------

    def _status_update(self, node: str, vertex: str, attrs: Attributes) -> Result:
        if attrs.verb not in ("update", "patch"):
            return _no("can only get/update/patch this type")
        if attrs.subresource != "status":
            return _no("can only update status subresource")
        return self._related(node, vertex, attrs)

    def _get(self, node: str, vertex: str, attrs: Attributes) -> Result:
        if attrs.verb != "get":
            return _no("can only get individual resources of this type")
        if attrs.subresource:
            return _no("cannot get subresource")
        return self._related(node, vertex, attrs)

    def _read_namespaced(self, node: str, vertex: str, attrs: Attributes) -> Result:
        if attrs.verb not in _READ:
            return _no("can only read resources of this type")
        if attrs.subresource:
            return _no("cannot read subresource")
        if not attrs.namespace:
            return _no("can only read namespaced object of this type")
        return self._related(node, vertex, attrs)

    def _related(self, node: str, vertex: str, attrs: Attributes) -> Result:
        """Upstream's ``authorize``: a named object with a path to the node in the graph."""
        if not attrs.name:
            return _no("No Object name found")
        self.graph.refresh()
        if self.graph.has_path(node, vertex, attrs.namespace, attrs.name):
            return _ALLOW
        return _no(_NO_RELATIONSHIP.format(node))

    def _service_account(self, node: str, attrs: Attributes) -> Result:
        """``authorizeServiceAccount``: get of a related service account (the credential providers' tokens), or
        create of the ``token`` subresource of one."""
        if attrs.verb == "get" and not attrs.subresource:
            return self._read_namespaced(node, SERVICEACCOUNT, attrs)
        if attrs.verb != "create" or not attrs.name:
            return _no("can only create tokens for individual service accounts")
        if attrs.subresource != "token":
            return _no("can only create token subresource of serviceaccount")
        return self._related(node, SERVICEACCOUNT, attrs)

    def _lease(self, node: str, attrs: Attributes) -> Result:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a node lease")
        if attrs.namespace != NODE_LEASE_NAMESPACE:
            return _no(f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
        # create is not checked by name here (the authorizer does not know it): NodeRestriction does
        if attrs.verb != "create" and attrs.name != node:
            return _no("can only access node lease with the same name as the requesting node")
        return _ALLOW

    def _csinode(self, node: str, attrs: Attributes) -> Result:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return _no("can only get, create, update, patch, or delete a CSINode")
        if attrs.subresource:
            return _no("cannot authorize CSINode subresources")
        if attrs.verb != "create" and attrs.name != node:
            return _no("can only access CSINode with the same name as the requesting node")
        return _ALLOW

    def _resource_slice(self, node: str, attrs: Attributes) -> Result:
        if attrs.subresource:
            return _no("cannot authorize ResourceSlice subresources")
        if attrs.verb == "create":
            return _ALLOW  # NodeRestriction checks spec.nodeName of the new object
        if attrs.verb in ("get", "update", "patch", "delete"):
            return self._related(node, RESOURCESLICE, attrs)
        if attrs.verb in ("watch", "list", "deletecollection"):
            if _field_names(attrs, "nodeName", node):
                return _ALLOW
            return _no("can only list/watch/deletecollection resourceslices with nodeName field selector")
        return _no(
            "only the following verbs are allowed for a ResourceSlice: "
            "get, watch, list, create, update, patch, delete, deletecollection"
        )

    def _node(self, node: str, attrs: Attributes) -> Result:
        if not attrs.subresource:
            if attrs.verb in ("create", "update", "patch"):
                return _ALLOW  # NodeRestriction limits a node to its own Node object
            if attrs.verb in _READ:
                # compared by name, not through the graph, so a kubelet can read its Node before creating it
                if attrs.name == node:
                    return _ALLOW
                if not attrs.name:
                    return _no(f"node '{node}' cannot read all nodes, only its own Node object")
                return _no(f"node '{node}' cannot read '{attrs.name}', only its own Node object")
        elif attrs.subresource == "status" and attrs.verb in ("update", "patch"):
            return _ALLOW
        return _no()

    def _pod(self, node: str, attrs: Attributes) -> Result:
        if not attrs.subresource:
            if attrs.verb == "get":
                return self._get(node, POD, attrs)
            if attrs.verb in ("list", "watch"):
                if _field_names(attrs, "spec.nodeName", node):
                    return _ALLOW
                if attrs.name:
                    return self._related(node, POD, attrs)
                return _no("can only list/watch pods with spec.nodeName field selector")
            if attrs.verb in ("create", "delete"):
                return _ALLOW  # mirror pods; NodeRestriction limits them to the node's own
        elif attrs.subresource == "status":
            if attrs.verb in ("update", "patch"):
                return _ALLOW
        elif attrs.subresource == "eviction" and attrs.verb == "create":
            return _ALLOW
        return _no()
