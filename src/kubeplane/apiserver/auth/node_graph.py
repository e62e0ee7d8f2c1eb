"""The Node authorizer's graph: which node each object a kubelet may read is reachable from (upstream
``plugin/pkg/auth/authorizer/node/graph.go`` and ``graph_populator.go``, v1.37).

Upstream keeps a directed graph whose edges all point toward Node vertices::

    pod -> node                       (a pod bound to the node)
    secret, configmap, pvc, serviceaccount, resourceclaim -> pod   (what the pod references; none for mirror pods)
    pv -> pvc,  secret -> pv          (a bound PV and the kubelet-visible secrets it names)
    volumeattachment -> node,  resourceslice -> node               (their spec.nodeName)

and answers "is there a path from this object to node N". Every path has length at most four and has one of the
shapes above, so kubeplane stores the same relation as reverse indexes instead of a general graph: per bound pod
its node and references, per reference the count of pods of each node holding it, per PV its claim and secrets,
per attachment and slice its node. The answers are the same as upstream's graph search (tests pin each shape).

Invariants:

* The index is a function of the pods, PVs, VolumeAttachments and ResourceSlices in the registry's watch caches
  (never of anything else), maintained incrementally: :meth:`NodeGraph.refresh` syncs the four caches and applies
  the events of each cache's ring newer than what it applied last; when the ring no longer holds them (the cache
  wrapped around) that kind is rebuilt from the cache's objects. So a decision reflects every write that completed
  before it (read your writes), which upstream's informer-fed graph only approaches; the cost of a refresh is the
  number of events since the last one, not the cluster's size.
* A pod's edges are recomputed only when upstream's populator would (``updatePod``): on add, on a change of node,
  uid, ``status.resourceClaimStatuses`` or ``status.extendedResourceClaimStatus``; references a pod gains later
  (an ephemeral container's secret) do not widen its node's access, as upstream.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubeplane.api.podclaims import pod_claim_names

if TYPE_CHECKING:
    from kubeplane.api.resources import ResourceInfo
    from kubeplane.apiserver.registry import Registry
    from kubeplane.apiserver.watchcache import WatchEvent

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
"""``corev1.MirrorPodAnnotationKey``: a mirror pod gets only its pod -> node edge."""

# vertex types, named as upstream's ``vertexTypes`` (they appear in upstream's debug messages only)
CONFIGMAP = "configmap"
SECRET = "secret"
PVC = "pvc"
PV = "pv"
POD = "pod"
RESOURCECLAIM = "resourceclaim"
SERVICEACCOUNT = "serviceAccount"
VOLUMEATTACHMENT = "volumeattachment"
RESOURCESLICE = "resourceslice"

Ref = tuple[str, str, str]
"""(vertex type, namespace, name) of an object a pod references."""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _name_of(value: object, field: str = "name") -> str:
    return str(_map(value).get(field) or "")


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """``podutil.VisitContainers(AllContainers)``: init, regular and ephemeral containers."""
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(kind)):
            if isinstance(container, Mapping):
                yield container


def pod_secret_names(pod: Mapping[str, Any]) -> Iterator[str]:
    """``podutil.VisitPodSecretNames`` (empty names skipped): image pull secrets, containers' ``envFrom``
    secretRef and ``env`` secretKeyRef, and the secret-bearing volume sources."""
    spec = _map(pod.get("spec"))
    names: list[str] = [_name_of(ref) for ref in _list(spec.get("imagePullSecrets"))]
    for container in _containers(spec):
        for env_from in _list(container.get("envFrom")):
            if _map(env_from).get("secretRef") is not None:
                names.append(_name_of(_map(env_from).get("secretRef")))
        for env in _list(container.get("env")):
            ref = _map(_map(env).get("valueFrom")).get("secretKeyRef")
            if ref is not None:
                names.append(_name_of(ref))
    for volume in _list(spec.get("volumes")):
        source = _map(volume)
        if source.get("azureFile") is not None:
            names.append(_name_of(source["azureFile"], "secretName"))
        elif source.get("projected") is not None:
            for item in _list(_map(source["projected"]).get("sources")):
                if _map(item).get("secret") is not None:
                    names.append(_name_of(_map(item)["secret"]))
        elif source.get("secret") is not None:
            names.append(_name_of(source["secret"], "secretName"))
        elif source.get("csi") is not None:
            names.append(_name_of(_map(source["csi"]).get("nodePublishSecretRef")))
        else:
            for plugin in ("cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"):
                if source.get(plugin) is not None:
                    names.append(_name_of(_map(source[plugin]).get("secretRef")))
                    break
    return (name for name in names if name)


def pod_configmap_names(pod: Mapping[str, Any]) -> Iterator[str]:
    """``podutil.VisitPodConfigmapNames`` (empty names skipped): containers' ``envFrom`` configMapRef and ``env``
    configMapKeyRef, configMap volumes and projections."""
    spec = _map(pod.get("spec"))
    names: list[str] = []
    for container in _containers(spec):
        for env_from in _list(container.get("envFrom")):
            if _map(env_from).get("configMapRef") is not None:
                names.append(_name_of(_map(env_from).get("configMapRef")))
        for env in _list(container.get("env")):
            ref = _map(_map(env).get("valueFrom")).get("configMapKeyRef")
            if ref is not None:
                names.append(_name_of(ref))
    for volume in _list(spec.get("volumes")):
        source = _map(volume)
        if source.get("projected") is not None:
            for item in _list(_map(source["projected"]).get("sources")):
                if _map(item).get("configMap") is not None:
                    names.append(_name_of(_map(item)["configMap"]))
        elif source.get("configMap") is not None:
            names.append(_name_of(source["configMap"]))
    return (name for name in names if name)


def pod_refs(pod: Mapping[str, Any]) -> frozenset[Ref]:
    """What ``Graph.AddPod`` links to a (non-mirror) pod: its service account, secrets, configmaps, PVCs (incl.
    generic ephemeral volumes' ``<pod>-<volume>``), and resource claims (``resourceclaim.Name``: a template's
    claim only once ``status.resourceClaimStatuses`` records it; the extended-resource claim of
    ``status.extendedResourceClaimStatus``)."""
    meta = _map(pod.get("metadata"))
    if MIRROR_POD_ANNOTATION in _map(meta.get("annotations")):
        return frozenset()
    namespace = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    spec = _map(pod.get("spec"))
    refs: set[Ref] = set()
    if spec.get("serviceAccountName"):
        refs.add((SERVICEACCOUNT, namespace, str(spec["serviceAccountName"])))
    refs.update((SECRET, namespace, secret) for secret in pod_secret_names(pod))
    refs.update((CONFIGMAP, namespace, cm) for cm in pod_configmap_names(pod))
    for volume in _list(spec.get("volumes")):
        source = _map(volume)
        claim = ""
        if source.get("persistentVolumeClaim") is not None:
            claim = _name_of(source["persistentVolumeClaim"], "claimName")
        elif source.get("ephemeral") is not None:
            claim = f"{name}-{source.get('name') or ''}"
        if claim:
            refs.add((PVC, namespace, claim))
    refs.update((RESOURCECLAIM, namespace, claim) for claim, _ in pod_claim_names(pod))
    return frozenset(refs)


def pv_secret_refs(pv: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``pvutil.VisitPVSecretNames`` restricted to ``kubeletVisible`` secrets, as ``(namespace, name)``: the
    claim's namespace where the source names none (upstream's ``getClaimRefNamespace``)."""
    spec = _map(pv.get("spec"))
    claim_ns = str(_map(spec.get("claimRef")).get("namespace") or "")
    found: list[tuple[str, str]] = []
    if spec.get("azureFile") is not None:
        azure = _map(spec["azureFile"])
        found.append((str(azure.get("secretNamespace") or claim_ns), str(azure.get("secretName") or "")))
    elif spec.get("csi") is not None:
        csi = _map(spec["csi"])
        for field in ("nodePublishSecretRef", "nodeStageSecretRef", "nodeExpandSecretRef"):
            if csi.get(field) is not None:
                ref = _map(csi[field])
                found.append((str(ref.get("namespace") or ""), str(ref.get("name") or "")))
    else:
        for plugin, defaulted in (
            ("cephfs", True),
            ("cinder", False),
            ("flexVolume", True),
            ("rbd", True),
            ("scaleIO", True),
            ("iscsi", True),
            ("storageos", False),
        ):
            if spec.get(plugin) is None:
                continue
            ref = _map(_map(spec[plugin]).get("secretRef"))
            if ref:
                ns = str(ref.get("namespace") or (claim_ns if defaulted else ""))
                found.append((ns, str(ref.get("name") or "")))
            break
    return ((ns, name) for ns, name in found if name)


