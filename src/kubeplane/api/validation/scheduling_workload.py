"""Validation of the workload-aware scheduling kinds of scheduling.k8s.io: Workload, PodGroup and
CompositePodGroup, as upstream ``pkg/apis/scheduling/validation/validation.go`` (v1.37). Upstream validates the
internal type, so v1beta1 and v1alpha3 objects (one storage, the same fields) get the same errors.

The API server loads this module by name (``_VALIDATION_MODULES`` in :mod:`kubeplane.apiserver.strategies`) and
looks validators up by ``(group, kind)`` in the tables at the bottom. Same contract as :mod:`.cluster`: JSON dicts
in, an :data:`ErrorList` out, never an exception, metadata left to the generic checks, messages and paths verbatim.

Invariants
    * A scheduling policy is a union: exactly one of ``basic`` / ``gang`` (``minGroupCount`` for a composite
      group); a gang's ``minCount`` of 0 is ``Required value`` and a negative one ``must be greater than zero``
      (upstream returns Required for the zero value to match declarative validation).
    * A Workload has 1..8 ``podGroupTemplates`` (``WorkloadMaxPodGroupTemplates``) with unique names; after
      create they are immutable, as is a ``controllerRef`` once set.
    * A PodGroup's ``workloadRef`` and ``schedulingPolicy`` never change after create (the scheduler reads its
      policy once per gang; a changed minCount is the only update upstream's QueueingHint reacts to, and it only
      comes through recreation).
    * Immutability errors show the new value as JSON (upstream prints the Go struct with ``%#v``, which carries
      pointer addresses no client can compare).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import CreateValidator, UpdateValidator, invalid_each, validate_immutable_field
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader

__all__ = [
    "CREATE_VALIDATORS",
    "STATUS_UPDATE_VALIDATORS",
    "UPDATE_VALIDATORS",
    "WORKLOAD_MAX_POD_GROUP_TEMPLATES",
    "validate_pod_group",
    "validate_pod_group_update",
    "validate_scheduling_policy",
    "validate_workload",
    "validate_workload_update",
]

GROUP: Final = "scheduling.k8s.io"
WORKLOAD_MAX_POD_GROUP_TEMPLATES: Final = 8
WORKLOAD_MAX_TREE_DEPTH: Final = 4


def _name(value: str, path: Path) -> ErrorList:
    """A DNS-subdomain name (upstream ``ValidatePodGroupName``): Required when empty."""
    if not value:
        return [field.required(path)]
    return invalid_each(path, value, names.is_dns1123_subdomain(value))


def validate_scheduling_policy(policy: Reader | None, path: Path, *, count_key: str = "minCount") -> ErrorList:
    """Upstream ``validatePodGroupSchedulingPolicy``: the ``basic``/``gang`` union and the gang's count."""
    errs: ErrorList = []
    if policy is None:
        return [field.invalid(path, "", detail="must specify one of: `basic`, `gang`")]
    basic = policy.raw("basic")
    gang = policy.mapping("gang")
    set_fields = [name for name, v in (("`basic`", basic), ("`gang`", gang)) if v is not None]
    if not set_fields:
        errs.append(field.invalid(path, "", detail="must specify one of: `basic`, `gang`"))
    elif len(set_fields) > 1:
        value = "{" + ", ".join(set_fields) + "}"
        detail = "exactly one of `basic`, `gang` is required, but multiple fields are set"
        errs.append(field.invalid(path, value, detail=detail))
    elif gang is not None:
        count = gang.integer(count_key, 0, bits=32) or 0
        at = path.child("gang", count_key)
        if count == 0:
            errs.append(field.required(at))
        elif count < 0:
            errs.append(field.invalid(at, count, detail="must be greater than zero"))
    return errs


