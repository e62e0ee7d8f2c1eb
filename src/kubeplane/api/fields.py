"""Field selectors and each kind's selectable fields: apimachinery's ``pkg/fields`` and registry strategies.

A field selector (``?fieldSelector=spec.nodeName=node-1,status.phase!=Failed``) is an AND of ``field=value``
(also ``==``) and ``field!=value`` terms over a flat ``dict[str, str]`` that each kind derives from an object
(:func:`selectable_fields`: upstream's ``ToSelectableFields`` / ``GetAttrs`` per strategy). Only the fields a
kind's field-label conversion accepts may be used (:func:`convert_field_label`), else the API server answers
400 with upstream's ``field label not supported: <name>``.

Invariants
    * A :class:`Selector` is immutable. Terms of a parsed selector are in the sorted order of their raw text,
      as upstream, so ``str()`` is canonical (``b=1,a=2`` prints ``a=2,b=1``), with values re-escaped.
    * A field missing from the object's set reads as ``""`` (upstream ``Set.Get``): ``spec.nodeName=``
      selects unscheduled pods, ``spec.nodeName!=`` scheduled ones.
    * Values escape ``\\``, ``,`` and ``=`` with a backslash (:func:`escape_value`); a bare ``,`` or ``=``
      in a value, or an unknown escape, is an error. Field names are never escaped: the first operator splits.
    * A term with an empty field and an empty value (``=``) selects everything and is dropped, as upstream's
      ``Transform``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "SELECTABLE_FIELDS",
    "FieldSelectorError",
    "Fields",
    "KindFields",
    "Requirement",
    "Selector",
    "and_selectors",
    "convert_field_label",
    "escape_value",
    "everything",
    "object_meta_fields",
    "one_term_equal_selector",
    "one_term_not_equal_selector",
    "parse_and_transform_selector",
    "parse_selector",
    "parse_selector_for_kind",
    "selectable_fields",
    "selector_from_set",
    "unescape_value",
    "validate_field_selector",
]

Fields = Mapping[str, str]
TransformFunc = Callable[[str, str], tuple[str, str]]


class FieldSelectorError(ValueError):
    """A field selector that cannot be parsed or is not supported for a kind; ``str()`` is upstream's text."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term (upstream ``fields.Requirement``): ``field=value`` when ``equal``, else ``field!=value``."""

    field: str
    value: str
    equal: bool = True

    @property
    def operator(self) -> str:
        """``=`` or ``!=``, as upstream's ``selection.Equals`` / ``NotEquals``."""
        return "=" if self.equal else "!="

    def matches(self, fields: Fields) -> bool:
        """True when the field (``""`` if absent) equals the value, or differs for ``!=``."""
        return (fields.get(self.field, "") == self.value) is self.equal

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_value(self.value)}"


def _compile(terms: tuple[Requirement, ...]) -> Callable[[Fields], bool]:
    """One closure over precomputed ``(field, value, equal)`` triples; nothing is allocated per match."""
    if not terms:
        return lambda _: True
    triples = tuple((t.field, t.value, t.equal) for t in terms)

    def matches(fields: Fields) -> bool:
        get = fields.get
        for name, value, equal in triples:  # noqa: SIM110 - all() would allocate a generator per match
            if (get(name, "") == value) is not equal:
                return False
        return True

    return matches


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled field selector: the AND of its terms; no terms selects everything (upstream ``andTerm``)."""

    requirements: tuple[Requirement, ...] = ()
    matcher: Callable[[Fields], bool] = field(init=False, repr=False, compare=False)
    """The compiled ``fields -> bool``; grab it once in hot loops."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "matcher", _compile(self.requirements))

    def matches(self, fields: Fields) -> bool:
        """True when every term matches ``fields``."""
        return self.matcher(fields)

    def empty(self) -> bool:
        """True when the selector does not restrict the selection space."""
        return not self.requirements

    def requires_exact_match(self, field_name: str) -> str | None:
        """The value the first ``field_name=value`` term requires, else None (``!=`` never qualifies).

        The API server uses it to serve ``spec.nodeName=<node>`` from an index instead of a full scan.
        """
        for t in self.requirements:
            if t.equal and t.field == field_name:
                return t.value
        return None

    def transform(self, fn: TransformFunc) -> Selector:
        """Each term's ``(field, value)`` mapped by ``fn`` (which may raise); empty results are dropped."""
        out: list[Requirement] = []
        for t in self.requirements:
            name, value = fn(t.field, t.value)
            if name or value:
                out.append(Requirement(name, value, t.equal))
        return Selector(tuple(out))

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.requirements)


