"""What the workload controllers share (upstream ``pkg/controller/controller_utils.go`` and
``controller_ref_manager.go``).

* **Expectations** (:class:`ControllerExpectations`, :class:`UIDTrackingControllerExpectations`): a controller
  that has just asked for N creations or deletions records them, and does not act on the same key again until
  its informer has observed them (``creation_observed`` / ``deletion_observed`` from the event handlers) or
  :data:`EXPECTATIONS_TIMEOUT` has passed on the injected clock. This is what keeps a ReplicaSet from creating
  the same pods twice while its pod informer lags behind its own writes. Expectations only ever *delay* a sync;
  a restarted controller starts with none and reads the truth from the informers.
* **Pod control** (:class:`PodControl`): create a pod from a template (``generateName: <owner>-``, the
  template's labels/annotations/finalizers, a controller ownerReference) and delete or patch a pod, recording
  upstream's events (``SuccessfulCreate`` "Created pod: <name>", ``FailedCreate`` "Error creating: <err>",
  ``SuccessfulDelete`` "Deleted pod: <name>", ``FailedDelete`` "Error deleting: <err>").
* **ControllerRef management**: claim the objects (pods, ReplicaSets) a controller should own.
  An object owned by another controller is ignored; one owned by us that no longer matches the selector is released
  (unless we are being deleted); a live orphan that matches is adopted by a strategic-merge patch of its
  ownerReferences (``controller: true``, ``blockOwnerDeletion: true``) after a fresh GET confirms the owner is
  not being deleted.
* **ControllerRef management** (:class:`BaseControllerRefManager`, upstream's ``BaseControllerRefManager``):
  the claim/adopt/release rules once, with :class:`PodControllerRefManager` and
  :class:`ReplicaSetControllerRefManager` supplying only how their resource is patched.
* **Pod predicates** (:func:`is_pod_active`, :func:`is_pod_ready`, :func:`is_pod_available`, ...) and the
  order in which to delete surplus pods (:func:`active_pods_with_ranks_less`, upstream ``ActivePodsWithRanks``).
* **Values** shared by the workload controllers: IntOrString scaling
  (:func:`scaled_value_from_int_or_percent`), ``metav1.Condition`` upkeep (:func:`set_status_condition`) and the
  pod-template hash (:func:`compute_hash`, FNV-32a + ``rand.SafeEncodeString``).

Objects are wire-format dicts. Objects from listers and informer events are shared with the cache: nothing here
changes one in place.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api.meta import NAME_ALPHABET
from kubeplane.client.cache import Indexer
from kubeplane.client.clock import Clock
from kubeplane.client.errors import APIStatusError, InvalidError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kubeplane.client.interface import Client, Obj, PatchType

__all__ = [
    "CONTROLLER_UID_INDEX",
    "DELETION_COST_ANNOTATION",
    "DISRUPTION_TARGET",
    "EXPECTATIONS_TIMEOUT",
    "FAILED_CREATE_POD_REASON",
    "FAILED_DELETE_POD_REASON",
    "NAMESPACE_TERMINATING_CAUSE",
    "ORPHAN_POD_INDEX_KEY",
    "POD_CONTROLLER_UID_INDEX",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "SUCCESSFUL_CREATE_POD_REASON",
    "SUCCESSFUL_DELETE_POD_REASON",
    "AggregateError",
    "BaseControllerRefManager",
    "ControlleeExpectations",
    "ControllerExpectations",
    "IntOrPercentError",
    "PodControl",
    "PodControllerRefManager",
    "ReplicaSetControllerRefManager",
    "UIDTrackingControllerExpectations",
    "active_pods_with_ranks_less",
    "compute_hash",
    "controller_uid_index",
    "error_message",
    "filter_active_pods",
    "filter_claimed_pods",
    "filter_pods_by_owner",
    "filter_terminating_pods",
    "find_min_next_pod_availability_check",
    "fnv32a",
    "get_controller_of",
    "get_pod_from_template",
    "get_pod_ready_condition",
    "get_pods_prefix",
    "has_status_cause",
    "is_being_deleted",
    "is_controlled_by",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminal",
    "is_pod_terminating",
    "meta_of",
    "new_controller_ref",
    "parse_timestamp",
    "pod_condition_patch",
    "pod_controller_uid_index",
    "pod_key",
    "recheck_deletion_timestamp",
    "safe_encode_string",
    "scaled_value_from_int_or_percent",
    "set_status_condition",
    "slow_start_batch",
    "sort_active_pods_with_ranks",
    "with_type_meta",
]

log = logging.getLogger("kubeplane.controllers")

EXPECTATIONS_TIMEOUT = 5 * 60.0
"""Seconds after which unmet expectations stop blocking a sync (upstream ``ExpectationsTimeout``): a dropped
watch event must not put a controller to sleep forever."""

SLOW_START_INITIAL_BATCH_SIZE = 1
"""The first batch of :func:`slow_start_batch` (upstream ``SlowStartInitialBatchSize``)."""

FAILED_CREATE_POD_REASON = "FailedCreate"
SUCCESSFUL_CREATE_POD_REASON = "SuccessfulCreate"
FAILED_DELETE_POD_REASON = "FailedDelete"
SUCCESSFUL_DELETE_POD_REASON = "SuccessfulDelete"

NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
"""``v1.NamespaceTerminatingCause``: a create refused because the namespace is going away (not worth an event)."""

DISRUPTION_TARGET = "DisruptionTarget"
"""The pod condition a controller sets before it deletes a pod (``v1.DisruptionTarget``)."""

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
"""Lower cost pods are deleted first when scaling down (upstream ``PodDeletionCost``, on by default)."""

CONTROLLER_UID_INDEX = "controllerUID"
"""Index name: an object by the UID of its controller (upstream's ``controllerUIDIndex`` on ReplicaSets)."""

POD_CONTROLLER_UID_INDEX = "podControllerUID"
"""Index name: a pod by its controller's UID, or by :data:`ORPHAN_POD_INDEX_KEY` when it has none
(upstream ``PodControllerUIDIndex``)."""

ORPHAN_POD_INDEX_KEY = "_ORPHAN_POD"


# --- owner references --------------------------------------------------------------------------------------


def meta_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj``'s metadata; empty (never None) when it has none."""
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def get_controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ownerReference with ``controller: true`` (upstream ``metav1.GetControllerOf``), or None."""
    for ref in meta_of(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether ``obj``'s controller reference points at ``owner``'s UID (upstream ``metav1.IsControlledBy``)."""
    ref = get_controller_of(obj)
    return ref is not None and bool(ref.get("uid")) and ref.get("uid") == meta_of(owner).get("uid")


def new_controller_ref(owner: Mapping[str, Any], *, api_version: str, kind: str) -> Obj:
    """A controller ownerReference to ``owner`` that blocks its foreground deletion (upstream
    ``metav1.NewControllerRef``)."""
    meta = meta_of(owner)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": str(meta.get("name") or ""),
        "uid": str(meta.get("uid") or ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_uid_index(obj: Obj) -> list[str]:
    """Index function for :data:`CONTROLLER_UID_INDEX`: the controller's UID, nothing for uncontrolled objects."""
    ref = get_controller_of(obj)
    return [str(ref["uid"])] if ref is not None and ref.get("uid") else []


def pod_controller_uid_index(obj: Obj) -> list[str]:
    """Index function for :data:`POD_CONTROLLER_UID_INDEX`; orphans are all under :data:`ORPHAN_POD_INDEX_KEY`
    so a controller finds its candidates for adoption without scanning every pod of the namespace."""
    ref = get_controller_of(obj)
    if ref is not None and ref.get("uid"):
        return [str(ref["uid"])]
    return [ORPHAN_POD_INDEX_KEY]


def filter_pods_by_owner(indexer: Indexer, owner: Mapping[str, Any], *, include_orphaned_pods: bool) -> list[Obj]:
    """Pods in ``owner``'s namespace controlled by ``owner`` (and, optionally, orphans) from a pod informer's
    indexer that has :data:`POD_CONTROLLER_UID_INDEX` (upstream ``FilterPodsByOwner``).

    Pods controlled by anyone else are never returned: no controller may act on them. ``indexer`` is a
    :class:`kubeplane.client.cache.Indexer` (an informer's ``indexer``)."""
    meta = meta_of(owner)
    namespace, uid = meta.get("namespace") or "", meta.get("uid") or ""
    if not namespace or not uid:
        raise ValueError("owner has no namespace or uid")
    keys = [str(uid)] + ([ORPHAN_POD_INDEX_KEY] if include_orphaned_pods else [])
    result: list[Obj] = []
    for key in keys:
        result.extend(
            p for p in indexer.by_index(POD_CONTROLLER_UID_INDEX, key) if meta_of(p).get("namespace") == namespace
        )
    return result


def with_type_meta(obj: Mapping[str, Any], api_version: str, kind: str) -> Obj:
    """``obj`` with its apiVersion and kind filled in where missing (informer list items carry neither), e.g. as
    the object an event refers to. A shallow copy: ``obj`` itself (shared with the cache) is left alone."""
    return {**obj, "apiVersion": obj.get("apiVersion") or api_version, "kind": obj.get("kind") or kind}


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name``: how expectations name a pod they wait to see deleted (upstream ``PodKey``)."""
    meta = meta_of(pod)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


# --- errors ------------------------------------------------------------------------------------------------


def error_message(exc: BaseException) -> str:
    """An error as upstream's ``err.Error()`` would print it: a server failure is its Status message."""
    if isinstance(exc, APIStatusError):
        return exc.message or str(exc)
    return str(exc)


def has_status_cause(exc: BaseException, cause: str) -> bool:
    """Whether a server failure lists ``cause`` in ``details.causes`` (upstream ``apierrors.HasStatusCause``)."""
    if not isinstance(exc, APIStatusError):
        return False
    causes = (exc.status.get("details") or {}).get("causes") or []
    return any(isinstance(c, Mapping) and c.get("type") == cause for c in causes)


class AggregateError(Exception):
    """Several errors as one (upstream ``utilerrors.NewAggregate``): one error prints as itself, several as
    ``[e1, e2]``."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        self.errors = list(errors)
        text = (
            error_message(self.errors[0])
            if len(self.errors) == 1
            else ("[" + ", ".join(error_message(e) for e in self.errors) + "]")
        )
        super().__init__(text)


# --- values: IntOrString, conditions, the pod-template hash -------------------------------------------------


class IntOrPercentError(ValueError):
    """An IntOrString that is neither an int nor an ``"N%"`` string (upstream's intstr errors)."""


def scaled_value_from_int_or_percent(value: int | str | None, total: int, round_up: bool) -> int:
    """Upstream ``intstr.GetScaledValueFromIntOrPercent``: an int as is; ``"N%"`` of ``total`` rounded up or
    down. Any other string raises :class:`IntOrPercentError` with upstream's message; None is an error too."""
    if value is None:
        raise IntOrPercentError("nil value for IntOrString")
    if isinstance(value, bool):
        raise IntOrPercentError(f"invalid type for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise IntOrPercentError(f"invalid type: string is not a percentage: {value!r}")
    digits = value[:-1]
    parsed = apilabels.parse_int64(digits)
    if parsed is None:
        raise IntOrPercentError(
            f'invalid value for IntOrString: invalid value "{value}": strconv.Atoi: parsing "{digits}": invalid syntax'
        )
    if round_up:
        return math.ceil(parsed * total / 100)
    return math.floor(parsed * total / 100)


def set_status_condition(conditions: list[Obj], new: Obj, now: float) -> None:
    """Upstream ``apimeta.SetStatusCondition`` on a list of ``metav1.Condition`` dicts, in place.

    A new type is appended with ``lastTransitionTime`` now (unless given); an existing one keeps its
    transition time unless its status changes, and takes the new reason, message and observedGeneration.
    """
    for existing in conditions:
        if existing.get("type") == new["type"]:
            if existing.get("status") != new["status"]:
                existing["status"] = new["status"]
                existing["lastTransitionTime"] = new.get("lastTransitionTime") or apimeta.format_time(now)
            existing["reason"] = new.get("reason", "")
            existing["message"] = new.get("message", "")
            existing["observedGeneration"] = new.get("observedGeneration", 0)
            return
    added = dict(new)
    added.setdefault("lastTransitionTime", apimeta.format_time(now))
    conditions.append(added)


_FNV32_OFFSET_BASIS = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def fnv32a(data: bytes, seed: int = _FNV32_OFFSET_BASIS) -> int:
    """FNV-1a, 32 bits (Go's ``hash/fnv.New32a``). ``seed`` continues an earlier hash, so
    ``fnv32a(b, fnv32a(a)) == fnv32a(a + b)`` (how upstream writes the collision count after the template)."""
    h = seed
    for byte in data:
        h = ((h ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode_string(text: str) -> str:
    """Upstream ``rand.SafeEncodeString``: each character mapped into the vowel-free alphabet (no accidental
    words, no 0/1/3), so the result is always valid in names and label values."""
    return "".join(NAME_ALPHABET[ord(ch) % len(NAME_ALPHABET)] for ch in text)


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """Upstream ``controller.ComputeHash``: FNV-32a over the pod template, then (when ``collision_count`` is set)
    its value as 8 little-endian bytes (a uint32 in the first four, as upstream writes it), then
    :func:`safe_encode_string` of the decimal hash. Used for the Deployment's ``pod-template-hash`` and the
    DaemonSet's ``controller-revision-hash``.

    Difference from upstream: upstream feeds the hasher ``spew``'s ``%#v`` dump of the Go ``PodTemplateSpec``
    struct (every field including zero values, in Go type syntax), which cannot be reproduced from a JSON dict
    without Go's type information. Here the input is the template's canonical JSON (sorted keys, no spaces,
    UTF-8). The hash is therefore a different value for the same template, with the same properties:
    deterministic, stable across restarts, and changed by ``collisionCount``. Nothing relies on the value
    itself matching upstream's.
    """
    data = json.dumps(template, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    h = fnv32a(data)
    if collision_count is not None:
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00" * 4, h)
    return safe_encode_string(str(h))


# --- expectations ------------------------------------------------------------------------------------------


@dataclass
class ControlleeExpectations:
    """Creations and deletions one controller key still waits to observe, and when they were set (monotonic)."""

    key: str
    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0

    def expired(self, now: float) -> bool:
        return now - self.timestamp > EXPECTATIONS_TIMEOUT


class ControllerExpectations:
    """Per controller key, the creations/deletions it expects (upstream ``ControllerExpectations``).

    Invariants: setting expectations replaces the previous ones and stamps them with the clock; afterwards they
    are only lowered (by observations) or raised explicitly. A key with no expectations, fulfilled ones, or ones
    older than :data:`EXPECTATIONS_TIMEOUT` is *satisfied* and may sync. Everything runs on one event loop, so
    the counters need no atomics.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._store: dict[str, ControlleeExpectations] = {}

    def get_expectations(self, key: str) -> ControlleeExpectations | None:
        return self._store.get(key)

    def delete_expectations(self, key: str) -> None:
        self._store.pop(key, None)

    def satisfied_expectations(self, key: str) -> bool:
        """True if ``key`` may sync: no expectations, fulfilled, or expired."""
        exp = self._store.get(key)
        if exp is None:
            return True
        if exp.fulfilled():
            return True
        if exp.expired(self._clock.monotonic()):
            log.debug("controller expectations expired: %s", exp)
            return True
        log.debug("controller still waiting on expectations: %s", exp)
        return False

    def set_expectations(self, key: str, add: int, delete: int) -> None:
        self._store[key] = ControlleeExpectations(key, add, delete, self._clock.monotonic())

    def expect_creations(self, key: str, adds: int) -> None:
        self.set_expectations(key, adds, 0)

    def expect_deletions(self, key: str, dels: int) -> None:
        self.set_expectations(key, 0, dels)

    def lower_expectations(self, key: str, add: int, delete: int) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add -= add
            exp.delete -= delete

    def raise_expectations(self, key: str, add: int, delete: int) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add += add
            exp.delete += delete

    def creation_observed(self, key: str) -> None:
        self.lower_expectations(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        self.lower_expectations(key, 0, 1)


class UIDTrackingControllerExpectations:
    """:class:`ControllerExpectations` that also remembers *which* pods it expects to see deleted (upstream
    ``UIDTrackingControllerExpectations``; the "UIDs" are pod keys, as upstream).

    A graceful delete is observed twice (the update setting ``deletionTimestamp``, then the delete); only the
    first observation of a remembered pod lowers the count, so a deletion is never counted twice and a pod the
    controller did not delete never lowers it.
    """

    def __init__(self, clock: Clock) -> None:
        self.expectations = ControllerExpectations(clock)
        self._uids: dict[str, set[str]] = {}

    def get_uids(self, key: str) -> set[str] | None:
        return self._uids.get(key)

    def get_expectations(self, key: str) -> ControlleeExpectations | None:
        return self.expectations.get_expectations(key)

    def satisfied_expectations(self, key: str) -> bool:
        return self.expectations.satisfied_expectations(key)

    def expect_creations(self, key: str, adds: int) -> None:
        self.expectations.expect_creations(key, adds)

    def creation_observed(self, key: str) -> None:
        self.expectations.creation_observed(key)

    def expect_deletions(self, key: str, deleted_keys: Iterable[str]) -> None:
        existing = self._uids.get(key)
        if existing:
            log.error("Clobbering existing delete keys: %s", sorted(existing))
        expected = set(deleted_keys)
        self._uids[key] = expected
        self.expectations.expect_deletions(key, len(expected))

    def deletion_observed(self, key: str, deleted_key: str) -> None:
        uids = self._uids.get(key)
        if uids is not None and deleted_key in uids:
            self.expectations.deletion_observed(key)
            uids.discard(deleted_key)

    def delete_expectations(self, key: str) -> None:
        self.expectations.delete_expectations(key)
        self._uids.pop(key, None)


# --- pod predicates ----------------------------------------------------------------------------------------


def _status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    status: Mapping[str, Any] = pod.get("status") or {}
    return status


def pod_condition_patch(pod: Mapping[str, Any], condition: Mapping[str, Any], now: float) -> Obj | None:
    """The condition to write so ``pod`` carries ``condition``, or None when it already does (upstream
    ``UpdatePodCondition``): ``lastTransitionTime`` moves to ``now`` only when the status changes (or the
    condition is new). Keys the old condition has and the new one lacks are set to None, so a strategic merge
    patch (conditions merge by ``type``) replaces the condition as upstream's update does."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    existing = next((c for c in conditions if c.get("type") == condition.get("type")), None)
    new: Obj = dict(condition)
    if existing is None:
        new.setdefault("lastTransitionTime", apimeta.format_time(now))
        return new
    if new.get("status") != existing.get("status"):
        new["lastTransitionTime"] = apimeta.format_time(now)
    else:
        new["lastTransitionTime"] = existing.get("lastTransitionTime")
    keys = ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")
    if all(new.get(k) == existing.get(k) for k in keys):
        return None
    for k in existing:
        new.setdefault(k, None)
    return new


def parse_timestamp(value: Any) -> float | None:
    """An RFC 3339 timestamp (``metav1.Time`` or ``MicroTime``) as epoch seconds; None for absent or unparsable
    (Go's zero time). Memoised: controllers re-read the same timestamps every pass (node health every 5 s)."""
    if not value or not isinstance(value, str):
        return None
    return _parse_timestamp(value)


@functools.lru_cache(maxsize=65_536)
def _parse_timestamp(value: str) -> float | None:
    try:
        parsed: datetime = apimeta.parse_time(value)
    except ValueError:
        try:
            parsed = apimeta.parse_micro_time(value)
        except ValueError:
            return None
    return parsed.timestamp()


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    """Succeeded or Failed: the pod's containers will never run again."""
    return _status(pod).get("phase") in ("Succeeded", "Failed")


def is_being_deleted(obj: Mapping[str, Any]) -> bool:
    """``metadata.deletionTimestamp`` is set (upstream's ``DeletionTimestamp != nil``), whatever the phase."""
    return bool(meta_of(obj).get("deletionTimestamp"))


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """Not Succeeded, not Failed, not being deleted (upstream ``IsPodActive``): the pods a controller counts."""
    return not is_pod_terminal(pod) and not is_being_deleted(pod)


def is_pod_terminating(pod: Mapping[str, Any]) -> bool:
    """Being deleted but not yet terminal (upstream ``IsPodTerminating``)."""
    return not is_pod_terminal(pod) and is_being_deleted(pod)


def filter_active_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_pod_active(p)]


def filter_terminating_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_pod_terminating(p)]


def filter_claimed_pods(owner: Mapping[str, Any], selector: apilabels.Selector, pods: Iterable[Obj]) -> list[Obj]:
    """Pods controlled by ``owner`` that still match its selector (upstream ``FilterClaimedPods``)."""
    return [p for p in pods if is_controlled_by(p, owner) and selector.matches(meta_of(p).get("labels") or {})]


def get_pod_ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in _status(pod).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """The Ready condition is True (upstream ``podutil.IsPodReady``)."""
    cond = get_pod_ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready, and ready for more than ``min_ready_seconds`` at ``now`` (epoch seconds) (upstream
    ``podutil.IsPodAvailable``: strictly after; a Ready condition without a transition time is never available
    when ``min_ready_seconds`` > 0)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    cond = get_pod_ready_condition(pod)
    since = parse_timestamp(cond.get("lastTransitionTime")) if cond is not None else None
    return since is not None and since + min_ready_seconds < now


def _next_pod_availability_check(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> float | None:
    """Seconds until a ready pod becomes available, or None if it is not ready or already available."""
    if not is_pod_ready(pod) or min_ready_seconds <= 0:
        return None
    cond = get_pod_ready_condition(pod)
    since = parse_timestamp(cond.get("lastTransitionTime")) if cond is not None else None
    if since is None:
        return None
    remaining = since + min_ready_seconds - now
    return remaining if remaining > 0 else None


def find_min_next_pod_availability_check(
    pods: Iterable[Mapping[str, Any]], min_ready_seconds: int, last_evaluation: float, clock: Clock
) -> float | None:
    """Seconds until the next of ``pods`` becomes available (upstream ``FindMinNextPodAvailabilityCheck``).

    The pod is chosen as of ``last_evaluation`` (when the owner's status was computed); the delay is measured
    from the clock's ``now`` so the time spent writing the status is not waited twice. 0 if that pod has
    become available meanwhile; None if no ready pod is waiting for availability."""
    best: float | None = None
    best_pod: Mapping[str, Any] | None = None
    for pod in pods:
        delay = _next_pod_availability_check(pod, min_ready_seconds, last_evaluation)
        if delay is not None and (best is None or delay < best):
            best, best_pod = delay, pod
    if best_pod is None:
        return None
    updated = _next_pod_availability_check(best_pod, min_ready_seconds, clock.now())
    return updated if updated is not None else 0.0


# --- deletion order ----------------------------------------------------------------------------------------

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    """The pod-deletion-cost annotation as an int32; 0 when absent or invalid (upstream ignores the error)."""
    value = (meta_of(pod).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    if value is None:
        return 0
    try:
        cost = int(str(value), 10)
    except ValueError:
        return 0
    return cost if -(2**31) <= cost < 2**31 else 0


def _pod_ready_time(pod: Mapping[str, Any]) -> float | None:
    if is_pod_ready(pod):
        cond = get_pod_ready_condition(pod)
        return parse_timestamp(cond.get("lastTransitionTime")) if cond is not None else None
    return None


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    """``t1`` is after ``t2``, a zero (missing) time counting as after any other (upstream ``afterOrZero``)."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _logarithmic_rank_diff(t1: float, t2: float, now: float) -> int:
    """``floor(log2(age1 ns)) - floor(log2(age2 ns))``, an age <= 0 ranking -1 (upstream ``logarithmicRankDiff``):
    pods whose ages are within a power of two of each other are treated as the same age."""

    def rank(t: float) -> int:
        age_ns = round((now - t) * 1e9)
        return int(math.log2(age_ns)) if age_ns > 0 else -1

    return rank(t1) - rank(t2)


def _max_container_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(regular, sidecar) maximum restart counts (upstream ``maxContainerRestarts``)."""
    status = _status(pod)
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    sidecars = {
        c.get("name")
        for c in (pod.get("spec") or {}).get("initContainers") or ()
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("initContainerStatuses") or ()
            if c.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _ages_less(t1: float | None, t2: float | None, now: float | None, uid1: str, uid2: str) -> bool:
    """Newer (or zero) first, ages bucketed logarithmically with the UID as tie breaker (LogarithmicScaleDown)."""
    if now is None or t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _logarithmic_rank_diff(t1, t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def active_pods_with_ranks_less(
    pi: Mapping[str, Any], rank_i: int, pj: Mapping[str, Any], rank_j: int, now: float | None
) -> bool:
    """Whether ``pi`` should be deleted before ``pj`` (upstream ``ActivePodsWithRanks.Less``, with the default
    feature gates PodDeletionCost and LogarithmicScaleDown). The rank is the number of related active pods on
    the pod's node. In order:

    1. unassigned < assigned;  2. Pending < Unknown < Running;  3. not ready < ready;
    4. lower pod-deletion-cost < higher;  5. higher rank (more doubled up) < lower rank;
    6. both ready: ready for a shorter time < longer (log2 buckets, then UID);
    7. higher max container restarts < lower (then sidecar restarts);
    8. no creation time < newer < older (log2 buckets, then UID).
    """
    node_i = str((pi.get("spec") or {}).get("nodeName") or "")
    node_j = str((pj.get("spec") or {}).get("nodeName") or "")
    if node_i != node_j and (not node_i or not node_j):
        return not node_i
    phase_i = _PHASE_ORDINAL.get(str(_status(pi).get("phase") or ""), 0)
    phase_j = _PHASE_ORDINAL.get(str(_status(pj).get("phase") or ""), 0)
    if phase_i != phase_j:
        return phase_i < phase_j
    ready_i, ready_j = is_pod_ready(pi), is_pod_ready(pj)
    if ready_i != ready_j:
        return not ready_i
    cost_i, cost_j = _deletion_cost(pi), _deletion_cost(pj)
    if cost_i != cost_j:
        return cost_i < cost_j
    if rank_i != rank_j:
        return rank_i > rank_j
    uid_i, uid_j = str(meta_of(pi).get("uid") or ""), str(meta_of(pj).get("uid") or "")
    if ready_i and ready_j:
        t_i, t_j = _pod_ready_time(pi), _pod_ready_time(pj)
        if t_i != t_j:
            return _ages_less(t_i, t_j, now, uid_i, uid_j)
    restarts_i, restarts_j = _max_container_restarts(pi), _max_container_restarts(pj)
    if restarts_i[0] != restarts_j[0]:
        return restarts_i[0] > restarts_j[0]
    if restarts_i[1] != restarts_j[1]:
        return restarts_i[1] > restarts_j[1]
    c_i, c_j = (
        parse_timestamp(meta_of(pi).get("creationTimestamp")),
        parse_timestamp(meta_of(pj).get("creationTimestamp")),
    )
    if c_i != c_j:
        return _ages_less(c_i, c_j, now, uid_i, uid_j)
    return False


def sort_active_pods_with_ranks(pods: Sequence[Obj], ranks: Sequence[int], now: float | None) -> list[Obj]:
    """``pods`` ordered by :func:`active_pods_with_ranks_less`, the first to delete first (stable)."""
    indexed = list(zip(pods, ranks, strict=True))

    def compare(a: tuple[Obj, int], b: tuple[Obj, int]) -> int:
        if active_pods_with_ranks_less(a[0], a[1], b[0], b[1], now):
            return -1
        if active_pods_with_ranks_less(b[0], b[1], a[0], a[1], now):
            return 1
        return 0

    return [pod for pod, _ in sorted(indexed, key=functools.cmp_to_key(compare))]


# --- creating pods -----------------------------------------------------------------------------------------


async def slow_start_batch(
    count: int, initial_batch_size: int, fn: Callable[[], Awaitable[None]]
) -> tuple[int, BaseException | None]:
    """Call ``fn`` ``count`` times in concurrent batches of 1, 2, 4, ... (upstream ``slowStartBatch``).

    A batch with any failure stops the rest, so a doomed create (quota, admission) costs one request, not
    hundreds. Returns (successful calls, the first error or None)."""
    remaining, successes = count, 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for r in errors:
            if isinstance(r, asyncio.CancelledError):
                raise r
        successes += batch - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


def get_pods_prefix(controller_name: str) -> str:
    """``<name>-`` as the generateName, or the bare name if the dash would make it invalid (upstream)."""
    prefix = f"{controller_name}-"
    if apimeta.NameRule.DNS_SUBDOMAIN.validate(prefix, prefix=True):
        return controller_name
    return prefix


def get_pod_from_template(
    template: Mapping[str, Any], owner: Mapping[str, Any], controller_ref: Mapping[str, Any] | None
) -> Obj:
    """The pod a controller creates (upstream ``GetPodFromTemplate``): the template's labels, annotations,
    finalizers and spec (copied), ``generateName`` from the owner's name, the controller reference."""
    tmeta: Mapping[str, Any] = template.get("metadata") or {}
    metadata: Obj = {"generateName": get_pods_prefix(str(meta_of(owner).get("name") or ""))}
    for name in ("labels", "annotations"):
        if tmeta.get(name):
            metadata[name] = dict(tmeta[name])
    if tmeta.get("finalizers"):
        metadata["finalizers"] = list(tmeta["finalizers"])
    if controller_ref is not None:
        metadata["ownerReferences"] = [dict(controller_ref)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template.get("spec") or {})}


def _validate_controller_ref(ref: Mapping[str, Any] | None) -> None:
    if ref is None:
        raise ValueError("controllerRef is nil")
    if not ref.get("apiVersion"):
        raise ValueError("controllerRef has empty APIVersion")
    if not ref.get("kind"):
        raise ValueError("controllerRef has empty Kind")
    if ref.get("controller") is not True:
        raise ValueError("controllerRef.Controller is not set to true")
    if ref.get("blockOwnerDeletion") is not True:
        raise ValueError("controllerRef.BlockOwnerDeletion is not set")


@dataclass
class PodControl:
    """Creates, deletes and patches pods for a controller and records its events (upstream ``RealPodControl``).

    Methods raise the client's errors; the events go out through ``recorder`` without ever blocking."""

    client: Client
    recorder: EventRecorder
    _pods: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pods = self.client.resource("pods")

    async def create_pods(
        self,
        namespace: str,
        template: Mapping[str, Any],
        owner: Mapping[str, Any],
        controller_ref: Mapping[str, Any],
        *,
        generate_name: str = "",
    ) -> Obj:
        """Create one pod from ``template`` owned by ``owner``; returns the created pod."""
        _validate_controller_ref(controller_ref)
        pod = get_pod_from_template(template, owner, controller_ref)
        if generate_name:
            pod["metadata"]["generateName"] = generate_name
        if not pod["metadata"].get("labels"):
            raise ValueError("unable to create pods, no labels")
        try:
            created = await self.client.create(self._pods, pod, namespace=namespace)
        except APIStatusError as exc:
            if not has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                await self.recorder.event(
                    owner, EVENT_TYPE_WARNING, FAILED_CREATE_POD_REASON, f"Error creating: {error_message(exc)}"
                )
            raise
        name = str(meta_of(created).get("name") or "")
        log.debug("controller %s created pod %s/%s", meta_of(owner).get("name"), namespace, name)
        await self.recorder.event(owner, EVENT_TYPE_NORMAL, SUCCESSFUL_CREATE_POD_REASON, f"Created pod: {name}")
        return created

    async def delete_pod(self, namespace: str, name: str, owner: Mapping[str, Any]) -> None:
        """Delete a pod (default grace); NotFound is raised without an event (the caller decides)."""
        log.debug("controller %s deleting pod %s/%s", meta_of(owner).get("name"), namespace, name)
        try:
            await self.client.delete(self._pods, name, namespace=namespace)
        except NotFoundError:
            raise
        except APIStatusError as exc:
            await self.recorder.event(
                owner, EVENT_TYPE_WARNING, FAILED_DELETE_POD_REASON, f"Error deleting: {error_message(exc)}"
            )
            raise
        await self.recorder.event(owner, EVENT_TYPE_NORMAL, SUCCESSFUL_DELETE_POD_REASON, f"Deleted pod: {name}")

    async def patch_pod(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        """A strategic-merge patch of a pod (upstream ``PatchPod``)."""
        return await self.client.patch(
            self._pods, name, dict(patch), patch_type=PatchType.STRATEGIC, namespace=namespace
        )


# --- claiming pods -----------------------------------------------------------------------------------------


def recheck_deletion_timestamp(
    get_object: Callable[[], Awaitable[Mapping[str, Any]]],
) -> Callable[[], Awaitable[None]]:
    """A ``can_adopt`` check that reads the owner fresh and refuses if it is being deleted (upstream
    ``RecheckDeletionTimestamp``): the lister may not show a deletion that already started, and adopting then
    would race the garbage collector."""

    async def check() -> None:
        try:
            obj = await get_object()
        except Exception as exc:
            raise RuntimeError(f"can't recheck DeletionTimestamp: {error_message(exc)}") from exc
        meta = meta_of(obj)
        if meta.get("deletionTimestamp"):
            raise RuntimeError(
                f"{meta.get('namespace') or ''}/{meta.get('name') or ''} has just been deleted at "
                f"{meta.get('deletionTimestamp')}"
            )

    return check


class BaseControllerRefManager:
    """Claims objects of one resource for one controller object (upstream ``BaseControllerRefManager``).

    The rules (upstream ``ClaimObject``), the same for every resource:

    * Owned by another controller: ignored. Owned by us: kept while ``match`` holds, else released (unless we
      are being deleted: our objects are then left alone for the garbage collector).
    * An orphan is adopted when it matches, neither it nor we are being deleted, and it is in our namespace.
      ``can_adopt`` (at most once per manager, before the first adoption) raises to refuse, e.g. when a fresh
      read shows we were deleted or replaced.
    * NotFound while adopting or releasing means the object is gone: not claimed, not an error. A release
      refused as Invalid (the UID precondition: the object was replaced) is not an error either. Any other
      failure is collected, the rest are still processed, and all are raised together as
      :class:`AggregateError` (the caller retries the whole sync).

    Every patch carries the object's UID, so it can never hit a namesake created in the meantime. Subclasses
    say only how their resource is patched (:meth:`_patch`) and which object a claim reports after an
    adoption (:meth:`_adopted`). A manager lives for one sync.
    """

    object_kind: ClassVar[str] = ""
    """The claimed objects' kind, for messages (``can't adopt <kind> ...``)."""

    def __init__(
        self,
        controller: Mapping[str, Any],
        selector: apilabels.Selector,
        *,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[None]],
        finalizers: Sequence[str] = (),
    ) -> None:
        self.controller = controller
        self.selector = selector
        self.api_version, self.kind = api_version, kind
        self._can_adopt = can_adopt
        self._can_adopt_result: BaseException | None = None
        self._can_adopt_done = False
        self.finalizers = list(finalizers)

    async def can_adopt(self) -> None:
        """Run the ``can_adopt`` check once and remember its outcome (upstream ``CanAdopt`` with ``sync.Once``)."""
        if not self._can_adopt_done:
            self._can_adopt_done = True
            try:
                await self._can_adopt()
            except Exception as exc:
                self._can_adopt_result = exc
        if self._can_adopt_result is not None:
            raise self._can_adopt_result

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        """A strategic-merge patch of one claimed object; returns the patched object."""
        raise NotImplementedError

    def _adopted(self, original: Obj, patched: Obj) -> Obj:
        """The object a claim reports after adopting ``original`` (the adoption patch returned ``patched``)."""
        return original

    def selector_matches(self, obj: Mapping[str, Any]) -> bool:
        return self.selector.matches(meta_of(obj).get("labels") or {})

    async def claim_objects(self, objs: Iterable[Obj], match: Callable[[Obj], bool]) -> list[Obj]:
        """The objects this controller owns after adopting and releasing (see the class docstring)."""
        claimed: list[Obj] = []
        errors: list[BaseException] = []
        for obj in objs:
            try:
                kept = await self.claim_object(obj, match)
            except Exception as exc:
                errors.append(exc)
                continue
            if kept is not None:
                claimed.append(kept)
        if errors:
            raise AggregateError(errors)
        return claimed

    async def claim_object(self, obj: Obj, match: Callable[[Obj], bool]) -> Obj | None:
        """Upstream ``ClaimObject``: the object as claimed (see :meth:`_adopted`), or None if not ours."""
        ref = get_controller_of(obj)
        owner_meta = meta_of(self.controller)
        being_deleted = bool(owner_meta.get("deletionTimestamp"))
        if ref is not None:
            if ref.get("uid") != owner_meta.get("uid"):
                return None  # owned by someone else
            if match(obj):
                return obj  # ours and matching; fine even while we are being deleted (no action needed)
            if being_deleted:
                return None
            try:
                await self.release(obj)
            except NotFoundError:
                return None
            return None
        # An orphan.
        if being_deleted or not match(obj):
            return None
        if meta_of(obj).get("deletionTimestamp"):
            return None
        namespace = owner_meta.get("namespace") or ""
        if namespace and namespace != meta_of(obj).get("namespace"):
            return None
        try:
            patched = await self.adopt(obj)
        except NotFoundError:
            return None
        return self._adopted(obj, patched)

    async def adopt(self, obj: Obj) -> Obj:
        """Make this controller the object's controller; returns the patched object. The API server refuses a
        second controller reference."""
        meta = meta_of(obj)
        try:
            await self.can_adopt()
        except Exception as exc:
            raise RuntimeError(
                f"can't adopt {self.object_kind} {meta.get('namespace')}/{meta.get('name')} ({meta.get('uid')}): "
                f"{error_message(exc)}"
            ) from exc
        patch_meta: Obj = {
            "ownerReferences": [new_controller_ref(self.controller, api_version=self.api_version, kind=self.kind)],
            "uid": meta.get("uid"),
        }
        if self.finalizers:
            patch_meta["finalizers"] = list(self.finalizers)
        return await self._patch(
            str(meta.get("namespace") or ""), str(meta.get("name") or ""), {"metadata": patch_meta}
        )

    async def release(self, obj: Obj) -> None:
        """Remove this controller's reference from the object (upstream ``ReleasePod`` / ``ReleaseReplicaSet``).
        An object that is gone, or whose UID no longer matches (Invalid), needs no release."""
        meta = meta_of(obj)
        log.debug(
            "patching %s %s/%s to remove its controllerRef to %s %s",
            self.object_kind,
            meta.get("namespace"),
            meta.get("name"),
            self.kind,
            meta_of(self.controller).get("name"),
        )
        patch_meta: Obj = {
            "ownerReferences": [{"$patch": "delete", "uid": str(meta_of(self.controller).get("uid") or "")}],
            "uid": meta.get("uid"),
        }
        if self.finalizers:
            patch_meta["$deleteFromPrimitiveList/finalizers"] = list(self.finalizers)
        try:
            await self._patch(str(meta.get("namespace") or ""), str(meta.get("name") or ""), {"metadata": patch_meta})
        except (NotFoundError, InvalidError):
            return


class PodControllerRefManager(BaseControllerRefManager):
    """Claims pods (upstream ``PodControllerRefManager``); patches go through :class:`PodControl`. Claimed pods
    are reported as the caller passed them (the cached objects), as upstream's ``ClaimPods``."""

    object_kind: ClassVar[str] = "Pod"

    def __init__(
        self,
        pod_control: PodControl,
        controller: Mapping[str, Any],
        selector: apilabels.Selector,
        *,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[None]],
        finalizers: Sequence[str] = (),
    ) -> None:
        super().__init__(
            controller, selector, api_version=api_version, kind=kind, can_adopt=can_adopt, finalizers=finalizers
        )
        self.pod_control = pod_control

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        return await self.pod_control.patch_pod(namespace, name, patch)

    async def claim_pods(self, pods: Iterable[Obj], *filters: Callable[[Obj], bool]) -> list[Obj]:
        """The pods this controller owns after adopting and releasing; a pod matches when the selector and every
        filter accept it. Raises :class:`AggregateError` if any adoption or release failed."""

        def match(pod: Obj) -> bool:
            return self.selector_matches(pod) and all(f(pod) for f in filters)

        return await self.claim_objects(pods, match)

    async def adopt_pod(self, pod: Obj) -> None:
        await self.adopt(pod)

    async def release_pod(self, pod: Obj) -> None:
        await self.release(pod)


class ReplicaSetControllerRefManager(BaseControllerRefManager):
    """Claims ReplicaSets for a Deployment (upstream ``ReplicaSetControllerRefManager``). Adopted ReplicaSets
    are reported as the adoption patch returned them (fresher than the cache: the Deployment controller
    updates them next and would otherwise conflict on the resourceVersion)."""

    object_kind: ClassVar[str] = "ReplicaSet"

    def __init__(
        self,
        client: Client,
        controller: Mapping[str, Any],
        selector: apilabels.Selector,
        *,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(controller, selector, api_version=api_version, kind=kind, can_adopt=can_adopt)
        self.client = client
        self.resource = client.resource("replicasets")

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        return await self.client.patch(
            self.resource, name, dict(patch), patch_type=PatchType.STRATEGIC, namespace=namespace
        )

    def _adopted(self, original: Obj, patched: Obj) -> Obj:
        return patched

    async def claim_replica_sets(self, rs_list: Iterable[Obj]) -> list[Obj]:
        """The ReplicaSets this Deployment owns after adopting and releasing (selector match only)."""
        return await self.claim_objects(rs_list, self.selector_matches)
