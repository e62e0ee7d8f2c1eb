"""Kind-specific validation of core/v1 objects, as kube-apiserver's ``pkg/apis/core/validation``: the registry's
tables, and the rules of the smaller kinds (Node, Namespace, ReplicationController, ServiceAccount).

The API server loads this module by name and looks a validator up by ``(group, kind)`` (group ``""`` for core)
in :data:`CREATE_VALIDATORS`, :data:`UPDATE_VALIDATORS` (``validate(new, old)``: the create rules on ``new``
plus what may not change, as the registry strategies' ``ValidateUpdate`` call both) or
:data:`STATUS_UPDATE_VALIDATORS` (the ``/status`` subresource). The larger kinds live beside it: Pod in
:mod:`.pods`, Service in :mod:`.services`, ConfigMap and Secret in :mod:`.config`, PersistentVolume and
PersistentVolumeClaim in :mod:`.storage`, Event in :mod:`.events`.

Objects are defaulted core/v1 JSON dicts; ``metadata`` is validated generically by the API server and not here,
except where upstream's kind-specific rules read it (an Event's namespace, a service-account token Secret's
annotation, a Namespace's deletion timestamp).

Invariants
    * Every validator returns an :data:`~kubeplane.api.validation.field.ErrorList` and never raises on bad
      input: everything is read through a :data:`~.reader.CORE_V1` reader and ends with
      :func:`~.reader.finish`.
    * Messages and paths are upstream's, oddities included (node taints under ``metadata.taints``, a Service's
      ``spec.LoadBalancerSourceRanges``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import taints
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    CreateValidator,
    UpdateValidator,
    invalid_each,
    is_ipv6,
    read_nonnegative,
)
from kubeplane.api.validation.config import (
    validate_config_map,
    validate_config_map_update,
    validate_secret,
    validate_secret_update,
)
from kubeplane.api.validation.events import validate_event, validate_event_update
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.pods import (
    check_pod_template_spec,
    validate_pod_create,
    validate_pod_status_update,
    validate_pod_update,
)
from kubeplane.api.validation.reader import CORE_V1, Reader, finish
from kubeplane.api.validation.resources import validate_resource_quantity_value
from kubeplane.api.validation.services import (
    validate_service,
    validate_service_status_update,
    validate_service_update,
)
from kubeplane.api.validation.storage import (
    validate_persistent_volume,
    validate_persistent_volume_claim,
    validate_persistent_volume_claim_status_update,
    validate_persistent_volume_claim_update,
    validate_persistent_volume_update,
)

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS", "Validate", "ValidateUpdate"]

Validate = CreateValidator
ValidateUpdate = UpdateValidator


# --- Node ---------------------------------------------------------------------------------------------------


def _node_resources(status: Reader) -> None:
    """Upstream ``ValidateNodeResources``; as upstream, paths are ``status.capacity.<name>`` (children)."""
    for key in ("capacity", "allocatable"):
        for name, q in status.quantities(key).items():
            status.errs.extend(validate_resource_quantity_value(name, q, status.at(key).child(name)))


def _node_taints(spec: Reader) -> None:
    items = spec.items("taints")
    for t in items:
        for key in ("key", "value", "effect", "timeAdded"):
            t.string(key)
    if items:  # upstream's path: metadata.taints
        spec.errs.extend(taints.validate_taints([t.data for t in items], field.new_path("metadata", "taints")))


def _pod_cidrs(spec: Reader) -> list[str]:
    cidrs = spec.strings("podCIDRs")
    return cidrs or ([spec.string("podCIDR")] if spec.string("podCIDR") else [])


def _node_addresses(status: Reader) -> None:
    """``status.addresses``: each field read (and type-checked), no (type, address) entry twice (upstream's
    ``ValidateNodeUpdate`` rule)."""
    seen: list[dict[str, str]] = []
    for i, address in enumerate(status.items("addresses")):
        entry = {"type": address.string("type"), "address": address.string("address")}
        if entry in seen:
            status.errs.append(field.duplicate(status.at("addresses").index(i), entry))
        seen.append(entry)


def validate_node(node: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNode``: taints, capacity and allocatable quantities, pod CIDRs.

    It also reads every field :func:`validate_node_update` reads (``providerID``, ``externalID``) and applies its
    rule on the status addresses (unique), so a node that rule or a mistyped field would refuse is refused on
    create: upstream stores it (kubelets register nodes with their status) and the node then refuses every
    update, kubeplane does not store it."""
    errs: ErrorList = []
    root = CORE_V1.root(node, errs)
    spec = root.child("spec")
    spec.string("providerID")
    spec.string("externalID")
    _node_taints(spec)
    _node_resources(root.child("status"))
    _node_addresses(root.child("status"))
    cidrs = _pod_cidrs(spec)
    path = spec.at("podCIDRs")
    for i, cidr in enumerate(cidrs):
        errs.extend(names.is_valid_cidr(path.index(i), cidr))
    if len(cidrs) > 1:
        families = [is_ipv6(c.partition("/")[0]) for c in cidrs]
        if len(cidrs) > 2 or all(families) or not any(families):
            errs.append(field.invalid(path, cidrs, detail="may specify no more than one CIDR for each IP family"))
        for i, cidr in enumerate(cidrs):
            if cidr in cidrs[:i]:
                errs.append(field.duplicate(path.index(i), cidr))
    return finish(errs)


