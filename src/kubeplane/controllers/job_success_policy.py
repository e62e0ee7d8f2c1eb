"""A Job's ``spec.successPolicy`` (upstream ``success_policy.go``): an Indexed Job succeeds early when any rule
matches its succeeded indexes.

A rule with ``succeededIndexes`` matches when all those indexes succeeded, or (with ``succeededCount``) at least
that many of them; a rule with only ``succeededCount`` when that many indexes succeeded. The first matching rule
gives the SuccessCriteriaMet condition its message, ``Matched rules at index <i>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.views import find_condition, status_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_indexed import Intervals, parse_indexes
from kubeplane.controllers.job_util import JOB_SUCCESS_CRITERIA_MET

__all__ = ["has_success_criteria_met_condition", "is_success_criteria_met_condition", "match_success_policy"]


def match_success_policy(policy: Mapping[str, Any] | None, completions: int, succeeded: Intervals) -> tuple[str, bool]:
    """(message, matched) (upstream ``matchSuccessPolicy``)."""
    if policy is None or len(succeeded) == 0:
        return "", False
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(str(rule["succeededIndexes"]), completions)
            if len(required) == 0:
                continue  # unparsable: upstream skips the rule
            if _match_succeeded_indexes_rule(required, succeeded, None if count is None else int(count)):
                return f"Matched rules at index {index}", True
        elif count is not None and succeeded.total() >= int(count):
            return f"Matched rules at index {index}", True
    return "", False


def _match_succeeded_indexes_rule(rule: Intervals, succeeded: Intervals, count: int | None) -> bool:
    contains = 0
    for r_first, r_last in rule.items:
        for s_first, s_last in succeeded.items:
            overlap = min(r_last, s_last) - max(r_first, s_first) + 1
            if overlap > 0:
                contains += overlap
    return contains == rule.total() or (count is not None and contains >= count)


def has_success_criteria_met_condition(job: Mapping[str, Any]) -> Obj | None:
    cond = find_condition(status_of(job).get("conditions"), JOB_SUCCESS_CRITERIA_MET)
    return dict(cond) if cond is not None and cond.get("status") == "True" else None


def is_success_criteria_met_condition(cond: Mapping[str, Any] | None) -> bool:
    return cond is not None and cond.get("type") == JOB_SUCCESS_CRITERIA_MET and cond.get("status") == "True"
