"""Kind-specific validation of the cluster-support kinds, as kube-apiserver's ``pkg/apis/<group>/validation``.

Lease (coordination.k8s.io), PriorityClass (scheduling.k8s.io), PodDisruptionBudget (policy),
StorageClass (storage.k8s.io), Role / ClusterRole / RoleBinding / ClusterRoleBinding
(rbac.authorization.k8s.io) and Event (events.k8s.io). Same contract as :mod:`.apps`: defaulted JSON dicts
in, an :data:`ErrorList` out, never an exception, metadata left to the API server's generic checks (except
where upstream's kind-specific code itself looks at it: PriorityClass's reserved ``system-`` names, the
Event namespace), messages and paths verbatim.

Two upstream habits shape the output and are kept on purpose:

* **Internal paths for events.k8s.io Events.** Upstream converts a v1 Event to the internal core Event before
  validating, so errors name the internal fields: ``note`` is reported as ``message``, ``regarding`` as
  ``involvedObject``, ``deprecatedCount`` as ``count``, ``deprecatedSource`` as ``source``.
* **Go structs as bad values.** ``cannot change roleRef`` prints the internal ``RoleRef`` as Go marshals a
  struct without JSON tags (``{"APIGroup":...,"Kind":...,"Name":...}``); so do the Event immutability errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.apps import (
    FIELD_IMMUTABLE_MSG,
    CreateValidator,
    Fields,
    UpdateValidator,
    as_selector,
    clean_label_selector,
    is_not_more_than_100_percent,
    read_label_selector,
    read_nonnegative,
    root,
    validate_label_selector,
    validate_positive_int_or_percent,
)
from kubeplane.api.validation.field import ErrorList

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS"]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_PRIORITY_CLASSES: Final = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}


def _blen(s: str) -> int:
    """Go's ``len``: UTF-8 bytes."""
    return len(s.encode("utf-8", "surrogatepass"))


# --- coordination.k8s.io Lease -----------------------------------------------------------------------------


