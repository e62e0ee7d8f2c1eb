"""Kind-specific validation of apps/v1 workloads, as kube-apiserver's ``pkg/apis/apps/validation``.

Deployment, ReplicaSet, DaemonSet and StatefulSet: their ``spec`` on create and update (plus the registry
strategies' selector immutability), and their ``status`` on the ``/status`` subresource. Metadata is validated
generically by the API server, so paths here are rooted at the object (``spec.selector``) and nothing looks
at ``metadata``. The registry calls the three tables at the bottom; every validator takes the already
defaulted JSON dicts and returns an :data:`ErrorList`, never raising.

Invariants and why
    * **No exception for bad JSON types.** Upstream rejects a string where an int belongs while decoding
      (a 400); kubeplane gets plain dicts, so :class:`Fields` reads every value with its JSON type checked and
      turns a mismatch into a ``TypeInvalid`` field error (``must be of type integer``), then carries on as
      if the field were absent. An exception here would be a 500.
    * **Upstream's order and text.** Errors come in the order upstream appends them and ``str(error)`` is its
      message, because clients match on it. Where upstream prints a Go struct as the bad value (a strategy, a
      rolling-update config) the value is rebuilt as Go's ``json.Marshal`` of the *internal* type prints it:
      internal apps types carry no JSON tags, hence ``{"Type":"Foo","RollingUpdate":null}``.
    * **Upstream's quirks are kept**: a ReplicaSet's empty selector says ``invalid for deployment``; a
      StatefulSet's unparsable selector gets an empty detail; a StatefulSet template's pod spec is not
      validated at all (upstream's TODO: its volumes may name ``volumeClaimTemplates``).

The pod spec of a template is validated by :func:`kubeplane.api.validation.pods.validate_pod_spec`, imported
when first needed so this module never depends on import order. The reusable pieces upstream exports from
apps validation and other groups import (``ValidatePositiveIntOrPercent``, ``IsNotMoreThan100Percent``), plus
metav1's ``ValidateLabelSelector`` and the typed JSON reader, are public here for the other kind modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Any, Final, TypeAlias

from kubeplane.api import labels, meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.field import ErrorList, Path

__all__ = [
    "CREATE_VALIDATORS",
    "FIELD_IMMUTABLE_MSG",
    "IS_NEGATIVE_MSG",
    "STATUS_UPDATE_VALIDATORS",
    "UPDATE_VALIDATORS",
    "CreateValidator",
    "Fields",
    "UpdateValidator",
    "as_selector",
    "clean_label_selector",
    "int_or_percent_value",
    "is_not_more_than_100_percent",
    "read_label_selector",
    "read_nonnegative",
    "read_optional_nonnegative",
    "root",
    "semantic",
    "validate_label_selector",
    "validate_nonnegative_field",
    "validate_positive_int_or_percent",
]

CreateValidator: TypeAlias = Callable[[Mapping[str, Any]], ErrorList]
UpdateValidator: TypeAlias = Callable[[Mapping[str, Any], Mapping[str, Any]], ErrorList]

IS_NEGATIVE_MSG: Final = "must be greater than or equal to 0"
FIELD_IMMUTABLE_MSG: Final = "field is immutable"
_SELECTOR_MISMATCH: Final = "`selector` does not match template `labels`"
_REPLICAS_MSG: Final = "cannot be greater than status.replicas"


# --- typed JSON reads --------------------------------------------------------------------------------------


class Fields:
    """Typed reads of one JSON object that record a field error for every value of the wrong JSON type.

    ``errs`` is shared by every :class:`Fields` derived from this one, so type errors land in reading order
    among the semantic errors the caller appends. A non-object value reads as an empty object; a wrongly
    typed member reads as absent (``None``, ``""``, ``[]``), so later checks see a well-formed object.
    ``path=None`` is the object root.
    """

    __slots__ = ("data", "errs", "path")

    def __init__(self, value: object, path: Path | None, errs: ErrorList) -> None:
        self.path = path
        self.errs = errs
        self.data: Mapping[str, Any] = value if isinstance(value, Mapping) else {}
        if value is not None and not isinstance(value, Mapping):
            errs.append(_type_error(path, value, "object"))

    def at(self, name: str) -> Path:
        """The path of member ``name``."""
        return field.new_path(name) if self.path is None else self.path.child(name)

    def has(self, name: str) -> bool:
        """True when member ``name`` is present and not null (a Go pointer that is not nil)."""
        return self.data.get(name) is not None

    def raw(self, name: str) -> Any:
        """Member ``name`` unchecked (``None`` when absent)."""
        return self.data.get(name)

    def obj(self, name: str) -> Fields:
        """Member ``name`` as an object (empty when absent or of the wrong type)."""
        return Fields(self.data.get(name), self.at(name), self.errs)

    def objs(self, name: str) -> Iterator[Fields]:
        """The elements of list member ``name`` as objects, with indexed paths."""
        path = self.at(name)
        for i, item in enumerate(self.get_list(name)):
            yield Fields(item, path.index(i), self.errs)

    def get_int(self, name: str, *, bits: int = 32) -> int | None:
        """An ``int32`` (or ``int<bits>``) member, ``None`` when absent or not an integer of that size."""
        v = self.data.get(name)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            self.errs.append(_type_error(self.at(name), v, "integer"))
            return None
        if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
            self.errs.append(_type_error(self.at(name), v, f"int{bits}"))
            return None
        return v

    def get_bool(self, name: str) -> bool:
        """A boolean member, false when absent or not a boolean."""
        v = self.data.get(name)
        if v is not None and not isinstance(v, bool):
            self.errs.append(_type_error(self.at(name), v, "boolean"))
        return v is True

    def get_opt_str(self, name: str) -> str | None:
        """A string member, ``None`` when absent or not a string (a Go ``*string``)."""
        v = self.data.get(name)
        if v is None or isinstance(v, str):
            return v
        self.errs.append(_type_error(self.at(name), v, "string"))
        return None

    def get_str(self, name: str) -> str:
        """A string member, ``""`` when absent or not a string."""
        return self.get_opt_str(name) or ""

    def get_list(self, name: str) -> list[Any]:
        """A list member, ``[]`` when absent or not a list."""
        v = self.data.get(name)
        if v is None:
            return []
        if not isinstance(v, list):
            self.errs.append(_type_error(self.at(name), v, "array"))
            return []
        return v

    def get_str_list(self, name: str) -> list[str]:
        """A list of strings; elements of another type are reported and left out."""
        out: list[str] = []
        for i, v in enumerate(self.get_list(name)):
            if isinstance(v, str):
                out.append(v)
            else:
                self.errs.append(_type_error(self.at(name).index(i), v, "string"))
        return out

    def get_str_map(self, name: str) -> dict[str, str] | None:
        """A ``map[string]string`` member sorted by key (Go's JSON order), ``None`` when absent (a nil map)."""
        v = self.data.get(name)
        if v is None:
            return None
        if not isinstance(v, Mapping):
            self.errs.append(_type_error(self.at(name), v, "object"))
            return None
        out: dict[str, str] = {}
        for k in sorted(v):
            if isinstance(v[k], str):
                out[k] = v[k]
            else:
                self.errs.append(_type_error(self.at(name).key(k), v[k], "string"))
        return out

    def get_int_or_str(self, name: str) -> int | str | None:
        """An ``intstr.IntOrString`` member (an int32 or a string), ``None`` when absent or of another type."""
        v = self.data.get(name)
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return self.get_int(name)
        self.errs.append(_type_error(self.at(name), v, "integer or string"))
        return None

    def get_time(self, name: str, *, micro: bool = False) -> datetime | None:
        """A ``metav1.Time`` (or ``MicroTime``) member; ``None`` (Go's zero time) when absent or unparsable."""
        v = self.get_opt_str(name)
        if not v:
            return None
        try:
            return meta.parse_micro_time(v) if micro else meta.parse_time(v)
        except ValueError as exc:
            self.errs.append(field.type_invalid(self.at(name), v, detail=str(exc)))
            return None


def _type_error(path: Path | None, value: object, kind: str) -> field.Error:
    return field.type_invalid(path, value, detail=f"must be of type {kind}")


def semantic(value: Any) -> Any:
    """``value`` normalised for ``apiequality.Semantic.DeepEqual``: nulls and empty maps/lists dropped.

    Upstream's DeepEqual treats a nil and an empty map or slice as equal; on the wire both may also be a
    missing member. (A nil pointer and a pointer to an empty struct also compare equal here, which upstream
    would not; no field compared by this module can tell the two apart after defaulting.)
    """
    if isinstance(value, Mapping):
        out = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v not in ({}, [])}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