def _path_segment_name(value: str) -> list[str]:
    """Upstream ``content.IsPathSegmentName``: a name that can be one segment of a URL path."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{ch}'" for ch in ("/", "%") if ch in value]


def _controller_ref(ref: Reader, path: Path) -> ErrorList:
    """Upstream ``validateControllerRef``."""
    errs: ErrorList = []
    group = ref.string("apiGroup")
    if group:
        errs.extend(invalid_each(path.child("apiGroup"), group, names.is_dns1123_subdomain(group)))
    for key in ("kind", "name"):
        value = ref.string(key)
        if not value:
            errs.append(field.required(path.child(key)))
        else:
            errs.extend(invalid_each(path.child(key), value, _path_segment_name(value)))
    return errs


def _pod_group_templates(spec: Reader, path: Path, *, create: bool) -> ErrorList:
    """Upstream ``validatePodGroupTemplates``: 1..8 templates, each named uniquely with a valid policy."""
    errs: ErrorList = []
    at = path.child("podGroupTemplates")
    templates = spec.items("podGroupTemplates")
    if not templates:
        errs.append(field.required(at, "must have at least one item"))
    elif len(templates) > WORKLOAD_MAX_POD_GROUP_TEMPLATES:
        errs.append(field.too_many(at, actual=len(templates), maximum=WORKLOAD_MAX_POD_GROUP_TEMPLATES))
    elif create:
        seen: set[str] = set()
        for i, template in enumerate(templates):
            ipath = at.index(i)
            name = template.string("name")
            errs.extend(_name(name, ipath.child("name")))
            if name in seen:
                errs.append(field.duplicate(ipath, name))
            seen.add(name)
            errs.extend(
                validate_scheduling_policy(template.mapping("schedulingPolicy"), ipath.child("schedulingPolicy"))
            )
    return errs


def validate_workload(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateWorkload`` (spec part)."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(obj, errs).child("spec")
    path = field.new_path("spec")
    ref = spec.mapping("controllerRef")
    if ref is not None:
        errs.extend(_controller_ref(ref, path.child("controllerRef")))
    errs.extend(_pod_group_templates(spec, path, create=True))
    return errs


def validate_workload_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateWorkloadUpdate``: controllerRef immutable once set, podGroupTemplates immutable."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(new, errs).child("spec")
    old_spec = old.get("spec") or {}
    path = field.new_path("spec")
    if old_spec.get("controllerRef") is not None:
        errs.extend(
            validate_immutable_field(spec.raw("controllerRef"), old_spec["controllerRef"], path.child("controllerRef"))
        )
    elif (ref := spec.mapping("controllerRef")) is not None:
        errs.extend(_controller_ref(ref, path.child("controllerRef")))
    at = path.child("podGroupTemplates")
    errs.extend(validate_immutable_field(spec.raw("podGroupTemplates"), old_spec.get("podGroupTemplates"), at))
    errs.extend(_pod_group_templates(spec, path, create=False))
    return errs


def _workload_ref(ref: Reader, path: Path) -> ErrorList:
    """Both names of a ``workloadRef`` are required DNS-subdomain names."""
    errs: ErrorList = []
    for key in ("workloadName", "templateName"):
        errs.extend(_name(ref.string(key), path.child(key)))
    return errs


def validate_pod_group(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodGroup`` (spec part): the workload reference and the scheduling policy."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(obj, errs).child("spec")
    path = field.new_path("spec")
    ref = spec.mapping("workloadRef")
    if ref is not None:
        errs.extend(_workload_ref(ref, path.child("workloadRef")))
    errs.extend(validate_scheduling_policy(spec.mapping("schedulingPolicy"), path.child("schedulingPolicy")))
    return errs


def validate_pod_group_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``validatePodGroupSpecUpdate``: workloadRef and schedulingPolicy immutable."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    path = field.new_path("spec")
    errs: ErrorList = []
    for key in ("workloadRef", "schedulingPolicy"):
        errs.extend(validate_immutable_field(new_spec.get(key), old_spec.get(key), path.child(key)))
    return errs


def validate_composite_pod_group(obj: Mapping[str, Any]) -> ErrorList:
    """The composite group's policy union (``minGroupCount`` for a gang of groups)."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(obj, errs).child("spec")
    path = field.new_path("spec")
    ref = spec.mapping("workloadRef")
    if ref is None:
        errs.append(field.required(path.child("workloadRef")))
    else:
        errs.extend(_workload_ref(ref, path.child("workloadRef")))
    policy = spec.mapping("schedulingPolicy")
    errs.extend(validate_scheduling_policy(policy, path.child("schedulingPolicy"), count_key="minGroupCount"))
    return errs


def validate_composite_pod_group_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    path = field.new_path("spec")
    errs: ErrorList = []
    for key in ("workloadRef", "schedulingPolicy"):
        errs.extend(validate_immutable_field(new_spec.get(key), old_spec.get(key), path.child(key)))
    return errs


def _no_status_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePodGroupStatusUpdate``: metadata only (checked generically)."""
    return []


CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    (GROUP, "Workload"): validate_workload,
    (GROUP, "PodGroup"): validate_pod_group,
    (GROUP, "CompositePodGroup"): validate_composite_pod_group,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "Workload"): validate_workload_update,
    (GROUP, "PodGroup"): validate_pod_group_update,
    (GROUP, "CompositePodGroup"): validate_composite_pod_group_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "PodGroup"): _no_status_errors,
}