def validate_lease(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateLeaseSpec`` (also the whole of ``ValidateLeaseUpdate`` beyond metadata)."""
    errs: ErrorList = []
    spec = root(obj, errs).obj("spec")
    spec.get_str("holderIdentity")
    spec.get_time("acquireTime", micro=True)
    spec.get_time("renewTime", micro=True)
    duration = spec.get_int("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(field.invalid(spec.at("leaseDurationSeconds"), duration, detail="must be greater than 0"))
    transitions = spec.get_int("leaseTransitions")
    if transitions is not None and transitions < 0:
        detail = "must be greater than or equal to 0"
        errs.append(field.invalid(spec.at("leaseTransitions"), transitions, detail=detail))
    strategy = spec.get_opt_str("strategy")
    if strategy is not None:
        # upstream appends "strategy" to a path that already ends in it: spec.strategy.strategy
        at = spec.at("strategy").child("strategy")
        if "/" not in strategy:
            if strategy != "OldestEmulationVersion":
                errs.append(field.not_supported(at, strategy, supported=["OldestEmulationVersion"]))
        else:
            errs.extend(field.invalid(at, strategy, detail=m) for m in names.is_qualified_name(strategy))
    if spec.get_str("preferredHolder") and not strategy:
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
    pc = root(obj, errs)
    value = pc.get_int("value") or 0
    global_default = pc.get_bool("globalDefault")
    pc.get_str("description")
    name = root(obj, []).obj("metadata").get_str("name")
    if name.startswith("system-"):
        error = _system_priority_class_error(name, value, global_default)
        if error is not None:
            detail = f"priority class names with 'system-' prefix are reserved for system use only. error: {error}"
            errs.append(field.forbidden(field.new_path("metadata", "name"), detail))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(field.forbidden(pc.at("value"), detail))
    policy = pc.get_opt_str("preemptionPolicy")
    if policy == "":
        errs.append(field.required(pc.at("preemptionPolicy")))
    elif policy is not None and policy not in ("PreemptLowerPriority", "Never"):
        supported = ["PreemptLowerPriority", "Never"]
        errs.append(field.not_supported(pc.at("preemptionPolicy"), policy, supported=supported))
    return errs


def validate_priority_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks on ``new``, then ``value`` and ``preemptionPolicy`` immutability."""
    errs = validate_priority_class(new)
    n, o = root(new, []), root(old, [])
    if n.get_int("value") != o.get_int("value"):
        errs.append(field.forbidden(field.new_path("value"), "may not be changed in an update."))
    policy = n.get_opt_str("preemptionPolicy")
    if policy != o.get_opt_str("preemptionPolicy"):
        errs.append(field.invalid(field.new_path("preemptionPolicy"), policy, detail=FIELD_IMMUTABLE_MSG))
    return errs


# --- policy PodDisruptionBudget ----------------------------------------------------------------------------


def _validate_pdb(obj: Mapping[str, Any], *, allow_invalid_label_value: bool) -> ErrorList:
    errs: ErrorList = []
    spec = root(obj, errs).obj("spec")
    min_available = spec.get_int_or_str("minAvailable")
    max_unavailable = spec.get_int_or_str("maxUnavailable")
    sel = read_label_selector(spec, "selector")
    policy = spec.get_opt_str("unhealthyPodEvictionPolicy")
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
    old_sel = read_label_selector(root(old, []).obj("spec"), "selector")
    allow = bool(validate_label_selector(old_sel, field.new_path("spec", "selector")))
    return _validate_pdb(new, allow_invalid_label_value=allow)


_CONDITION_REASON_FMT: Final = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?"
_CONDITION_REASON_MSG: Final = (
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_'"
)
_CONDITION_REASON_EXAMPLES: Final = ("my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB")
_CONDITION_REASON_RE: Final = re.compile(_CONDITION_REASON_FMT)


def validate_conditions(status: Fields, name: str = "conditions") -> None:
    """metav1 ``ValidateConditions``: unique types, then each condition's type/status/generation/time/reason."""
    seen: set[str] = set()
    errs = status.errs
    for c in status.objs(name):
        ctype = c.get_str("type")
        if ctype in seen:
            errs.append(field.duplicate(c.at("type"), ctype))
        seen.add(ctype)
        errs.extend(field.invalid(c.at("type"), ctype, detail=m) for m in names.is_qualified_name(ctype))
        cstatus = c.get_str("status")
        if cstatus not in ("True", "False", "Unknown"):
            errs.append(field.not_supported(c.at("status"), cstatus, supported=["False", "True", "Unknown"]))
        generation = c.get_int("observedGeneration", bits=64) or 0
        if generation < 0:
            detail = "must be greater than or equal to zero"
            errs.append(field.invalid(c.at("observedGeneration"), generation, detail=detail))
        if c.get_time("lastTransitionTime") is None:
            errs.append(field.required(c.at("lastTransitionTime"), "must be set"))
        reason = c.get_str("reason")
        if not reason:
            errs.append(field.required(c.at("reason"), "must be set"))
        else:
            if _CONDITION_REASON_RE.fullmatch(reason) is None:
                msg = names.regex_error(_CONDITION_REASON_MSG, _CONDITION_REASON_FMT, *_CONDITION_REASON_EXAMPLES)
                errs.append(field.invalid(c.at("reason"), reason, detail=msg))
            if _blen(reason) > 1024:
                errs.append(field.too_long(c.at("reason"), 1024))
        if _blen(c.get_str("message")) > 32 * 1024:
            errs.append(field.too_long(c.at("message"), 32 * 1024))


def validate_pdb_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodDisruptionBudgetStatusUpdate`` for policy/v1."""
    errs: ErrorList = []
    status = root(new, errs).obj("status")
    validate_conditions(status)
    read_nonnegative(status, "disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    status.get_int("observedGeneration", bits=64)
    return errs


# --- storage.k8s.io StorageClass ---------------------------------------------------------------------------


def _validate_allowed_topologies(sc: Fields) -> None:
    """Upstream ``validateAllowedTopologies``, including its quirk: the list of terms seen starts with one nil
    map per term, so a term without expressions is a ``Duplicate`` once per term in the list."""
    errs, terms = sc.errs, list(sc.objs("allowedTopologies"))
    seen: list[dict[str, frozenset[str]]] = []
    for term in terms:
        exprs: dict[str, frozenset[str]] = {}
        for req in term.objs("matchLabelExpressions"):
            key, values = req.get_str("key"), req.get_str_list("values")
            if not values:
                errs.append(field.required(req.at("values")))
            for i, v in enumerate(values):
                if v in values[:i]:
                    errs.append(field.duplicate(req.at("values").index(i), v))
            errs.extend(field.invalid(req.at("key"), key, detail=m) for m in names.is_qualified_name(key))
            if key in exprs:
                errs.append(field.duplicate(req.at("key"), key))
            exprs[key] = frozenset(values)
        duplicates = (0 if exprs else len(terms)) + sum(1 for s in seen if s == exprs)
        errs.extend(field.duplicate(term.at("matchLabelExpressions"), "") for _ in range(duplicates))
        seen.append(exprs)


def validate_storage_class(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateStorageClass``: provisioner, parameters, reclaim policy, binding mode, topologies."""
    errs: ErrorList = []
    sc = root(obj, errs)
    provisioner = sc.get_str("provisioner")
    if not provisioner:
        errs.append(field.required(sc.at("provisioner")))
    else:
        msgs = names.is_qualified_name(provisioner.lower())
        errs.extend(field.invalid(sc.at("provisioner"), provisioner, detail=m) for m in msgs)
    params = sc.get_str_map("parameters") or {}
    if len(params) > 512:
        errs.append(field.too_long(sc.at("parameters"), 512))
    else:
        if "" in params:
            errs.append(field.invalid(sc.at("parameters"), "", detail="field can not be empty."))
        if sum(_blen(k) + _blen(v) for k, v in params.items()) > 256 * 1024:
            errs.append(field.too_long(sc.at("parameters"), 256 * 1024))
    reclaim = sc.get_opt_str("reclaimPolicy")
    if reclaim and reclaim not in ("Delete", "Retain"):
        errs.append(field.not_supported(sc.at("reclaimPolicy"), reclaim, supported=["Delete", "Retain"]))
    mode = sc.get_opt_str("volumeBindingMode")
    if mode is None:
        errs.append(field.required(sc.at("volumeBindingMode")))
    elif mode not in ("Immediate", "WaitForFirstConsumer"):
        supported = ["Immediate", "WaitForFirstConsumer"]
        errs.append(field.not_supported(sc.at("volumeBindingMode"), mode, supported=supported))
    _validate_allowed_topologies(sc)
    sc.get_str_list("mountOptions")
    sc.get_bool("allowVolumeExpansion")
    return errs


def validate_storage_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks, then upstream's frozen fields (``parameters`` compared as Go's reflect.DeepEqual: a
    missing map differs from an empty one)."""
    errs = validate_storage_class(new)
    n, o = root(new, []), root(old, [])
    if n.get_str_map("parameters") != o.get_str_map("parameters"):
        errs.append(field.forbidden(field.new_path("parameters"), "updates to parameters are forbidden."))
    if n.get_str("provisioner") != o.get_str("provisioner"):
        errs.append(field.forbidden(field.new_path("provisioner"), "updates to provisioner are forbidden."))
    if n.get_str("reclaimPolicy") != o.get_str("reclaimPolicy"):
        errs.append(field.forbidden(field.new_path("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
    mode = n.get_opt_str("volumeBindingMode")
    if mode != o.get_opt_str("volumeBindingMode"):
        errs.append(field.invalid(field.new_path("volumeBindingMode"), mode, detail=FIELD_IMMUTABLE_MSG))
    return errs


# --- rbac.authorization.k8s.io -----------------------------------------------------------------------------


def _validate_rules(role: Fields, *, namespaced: bool) -> None:
    """Upstream ``ValidatePolicyRule`` for each rule: verbs, then resource rules xor non-resource URLs."""
    errs = role.errs
    for rule in role.objs("rules"):
        verbs, urls = rule.get_str_list("verbs"), rule.get_str_list("nonResourceURLs")
        groups, resources = rule.get_str_list("apiGroups"), rule.get_str_list("resources")
        resource_names = rule.get_str_list("resourceNames")
        if not verbs:
            errs.append(field.required(rule.at("verbs"), "verbs must contain at least one value"))
        if urls:
            if namespaced:
                detail = "namespaced rules cannot apply to non-resource URLs"
                errs.append(field.invalid(rule.at("nonResourceURLs"), urls, detail=detail))
            if groups or resources or resource_names:
                detail = "rules cannot apply to both regular resources and non-resource URLs"
                errs.append(field.invalid(rule.at("nonResourceURLs"), urls, detail=detail))
            continue
        if not groups:
            errs.append(field.required(rule.at("apiGroups"), "resource rules must supply at least one api group"))
        if not resources:
            errs.append(field.required(rule.at("resources"), "resource rules must supply at least one resource"))


def validate_role(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateRole``: namespaced rules."""
    errs: ErrorList = []
    _validate_rules(root(obj, errs), namespaced=True)
    return errs


