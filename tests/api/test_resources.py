"""Pins the resource table against kube-apiserver and kubectl: storage prefixes, scope, names, lookups."""

from __future__ import annotations

import pytest

from kubeplane.api import meta
from kubeplane.api.meta import NameRule
from kubeplane.api.resources import (
    BUILTIN_RESOURCES,
    DuplicateResourceError,
    ResourceInfo,
    ResourceTable,
    Subresource,
    default_table,
)

TABLE = default_table()


# (group, plural) -> (kind, namespaced, storage prefix, short names); prefixes from kube-apiserver's
# SpecialDefaultResourcePrefixes, short names as `kubectl api-resources` shows them.
EXPECTED = {
    ("", "namespaces"): ("Namespace", False, "namespaces", ("ns",)),
    ("", "nodes"): ("Node", False, "minions", ("no",)),
    ("", "pods"): ("Pod", True, "pods", ("po",)),
    ("", "events"): ("Event", True, "events", ("ev",)),
    ("", "configmaps"): ("ConfigMap", True, "configmaps", ("cm",)),
    ("", "secrets"): ("Secret", True, "secrets", ()),
    ("", "services"): ("Service", True, "services/specs", ("svc",)),
    ("", "serviceaccounts"): ("ServiceAccount", True, "serviceaccounts", ("sa",)),
    ("", "endpoints"): ("Endpoints", True, "services/endpoints", ("ep",)),
    ("", "persistentvolumes"): ("PersistentVolume", False, "persistentvolumes", ("pv",)),
    ("", "persistentvolumeclaims"): ("PersistentVolumeClaim", True, "persistentvolumeclaims", ("pvc",)),
    ("", "replicationcontrollers"): ("ReplicationController", True, "controllers", ("rc",)),
    ("apps", "deployments"): ("Deployment", True, "deployments", ("deploy",)),
    ("apps", "replicasets"): ("ReplicaSet", True, "replicasets", ("rs",)),
    ("apps", "daemonsets"): ("DaemonSet", True, "daemonsets", ("ds",)),
    ("apps", "statefulsets"): ("StatefulSet", True, "statefulsets", ("sts",)),
    ("apps", "controllerrevisions"): ("ControllerRevision", True, "controllerrevisions", ()),
    ("batch", "jobs"): ("Job", True, "jobs", ()),
    ("batch", "cronjobs"): ("CronJob", True, "cronjobs", ("cj",)),
    ("scheduling.k8s.io", "workloads"): ("Workload", True, "workloads", ()),
    ("scheduling.k8s.io", "podgroups"): ("PodGroup", True, "podgroups", ()),
    ("scheduling.k8s.io", "compositepodgroups"): ("CompositePodGroup", True, "compositepodgroups", ()),
    ("coordination.k8s.io", "leases"): ("Lease", True, "leases", ()),
    ("discovery.k8s.io", "endpointslices"): ("EndpointSlice", True, "endpointslices", ()),
    ("scheduling.k8s.io", "priorityclasses"): ("PriorityClass", False, "priorityclasses", ("pc",)),
    ("policy", "poddisruptionbudgets"): ("PodDisruptionBudget", True, "poddisruptionbudgets", ("pdb",)),
    ("storage.k8s.io", "storageclasses"): ("StorageClass", False, "storageclasses", ("sc",)),
    ("storage.k8s.io", "csinodes"): ("CSINode", False, "csinodes", ()),
    ("storage.k8s.io", "csidrivers"): ("CSIDriver", False, "csidrivers", ()),
    ("storage.k8s.io", "csistoragecapacities"): ("CSIStorageCapacity", True, "csistoragecapacities", ()),
    ("storage.k8s.io", "volumeattachments"): ("VolumeAttachment", False, "volumeattachments", ()),
    ("resource.k8s.io", "deviceclasses"): ("DeviceClass", False, "deviceclasses", ()),
    ("resource.k8s.io", "resourceclaims"): ("ResourceClaim", True, "resourceclaims", ()),
    ("resource.k8s.io", "resourceclaimtemplates"): ("ResourceClaimTemplate", True, "resourceclaimtemplates", ()),
    ("resource.k8s.io", "resourceslices"): ("ResourceSlice", False, "resourceslices", ()),
    ("rbac.authorization.k8s.io", "roles"): ("Role", True, "roles", ()),
    ("rbac.authorization.k8s.io", "clusterroles"): ("ClusterRole", False, "clusterroles", ()),
    ("rbac.authorization.k8s.io", "rolebindings"): ("RoleBinding", True, "rolebindings", ()),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): (
        "ClusterRoleBinding",
        False,
        "clusterrolebindings",
        (),
    ),
    ("events.k8s.io", "events"): ("Event", True, "events", ("ev",)),
    # pkg/registry/networking/{ipaddress,servicecidr}/storage: /registry/ipaddresses/<ip>, /registry/servicecidrs/<name>
    ("networking.k8s.io", "ipaddresses"): ("IPAddress", False, "ipaddresses", ("ip",)),
    ("networking.k8s.io", "servicecidrs"): ("ServiceCIDR", False, "servicecidrs", ()),
    # kube-apiserver's etcd keys for these: /registry/apiextensions.k8s.io/customresourcedefinitions/<name>,
    # /registry/apiregistration.k8s.io/apiservices/<name>
    ("apiextensions.k8s.io", "customresourcedefinitions"): (
        "CustomResourceDefinition",
        False,
        "apiextensions.k8s.io/customresourcedefinitions",
        ("crd", "crds"),
    ),
    ("apiregistration.k8s.io", "apiservices"): ("APIService", False, "apiregistration.k8s.io/apiservices", ()),
    # create-only reviews (never stored; the prefix is unused)
    ("authentication.k8s.io", "tokenreviews"): ("TokenReview", False, "tokenreviews", ()),
    ("authentication.k8s.io", "selfsubjectreviews"): ("SelfSubjectReview", False, "selfsubjectreviews", ()),
    ("authorization.k8s.io", "subjectaccessreviews"): ("SubjectAccessReview", False, "subjectaccessreviews", ()),
    ("authorization.k8s.io", "selfsubjectaccessreviews"): (
        "SelfSubjectAccessReview",
        False,
        "selfsubjectaccessreviews",
        (),
    ),
    ("authorization.k8s.io", "localsubjectaccessreviews"): (
        "LocalSubjectAccessReview",
        True,
        "localsubjectaccessreviews",
        (),
    ),
    ("authorization.k8s.io", "selfsubjectrulesreviews"): (
        "SelfSubjectRulesReview",
        False,
        "selfsubjectrulesreviews",
        (),
    ),
}


