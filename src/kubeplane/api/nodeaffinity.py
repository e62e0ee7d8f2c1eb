"""Node selectors and node affinity, as component-helpers' ``scheduling/corev1/nodeaffinity``.

A ``v1.NodeSelector`` ORs its ``nodeSelectorTerms``; a term ANDs its ``matchExpressions`` (over node labels:
``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``) and its ``matchFields`` (``In``/``NotIn``
with exactly one value, over the node's fields, of which there is one: ``metadata.name``).

Upstream semantics kept, as the scheduler's NodeAffinity filter and the DaemonSet controller depend on them:
    * a term with neither expressions nor fields matches nothing; a selector without terms matches nothing;
    * ``matchFields`` are skipped for a node without a name (upstream's field set is then empty);
    * ``Gt``/``Lt`` compare base-10 int64 values; a node label that is not an integer does not match;
    * :func:`new_lazy_error_node_selector` (what ``GetRequiredNodeAffinity`` uses) keeps a term that fails to
      parse as "matches nothing" and reports its errors only when no other term matches, while
      :func:`new_node_selector` rejects the whole selector;
    * errors carry upstream's paths (``nodeSelectorTerms[0].matchExpressions[1].operator: Unsupported value:
      "Foo": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"``).

Everything is compiled once (label requirements into closures, field requirements into checks on the node
name), so matching a node allocates nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api import fields, labels
from kubeplane.api.labels import Operator, SelectorError
from kubeplane.api.validation import field as fielderr
from kubeplane.api.validation.field import Path
from kubeplane.api.views import section, spec_of

__all__ = [
    "NodeSelector",
    "NodeSelectorTerm",
    "PreferredSchedulingTerms",
    "RequiredNodeAffinity",
    "get_required_node_affinity",
    "new_lazy_error_node_selector",
    "new_node_selector",
    "new_preferred_scheduling_terms",
    "node_selector_matches",
]

_NODE_SELECTOR_OPS: Final[Mapping[str, Operator]] = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
    "Gt": Operator.GREATER_THAN,
    "Lt": Operator.LESS_THAN,
}
_FIELD_OPS: Final = ("In", "NotIn")
_NO_LABELS: Final[Mapping[str, str]] = {}


def _node_labels_and_name(node: Mapping[str, Any]) -> tuple[Mapping[str, str], str]:
    meta = node.get("metadata") or {}
    return meta.get("labels") or _NO_LABELS, meta.get("name") or ""


def _child(path: Path | None, name: str) -> Path:
    return Path(name) if path is None else path.child(name)


def _index(path: Path | None, i: int) -> Path:
    return Path("", subscript=str(i), parent=path)


def _errors_of(exc: SelectorError) -> list[fielderr.Error]:
    return list(exc.errors)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A compiled ``v1.NodeSelectorTerm``; a term with ``parse_errors`` matches no node.

    ``match_labels``/``match_fields`` are None when the term has no expressions/fields (no constraint).
    ``name_checks`` is ``match_fields`` compiled against the node name: ``(is metadata.name, value, equal)``.
    """

    match_labels: labels.Selector | None = None
    match_fields: fields.Selector | None = None
    parse_errors: tuple[fielderr.Error, ...] = ()
    name_checks: tuple[tuple[bool, str, bool], ...] = ()

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        """Upstream ``nodeSelectorTerm.match`` for a node given as its labels and name."""
        if self.parse_errors:
            return False
        if self.match_labels is not None and not self.match_labels.matcher(node_labels):
            return False
        if self.match_fields is not None and node_name:
            for is_name, value, equal in self.name_checks:
                if ((node_name if is_name else "") == value) is not equal:
                    return False
        return True


def _label_selector(
    exprs: Sequence[Mapping[str, Any]], path: Path
) -> tuple[labels.Selector | None, list[fielderr.Error]]:
    """Upstream ``nodeSelectorRequirementsAsSelector``: every requirement is checked, all errors collected."""
    errs: list[fielderr.Error] = []
    reqs: list[labels.Requirement] = []
    for i, expr in enumerate(exprs):
        p = _index(path, i)
        operator = expr.get("operator") or ""
        op = _NODE_SELECTOR_OPS.get(operator)
        if op is None:
            errs.append(fielderr.not_supported(p.child("operator"), operator, supported=list(_NODE_SELECTOR_OPS)))
            continue
        try:
            reqs.append(labels.new_requirement(expr.get("key") or "", op, expr.get("values"), path=p))
        except SelectorError as exc:
            errs.extend(_errors_of(exc))
    if errs:
        return None, errs
    return labels.everything().add(*reqs), []