def validate_role_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """A Role's rules are mutable: the create checks only."""
    return validate_role(new)


def _validate_cluster_role(obj: Mapping[str, Any], *, allow_invalid_label_value: bool) -> ErrorList:
    errs: ErrorList = []
    role = root(obj, errs)
    _validate_rules(role, namespaced=False)
    if role.has("aggregationRule"):
        agg = role.obj("aggregationRule")
        selectors = list(agg.objs("clusterRoleSelectors"))
        if not selectors:
            detail = "at least one clusterRoleSelector required if aggregationRule is non-nil"
            errs.append(field.required(agg.at("clusterRoleSelectors"), detail))
        for s in selectors:
            assert s.path is not None
            sel = clean_label_selector(s)
            errs.extend(validate_label_selector(sel, s.path, allow_invalid_label_value=allow_invalid_label_value))
            if as_selector(sel) is None:
                # upstream shadows the selector with the failed conversion's nil result: the value is null
                errs.append(field.invalid(s.path, None, detail="invalid label selector."))
    return errs


def validate_cluster_role(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateClusterRole``: cluster rules and the aggregation selectors."""
    return _validate_cluster_role(obj, allow_invalid_label_value=False)


def validate_cluster_role_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks; invalid selector values are tolerated if the stored aggregation selectors had any."""
    agg = root(old, []).obj("aggregationRule")
    at = agg.at("clusterRoleSelectors")
    allow = any(validate_label_selector(clean_label_selector(s), at) for s in agg.objs("clusterRoleSelectors"))
    return _validate_cluster_role(new, allow_invalid_label_value=allow)


def _validate_subject(s: Fields, *, namespaced: bool) -> None:
    """Upstream ``ValidateRoleBindingSubject``."""
    errs = s.errs
    name, kind, group = s.get_str("name"), s.get_str("kind"), s.get_str("apiGroup")
    if not name:
        errs.append(field.required(s.at("name")))
    if kind == "ServiceAccount":
        if name:
            errs.extend(field.invalid(s.at("name"), name, detail=m) for m in names.is_dns1123_subdomain(name))
        if group:
            errs.append(field.not_supported(s.at("apiGroup"), group, supported=[""]))
        if not namespaced and not s.get_str("namespace"):
            errs.append(field.required(s.at("namespace")))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errs.append(field.not_supported(s.at("apiGroup"), group, supported=[RBAC_GROUP]))
    else:
        errs.append(field.not_supported(s.at("kind"), kind, supported=["ServiceAccount", "User", "Group"]))


def _role_ref(obj: Mapping[str, Any], errs: ErrorList) -> tuple[Fields, dict[str, str]]:
    ref = root(obj, errs).obj("roleRef")
    return ref, {"APIGroup": ref.get_str("apiGroup"), "Kind": ref.get_str("kind"), "Name": ref.get_str("name")}


def _validate_binding(obj: Mapping[str, Any], *, namespaced: bool) -> ErrorList:
    """Upstream ``ValidateRoleBinding`` / ``ValidateClusterRoleBinding``: roleRef, then each subject."""
    errs: ErrorList = []
    ref, go_ref = _role_ref(obj, errs)
    if go_ref["APIGroup"] != RBAC_GROUP:
        errs.append(field.not_supported(ref.at("apiGroup"), go_ref["APIGroup"], supported=[RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if go_ref["Kind"] not in kinds:
        errs.append(field.not_supported(ref.at("kind"), go_ref["Kind"], supported=kinds))
    name = go_ref["Name"]
    if not name:
        errs.append(field.required(ref.at("name")))
    else:
        errs.extend(field.invalid(ref.at("name"), name, detail=m) for m in meta.is_valid_path_segment_name(name))
    for s in root(obj, errs).objs("subjects"):
        _validate_subject(s, namespaced=namespaced)
    return errs


def _validate_binding_update(new: Mapping[str, Any], old: Mapping[str, Any], *, namespaced: bool) -> ErrorList:
    errs = _validate_binding(new, namespaced=namespaced)
    go_ref = _role_ref(new, [])[1]
    if go_ref != _role_ref(old, [])[1]:
        errs.append(field.invalid(field.new_path("roleRef"), go_ref, detail="cannot change roleRef"))
    return errs


def validate_role_binding(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateRoleBinding``."""
    return _validate_binding(obj, namespaced=True)


def validate_role_binding_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks, then ``cannot change roleRef``."""
    return _validate_binding_update(new, old, namespaced=True)


def validate_cluster_role_binding(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateClusterRoleBinding``: roleRef must name a ClusterRole; SA subjects need a namespace."""
    return _validate_binding(obj, namespaced=False)


def validate_cluster_role_binding_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Create checks, then ``cannot change roleRef``."""
    return _validate_binding_update(new, old, namespaced=False)


# --- events.k8s.io Event -----------------------------------------------------------------------------------

# (JSON member, internal Go field) of core.ObjectReference, in the Go struct's order.
_OBJECT_REFERENCE: Final = (
    ("kind", "Kind"), ("namespace", "Namespace"), ("name", "Name"), ("uid", "UID"), ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"), ("fieldPath", "FieldPath"),
)  # fmt: skip


def _go_object_reference(ref: Fields) -> dict[str, str]:
    """An internal ``core.ObjectReference`` as Go marshals it (field names, no tags)."""
    return {go: ref.get_str(member) for member, go in _OBJECT_REFERENCE}


def _event_view(obj: Mapping[str, Any], errs: ErrorList) -> dict[str, Any]:
    """A v1 Event read into upstream's internal field names, with the Go values errors print."""
    ev = root(obj, errs)
    source = ev.obj("deprecatedSource")
    series = ev.obj("series") if ev.has("series") else None
    return {
        "involvedObject": _go_object_reference(ev.obj("regarding")),
        "related": _go_object_reference(ev.obj("related")) if ev.has("related") else None,
        "reason": ev.get_str("reason"),
        "message": ev.get_str("note"),
        "source": {"Component": source.get_str("component"), "Host": source.get_str("host")},
        "firstTimestamp": ev.get_time("deprecatedFirstTimestamp"),
        "lastTimestamp": ev.get_time("deprecatedLastTimestamp"),
        "count": ev.get_int("deprecatedCount") or 0,
        "type": ev.get_str("type"),
        "eventTime": ev.get_time("eventTime", micro=True),
        "action": ev.get_str("action"),
        "reportingController": ev.get_str("reportingController"),
        "reportingInstance": ev.get_str("reportingInstance"),
        "series": None
        if series is None
        else (series.get_int("count") or 0, series.get_time("lastObservedTime", micro=True)),
        "namespace": root(obj, []).obj("metadata").get_str("namespace"),
    }


def _legacy_validate_event(e: Mapping[str, Any], errs: ErrorList) -> None:
    """Upstream ``legacyValidateEvent``: lenient for events without ``eventTime`` (old clients)."""
    ns, involved_ns = e["namespace"], e["involvedObject"]["Namespace"]
    mismatch = field.new_path("involvedObject", "namespace")
    if e["eventTime"] is None:
        if (not involved_ns and ns not in ("", "default")) or (involved_ns and ns != involved_ns):
            errs.append(field.invalid(mismatch, involved_ns, detail="does not match event.namespace"))
    else:
        if not involved_ns and ns not in ("default", "kube-system"):
            errs.append(field.invalid(mismatch, involved_ns, detail="does not match event.namespace"))
        controller = e["reportingController"]
        if not controller:
            errs.append(field.required(field.new_path("reportingController")))
        msgs = names.is_qualified_name(controller)
        errs.extend(field.invalid(field.new_path("reportingController"), controller, detail=m) for m in msgs)
        for member, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128), ("message", 1024)):
            if not e[member] and member != "message":
                errs.append(field.required(field.new_path(member)))
            if _blen(e[member]) > limit:
                errs.append(field.invalid(field.new_path(member), "", detail=f"can have at most {limit} characters"))
    errs.extend(field.invalid(field.new_path("namespace"), ns, detail=m) for m in names.is_dns1123_subdomain(ns))


def _validate_series(e: Mapping[str, Any], errs: ErrorList) -> None:
    """Upstream ``validateV1EventSeries``."""
    if e["series"] is not None:
        count, last_observed = e["series"]
        if count < 2:
            errs.append(field.invalid(field.new_path("series.count"), "", detail="should be at least 2"))
        if last_observed is None:
            errs.append(field.required(field.new_path("series.lastObservedTime")))


def validate_event(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateEventCreate`` for events.k8s.io/v1: the legacy rules, then the strict ones."""
    errs: ErrorList = []
    e = _event_view(obj, errs)
    _legacy_validate_event(e, errs)
    _validate_series(e, errs)
    if e["eventTime"] is None:
        errs.append(field.required(field.new_path("eventTime")))
    if e["type"] not in ("Normal", "Warning"):
        errs.append(field.invalid(field.new_path("type"), "", detail=f"has invalid value: {e['type']}"))
    unset = (
        ("firstTimestamp", e["firstTimestamp"] is not None),
        ("lastTimestamp", e["lastTimestamp"] is not None),
        ("count", e["count"] != 0),
        ("source", any(e["source"].values())),
    )
    errs.extend(field.invalid(field.new_path(member), "", detail="needs to be unset") for member, bad in unset if bad)
    return errs


def _go_time(t: datetime | None, *, micro: bool) -> str | None:
    if t is None:
        return None
    return meta.format_micro_time(t) if micro else meta.format_time(t)


# Upstream's order, including its second "reason" check.
_EVENT_IMMUTABLE: Final = (
    "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "reason", "type",
    "eventTime", "action", "related", "reportingController", "reportingInstance",
)  # fmt: skip


def validate_event_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateEventUpdate`` for events.k8s.io/v1: legacy rules, a changed series, frozen fields."""
    errs: ErrorList = []
    e, o = _event_view(new, errs), _event_view(old, [])
    _legacy_validate_event(e, errs)
    if e["series"] != o["series"]:
        _validate_series(e, errs)
    for member in _EVENT_IMMUTABLE:
        if e[member] != o[member]:
            value = e[member]
            if member in ("firstTimestamp", "lastTimestamp", "eventTime"):
                value = _go_time(value, micro=member == "eventTime")
            errs.append(field.invalid(field.new_path(member), value, detail=FIELD_IMMUTABLE_MSG))
    return errs


# --- the registry's tables ---------------------------------------------------------------------------------

CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    ("coordination.k8s.io", "Lease"): validate_lease,
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class,
    ("policy", "PodDisruptionBudget"): validate_pdb,
    ("storage.k8s.io", "StorageClass"): validate_storage_class,
    (RBAC_GROUP, "Role"): validate_role,
    (RBAC_GROUP, "ClusterRole"): validate_cluster_role,
    (RBAC_GROUP, "RoleBinding"): validate_role_binding,
    (RBAC_GROUP, "ClusterRoleBinding"): validate_cluster_role_binding,
    ("events.k8s.io", "Event"): validate_event,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("coordination.k8s.io", "Lease"): validate_lease_update,
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class_update,
    ("policy", "PodDisruptionBudget"): validate_pdb_update,
    ("storage.k8s.io", "StorageClass"): validate_storage_class_update,
    (RBAC_GROUP, "Role"): validate_role_update,
    (RBAC_GROUP, "ClusterRole"): validate_cluster_role_update,
    (RBAC_GROUP, "RoleBinding"): validate_role_binding_update,
    (RBAC_GROUP, "ClusterRoleBinding"): validate_cluster_role_binding_update,
    ("events.k8s.io", "Event"): validate_event_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("policy", "PodDisruptionBudget"): validate_pdb_status_update,
}
