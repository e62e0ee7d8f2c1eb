"""Job validation as kube-apiserver's ``pkg/apis/batch/validation/validation.go`` (v1.37): the spec rules shared
with a CronJob's job template, the generated selector, and the create and update rules of a Job.

Status rules (the ``/status`` subresource) live in :mod:`.batch_status`, CronJob rules and the registry tables in
:mod:`.batch`. Field paths are rooted at the object (``spec.completions``); metadata is validated generically by
the API server. Every value is read through a :data:`~.reader.NAMED_GROUPS` reader (a wrong JSON type is one
``TypeInvalid`` error, never an exception) and errors come in upstream's order with upstream's text.

Feature gates are at their v1.37 values (JobPodFailurePolicy, JobBackoffLimitPerIndex, JobSuccessPolicy,
JobManagedBy, JobPodReplacementPolicy and ElasticIndexedJob all GA): nothing is dropped, every rule applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each, read_optional_nonnegative, validate_immutable_field
from kubeplane.api.validation.field import OMIT_VALUE, ErrorList, Path
from kubeplane.api.validation.pods import check_pod_template_spec
from kubeplane.api.validation.reader import CORE_V1, NAMED_GROUPS, Reader
from kubeplane.api.validation.selectors import as_selector, read_label_selector, validate_label_selector

__all__ = [
    "CONTROLLER_UID_LABEL",
    "JOB_NAME_LABEL",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "check_job_spec_common",
    "parse_index_interval",
    "validate_indexes_format",
    "validate_job_create",
    "validate_job_update",
]

JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"

MAX_PARALLELISM_FOR_INDEXED_JOB: Final = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB: Final = 100_000
COMPLETIONS_SOFT_LIMIT: Final = 100_000
PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: Final = 10_000
MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS: Final = 10_000
MAX_POD_FAILURE_POLICY_RULES: Final = 20
MAX_ON_EXIT_CODES_VALUES: Final = 255
MAX_ON_POD_CONDITIONS_PATTERNS: Final = 20
MAX_MANAGED_BY_LENGTH: Final = 63
MAX_SUCCEEDED_INDEXES_LENGTH: Final = 64 * 1024
MAX_SUCCESS_POLICY_RULES: Final = 20

_ACTIONS: Final = ("Count", "FailIndex", "FailJob", "Ignore")  # sets.List: sorted
_OPERATORS: Final = ("In", "NotIn")
_CONDITION_STATUSES: Final = ("False", "True", "Unknown")
_REPLACEMENT_POLICIES: Final = ("Failed", "TerminatingOrFailed")


def _go_list(values: tuple[str, ...]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(f'"{v}"' for v in values) + "]"


# --- indexes ("1,3-5") ------------------------------------------------------------------------------------


class IndexesError(ValueError):
    """An index list that does not parse; ``str()`` is upstream's message."""


def _go_atoi(text: str) -> int:
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise IndexesError(f'cannot convert string to integer for index: "{text}"')
    return int(text)


def parse_index_interval(interval: str, completions: int) -> tuple[int, int]:
    """Upstream ``parseIndexInterval``: ``x`` or ``x-y`` with ``x < y < completions``."""
    limits = interval.split("-")
    if len(limits) > 2:
        raise IndexesError(
            f'the fragment "{interval}" violates the requirement that an index interval can have at most two '
            "parts separated by '-'"
        )
    x = _go_atoi(limits[0])
    if x >= completions:
        raise IndexesError(f'too large index: "{limits[0]}"')
    if len(limits) == 1:
        return x, x
    y = _go_atoi(limits[1])
    if y >= completions:
        raise IndexesError(f'too large index: "{limits[1]}"')
    if x >= y:
        raise IndexesError(f"non-increasing order, previous: {x}, current: {y}")
    return x, y


def validate_indexes_format(indexes: str, completions: int) -> int:
    """Upstream ``validateIndexesFormat``: the number of indexes listed, or :class:`IndexesError`."""
    if not indexes:
        return 0
    last: int | None = None
    total = 0
    for interval in indexes.split(","):
        x, y = parse_index_interval(interval, completions)
        if last is not None and last >= x:
            raise IndexesError(f"non-increasing order, previous: {last}, current: {x}")
        total += y - x + 1
        last = y
    return total


# --- the spec ----------------------------------------------------------------------------------------------