@pytest.mark.parametrize(("gr", "expected"), list(EXPECTED.items()), ids=[f"{g}/{p}" for g, p in EXPECTED])
def test_builtin_resource_matches_upstream(gr: tuple[str, str], expected: tuple[object, ...]) -> None:
    info = TABLE.get(gr[0], "v1alpha3" if gr[0] == "scheduling.k8s.io" and gr[1] != "priorityclasses" else "v1", gr[1])
    assert info is not None
    assert (info.kind, info.namespaced, info.storage_prefix, info.short_names) == expected
    assert info.singular == info.kind.lower()


def test_table_covers_exactly_the_expected_resources() -> None:
    assert {(r.group, r.plural) for r in TABLE} == set(EXPECTED)
    assert len(TABLE) == len(BUILTIN_RESOURCES) == len(EXPECTED) + 2  # workloads, podgroups twice


@pytest.mark.parametrize(
    ("plural", "group", "categories"),
    [
        ("pods", "", ("all",)),
        ("services", "", ("all",)),
        ("replicationcontrollers", "", ("all",)),
        ("deployments", "apps", ("all",)),
        ("statefulsets", "apps", ("all",)),
        ("configmaps", "", ()),
        ("nodes", "", ()),
        ("events", "", ()),
    ],
    ids=str,
)
def test_category_all_as_kubectl_get_all(plural: str, group: str, categories: tuple[str, ...]) -> None:
    info = TABLE.get(group, "v1", plural)
    assert info is not None
    assert info.categories == categories


@pytest.mark.parametrize(
    ("plural", "group", "subresources"),
    [
        pytest.param("pods", "", {"status", "binding", "eviction", "log", "exec", "ephemeralcontainers"}, id="pods"),
        pytest.param("deployments", "apps", {"status", "scale"}, id="deployments-scale"),
        pytest.param("replicasets", "apps", {"status", "scale"}, id="replicasets-scale"),
        pytest.param("statefulsets", "apps", {"status", "scale"}, id="statefulsets-scale"),
        pytest.param("replicationcontrollers", "", {"status", "scale"}, id="rc-scale"),
        pytest.param("daemonsets", "apps", {"status"}, id="daemonsets-no-scale"),
        pytest.param("nodes", "", {"status", "proxy"}, id="nodes"),
        pytest.param("namespaces", "", {"status", "finalize"}, id="namespaces-finalize"),
        pytest.param("poddisruptionbudgets", "policy", {"status"}, id="pdb-status"),
        pytest.param("leases", "coordination.k8s.io", set(), id="leases-none"),
    ],
)
def test_subresources(plural: str, group: str, subresources: set[str]) -> None:
    info = TABLE.get(group, "v1", plural)
    assert info is not None
    names = {s.name for s in info.subresources}
    assert subresources <= names
    if not subresources:
        assert names == set()


