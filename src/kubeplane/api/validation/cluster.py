"""Kind-specific validation of the cluster-support kinds, as kube-apiserver's ``pkg/apis/<group>/validation``:
the registry's tables for them, and the rules of the small ones.

Lease (coordination.k8s.io), PriorityClass (scheduling.k8s.io), PodDisruptionBudget (policy) and
StorageClass (storage.k8s.io) are here; RBAC kinds (rbac.authorization.k8s.io) are in :mod:`.rbac` and the
events.k8s.io Event in :mod:`.events_v1`. The API server loads this module by name and looks validators up by
``(group, kind)`` in the three tables at the bottom. Same contract as :mod:`.apps`: defaulted JSON dicts in, an
:data:`ErrorList` out, never an exception, metadata left to the API server's generic checks (except where
upstream's kind-specific code itself looks at it: PriorityClass's reserved ``system-`` names), messages and
paths verbatim.

Invariants
    * Read through a :data:`~.reader.NAMED_GROUPS` reader: a wrong type is one ``TypeInvalid`` error showing the
      value as sent, and errors come in upstream's order (no :func:`~.reader.finish`).
    * Where upstream prints a Go struct as the bad value (a PodDisruptionBudget spec), it is rebuilt as Go
      marshals the internal type: field names, no JSON tags.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import events_v1, field, names, rbac
from kubeplane.api.validation.common import (
    IMMUTABLE_MSG,
    CreateValidator,
    UpdateValidator,
    invalid_each,
    is_not_more_than_100_percent,
    read_nonnegative,
    read_optional_nonnegative,
    utf8_len,
    validate_positive_int_or_percent,
)
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.rbac import RBAC_GROUP
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader
from kubeplane.api.validation.selectors import read_label_selector, validate_label_selector

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS"]

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: Final = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


# --- coordination.k8s.io Lease -----------------------------------------------------------------------------


def validate_lease(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateLeaseSpec`` (also the whole of ``ValidateLeaseUpdate`` beyond metadata)."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(obj, errs).child("spec")
    spec.string("holderIdentity")
    spec.time("acquireTime", micro=True)
    spec.time("renewTime", micro=True)
    duration = spec.integer("leaseDurationSeconds", None)
    if duration is not None and duration <= 0:
        errs.append(field.invalid(spec.at("leaseDurationSeconds"), duration, detail="must be greater than 0"))
    read_optional_nonnegative(spec, "leaseTransitions")
    strategy = spec.opt_string("strategy")
    if strategy is not None:
        # upstream appends "strategy" to a path that already ends in it: spec.strategy.strategy
        at = spec.at("strategy").child("strategy")
        if "/" not in strategy:
            if strategy != "OldestEmulationVersion":
                errs.append(field.not_supported(at, strategy, supported=["OldestEmulationVersion"]))
        else:
            errs.extend(invalid_each(at, strategy, names.is_qualified_name(strategy)))
    if spec.string("preferredHolder") and not strategy:
        errs.append(field.forbidden(spec.at("preferredHolder"), "may only be specified if `strategy` is defined"))
    return errs


def validate_lease_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """A Lease has no immutable spec fields."""
    return validate_lease(new)


# --- scheduling.k8s.io PriorityClass -----------------------------------------------------------------------


def _system_priority_class_error(name: str, value: int, global_default: bool) -> str | None:
    """Upstream ``IsKnownSystemPriorityClass``'s error, or ``None`` for an exact built-in."""
    expected = SYSTEM_PRIORITY_CLASSES.get(name)
    if expected is None:
        return f"{name} is not a known system priority class"
    if value != expected:
        return f"value of {name} PriorityClass must be {expected}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePriorityClass``: reserved ``system-`` names, the user value ceiling, the policy."""
    errs: ErrorList = []
    pc = NAMED_GROUPS.root(obj, errs)
    value = pc.integer("value", None) or 0
    global_default = pc.boolean("globalDefault") is True
    pc.string("description")
    name = NAMED_GROUPS.root(obj, []).child("metadata").string("name")
    if name.startswith("system-"):
        error = _system_priority_class_error(name, value, global_default)
        if error is not None:
            detail = f"priority class names with 'system-' prefix are reserved for system use only. error: {error}"
            errs.append(field.forbidden(field.new_path("metadata", "name"), detail))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(field.forbidden(pc.at("value"), detail))
    policy = pc.opt_string("preemptionPolicy")
    if policy == "":
        errs.append(field.required(pc.at("preemptionPolicy")))
    elif policy is not None and policy not in ("PreemptLowerPriority", "Never"):
        supported = ["PreemptLowerPriority", "Never"]
        errs.append(field.not_supported(pc.at("preemptionPolicy"), policy, supported=supported))
    return errs


