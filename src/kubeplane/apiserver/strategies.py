"""Per-kind behaviour of the generic registry, as upstream's ``pkg/registry/<group>/<kind>/strategy.go``.

A :class:`Strategy` says how a kind is prepared on create and update (which half the main resource and the
``status`` subresource may change, when ``metadata.generation`` moves), how it is validated (the
kind-specific validators of :mod:`kubeplane.api.validation`; metadata is validated generically), and
whether deletes are graceful. Registering another kind needs no strategy at all: :class:`Strategy` itself is
the default (no status split, no generation).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from kubeplane.api import pods as podutil
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.shapes import ShapeMemo, shape_key
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.views import is_pod_terminal, spec_of, status_of

if TYPE_CHECKING:
    from .registry import Registry

Obj = dict[str, Any]
Finish = Callable[[bool], Awaitable[None]]

_VALIDATION_MODULES = (
    "core",
    "apps",
    "apps_revisions",
    "batch",
    "cluster",
    "discovery",
    "networking",
    "scheduling_workload",
    "storage_csi",
    "resource_dra",
)


@cache
def _validators(table: str) -> Mapping[tuple[str, str], Callable[..., ErrorList]]:
    """Merge ``table`` (CREATE_VALIDATORS, ...) from every kind-validation module that exists."""
    merged: dict[tuple[str, str], Callable[..., ErrorList]] = {}
    for name in _VALIDATION_MODULES:
        try:
            module = importlib.import_module(f"kubeplane.api.validation.{name}")
        except ModuleNotFoundError:
            continue
        merged.update(getattr(module, table, {}))
    return merged


def _spec_half(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Strategy:
    """Default behaviour: the whole object is user-owned; no status subresource; no generation."""

    default_propagation_policy: str | None = None
    """What a delete without ``propagationPolicy`` does (upstream ``DefaultGarbageCollectionPolicy``): None is
    ``DeleteDependents`` (background); ``"Orphan"`` adds the ``orphan`` finalizer (batch/v1 Jobs)."""

    def __init__(self, info: ResourceInfo) -> None:
        self.info = info
        self.has_status = info.subresource("status") is not None
        self.tracks_generation = self.has_status
        self.now: Callable[[], float] = time.time
        """The API server's clock (the registry sets its own), for times a strategy stamps."""

    # -- create / update ---------------------------------------------------------------------------------------

    def prepare_for_create(self, obj: Obj) -> None:
        if self.tracks_generation:
            obj["metadata"]["generation"] = 1
        if self.has_status:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """The main resource: status stays as stored; generation moves when anything but metadata changed."""
        if self.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if self.tracks_generation:
            generation = int(old["metadata"].get("generation", 1))
            if _spec_half(new) != _spec_half(old):
                generation += 1
            new["metadata"]["generation"] = generation

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """The status subresource: everything but status (and labels/annotations) stays as stored."""
        for key in list(new):
            if key not in ("metadata", "status", "apiVersion", "kind"):
                del new[key]
        new.update(_spec_half(old))
        meta = dict(old["metadata"])
        for key in ("labels", "annotations"):
            if key in new["metadata"]:
                meta[key] = new["metadata"][key]
            else:
                meta.pop(key, None)
        new["metadata"] = meta

    # -- storage hooks (upstream BeginCreate / BeginUpdate / AfterDelete) ------------------------------------------

    async def begin_create(self, registry: Registry, obj: Obj, *, dry_run: bool) -> Finish | None:
        """Runs before validation and the store write; the callback returned is awaited with the outcome."""
        return None

    async def begin_update(self, registry: Registry, new: Obj, old: Obj, *, dry_run: bool) -> Finish | None:
        return None

    async def after_delete(self, registry: Registry, obj: Obj) -> None:
        """Runs once ``obj`` is gone from the store (not on dry runs)."""

    # -- validation --------------------------------------------------------------------------------------------

    def _key(self) -> tuple[str, str]:
        return self.info.group, self.info.kind

    def validate(self, obj: Obj) -> ErrorList:
        check = _validators("CREATE_VALIDATORS").get(self._key())
        return check(obj) if check is not None else []

    def validate_update(self, new: Obj, old: Obj) -> ErrorList:
        check = _validators("UPDATE_VALIDATORS").get(self._key())
        return check(new, old) if check is not None else []

    def validate_status_update(self, new: Obj, old: Obj) -> ErrorList:
        check = _validators("STATUS_UPDATE_VALIDATORS").get(self._key())
        return check(new, old) if check is not None else []

    # -- delete ------------------------------------------------------------------------------------------------

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """Seconds of graceful deletion; 0 deletes at once."""
        return 0

    def should_delete_during_update(self, obj: Obj) -> bool:
        """Whether an update leaves ``obj`` gone (upstream ``ShouldDeleteDuringUpdate``): it is being deleted with no
        grace period left and the last finalizer went."""
        meta = obj["metadata"]
        gone = bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0
        return gone and not meta.get("finalizers")

    @property
    def returns_deleted_object(self) -> bool:
        """Whether a completed delete answers with the object rather than a Status Success (upstream's per-kind
        ``genericregistry.Store.ReturnDeletedObject``): a property of the kind, so subclasses inherit it."""
        return (self.info.group, self.info.kind) in RETURNS_DELETED_OBJECT


