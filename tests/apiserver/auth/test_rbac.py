"""The RBAC authorizer and rule resolution, translated from upstream v1.37
``plugin/pkg/auth/authorizer/rbac/rbac_test.go`` (``TestAuthorizer``: resource rules through a RoleBinding to a
ClusterRole, non-resource URLs and their ``/*`` prefixes, subresources and ``*/scale``) and
``pkg/registry/rbac/validation/rule_test.go`` (``TestAppliesTo``: users, groups, ServiceAccounts with and without
a namespace), plus the authorizer's reasons (``RBAC: allowed by ...``) and read-your-writes.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.apiserver.auth.authorizer import Attributes, Decision
from kubeplane.apiserver.auth.rbac import RBACAuthorizer, Subject
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.local import LocalClient

G = "rbac.authorization.k8s.io"


def rule(verbs: str, groups: str, resources: str, urls: str = "") -> dict[str, Any]:
    """Upstream's ``newRule(verbs, apiGroups, resources, nonResourceURLs)``: comma-separated lists. Upstream's
    tables put rules straight into listers; through the API a rule cannot hold both resources and URLs
    (validation), so the URLs of a resource rule are left out (they never match a resource request)."""
    out: dict[str, Any] = {"verbs": verbs.split(",")}
    if resources:  # "" is the core group
        out["apiGroups"] = groups.split(",")
    if resources:
        out["resources"] = resources.split(",")
    if urls and not resources:
        out["nonResourceURLs"] = urls.split(",")
    return out


def subjects(*specs: str) -> list[dict[str, Any]]:
    """``"User:admin"``, ``"Group:admins"``, ``"ServiceAccount:ns:name"``."""
    out: list[dict[str, Any]] = []
    for spec in specs:
        kind, _, rest = spec.partition(":")
        if kind == "ServiceAccount":
            namespace, _, name = rest.partition(":")
            out.append({"kind": kind, "name": name, "namespace": namespace})
        else:
            out.append({"kind": kind, "name": rest, "apiGroup": G})
    return out


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory(rng=random.Random(1))
    for ns in ("ns1", "ns2"):
        await c.create(c.resource("namespaces"), {"metadata": {"name": ns}})
    yield c
    await c.close()


async def cluster_role(c: LocalClient, name: str, *rules: dict[str, Any]) -> None:
    await c.create(c.resource("clusterroles"), {"metadata": {"name": name}, "rules": list(rules)})


async def cluster_binding(c: LocalClient, role: str, *who: str, name: str = "") -> None:
    body = {
        "metadata": {"name": name or role},
        "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": role},
        "subjects": subjects(*who),
    }
    await c.create(c.resource("clusterrolebindings"), body)


async def role_binding(c: LocalClient, ns: str, name: str, kind: str, role: str, *who: str) -> None:
    body = {
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": G, "kind": kind, "name": role},
        "subjects": subjects(*who),
    }
    await c.create(c.resource("rolebindings"), body, namespace=ns)


def res(user: str, groups: str, verb: str, resource: str, sub: str, ns: str, name: str = "") -> Attributes:
    """Upstream's ``defaultAttributes{user, groups, verb, resource, subresource, namespace, apiGroup}``."""
    info = UserInfo(user, groups=tuple(g for g in groups.split(",") if g))
    return Attributes(info, verb, namespace=ns, resource=resource, subresource=sub, name=name)


def url(verb: str, path: str, *, name: str = "", groups: tuple[str, ...] = ()) -> Attributes:
    return Attributes(UserInfo(name, groups=groups), verb, resource_request=False, path=path)


def allowed(authz: RBACAuthorizer, attrs: Attributes) -> bool:
    return authz.authorize(attrs)[0] is Decision.ALLOW


