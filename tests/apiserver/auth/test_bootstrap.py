"""The bootstrap RBAC policy against upstream's golden files, and its start-up reconciliation.

Pins upstream ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy_test.go`` (TestBootstrapClusterRoles,
TestBootstrapClusterRoleBindings, TestBootstrapControllerRoles, TestBootstrapControllerRoleBindings,
TestBootstrapNamespaceRoles, TestBootstrapNamespaceRoleBindings: each policy list, sorted by name, equals its
testdata/*.yaml) and ``pkg/registry/rbac/reconciliation`` (TestComputeReconciledRole's union cases,
TestComputeUpdate's subject union) through ``storage_rbac.go``'s ensureRBACPolicy.

Golden-file provenance (each fixture's header says it): the search index holds no single v1.37 snapshot of the six
files, so controller-roles, namespace-roles and namespace-role-bindings are upstream's at 008b3652 (the newest
stored: DRA binding conditions and device-taint eviction on, no ``creationTimestamp: null``);
controller-role-bindings is upstream's derivation of those roles (one binding per role);
cluster-role-bindings is openshift/kubernetes's copy with its one carry removed; cluster-roles is the newest
stored copy (pohly/kubernetes, DRA-GA era) without ``creationTimestamp: null``. Rules that v1.35-v1.37 may have
added to system:node / system:kube-scheduler behind newer default-on gates are therefore not pinned here.
Upstream's test marshals the objects as YAML; the comparison here is of the parsed objects, with admin/edit/view's
``rules: null`` read as an empty list (kubeplane stores ``[]`` for an aggregated role before aggregation).
"""

from __future__ import annotations

import copy
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane.apiserver.auth import bootstrap, bootstrap_controllers, bootstrap_kubeplane, bootstrap_roles
from kubeplane.apiserver.auth.rbac_rules import Rule, breakdown, covers
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

TESTDATA = Path(__file__).parent / "testdata"
RBAC = "rbac.authorization.k8s.io"


def _golden(name: str) -> dict[str, Any]:
    items = yaml.safe_load((TESTDATA / name).read_text())["items"]
    out = {}
    for item in items:
        if "rules" in item and item["rules"] is None:
            item["rules"] = []
        out[f"{item['metadata'].get('namespace', '')}/{item['metadata']['name']}"] = item
    return out


NEWER_THAN_GOLDEN: dict[str, dict[str, list[dict[str, Any]]]] = {
    "cluster-roles.yaml": {
        # DRAExtendedResource (GA in v1.37): the scheduler creates and deletes pods' extended-resource claims
        "/system:kube-scheduler": [
            {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["create", "delete"]}
        ],
    },
}
"""Rules of gates newer than the golden files, appended to the object they belong to."""


def _keyed(objs: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o for o in objs}


