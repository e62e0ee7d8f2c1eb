"""The resource table: what kube-apiserver serves, and where it stores each resource.

One :class:`ResourceInfo` per (group, version, plural) holds everything the API server, discovery, the client
and kubectl-style name resolution need: kind, scope, short names, categories, subresources, verbs, the
``metadata.name`` rule, and the etcd key prefix. Prefixes are kube-apiserver's: the resource name, except the
historical ``SpecialDefaultResourcePrefixes`` (nodes under ``minions``, services under ``services/specs``,
endpoints under ``services/endpoints``, replication controllers under ``controllers``). Resources that
upstream stores together ("cohabitating": core/v1 and events.k8s.io/v1 events), and the versions of one
resource (scheduling.k8s.io v1beta1 and v1alpha3 PodGroups), share one prefix, so all see the same objects.

Resolution order
    A short name, kind or plural can belong to more than one group (``ev``, ``Event``, ``events``). Lookups
    without a group return the first registered match, and :data:`BUILTIN_RESOURCES` lists the legacy core
    group first, which is kubectl's preference. Name a group (``events.events.k8s.io``) to pick another.

Adding a kind is one :class:`ResourceInfo`: append it to :data:`BUILTIN_RESOURCES` or
:meth:`ResourceTable.register` it; the table refuses a second entry for the same group/version/plural.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final
from urllib.parse import quote

from kubeplane.api import meta
from kubeplane.api.meta import NameRule

__all__ = [
    "BUILTIN_RESOURCES",
    "CREATE_ONLY_VERBS",
    "STANDARD_VERBS",
    "DuplicateResourceError",
    "ResourceInfo",
    "ResourceTable",
    "Subresource",
    "default_table",
]

STANDARD_VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_STATUS_VERBS: Final = ("get", "patch", "update")
CREATE_ONLY_VERBS: Final = ("create",)
"""The verbs of kinds that are answered rather than stored (TokenReview, SelfSubjectReview, SubjectAccessReview)."""


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource as discovery lists it; ``kind`` is what its endpoint accepts or returns."""

    name: str
    kind: str
    group: str = ""
    version: str = "v1"
    verbs: tuple[str, ...] = _STATUS_VERBS


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One served resource at one version. ``singular`` is the lower-cased kind, as discovery reports it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    storage_prefix: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    name_rule: NameRule = NameRule.DNS_SUBDOMAIN

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def api_version(self) -> str:
        """``v1`` for the legacy core group, ``<group>/<version>`` otherwise (the objects' ``apiVersion``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def group_resource(self) -> str:
        """``plural.group`` (just ``plural`` for core), the form kubectl and RBAC messages use."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)

    def key(self, name: str, namespace: str | None = None) -> str:
        """The storage key; namespaced resources need ``namespace``, cluster-scoped ones refuse it."""
        if not self.namespaced and namespace:
            raise meta.InvalidKeyError(f"{self.group_resource} is cluster-scoped: namespace {namespace!r} given")
        return meta.object_key(self.storage_prefix, name, namespace=(namespace or "") if self.namespaced else None)

    def rest_path(self, namespace: str | None = None, name: str = "", subresource: str | None = None) -> str:
        """The request path of an object, its collection or a subresource (``/api/v1/namespaces/ns/pods/p``):
        what the HTTP client requests and what the in-process transport names in its 404/405 messages."""
        parts = [f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    def collection_key(self, namespace: str | None = None) -> str:
        """Prefix for listing or watching one namespace (namespaced only) or all objects; ends in ``/``."""
        if not self.namespaced and namespace:
            raise meta.InvalidKeyError(f"{self.group_resource} is cluster-scoped: namespace {namespace!r} given")
        return meta.collection_prefix(self.storage_prefix, namespace=namespace or None)


class DuplicateResourceError(ValueError):
    """A second registration of the same group/version/plural."""


class ResourceTable:
    """Resources by (group, version, plural), with kubectl-style lookups; registration order is preference."""

    __slots__ = ("_by_gvr", "_by_kind", "_by_name", "_order", "generation")

    def __init__(self, resources: Iterable[ResourceInfo] = ()) -> None:
        self.generation = 0
        """Counts registrations and removals: what serves documents built from the table (discovery, OpenAPI)
        rebuilds them when it moves (CustomResourceDefinitions change the table at runtime)."""
        self._order: list[ResourceInfo] = []
        self._by_gvr: dict[tuple[str, str, str], ResourceInfo] = {}
        self._by_kind: dict[str, list[ResourceInfo]] = {}
        self._by_name: dict[str, list[ResourceInfo]] = {}  # plural, singular and short names, lower-cased
        for r in resources:
            self.register(r)

    def register(self, info: ResourceInfo) -> None:
        """Add ``info``; raises :class:`DuplicateResourceError` if its group/version/plural is taken."""
        gvr = (info.group, info.version, info.plural)
        if gvr in self._by_gvr:
            raise DuplicateResourceError(f"resource {info.group_resource} {info.version} is already registered")
        self._by_gvr[gvr] = info
        self._order.append(info)
        self._by_kind.setdefault(info.kind.lower(), []).append(info)
        for n in dict.fromkeys((info.plural, info.singular, *info.short_names)):
            self._by_name.setdefault(n.lower(), []).append(info)
        self.generation += 1

    def unregister(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """Remove a registration (a CustomResourceDefinition's version that went away); the removed entry."""
        info = self._by_gvr.pop((group, version, plural), None)
        if info is None:
            return None
        self._order.remove(info)
        for index in (self._by_kind, self._by_name):
            for key in [k for k, infos in index.items() if info in infos]:
                index[key] = [i for i in index[key] if i is not info]
                if not index[key]:
                    del index[key]
        self.generation += 1
        return info

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """Exact lookup, as the API server routes ``/apis/<group>/<version>/<plural>``."""
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, kind: str, *, group: str | None = None, version: str | None = None) -> ResourceInfo | None:
        """First resource of ``kind`` (case-insensitive), optionally within a group and version."""
        return _first(self._by_kind.get(kind.lower(), ()), group=group, version=version)

    def by_short_name(self, short: str) -> ResourceInfo | None:
        """First resource with the short name ``short`` (``po``, ``deploy``, ...)."""
        return next((r for r in self._by_name.get(short.lower(), ()) if short.lower() in r.short_names), None)

    def resolve(self, name: str) -> ResourceInfo | None:
        """Resolve a kubectl resource argument: plural, singular, short name or kind, optionally qualified.

        ``deployments``, ``deploy``, ``Deployment``, ``deployments.apps``, ``deployments.v1.apps`` and
        ``events.events.k8s.io`` all work; an unqualified name prefers the earliest registered group.
        """
        plain = self._resolve_plain(name, group=None, version=None)
        if plain is not None:
            return plain
        head, _, rest = name.partition(".")
        if not rest:
            return None
        version, _, group = rest.partition(".")
        if group:  # plural.version.group
            found = self._resolve_plain(head, group=group, version=version)
            if found is not None:
                return found
        return self._resolve_plain(head, group=rest, version=None)  # plural.group

    def _resolve_plain(self, name: str, *, group: str | None, version: str | None) -> ResourceInfo | None:
        low = name.lower()
        return _first(self._by_name.get(low, ()), group=group, version=version) or _first(
            self._by_kind.get(low, ()), group=group, version=version
        )


def _first(candidates: Iterable[ResourceInfo], *, group: str | None, version: str | None) -> ResourceInfo | None:
    for r in candidates:
        if (group is None or r.group == group) and (version is None or r.version == version):
            return r
    return None


def default_table() -> ResourceTable:
    """A fresh table of :data:`BUILTIN_RESOURCES` (each caller gets its own, so registrations never leak)."""
    return ResourceTable(BUILTIN_RESOURCES)


_ALL: Final = ("all",)
_SCALE: Final = Subresource("scale", "Scale", group="autoscaling")
_PROXY_VERBS: Final = ("create", "delete", "get", "patch", "update")


def _status(kind: str, group: str = "", version: str = "v1") -> Subresource:
    return Subresource("status", kind, group=group, version=version)


BUILTIN_RESOURCES: Final[tuple[ResourceInfo, ...]] = (
    # --- core/v1 (legacy group first: kubectl prefers it for ambiguous names) ---
    ResourceInfo(
        "",
        "v1",
        "Namespace",
        "namespaces",
        namespaced=False,
        storage_prefix="namespaces",
        short_names=("ns",),
        subresources=(Subresource("finalize", "Namespace", verbs=("update",)), _status("Namespace")),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        name_rule=NameRule.DNS_LABEL,
    ),
    ResourceInfo(
        "",
        "v1",
        "Node",
        "nodes",
        namespaced=False,
        storage_prefix="minions",
        short_names=("no",),
        subresources=(Subresource("proxy", "NodeProxyOptions", verbs=_PROXY_VERBS), _status("Node")),
    ),
    ResourceInfo(
        "",
        "v1",
        "Pod",
        "pods",
        namespaced=True,
        storage_prefix="pods",
        short_names=("po",),
        categories=_ALL,
        subresources=(
            Subresource("attach", "PodAttachOptions", verbs=("create", "get")),
            Subresource("binding", "Binding", verbs=("create",)),
            Subresource("ephemeralcontainers", "Pod"),
            Subresource("eviction", "Eviction", group="policy", verbs=("create",)),
            Subresource("exec", "PodExecOptions", verbs=("create", "get")),
            Subresource("log", "Pod", verbs=("get",)),
            Subresource("portforward", "PodPortForwardOptions", verbs=("create", "get")),
            Subresource("proxy", "PodProxyOptions", verbs=_PROXY_VERBS),
            Subresource("resize", "Pod"),
            _status("Pod"),
        ),
    ),
    ResourceInfo("", "v1", "Event", "events", namespaced=True, storage_prefix="events", short_names=("ev",)),
    ResourceInfo(
        "", "v1", "ConfigMap", "configmaps", namespaced=True, storage_prefix="configmaps", short_names=("cm",)
    ),
    ResourceInfo("", "v1", "Secret", "secrets", namespaced=True, storage_prefix="secrets"),
    ResourceInfo(
        "",
        "v1",
        "Service",
        "services",
        namespaced=True,
        storage_prefix="services/specs",
        short_names=("svc",),
        categories=_ALL,
        subresources=(Subresource("proxy", "ServiceProxyOptions", verbs=_PROXY_VERBS), _status("Service")),
        name_rule=NameRule.DNS1035_LABEL,
    ),
    ResourceInfo(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        namespaced=True,
        storage_prefix="serviceaccounts",
        short_names=("sa",),
        subresources=(Subresource("token", "TokenRequest", group="authentication.k8s.io", verbs=("create",)),),
    ),
    ResourceInfo(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        namespaced=True,
        storage_prefix="services/endpoints",
        short_names=("ep",),
    ),
    ResourceInfo(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        namespaced=False,
        storage_prefix="persistentvolumes",
        short_names=("pv",),
        subresources=(_status("PersistentVolume"),),
    ),
    ResourceInfo(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        namespaced=True,
        storage_prefix="persistentvolumeclaims",
        short_names=("pvc",),
        subresources=(_status("PersistentVolumeClaim"),),
    ),
    ResourceInfo(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        namespaced=True,
        storage_prefix="controllers",
        short_names=("rc",),
        categories=_ALL,
        subresources=(_SCALE, _status("ReplicationController")),
    ),
    # --- apps/v1 ---
    ResourceInfo(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        namespaced=True,
        storage_prefix="deployments",
        short_names=("deploy",),
        categories=_ALL,
        subresources=(_SCALE, _status("Deployment", "apps")),
    ),
    ResourceInfo(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        namespaced=True,
        storage_prefix="replicasets",
        short_names=("rs",),
        categories=_ALL,
        subresources=(_SCALE, _status("ReplicaSet", "apps")),
    ),
    ResourceInfo(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        namespaced=True,
        storage_prefix="daemonsets",
        short_names=("ds",),
        categories=_ALL,
        subresources=(_status("DaemonSet", "apps"),),
    ),
    ResourceInfo(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        namespaced=True,
        storage_prefix="statefulsets",
        short_names=("sts",),
        categories=_ALL,
        subresources=(_SCALE, _status("StatefulSet", "apps")),
    ),
    ResourceInfo(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        namespaced=True,
        storage_prefix="controllerrevisions",
    ),
    # --- batch/v1 ---
    ResourceInfo(
        "batch",
        "v1",
        "Job",
        "jobs",
        namespaced=True,
        storage_prefix="jobs",
        categories=_ALL,
        subresources=(_status("Job", "batch"),),
    ),
    ResourceInfo(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        namespaced=True,
        storage_prefix="cronjobs",
        short_names=("cj",),
        categories=_ALL,
        subresources=(_status("CronJob", "batch"),),
    ),
    # --- other groups ---
    ResourceInfo("coordination.k8s.io", "v1", "Lease", "leases", namespaced=True, storage_prefix="leases"),
    ResourceInfo(
        "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", namespaced=True, storage_prefix="endpointslices"
    ),
    ResourceInfo(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        namespaced=False,
        storage_prefix="priorityclasses",
        short_names=("pc",),
    ),
    # scheduling.k8s.io workload-aware scheduling (upstream pkg/registry/scheduling/{workload,podgroup,
    # compositepodgroup}/storage: no short names; Workload has no status, the other two a status subresource).
    # Workload and PodGroup are served at v1beta1 and v1alpha3 over one storage (stored at v1alpha3:
    # apiserver/conversion.py STORAGE_VERSIONS); v1beta1 comes first, as upstream's version priority (v1,
    # v1beta1, v1alpha3) orders discovery and so kubectl's choice for ``kubectl get podgroups``.
    ResourceInfo("scheduling.k8s.io", "v1beta1", "Workload", "workloads", namespaced=True, storage_prefix="workloads"),
    ResourceInfo(
        "scheduling.k8s.io",
        "v1beta1",
        "PodGroup",
        "podgroups",
        namespaced=True,
        storage_prefix="podgroups",
        subresources=(_status("PodGroup", "scheduling.k8s.io", "v1beta1"),),
    ),
    ResourceInfo("scheduling.k8s.io", "v1alpha3", "Workload", "workloads", namespaced=True, storage_prefix="workloads"),
    ResourceInfo(
        "scheduling.k8s.io",
        "v1alpha3",
        "PodGroup",
        "podgroups",
        namespaced=True,
        storage_prefix="podgroups",
        subresources=(_status("PodGroup", "scheduling.k8s.io", "v1alpha3"),),
    ),
    ResourceInfo(
        "scheduling.k8s.io",
        "v1alpha3",
        "CompositePodGroup",
        "compositepodgroups",
        namespaced=True,
        storage_prefix="compositepodgroups",
        subresources=(_status("CompositePodGroup", "scheduling.k8s.io", "v1alpha3"),),
    ),
    ResourceInfo(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        namespaced=True,
        storage_prefix="poddisruptionbudgets",
        short_names=("pdb",),
        subresources=(_status("PodDisruptionBudget", "policy"),),
    ),
    ResourceInfo(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        namespaced=False,
        storage_prefix="storageclasses",
        short_names=("sc",),
    ),
    ResourceInfo("storage.k8s.io", "v1", "CSINode", "csinodes", namespaced=False, storage_prefix="csinodes"),
    ResourceInfo("storage.k8s.io", "v1", "CSIDriver", "csidrivers", namespaced=False, storage_prefix="csidrivers"),
    ResourceInfo(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        namespaced=True,
        storage_prefix="csistoragecapacities",
    ),
    ResourceInfo(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        namespaced=False,
        storage_prefix="volumeattachments",
        subresources=(_status("VolumeAttachment", "storage.k8s.io"),),
    ),
    ResourceInfo(
        "resource.k8s.io", "v1", "DeviceClass", "deviceclasses", namespaced=False, storage_prefix="deviceclasses"
    ),
    ResourceInfo(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        namespaced=True,
        storage_prefix="resourceclaims",
        subresources=(_status("ResourceClaim", "resource.k8s.io"),),
    ),
    ResourceInfo(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        namespaced=True,
        storage_prefix="resourceclaimtemplates",
    ),
    ResourceInfo(
        "resource.k8s.io", "v1", "ResourceSlice", "resourceslices", namespaced=False, storage_prefix="resourceslices"
    ),
    ResourceInfo(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        namespaced=True,
        storage_prefix="roles",
        name_rule=NameRule.RBAC,
    ),
    ResourceInfo(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        namespaced=False,
        storage_prefix="clusterroles",
        name_rule=NameRule.RBAC,
    ),
    ResourceInfo(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        namespaced=True,
        storage_prefix="rolebindings",
        name_rule=NameRule.RBAC,
    ),
    ResourceInfo(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        namespaced=False,
        storage_prefix="clusterrolebindings",
        name_rule=NameRule.RBAC,
    ),
    # --- networking.k8s.io/v1 service IP objects (apiserver/servicecidrs.py; IPAddresses are what the ClusterIP
    # allocator writes, apiserver/ipallocator.py, under the same prefix) ---
    ResourceInfo(
        "networking.k8s.io",
        "v1",
        "IPAddress",
        "ipaddresses",
        namespaced=False,
        storage_prefix="ipaddresses",
        short_names=("ip",),
        name_rule=NameRule.IP_ADDRESS,
    ),
    ResourceInfo(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "servicecidrs",
        namespaced=False,
        storage_prefix="servicecidrs",
        subresources=(_status("ServiceCIDR", "networking.k8s.io"),),
    ),
    # --- apiextensions.k8s.io and apiregistration.k8s.io (served, not proxied: see apiserver/crds.py) ---
    ResourceInfo(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        namespaced=False,
        storage_prefix="apiextensions.k8s.io/customresourcedefinitions",
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=(_status("CustomResourceDefinition", "apiextensions.k8s.io"),),
    ),
    ResourceInfo(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        namespaced=False,
        storage_prefix="apiregistration.k8s.io/apiservices",
        categories=("api-extensions",),
        subresources=(_status("APIService", "apiregistration.k8s.io"),),
    ),
    # events.k8s.io cohabits with core events: same storage prefix, same objects.
    ResourceInfo(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        namespaced=True,
        storage_prefix="events",
        short_names=("ev",),
    ),
    # Create-only reviews, answered and never stored (apiserver/reviews.py): no get, list, patch or watch.
    ResourceInfo(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        namespaced=False,
        storage_prefix="tokenreviews",
        verbs=CREATE_ONLY_VERBS,
    ),
    ResourceInfo(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        namespaced=False,
        storage_prefix="selfsubjectreviews",
        verbs=CREATE_ONLY_VERBS,
    ),
    # authorization.k8s.io/v1 reviews: the API server's authorizers answer them (apiserver/auth/reviews.py)
    ResourceInfo(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        namespaced=False,
        storage_prefix="subjectaccessreviews",
        verbs=CREATE_ONLY_VERBS,
    ),
    ResourceInfo(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        namespaced=False,
        storage_prefix="selfsubjectaccessreviews",
        verbs=CREATE_ONLY_VERBS,
    ),
    ResourceInfo(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        namespaced=True,
        storage_prefix="localsubjectaccessreviews",
        verbs=CREATE_ONLY_VERBS,
    ),
    ResourceInfo(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        namespaced=False,
        storage_prefix="selfsubjectrulesreviews",
        verbs=CREATE_ONLY_VERBS,
    ),
)
