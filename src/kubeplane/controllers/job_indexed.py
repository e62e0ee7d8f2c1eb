"""Indexed Jobs (upstream ``indexed_job_utils.go``): completion indexes, their interval strings, and the pod
template changes for an index.

Each pod of an Indexed Job carries its index in the ``batch.kubernetes.io/job-completion-index`` annotation (and
label), gets hostname ``<job>-<index>``, generateName ``<job>-<index>-`` and the ``JOB_COMPLETION_INDEX`` env var.
``status.completedIndexes`` and ``status.failedIndexes`` are sorted interval lists written ``"1,3-5,7"`` (two
adjacent indexes are written ``"1,2"``, three or more as a range), each index below ``completions``.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.meta import MAX_GENERATED_NAME_BASE_LENGTH
from kubeplane.api.views import annotations_of, meta_of, status_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_pod_failure_policy import FAIL_INDEX, match_pod_failure_policy
from kubeplane.controllers.job_util import (
    COMPLETION_INDEX_ANNOTATION,
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    MAX_INT32,
    has_tracking_finalizer,
    is_pod_failed,
)

__all__ = [
    "COMPLETION_INDEX_ENV_NAME",
    "UNKNOWN_COMPLETION_INDEX",
    "Intervals",
    "add_completion_index_env",
    "completion_index",
    "index_absolute_failure_count",
    "index_failure_count",
    "new_index_failure_counts",
    "parse_indexes",
    "pod_generate_name_with_index",
]

log = logging.getLogger("kubeplane.controllers.job")

COMPLETION_INDEX_ENV_NAME = "JOB_COMPLETION_INDEX"
UNKNOWN_COMPLETION_INDEX = -1
_ATOI = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class Intervals:
    """Sorted, disjoint, non-adjacent closed intervals of indexes (upstream ``orderedIntervals``)."""

    items: tuple[tuple[int, int], ...] = ()

    def __len__(self) -> int:
        return len(self.items)

    def with_ordered_indexes(self, indexes: Iterable[int]) -> Intervals:
        """These intervals plus ``indexes`` (given in increasing order)."""
        return self.merge(Intervals(tuple((i, i) for i in indexes)))

    def merge(self, other: Intervals) -> Intervals:
        result: list[list[int]] = []
        for first, last in sorted(self.items + other.items):
            if not result or first > result[-1][1] + 1:
                result.append([first, last])
            elif result[-1][1] < last:
                result[-1][1] = last
        return Intervals(tuple((a, b) for a, b in result))

    def total(self) -> int:
        return sum(last - first + 1 for first, last in self.items)

    def has(self, ix: int) -> bool:
        return any(first <= ix <= last for first, last in self.items)

    def __str__(self) -> str:
        parts: list[str] = []
        for first, last in self.items:
            if last == first:
                parts.append(str(first))
            elif last == first + 1:
                parts.append(f"{first},{last}")
            else:
                parts.append(f"{first}-{last}")
        return ",".join(parts)


def parse_indexes(text: str | None, completions: int) -> Intervals:
    """Upstream ``parseIndexesFromString``: corrupt intervals are skipped, parsing stops at the first interval
    starting at or past ``completions`` and a last index past it is clipped."""
    if not text:
        return Intervals()
    result: list[list[int]] = []
    for part in text.split(","):
        limits = part.split("-")
        try:
            first = int(limits[0])
        except ValueError:
            log.info("Corrupted indexes interval, ignoring: %r", part)
            continue
        if first >= completions:
            break
        last = first
        if len(limits) > 1:
            try:
                last = int(limits[1])
            except ValueError:
                log.info("Corrupted indexes interval, ignoring: %r", part)
                continue
            last = min(last, completions - 1)
        if result and result[-1][1] == first - 1:
            result[-1][1] = last
        else:
            result.append([first, last])
    return Intervals(tuple((a, b) for a, b in result))


def completion_index(pod: Mapping[str, Any]) -> int:
    """The pod's completion index annotation, or :data:`UNKNOWN_COMPLETION_INDEX` when absent or invalid."""
    value = annotations_of(pod).get(COMPLETION_INDEX_ANNOTATION)
    if value is None:
        return UNKNOWN_COMPLETION_INDEX
    if not _ATOI.fullmatch(str(value)):
        return UNKNOWN_COMPLETION_INDEX  # strconv.Atoi's syntax: an optional sign and ASCII digits only
    ix = int(str(value))
    return ix if ix >= 0 else UNKNOWN_COMPLETION_INDEX


def _valid_index(pod: Mapping[str, Any], completions: int) -> int | None:
    ix = completion_index(pod)
    return ix if ix != UNKNOWN_COMPLETION_INDEX and ix < completions else None


def _parse_int32(value: str | None) -> int:
    if value is None or not _ATOI.fullmatch(str(value)):
        return 0
    parsed = int(str(value))
    return parsed if 0 <= parsed <= MAX_INT32 else 0


def index_failure_count(pod: Mapping[str, Any]) -> int:
    return _parse_int32(annotations_of(pod).get(INDEX_FAILURE_COUNT_ANNOTATION))