def _field_selector(
    exprs: Sequence[Mapping[str, Any]], path: Path
) -> tuple[fields.Selector | None, list[fielderr.Error]]:
    """Upstream ``nodeSelectorRequirementsAsFieldSelector``: ``In``/``NotIn``, one value, keys unchecked."""
    errs: list[fielderr.Error] = []
    terms: list[fields.Requirement] = []
    for i, expr in enumerate(exprs):
        p = _index(path, i)
        operator = expr.get("operator") or ""
        if operator not in _FIELD_OPS:
            errs.append(fielderr.not_supported(p.child("operator"), operator, supported=_FIELD_OPS))
            continue
        values = expr.get("values")
        if values is None or len(values) != 1:
            shown = list(values) if values is not None else None
            errs.append(fielderr.invalid(p.child("values"), shown, detail="must have one element"))
            continue
        terms.append(fields.Requirement(expr.get("key") or "", values[0], operator == "In"))
    if errs:
        return None, errs
    return fields.Selector(tuple(terms)), []


def _is_empty_term(term: Mapping[str, Any]) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def _compile_term(term: Mapping[str, Any], path: Path) -> NodeSelectorTerm:
    errs: list[fielderr.Error] = []
    match_labels: labels.Selector | None = None
    match_fields: fields.Selector | None = None
    if term.get("matchExpressions"):
        match_labels, e = _label_selector(term["matchExpressions"], path.child("matchExpressions"))
        errs.extend(e)
    if term.get("matchFields"):
        match_fields, e = _field_selector(term["matchFields"], path.child("matchFields"))
        errs.extend(e)
    if errs:
        return NodeSelectorTerm(parse_errors=tuple(errs))
    checks: tuple[tuple[bool, str, bool], ...] = ()
    if match_fields is not None:
        checks = tuple((t.field == "metadata.name", t.value, t.equal) for t in match_fields.requirements)
    return NodeSelectorTerm(match_labels, match_fields, (), checks)


