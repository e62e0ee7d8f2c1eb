"""RBAC's escalation prevention, as upstream v1.37's policybased storages and ``ConfirmNoEscalation``
(``pkg/registry/rbac/validation/policy_compact_test.go``/``policy_comparator_test.go`` for covering and the
compact description; the storages' rules for ``escalate``, ``bind``, system:masters and the aggregationRule).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.apiserver.auth.modes import build_authorizer
from kubeplane.apiserver.auth.rbac_rules import Rule, compact, compact_string, covers
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.errors import ForbiddenError, NotFoundError
from kubeplane.client.local import LocalClient

G = "rbac.authorization.k8s.io"
BOB = UserInfo("bob", groups=("system:authenticated",))


@pytest.fixture
async def admin() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory(rng=random.Random(3))
    c.registry.authorizer = build_authorizer(c.registry)
    await c.create(c.resource("namespaces"), {"metadata": {"name": "ns1"}})
    # bob may read pods and write roles and bindings in ns1, nothing more
    await c.create(
        c.resource("roles"),
        {
            "metadata": {"name": "bob", "namespace": "ns1"},
            "rules": [
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["create", "update"], "apiGroups": [G], "resources": ["roles", "rolebindings"]},
            ],
        },
        namespace="ns1",
    )
    await c.create(c.resource("rolebindings"), _binding("bob", "Role", "bob", "bob"), namespace="ns1")
    await c.create(
        c.resource("clusterroles"),
        {
            "metadata": {"name": "pod-writer"},
            "rules": [{"verbs": ["create"], "apiGroups": [""], "resources": ["pods"]}],
        },
    )
    yield c
    await c.close()


def _binding(name: str, kind: str, role: str, user: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns1"},
        "roleRef": {"apiGroup": G, "kind": kind, "name": role},
        "subjects": [{"kind": "User", "name": user, "apiGroup": G}],
    }


def _role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns1"}, "rules": list(rules)}


READ = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
WRITE = {"verbs": ["create", "delete"], "apiGroups": [""], "resources": ["pods"]}


async def test_a_role_with_held_rules_is_created_one_with_more_is_forbidden(admin: LocalClient) -> None:
    bob = admin.as_user(BOB)
    await bob.create(bob.resource("roles"), _role("reader", READ), namespace="ns1")
    with pytest.raises(ForbiddenError) as info:
        await bob.create(bob.resource("roles"), _role("writer", READ, WRITE), namespace="ns1")
    assert info.value.message == (
        f'roles.{G} "writer" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC '
        'permissions not currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}'
    )
    names = [r["metadata"]["name"] for r in (await admin.list(admin.resource("roles"), namespace="ns1"))["items"]]
    assert "writer" not in names  # a refused write stores nothing


async def test_escalate_verb_and_system_masters_skip_the_check(admin: LocalClient) -> None:
    bob = admin.as_user(BOB)
    await admin.create(
        admin.resource("roles"),
        _role("escalator", {"verbs": ["escalate"], "apiGroups": [G], "resources": ["roles"]}),
        namespace="ns1",
    )
    await admin.create(admin.resource("rolebindings"), _binding("esc", "Role", "escalator", "bob"), namespace="ns1")
    await bob.create(bob.resource("roles"), _role("writer", WRITE), namespace="ns1")
    root = admin.as_user(UserInfo("root", groups=("system:masters",)))
    await root.create(
        root.resource("roles"),
        _role("anything", {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
        namespace="ns1",
    )


async def test_binding_needs_bind_or_the_roles_rules(admin: LocalClient) -> None:
    bob = admin.as_user(BOB)
    with pytest.raises(ForbiddenError) as info:
        await bob.create(
            bob.resource("rolebindings"), _binding("b1", "ClusterRole", "pod-writer", "eve"), namespace="ns1"
        )
    assert info.value.message.startswith(
        f'rolebindings.{G} "b1" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant'
    )
    assert info.value.message.endswith('{APIGroups:[""], Resources:["pods"], Verbs:["create"]}')
    with pytest.raises(NotFoundError) as missing:
        await bob.create(bob.resource("rolebindings"), _binding("b2", "ClusterRole", "nope", "eve"), namespace="ns1")
    assert missing.value.message == f'clusterrole.{G} "nope" not found'
    await admin.create(
        admin.resource("roles"),
        _role(
            "binder",
            {"verbs": ["bind"], "apiGroups": [G], "resources": ["clusterroles"], "resourceNames": ["pod-writer"]},
        ),
        namespace="ns1",
    )
    await admin.create(admin.resource("rolebindings"), _binding("bind", "Role", "binder", "bob"), namespace="ns1")
    await bob.create(bob.resource("rolebindings"), _binding("b1", "ClusterRole", "pod-writer", "eve"), namespace="ns1")


async def test_an_update_of_gc_fields_only_is_not_checked(admin: LocalClient) -> None:
    """IsOnlyMutatingGCFields: bob may add a finalizer to a role he could not create."""
    await admin.create(admin.resource("roles"), _role("big", WRITE), namespace="ns1")
    bob = admin.as_user(BOB)
    role = await admin.get(admin.resource("roles"), "big", namespace="ns1")
    role["metadata"]["finalizers"] = ["example.com/keep"]
    await bob.update(bob.resource("roles"), role, namespace="ns1")
    role = await admin.get(admin.resource("roles"), "big", namespace="ns1")
    role["rules"].append(READ)
    with pytest.raises(ForbiddenError):
        await bob.update(bob.resource("roles"), role, namespace="ns1")


def test_covers_and_compact_descriptions() -> None:
    """policy_comparator_test.go: stars, subresources through "*/sub", names and URL prefixes; CompactRules
    merges the verbs of one group/resource."""
    owner = [
        Rule(("*",), ("",), ("pods",)),
        Rule(("get",), ("apps",), ("*/scale",)),
        Rule(("get",), ("",), ("configmaps",), ("a",)),
        Rule(("get",), non_resource_urls=("/apis/*",)),
    ]
    assert covers(owner, [Rule(("get", "delete"), ("",), ("pods",))])[0]
    assert covers(owner, [Rule(("get",), ("apps",), ("deployments/scale",))])[0]
    assert covers(owner, [Rule(("get",), ("",), ("configmaps",), ("a",))])[0]
    assert not covers(owner, [Rule(("get",), ("",), ("configmaps",))])[0]
    assert covers(owner, [Rule(("get",), non_resource_urls=("/apis/v1",))])[0]
    ok, missing = covers(owner, [Rule(("get", "list"), ("",), ("secrets",))])
    assert not ok
    assert [compact_string(r) for r in compact(missing)] == [
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}'
    ]