def validate_priority_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks on ``new``, then ``value`` and ``preemptionPolicy`` immutability."""
    errs = validate_priority_class(new)
    n, o = NAMED_GROUPS.root(new, []), NAMED_GROUPS.root(old, [])
    if n.integer("value", None) != o.integer("value", None):
        errs.append(field.forbidden(field.new_path("value"), "may not be changed in an update."))
    policy = n.opt_string("preemptionPolicy")
    if policy != o.opt_string("preemptionPolicy"):
        errs.append(field.invalid(field.new_path("preemptionPolicy"), policy, detail=IMMUTABLE_MSG))
    return errs


# --- policy PodDisruptionBudget ----------------------------------------------------------------------------


def _validate_pdb(obj: Mapping[str, Any], *, allow_invalid_label_value: bool) -> ErrorList:
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(obj, errs).child("spec")
    min_available = spec.int_or_string("minAvailable")
    max_unavailable = spec.int_or_string("maxUnavailable")
    sel = read_label_selector(spec, "selector")
    policy = spec.opt_string("unhealthyPodEvictionPolicy")
    if min_available is not None and max_unavailable is not None:
        go_spec = {
            "MinAvailable": min_available,
            "Selector": sel,
            "MaxUnavailable": max_unavailable,
            "UnhealthyPodEvictionPolicy": policy,
        }
        detail = "minAvailable and maxUnavailable cannot be both set"
        errs.append(field.invalid(spec.path, go_spec, detail=detail))
    for member, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        if value is not None:
            errs.extend(validate_positive_int_or_percent(value, spec.at(member)))
            errs.extend(is_not_more_than_100_percent(value, spec.at(member)))
    errs.extend(validate_label_selector(sel, spec.at("selector"), allow_invalid_label_value=allow_invalid_label_value))
    if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
        supported = ["AlwaysAllow", "IfHealthyBudget"]
        errs.append(field.not_supported(spec.at("unhealthyPodEvictionPolicy"), policy, supported=supported))
    return errs


def validate_pdb(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodDisruptionBudgetSpec``: exclusive budgets, int-or-percent, selector, policy."""
    return _validate_pdb(obj, allow_invalid_label_value=False)


def validate_pdb_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The spec is mutable; invalid selector values are tolerated if the stored selector had any."""
    old_sel = read_label_selector(NAMED_GROUPS.root(old, []).child("spec"), "selector")
    allow = bool(validate_label_selector(old_sel, field.new_path("spec", "selector")))
    return _validate_pdb(new, allow_invalid_label_value=allow)


_CONDITION_REASON_FMT: Final = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON_MSG: Final = (
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'"
)
_CONDITION_REASON_EXAMPLES: Final = ("my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")
_CONDITION_REASON_RE: Final = re.compile(_CONDITION_REASON_FMT)


def validate_conditions(status: Reader, name: str = "conditions") -> None:
    """metav1 ``ValidateConditions``: unique types, then each condition's type/status/generation/time/reason."""
    seen: set[str] = set()
    errs = status.errs
    for c in status.each(name):
        ctype = c.string("type")
        if ctype in seen:
            errs.append(field.duplicate(c.at("type"), ctype))
        seen.add(ctype)
        errs.extend(invalid_each(c.at("type"), ctype, names.is_qualified_name(ctype)))
        cstatus = c.string("status")
        if cstatus not in ("True", "False", "Unknown"):
            errs.append(field.not_supported(c.at("status"), cstatus, supported=["False", "True", "Unknown"]))
        generation = c.integer("observedGeneration", None, bits=64) or 0
        if generation < 0:
            detail = "must be greater than or equal to zero"
            errs.append(field.invalid(c.at("observedGeneration"), generation, detail=detail))
        if c.time("lastTransitionTime") is None:
            errs.append(field.required(c.at("lastTransitionTime"), "must be set"))
        reason = c.string("reason")
        if not reason:
            errs.append(field.required(c.at("reason"), "must be set"))
        else:
            if _CONDITION_REASON_RE.fullmatch(reason) is None:
                msg = names.regex_error(_CONDITION_REASON_MSG, _CONDITION_REASON_FMT, *_CONDITION_REASON_EXAMPLES)
                errs.append(field.invalid(c.at("reason"), reason, detail=msg))
            if utf8_len(reason) > 1024:
                errs.append(field.too_long(c.at("reason"), 1024))
        if utf8_len(c.string("message")) > 32 * 1024:
            errs.append(field.too_long(c.at("message"), 32 * 1024))


