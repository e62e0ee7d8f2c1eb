"""Label and node selectors: metav1 ``ValidateLabelSelector`` and core's ``ValidateNodeSelector``, written once.

A label selector is validated in one of two ways, and both run the same rules (:func:`check_label_selector`):

* **in place** (core/v1 kinds and pod specs): :func:`check_label_selector` reads the selector member by member
  and checks each part as it is read, so a type error and the rule errors of its neighbours come in reading
  order (and :func:`~.reader.finish` later drops what a type error made moot);
* **read first** (the named groups: apps workloads, PodDisruptionBudget, ClusterRole aggregation): the
  selector is read once into Go's JSON form by :func:`clean_label_selector`, which reports the type errors; that
  form is what upstream prints as a bad value and what :func:`as_selector` converts, and
  :func:`validate_label_selector` then checks it.

Node selector requirements share the operator, key and value rules and add ``Gt``/``Lt`` and ``matchFields``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api import labels, meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader

__all__ = [
    "as_selector",
    "check_label_selector",
    "check_node_selector",
    "check_node_selector_term",
    "clean_label_selector",
    "read_label_selector",
    "validate_label_selector",
]


def _check_requirement(expr: Reader, *, gt_lt: bool, check_values: bool) -> None:
    """A ``LabelSelectorRequirement`` (``gt_lt``: a ``NodeSelectorRequirement``): the operator and its
    values, the key a qualified name, the values label values (unless ``check_values`` is off)."""
    op, values = expr.string("operator"), expr.strings("values")
    if op in ("In", "NotIn"):
        if not values:
            expr.errs.append(field.required(expr.at("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            expr.errs.append(field.forbidden(expr.at("values"), detail))
    elif gt_lt and op in ("Gt", "Lt"):
        if len(values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            expr.errs.append(field.required(expr.at("values"), detail))
    else:
        expr.errs.append(field.invalid(expr.at("operator"), op, detail="not a valid selector operator"))
    key = expr.string("key")
    expr.errs.extend(invalid_each(expr.at("key"), key, names.is_qualified_name(key)))
    if check_values:
        for i, v in enumerate(values):
            expr.errs.extend(invalid_each(expr.at("values").index(i), v, names.is_valid_label_value(v)))


def check_label_selector(sel: Reader, *, check_values: bool = True) -> None:
    """metav1 ``ValidateLabelSelector``; ``check_values=False`` is ``AllowInvalidLabelValueInSelector``."""
    sel.errs.extend(meta.validate_labels(sel.string_map("matchLabels"), sel.at("matchLabels")))
    for expr in sel.items("matchExpressions"):
        _check_requirement(expr, gt_lt=False, check_values=check_values)


def clean_label_selector(sel: Reader) -> dict[str, Any]:
    """A ``metav1.LabelSelector`` object with wrongly typed parts reported and dropped.

    The result is in Go's JSON form (keys sorted, ``omitempty`` honoured), so it both feeds
    :func:`labels.label_selector_as_selector` and prints as upstream prints the selector in an error.
    """
    out: dict[str, Any] = {}
    match_labels = sel.opt_string_map("matchLabels")
    if match_labels:
        out["matchLabels"] = match_labels
    exprs: list[dict[str, Any]] = []
    for e in sel.each("matchExpressions"):
        expr: dict[str, Any] = {"key": e.string("key"), "operator": e.string("operator")}
        values = e.strings("values")
        if values:
            expr["values"] = values
        exprs.append(expr)
    if exprs:
        out["matchExpressions"] = exprs
    return out


def read_label_selector(r: Reader, key: str) -> dict[str, Any] | None:
    """Member ``key`` as :func:`clean_label_selector` reads it; None when absent (a nil pointer)."""
    return clean_label_selector(r.child(key)) if r.has(key) else None


def validate_label_selector(
    sel: Mapping[str, Any] | None, path: Path, *, allow_invalid_label_value: bool = False
) -> ErrorList:
    """metav1 ``ValidateLabelSelector`` of a selector from :func:`clean_label_selector`; nil passes."""
    if sel is None:
        return []
    errs: ErrorList = []
    # a clean selector is well typed, so reading it reports nothing and the dialect does not matter
    check_label_selector(Reader(sel, path, errs, NAMED_GROUPS), check_values=not allow_invalid_label_value)
    return errs


def as_selector(sel: Mapping[str, Any] | None) -> labels.Selector | None:
    """``metav1.LabelSelectorAsSelector``; None where upstream returns an error."""
    try:
        return labels.label_selector_as_selector(sel)
    except labels.SelectorError:
        return None


def check_node_selector_term(term: Reader, *, check_values: bool) -> None:
    """Upstream ``ValidateNodeSelectorTerm``: label requirements (with Gt/Lt) and ``metadata.name`` fields."""
    for expr in term.items("matchExpressions"):
        _check_requirement(expr, gt_lt=True, check_values=check_values)
    for req in term.items("matchFields"):
        op, values = req.string("operator"), req.strings("values")
        if op in ("In", "NotIn"):
            if len(values) != 1:
                detail = "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
                req.errs.append(field.required(req.at("values"), detail))
        else:
            req.errs.append(field.invalid(req.at("operator"), op, detail="not a valid selector operator"))
        key = req.string("key")
        if key != "metadata.name":
            req.errs.append(field.invalid(req.at("key"), key, detail="not a valid field selector key"))
        else:
            for i, v in enumerate(values):
                req.errs.extend(invalid_each(req.at("values").index(i), v, names.is_dns1123_subdomain(v)))


def check_node_selector(sel: Reader) -> None:
    """Upstream ``ValidateNodeSelector``: at least one term; requirements as label selectors plus Gt/Lt."""
    terms = sel.items("nodeSelectorTerms")
    if not terms:
        sel.errs.append(field.required(sel.at("nodeSelectorTerms"), "must have at least one node selector term"))
    for term in terms:
        check_node_selector_term(term, check_values=True)