def _pod_failure_policy(spec: Reader) -> None:
    pfp = spec.child("podFailurePolicy")
    errs = pfp.errs
    rules = pfp.items("rules")
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(field.too_many(pfp.at("rules"), actual=len(rules), maximum=MAX_POD_FAILURE_POLICY_RULES))
    tspec = spec.child("template").child("spec").with_errs([])
    containers = {c.string("name") for key in ("containers", "initContainers") for c in tspec.items(key)}
    for rule in rules:
        action = rule.string("action")
        if not action:
            errs.append(field.required(rule.at("action"), f"valid values: {_go_list(_ACTIONS)}"))
        elif action == "FailIndex":
            if not spec.has("backoffLimitPerIndex"):
                errs.append(
                    field.invalid(rule.at("action"), action, detail="requires the backoffLimitPerIndex to be set")
                )
        elif action not in _ACTIONS:
            errs.append(field.not_supported(rule.at("action"), action, supported=_ACTIONS))
        has_exit_codes = rule.has("onExitCodes")
        patterns = rule.items("onPodConditions")
        if has_exit_codes:
            _on_exit_codes(rule.child("onExitCodes"), containers)
        if patterns:
            _on_pod_conditions(rule, patterns)
        path = rule.path
        if has_exit_codes and patterns:
            detail = "specifying both OnExitCodes and OnPodConditions is not supported"
            errs.append(field.invalid(path, OMIT_VALUE, detail=detail))
        if not has_exit_codes and not patterns:
            detail = "specifying one of OnExitCodes and OnPodConditions is required"
            errs.append(field.invalid(path, OMIT_VALUE, detail=detail))


def _on_pod_conditions(rule: Reader, patterns: list[Reader]) -> None:
    errs = rule.errs
    if len(patterns) > MAX_ON_POD_CONDITIONS_PATTERNS:
        errs.append(
            field.too_many(rule.at("onPodConditions"), actual=len(patterns), maximum=MAX_ON_POD_CONDITIONS_PATTERNS)
        )
    for pattern in patterns:
        kind = pattern.string("type")
        errs.extend(invalid_each(pattern.at("type"), kind, names.is_qualified_name(kind)))
        status = pattern.string("status")
        if not status:
            errs.append(field.required(pattern.at("status"), f"valid values: {_go_list(_CONDITION_STATUSES)}"))
        elif status not in _CONDITION_STATUSES:
            errs.append(field.not_supported(pattern.at("status"), status, supported=_CONDITION_STATUSES))


def _on_exit_codes(req: Reader, containers: set[str]) -> None:
    errs = req.errs
    operator = req.string("operator")
    if not operator:
        errs.append(field.required(req.at("operator"), f"valid values: {_go_list(_OPERATORS)}"))
    elif operator not in _OPERATORS:
        errs.append(field.not_supported(req.at("operator"), operator, supported=_OPERATORS))
    name = req.opt_string("containerName")
    if name is not None and name not in containers:
        detail = "must be one of the container or initContainer names in the pod template"
        errs.append(field.invalid(req.at("containerName"), name, detail=detail))
    values_path = req.at("values")
    values: list[int] = []
    for i, raw in enumerate(req.array("values")):
        if isinstance(raw, bool) or not isinstance(raw, int):
            req.report(values_path.index(i), raw, "integer")
            continue
        values.append(raw)
    if not values:
        errs.append(field.invalid(values_path, values, detail="at least one value is required"))
    elif len(values) > MAX_ON_EXIT_CODES_VALUES:
        errs.append(field.too_many(values_path, actual=len(values), maximum=MAX_ON_EXIT_CODES_VALUES))
    seen: set[int] = set()
    ordered = True
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            errs.append(field.invalid(values_path.index(j), value, detail="must not be 0 for the In operator"))
        if value in seen:
            errs.append(field.duplicate(values_path.index(j), value))
        else:
            seen.add(value)
        if j > 0 and values[j - 1] > value:
            ordered = False
    if not ordered:
        errs.append(field.invalid(values_path, values, detail="must be ordered"))


