"""What the apps/v1 workload kinds share: the pod template, selector and template, selector immutability, Go
printing of update strategies, and the status counters.

Upstream spreads these over ``pkg/apis/apps/validation`` (``ValidatePodTemplateSpecForReplicaSet``,
``ValidatePodTemplateSpecForStatefulSet``, DaemonSet's inline template checks, ``IsDecremented``) and the
registry strategies (``spec.selector`` is immutable in apps/v1). :mod:`.apps` holds each kind's own rules and
the registry's tables.

Invariants
    * Read through a :data:`~.reader.NAMED_GROUPS` reader: a wrong type is one ``TypeInvalid`` error showing the
      value as sent, and the error list is in upstream's order (no :func:`~.reader.finish`).
    * The pod spec of a template is validated by :func:`kubeplane.api.validation.pods.validate_pod_spec`,
      looked up by module name when first needed, so this module never depends on import order and the pods
      module can be replaced (the tests do, to pin the delegation). A StatefulSet template's pod spec is not
      validated at all (upstream's TODO: its volumes may name ``volumeClaimTemplates``).
    * Where upstream prints a Go struct as the bad value (a strategy, a rolling-update config), the value is
      rebuilt as ``json.Marshal`` prints the *internal* type, which has no JSON tags:
      ``{"Type":"Foo","RollingUpdate":null}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from kubeplane.api import labels, meta
from kubeplane.api.validation import field
from kubeplane.api.validation.common import IMMUTABLE_MSG, semantic
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader
from kubeplane.api.validation.selectors import as_selector, read_label_selector, validate_label_selector

__all__ = [
    "SELECTOR_MISMATCH",
    "check_collision_count",
    "check_not_above",
    "check_pod_template",
    "check_selector_and_template",
    "go_intstr",
    "go_strategy",
    "go_surge",
    "member_of",
    "validate_selector_immutable",
]

SELECTOR_MISMATCH: Final = "`selector` does not match template `labels`"


def member_of(obj: Mapping[str, Any], errs: ErrorList, name: str = "spec") -> Reader:
    """The object's ``spec`` (or ``name``) member, its type errors reported into ``errs``."""
    return NAMED_GROUPS.root(obj, errs).child(name)


def check_pod_template(spec: Reader, selector: labels.Selector | None, *, owner: str) -> None:
    """Upstream ``ValidatePodTemplateSpecFor{ReplicaSet,StatefulSet}`` and DaemonSet's inline equivalent.

    ``selector=None`` skips the match check (upstream skips it when the selector does not parse). A
    StatefulSet's pod spec is not validated, as upstream. Pod-spec members are read raw: the pods module
    owns their types, so a wrong type is reported once, by it, and shows here as an unsupported value.
    """
    errs, tpath = spec.errs, spec.at("template")
    t = spec.child("template")
    md = t.child("metadata")
    tlabels = md.opt_string_map("labels")
    annotations = md.opt_string_map("annotations")
    if selector is not None and not selector.empty() and not selector.matches(tlabels or {}):
        errs.append(field.invalid(md.at("labels"), tlabels, detail=SELECTOR_MISMATCH))
    errs.extend(meta.validate_labels(tlabels or {}, tpath.child("labels")))
    errs.extend(meta.validate_annotations(annotations or {}, tpath.child("annotations")))
    raw_spec, ps = t.raw("spec"), t.child("spec")
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


def check_selector_and_template(spec: Reader, *, kind: str, owner: str, bad_detail: str) -> None:
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
        check_pod_template(spec, selector, owner=owner)


def validate_selector_immutable(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The apps/v1 strategies' rule (not the validation package's): ``spec.selector`` may not change."""
    new_sel = read_label_selector(member_of(new, []), "selector")
    old_sel = read_label_selector(member_of(old, []), "selector")
    if semantic(new_sel) == semantic(old_sel):
        return []
    return [field.invalid(field.new_path("spec", "selector"), new_sel, detail=IMMUTABLE_MSG)]


# --- Go's printing of strategies ----------------------------------------------------------------------------


def go_intstr(value: int | str | None) -> int | str:
    """A non-pointer ``IntOrString`` as Go prints it: the zero value is ``0``."""
    return 0 if value is None else value


def go_strategy(kind: str, strategy: Reader, rolling_update: Callable[[Reader], dict[str, Any]]) -> dict[str, Any]:
    """An internal ``*UpdateStrategy`` struct as Go's ``json.Marshal`` prints it (no JSON tags).

    ``kind`` is the ``type`` already read (reading it again would report a wrong type twice).
    """
    ru = rolling_update(strategy.child("rollingUpdate")) if strategy.has("rollingUpdate") else None
    return {"Type": kind, "RollingUpdate": ru}


def go_surge(ru: Reader) -> dict[str, Any]:
    """A Deployment's or DaemonSet's internal ``RollingUpdate`` struct as Go prints it."""
    return {k[0].upper() + k[1:]: go_intstr(ru.int_or_string(k)) for k in ("maxUnavailable", "maxSurge")}


# --- status ------------------------------------------------------------------------------------------------


def check_not_above(status: Reader, counts: Mapping[str, int], keys: tuple[str, ...], *, limit: str, msg: str) -> None:
    """Each of ``keys`` counts at most as many as ``limit`` (``cannot be greater than ...``)."""
    for key in keys:
        if counts[key] > counts[limit]:
            status.errs.append(field.invalid(status.at(key), counts[key], detail=msg))


def check_collision_count(new: Reader, old: Reader) -> None:
    """Upstream ``IsDecremented`` on ``status.collisionCount`` (a nil new value after a set one counts)."""
    after, before = new.integer("collisionCount", None), old.integer("collisionCount", None)
    if before is not None and (after is None or after < before):
        new.errs.append(field.invalid(new.at("collisionCount"), after or 0, detail="cannot be decremented"))