_EVERYTHING: Final = Selector()


def everything() -> Selector:
    """The selector that matches all field sets."""
    return _EVERYTHING


def one_term_equal_selector(field_name: str, value: str) -> Selector:
    """``field_name=value``."""
    return Selector((Requirement(field_name, value, True),))


def one_term_not_equal_selector(field_name: str, value: str) -> Selector:
    """``field_name!=value``."""
    return Selector((Requirement(field_name, value, False),))


def and_selectors(*selectors: Selector) -> Selector:
    """The AND of ``selectors`` (terms concatenated in order)."""
    return Selector(tuple(t for s in selectors for t in s.requirements))


def selector_from_set(fields: Mapping[str, str] | None) -> Selector:
    """``field=value`` for every entry, sorted by field; None or ``{}`` give :func:`everything`."""
    if not fields:
        return _EVERYTHING
    return Selector(tuple(Requirement(k, v, True) for k, v in sorted(fields.items())))


# --- syntax ------------------------------------------------------------------------------------------------

_ESCAPES: Final = str.maketrans({"\\": "\\\\", ",": "\\,", "=": "\\="})


def escape_value(value: str) -> str:
    """``value`` with ``\\``, ``,`` and ``=`` backslash-escaped (upstream ``fields.EscapeValue``)."""
    return value.translate(_ESCAPES)