def _success_policy(spec: Reader, completions: int) -> None:
    sp = spec.child("successPolicy")
    errs = sp.errs
    rules = sp.items("rules")
    if not rules:
        detail = "at least one rules must be specified when the successPolicy is specified"
        errs.append(field.required(sp.at("rules"), detail))
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        errs.append(field.too_many(sp.at("rules"), actual=len(rules), maximum=MAX_SUCCESS_POLICY_RULES))
    for rule in rules:
        indexes = rule.opt_string("succeededIndexes")
        count = rule.integer("succeededCount", None)
        if count is None and indexes is None:
            detail = "at least one of succeededCount or succeededIndexes must be specified"
            errs.append(field.required(rule.path, detail))
        total = 0
        if indexes is not None:
            if len(indexes) > MAX_SUCCEEDED_INDEXES_LENGTH:
                errs.append(field.too_long(rule.at("succeededIndexes"), MAX_SUCCEEDED_INDEXES_LENGTH))
            try:
                total = validate_indexes_format(indexes, completions)
            except IndexesError as exc:
                detail = f"error parsing succeededIndexes: {exc}"
                errs.append(field.invalid(rule.at("succeededIndexes"), indexes, detail=detail))
        if count is not None:
            path = rule.at("succeededCount")
            if count < 0:
                errs.append(field.invalid(path, count, detail="must be greater than or equal to 0"))
            if count > completions:
                detail = f"must be less than or equal to {completions} (the number of specified completions)"
                errs.append(field.invalid(path, count, detail=detail))
            if indexes is not None and count > total:
                detail = (
                    f"must be less than or equal to {total} "
                    "(the number of indexes in the specified succeededIndexes field)"
                )
                errs.append(field.invalid(path, count, detail=detail))


def _completion_mode(spec: Reader, mode: str | None, n: dict[str, int | None]) -> None:
    errs = spec.errs
    completions, parallelism = n["completions"], n["parallelism"]
    per_index, max_failed = n["backoffLimitPerIndex"], n["maxFailedIndexes"]
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(field.not_supported(spec.at("completionMode"), mode, supported=("NonIndexed", "Indexed")))
        if mode == "Indexed":
            if completions is None:
                errs.append(field.required(spec.at("completions"), "when completion mode is Indexed"))
            if parallelism is not None and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
                detail = (
                    f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when completion mode is Indexed"
                )
                errs.append(field.invalid(spec.at("parallelism"), parallelism, detail=detail))
            if completions is not None and max_failed is not None and max_failed > completions:
                detail = "must be less than or equal to completions"
                errs.append(field.invalid(spec.at("maxFailedIndexes"), max_failed, detail=detail))
            if max_failed is not None and max_failed > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
                detail = f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"
                errs.append(field.invalid(spec.at("maxFailedIndexes"), max_failed, detail=detail))
            if completions is not None and completions > COMPLETIONS_SOFT_LIMIT and per_index is not None:
                suffix = f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
                if max_failed is None:
                    detail = f"must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"
                    errs.append(field.required(spec.at("maxFailedIndexes"), detail))
                if parallelism is not None and parallelism > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS:
                    detail = f"must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {suffix}"
                    errs.append(field.invalid(spec.at("parallelism"), parallelism, detail=detail))
                if max_failed is not None and max_failed > MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS:
                    detail = f"must be less than or equal to {MAX_FAILED_INDEXES_LIMIT_FOR_HIGH_COMPLETIONS} {suffix}"
                    errs.append(field.invalid(spec.at("maxFailedIndexes"), max_failed, detail=detail))
    if mode is None or mode == "NonIndexed":
        if per_index is not None:
            detail = "requires indexed completion mode"
            errs.append(field.invalid(spec.at("backoffLimitPerIndex"), per_index, detail=detail))
        if max_failed is not None:
            errs.append(
                field.invalid(spec.at("maxFailedIndexes"), max_failed, detail="requires indexed completion mode")
            )