def _flat(by_namespace: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [o for objs in by_namespace.values() for o in objs]


@pytest.mark.parametrize(
    ("golden", "policy"),
    [
        ("cluster-roles.yaml", bootstrap_roles.cluster_roles),
        ("cluster-role-bindings.yaml", bootstrap_roles.cluster_role_bindings),
        ("controller-roles.yaml", bootstrap_controllers.controller_roles),
        ("controller-role-bindings.yaml", bootstrap_controllers.controller_role_bindings),
        ("namespace-roles.yaml", lambda: _flat(bootstrap_controllers.namespace_roles())),
        ("namespace-role-bindings.yaml", lambda: _flat(bootstrap_controllers.namespace_role_bindings())),
    ],
)
def test_policy_equals_upstream_golden_file(golden: str, policy: Any) -> None:
    """TestBootstrap{ClusterRoles,ClusterRoleBindings,ControllerRoles,...}: every object, rule order included;
    cluster-roles plus the rules newer gates add (:data:`NEWER_THAN_GOLDEN`)."""
    want = _golden(golden)
    for key, rules in NEWER_THAN_GOLDEN.get(golden, {}).items():
        want[key]["rules"] = [*want[key]["rules"], *rules]
    got = _keyed(policy())
    assert sorted(got) == sorted(want)
    for key in sorted(want):
        assert got[key] == want[key], key


def test_public_api_is_upstream_plus_kubeplane() -> None:
    """The reconcile set: upstream's roles and controller roles, then system:kubeplane:kubelet-fleet."""
    names = [r["metadata"]["name"] for r in bootstrap.cluster_roles()]
    assert len(names) == len(set(names))
    assert set(names) == {
        *(k.split("/", 1)[1] for k in _golden("cluster-roles.yaml")),
        *(k.split("/", 1)[1] for k in _golden("controller-roles.yaml")),
        bootstrap_kubeplane.KUBELET_FLEET,
    }
    assert set(bootstrap.namespace_roles()) == {"kube-system", "kube-public"}
    for obj in bootstrap.cluster_roles() + bootstrap.cluster_role_bindings():
        assert obj["apiVersion"] == f"{RBAC}/v1"
        if obj["metadata"]["name"] != bootstrap_kubeplane.KUBELET_FLEET:
            assert obj["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
            assert obj["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def test_kubelet_fleet_role() -> None:
    """kubeplane's fleet identity: reads for the shared informers, impersonate for per-node writes."""
    (role,) = bootstrap_kubeplane.cluster_roles()
    (binding,) = bootstrap_kubeplane.cluster_role_bindings()
    assert role["metadata"]["labels"] == {"kubeplane.io/bootstrapping": "kubeplane-defaults"}
    assert "annotations" not in role["metadata"]
    granted = {
        (r.api_groups[0], r.resources[0], r.verbs[0]) for rule in role["rules"] for r in breakdown(Rule.of(rule))
    }
    for resource in ("pods", "nodes", "services", "endpoints", "configmaps", "persistentvolumes"):
        assert {("", resource, v) for v in ("get", "list", "watch")} <= granted
    for resource in ("resourceclaims", "resourceslices", "deviceclasses"):
        assert ("resource.k8s.io", resource, "watch") in granted
    assert ("", "users", "impersonate") in granted
    assert ("", "groups", "impersonate") in granted
    assert ("", "pods", "create") not in granted
    assert binding["subjects"] == [{"apiGroup": RBAC, "kind": "User", "name": "system:kubeplane:kubelet-fleet"}]


def test_covers_breaks_rules_down() -> None:
    """policy_comparator.go: uncovered subrules come back one (group, resource, verb) each; wildcards cover."""

    def wire_covers(owner: list[dict[str, Any]], servant: list[dict[str, Any]]) -> tuple[bool, list[dict[str, object]]]:
        ok, missing = covers([Rule.of(r) for r in owner], [Rule.of(r) for r in servant])
        return ok, [r.wire() for r in missing]

    owner = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    servant = [{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get", "watch"]}]
    ok, missing = wire_covers(owner, servant)
    assert not ok
    assert missing == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["watch"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["watch"]},
    ]
    assert wire_covers(
        [{"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]}],
        [{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]}],
    ) == (True, [])
    assert wire_covers(
        [{"nonResourceURLs": ["/api/*"], "verbs": ["get"]}], [{"nonResourceURLs": ["/api/v1"], "verbs": ["get"]}]
    ) == (True, [])


# -- reconcile ---------------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    reg = Registry(store=MemoryStore(), now=Clock(), rng=random.Random(7))
    await reg.start()
    yield reg
    await reg.stop()


def _versions(reg: Registry) -> dict[str, str]:
    out = {}
    for plural in ("clusterroles", "clusterrolebindings", "roles", "rolebindings"):
        cache = reg.cache(reg.resource(RBAC, plural))
        cache.sync()
        for key, obj in cache.objects.items():
            out[key] = obj["metadata"]["resourceVersion"]
    return out


async def test_fresh_registry_gets_the_whole_policy(registry: Registry) -> None:
    """ensureRBACPolicy on an empty store creates every object as the policy states it."""
    await bootstrap.reconcile(registry)
    roles = registry.resource(RBAC, "clusterroles")
    for want in bootstrap.cluster_roles():
        got = registry.get_cached(roles, None, want["metadata"]["name"])
        assert got is not None
        assert got["rules"] == want["rules"]
        assert got.get("aggregationRule") == want.get("aggregationRule")
        assert got["metadata"]["labels"] == want["metadata"]["labels"]
    bindings = registry.resource(RBAC, "clusterrolebindings")
    for want in bootstrap.cluster_role_bindings():
        got = registry.get_cached(bindings, None, want["metadata"]["name"])
        assert got is not None
        assert got["roleRef"] == want["roleRef"]
        assert got.get("subjects", []) == want.get("subjects", [])
    ns_roles = registry.resource(RBAC, "roles")
    for namespace, objs in bootstrap.namespace_roles().items():
        for want in objs:
            assert registry.get_cached(ns_roles, namespace, want["metadata"]["name"]) is not None
    ns_bindings = registry.resource(RBAC, "rolebindings")
    for namespace, objs in bootstrap.namespace_role_bindings().items():
        for want in objs:
            got = registry.get_cached(ns_bindings, namespace, want["metadata"]["name"])
            assert got is not None
            assert got["subjects"] == want["subjects"]


async def test_second_reconcile_writes_nothing(registry: Registry) -> None:
    """Idempotent: an object covering the policy is not written again (resourceVersions unchanged)."""
    await bootstrap.reconcile(registry)
    before = _versions(registry)
    assert len(before) == len(bootstrap.cluster_roles()) + len(bootstrap.cluster_role_bindings()) + len(
        _flat(bootstrap.namespace_roles())
    ) + len(_flat(bootstrap.namespace_role_bindings()))
    await bootstrap.reconcile(registry)
    assert _versions(registry) == before


async def test_edited_autoupdate_role_gets_missing_rules_back_and_keeps_extras(registry: Registry) -> None:
    """computeReconciledRole (union): missing rules come back as broken-down subrules appended after the user's
    own; the user's extra rule, label and annotation value stay."""
    await bootstrap.reconcile(registry)
    roles = registry.resource(RBAC, "clusterroles")
    edited = copy.deepcopy(registry.get_cached(roles, None, "system:kube-dns"))
    assert edited is not None
    extra = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}
    edited["rules"] = [{"apiGroups": [""], "resources": ["services"], "verbs": ["list"]}, extra]
    edited["metadata"]["labels"] = {"mine": "yes"}
    await registry.update(roles, None, "system:kube-dns", edited)
    await bootstrap.reconcile(registry)
    got = registry.get_cached(roles, None, "system:kube-dns")
    assert got is not None
    assert got["rules"] == [
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list"]},
        extra,
        {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["watch"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["watch"]},
    ]
    assert got["metadata"]["labels"] == {"mine": "yes", "kubernetes.io/bootstrapping": "rbac-defaults"}
    rv = got["metadata"]["resourceVersion"]
    await bootstrap.reconcile(registry)
    again = registry.get_cached(roles, None, "system:kube-dns")
    assert again is not None
    assert again["metadata"]["resourceVersion"] == rv


async def test_autoupdate_false_is_left_alone(registry: Registry) -> None:
    """Protected (annotation "false"): neither rules nor subjects are restored."""
    await bootstrap.reconcile(registry)
    roles = registry.resource(RBAC, "clusterroles")
    bindings = registry.resource(RBAC, "clusterrolebindings")
    role = copy.deepcopy(registry.get_cached(roles, None, "system:discovery"))
    assert role is not None
    role["rules"] = [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]
    role["metadata"]["annotations"] = {"rbac.authorization.kubernetes.io/autoupdate": "false"}
    await registry.update(roles, None, "system:discovery", role)
    binding = copy.deepcopy(registry.get_cached(bindings, None, "cluster-admin"))
    assert binding is not None
    binding["subjects"] = [{"apiGroup": RBAC, "kind": "User", "name": "alice"}]
    binding["metadata"]["annotations"] = {"rbac.authorization.kubernetes.io/autoupdate": "false"}
    await registry.update(bindings, None, "cluster-admin", binding)
    before = _versions(registry)
    await bootstrap.reconcile(registry)
    assert _versions(registry) == before
    got = registry.get_cached(roles, None, "system:discovery")
    assert got is not None
    assert got["rules"] == [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]


async def test_missing_subjects_are_added_and_extra_kept(registry: Registry) -> None:
    """computeReconciledRoleBinding (union): expected subjects appended after the user's own."""
    await bootstrap.reconcile(registry)
    bindings = registry.resource(RBAC, "clusterrolebindings")
    binding = copy.deepcopy(registry.get_cached(bindings, None, "system:public-info-viewer"))
    assert binding is not None
    alice = {"apiGroup": RBAC, "kind": "User", "name": "alice"}
    binding["subjects"] = [alice]
    await registry.update(bindings, None, "system:public-info-viewer", binding)
    await bootstrap.reconcile(registry)
    got = registry.get_cached(bindings, None, "system:public-info-viewer")
    assert got is not None
    assert got["subjects"] == [
        alice,
        {"apiGroup": RBAC, "kind": "Group", "name": "system:authenticated"},
        {"apiGroup": RBAC, "kind": "Group", "name": "system:unauthenticated"},
    ]


async def test_pre_aggregation_admin_rules_move_to_aggregate_role(registry: Registry) -> None:
    """primeAggregatedClusterRoles: an old admin without aggregationRule is copied to system:aggregate-to-admin
    (its custom rules kept), then admin itself gains the aggregationRule."""
    roles = registry.resource(RBAC, "clusterroles")
    custom = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}
    await registry.create(roles, None, {"metadata": {"name": "admin"}, "rules": [custom]})
    await bootstrap.reconcile(registry)
    moved = registry.get_cached(roles, None, "system:aggregate-to-admin")
    assert moved is not None
    assert moved["rules"][0] == custom
    admin = registry.get_cached(roles, None, "admin")
    assert admin is not None
    assert admin["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]
    }


async def test_binding_with_another_role_ref_is_recreated(registry: Registry) -> None:
    """computeReconciledRoleBinding: roleRef is immutable, so a differing one means ReconcileRecreate (delete,
    then create the expected binding)."""
    bindings = registry.resource(RBAC, "clusterrolebindings")
    await registry.create(
        bindings,
        None,
        {
            "metadata": {"name": "system:kube-dns"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "other", "namespace": "default"}],
        },
    )
    await bootstrap.reconcile(registry)
    got = registry.get_cached(bindings, None, "system:kube-dns")
    assert got is not None
    assert got["roleRef"] == {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:kube-dns"}
    assert got["subjects"] == [{"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}]


async def test_the_fleet_may_act_as_its_nodes_but_never_as_system_masters(registry: Registry) -> None:
    """kubeplane's fleet role: impersonating any user (a node's name) and the nodes' groups, not system:masters."""
    from kubeplane.apiserver.auth.authorizer import Attributes, Decision
    from kubeplane.apiserver.auth.rbac import RBACAuthorizer
    from kubeplane.apiserver.tokens import UserInfo

    await bootstrap.reconcile(registry)
    authz = RBACAuthorizer(registry)
    fleet = UserInfo("system:kubeplane:kubelet-fleet", groups=("system:authenticated",))

    def impersonate(resource: str, name: str) -> Decision:
        return authz.authorize(Attributes(fleet, "impersonate", resource=resource, name=name))[0]

    assert impersonate("users", "system:node:n1") is Decision.ALLOW
    assert impersonate("groups", "system:nodes") is Decision.ALLOW
    assert impersonate("groups", "system:masters") is Decision.NO_OPINION