# --- shared upstream helpers -------------------------------------------------------------------------------


def validate_nonnegative_field(value: int, path: Path) -> ErrorList:
    """Upstream ``ValidateNonnegativeField``."""
    return [field.invalid(path, value, detail=IS_NEGATIVE_MSG)] if value < 0 else []


def _percent(value: int | str) -> int | None:
    """Upstream ``getPercentValue``: the number of a valid ``"N%"``, else ``None``."""
    if isinstance(value, str) and not names.is_valid_percent(value):
        return int(value[:-1])
    return None


def int_or_percent_value(value: int | str) -> int:
    """Upstream ``getIntOrPercentValue``: a percent's number, an int, or a string read as Go's ``Atoi`` (0)."""
    pct = _percent(value)
    if pct is not None:
        return pct
    if isinstance(value, int):
        return value
    return labels.parse_int64(value) or 0


def validate_positive_int_or_percent(value: int | str, path: Path) -> ErrorList:
    """Upstream ``ValidatePositiveIntOrPercent``: a non-negative int or a valid percent string."""
    if isinstance(value, str):
        return [field.invalid(path, value, detail=m) for m in names.is_valid_percent(value)]
    return validate_nonnegative_field(value, path)


def is_not_more_than_100_percent(value: int | str, path: Path) -> ErrorList:
    """Upstream ``IsNotMoreThan100Percent`` (ints are not percentages and always pass)."""
    pct = _percent(value)
    if pct is None or pct <= 100:
        return []
    return [field.invalid(path, value, detail="must not be greater than 100%")]