def validate_node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNodeUpdate``: addresses unique; podCIDRs and providerID immutable once set."""
    errs: ErrorList = []
    root, old_root = CORE_V1.root(new, errs), CORE_V1.root(old, [])
    spec, old_spec = root.child("spec"), old_root.child("spec")
    status = root.child("status")
    _node_resources(status)
    _node_addresses(status)
    old_cidrs = _pod_cidrs(old_spec)
    if old_cidrs and old_cidrs != _pod_cidrs(spec):
        errs.append(field.forbidden(spec.at("podCIDRs"), 'node updates may not change podCIDR except from "" to valid'))
    old_provider = old_spec.string("providerID")
    if old_provider and old_provider != spec.string("providerID"):
        detail = 'node updates may not change providerID except from "" to valid'
        errs.append(field.forbidden(spec.at("providerID"), detail))
    _node_taints(spec)
    if spec.string("externalID") != old_spec.string("externalID"):
        errs.append(field.forbidden(spec.at("externalID"), "may not be updated"))
    return finish(errs)


def _node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The Node strategy's update: the create rules on ``new``, then ``ValidateNodeUpdate``."""
    return finish(validate_node(new) + validate_node_update(new, old))


# --- Namespace ----------------------------------------------------------------------------------------------


def validate_namespace(ns: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNamespace``: finalizers are qualified names, unprefixed only ``kubernetes``."""
    errs: ErrorList = []
    spec = CORE_V1.root(ns, errs).child("spec")
    path = spec.at("finalizers")  # upstream reports every finalizer at the list's path
    for name in spec.strings("finalizers"):
        errs.extend(_finalizer_name(path, name))
    return finish(errs)


STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
"""Upstream ``helper.IsStandardFinalizerName``: the finalizer names that need no domain prefix."""


def _finalizer_name(path: field.Path, name: str) -> ErrorList:
    """Upstream ``validateFinalizerName``: a qualified name; unprefixed only a standard finalizer."""
    errs = invalid_each(path, name, names.is_qualified_name(name))
    if "/" not in name and name not in STANDARD_FINALIZERS:
        detail = "name is neither a standard finalizer name nor is it fully qualified"
        errs.append(field.invalid(path, name, detail=detail))
    return errs


def validate_namespace_finalize_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNamespaceFinalizeUpdate`` (``namespaces/NAME/finalize``): each of
    ``spec.finalizers`` a valid finalizer name, reported at its index."""
    errs: ErrorList = []
    spec = CORE_V1.root(new, errs).child("spec")
    path = spec.at("finalizers")
    for i, name in enumerate(spec.strings("finalizers")):
        errs.extend(_finalizer_name(path.index(i), name))
    return finish(errs)


def validate_namespace_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNamespaceStatusUpdate``: the phase follows ``metadata.deletionTimestamp``."""
    errs: ErrorList = []
    root = CORE_V1.root(new, errs)
    phase = root.child("status").string("phase")
    path = field.new_path("status", "Phase")
    if not root.child("metadata").has("deletionTimestamp"):
        if phase != "Active":
            errs.append(field.invalid(path, phase, detail="may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        detail = "may only be 'Terminating' if `deletionTimestamp` is not empty"
        errs.append(field.invalid(path, phase, detail=detail))
    return finish(errs)


# --- ReplicationController ----------------------------------------------------------------------------------


def validate_replication_controller(rc: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicationControllerSpec``: a non-empty selector that matches the template labels,
    a template that always restarts and has no deadline."""
    errs: ErrorList = []
    spec = CORE_V1.root(rc, errs).child("spec")
    read_nonnegative(spec, "minReadySeconds", "replicas")
    selector = spec.string_map("selector")
    if not selector:
        errs.append(field.required(spec.at("selector")))
    template = spec.mapping("template")
    if template is None:
        errs.append(field.required(spec.at("template")))
        return finish(errs)
    labels = template.child("metadata").string_map("labels")
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        at = template.at("metadata").child("labels")
        errs.append(field.invalid(at, labels, detail="`selector` does not match template `labels`"))
    check_pod_template_spec(template)
    tpl_spec = template.child("spec")
    policy = tpl_spec.string("restartPolicy")
    if policy != "Always":
        errs.append(field.not_supported(tpl_spec.at("restartPolicy"), policy, supported=("Always",)))
    if tpl_spec.has("activeDeadlineSeconds"):
        detail = "activeDeadlineSeconds in ReplicationController is not Supported"
        errs.append(field.forbidden(tpl_spec.at("activeDeadlineSeconds"), detail))
    return finish(errs)


def _rc_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicationControllerUpdate``: the create rules on ``new``; nothing is frozen."""
    return validate_replication_controller(new)


def validate_replication_controller_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicationControllerStatus``: counts not negative and consistent."""
    errs: ErrorList = []
    status = CORE_V1.root(new, errs).child("status")
    counts = read_nonnegative(
        status, "replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"
    )
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if counts[key] > counts["replicas"]:
            errs.append(field.invalid(status.at(key), counts[key], detail="cannot be greater than status.replicas"))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        detail = "cannot be greater than readyReplicas"
        errs.append(field.invalid(status.at("availableReplicas"), counts["availableReplicas"], detail=detail))
    return finish(errs)


def _no_rules(_obj: Mapping[str, Any], _old: Mapping[str, Any] | None = None) -> ErrorList:
    """Kinds whose only upstream rules are metadata rules (ServiceAccount)."""
    return []


# --- the registry's tables ----------------------------------------------------------------------------------


def _with_create(create: Validate, update: ValidateUpdate | None = None) -> ValidateUpdate:
    """An update validator that runs ``create`` on the new object, then ``update`` (if any)."""

    def validate(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
        return finish(create(new) + (update(new, old) if update is not None else []))

    return validate


CREATE_VALIDATORS: Final[dict[tuple[str, str], Validate]] = {
    ("", "Pod"): validate_pod_create,
    ("", "Node"): validate_node,
    ("", "Namespace"): validate_namespace,
    ("", "Service"): validate_service,
    ("", "ConfigMap"): validate_config_map,
    ("", "Secret"): validate_secret,
    ("", "ServiceAccount"): _no_rules,
    ("", "Event"): validate_event,
    ("", "PersistentVolume"): validate_persistent_volume,
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim,
    ("", "ReplicationController"): validate_replication_controller,
}
"""``(group, kind)`` -> ``validate(obj)`` for a create."""

UPDATE_VALIDATORS: Final[dict[tuple[str, str], ValidateUpdate]] = {
    ("", "Pod"): validate_pod_update,
    ("", "Node"): _node_update,
    ("", "Namespace"): _with_create(validate_namespace),
    ("", "Service"): validate_service_update,
    ("", "ConfigMap"): validate_config_map_update,
    ("", "Secret"): validate_secret_update,
    ("", "ServiceAccount"): _no_rules,
    ("", "Event"): validate_event_update,
    ("", "PersistentVolume"): validate_persistent_volume_update,
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim_update,
    ("", "ReplicationController"): _rc_update,
}
"""``(group, kind)`` -> ``validate(new, old)`` for an update of the main resource."""

STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], ValidateUpdate]] = {
    ("", "Pod"): validate_pod_status_update,
    ("", "Node"): validate_node_update,
    ("", "Namespace"): validate_namespace_status_update,
    ("", "Service"): validate_service_status_update,
    ("", "PersistentVolume"): _no_rules,
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim_status_update,
    ("", "ReplicationController"): validate_replication_controller_status_update,
}
"""``(group, kind)`` -> ``validate(new, old)`` for the ``/status`` subresource."""