def test_subresource_kinds() -> None:
    pods = TABLE.get("", "v1", "pods")
    deploy = TABLE.get("apps", "v1", "deployments")
    assert pods is not None
    assert deploy is not None
    eviction = pods.subresource("eviction")
    binding = pods.subresource("binding")
    scale = deploy.subresource("scale")
    assert eviction is not None
    assert (eviction.group, eviction.kind, eviction.verbs) == ("policy", "Eviction", ("create",))
    assert binding is not None
    assert (binding.group, binding.kind) == ("", "Binding")
    assert scale is not None
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    assert pods.subresource("nope") is None


@pytest.mark.parametrize(
    ("plural", "group", "rule"),
    [
        pytest.param("namespaces", "", NameRule.DNS_LABEL, id="namespace-ValidateNamespaceName-label"),
        pytest.param("services", "", NameRule.DNS1035_LABEL, id="service-ValidateServiceName-1035"),
        pytest.param("pods", "", NameRule.DNS_SUBDOMAIN, id="pod-subdomain"),
        pytest.param("persistentvolumes", "", NameRule.DNS_SUBDOMAIN, id="pv-subdomain"),
        pytest.param("clusterroles", "rbac.authorization.k8s.io", NameRule.RBAC, id="rbac-path-segment"),
        pytest.param("rolebindings", "rbac.authorization.k8s.io", NameRule.RBAC, id="rbac-binding-path-segment"),
    ],
)
def test_name_rule_per_kind(plural: str, group: str, rule: NameRule) -> None:
    info = TABLE.get(group, "v1", plural)
    assert info is not None
    assert info.name_rule is rule


def test_namespaces_have_no_deletecollection() -> None:
    ns = TABLE.get("", "v1", "namespaces")
    assert ns is not None
    assert "deletecollection" not in ns.verbs
    assert "watch" in ns.verbs


@pytest.mark.parametrize(
    ("arg", "group", "plural"),
    [
        pytest.param("po", "", "pods", id="short-po"),
        pytest.param("pod", "", "pods", id="singular"),
        pytest.param("pods", "", "pods", id="plural"),
        pytest.param("Pod", "", "pods", id="kind"),
        pytest.param("PODS", "", "pods", id="case-insensitive"),
        pytest.param("no", "", "nodes", id="short-no"),
        pytest.param("deploy", "apps", "deployments", id="short-deploy"),
        pytest.param("deployments.apps", "apps", "deployments", id="plural-dot-group"),
        pytest.param("deployments.v1.apps", "apps", "deployments", id="plural-version-group"),
        pytest.param("ev", "", "events", id="ev-prefers-core"),
        pytest.param("events", "", "events", id="events-prefers-core"),
        pytest.param("events.events.k8s.io", "events.k8s.io", "events", id="events-api-group-qualified"),
        pytest.param("pc", "scheduling.k8s.io", "priorityclasses", id="short-pc"),
        pytest.param("pdb", "policy", "poddisruptionbudgets", id="short-pdb"),
        pytest.param("sc", "storage.k8s.io", "storageclasses", id="short-sc"),
        pytest.param("sts", "apps", "statefulsets", id="short-sts"),
        pytest.param("clusterrolebinding", "rbac.authorization.k8s.io", "clusterrolebindings", id="rbac-singular"),
        pytest.param("leases.coordination.k8s.io", "coordination.k8s.io", "leases", id="dotted-group"),
    ],
)
def test_resolve_like_kubectl(arg: str, group: str, plural: str) -> None:
    info = TABLE.resolve(arg)
    assert info is not None
    assert (info.group, info.plural) == (group, plural)


@pytest.mark.parametrize("arg", ["nope", "pods.nope", "deployments.v2.apps", "pods.apps", ""])
def test_resolve_unknown(arg: str) -> None:
    assert TABLE.resolve(arg) is None


def test_lookups_by_kind_and_short_name() -> None:
    assert TABLE.by_short_name("svc") is TABLE.get("", "v1", "services")
    assert TABLE.by_short_name("pods") is None  # a plural is not a short name
    assert TABLE.by_kind("Event") is TABLE.get("", "v1", "events")
    assert TABLE.by_kind("Event", group="events.k8s.io") is TABLE.get("events.k8s.io", "v1", "events")
    assert TABLE.by_kind("Deployment", group="apps", version="v2") is None
    assert TABLE.get("apps", "v1", "pods") is None


def test_api_version_and_list_kind() -> None:
    pods = TABLE.resolve("pods")
    deploy = TABLE.resolve("deploy")
    assert pods is not None
    assert deploy is not None
    assert (pods.api_version, pods.list_kind, pods.group_resource) == ("v1", "PodList", "pods")
    assert (deploy.api_version, deploy.group_resource) == ("apps/v1", "deployments.apps")