async def test_role_binding_to_a_cluster_role_allows_in_its_namespace_only(client: LocalClient) -> None:
    """TestAuthorizer case 1: newRule("*","*","*","*") bound in ns1 to User:admin and Group:admins."""
    await cluster_role(client, "admin", rule("*", "*", "*", "*"))
    await role_binding(client, "ns1", "admin", "ClusterRole", "admin", "User:admin", "Group:admins")
    authz = RBACAuthorizer(client.registry)
    for attrs in (
        res("admin", "", "get", "Pods", "", "ns1"),
        res("admin", "", "watch", "Pods", "", "ns1"),
        res("admin", "group1", "watch", "Foobar", "", "ns1"),
        res("joe", "admins", "watch", "Foobar", "", "ns1"),
        res("joe", "group1,admins", "watch", "Foobar", "", "ns1"),
    ):
        assert allowed(authz, attrs), attrs
    for attrs in (
        res("admin", "", "GET", "Pods", "", "ns2"),
        res("admin", "", "GET", "Nodes", "", ""),
        res("admin", "admins", "GET", "Pods", "", "ns2"),
        res("admin", "admins", "GET", "Nodes", "", ""),
    ):
        assert authz.authorize(attrs) == (Decision.NO_OPINION, ""), attrs


async def test_non_resource_urls_and_prefixes(client: LocalClient) -> None:
    """TestAuthorizer's non-resource-url case."""
    await cluster_role(client, "non-resource-url-getter", rule("get", "", "", "/apis"))
    await cluster_role(client, "non-resource-url", rule("*", "", "", "/apis"))
    await cluster_role(client, "non-resource-url-prefix", rule("get", "", "", "/apis/*"))
    await cluster_binding(client, "non-resource-url-getter", "User:foo", "Group:bar")
    await cluster_binding(client, "non-resource-url", "User:admin", "Group:admin")
    await cluster_binding(client, "non-resource-url-prefix", "User:prefixed", "Group:prefixed")
    authz = RBACAuthorizer(client.registry)
    for attrs in (
        url("get", "/apis", name="foo"),
        url("get", "/apis", groups=("bar",)),
        url("get", "/apis", name="admin"),
        url("get", "/apis", groups=("admin",)),
        url("watch", "/apis", name="admin"),
        url("watch", "/apis", groups=("admin",)),
        url("get", "/apis/v1", name="prefixed"),
        url("get", "/apis/v1", groups=("prefixed",)),
        url("get", "/apis/v1/foobar", name="prefixed"),
        url("get", "/apis/v1/foorbar", groups=("prefixed",)),
    ):
        assert allowed(authz, attrs), attrs
    for attrs in (
        url("watch", "/apis", name="foo"),  # wrong verb
        url("watch", "/apis", groups=("bar",)),
        url("get", "/api/v1", name="foo"),  # wrong path
        url("get", "/api/v1", groups=("bar",)),
        url("get", "/api/v1", name="admin"),
        url("get", "/api/v1", groups=("admin",)),
        url("get", "/api/v1", name="prefixed"),  # not covered by the prefix
        url("get", "/api/v1", groups=("prefixed",)),
    ):
        assert not allowed(authz, attrs), attrs


async def test_subresources_need_their_own_rule_or_a_star_form(client: LocalClient) -> None:
    """TestAuthorizer's two subresource cases: "pods" does not cover pods/status; "*/scale" covers any scale."""
    await cluster_role(client, "pods-only", rule("*", "*", "pods", "*"))
    await cluster_role(client, "subs", rule("*", "*", "pods/status", "*"), rule("*", "*", "*/scale", "*"))
    await role_binding(client, "ns1", "a", "ClusterRole", "pods-only", "User:one")
    await role_binding(client, "ns1", "b", "ClusterRole", "subs", "User:two")
    authz = RBACAuthorizer(client.registry)
    assert allowed(authz, res("one", "", "get", "pods", "", "ns1"))
    assert not allowed(authz, res("one", "", "get", "pods", "status", "ns1"))
    for attrs in (
        res("two", "", "get", "pods", "status", "ns1"),
        res("two", "", "get", "pods", "scale", "ns1"),
        res("two", "", "get", "deployments", "scale", "ns1"),
        res("two", "", "get", "anything", "scale", "ns1"),
    ):
        assert allowed(authz, attrs), attrs
    assert not allowed(authz, res("two", "", "get", "pods", "", "ns1"))


