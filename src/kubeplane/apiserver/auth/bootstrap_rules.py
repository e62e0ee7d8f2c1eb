"""Builders for the bootstrap RBAC policy (upstream ``pkg/apis/rbac/v1/helpers.go``: ``NewRule``,
``NewClusterBinding``, ``NewRoleBinding``, v1.37).

Every object is wire-form (``rbac.authorization.k8s.io/v1``) and carries upstream's bootstrapping label and
autoupdate annotation. Invariants, as upstream's builders: a rule's verbs, groups, resources, resource names and
URLs are sorted and deduplicated (``sets.NewString(...).List()``); empty lists are left out (``omitempty``).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_VERSION = f"{RBAC_GROUP}/v1"
BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
"""``bootstrappolicy.Label``."""
AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate"
"""``rbacv1.AutoUpdateAnnotationKey``: "false" protects an object from reconciliation."""

READ_WRITE = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
READ = ("get", "list", "watch")
READ_UPDATE = ("get", "list", "watch", "update", "patch")

LEGACY = ""
APPS = "apps"
AUTHENTICATION = "authentication.k8s.io"
AUTHORIZATION = "authorization.k8s.io"
AUTOSCALING = "autoscaling"
BATCH = "batch"
CERTIFICATES = "certificates.k8s.io"
COORDINATION = "coordination.k8s.io"
DISCOVERY = "discovery.k8s.io"
EVENTS = "events.k8s.io"
EXTENSIONS = "extensions"
NETWORKING = "networking.k8s.io"
NODE = "node.k8s.io"
POLICY = "policy"
RESOURCE = "resource.k8s.io"
STORAGE = "storage.k8s.io"
ADMISSIONREGISTRATION = "admissionregistration.k8s.io"


class Rule:
    """``rbacv1helpers.PolicyRuleBuilder``: ``rule("get").groups(...).resources(...).rule()``."""

    def __init__(self, verbs: tuple[str, ...]) -> None:
        self._verbs = sorted(set(verbs))
        self._groups: list[str] = []
        self._resources: list[str] = []
        self._names: list[str] = []
        self._urls: list[str] = []

    def groups(self, *groups: str) -> Rule:
        self._groups = sorted(set(self._groups) | set(groups))
        return self

    def resources(self, *resources: str) -> Rule:
        self._resources = sorted(set(self._resources) | set(resources))
        return self

    def names(self, *names: str) -> Rule:
        self._names = sorted(set(self._names) | set(names))
        return self

    def urls(self, *urls: str) -> Rule:
        self._urls = sorted(set(self._urls) | set(urls))
        return self

    def rule(self) -> Obj:
        """``RuleOrDie``: a rule is either resource-scoped (groups and resources) or non-resource (URLs)."""
        if not self._verbs:
            raise ValueError("verbs must contain at least one value")
        if self._urls and (self._groups or self._resources or self._names):
            raise ValueError("non-resource rule may not have apiGroups, resources, or resourceNames")
        if not self._urls and (not self._groups or not self._resources):
            raise ValueError("resource rule must have apiGroups and resources")
        out: Obj = {}
        if self._groups:
            out["apiGroups"] = list(self._groups)
        if self._names:
            out["resourceNames"] = list(self._names)
        if self._resources:
            out["resources"] = list(self._resources)
        if self._urls:
            out["nonResourceURLs"] = list(self._urls)
        out["verbs"] = list(self._verbs)
        return out


def rule(*verbs: str) -> Rule:
    return Rule(verbs)


def events_rule() -> Obj:
    """``eventsRule()``: events in the core and events.k8s.io groups."""
    return rule("create", "update", "patch").groups(LEGACY, EVENTS).resources("events").rule()


def _meta(name: str, namespace: str | None, labels: dict[str, str] | None) -> Obj:
    meta: Obj = {
        "name": name,
        "labels": {**(labels or {}), **BOOTSTRAP_LABEL},
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def cluster_role(
    name: str, rules: list[Obj], *, labels: dict[str, str] | None = None, aggregate_from: str | None = None
) -> Obj:
    """A bootstrap ClusterRole; ``aggregate_from``: the label of upstream's aggregationRule (rules then empty,
    filled by the clusterrole-aggregation controller)."""
    role: Obj = {"apiVersion": RBAC_VERSION, "kind": "ClusterRole", "metadata": _meta(name, None, labels)}
    if aggregate_from is not None:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_from: "true"}}]}
    role["rules"] = rules
    return role


def role(name: str, namespace: str, rules: list[Obj]) -> Obj:
    return {"apiVersion": RBAC_VERSION, "kind": "Role", "metadata": _meta(name, namespace, None), "rules": rules}


def user(name: str) -> Obj:
    return {"apiGroup": RBAC_GROUP, "kind": "User", "name": name}


def group(name: str) -> Obj:
    return {"apiGroup": RBAC_GROUP, "kind": "Group", "name": name}


def service_account(namespace: str, name: str) -> Obj:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def cluster_role_binding(name: str, subjects: list[Obj], *, role_name: str | None = None) -> Obj:
    """``NewClusterBinding(role).Users/Groups/SAs(...)``: named after its ClusterRole unless ``role_name``."""
    binding: Obj = {
        "apiVersion": RBAC_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": _meta(name, None, None),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role_name or name},
    }
    if subjects:
        binding["subjects"] = subjects
    return binding


def role_binding(name: str, namespace: str, subjects: list[Obj], *, role_name: str | None = None) -> Obj:
    """``NewRoleBinding(role, namespace)``: a RoleBinding to a Role of the same namespace."""
    return {
        "apiVersion": RBAC_VERSION,
        "kind": "RoleBinding",
        "metadata": _meta(name, namespace, None),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role_name or name},
        "subjects": subjects,
    }