def check_job_spec_common(spec: Reader) -> None:
    """Upstream ``validateJobSpec``: what a Job and a CronJob's job template share (no selector rules)."""
    errs = spec.errs
    n: dict[str, int | None] = {}
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        n[key] = read_optional_nonnegative(spec, key, bits=64 if key == "activeDeadlineSeconds" else None)
    n["backoffLimitPerIndex"] = read_optional_nonnegative(spec, "backoffLimitPerIndex")
    n["maxFailedIndexes"] = read_optional_nonnegative(spec, "maxFailedIndexes")
    if n["maxFailedIndexes"] is not None and n["backoffLimitPerIndex"] is None:
        errs.append(field.required(spec.at("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
    managed_by = spec.opt_string("managedBy")
    if managed_by is not None:
        errs.extend(names.is_domain_prefixed_path(spec.at("managedBy"), managed_by))
        if len(managed_by) > MAX_MANAGED_BY_LENGTH:
            errs.append(field.too_long(spec.at("managedBy"), MAX_MANAGED_BY_LENGTH))
    mode = spec.opt_string("completionMode")
    _completion_mode(spec, mode, n)
    if spec.has("podFailurePolicy"):
        _pod_failure_policy(spec)
    if spec.has("successPolicy"):
        if mode != "Indexed":
            value = dict(spec.raw("successPolicy") or {})
            errs.append(field.invalid(spec.at("successPolicy"), value, detail="requires indexed completion mode"))
        else:
            _success_policy(spec, n["completions"] or 0)
    replacement = spec.opt_string("podReplacementPolicy")
    if replacement is not None:
        if spec.has("podFailurePolicy"):
            if replacement != "Failed":
                errs.append(field.not_supported(spec.at("podReplacementPolicy"), replacement, supported=("Failed",)))
        elif replacement not in _REPLACEMENT_POLICIES:
            errs.append(
                field.not_supported(spec.at("podReplacementPolicy"), replacement, supported=_REPLACEMENT_POLICIES)
            )
    _template(spec)


def _template(spec: Reader) -> None:
    errs = spec.errs
    raw = spec.raw("template")
    template = Reader(raw if isinstance(raw, Mapping) else {}, spec.at("template"), errs, CORE_V1)
    if raw is not None and not isinstance(raw, Mapping):
        spec.report(spec.at("template"), raw, "object")
    check_pod_template_spec(template)
    tspec = template.child("spec").with_errs([])
    policy = tspec.string("restartPolicy")
    path = spec.at("template").child("spec", "restartPolicy")
    if policy in ("Always", ""):
        errs.append(field.required(path, 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        errs.append(field.not_supported(path, policy, supported=("OnFailure", "Never")))
    elif spec.has("podFailurePolicy") and policy != "Never":
        detail = 'only "Never" is supported when podFailurePolicy is specified'
        errs.append(field.invalid(path, policy, detail=detail))


def _template_labels(spec: Reader) -> dict[str, str]:
    quiet = spec.with_errs([])
    return quiet.child("template").child("metadata").string_map("labels")


def _check_job_spec(spec: Reader) -> None:
    """Upstream ``ValidateJobSpec``: the shared rules, then the selector, which must match the template."""
    check_job_spec_common(spec)
    errs = spec.errs
    sel = read_label_selector(spec, "selector")
    if sel is None:
        errs.append(field.required(spec.at("selector")))
    else:
        errs.extend(validate_label_selector(sel, spec.at("selector")))
    selector = as_selector(sel)
    tlabels = _template_labels(spec)
    if selector is not None and not selector.matches(tlabels):
        path = spec.at("template").child("metadata", "labels")
        errs.append(field.invalid(path, tlabels, detail="`selector` does not match template `labels`"))


def _has_label(errs: ErrorList, labels: dict[str, str], key: str, expected: str) -> None:
    """Upstream ``ValidateHasLabel`` at ``spec.template.metadata.labels[key]``."""
    path: Path = field.new_path("spec", "template", "metadata").child("labels").key(key)
    if key not in labels:
        errs.append(field.required(path, f"must be '{expected}'"))
    elif labels[key] != expected:
        errs.append(field.invalid(path, labels, detail=f"must be '{expected}'"))


def _generated_selector(job: Mapping[str, Any], spec: Reader, require_prefixed: bool) -> ErrorList:
    """Upstream ``validateGeneratedSelector``: with an auto-generated selector the template carries the labels."""
    errs: ErrorList = []
    quiet = spec.with_errs([])
    if quiet.boolean("manualSelector") is True or not spec.has("selector"):
        return errs
    raw_meta = job.get("metadata")
    metadata: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    uid, name = str(metadata.get("uid") or ""), str(metadata.get("name") or "")
    if not uid:
        errs.append(field.required(field.new_path("metadata", "uid")))
    labels = _template_labels(spec)
    _has_label(errs, labels, LEGACY_CONTROLLER_UID_LABEL, uid)
    _has_label(errs, labels, LEGACY_JOB_NAME_LABEL, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed:
        _has_label(errs, labels, CONTROLLER_UID_LABEL, uid)
        _has_label(errs, labels, JOB_NAME_LABEL, name)
        expected |= {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}
    sel = read_label_selector(quiet, "selector")
    selector = as_selector(sel)
    if selector is not None and not selector.matches(expected):
        errs.append(field.invalid(field.new_path("spec", "selector"), sel, detail="`selector` not auto-generated"))
    return errs


def _validate_job(job: Mapping[str, Any], *, require_prefixed: bool) -> ErrorList:
    """Upstream ``ValidateJob`` (without the metadata, validated generically)."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(job, errs).child("spec")
    errs.extend(_generated_selector(job, spec, require_prefixed))
    _check_job_spec(spec)
    quiet = spec.with_errs([])
    completions = quiet.integer("completions", None)
    if quiet.opt_string("completionMode") == "Indexed" and completions is not None and completions > 0:
        name = str((job.get("metadata") or {}).get("name") or "")
        hostname = f"{name}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            detail = f"will not able to create pod with invalid DNS label: {hostname}"
            errs.append(field.invalid(field.new_path("metadata", "name"), name, detail=detail))
    return field.dedupe(errs)


def validate_job_create(job: Mapping[str, Any]) -> ErrorList:
    """The Job strategy's ``Validate``: ``RequirePrefixedLabels`` is true on create."""
    return _validate_job(job, require_prefixed=True)


def _scheduling_directives_mutable(old: Mapping[str, Any]) -> bool:
    """``AllowMutableSchedulingDirectives``: only a suspended Job that never started."""
    spec, status = old.get("spec") or {}, old.get("status") or {}
    return spec.get("suspend") is True and not status.get("startTime")


def _comparable_template(new_tpl: Any, old_tpl: Any, mutable: bool) -> Any:
    """The old template with the fields a suspended, never-started Job may change taken from the new one."""
    if not mutable or not isinstance(new_tpl, Mapping) or not isinstance(old_tpl, Mapping):
        return old_tpl
    old_c = {**old_tpl, "metadata": dict(old_tpl.get("metadata") or {}), "spec": dict(old_tpl.get("spec") or {})}
    new_meta, new_spec = new_tpl.get("metadata") or {}, new_tpl.get("spec") or {}
    for key in ("annotations", "labels"):
        old_c["metadata"][key] = new_meta.get(key)
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        old_c["spec"][key] = new_spec.get(key)
    new_aff, old_aff = new_spec.get("affinity"), old_c["spec"].get("affinity")
    if new_aff is None and isinstance(old_aff, Mapping):
        rest = {k: v for k, v in old_aff.items() if k != "nodeAffinity" and v}
        old_c["spec"]["affinity"] = rest or None
    elif isinstance(new_aff, Mapping):
        base = dict(old_aff) if isinstance(old_aff, Mapping) else {}
        base["nodeAffinity"] = new_aff.get("nodeAffinity")
        old_c["spec"]["affinity"] = base
    return old_c


def validate_job_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The Job strategy's ``ValidateUpdate``: ``ValidateJob`` then ``ValidateJobUpdate`` (spec immutability)."""
    old_labels = ((old.get("spec") or {}).get("template") or {}).get("metadata", {}) or {}
    old_tlabels = old_labels.get("labels") or {}
    require_prefixed = JOB_NAME_LABEL in old_tlabels and CONTROLLER_UID_LABEL in old_tlabels
    errs = _validate_job(new, require_prefixed=require_prefixed)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    spec_path = field.new_path("spec")
    update_errs: ErrorList = []
    _check_job_spec(NAMED_GROUPS.root(new, update_errs).child("spec"))
    update_errs.extend(_completions_update(new_spec, old_spec))
    for key in ("selector",):
        update_errs.extend(validate_immutable_field(new_spec.get(key), old_spec.get(key), spec_path.child(key)))
    old_tpl = _comparable_template(
        new_spec.get("template"), old_spec.get("template"), _scheduling_directives_mutable(old)
    )
    update_errs.extend(validate_immutable_field(new_spec.get("template"), old_tpl, spec_path.child("template")))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        update_errs.extend(validate_immutable_field(new_spec.get(key), old_spec.get(key), spec_path.child(key)))
    return field.dedupe(errs + update_errs)


def _completions_update(new_spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> ErrorList:
    """Upstream ``validateCompletions`` with ElasticIndexedJob on: an Indexed Job may change completions only
    together with parallelism (kept equal); any other Job may not change them."""
    path = field.new_path("spec", "completions")
    new_c, old_c = new_spec.get("completions"), old_spec.get("completions")
    if new_spec.get("completionMode") != "Indexed":
        return validate_immutable_field(new_c, old_c, path)
    if new_c == old_c or new_c is None:
        return []
    if new_c != new_spec.get("parallelism"):
        return [field.invalid(path, new_c, detail="can only be modified in tandem with spec.parallelism")]
    return []
