"""Kind-specific validation of apps/v1 workloads, as kube-apiserver's ``pkg/apis/apps/validation``.

Deployment, ReplicaSet, DaemonSet and StatefulSet: their ``spec`` on create and update (plus the registry
strategies' selector immutability), and their ``status`` on the ``/status`` subresource. Metadata is validated
generically by the API server, so paths here are rooted at the object (``spec.selector``) and nothing looks at
``metadata``. The API server loads this module by name and calls the three tables at the bottom; every
validator takes the already defaulted JSON dicts and returns an :data:`ErrorList`, never raising. What the
four kinds share (the pod template, selector immutability, Go printing, status counters) is in
:mod:`.workloads`.

Invariants and why
    * **No exception for bad JSON types.** Upstream rejects a string where an int belongs while decoding
      (a 400); kubeplane gets plain dicts, so every value is read through a :data:`~.reader.NAMED_GROUPS`
      reader, which turns a mismatch into a ``TypeInvalid`` field error (``must be of type integer``) and
      carries on as if the field were absent. An exception here would be a 500.
    * **Upstream's order and text.** Errors come in the order upstream appends them and ``str(error)`` is its
      message, because clients match on it.
    * **Upstream's quirks are kept**: a ReplicaSet's empty selector says ``invalid for deployment``; a
      StatefulSet's unparsable selector gets an empty detail; a StatefulSet template's pod spec is not
      validated at all (upstream's TODO: its volumes may name ``volumeClaimTemplates``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    CreateValidator,
    UpdateValidator,
    int_or_percent_value,
    invalid_each,
    is_not_more_than_100_percent,
    read_nonnegative,
    read_optional_nonnegative,
    semantic,
    validate_positive_int_or_percent,
)
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import Reader
from kubeplane.api.validation.selectors import as_selector, read_label_selector, validate_label_selector
from kubeplane.api.validation.workloads import (
    SELECTOR_MISMATCH,
    check_collision_count,
    check_not_above,
    check_pod_template,
    check_selector_and_template,
    go_intstr,
    go_strategy,
    go_surge,
    member_of,
    validate_selector_immutable,
)

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS"]

_REPLICAS_MSG: Final = "cannot be greater than status.replicas"


# --- Deployment and ReplicaSet -----------------------------------------------------------------------------


def _validate_deployment_strategy(strategy: Reader) -> None:
    errs = strategy.errs
    kind = strategy.string("type")
    if kind == "Recreate":
        if strategy.has("rollingUpdate"):
            detail = "may not be specified when strategy `type` is 'Recreate'"
            errs.append(field.forbidden(strategy.at("rollingUpdate"), detail))
    elif kind == "RollingUpdate":
        if not strategy.has("rollingUpdate"):
            errs.append(field.required(strategy.at("rollingUpdate"), "this should be defaulted and never be nil"))
            return
        ru = strategy.child("rollingUpdate")
        unavailable = go_intstr(ru.int_or_string("maxUnavailable"))
        surge = go_intstr(ru.int_or_string("maxSurge"))
        errs.extend(validate_positive_int_or_percent(unavailable, ru.at("maxUnavailable")))
        errs.extend(validate_positive_int_or_percent(surge, ru.at("maxSurge")))
        if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
            detail = "may not be 0 when `maxSurge` is 0"
            errs.append(field.invalid(ru.at("maxUnavailable"), unavailable, detail=detail))
        errs.extend(is_not_more_than_100_percent(unavailable, ru.at("maxUnavailable")))
    else:
        value = go_strategy(kind, strategy, go_surge)
        errs.append(field.not_supported(strategy.path, value, supported=["Recreate", "RollingUpdate"]))


def validate_deployment(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDeploymentSpec`` (apps/v1 has no ``rollbackTo``)."""
    errs: ErrorList = []
    spec = member_of(obj, errs)
    read_nonnegative(spec, "replicas")
    check_selector_and_template(spec, kind="deployment", owner="ReplicaSet", bad_detail="invalid label selector")
    _validate_deployment_strategy(spec.child("strategy"))
    min_ready = read_nonnegative(spec, "minReadySeconds")["minReadySeconds"]
    read_optional_nonnegative(spec, "revisionHistoryLimit")
    deadline = read_optional_nonnegative(spec, "progressDeadlineSeconds")
    if deadline is not None and deadline <= min_ready:
        detail = "must be greater than minReadySeconds"
        errs.append(field.invalid(spec.at("progressDeadlineSeconds"), deadline, detail=detail))
    return errs


