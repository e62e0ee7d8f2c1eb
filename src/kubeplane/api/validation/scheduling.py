"""The scheduling constraints of a pod spec: node and pod (anti-)affinity, tolerations, topology spread.

As upstream's ``validateAffinity``, ``ValidateTolerations`` (in :mod:`kubeplane.api.taints`) and
``validateTopologySpreadConstraints``, called by :func:`.pods.check_pod_spec`. Upstream's historical paths are
kept: pod affinity ``namespaces`` are reported under ``.namespace``, and a ``matchLabelKeys`` entry that is also
in the label selector at the term's own path indexed by the key's position.

Invariants
    * Selectors are checked in place (:func:`.selectors.check_label_selector`); the ``matchLabelKeys`` rules read
      them again, and the repeated type errors are removed by :func:`.reader.finish`.
    * A preferred node-affinity term may hold label values that are not valid label values (upstream allows
      them in preferences); a required one may not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import check_enum, invalid_each
from kubeplane.api.validation.reader import Reader
from kubeplane.api.validation.selectors import check_label_selector, check_node_selector, check_node_selector_term

__all__ = ["check_affinity", "check_topology_spread", "read_tolerations"]

_NODE_POLICIES: Final = ("Honor", "Ignore")
_ACTIONS: Final = ("DoNotSchedule", "ScheduleAnyway")
_BOTH_SEL: Final = "exists in both matchLabelKeys and labelSelector"


def _check_selector(sel: Reader | None) -> None:
    if sel is not None:
        check_label_selector(sel)


def _label_keys(term: Reader, key: str, selector: Reader | None) -> None:
    keys = term.strings(key)
    if keys and selector is None:
        term.errs.append(field.forbidden(term.at(key), "must not be specified when labelSelector is not set"))
        return
    for i, k in enumerate(keys):
        term.errs.extend(invalid_each(term.at(key).index(i), k, names.is_qualified_name(k)))


def _pod_affinity_term(term: Reader) -> None:
    selector = term.mapping("labelSelector")
    _check_selector(selector)
    _check_selector(term.mapping("namespaceSelector"))
    for ns in term.strings("namespaces"):  # upstream reports these at ".namespace"
        term.errs.extend(invalid_each(term.at("namespace"), ns, names.is_dns1123_label(ns)))
    _label_keys(term, "matchLabelKeys", selector)
    _label_keys(term, "mismatchLabelKeys", selector)
    match_keys, mismatch = term.strings("matchLabelKeys"), set(term.strings("mismatchLabelKeys"))
    if selector is not None:
        index = {k: i for i, k in enumerate(match_keys)}
        seen = set(selector.string_map("matchLabels"))
        for expr in selector.items("matchExpressions"):
            k = expr.string("key")
            if k in index and k in seen:  # as upstream, reported at the term's path
                assert term.path is not None
                term.errs.append(field.invalid(term.path.index(index[k]), k, detail=_BOTH_SEL))
            seen.add(k)
    for i, k in enumerate(match_keys):
        if k in mismatch:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            term.errs.append(field.invalid(term.at("matchLabelKeys").index(i), k, detail=detail))
    topology_key = term.string("topologyKey")
    if not topology_key:
        term.errs.append(field.required(term.at("topologyKey"), "can not be empty"))
    term.errs.extend(invalid_each(term.at("topologyKey"), topology_key, names.is_qualified_name(topology_key)))


def _weight(o: Reader) -> None:
    weight = o.integer("weight")
    if weight is not None and not 1 <= weight <= 100:
        o.errs.append(field.invalid(o.at("weight"), weight, detail="must be in the range 1-100"))


def check_affinity(spec: Reader) -> None:
    affinity = spec.mapping("affinity")
    if affinity is None:
        return
    node = affinity.mapping("nodeAffinity")
    if node is not None:
        required = node.mapping("requiredDuringSchedulingIgnoredDuringExecution")
        if required is not None:
            check_node_selector(required)
        for term in node.items("preferredDuringSchedulingIgnoredDuringExecution"):
            _weight(term)
            preference = term.mapping("preference")  # invalid label values are allowed in preferences
            if preference is not None:
                check_node_selector_term(preference, check_values=False)
    for key in ("podAffinity", "podAntiAffinity"):
        pod = affinity.mapping(key)
        if pod is None:
            continue
        for term in pod.items("requiredDuringSchedulingIgnoredDuringExecution"):
            _pod_affinity_term(term)
        for weighted in pod.items("preferredDuringSchedulingIgnoredDuringExecution"):
            _weight(weighted)
            _pod_affinity_term(weighted.child("podAffinityTerm"))


def read_tolerations(spec: Reader) -> list[Mapping[str, Any]]:
    """The tolerations as well-typed dicts (wrong types reported), for :func:`taints.validate_tolerations`."""
    out: list[Mapping[str, Any]] = []
    for t in spec.items("tolerations"):
        for key in ("key", "operator", "value", "effect"):
            t.string(key)
        t.integer("tolerationSeconds", None)
        out.append(t.data)
    return out


def check_topology_spread(spec: Reader) -> None:
    constraints = spec.items("topologySpreadConstraints")
    for i, c in enumerate(constraints):
        max_skew = c.integer("maxSkew")
        if max_skew is not None and max_skew <= 0:
            c.errs.append(field.invalid(c.at("maxSkew"), max_skew, detail="must be greater than zero"))
        key, action = c.string("topologyKey"), c.string("whenUnsatisfiable")
        if not key:
            c.errs.append(field.required(c.at("topologyKey"), "can not be empty"))
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            c.errs.append(field.not_supported(c.at("whenUnsatisfiable"), action, supported=_ACTIONS))
        if any(
            r.string("topologyKey") == key and r.string("whenUnsatisfiable") == action for r in constraints[i + 1 :]
        ):
            c.errs.append(field.duplicate(c.at("{topologyKey, whenUnsatisfiable}"), f"{{{key}, {action}}}"))
        min_domains = c.integer("minDomains", None)
        if min_domains is not None:
            if min_domains <= 0:
                c.errs.append(field.invalid(c.at("minDomains"), min_domains, detail="must be greater than zero"))
            if action != "DoNotSchedule":
                detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                c.errs.append(field.invalid(c.at("minDomains"), min_domains, detail=detail))
        check_enum(c, "nodeAffinityPolicy", _NODE_POLICIES, required=False)
        check_enum(c, "nodeTaintsPolicy", _NODE_POLICIES, required=False)
        selector = c.mapping("labelSelector")
        keys = c.strings("matchLabelKeys")
        if keys:
            in_selector: set[str] = set()
            if selector is None:
                c.errs.append(
                    field.forbidden(c.at("matchLabelKeys"), "must not be specified when labelSelector is not set")
                )
            else:
                in_selector = set(selector.string_map("matchLabels"))
                in_selector.update(e.string("key") for e in selector.items("matchExpressions"))
            for j, k in enumerate(keys):
                c.errs.extend(invalid_each(c.at("matchLabelKeys").index(j), k, names.is_qualified_name(k)))
                if k in in_selector:
                    c.errs.append(field.invalid(c.at("matchLabelKeys").index(j), k, detail=_BOTH_SEL))
        _check_selector(selector)
