"""Matching a failed pod against a Job's ``spec.podFailurePolicy`` (upstream ``pod_failure_policy.go``).

Rules are tried in order; the first that matches decides. ``onExitCodes`` looks at terminated containers (then
init containers) with a non-zero exit code, optionally of one container; ``onPodConditions`` at the pod's
conditions (e.g. ``DisruptionTarget`` True after an eviction or preemption). The outcome is
:class:`PolicyMatch`: the FailJob message, whether the failure counts towards the backoff limits, the action.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.api.views import meta_of, status_of

__all__ = ["PolicyMatch", "match_pod_failure_policy"]

IGNORE, FAIL_JOB, FAIL_INDEX, COUNT = "Ignore", "FailJob", "FailIndex", "Count"


@dataclass(frozen=True, slots=True)
class PolicyMatch:
    fail_job_message: str | None = None
    """Set when a FailJob rule matched: the Job fails with reason PodFailurePolicy and this message."""
    count_failed: bool = True
    """False when an Ignore rule matched: the failure does not count towards backoffLimit(PerIndex)."""
    action: str | None = None
    """The matched rule's action, None when no rule matched."""


_NO_MATCH = PolicyMatch()


def _exit_code_matches(code: int, requirement: Mapping[str, Any]) -> bool:
    values = [int(v) for v in requirement.get("values") or ()]
    operator = requirement.get("operator")
    if operator == "In":
        return code in values
    if operator == "NotIn":
        return code not in values
    return False


def _matching_container(statuses: Any, requirement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first terminated container with a non-zero exit code the requirement accepts."""
    wanted = requirement.get("containerName")
    for status in statuses or ():
        terminated = (status.get("state") or {}).get("terminated")
        if terminated is None:
            continue  # still terminating: no exit code to match
        if wanted is not None and wanted != status.get("name"):
            continue
        code = int(terminated.get("exitCode") or 0)
        if code != 0 and _exit_code_matches(code, requirement):
            found: Mapping[str, Any] = status
            return found
    return None


def _match_on_exit_codes(pod_status: Mapping[str, Any], requirement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    found = _matching_container(pod_status.get("containerStatuses"), requirement)
    if found is not None:
        return found
    return _matching_container(pod_status.get("initContainerStatuses"), requirement)


def _match_on_pod_conditions(pod_status: Mapping[str, Any], patterns: Any) -> Mapping[str, Any] | None:
    for condition in pod_status.get("conditions") or ():
        for pattern in patterns or ():
            if condition.get("type") == pattern.get("type") and condition.get("status") == (
                pattern.get("status") or "True"  # the API defaults a pattern's status to True
            ):
                found: Mapping[str, Any] = condition
                return found
    return None


def match_pod_failure_policy(policy: Mapping[str, Any] | None, pod: Mapping[str, Any]) -> PolicyMatch:
    """Upstream ``matchPodFailurePolicy`` for a failed pod; no policy or no matching rule counts the failure."""
    if policy is None:
        return _NO_MATCH
    pod_status: Mapping[str, Any] = status_of(pod)
    meta = meta_of(pod)
    for index, rule in enumerate(policy.get("rules") or ()):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            container = _match_on_exit_codes(pod_status, rule["onExitCodes"])
            if container is None:
                continue
            if action == FAIL_JOB:
                code = int(((container.get("state") or {}).get("terminated") or {}).get("exitCode") or 0)
                message = (
                    f"Container {container.get('name')} for pod {meta.get('namespace')}/{meta.get('name')} "
                    f"failed with exit code {code} matching {action} rule at index {index}"
                )
                return PolicyMatch(message, True, FAIL_JOB)
        elif rule.get("onPodConditions") is not None:
            condition = _match_on_pod_conditions(pod_status, rule["onPodConditions"])
            if condition is None:
                continue
            if action == FAIL_JOB:
                message = (
                    f"Pod {meta.get('namespace')}/{meta.get('name')} has condition {condition.get('type')} "
                    f"matching {action} rule at index {index}"
                )
                return PolicyMatch(message, True, FAIL_JOB)
        else:
            continue
        if action == IGNORE:
            return PolicyMatch(None, False, IGNORE)
        if action == FAIL_INDEX:
            return PolicyMatch(None, True, FAIL_INDEX)
        if action == COUNT:
            return PolicyMatch(None, True, COUNT)
        # An unknown action: upstream's switch falls through to the next rule.
    return _NO_MATCH
