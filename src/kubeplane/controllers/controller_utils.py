"""What the workload controllers share (upstream ``pkg/controller/controller_utils.go``).

* **Owner references** (:func:`is_controlled_by`, :func:`new_controller_ref`, the controller-UID indexes,
  :func:`filter_pods_by_owner`, :func:`filter_claimed_pods`).
* **Pod control** (:class:`PodControl`): create a pod from a template (``generateName: <owner>-``, the
  template's labels/annotations/finalizers, a controller ownerReference) and delete or patch a pod, recording
  upstream's events (``SuccessfulCreate`` "Created pod: <name>", ``FailedCreate`` "Error creating: <err>",
  ``SuccessfulDelete`` "Deleted pod: <name>", ``FailedDelete`` "Error deleting: <err>").
* **Deletion order** of surplus pods (:func:`active_pods_with_ranks_less`, upstream ``ActivePodsWithRanks``).
* **Values** shared by the workload controllers: IntOrString scaling
  (:func:`scaled_value_from_int_or_percent`), ``metav1.Condition`` upkeep (:func:`set_status_condition`) and the
  pod-template hash (:func:`compute_hash`, FNV-32a + ``rand.SafeEncodeString``).

The rest of upstream's file lives beside this module: expectations in :mod:`.expectations`, ControllerRef
management (upstream ``controller_ref_manager.go``) in :mod:`.controller_ref_manager`, the pod predicates
(upstream ``podutil``) in :mod:`.podutil`; field access goes through :mod:`kubeplane.api.views`.

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
from typing import Any

from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api.meta import NAME_ALPHABET
from kubeplane.api.validation.field import aggregate_text
from kubeplane.api.views import annotations_of, controller_ref_of, meta_of, section, spec_of, status_of
from kubeplane.client.cache import Indexer
from kubeplane.client.errors import APIStatusError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kubeplane.client.interface import Client, Obj, PatchType
from kubeplane.controllers.podutil import get_pod_ready_condition, is_pod_ready, parse_timestamp

__all__ = [
    "CONTROLLER_UID_INDEX",
    "DELETION_COST_ANNOTATION",
    "DISRUPTION_TARGET",
    "FAILED_CREATE_POD_REASON",
    "FAILED_DELETE_POD_REASON",
    "NAMESPACE_TERMINATING_CAUSE",
    "ORPHAN_POD_INDEX_KEY",
    "POD_CONTROLLER_UID_INDEX",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "SUCCESSFUL_CREATE_POD_REASON",
    "SUCCESSFUL_DELETE_POD_REASON",
    "AggregateError",
    "IntOrPercentError",
    "PodControl",
    "active_pods_with_ranks_less",
    "compute_hash",
    "controller_uid_index",
    "error_message",
    "filter_claimed_pods",
    "filter_pods_by_owner",
    "fnv32a",
    "get_pod_from_template",
    "get_pods_prefix",
    "has_status_cause",
    "is_controlled_by",
    "new_controller_ref",
    "pod_controller_uid_index",
    "pod_key",
    "safe_encode_string",
    "scaled_value_from_int_or_percent",
    "set_status_condition",
    "slow_start_batch",
    "sort_active_pods_with_ranks",
    "with_type_meta",
]

log = logging.getLogger("kubeplane.controllers")

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


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """Whether ``obj``'s controller reference points at ``owner``'s UID (upstream ``metav1.IsControlledBy``)."""
    ref = controller_ref_of(obj)
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
    ref = controller_ref_of(obj)
    return [str(ref["uid"])] if ref is not None and ref.get("uid") else []


def pod_controller_uid_index(obj: Obj) -> list[str]:
    """Index function for :data:`POD_CONTROLLER_UID_INDEX`; orphans are all under :data:`ORPHAN_POD_INDEX_KEY`
    so a controller finds its candidates for adoption without scanning every pod of the namespace."""
    ref = controller_ref_of(obj)
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


def filter_claimed_pods(owner: Mapping[str, Any], selector: apilabels.Selector, pods: Iterable[Obj]) -> list[Obj]:
    """Pods controlled by ``owner`` that still match its selector (upstream ``FilterClaimedPods``)."""
    return [p for p in pods if is_controlled_by(p, owner) and selector.matches(meta_of(p).get("labels") or {})]


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
    causes = section(exc.status, "details").get("causes") or []
    return any(isinstance(c, Mapping) and c.get("type") == cause for c in causes)


class AggregateError(Exception):
    """Several errors as one (upstream ``utilerrors.NewAggregate``): one error prints as itself, several as
    ``[e1, e2]``."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        self.errors = list(errors)
        super().__init__(aggregate_text(error_message(e) for e in self.errors))


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


# --- deletion order ----------------------------------------------------------------------------------------

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    """The pod-deletion-cost annotation as an int32; 0 when absent or invalid (upstream ignores the error)."""
    value = annotations_of(pod).get(DELETION_COST_ANNOTATION)
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
    status = status_of(pod)
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    sidecars = {
        c.get("name")
        for c in spec_of(pod).get("initContainers") or ()
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
    node_i = str(spec_of(pi).get("nodeName") or "")
    node_j = str(spec_of(pj).get("nodeName") or "")
    if node_i != node_j and (not node_i or not node_j):
        return not node_i
    phase_i = _PHASE_ORDINAL.get(str(status_of(pi).get("phase") or ""), 0)
    phase_j = _PHASE_ORDINAL.get(str(status_of(pj).get("phase") or ""), 0)
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
    tmeta: Mapping[str, Any] = meta_of(template)
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
        if not meta_of(pod).get("labels"):
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