@dataclass(frozen=True, slots=True)
class _PodEntry:
    namespace: str
    name: str
    node: str
    refs: frozenset[Ref]


@dataclass(frozen=True, slots=True)
class _PVEntry:
    claim: tuple[str, str]
    secrets: frozenset[tuple[str, str]]


def _node_name(obj: Mapping[str, Any]) -> str:
    return str(_map(obj.get("spec")).get("nodeName") or "")


def _claim_statuses_equal(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    def key(pod: Mapping[str, Any]) -> tuple[object, object]:
        status = _map(pod.get("status"))
        claims = tuple(
            (_map(s).get("name"), _map(s).get("resourceClaimName")) for s in _list(status.get("resourceClaimStatuses"))
        )
        extended = _map(status.get("extendedResourceClaimStatus")).get("resourceClaimName")
        return claims, extended

    return key(old) == key(new)


class NodeGraph:
    """The reverse indexes described in the module docstring, fed from ``registry``'s watch caches."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._pods: dict[str, _PodEntry] = {}
        self._pod_node: dict[tuple[str, str], str] = {}
        self._refs: dict[Ref, Counter[str]] = {}
        self._pvs: dict[str, _PVEntry] = {}
        self._pvs_by_secret: dict[tuple[str, str], set[str]] = {}
        self._attachments: dict[str, str] = {}
        self._slices: dict[str, str] = {}
        self._kinds: list[tuple[ResourceInfo, Callable[[WatchEvent | _Added], None], Callable[[], None]]] = [
            (registry.resource("", "pods"), self._on_pod, self._clear_pods),
            (registry.resource("", "persistentvolumes"), self._on_pv, self._clear_pvs),
            (registry.resource("storage.k8s.io", "volumeattachments"), self._on_attachment, self._attachments.clear),
            (registry.resource("resource.k8s.io", "resourceslices"), self._on_slice, self._slices.clear),
        ]
        self._applied: dict[str, int] = {}
        self.rebuilds = 0
        """How many times a kind was rebuilt from its cache's objects (first use, or a ring wrapped around)."""
        self.events_applied = 0

    # -- feeding -------------------------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the index up to the caches' current state (see the module docstring)."""
        for info, apply, clear in self._kinds:
            cache = self.registry.cache(info)
            cache.sync()
            prefix = info.collection_key()
            last = self._applied.get(prefix)
            if last == cache.revision:
                continue
            newer = None if last is None else cache.events_after(last)
            if newer is None:
                clear()
                for key, obj in cache.items(prefix):
                    apply(_Added(key, obj))
                self.rebuilds += 1
            else:
                for event in newer:
                    if event.type in ("ADDED", "MODIFIED", "DELETED"):
                        apply(event)
                        self.events_applied += 1
            self._applied[prefix] = cache.revision

    def _on_pod(self, event: WatchEvent | _Added) -> None:
        obj, prev = event.obj, event.prev
        if event.type == "DELETED":
            self._drop_pod(event.key)
            return
        node = _node_name(obj)
        if not node:
            return  # upstream: no node assigned, nothing to add
        if (
            prev is not None
            and event.key in self._pods
            and _node_name(prev) == node
            and _map(prev.get("metadata")).get("uid") == _map(obj.get("metadata")).get("uid")
            and _claim_statuses_equal(prev, obj)
        ):
            return  # upstream's updatePod: node, uid and claim statuses unchanged, references are immutable
        self._drop_pod(event.key)
        meta = _map(obj.get("metadata"))
        entry = _PodEntry(str(meta.get("namespace") or ""), str(meta.get("name") or ""), node, pod_refs(obj))
        self._pods[event.key] = entry
        self._pod_node[(entry.namespace, entry.name)] = node
        for ref in entry.refs:
            self._refs.setdefault(ref, Counter())[node] += 1

    def _drop_pod(self, key: str) -> None:
        entry = self._pods.pop(key, None)
        if entry is None:
            return
        self._pod_node.pop((entry.namespace, entry.name), None)
        for ref in entry.refs:
            counts = self._refs.get(ref)
            if counts is None:
                continue
            counts[entry.node] -= 1
            if counts[entry.node] <= 0:
                del counts[entry.node]
            if not counts:
                del self._refs[ref]

    def _clear_pods(self) -> None:
        self._pods.clear()
        self._pod_node.clear()
        self._refs.clear()

    def _on_pv(self, event: WatchEvent | _Added) -> None:
        name = str(_map(event.obj.get("metadata")).get("name") or "")
        old = self._pvs.pop(name, None)
        if old is not None:
            for secret in old.secrets:
                holders = self._pvs_by_secret.get(secret)
                if holders is not None:
                    holders.discard(name)
                    if not holders:
                        del self._pvs_by_secret[secret]
        if event.type == "DELETED":
            return
        claim_ref = _map(_map(event.obj.get("spec")).get("claimRef"))
        if not claim_ref:
            return  # upstream's AddPV: edges only for a PV with a claimRef
        entry = _PVEntry(
            (str(claim_ref.get("namespace") or ""), str(claim_ref.get("name") or "")),
            frozenset(pv_secret_refs(event.obj)),
        )
        self._pvs[name] = entry
        for secret in entry.secrets:
            self._pvs_by_secret.setdefault(secret, set()).add(name)

    def _clear_pvs(self) -> None:
        self._pvs.clear()
        self._pvs_by_secret.clear()

    def _on_attachment(self, event: WatchEvent | _Added) -> None:
        _on_node_ref(self._attachments, event)

    def _on_slice(self, event: WatchEvent | _Added) -> None:
        _on_node_ref(self._slices, event)

    # -- queries -------------------------------------------------------------------------------------------------

    def has_path(self, node: str, vertex_type: str, namespace: str, name: str) -> bool:
        """``NodeAuthorizer.hasPathFrom``: whether the object is related to ``node`` (call :meth:`refresh` first)."""
        if vertex_type == POD:
            return self._pod_node.get((namespace, name)) == node
        if vertex_type == VOLUMEATTACHMENT:
            return self._attachments.get(name) == node
        if vertex_type == RESOURCESLICE:
            return self._slices.get(name) == node
        if vertex_type == PV:
            entry = self._pvs.get(name)
            return entry is not None and self._pvc_on(node, entry.claim)
        if self._holds((vertex_type, namespace, name), node):
            return True
        if vertex_type == SECRET:
            for pv in self._pvs_by_secret.get((namespace, name), ()):
                entry = self._pvs.get(pv)
                if entry is not None and self._pvc_on(node, entry.claim):
                    return True
        return False

    def _pvc_on(self, node: str, claim: tuple[str, str]) -> bool:
        return self._holds((PVC, claim[0], claim[1]), node)

    def _holds(self, ref: Ref, node: str) -> bool:
        counts = self._refs.get(ref)
        return counts is not None and counts[node] > 0


@dataclass(frozen=True, slots=True)
class _Added:
    """An object read from a cache during a rebuild, shaped like an ADDED :class:`WatchEvent`."""

    key: str
    obj: Mapping[str, Any]
    type: str = "ADDED"
    prev: None = None


def _on_node_ref(index: dict[str, str], event: WatchEvent | _Added) -> None:
    """``AddVolumeAttachment`` / ``AddResourceSlice``: the object's edge to its ``spec.nodeName``, if any."""
    name = str(_map(event.obj.get("metadata")).get("name") or "")
    node = _node_name(event.obj)
    if event.type == "DELETED" or not node:
        index.pop(name, None)
    else:
        index[name] = node


def names(refs: Iterable[Ref]) -> list[str]:
    """``type:namespace/name`` of each reference (upstream's ``namedVertex.String``), for debugging and tests."""
    return sorted(f"{t}:{ns}/{n}" if ns else f"{t}:{n}" for t, ns, n in refs)