def unescape_value(value: str) -> str:
    """The literal value of an escaped one (upstream ``UnescapeValue``); raises :class:`FieldSelectorError`.

    Only ``\\\\``, ``\\,`` and ``\\=`` are escapes; a bare ``,`` or ``=`` is rejected (upstream prints the
    code point: ``unescaped character in value: 61``), as is a trailing backslash.
    """
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise FieldSelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            raise FieldSelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(selector: str) -> list[str]:
    """Split on commas not preceded by an escaping backslash; the backslashes stay in the terms."""
    if not selector:
        return []
    terms: list[str] = []
    start = 0
    in_slash = False
    for i, ch in enumerate(selector):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """``(field, operator, raw value)`` at the first ``!=``, ``==`` or ``=``, or None without an operator."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse_and_transform_selector(selector: str, fn: TransformFunc | None = None) -> Selector:
    """Parse ``selector`` and map each term through ``fn`` (upstream ``ParseAndTransformSelector``).

    Raises :class:`FieldSelectorError` with upstream's ``invalid selector: '<s>'; can't understand '<term>'``
    or an escaping error; ``fn`` may raise its own.
    """
    terms: list[Requirement] = []
    for part in sorted(_split_terms(selector)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{selector}'; can't understand '{part}'")
        name, op, raw = split
        terms.append(Requirement(name, unescape_value(raw), op != "!="))
    return Selector(tuple(terms)).transform(fn if fn is not None else _identity)


def _identity(name: str, value: str) -> tuple[str, str]:
    return name, value


def parse_selector(selector: str) -> Selector:
    """Parse the field selector syntax (upstream ``fields.ParseSelector``); ``""`` is :func:`everything`."""
    return parse_and_transform_selector(selector)


# --- selectable fields per kind ----------------------------------------------------------------------------


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for p in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(p)
    return cur


def _str(obj: Mapping[str, Any], *path: str) -> str:
    v = _get(obj, *path)
    return v if isinstance(v, str) else ""


def _go_bool(v: Any) -> str:
    return "true" if v is True else "false"


def _go_int(v: Any) -> str:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else "0"


def object_meta_fields(obj: Mapping[str, Any], *, namespaced: bool) -> dict[str, str]:
    """``metadata.name`` (and ``metadata.namespace`` if ``namespaced``), upstream ``ObjectMetaFieldsSet``."""
    if namespaced:
        return {
            "metadata.name": _str(obj, "metadata", "name"),
            "metadata.namespace": _str(obj, "metadata", "namespace"),
        }
    return {"metadata.name": _str(obj, "metadata", "name")}


def _pod_fields(pod: Mapping[str, Any]) -> dict[str, str]:
    # Upstream reads the internal podIPs[0], which v1 conversion takes from status.podIP when that is set.
    pod_ip = _str(pod, "status", "podIP")
    ips = _get(pod, "status", "podIPs")
    if not pod_ip and isinstance(ips, list) and ips and isinstance(ips[0], Mapping):
        pod_ip = ips[0].get("ip") or ""
    return {
        "spec.nodeName": _str(pod, "spec", "nodeName"),
        "spec.restartPolicy": _str(pod, "spec", "restartPolicy"),
        "spec.schedulerName": _str(pod, "spec", "schedulerName"),
        "spec.serviceAccountName": _str(pod, "spec", "serviceAccountName"),
        "spec.hostNetwork": _go_bool(_get(pod, "spec", "hostNetwork")),
        "status.phase": _str(pod, "status", "phase"),
        "status.podIP": pod_ip,
        "status.nominatedNodeName": _str(pod, "status", "nominatedNodeName"),
    }


def _event_fields(event: Mapping[str, Any]) -> dict[str, str]:
    reporting = _str(event, "reportingComponent")  # internal ReportingController, v1 reportingComponent
    return {
        "involvedObject.kind": _str(event, "involvedObject", "kind"),
        "involvedObject.namespace": _str(event, "involvedObject", "namespace"),
        "involvedObject.name": _str(event, "involvedObject", "name"),
        "involvedObject.uid": _str(event, "involvedObject", "uid"),
        "involvedObject.apiVersion": _str(event, "involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _str(event, "involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _str(event, "involvedObject", "fieldPath"),
        "reason": _str(event, "reason"),
        "reportingComponent": reporting,
        "source": _str(event, "source", "component") or reporting,
        "type": _str(event, "type"),
    }


def _no_fields(_: Mapping[str, Any]) -> dict[str, str]:
    return {}


@dataclass(frozen=True, slots=True)
class KindFields:
    """What a kind offers to field selectors.

    ``extract`` gives the kind-specific fields (metadata fields are added by :func:`selectable_fields`);
    ``accepted`` lists the labels the kind's field-label conversion takes, ``aliases`` renames old labels
    (``spec.host`` to ``spec.nodeName``). A label may be accepted and absent from the extracted set
    (``status.podIPs``): it then reads as ``""``, as upstream. ``accepted=None`` means upstream's default
    conversion (``metadata.name`` and ``metadata.namespace`` only, with its own error message).
    """

    namespaced: bool
    extract: Callable[[Mapping[str, Any]], dict[str, str]] = _no_fields
    accepted: frozenset[str] | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)


_META: Final = ("metadata.name", "metadata.namespace")


def _kind(namespaced: bool, extract: Callable[[Mapping[str, Any]], dict[str, str]], *extra: str) -> KindFields:
    meta = _META if namespaced else _META[:1]
    return KindFields(namespaced, extract, frozenset((*meta, *extra)))


def _replicas(obj: Mapping[str, Any]) -> dict[str, str]:
    return {"status.replicas": _go_int(_get(obj, "status", "replicas"))}


SELECTABLE_FIELDS: Final[Mapping[str, KindFields]] = {
    "Pod": KindFields(
        namespaced=True,
        extract=_pod_fields,
        accepted=frozenset((*_META, *_pod_fields({}), "status.podIPs")),
        aliases={"spec.host": "spec.nodeName"},  # old v1 clients
    ),
    "Node": _kind(
        False,
        lambda n: {"spec.unschedulable": _go_bool(_get(n, "spec", "unschedulable"))},
        "spec.unschedulable",
    ),
    "Event": _kind(True, _event_fields, *_event_fields({})),
    # "name" is an upstream backwards-compatibility field of the set; the conversion does not accept it.
    "Namespace": _kind(
        False,
        lambda ns: {"status.phase": _str(ns, "status", "phase"), "name": _str(ns, "metadata", "name")},
        "status.phase",
    ),
    "Secret": _kind(True, lambda s: {"type": _str(s, "type")}, "type"),
    "Service": _kind(
        True,
        lambda s: {"spec.clusterIP": _str(s, "spec", "clusterIP"), "spec.type": _str(s, "spec", "type")},
        "spec.clusterIP",
        "spec.type",
    ),
    "ReplicationController": _kind(True, _replicas, "status.replicas"),
    "ReplicaSet": _kind(True, _replicas, "status.replicas"),
    "Job": _kind(True, lambda j: {"status.successful": _go_int(_get(j, "status", "succeeded"))}, "status.successful"),
}
"""Kinds with their own selectable fields; every other kind offers object metadata only."""

# Cluster-scoped kinds without their own entry: their field set has no metadata.namespace.
_CLUSTER_SCOPED: Final = frozenset(
    {
        "PersistentVolume",
        "StorageClass",
        "CSIDriver",
        "CSINode",
        "VolumeAttachment",
        "PriorityClass",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "APIService",
        "CertificateSigningRequest",
        "IngressClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ComponentStatus",
    }
)


def _spec(kind: str, namespaced: bool | None) -> KindFields:
    spec = SELECTABLE_FIELDS.get(kind)
    if spec is not None:
        return spec
    return KindFields(namespaced=kind not in _CLUSTER_SCOPED if namespaced is None else namespaced)


def selectable_fields(kind: str, obj: Mapping[str, Any], *, namespaced: bool | None = None) -> dict[str, str]:
    """The field set a selector matches ``obj`` against (upstream ``ToSelectableFields`` of ``kind``).

    For kinds outside :data:`SELECTABLE_FIELDS`, ``namespaced`` says whether ``metadata.namespace`` is
    included (default: a small table of cluster-scoped built-in kinds).
    """
    spec = _spec(kind, namespaced)
    out = spec.extract(obj)
    out.update(object_meta_fields(obj, namespaced=spec.namespaced))
    return out


def convert_field_label(kind: str, label: str, value: str) -> tuple[str, str]:
    """``(label, value)`` as ``kind`` accepts it in a field selector; raises :class:`FieldSelectorError`.

    Upstream's ``AddFieldLabelConversionFunc`` per kind (``field label not supported: <label>``) or, for kinds
    without one, ``DefaultMetaV1FieldSelectorConversion``.
    """
    spec = _spec(kind, None)
    if spec.accepted is None:
        if label in _META:
            return label, value
        raise FieldSelectorError(f'"{label}" is not a known field selector: only "metadata.name", "metadata.namespace"')
    alias = spec.aliases.get(label)
    if alias is not None:
        return alias, value
    if label in spec.accepted:
        return label, value
    raise FieldSelectorError(f"field label not supported: {label}")


def parse_selector_for_kind(kind: str, selector: str) -> Selector:
    """Parse ``selector``, converting its labels for ``kind`` as the API server does for ``fieldSelector``."""
    return parse_and_transform_selector(selector, lambda label, value: convert_field_label(kind, label, value))


def validate_field_selector(kind: str, selector: str | Selector | Iterable[Requirement]) -> None:
    """Raise :class:`FieldSelectorError` if ``selector`` is malformed or uses a field ``kind`` lacks."""
    if isinstance(selector, str):
        parse_selector_for_kind(kind, selector)
        return
    terms = selector.requirements if isinstance(selector, Selector) else selector
    for t in terms:
        convert_field_label(kind, t.field, t.value)