async def test_resource_names_restrict_and_api_groups_must_match(client: LocalClient) -> None:
    """rbacv1helpers.ResourceNameMatches and APIGroupMatches."""
    await cluster_role(
        client,
        "lease",
        {"verbs": ["get"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["a"]},
    )
    await cluster_binding(client, "lease", "User:u")
    authz = RBACAuthorizer(client.registry)
    lease = Attributes(UserInfo("u"), "get", namespace="x", api_group="coordination.k8s.io", resource="leases")
    assert allowed(authz, Attributes(**{**_fields(lease), "name": "a"}))
    assert not allowed(authz, Attributes(**{**_fields(lease), "name": "b"}))
    assert not allowed(authz, lease)  # no name: a list is not covered by resourceNames
    assert not allowed(authz, Attributes(**{**_fields(lease), "name": "a", "api_group": ""}))


def _fields(attrs: Attributes) -> dict[str, Any]:
    return {f: getattr(attrs, f) for f in Attributes.__slots__}


def test_applies_to() -> None:
    """rule_test.go TestAppliesTo: users by name, groups by membership, ServiceAccounts by their username with
    the binding's namespace as the default (none in a ClusterRoleBinding: no match)."""
    foo = UserInfo("foobar", groups=("other",))
    assert Subject("User", "foobar", "").applies_to(foo, "")
    assert not Subject("User", "foo", "").applies_to(foo, "")
    assert Subject("Group", "other", "").applies_to(foo, "")
    sa = UserInfo("system:serviceaccount:kube-system:default")
    assert Subject("ServiceAccount", "default", "kube-system").applies_to(sa, "")
    assert Subject("ServiceAccount", "default", "").applies_to(sa, "kube-system")
    assert not Subject("ServiceAccount", "default", "").applies_to(sa, "")
    assert not Subject("ServiceAccount", "default", "").applies_to(sa, "other")
    assert not Subject("ServiceAccount", "other", "kube-system").applies_to(sa, "")
    assert not Subject("Unknown", "default", "kube-system").applies_to(sa, "")


async def test_reasons_name_the_binding_and_missing_roles(client: LocalClient) -> None:
    """rbac.go: ALLOW says "RBAC: allowed by <describer>"; a binding to a missing role is an error reason on the
    denial; describeSubject qualifies a ServiceAccount with the binding's namespace."""
    await cluster_role(client, "view-pods", rule("get,list", "", "pods"))
    await role_binding(client, "ns1", "viewers", "ClusterRole", "view-pods", "ServiceAccount::app")
    await role_binding(client, "ns1", "broken", "Role", "missing", "ServiceAccount::app")
    authz = RBACAuthorizer(client.registry)
    app = UserInfo("system:serviceaccount:ns1:app")
    assert authz.authorize(Attributes(app, "list", namespace="ns1", resource="pods")) == (
        Decision.ALLOW,
        'RBAC: allowed by RoleBinding "viewers" of ClusterRole "view-pods" to ServiceAccount "app/ns1"',
    )
    assert authz.authorize(Attributes(app, "delete", namespace="ns1", resource="pods")) == (
        Decision.NO_OPINION,
        f'RBAC: role.{G} "missing" not found',
    )
    resource_rules, non_resource, incomplete, error = authz.rules_for(app, "ns1")
    assert resource_rules == [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]
    assert (non_resource, incomplete, error) == ([], False, f'role.{G} "missing" not found')


async def test_decisions_follow_every_completed_rbac_write(client: LocalClient) -> None:
    """Read your writes: a binding created, then deleted, changes the very next decision."""
    authz = RBACAuthorizer(client.registry)
    bob = res("bob", "", "list", "pods", "", "ns1")
    assert not allowed(authz, bob)
    await cluster_role(client, "reader", rule("list", "", "pods"))
    assert not allowed(authz, bob)
    await role_binding(client, "ns1", "bob-reads", "ClusterRole", "reader", "User:bob")
    assert allowed(authz, bob)
    await client.delete(client.resource("rolebindings"), "bob-reads", namespace="ns1")
    assert not allowed(authz, bob)
    rebuilds = authz.rebuilds
    for _ in range(5):
        assert not allowed(authz, bob)  # no RBAC change: the index and the decision are reused
    assert authz.rebuilds == rebuilds