def validate_deployment_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The new spec's checks, then the strategy's selector immutability."""
    return validate_deployment(new) + validate_selector_immutable(new, old)


def validate_replica_set(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicaSetSpec``; its empty-selector message says ``deployment``, as upstream's."""
    errs: ErrorList = []
    spec = member_of(obj, errs)
    read_nonnegative(spec, "replicas", "minReadySeconds")
    check_selector_and_template(spec, kind="deployment", owner="ReplicaSet", bad_detail="invalid label selector")
    return errs


def validate_replica_set_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The new spec's checks (upstream runs them twice; once here), then selector immutability."""
    return validate_replica_set(new) + validate_selector_immutable(new, old)


# --- DaemonSet ---------------------------------------------------------------------------------------------


def _validate_daemon_set_strategy(strategy: Reader) -> None:
    errs = strategy.errs
    kind = strategy.string("type")
    if kind == "OnDelete":
        return
    if kind != "RollingUpdate":
        value = go_strategy(kind, strategy, go_surge)
        errs.append(field.not_supported(strategy.path, value, supported=["RollingUpdate", "OnDelete"]))
        return
    if not strategy.has("rollingUpdate"):
        errs.append(field.required(strategy.at("rollingUpdate")))
        return
    ru = strategy.child("rollingUpdate")
    unavailable = go_intstr(ru.int_or_string("maxUnavailable"))
    surge = go_intstr(ru.int_or_string("maxSurge"))
    errs.extend(validate_positive_int_or_percent(unavailable, ru.at("maxUnavailable")))
    errs.extend(validate_positive_int_or_percent(surge, ru.at("maxSurge")))
    errs.extend(is_not_more_than_100_percent(unavailable, ru.at("maxUnavailable")))
    errs.extend(is_not_more_than_100_percent(surge, ru.at("maxSurge")))
    has_unavailable, has_surge = int_or_percent_value(unavailable) != 0, int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(field.invalid(ru.at("maxSurge"), surge, detail="may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(field.required(ru.at("maxUnavailable"), "cannot be 0 when maxSurge is 0"))


def _validate_daemon_set_spec(obj: Mapping[str, Any], *, allow_invalid_label_value: bool) -> ErrorList:
    """Upstream ``ValidateDaemonSetSpec``: a nil selector is not "required" but matches no template."""
    errs: ErrorList = []
    spec = member_of(obj, errs)
    sel = read_label_selector(spec, "selector")
    errs.extend(validate_label_selector(sel, spec.at("selector"), allow_invalid_label_value=allow_invalid_label_value))
    selector = as_selector(sel)
    # read quietly: check_pod_template reports the template's type errors
    tlabels = spec.with_errs([]).child("template").child("metadata").opt_string_map("labels")
    if selector is not None and not selector.matches(tlabels or {}):
        errs.append(field.invalid(spec.at("template").child("metadata", "labels"), tlabels, detail=SELECTOR_MISMATCH))
    if sel is not None and not sel:
        errs.append(field.invalid(spec.at("selector"), sel, detail="empty selector is invalid for daemonset"))
    check_pod_template(spec, None, owner="DaemonSet")
    read_nonnegative(spec, "minReadySeconds")
    _validate_daemon_set_strategy(spec.child("updateStrategy"))
    read_optional_nonnegative(spec, "revisionHistoryLimit")
    return errs


def _has_invalid_selector(obj: Mapping[str, Any]) -> bool:
    """Upstream ``hasInvalidLabelValueInLabelSelector``: any error at all in the stored selector."""
    return bool(validate_label_selector(read_label_selector(member_of(obj, []), "selector"), field.new_path("spec")))


def validate_daemon_set(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDaemonSet`` for the spec."""
    return _validate_daemon_set_spec(obj, allow_invalid_label_value=False)


def validate_daemon_set_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The spec's checks (invalid selector values tolerated if the stored selector had any), then immutability.

    Upstream's ``templateGeneration`` rules are not here: apps/v1 has no such field (the registry keeps it in
    an annotation it bumps itself), so they could only check the strategy's own bookkeeping.
    """
    allow = _has_invalid_selector(old)
    return _validate_daemon_set_spec(new, allow_invalid_label_value=allow) + validate_selector_immutable(new, old)


# --- StatefulSet -------------------------------------------------------------------------------------------


def _go_statefulset_ru(ru: Reader) -> dict[str, Any]:
    return {"Partition": ru.integer("partition", None) or 0, "MaxUnavailable": ru.int_or_string("maxUnavailable")}


def _validate_statefulset_strategy(spec: Reader) -> None:
    errs, strategy = spec.errs, spec.child("updateStrategy")
    kind = strategy.string("type")
    if kind == "":
        errs.append(field.required(spec.at("updateStrategy")))
    elif kind == "OnDelete":
        if strategy.has("rollingUpdate"):
            value = _go_statefulset_ru(strategy.child("rollingUpdate"))
            detail = "only allowed for updateStrategy 'RollingUpdate'"
            errs.append(field.invalid(strategy.at("rollingUpdate"), value, detail=detail))
    elif kind == "RollingUpdate":
        if strategy.has("rollingUpdate"):
            ru = strategy.child("rollingUpdate")
            read_nonnegative(ru, "partition")
            unavailable = ru.int_or_string("maxUnavailable")
            if unavailable is not None:
                errs.extend(validate_positive_int_or_percent(unavailable, ru.at("maxUnavailable")))
                if int_or_percent_value(unavailable) == 0:
                    errs.append(field.invalid(ru.at("maxUnavailable"), unavailable, detail="cannot be 0"))
                errs.extend(is_not_more_than_100_percent(unavailable, ru.at("maxUnavailable")))
    else:
        value = go_strategy(kind, strategy, _go_statefulset_ru)
        errs.append(field.invalid(spec.at("updateStrategy"), value, detail="must be 'RollingUpdate' or 'OnDelete'"))


def _validate_statefulset_spec(spec: Reader) -> None:
    errs = spec.errs
    policy = spec.string("podManagementPolicy")
    if policy == "":
        errs.append(field.required(spec.at("podManagementPolicy")))
    elif policy not in ("OrderedReady", "Parallel"):
        detail = "must be 'OrderedReady' or 'Parallel'"
        errs.append(field.invalid(spec.at("podManagementPolicy"), policy, detail=detail))
    _validate_statefulset_strategy(spec)
    if spec.has("persistentVolumeClaimRetentionPolicy"):
        retention = spec.child("persistentVolumeClaimRetentionPolicy")
        for member in ("whenDeleted", "whenScaled"):
            value = retention.string(member)
            if value not in ("Retain", "Delete"):
                errs.append(field.not_supported(retention.at(member), value, supported=["Retain", "Delete"]))
    read_nonnegative(spec, "replicas", "minReadySeconds")
    if spec.has("ordinals"):
        read_nonnegative(spec.child("ordinals"), "start")
    check_selector_and_template(spec, kind="statefulset", owner="StatefulSet", bad_detail="")


def validate_stateful_set(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateStatefulSetSpec``, plus (on create only) ``serviceName`` as a DNS-1123 label.

    The serviceName rule is kubernetes#130233 (v1.33): the name becomes each pod's ``subdomain``, so an invalid
    one would only fail later, in the controller. Existing objects are not re-checked on update.
    """
    errs: ErrorList = []
    spec = member_of(obj, errs)
    _validate_statefulset_spec(spec)
    service = spec.string("serviceName")
    if service:
        errs.extend(invalid_each(spec.at("serviceName"), service, names.is_dns1123_label(service)))
    return errs


_STATEFULSET_MUTABLE: Final = (
    "replicas", "template", "updateStrategy", "minReadySeconds", "ordinals", "persistentVolumeClaimRetentionPolicy"
)  # fmt: skip


def validate_stateful_set_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The spec's checks, then upstream's rule that only six spec fields may change."""
    errs: ErrorList = []
    _validate_statefulset_spec(member_of(new, errs))
    new_spec, old_spec = (member_of(o, []).data for o in (new, old))
    frozen_new = {k: v for k, v in new_spec.items() if k not in _STATEFULSET_MUTABLE}
    frozen_old = {k: v for k, v in old_spec.items() if k not in _STATEFULSET_MUTABLE}
    if semantic(frozen_new) != semantic(frozen_old):
        detail = (
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
            "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        )
        errs.append(field.forbidden(field.new_path("spec"), detail))
    return errs


# --- status ------------------------------------------------------------------------------------------------


def validate_deployment_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDeploymentStatusUpdate``."""
    errs: ErrorList = []
    st = member_of(new, errs, "status")
    c = read_nonnegative(st, "observedGeneration", bits=64)
    c |= read_nonnegative(
        st, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"
    )
    read_optional_nonnegative(st, "collisionCount")
    check_not_above(
        st, c, ("updatedReplicas", "readyReplicas", "availableReplicas"), limit="replicas", msg=_REPLICAS_MSG
    )
    check_not_above(st, c, ("availableReplicas",), limit="readyReplicas", msg="cannot be greater than readyReplicas")
    check_collision_count(st, member_of(old, [], "status"))
    return errs


def validate_replica_set_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicaSetStatusUpdate``."""
    errs: ErrorList = []
    st = member_of(new, errs, "status")
    c = read_nonnegative(st, "replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    c |= read_nonnegative(st, "observedGeneration", bits=64)
    members = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    check_not_above(st, c, members, limit="replicas", msg=_REPLICAS_MSG)
    check_not_above(st, c, ("availableReplicas",), limit="readyReplicas", msg="cannot be greater than readyReplicas")
    return errs


def validate_daemon_set_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDaemonSetStatusUpdate``."""
    errs: ErrorList = []
    st = member_of(new, errs, "status")
    read_nonnegative(st, "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
    read_nonnegative(st, "observedGeneration", bits=64)
    read_nonnegative(st, "updatedNumberScheduled", "numberAvailable", "numberUnavailable")
    read_optional_nonnegative(st, "collisionCount")
    check_collision_count(st, member_of(old, [], "status"))
    return errs


def validate_stateful_set_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateStatefulSetStatusUpdate``."""
    errs: ErrorList = []
    st = member_of(new, errs, "status")
    c = read_nonnegative(st, "replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    read_optional_nonnegative(st, "observedGeneration", bits=64)
    read_optional_nonnegative(st, "collisionCount")
    members = ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    check_not_above(st, c, members, limit="replicas", msg=_REPLICAS_MSG)
    msg = "cannot be greater than status.readyReplicas"
    check_not_above(st, c, ("availableReplicas",), limit="readyReplicas", msg=msg)
    check_collision_count(st, member_of(old, [], "status"))
    return errs


# --- the registry's tables ---------------------------------------------------------------------------------

CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    ("apps", "Deployment"): validate_deployment,
    ("apps", "ReplicaSet"): validate_replica_set,
    ("apps", "DaemonSet"): validate_daemon_set,
    ("apps", "StatefulSet"): validate_stateful_set,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("apps", "Deployment"): validate_deployment_update,
    ("apps", "ReplicaSet"): validate_replica_set_update,
    ("apps", "DaemonSet"): validate_daemon_set_update,
    ("apps", "StatefulSet"): validate_stateful_set_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    ("apps", "Deployment"): validate_deployment_status_update,
    ("apps", "ReplicaSet"): validate_replica_set_status_update,
    ("apps", "DaemonSet"): validate_daemon_set_status_update,
    ("apps", "StatefulSet"): validate_stateful_set_status_update,
}