RETURNS_DELETED_OBJECT: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Pod"),  # pkg/registry/core/pod/storage/storage.go
        ("", "Service"),  # pkg/registry/core/service/storage/storage.go
        ("", "ServiceAccount"),  # pkg/registry/core/serviceaccount/storage/storage.go
        ("", "Namespace"),  # pkg/registry/core/namespace/storage/storage.go
        ("", "PersistentVolume"),  # pkg/registry/core/persistentvolume/storage/storage.go
        ("", "PersistentVolumeClaim"),  # pkg/registry/core/persistentvolumeclaim/storage/storage.go
        ("storage.k8s.io", "StorageClass"),  # pkg/registry/storage/storageclass/storage/storage.go
        ("storage.k8s.io", "CSINode"),  # pkg/registry/storage/csinode/storage/storage.go
    }
)
"""The served kinds whose upstream store sets ``ReturnDeletedObject: true`` (v1.37). Every other kind served
(ConfigMap, Secret, Node, Endpoints, Event, ReplicationController, apps, Lease, PriorityClass,
PodDisruptionBudget, RBAC) leaves it false and answers ``Status{status: Success, details: {name, group, kind:
<resource>, uid}}`` (store.go ``finalizeDelete``)."""


QOS_CLASSES: ShapeMemo[str] = ShapeMemo()
"""A pod spec's encoding -> its QoS class (:mod:`kubeplane.api.shapes`)."""


def qos_class(pod: Obj) -> str:
    """``pod_qos_class`` of a pod being created, from :data:`QOS_CLASSES` for a spec seen before: exact because
    upstream's ``ComputePodQOS`` reads the spec (its containers' and the pod's resources) and nothing else."""
    spec = pod.get("spec")
    key = shape_key(spec) if isinstance(spec, dict) else None
    found = QOS_CLASSES.get(key)
    if found is None:
        found = str(podutil.pod_qos_class(pod))
        QOS_CLASSES.put(key, found)
    return found


class PodStrategy(Strategy):
    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        owners = old["metadata"].get("ownerReferences")
        super().prepare_for_status_update(new, old)
        if owners is not None:  # old kubelets corrupt owner references through status: upstream keeps them
            new["metadata"]["ownerReferences"] = owners
        qos = status_of(old).get("qosClass")
        status = new.get("status")
        if qos and isinstance(status, dict) and not status.get("qosClass"):
            # immutable, set at create: upstream backfills it for old kubelets that dropped it on a rejected pod
            new["status"] = {**status, "qosClass": qos}
        _preserve_observed_generation(new, old)

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """Upstream podStrategy.CheckGracefulDelete: unbound or terminal pods go at once."""
        spec = spec_of(obj)
        if not spec.get("nodeName") or is_pod_terminal(obj):
            return 0
        if requested is not None:
            return max(requested, 0)
        grace = spec.get("terminationGracePeriodSeconds")
        return int(grace) if isinstance(grace, int) and grace >= 0 else 30


def _preserve_observed_generation(new: Obj, old: Obj) -> None:
    """Upstream ``preserveOldObservedGeneration``: a status write that leaves ``observedGeneration`` unset (or
    0) keeps the stored value, in ``status`` and per condition; old values are taken per condition type in order
    (validation allows several conditions of one type). ``new`` is the request's own object: changed in place,
    and only where a value is carried over (its lists are copied before a condition is changed)."""
    old_status = old.get("status")
    status = new.get("status")
    if not isinstance(old_status, dict) or not isinstance(status, dict):
        return
    kept = old_status.get("observedGeneration")
    if kept and not status.get("observedGeneration"):
        new["status"] = status = {**status, "observedGeneration": kept}
    old_conditions = old_status.get("conditions")
    conditions = status.get("conditions")
    if not old_conditions or not isinstance(conditions, list) or not isinstance(old_conditions, list):
        return
    by_type: dict[Any, list[Any]] = {}
    for condition in old_conditions:
        if isinstance(condition, dict):
            by_type.setdefault(condition.get("type"), []).append(condition.get("observedGeneration"))
    carried: list[Any] | None = None
    for i, condition in enumerate(conditions):
        if not isinstance(condition, dict):
            continue
        olds = by_type.get(condition.get("type"))
        generation = olds.pop(0) if olds else None
        if generation and not condition.get("observedGeneration"):
            if carried is None:
                carried = list(conditions)
            carried[i] = {**condition, "observedGeneration": generation}
    if carried is not None:
        new["status"] = {**status, "conditions": carried}