def validate_pdb_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodDisruptionBudgetStatusUpdate`` for policy/v1."""
    errs: ErrorList = []
    status = NAMED_GROUPS.root(new, errs).child("status")
    validate_conditions(status)
    read_nonnegative(status, "disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    status.integer("observedGeneration", None, bits=64)
    return errs


# --- storage.k8s.io StorageClass ---------------------------------------------------------------------------


def _validate_allowed_topologies(sc: Reader) -> None:
    """Upstream ``validateAllowedTopologies``, including its quirk: the list of terms seen starts with one nil
    map per term, so a term without expressions is a ``Duplicate`` once per term in the list."""
    errs, terms = sc.errs, list(sc.each("allowedTopologies"))
    seen: list[dict[str, frozenset[str]]] = []
    for term in terms:
        exprs: dict[str, frozenset[str]] = {}
        for req in term.each("matchLabelExpressions"):
            key, values = req.string("key"), req.strings("values")
            if not values:
                errs.append(field.required(req.at("values")))
            for i, v in enumerate(values):
                if v in values[:i]:
                    errs.append(field.duplicate(req.at("values").index(i), v))
            errs.extend(invalid_each(req.at("key"), key, names.is_qualified_name(key)))
            if key in exprs:
                errs.append(field.duplicate(req.at("key"), key))
            exprs[key] = frozenset(values)
        duplicates = (0 if exprs else len(terms)) + sum(1 for s in seen if s == exprs)
        errs.extend(field.duplicate(term.at("matchLabelExpressions"), "") for _ in range(duplicates))
        seen.append(exprs)


def validate_storage_class(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateStorageClass``: provisioner, parameters, reclaim policy, binding mode, topologies."""
    errs: ErrorList = []
    sc = NAMED_GROUPS.root(obj, errs)
    provisioner = sc.string("provisioner")
    if not provisioner:
        errs.append(field.required(sc.at("provisioner")))
    else:
        msgs = names.is_qualified_name(provisioner.lower())
        errs.extend(invalid_each(sc.at("provisioner"), provisioner, msgs))
    params = sc.opt_string_map("parameters") or {}
    if len(params) > 512:
        errs.append(field.too_long(sc.at("parameters"), 512))
    else:
        if "" in params:
            errs.append(field.invalid(sc.at("parameters"), "", detail="field can not be empty."))
        if sum(utf8_len(k) + utf8_len(v) for k, v in params.items()) > 256 * 1024:
            errs.append(field.too_long(sc.at("parameters"), 256 * 1024))
    reclaim = sc.opt_string("reclaimPolicy")
    if reclaim and reclaim not in ("Delete", "Retain"):
        errs.append(field.not_supported(sc.at("reclaimPolicy"), reclaim, supported=["Delete", "Retain"]))
    mode = sc.opt_string("volumeBindingMode")
    if mode is None:
        errs.append(field.required(sc.at("volumeBindingMode")))
    elif mode not in ("Immediate", "WaitForFirstConsumer"):
        supported = ["Immediate", "WaitForFirstConsumer"]
        errs.append(field.not_supported(sc.at("volumeBindingMode"), mode, supported=supported))
    _validate_allowed_topologies(sc)
    sc.strings("mountOptions")
    sc.boolean("allowVolumeExpansion")
    return errs


def validate_storage_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks, then upstream's frozen fields (``parameters`` compared as Go's reflect.DeepEqual: a
    missing map differs from an empty one)."""
    errs = validate_storage_class(new)
    n, o = NAMED_GROUPS.root(new, []), NAMED_GROUPS.root(old, [])
    if n.opt_string_map("parameters") != o.opt_string_map("parameters"):
        errs.append(field.forbidden(field.new_path("parameters"), "updates to parameters are forbidden."))
    if n.string("provisioner") != o.string("provisioner"):
        errs.append(field.forbidden(field.new_path("provisioner"), "updates to provisioner are forbidden."))
    if n.string("reclaimPolicy") != o.string("reclaimPolicy"):
        errs.append(field.forbidden(field.new_path("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
    mode = n.opt_string("volumeBindingMode")
    if mode != o.opt_string("volumeBindingMode"):
        errs.append(field.invalid(field.new_path("volumeBindingMode"), mode, detail=IMMUTABLE_MSG))
    return errs


# --- the registry's tables ---------------------------------------------------------------------------------

CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    ("coordination.k8s.io", "Lease"): validate_lease,
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class,
    ("policy", "PodDisruptionBudget"): validate_pdb,
    ("storage.k8s.io", "StorageClass"): validate_storage_class,
    (RBAC_GROUP, "Role"): rbac.validate_role,
    (RBAC_GROUP, "ClusterRole"): rbac.validate_cluster_role,
    (RBAC_GROUP, "RoleBinding"): rbac.validate_role_binding,
    (RBAC_GROUP, "ClusterRoleBinding"): rbac.validate_cluster_role_binding,
    ("events.k8s.io", "Event"): events_v1.validate_event,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("coordination.k8s.io", "Lease"): validate_lease_update,
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class_update,
    ("policy", "PodDisruptionBudget"): validate_pdb_update,
    ("storage.k8s.io", "StorageClass"): validate_storage_class_update,
    (RBAC_GROUP, "Role"): rbac.validate_role_update,
    (RBAC_GROUP, "ClusterRole"): rbac.validate_cluster_role_update,
    (RBAC_GROUP, "RoleBinding"): rbac.validate_role_binding_update,
    (RBAC_GROUP, "ClusterRoleBinding"): rbac.validate_cluster_role_binding_update,
    ("events.k8s.io", "Event"): events_v1.validate_event_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("policy", "PodDisruptionBudget"): validate_pdb_status_update,
}