def _aggregate(errs: Sequence[fielderr.Error]) -> SelectorError | None:
    """Upstream ``errors.Flatten(errors.NewAggregate(errs))`` as one exception, None when there are none."""
    if not errs:
        return None
    return SelectorError(fielderr.aggregate_message(errs), errs)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A compiled ``v1.NodeSelector``: its non-empty terms, ORed (upstream ``LazyErrorNodeSelector``)."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    @property
    def parse_errors(self) -> tuple[fielderr.Error, ...]:
        """Every term's parse errors, in term order."""
        return tuple(e for t in self.terms for e in t.parse_errors)

    def matches_parts(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        """True when some term matches the node given as its labels and name (terms with errors never do)."""
        for term in self.terms:  # noqa: SIM110 - all()/any() would allocate a generator per node
            if term.matches(node_labels, node_name):
                return True
        return False

    def matches(self, node: Mapping[str, Any]) -> bool:
        """:meth:`matches_parts` for a node dict (upstream ``NodeSelector.Match``)."""
        node_labels, name = _node_labels_and_name(node)
        return self.matches_parts(node_labels, name)

    def match(self, node: Mapping[str, Any] | None) -> tuple[bool, SelectorError | None]:
        """Upstream ``LazyErrorNodeSelector.Match``: parse errors are returned only when no term matched."""
        if node is None:
            return False, None
        node_labels, name = _node_labels_and_name(node)
        errs: list[fielderr.Error] = []
        for term in self.terms:
            if term.parse_errors:
                errs.extend(term.parse_errors)
            elif term.matches(node_labels, name):
                return True, None
        return False, _aggregate(errs)


def new_lazy_error_node_selector(node_selector: Mapping[str, Any], *, path: Path | None = None) -> NodeSelector:
    """Compile ``node_selector`` keeping bad terms as errors for :meth:`NodeSelector.match` (never raises)."""
    at = _child(path, "nodeSelectorTerms")
    terms = node_selector.get("nodeSelectorTerms") or ()
    return NodeSelector(tuple(_compile_term(t, _index(at, i)) for i, t in enumerate(terms) if not _is_empty_term(t)))


def new_node_selector(node_selector: Mapping[str, Any], *, path: Path | None = None) -> NodeSelector:
    """Compile ``node_selector``, raising :class:`SelectorError` on any bad term (``NewNodeSelector``)."""
    compiled = new_lazy_error_node_selector(node_selector, path=path)
    err = _aggregate(compiled.parse_errors)
    if err is not None:
        raise err
    return compiled


def node_selector_matches(node_selector: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """One-off check of a node dict against a ``v1.NodeSelector`` dict; compile once to match many nodes."""
    return new_lazy_error_node_selector(node_selector).matches(node)


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerms:
    """Compiled ``[]v1.PreferredSchedulingTerm``: ``(weight, term)``, zero weights and empty terms dropped."""

    terms: tuple[tuple[int, NodeSelectorTerm], ...] = ()

    def score_parts(self, node_labels: Mapping[str, str], node_name: str) -> int:
        """The sum of the weights of the terms the node matches (upstream ``Score``)."""
        total = 0
        for weight, term in self.terms:
            if term.matches(node_labels, node_name):
                total += weight
        return total

    def score(self, node: Mapping[str, Any]) -> int:
        """:meth:`score_parts` for a node dict."""
        node_labels, name = _node_labels_and_name(node)
        return self.score_parts(node_labels, name)


def new_preferred_scheduling_terms(
    terms: Sequence[Mapping[str, Any]], *, path: Path | None = None
) -> PreferredSchedulingTerms:
    """Compile preferred terms (upstream ``NewPreferredSchedulingTerms``); raises :class:`SelectorError`.

    Error paths are ``[i].matchExpressions[j]...`` relative to ``path``, as upstream's.
    """
    errs: list[fielderr.Error] = []
    parsed: list[tuple[int, NodeSelectorTerm]] = []
    for i, term in enumerate(terms):
        weight = term.get("weight") or 0
        preference = term.get("preference") or {}
        if weight == 0 or _is_empty_term(preference):
            continue
        compiled = _compile_term(preference, _index(path, i))
        if compiled.parse_errors:
            errs.extend(compiled.parse_errors)
        else:
            parsed.append((int(weight), compiled))
    err = _aggregate(errs)
    if err is not None:
        raise err
    return PreferredSchedulingTerms(tuple(parsed))


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's ``spec.nodeSelector`` AND its required node affinity (upstream ``RequiredNodeAffinity``)."""

    label_selector: labels.Selector | None = None
    node_selector: NodeSelector | None = None

    def match_parts(self, node_labels: Mapping[str, str], node_name: str) -> tuple[bool, SelectorError | None]:
        """Upstream ``RequiredNodeAffinity.Match`` for a node given as its labels and name."""
        if self.label_selector is not None and not self.label_selector.matcher(node_labels):
            return False, None
        if self.node_selector is None:
            return True, None
        errs: list[fielderr.Error] = []
        for term in self.node_selector.terms:
            if term.parse_errors:
                errs.extend(term.parse_errors)
            elif term.matches(node_labels, node_name):
                return True, None
        return False, _aggregate(errs)

    def match(self, node: Mapping[str, Any]) -> tuple[bool, SelectorError | None]:
        """:meth:`match_parts` for a node dict; the error is set only when the affinity has bad terms."""
        node_labels, name = _node_labels_and_name(node)
        return self.match_parts(node_labels, name)


def get_required_node_affinity(pod: Mapping[str, Any]) -> RequiredNodeAffinity:
    """Parse a pod dict's ``spec.nodeSelector`` and required node affinity once (``GetRequiredNodeAffinity``).

    Bad affinity terms do not raise: as upstream, they are reported by :meth:`RequiredNodeAffinity.match`.
    """
    spec = spec_of(pod)
    node_selector_map = spec.get("nodeSelector")
    selector = labels.selector_from_set(node_selector_map) if node_selector_map else None
    required = section(spec, "affinity", "nodeAffinity").get("requiredDuringSchedulingIgnoredDuringExecution")
    node_selector = new_lazy_error_node_selector(required) if required is not None else None
    return RequiredNodeAffinity(selector, node_selector)