class NamespaceStrategy(Strategy):
    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self.tracks_generation = False

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Active"}
        spec = obj.setdefault("spec", {})
        spec.setdefault("finalizers", ["kubernetes"])

    def should_delete_during_update(self, obj: Obj) -> bool:
        """Upstream ``ShouldDeleteNamespaceDuringUpdate``: ``spec.finalizers`` hold a namespace too (the namespace
        controller empties it, then releases ``kubernetes`` through ``finalize``)."""
        return super().should_delete_during_update(obj) and not spec_of(obj).get("finalizers")


class NodeStrategy(Strategy):
    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self.tracks_generation = False

    def prepare_for_create(self, obj: Obj) -> None:
        """Nodes keep every field on create, status included: kubelets register with their status."""


class EndpointSliceStrategy(Strategy):
    """Upstream ``endpointSliceStrategy``: generation 1 on create, and one more on an update that changes anything
    but metadata, or the labels (the EndpointSlice controllers' trackers compare generations to spot a stale
    informer cache)."""

    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self.tracks_generation = True

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        generation = int(old["metadata"].get("generation", 1))
        labels_changed = (new["metadata"].get("labels") or {}) != (old["metadata"].get("labels") or {})
        if labels_changed or _spec_half(new) != _spec_half(old):
            generation += 1
        new["metadata"]["generation"] = generation


class ServiceCIDRStrategy(Strategy):
    """Upstream ``serviceCIDRStrategy`` (pkg/registry/networking/servicecidr/strategy.go): PrepareForCreate and
    PrepareForUpdate leave the object alone (status included: only the status subresource resets the spec), and
    no ``metadata.generation`` is kept."""

    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self.tracks_generation = False

    def prepare_for_create(self, obj: Obj) -> None:
        """Nothing is reset: a ServiceCIDR may be created with its status."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Nothing is reset on the main resource."""


STRATEGIES: Mapping[tuple[str, str], type[Strategy]] = {
    ("networking.k8s.io", "ServiceCIDR"): ServiceCIDRStrategy,
    ("discovery.k8s.io", "EndpointSlice"): EndpointSliceStrategy,
    ("", "Pod"): PodStrategy,
    ("", "Namespace"): NamespaceStrategy,
    ("", "Node"): NodeStrategy,
}


class APIServiceStrategy(Strategy):
    """kube-aggregator's apiservice strategy: defaults, validation, status split. No availability controller
    runs (nothing is proxied): a local APIService (no ``service``) gets ``Available`` at create, as the
    aggregator's controller reports it ("Local APIServices are always available")."""

    def prepare_for_create(self, obj: Obj) -> None:
        from kubeplane.api.validation import apiregistration

        super().prepare_for_create(obj)
        apiregistration.default_apiservice(obj)
        obj["status"] = {}

    async def begin_create(self, registry: Registry, obj: Obj, *, dry_run: bool) -> Finish | None:
        if not isinstance((obj.get("spec") or {}).get("service"), dict):
            from kubeplane.api.meta import format_time

            available = {
                "type": "Available",
                "status": "True",
                "lastTransitionTime": format_time(registry.now()),
                "reason": "Local",
                "message": "Local APIServices are always available",
            }
            obj["status"] = {"conditions": [available]}
        return None

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        from kubeplane.api.validation import apiregistration

        super().prepare_for_update(new, old)
        apiregistration.default_apiservice(new)

    def validate(self, obj: Obj) -> ErrorList:
        from kubeplane.api.validation import apiregistration

        return apiregistration.validate_apiservice(obj)

    def validate_update(self, new: Obj, old: Obj) -> ErrorList:
        from kubeplane.api.validation import apiregistration

        return apiregistration.validate_apiservice_update(new, old)


def strategy_for(info: ResourceInfo) -> Strategy:
    if (info.group, info.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        from .crds import CRDStrategy  # imported here: crds builds on this module

        return CRDStrategy(info)
    if (info.group, info.kind) == ("apiregistration.k8s.io", "APIService"):
        return APIServiceStrategy(info)
    if (info.group, info.kind) == ("batch", "Job"):
        from .strategies_batch import JobStrategy  # imported here: strategies_batch builds on this module

        return JobStrategy(info)
    if (info.group, info.kind) == ("", "Service"):
        from .services import ServiceStrategy  # imported here: services builds on this module

        return ServiceStrategy(info)
    from .strategies_storage import STORAGE_STRATEGIES  # imported here: it builds on this module

    if (info.group, info.kind) in STORAGE_STRATEGIES:
        return STORAGE_STRATEGIES[(info.group, info.kind)](info)
    from .strategies_dra import DRA_STRATEGIES  # imported here: it builds on this module

    if (info.group, info.kind) in DRA_STRATEGIES:
        return DRA_STRATEGIES[(info.group, info.kind)](info)
    return STRATEGIES.get((info.group, info.kind), Strategy)(info)
