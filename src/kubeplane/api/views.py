"""Read-only views and accessors over wire-format objects: ``Body(obj).meta.labels``, ``PodView(pod).node_name``.

Objects stay plain JSON dicts at every boundary (DESIGN decision 1): the store keeps them, the client returns
them, informers cache them. Components only *read* them far more often than they write them, and reading a
dict that may lack any level (``metadata`` absent, ``status: null``) used to be spelt ``(x.get("status") or
{}).get("phase")`` at each use. This module is the one place that spelling lives, after kopf's
``_cogs/structs/bodies.py``: typed views (:class:`Body`, :class:`Meta`, :class:`PodView`, :class:`NodeView`)
wrap a dict without copying it, and plain functions (:func:`meta_of`, :func:`name_of`, ...) serve the hottest
paths, where even one small object per call shows up.

Invariants and why:

- **No copying, no validation at wrap.** A view holds the dict it wraps (``.raw``) and nothing else
  (``__slots__``); every property reads the dict when called. Wrapping costs one small allocation, so a view
  can be made per object per pass in a hot loop. A view is not a snapshot: it sees the dict as it is when
  read, and never writes to it.
- **Absent reads as Go's zero value.** A missing or ``null`` level reads as an empty mapping, a missing string
  as ``""``, a missing list as ``()``, a missing integer as ``0``, as a typed Go client sees the same JSON. This
  is the ``x.get(k) or {}`` rule: a falsy value (``{}``, ``""``, ``0``, ``None``) reads as the zero value.
  Timestamps stay strings (``None`` when unset): callers that compare them parse them once.
- **Views are not mappings of the object.** ``Body`` does not implement ``Mapping``, so mypy refuses a view
  where the wire dict is wanted (a client call, a patch): pass ``view.raw`` there. :class:`Meta` *is* a
  read-only mapping of ``metadata``, so fields without a property stay one ``.get`` away.
- **Stored objects are validated**, so list entries (conditions, taints, owner references) are objects;
  the views do not re-check each entry's type. Code that reads unvalidated input (the API server's table
  printers) uses the defensive accessors :func:`section`, :func:`items`, :func:`mappings` and
  :func:`int_field`.

Also here, because every component needs one definition of them: :func:`is_pod_terminal` (upstream's
``podutil.IsPodTerminal``) and :func:`zone_key` (upstream's ``utilnode.GetZoneKey``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

__all__ = [
    "EMPTY",
    "TERMINAL_PHASES",
    "Body",
    "Meta",
    "NodeView",
    "PodView",
    "annotations_of",
    "controller_ref_of",
    "find_condition",
    "int_field",
    "is_being_deleted",
    "is_pod_terminal",
    "items",
    "labels_of",
    "mappings",
    "meta_of",
    "name_of",
    "namespace_of",
    "section",
    "spec_of",
    "status_of",
    "uid_of",
    "zone_key",
]

Obj = Mapping[str, Any]

EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})
"""The shared empty mapping absent levels read as; read-only, so no caller can fill it by mistake."""

TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
"""The pod phases after which no container runs again (upstream ``podutil.IsPodTerminal``)."""

LABEL_TOPOLOGY_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION: Final = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"


# --- plain accessors: one call, no view object (the hottest paths) ------------------------------------------


def meta_of(obj: Obj) -> Obj:
    """``obj.metadata``; :data:`EMPTY` when absent or null."""
    meta: Obj = obj.get("metadata") or EMPTY
    return meta


def spec_of(obj: Obj) -> Obj:
    """``obj.spec``; :data:`EMPTY` when absent or null."""
    spec: Obj = obj.get("spec") or EMPTY
    return spec


def status_of(obj: Obj) -> Obj:
    """``obj.status``; :data:`EMPTY` when absent or null."""
    status: Obj = obj.get("status") or EMPTY
    return status


def name_of(obj: Obj) -> str:
    """``metadata.name``; ``""`` when absent."""
    value: str = (obj.get("metadata") or EMPTY).get("name") or ""
    return value


def namespace_of(obj: Obj) -> str:
    """``metadata.namespace``; ``""`` for cluster-scoped objects."""
    value: str = (obj.get("metadata") or EMPTY).get("namespace") or ""
    return value


def uid_of(obj: Obj) -> str:
    """``metadata.uid``; ``""`` before the API server assigned one."""
    value: str = (obj.get("metadata") or EMPTY).get("uid") or ""
    return value


def labels_of(obj: Obj) -> Mapping[str, str]:
    """``metadata.labels``; :data:`EMPTY` when absent."""
    labels: Mapping[str, str] = (obj.get("metadata") or EMPTY).get("labels") or EMPTY
    return labels


def annotations_of(obj: Obj) -> Mapping[str, str]:
    """``metadata.annotations``; :data:`EMPTY` when absent."""
    annotations: Mapping[str, str] = (obj.get("metadata") or EMPTY).get("annotations") or EMPTY
    return annotations


def is_being_deleted(obj: Obj) -> bool:
    """``metadata.deletionTimestamp`` is set (upstream's ``DeletionTimestamp != nil``), whatever the phase."""
    return bool((obj.get("metadata") or EMPTY).get("deletionTimestamp"))


def controller_ref_of(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true`` (upstream ``metav1.GetControllerOf``), or None."""
    for ref in (obj.get("metadata") or EMPTY).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def find_condition(conditions: Sequence[Obj] | None, condition_type: str) -> Obj | None:
    """The first condition of ``condition_type`` (upstream stops at the first, e.g. ``GetPodCondition``)."""
    for condition in conditions or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def is_pod_terminal(pod: Obj) -> bool:
    """Phase Succeeded or Failed (upstream ``podutil.IsPodTerminal``): the pod's containers never run again and
    it holds no resources on its node. The one definition: controllers, the kubelet and the scheduler agree."""
    return (pod.get("status") or EMPTY).get("phase") in TERMINAL_PHASES


def zone_key(node: Obj) -> str:
    """Upstream ``utilnode.GetZoneKey``: ``region + ":\\x00:" + zone``, ``""`` when both are empty.

    The deprecated ``failure-domain.beta`` labels win over the ``topology.kubernetes.io`` ones when present
    (upstream: "will stick around a long time due to existing on old extant objects"); the NUL keeps a colon in
    a region or zone from making two zones one key.
    """
    labels: Mapping[str, str] = (node.get("metadata") or EMPTY).get("labels") or EMPTY
    zone = (
        labels[LABEL_FAILURE_DOMAIN_BETA_ZONE]
        if LABEL_FAILURE_DOMAIN_BETA_ZONE in labels
        else labels.get(LABEL_TOPOLOGY_ZONE, "")
    )
    region = (
        labels[LABEL_FAILURE_DOMAIN_BETA_REGION]
        if LABEL_FAILURE_DOMAIN_BETA_REGION in labels
        else labels.get(LABEL_TOPOLOGY_REGION, "")
    )
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


# --- defensive accessors: unvalidated input (table printers) --------------------------------------------------


def section(obj: Obj, *path: str) -> Obj:
    """``obj[path0][path1]...``, with absent, null or non-object levels read as ``{}`` (Go's zero struct)."""
    current: Obj = obj
    for key in path:
        value = current.get(key)
        current = value if isinstance(value, Mapping) else EMPTY
    return current


def items(obj: Obj, key: str) -> Sequence[Any]:
    """A list field, with absent, null or non-list read as ``[]``."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def mappings(obj: Obj, key: str) -> list[Obj]:
    """A list of objects, with absent or null read as ``[]`` and a non-object entry as ``{}`` (keeps indexes)."""
    return [entry if isinstance(entry, Mapping) else EMPTY for entry in items(obj, key)]


def int_field(obj: Obj, key: str, default: int = 0) -> int:
    """An integer field; ``default`` when absent or not an integer (booleans are not integers here)."""
    value = obj.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# --- views ------------------------------------------------------------------------------------------------------


class Meta(Mapping[str, Any]):
    """``metadata`` of an object: typed properties for the well-known fields, a read-only mapping for the rest."""

    __slots__ = ("raw",)

    def __init__(self, raw: Obj) -> None:
        self.raw = raw

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def name(self) -> str:
        value: str = self.raw.get("name") or ""
        return value

    @property
    def namespace(self) -> str:
        value: str = self.raw.get("namespace") or ""
        return value

    @property
    def uid(self) -> str:
        value: str = self.raw.get("uid") or ""
        return value

    @property
    def generate_name(self) -> str:
        value: str = self.raw.get("generateName") or ""
        return value

    @property
    def resource_version(self) -> str:
        value: str = self.raw.get("resourceVersion") or ""
        return value

    @property
    def generation(self) -> int:
        value: int = self.raw.get("generation") or 0
        return value

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.raw.get("labels") or EMPTY
        return labels

    @property
    def annotations(self) -> Mapping[str, str]:
        annotations: Mapping[str, str] = self.raw.get("annotations") or EMPTY
        return annotations

    @property
    def owner_references(self) -> Sequence[Obj]:
        refs: Sequence[Obj] = self.raw.get("ownerReferences") or ()
        return refs

    @property
    def controller_ref(self) -> Obj | None:
        """The ownerReference with ``controller: true`` (upstream ``metav1.GetControllerOf``), or None."""
        for ref in self.raw.get("ownerReferences") or ():
            if isinstance(ref, Mapping) and ref.get("controller") is True:
                return ref
        return None

    @property
    def finalizers(self) -> Sequence[str]:
        finalizers: Sequence[str] = self.raw.get("finalizers") or ()
        return finalizers

    @property
    def creation_timestamp(self) -> str | None:
        return self.raw.get("creationTimestamp") or None

    @property
    def deletion_timestamp(self) -> str | None:
        return self.raw.get("deletionTimestamp") or None

    @property
    def deletion_grace_period_seconds(self) -> int | None:
        value = self.raw.get("deletionGracePeriodSeconds")
        return None if value is None else int(value)

    @property
    def is_being_deleted(self) -> bool:
        """``deletionTimestamp`` is set (upstream's ``DeletionTimestamp != nil``)."""
        return bool(self.raw.get("deletionTimestamp"))


class Body:
    """Any object: its ``meta`` view, ``spec`` and ``status`` mappings, and its conditions.

    ``spec`` and ``status`` are the raw sub-dicts (or :data:`EMPTY`), not views: their fields differ per kind, and
    the kind-specific views (:class:`PodView`, :class:`NodeView`) give the well-known ones properties.
    """

    __slots__ = ("raw",)

    def __init__(self, raw: Obj) -> None:
        self.raw = raw

    def __repr__(self) -> str:
        meta = self.meta
        where = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        return f"{type(self).__name__}({self.raw.get('kind') or ''} {where})"

    @property
    def meta(self) -> Meta:
        return Meta(self.raw.get("metadata") or EMPTY)

    metadata = meta

    @property
    def spec(self) -> Obj:
        spec: Obj = self.raw.get("spec") or EMPTY
        return spec

    @property
    def status(self) -> Obj:
        status: Obj = self.raw.get("status") or EMPTY
        return status

    @property
    def kind(self) -> str:
        value: str = self.raw.get("kind") or ""
        return value

    @property
    def api_version(self) -> str:
        value: str = self.raw.get("apiVersion") or ""
        return value

    @property
    def conditions(self) -> Sequence[Obj]:
        """``status.conditions``; ``()`` when absent."""
        conditions: Sequence[Obj] = (self.raw.get("status") or EMPTY).get("conditions") or ()
        return conditions

    def condition(self, condition_type: str) -> Obj | None:
        """The first condition of ``condition_type``, or None."""
        condition: Obj
        for condition in (self.raw.get("status") or EMPTY).get("conditions") or ():
            if condition.get("type") == condition_type:
                return condition
        return None

    def condition_is_true(self, condition_type: str) -> bool:
        """Whether the first condition of ``condition_type`` has ``status: "True"`` (False when there is none)."""
        condition: Obj
        for condition in (self.raw.get("status") or EMPTY).get("conditions") or ():
            if condition.get("type") == condition_type:
                return condition.get("status") == "True"
        return False


class PodView(Body):
    """A Pod's fields that controllers, the kubelet and the scheduler read most."""

    __slots__ = ()

    @property
    def phase(self) -> str:
        value: str = (self.raw.get("status") or EMPTY).get("phase") or ""
        return value

    @property
    def reason(self) -> str:
        """``status.reason``, e.g. ``Evicted`` or ``NodeLost``."""
        value: str = (self.raw.get("status") or EMPTY).get("reason") or ""
        return value

    @property
    def node_name(self) -> str:
        """``spec.nodeName``; ``""`` while the pod is unscheduled."""
        value: str = (self.raw.get("spec") or EMPTY).get("nodeName") or ""
        return value

    @property
    def nominated_node_name(self) -> str:
        value: str = (self.raw.get("status") or EMPTY).get("nominatedNodeName") or ""
        return value

    @property
    def scheduler_name(self) -> str:
        value: str = (self.raw.get("spec") or EMPTY).get("schedulerName") or ""
        return value

    @property
    def priority(self) -> int:
        """``spec.priority``; 0 when unset (upstream ``corev1helpers.PodPriority``)."""
        value: int = (self.raw.get("spec") or EMPTY).get("priority") or 0
        return value

    @property
    def containers(self) -> Sequence[Obj]:
        containers: Sequence[Obj] = (self.raw.get("spec") or EMPTY).get("containers") or ()
        return containers

    @property
    def init_containers(self) -> Sequence[Obj]:
        containers: Sequence[Obj] = (self.raw.get("spec") or EMPTY).get("initContainers") or ()
        return containers

    @property
    def container_statuses(self) -> Sequence[Obj]:
        statuses: Sequence[Obj] = (self.raw.get("status") or EMPTY).get("containerStatuses") or ()
        return statuses

    @property
    def init_container_statuses(self) -> Sequence[Obj]:
        statuses: Sequence[Obj] = (self.raw.get("status") or EMPTY).get("initContainerStatuses") or ()
        return statuses

    @property
    def tolerations(self) -> Sequence[Obj]:
        tolerations: Sequence[Obj] = (self.raw.get("spec") or EMPTY).get("tolerations") or ()
        return tolerations

    @property
    def node_selector(self) -> Mapping[str, str]:
        selector: Mapping[str, str] = (self.raw.get("spec") or EMPTY).get("nodeSelector") or EMPTY
        return selector

    @property
    def is_terminal(self) -> bool:
        """Succeeded or Failed (:func:`is_pod_terminal`)."""
        return (self.raw.get("status") or EMPTY).get("phase") in TERMINAL_PHASES

    @property
    def ready_condition(self) -> Obj | None:
        """The ``Ready`` condition (upstream ``podutil.GetPodReadyCondition``), or None."""
        return find_condition(self.conditions, "Ready")

    @property
    def is_ready(self) -> bool:
        """The Ready condition is True (upstream ``podutil.IsPodReady``)."""
        return self.condition_is_true("Ready")


class NodeView(Body):
    """A Node's fields that the node controllers, the DaemonSet controller and the scheduler read most."""

    __slots__ = ()

    @property
    def name(self) -> str:
        value: str = (self.raw.get("metadata") or EMPTY).get("name") or ""
        return value

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = (self.raw.get("metadata") or EMPTY).get("labels") or EMPTY
        return labels

    @property
    def taints(self) -> Sequence[Obj]:
        taints: Sequence[Obj] = (self.raw.get("spec") or EMPTY).get("taints") or ()
        return taints

    @property
    def unschedulable(self) -> bool:
        return bool((self.raw.get("spec") or EMPTY).get("unschedulable"))

    @property
    def allocatable(self) -> Mapping[str, Any]:
        """``status.allocatable`` as quantities on the wire (strings); :mod:`kubeplane.api.quantity` parses them."""
        allocatable: Mapping[str, Any] = (self.raw.get("status") or EMPTY).get("allocatable") or EMPTY
        return allocatable

    @property
    def capacity(self) -> Mapping[str, Any]:
        capacity: Mapping[str, Any] = (self.raw.get("status") or EMPTY).get("capacity") or EMPTY
        return capacity

    @property
    def ready_condition(self) -> Obj | None:
        """The ``Ready`` condition (upstream ``nodeutil.GetNodeCondition(..., NodeReady)``), or None."""
        return find_condition(self.conditions, "Ready")

    @property
    def is_ready(self) -> bool:
        """The Ready condition is True; a node without one is not ready."""
        return self.condition_is_true("Ready")

    @property
    def zone_key(self) -> str:
        """:func:`zone_key` of this node."""
        return zone_key(self.raw)
