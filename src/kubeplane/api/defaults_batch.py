"""batch/v1 defaulting: upstream ``pkg/apis/batch/v1/defaults.go`` plus the generated
``zz_generated.defaults.go`` walk (pod-template defaults and the pod-failure-policy pattern default).

Contract (as :mod:`kubeplane.api.defaults`): mutate a wire-format object in place, idempotently, never raising on
malformed input, only ever adding fields. A CronJob's ``jobTemplate.spec`` is *not* defaulted as a Job
(upstream's ``SetDefaults_Job`` is registered on the Job kind only), so a CronJob stores its job template without
completions/parallelism/backoffLimit; the Job the CronJob controller creates from it is defaulted on its create.

Feature gates are at their v1.37 values: JobPodReplacementPolicy is GA, so ``podReplacementPolicy`` is always
defaulted (``Failed`` when a podFailurePolicy is set, ``TerminatingOrFailed`` otherwise).
"""

from __future__ import annotations

from typing import Final

from kubeplane.api.defaults_workloads import (
    JSONObject,
    _ensure,
    _obj,
    _objs,
    _set_empty,
    _set_nil,
    set_defaults_pod_template_spec,
)

__all__ = ["MAX_INT32", "set_defaults_cron_job", "set_defaults_job"]

MAX_INT32: Final = 2**31 - 1
_DEFAULT_BACKOFF_LIMIT: Final = 6


def _pod_failure_policy_patterns(spec: JSONObject) -> None:
    """``SetDefaults_PodFailurePolicyOnPodConditionsPattern``: an empty status is ``True``."""
    policy = _obj(spec, "podFailurePolicy")
    for rule in _objs(policy, "rules") if policy is not None else ():
        for pattern in _objs(rule, "onPodConditions"):
            _set_empty(pattern, "status", "True")


def _job_spec_walk(spec: JSONObject) -> None:
    """What the generated defaulter applies below any JobSpec: the pattern defaults and the pod template."""
    _pod_failure_policy_patterns(spec)
    template = _ensure(spec, "template")
    if template is not None:
        set_defaults_pod_template_spec(template)


def set_defaults_job(job: JSONObject) -> None:
    """``SetDefaults_Job``: completions and parallelism 1 when both are unset (parallelism 1 when only it is);
    backoffLimit 6, or MaxInt32 with backoffLimitPerIndex; object labels from the template's when the object has
    none; completionMode NonIndexed; suspend false; podReplacementPolicy; manualSelector false."""
    spec = _ensure(job, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _set_nil(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else _DEFAULT_BACKOFF_LIMIT
    template = _obj(spec, "template")
    template_meta = _obj(template, "metadata") if template is not None else None
    labels = template_meta.get("labels") if template_meta is not None else None
    metadata = _ensure(job, "metadata")
    if isinstance(labels, dict) and metadata is not None and not metadata.get("labels"):
        metadata["labels"] = dict(labels)
    _set_nil(spec, "completionMode", "NonIndexed")
    _set_nil(spec, "suspend", False)
    if spec.get("podReplacementPolicy") is None:
        failed_only = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failed_only else "TerminatingOrFailed"
    _set_nil(spec, "manualSelector", False)
    _job_spec_walk(spec)


def set_defaults_cron_job(cron_job: JSONObject) -> None:
    """``SetDefaults_CronJob``: concurrencyPolicy Allow, suspend false, history limits 3 successful and 1
    failed; then the generated walk into ``jobTemplate.spec`` (pod template and pattern defaults only)."""
    spec = _ensure(cron_job, "spec")
    if spec is None:
        return
    _set_empty(spec, "concurrencyPolicy", "Allow")
    _set_nil(spec, "suspend", False)
    _set_nil(spec, "successfulJobsHistoryLimit", 3)
    _set_nil(spec, "failedJobsHistoryLimit", 1)
    job_template = _ensure(spec, "jobTemplate")
    job_spec = _ensure(job_template, "spec") if job_template is not None else None
    if job_spec is not None:
        _job_spec_walk(job_spec)
