"""RBAC validation (rbac.authorization.k8s.io): Role, ClusterRole, RoleBinding and ClusterRoleBinding, as
kube-apiserver's ``pkg/apis/rbac/validation``.

A role is a list of policy rules (verbs, then resource rules xor non-resource URLs; namespaced roles cannot
grant URLs); a ClusterRole may instead aggregate others by label selector. A binding names a role and its
subjects, and its ``roleRef`` can never change.

Invariants
    * Read through a :data:`~.reader.NAMED_GROUPS` reader: a wrong type is one ``TypeInvalid`` error showing the
      value as sent; lists are read element by element as Go decodes them (:meth:`~.reader.Reader.each`).
    * ``cannot change roleRef`` prints the internal ``RoleRef`` as Go marshals a struct without JSON tags
      (``{"APIGroup":...,"Kind":...,"Name":...}``).
    * A ClusterRole update tolerates invalid label values in aggregation selectors if the stored object already
      had an invalid selector (upstream's ``AllowInvalidLabelValueInSelector`` on update).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader
from kubeplane.api.validation.selectors import as_selector, clean_label_selector, validate_label_selector

__all__ = [
    "RBAC_GROUP",
    "validate_cluster_role",
    "validate_cluster_role_binding",
    "validate_cluster_role_binding_update",
    "validate_cluster_role_update",
    "validate_role",
    "validate_role_binding",
    "validate_role_binding_update",
    "validate_role_update",
]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"


def _validate_rules(role: Reader, *, namespaced: bool) -> None:
    """Upstream ``ValidatePolicyRule`` for each rule: verbs, then resource rules xor non-resource URLs."""
    errs = role.errs
    for rule in role.each("rules"):
        verbs, urls = rule.strings("verbs"), rule.strings("nonResourceURLs")
        groups, resources = rule.strings("apiGroups"), rule.strings("resources")
        resource_names = rule.strings("resourceNames")
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
    _validate_rules(NAMED_GROUPS.root(obj, errs), namespaced=True)
    return errs


def validate_role_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """A Role's rules are mutable: the create checks only."""
    return validate_role(new)


def _validate_cluster_role(obj: Mapping[str, Any], *, allow_invalid_label_value: bool) -> ErrorList:
    errs: ErrorList = []
    role = NAMED_GROUPS.root(obj, errs)
    _validate_rules(role, namespaced=False)
    if role.has("aggregationRule"):
        agg = role.child("aggregationRule")
        selectors = list(agg.each("clusterRoleSelectors"))
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
    agg = NAMED_GROUPS.root(old, []).child("aggregationRule")
    at = agg.at("clusterRoleSelectors")
    allow = any(validate_label_selector(clean_label_selector(s), at) for s in agg.each("clusterRoleSelectors"))
    return _validate_cluster_role(new, allow_invalid_label_value=allow)


def _validate_subject(s: Reader, *, namespaced: bool) -> None:
    """Upstream ``ValidateRoleBindingSubject``."""
    errs = s.errs
    name, kind, group = s.string("name"), s.string("kind"), s.string("apiGroup")
    if not name:
        errs.append(field.required(s.at("name")))
    if kind == "ServiceAccount":
        if name:
            errs.extend(invalid_each(s.at("name"), name, names.is_dns1123_subdomain(name)))
        if group:
            errs.append(field.not_supported(s.at("apiGroup"), group, supported=[""]))
        if not namespaced and not s.string("namespace"):
            errs.append(field.required(s.at("namespace")))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            errs.append(field.not_supported(s.at("apiGroup"), group, supported=[RBAC_GROUP]))
    else:
        errs.append(field.not_supported(s.at("kind"), kind, supported=["ServiceAccount", "User", "Group"]))


def _role_ref(obj: Mapping[str, Any], errs: ErrorList) -> tuple[Reader, dict[str, str]]:
    ref = NAMED_GROUPS.root(obj, errs).child("roleRef")
    return ref, {"APIGroup": ref.string("apiGroup"), "Kind": ref.string("kind"), "Name": ref.string("name")}


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
        errs.extend(invalid_each(ref.at("name"), name, meta.is_valid_path_segment_name(name)))
    for s in NAMED_GROUPS.root(obj, errs).each("subjects"):
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