def index_absolute_failure_count(pod: Mapping[str, Any]) -> int:
    annotations = annotations_of(pod)
    return index_failure_count(pod) + _parse_int32(annotations.get(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION))


def new_index_failure_counts(job: Mapping[str, Any], replaced: Mapping[str, Any] | None) -> tuple[int, int]:
    """(failure count, ignored failure count) for the pod replacing ``replaced`` in its index."""
    if replaced is None:
        return 0, 0
    failures = index_failure_count(replaced)
    ignored = _parse_int32(annotations_of(replaced).get(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION))
    policy = (job.get("spec") or {}).get("podFailurePolicy")
    if policy is not None and not match_pod_failure_policy(policy, replaced).count_failed:
        ignored += 1
    else:
        failures += 1
    return failures, ignored


def succeeded_indexes(job: Mapping[str, Any], pods: Sequence[Obj], completions: int) -> tuple[Intervals, Intervals]:
    """(previous, current) succeeded indexes: ``status.completedIndexes`` plus succeeded pods still carrying the
    tracking finalizer (upstream ``calculateSucceededIndexes``)."""
    prev = parse_indexes(status_of(job).get("completedIndexes"), completions)
    new: set[int] = set()
    for pod in pods:
        ix = _valid_index(pod, completions)
        if ix is not None and status_of(pod).get("phase") == "Succeeded" and has_tracking_finalizer(pod):
            new.add(ix)
    return prev, prev.with_ordered_indexes(sorted(new))


def is_index_failed(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """The pod's failure fails its index: a FailIndex rule matched, or a counted failure reached
    backoffLimitPerIndex (upstream ``isIndexFailed``)."""
    counted = False
    if is_pod_failed(pod, job):
        policy = (job.get("spec") or {}).get("podFailurePolicy")
        if policy is not None:
            match = match_pod_failure_policy(policy, pod)
            if match.action == FAIL_INDEX:
                return True
            counted = match.count_failed
        else:
            counted = True
    limit = int((job.get("spec") or {}).get("backoffLimitPerIndex") or 0)
    return counted and index_failure_count(pod) >= limit


def failed_indexes(job: Mapping[str, Any], pods: Sequence[Obj], completions: int) -> Intervals:
    """``status.failedIndexes`` plus the indexes of failed pods still carrying the tracking finalizer (upstream
    ``calculateFailedIndexes``)."""
    prev = parse_indexes(status_of(job).get("failedIndexes"), completions)
    new: set[int] = set()
    for pod in pods:
        ix = _valid_index(pod, completions)
        if ix is not None and has_tracking_finalizer(pod) and is_index_failed(job, pod):
            new.add(ix)
    return prev.with_ordered_indexes(sorted(new))


def indexes_of(pods: Iterable[Obj]) -> set[int]:
    return {ix for ix in (completion_index(p) for p in pods) if ix != UNKNOWN_COMPLETION_INDEX}


def first_pending_indexes(count: int, completions: int, non_pending: Intervals) -> list[int]:
    """The ``count`` lowest indexes below ``completions`` not in ``non_pending`` (upstream
    ``firstPendingIndexes``; the caller merges active, succeeded, failed and — when only failed pods are
    replaced — terminating indexes into ``non_pending``)."""
    result: list[int] = []
    candidate = 0
    for first, last in non_pending.items:
        while candidate < completions and len(result) < count and candidate < first:
            result.append(candidate)
            candidate += 1
        candidate = max(candidate, last + 1)
    while candidate < completions and len(result) < count:
        result.append(candidate)
        candidate += 1
    return result


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """``<job>-<index>-``, the job name cut so the whole prefix fits a generated name (upstream)."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_BASE_LENGTH:
        prefix = prefix[: MAX_GENERATED_NAME_BASE_LENGTH - len(suffix)] + suffix
    return prefix


def add_completion_index_env(template: Obj) -> None:
    """Give every (init) container ``JOB_COMPLETION_INDEX`` from the index label, unless it already has it."""
    spec = template.setdefault("spec", {})
    field_path = f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            env = container.setdefault("env", [])
            if any(v.get("name") == COMPLETION_INDEX_ENV_NAME for v in env):
                continue
            env.append({"name": COMPLETION_INDEX_ENV_NAME, "valueFrom": {"fieldRef": {"fieldPath": field_path}}})


def template_for_index(template: Obj, job_name: str, index: int) -> Obj:
    """A copy of ``template`` for ``index``: the annotation and label, hostname ``<job>-<index>``."""
    out = copy.deepcopy(template)
    meta = out.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), COMPLETION_INDEX_ANNOTATION: str(index)}
    meta["labels"] = {**(meta.get("labels") or {}), COMPLETION_INDEX_ANNOTATION: str(index)}
    out.setdefault("spec", {})["hostname"] = f"{job_name}-{index}"
    return out


def by_completion_index(pods: Iterable[Obj]) -> list[Obj]:
    return sorted(pods, key=completion_index)


def pod_uid(pod: Mapping[str, Any]) -> str:
    return str(meta_of(pod).get("uid") or "")