def read_label_selector(f: Fields, name: str) -> dict[str, Any] | None:
    """Member ``name`` as :func:`clean_label_selector` reads it; ``None`` when absent (a nil pointer)."""
    return clean_label_selector(f.obj(name)) if f.has(name) else None


def clean_label_selector(s: Fields) -> dict[str, Any]:
    """A ``metav1.LabelSelector`` object with wrongly typed parts reported and dropped.

    The result is in Go's JSON form (keys sorted, ``omitempty`` honoured), so it both feeds
    :func:`labels.label_selector_as_selector` and prints as upstream prints the selector in an error.
    """
    out: dict[str, Any] = {}
    match_labels = s.get_str_map("matchLabels")
    if match_labels:
        out["matchLabels"] = match_labels
    exprs: list[dict[str, Any]] = []
    for e in s.objs("matchExpressions"):
        expr: dict[str, Any] = {"key": e.get_str("key"), "operator": e.get_str("operator")}
        values = e.get_str_list("values")
        if values:
            expr["values"] = values
        exprs.append(expr)
    if exprs:
        out["matchExpressions"] = exprs
    return out


def validate_label_selector(
    sel: Mapping[str, Any] | None, path: Path, *, allow_invalid_label_value: bool = False
) -> ErrorList:
    """metav1 ``ValidateLabelSelector`` of a selector from :func:`read_label_selector`; nil passes."""
    if sel is None:
        return []
    errs = meta.validate_labels(sel.get("matchLabels") or {}, path.child("matchLabels"))
    for i, expr in enumerate(sel.get("matchExpressions") or ()):
        p = path.child("matchExpressions").index(i)
        op, key, values = expr["operator"], expr["key"], expr.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(field.required(p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                errs.append(field.forbidden(p.child("values"), detail))
        else:
            errs.append(field.invalid(p.child("operator"), op, detail="not a valid selector operator"))
        errs.extend(field.invalid(p.child("key"), key, detail=m) for m in names.is_qualified_name(key))
        if not allow_invalid_label_value:
            for j, v in enumerate(values):
                msgs = names.is_valid_label_value(v)
                errs.extend(field.invalid(p.child("values").index(j), v, detail=m) for m in msgs)
    return errs


def as_selector(sel: Mapping[str, Any] | None) -> labels.Selector | None:
    """``metav1.LabelSelectorAsSelector``; ``None`` where upstream returns an error."""
    try:
        return labels.label_selector_as_selector(sel)
    except labels.SelectorError:
        return None


# --- pod templates -----------------------------------------------------------------------------------------


def _validate_template(spec: Fields, selector: labels.Selector | None, *, owner: str) -> None:
    """Upstream ``ValidatePodTemplateSpecFor{ReplicaSet,StatefulSet}`` and DaemonSet's inline equivalent.

    ``selector=None`` skips the match check (upstream skips it when the selector does not parse). A
    StatefulSet's pod spec is not validated, as upstream. Pod-spec members are read raw: the pods module
    owns their types, so a wrong type is reported once, by it, and shows here as an unsupported value.
    """
    errs, tpath = spec.errs, spec.at("template")
    t = spec.obj("template")
    md = t.obj("metadata")
    tlabels = md.get_str_map("labels")
    annotations = md.get_str_map("annotations")
    if selector is not None and not selector.empty() and not selector.matches(tlabels or {}):
        errs.append(field.invalid(md.at("labels"), tlabels, detail=_SELECTOR_MISMATCH))
    errs.extend(meta.validate_labels(tlabels or {}, tpath.child("labels")))
    errs.extend(meta.validate_annotations(annotations or {}, tpath.child("annotations")))
    raw_spec, ps = t.raw("spec"), t.obj("spec")
    if owner != "StatefulSet" and (raw_spec is None or isinstance(raw_spec, Mapping)):
        from kubeplane.api.validation.pods import validate_pod_spec

        errs.extend(validate_pod_spec(ps.data, tpath.child("spec")))
        if ps.raw("ephemeralContainers"):
            detail = "ephemeral containers not allowed in pod template"
            errs.append(field.forbidden(ps.at("ephemeralContainers"), detail))
    restart = ps.raw("restartPolicy")
    if restart != "Always":
        errs.append(field.not_supported(ps.at("restartPolicy"), restart or "", supported=["Always"]))
    if ps.raw("activeDeadlineSeconds") is not None:
        errs.append(
            field.forbidden(ps.at("activeDeadlineSeconds"), f"activeDeadlineSeconds in {owner} is not Supported")
        )


def _validate_selector_and_template(spec: Fields, *, kind: str, owner: str, bad_detail: str) -> None:
    """The selector rules Deployment, ReplicaSet and StatefulSet share, then the template."""
    errs = spec.errs
    sel = read_label_selector(spec, "selector")
    if sel is None:
        errs.append(field.required(spec.at("selector")))
    else:
        errs.extend(validate_label_selector(sel, spec.at("selector")))
        if not sel:
            errs.append(field.invalid(spec.at("selector"), sel, detail=f"empty selector is invalid for {kind}"))
    selector = as_selector(sel)
    if selector is None:
        errs.append(field.invalid(spec.at("selector"), sel, detail=bad_detail))
    else:
        _validate_template(spec, selector, owner=owner)


def root(obj: object, errs: ErrorList) -> Fields:
    """The object itself as :class:`Fields`; members get root paths (``spec``, ``provisioner``)."""
    return Fields(obj, None, errs)


def _spec(obj: Mapping[str, Any], errs: ErrorList, name: str = "spec") -> Fields:
    return root(obj, errs).obj(name)


def _selector_immutable(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The apps/v1 strategies' rule (not the validation package's): ``spec.selector`` may not change."""
    new_sel = read_label_selector(_spec(new, []), "selector")
    old_sel = read_label_selector(_spec(old, []), "selector")
    if semantic(new_sel) == semantic(old_sel):
        return []
    return [field.invalid(field.new_path("spec", "selector"), new_sel, detail=FIELD_IMMUTABLE_MSG)]


def read_nonnegative(f: Fields, *members: str, bits: int = 32) -> dict[str, int]:
    """Reads int members (absent is Go's 0), appending ``ValidateNonnegativeField`` errors in order."""
    out: dict[str, int] = {}
    for n in members:
        value = f.get_int(n, bits=bits)
        out[n] = 0 if value is None else value
        f.errs.extend(validate_nonnegative_field(out[n], f.at(n)))
    return out


def read_optional_nonnegative(f: Fields, name: str, *, bits: int = 32) -> int | None:
    """Reads an optional int member (a Go pointer), checking ``ValidateNonnegativeField`` only when set."""
    value = f.get_int(name, bits=bits)
    if value is not None:
        f.errs.extend(validate_nonnegative_field(value, f.at(name)))
    return value


def _go_intstr(value: int | str | None) -> int | str:
    """A non-pointer ``IntOrString`` as Go prints it: the zero value is ``0``."""
    return 0 if value is None else value


def _go_strategy(kind: str, strategy: Fields, rolling_update: Callable[[Fields], dict[str, Any]]) -> dict[str, Any]:
    """An internal ``*UpdateStrategy`` struct as Go's ``json.Marshal`` prints it (no JSON tags).

    ``kind`` is the ``type`` already read (reading it again would report a wrong type twice).
    """
    ru = rolling_update(strategy.obj("rollingUpdate")) if strategy.has("rollingUpdate") else None
    return {"Type": kind, "RollingUpdate": ru}


def _go_surge(ru: Fields) -> dict[str, Any]:
    return {k[0].upper() + k[1:]: _go_intstr(ru.get_int_or_str(k)) for k in ("maxUnavailable", "maxSurge")}


# --- Deployment and ReplicaSet -----------------------------------------------------------------------------


def _validate_deployment_strategy(strategy: Fields) -> None:
    errs = strategy.errs
    kind = strategy.get_str("type")
    if kind == "Recreate":
        if strategy.has("rollingUpdate"):
            detail = "may not be specified when strategy `type` is 'Recreate'"
            errs.append(field.forbidden(strategy.at("rollingUpdate"), detail))
    elif kind == "RollingUpdate":
        if not strategy.has("rollingUpdate"):
            errs.append(field.required(strategy.at("rollingUpdate"), "this should be defaulted and never be nil"))
            return
        ru = strategy.obj("rollingUpdate")
        unavailable = _go_intstr(ru.get_int_or_str("maxUnavailable"))
        surge = _go_intstr(ru.get_int_or_str("maxSurge"))
        errs.extend(validate_positive_int_or_percent(unavailable, ru.at("maxUnavailable")))
        errs.extend(validate_positive_int_or_percent(surge, ru.at("maxSurge")))
        if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
            detail = "may not be 0 when `maxSurge` is 0"
            errs.append(field.invalid(ru.at("maxUnavailable"), unavailable, detail=detail))
        errs.extend(is_not_more_than_100_percent(unavailable, ru.at("maxUnavailable")))
    else:
        value = _go_strategy(kind, strategy, _go_surge)
        errs.append(field.not_supported(strategy.path, value, supported=["Recreate", "RollingUpdate"]))


def validate_deployment(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDeploymentSpec`` (apps/v1 has no ``rollbackTo``)."""
    errs: ErrorList = []
    spec = _spec(obj, errs)
    read_nonnegative(spec, "replicas")
    _validate_selector_and_template(spec, kind="deployment", owner="ReplicaSet", bad_detail="invalid label selector")
    _validate_deployment_strategy(spec.obj("strategy"))
    min_ready = read_nonnegative(spec, "minReadySeconds")["minReadySeconds"]
    read_optional_nonnegative(spec, "revisionHistoryLimit")
    deadline = read_optional_nonnegative(spec, "progressDeadlineSeconds")
    if deadline is not None and deadline <= min_ready:
        detail = "must be greater than minReadySeconds"
        errs.append(field.invalid(spec.at("progressDeadlineSeconds"), deadline, detail=detail))
    return errs


def validate_deployment_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The new spec's checks, then the strategy's selector immutability."""
    return validate_deployment(new) + _selector_immutable(new, old)


def validate_replica_set(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicaSetSpec``; its empty-selector message says ``deployment``, as upstream's."""
    errs: ErrorList = []
    spec = _spec(obj, errs)
    read_nonnegative(spec, "replicas", "minReadySeconds")
    _validate_selector_and_template(spec, kind="deployment", owner="ReplicaSet", bad_detail="invalid label selector")
    return errs


def validate_replica_set_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The new spec's checks (upstream runs them twice; once here), then selector immutability."""
    return validate_replica_set(new) + _selector_immutable(new, old)


# --- DaemonSet ---------------------------------------------------------------------------------------------


def _validate_daemon_set_strategy(strategy: Fields) -> None:
    errs = strategy.errs
    kind = strategy.get_str("type")
    if kind == "OnDelete":
        return
    if kind != "RollingUpdate":
        value = _go_strategy(kind, strategy, _go_surge)
        errs.append(field.not_supported(strategy.path, value, supported=["RollingUpdate", "OnDelete"]))
        return
    if not strategy.has("rollingUpdate"):
        errs.append(field.required(strategy.at("rollingUpdate")))
        return
    ru = strategy.obj("rollingUpdate")
    unavailable = _go_intstr(ru.get_int_or_str("maxUnavailable"))
    surge = _go_intstr(ru.get_int_or_str("maxSurge"))
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
    spec = _spec(obj, errs)
    sel = read_label_selector(spec, "selector")
    errs.extend(validate_label_selector(sel, spec.at("selector"), allow_invalid_label_value=allow_invalid_label_value))
    selector = as_selector(sel)
    # read quietly: _validate_template reports the template's type errors
    tlabels = Fields(spec.raw("template"), None, []).obj("metadata").get_str_map("labels")
    if selector is not None and not selector.matches(tlabels or {}):
        errs.append(field.invalid(spec.at("template").child("metadata", "labels"), tlabels, detail=_SELECTOR_MISMATCH))
    if sel is not None and not sel:
        errs.append(field.invalid(spec.at("selector"), sel, detail="empty selector is invalid for daemonset"))
    _validate_template(spec, None, owner="DaemonSet")
    read_nonnegative(spec, "minReadySeconds")
    _validate_daemon_set_strategy(spec.obj("updateStrategy"))
    read_optional_nonnegative(spec, "revisionHistoryLimit")
    return errs


def _has_invalid_selector(obj: Mapping[str, Any]) -> bool:
    """Upstream ``hasInvalidLabelValueInLabelSelector``: any error at all in the stored selector."""
    return bool(validate_label_selector(read_label_selector(_spec(obj, []), "selector"), field.new_path("spec")))


def validate_daemon_set(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDaemonSet`` for the spec."""
    return _validate_daemon_set_spec(obj, allow_invalid_label_value=False)


def validate_daemon_set_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The spec's checks (invalid selector values tolerated if the stored selector had any), then immutability.

    Upstream's ``templateGeneration`` rules are not here: apps/v1 has no such field (the registry keeps it in
    an annotation it bumps itself), so they could only check the strategy's own bookkeeping.
    """
    return _validate_daemon_set_spec(new, allow_invalid_label_value=_has_invalid_selector(old)) + _selector_immutable(
        new, old
    )


# --- StatefulSet -------------------------------------------------------------------------------------------


def _go_statefulset_ru(ru: Fields) -> dict[str, Any]:
    return {"Partition": ru.get_int("partition") or 0, "MaxUnavailable": ru.get_int_or_str("maxUnavailable")}


def _validate_statefulset_strategy(spec: Fields) -> None:
    errs, strategy = spec.errs, spec.obj("updateStrategy")
    kind = strategy.get_str("type")
    if kind == "":
        errs.append(field.required(spec.at("updateStrategy")))
    elif kind == "OnDelete":
        if strategy.has("rollingUpdate"):
            value = _go_statefulset_ru(strategy.obj("rollingUpdate"))
            detail = "only allowed for updateStrategy 'RollingUpdate'"
            errs.append(field.invalid(strategy.at("rollingUpdate"), value, detail=detail))
    elif kind == "RollingUpdate":
        if strategy.has("rollingUpdate"):
            ru = strategy.obj("rollingUpdate")
            read_nonnegative(ru, "partition")
            unavailable = ru.get_int_or_str("maxUnavailable")
            if unavailable is not None:
                errs.extend(validate_positive_int_or_percent(unavailable, ru.at("maxUnavailable")))
                if int_or_percent_value(unavailable) == 0:
                    errs.append(field.invalid(ru.at("maxUnavailable"), unavailable, detail="cannot be 0"))
                errs.extend(is_not_more_than_100_percent(unavailable, ru.at("maxUnavailable")))
    else:
        value = _go_strategy(kind, strategy, _go_statefulset_ru)
        errs.append(field.invalid(spec.at("updateStrategy"), value, detail="must be 'RollingUpdate' or 'OnDelete'"))


def _validate_statefulset_spec(spec: Fields) -> None:
    errs = spec.errs
    policy = spec.get_str("podManagementPolicy")
    if policy == "":
        errs.append(field.required(spec.at("podManagementPolicy")))
    elif policy not in ("OrderedReady", "Parallel"):
        detail = "must be 'OrderedReady' or 'Parallel'"
        errs.append(field.invalid(spec.at("podManagementPolicy"), policy, detail=detail))
    _validate_statefulset_strategy(spec)
    if spec.has("persistentVolumeClaimRetentionPolicy"):
        retention = spec.obj("persistentVolumeClaimRetentionPolicy")
        for member in ("whenDeleted", "whenScaled"):
            value = retention.get_str(member)
            if value not in ("Retain", "Delete"):
                errs.append(field.not_supported(retention.at(member), value, supported=["Retain", "Delete"]))
    read_nonnegative(spec, "replicas", "minReadySeconds")
    if spec.has("ordinals"):
        read_nonnegative(spec.obj("ordinals"), "start")
    _validate_selector_and_template(spec, kind="statefulset", owner="StatefulSet", bad_detail="")


def validate_stateful_set(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateStatefulSetSpec``, plus (on create only) ``serviceName`` as a DNS-1123 label.

    The serviceName rule is kubernetes#130233 (v1.33): the name becomes each pod's ``subdomain``, so an invalid
    one would only fail later, in the controller. Existing objects are not re-checked on update.
    """
    errs: ErrorList = []
    spec = _spec(obj, errs)
    _validate_statefulset_spec(spec)
    service = spec.get_str("serviceName")
    if service:
        errs.extend(field.invalid(spec.at("serviceName"), service, detail=m) for m in names.is_dns1123_label(service))
    return errs


_STATEFULSET_MUTABLE: Final = (
    "replicas", "template", "updateStrategy", "minReadySeconds", "ordinals", "persistentVolumeClaimRetentionPolicy"
)  # fmt: skip


def validate_stateful_set_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The spec's checks, then upstream's rule that only six spec fields may change."""
    errs: ErrorList = []
    _validate_statefulset_spec(_spec(new, errs))
    new_spec, old_spec = (_spec(o, []).data for o in (new, old))
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


def _not_above(status: Fields, counts: Mapping[str, int], members: tuple[str, ...], *, limit: str, msg: str) -> None:
    for m in members:
        if counts[m] > counts[limit]:
            status.errs.append(field.invalid(status.at(m), counts[m], detail=msg))


def _collision_count(new: Fields, old: Fields) -> None:
    """Upstream ``IsDecremented`` on ``status.collisionCount`` (a nil new value after a set one counts)."""
    after, before = new.get_int("collisionCount"), old.get_int("collisionCount")
    if before is not None and (after is None or after < before):
        new.errs.append(field.invalid(new.at("collisionCount"), after or 0, detail="cannot be decremented"))


def validate_deployment_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDeploymentStatusUpdate``."""
    errs: ErrorList = []
    st = _spec(new, errs, "status")
    c = read_nonnegative(st, "observedGeneration", bits=64)
    c |= read_nonnegative(
        st, "replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"
    )
    read_optional_nonnegative(st, "collisionCount")
    _not_above(st, c, ("updatedReplicas", "readyReplicas", "availableReplicas"), limit="replicas", msg=_REPLICAS_MSG)
    _not_above(st, c, ("availableReplicas",), limit="readyReplicas", msg="cannot be greater than readyReplicas")
    _collision_count(st, _spec(old, [], "status"))
    return errs


def validate_replica_set_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicaSetStatusUpdate``."""
    errs: ErrorList = []
    st = _spec(new, errs, "status")
    c = read_nonnegative(st, "replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    c |= read_nonnegative(st, "observedGeneration", bits=64)
    members = ("fullyLabeledReplicas", "readyReplicas", "availableReplicas")
    _not_above(st, c, members, limit="replicas", msg=_REPLICAS_MSG)
    _not_above(st, c, ("availableReplicas",), limit="readyReplicas", msg="cannot be greater than readyReplicas")
    return errs


def validate_daemon_set_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateDaemonSetStatusUpdate``."""
    errs: ErrorList = []
    st = _spec(new, errs, "status")
    read_nonnegative(st, "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
    read_nonnegative(st, "observedGeneration", bits=64)
    read_nonnegative(st, "updatedNumberScheduled", "numberAvailable", "numberUnavailable")
    read_optional_nonnegative(st, "collisionCount")
    _collision_count(st, _spec(old, [], "status"))
    return errs


def validate_stateful_set_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateStatefulSetStatusUpdate``."""
    errs: ErrorList = []
    st = _spec(new, errs, "status")
    c = read_nonnegative(st, "replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    read_optional_nonnegative(st, "observedGeneration", bits=64)
    read_optional_nonnegative(st, "collisionCount")
    members = ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    _not_above(st, c, members, limit="replicas", msg=_REPLICAS_MSG)
    msg = "cannot be greater than status.readyReplicas"
    _not_above(st, c, ("availableReplicas",), limit="readyReplicas", msg=msg)
    _collision_count(st, _spec(old, [], "status"))
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