def test_storage_keys_through_the_table() -> None:
    nodes = TABLE.resolve("nodes")
    svc = TABLE.resolve("svc")
    core_ev = TABLE.get("", "v1", "events")
    new_ev = TABLE.get("events.k8s.io", "v1", "events")
    assert nodes is not None
    assert svc is not None
    assert core_ev is not None
    assert new_ev is not None
    assert nodes.key("node-1") == "/registry/minions/node-1"
    assert svc.key("kubernetes", "default") == "/registry/services/specs/default/kubernetes"
    assert svc.collection_key("default") == "/registry/services/specs/default/"
    assert svc.collection_key() == "/registry/services/specs/"
    assert core_ev.key("e", "ns") == new_ev.key("e", "ns")  # cohabitating: both APIs see the same objects
    with pytest.raises(meta.InvalidKeyError, match="Namespace parameter required"):
        svc.key("x")
    with pytest.raises(meta.InvalidKeyError, match="cluster-scoped"):
        nodes.key("x", "default")
    with pytest.raises(meta.InvalidKeyError, match="cluster-scoped"):
        nodes.collection_key("default")


def test_registering_another_kind_is_one_entry() -> None:
    table = default_table()
    widgets = ResourceInfo(
        "example.com", "v1", "Widget", "widgets", namespaced=True, storage_prefix="widgets", categories=("all",)
    )
    table.register(widgets)
    assert table.resolve("widgets.example.com") is widgets
    assert table.by_kind("widget") is widgets
    assert len(default_table()) == len(BUILTIN_RESOURCES)  # registrations do not leak between tables
    with pytest.raises(DuplicateResourceError, match=r"widgets\.example\.com v1"):
        table.register(widgets)


def test_empty_table() -> None:
    t = ResourceTable()
    assert len(t) == 0
    assert t.resolve("pods") is None


def test_unregister_removes_every_lookup_and_moves_the_generation() -> None:
    """CRDs add and remove resources at runtime (apiserver/crds.py): discovery rebuilds on the generation."""
    table = ResourceTable(TABLE)
    info = ResourceInfo(
        "example.com",
        "v1",
        "Widget",
        "widgets",
        namespaced=True,
        storage_prefix="example.com/widgets",
        short_names=("wd",),
    )
    before = table.generation
    table.register(info)
    assert table.resolve("wd") is info
    assert table.generation == before + 1
    assert table.unregister("example.com", "v1", "widgets") is info
    assert table.resolve("wd") is None
    assert table.resolve("widget") is None
    assert table.get("example.com", "v1", "widgets") is None
    assert table.generation == before + 2
    assert table.unregister("example.com", "v1", "widgets") is None


def test_scheduling_workloads_and_podgroups_served_at_v1beta1_and_v1alpha3_over_one_prefix() -> None:
    """v1.37 serves Workload and PodGroup at v1beta1 (k8s.io/api scheduling/v1beta1/register.go) and v1alpha3,
    CompositePodGroup at v1alpha3 only; the versions of a resource share its etcd prefix (one storage)."""
    versions = {
        plural: [r.version for r in TABLE if (r.group, r.plural) == ("scheduling.k8s.io", plural)]
        for plural in ("workloads", "podgroups", "compositepodgroups", "priorityclasses")
    }
    assert versions == {
        "workloads": ["v1beta1", "v1alpha3"],
        "podgroups": ["v1beta1", "v1alpha3"],
        "compositepodgroups": ["v1alpha3"],
        "priorityclasses": ["v1"],
    }
    for plural in ("workloads", "podgroups"):
        beta, alpha = (TABLE.get("scheduling.k8s.io", v, plural) for v in ("v1beta1", "v1alpha3"))
        assert beta is not None
        assert alpha is not None
        assert beta.storage_prefix == alpha.storage_prefix == plural
        assert (beta.kind, beta.namespaced, beta.short_names) == (alpha.kind, alpha.namespaced, alpha.short_names)
    status = TABLE.get("scheduling.k8s.io", "v1beta1", "podgroups")
    assert status is not None
    assert status.subresource("status") == Subresource("status", "PodGroup", "scheduling.k8s.io", "v1beta1")


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("podgroups", "v1beta1"),
        ("PodGroup", "v1beta1"),
        ("podgroups.scheduling.k8s.io", "v1beta1"),
        ("podgroups.v1alpha3.scheduling.k8s.io", "v1alpha3"),
        ("workloads", "v1beta1"),
        ("workloads.v1alpha3.scheduling.k8s.io", "v1alpha3"),
        ("compositepodgroups", "v1alpha3"),
    ],
)
def test_unqualified_scheduling_names_prefer_v1beta1(name: str, version: str) -> None:
    """kubectl's RESTMapper prefers the earlier version in discovery (upstream's priority v1beta1 before
    v1alpha3); ``plural.version.group`` picks a version."""
    info = TABLE.resolve(name)
    assert info is not None
    assert (info.group, info.version) == ("scheduling.k8s.io", version)
