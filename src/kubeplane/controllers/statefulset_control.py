"""One StatefulSet's reconcile step (upstream ``pkg/controller/statefulset/stateful_set_control.go``).

Given the set, the pods it owns and its ControllerRevisions, :meth:`StatefulSetControl.update_stateful_set`:

1. **Revisions** (``getStatefulSetRevisions``): the set's current template as a revision; an equal revision
   that is the latest is reused, an equal older one is moved to the next revision number (a rollback), else a
   new one is created (bumping ``collisionCount`` on a name collision). ``currentRevision`` is the one named in
   ``status.currentRevision``, else the update revision.
2. **Pods** (``updateStatefulSet``): pods in ``[start, start+replicas)`` are the replicas, other parsable
   ordinals are condemned. Missing replicas are made from the current revision below the partition and from
   the update revision above. Each replica in ordinal order: a Failed/Succeeded pod is deleted (recreated next
   sync); a missing one is created; with OrderedReady (``monotonic``) the walk stops at the first pod created,
   terminating, or not Running+Ready+Available — so web-1 is created only once web-0 is Ready. Parallel does
   them all at once in slow-start batches. Then claims' retention refs of condemned pods, then condemned pods
   deleted highest ordinal first (OrderedReady: one at a time, each only when every other pod is healthy
   unless it is the first unhealthy one).
3. **Rolling update** (not OnDelete): pods at or above the partition whose revision is not the update revision
   are deleted from the highest ordinal down, at most ``maxUnavailable`` unavailable at a time
   (``updateStatefulSetAfterInvariantEstablished``; MaxUnavailableStatefulSet is on); they come back at the
   update revision on the next sync.
4. **Status** (``updateStatefulSetStatus``): counts over the pods, the revisions and ``collisionCount``; a
   finished rolling update makes the update revision current; written only when something changed.
5. **History** (``truncateHistory``): revisions neither current, update, nor used by a pod are deleted, oldest
   first, down to ``revisionHistoryLimit``.

``now`` is the controller's clock (minReadySeconds availability).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api.views import is_being_deleted, meta_of, name_of, namespace_of, spec_of, status_of
from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.client.interface import Client, Obj
from kubeplane.controllers.controller_utils import AggregateError
from kubeplane.controllers.history import (
    History,
    equal_revision,
    find_equal_revisions,
    next_revision,
    revision_of,
    sort_controller_revisions,
)
from kubeplane.controllers.statefulset_pod_control import StatefulPodControl
from kubeplane.controllers.statefulset_utils import (
    SET_API_VERSION,
    SET_KIND,
    apply_revision,
    complete_rolling_update,
    get_ordinal,
    get_pod_revision,
    get_stateful_set_max_unavailable,
    identity_matches,
    inconsistent_status,
    is_created,
    is_running_and_available,
    is_running_and_ready,
    new_revision,
    new_versioned_stateful_set_pod,
    pod_in_ordinal_range,
    replicas_of,
    selector_of,
    start_ordinal,
    storage_matches,
)

__all__ = ["MAX_BATCH_SIZE", "StatefulSetControl"]

log = logging.getLogger("kubeplane.controllers.statefulset")

MAX_BATCH_SIZE: Final = 500
"""Upstream ``MaxBatchSize``: the most concurrent requests of a Parallel set."""
_STATUS_RETRIES: Final = 5


def _min_ready(sts: Mapping[str, Any]) -> int:
    return int(spec_of(sts).get("minReadySeconds") or 0)


def _is_terminal(pod: Mapping[str, Any]) -> bool:
    return status_of(pod).get("phase") in ("Failed", "Succeeded")


def compute_status(
    pods: Sequence[Mapping[str, Any]], min_ready: int, now: float, current: str, update: str
) -> dict[str, int]:
    """Upstream ``computeReplicaStatus`` over one list of pods."""
    out = dict.fromkeys(("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"), 0)
    for pod in pods:
        created = is_created(pod)
        if created:
            out["replicas"] += 1
        if is_running_and_ready(pod):
            out["readyReplicas"] += 1
            if is_running_and_available(pod, min_ready, now):
                out["availableReplicas"] += 1
        if created and not is_being_deleted(pod):
            revision = get_pod_revision(pod)
            if revision == current:
                out["currentReplicas"] += 1
            if revision == update:
                out["updatedReplicas"] += 1
    return out


class StatefulSetControl:
    """Upstream ``defaultStatefulSetControl`` (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        pod_control: StatefulPodControl,
        history: History,
        clock_now: Callable[[], float],
    ) -> None:
        self.client = client
        self.pod_control = pod_control
        self.history = history
        self.now = clock_now
        self.sets = client.resource("statefulsets")

    # --- revisions ---------------------------------------------------------------------------------------------

    def list_revisions(self, sts: Mapping[str, Any]) -> list[Obj]:
        return self.history.list_controller_revisions(sts, selector_of(sts))

    async def adopt_orphan_revisions(self, sts: Mapping[str, Any], revisions: list[Obj]) -> None:
        for i, revision in enumerate(revisions):
            revisions[i] = await self.history.adopt_controller_revision(
                sts, revision, api_version=SET_API_VERSION, kind=SET_KIND
            )

    async def get_stateful_set_revisions(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """Upstream ``getStatefulSetRevisions``: (current, update, collisionCount)."""
        revisions = sort_controller_revisions(revisions)
        collision_count = int(status_of(sts).get("collisionCount") or 0)
        update = new_revision(sts, next_revision(revisions), collision_count)
        equal = find_equal_revisions(revisions, update)
        if equal and equal_revision(revisions[-1], equal[-1]):
            update = revisions[-1]  # the latest revision already is this template
        elif equal:
            update = await self.history.update_controller_revision(equal[-1], revision_of(update))  # a rollback
        else:
            update, collision_count = await self.history.create_controller_revision(sts, update, collision_count)
        current_name = status_of(sts).get("currentRevision")
        current = next((r for r in revisions if meta_of(r).get("name") == current_name), None)
        return (current if current is not None else update), update, collision_count

    async def truncate_history(
        self,
        sts: Mapping[str, Any],
        pods: Sequence[Obj],
        revisions: Sequence[Obj],
        current: Obj | None,
        update: Obj | None,
    ) -> None:
        """Upstream ``truncateHistory`` (``revisions`` sorted)."""
        live = {get_pod_revision(p) for p in pods}
        live.update(name_of(r) for r in (current, update) if r is not None)
        history = [r for r in revisions if name_of(r) not in live]
        limit = spec_of(sts).get("revisionHistoryLimit")
        limit = int(limit) if isinstance(limit, int) else 10
        if limit < 0 or len(history) <= limit:
            return
        for revision in history[: len(history) - limit]:
            await self.history.delete_controller_revision(revision)

    # --- the loop ----------------------------------------------------------------------------------------------

    async def update_stateful_set(self, sts: Obj, pods: Sequence[Obj]) -> Obj | None:
        """Upstream ``UpdateStatefulSet``: returns the status written (or that would be), raises to retry."""
        sts = copy.deepcopy(sts)
        revisions = sort_controller_revisions(self.list_revisions(sts))
        current: Obj | None = None
        update: Obj | None = None
        try:
            current, update, collision_count = await self.get_stateful_set_revisions(sts, revisions)
            status, error = await self._update_pods(sts, current, update, collision_count, pods)
            if status is None:
                raise error if error is not None else RuntimeError("no status")
            try:
                await self.update_stateful_set_status(sts, status)
            except Exception as status_error:
                if error is None:
                    raise
                log.error("Could not update status of StatefulSet %s: %s", name_of(sts), status_error)
            if error is not None:
                raise error
        except Exception as exc:
            try:
                await self.truncate_history(sts, pods, revisions, current, update)
            except Exception as truncate_error:
                raise AggregateError([exc, truncate_error]) from exc
            raise
        await self.truncate_history(sts, pods, revisions, current, update)
        return status

    async def _update_pods(
        self, sts: Obj, current: Obj, update: Obj, collision_count: int, pods: Sequence[Obj]
    ) -> tuple[Obj | None, Exception | None]:
        """Upstream ``updateStatefulSet``: (status, error); an error with a status still writes the status."""
        current_set = apply_revision(sts, current)
        update_set = apply_revision(sts, update)
        min_ready = _min_ready(sts)
        now = self.now()
        cur_name, upd_name = name_of(current), name_of(update)
        status: Obj = {
            "observedGeneration": int(meta_of(sts).get("generation") or 0),
            "currentRevision": cur_name,
            "updateRevision": upd_name,
            "collisionCount": collision_count,
        }

        def set_counts(*lists: Sequence[Obj]) -> None:
            totals = dict.fromkeys(
                ("replicas", "readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"), 0
            )
            for pods_ in lists:
                for key, value in compute_status(pods_, min_ready, now, cur_name, upd_name).items():
                    totals[key] += value
            status.update(totals)

        set_counts(pods)
        start = start_ordinal(sts)
        replica_count = replicas_of(sts)
        replicas: list[Obj | None] = [None] * replica_count
        condemned: list[Obj] = []
        for pod in pods:
            if pod_in_ordinal_range(pod, sts):
                replicas[get_ordinal(pod) - start] = pod
            elif get_ordinal(pod) >= 0:
                condemned.append(pod)
        for index in range(replica_count):
            if replicas[index] is None:
                replicas[index] = new_versioned_stateful_set_pod(
                    current_set, update_set, cur_name, upd_name, start + index
                )
        live: list[Obj] = [p for p in replicas if p is not None]
        condemned.sort(key=get_ordinal, reverse=True)

        def unavailable(pod: Mapping[str, Any]) -> bool:
            healthy = is_running_and_ready(pod) and not is_being_deleted(pod)
            return not healthy or not is_running_and_available(pod, min_ready, now)

        first_unavailable: Obj | None = next((p for p in live if unavailable(p)), None)
        if first_unavailable is None:
            first_unavailable = next((p for p in reversed(condemned) if unavailable(p)), None)

        if is_being_deleted(sts):
            return status, None
        monotonic = spec_of(sts).get("podManagementPolicy") != "Parallel"

        async def process_replica(i: int) -> bool:
            return await self._process_replica(sts, update_set, monotonic, live, i, min_ready, now)

        try:
            if await _run_for_all(len(live), process_replica, monotonic):
                set_counts(live, condemned)
                return status, None

            async def fix_claim(i: int) -> bool:
                if not await self.pod_control.claims_match_retention_policy(update_set, condemned[i]):
                    await self.pod_control.update_pod_claim_for_retention_policy(update_set, condemned[i])
                return False

            if await _run_for_all(len(condemned), fix_claim, monotonic):
                set_counts(live, condemned)
                return status, None

            async def process_condemned(i: int) -> bool:
                pod = condemned[i]
                if is_being_deleted(pod):
                    return monotonic  # OrderedReady waits for the pod to be gone
                if monotonic and pod is not first_unavailable and unavailable(pod):
                    return True
                await self.pod_control.delete_stateful_pod(sts, pod)
                return True

            if await _run_for_all(len(condemned), process_condemned, monotonic):
                set_counts(live, condemned)
                return status, None
        except Exception as exc:
            set_counts(live, condemned)
            return status, exc

        set_counts(live, condemned)
        strategy = spec_of(sts).get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return status, None
        try:
            await self._rolling_update(sts, live, upd_name, status, unavailable)
        except Exception as exc:
            return status, exc
        return status, None

    async def _process_replica(
        self, sts: Obj, update_set: Obj, monotonic: bool, replicas: list[Obj], i: int, min_ready: int, now: float
    ) -> bool:
        """Upstream ``processReplica``: True to stop the walk (OrderedReady)."""
        pod = replicas[i]
        if _is_terminal(pod):
            if not is_being_deleted(pod):
                await self.pod_control.delete_stateful_pod(sts, pod)
            return True  # a new pod is created on the next sync, after this one is gone
        if not is_created(pod):
            if await self.pod_control.pod_claim_is_stale(sts, pod):
                return True
            await self.pod_control.create_stateful_pod(sts, pod)
            if monotonic:
                return True
        if status_of(pod).get("phase") == "Pending":
            await self.pod_control.create_missing_persistent_volume_claims(sts, pod)
        if monotonic and (
            is_being_deleted(pod) or not is_running_and_ready(pod) or not is_running_and_available(pod, min_ready, now)
        ):
            return True
        try:
            retention_match = await self.pod_control.claims_match_retention_policy(update_set, pod)
        except Exception:
            retention_match = True
        if identity_matches(sts, pod) and storage_matches(sts, pod) and retention_match:
            return False
        await self.pod_control.update_stateful_pod(update_set, copy.deepcopy(pod))
        return False

    async def _rolling_update(
        self, sts: Obj, replicas: list[Obj], update_name: str, status: Obj, unavailable: Callable[[Obj], bool]
    ) -> None:
        """Upstream ``updateStatefulSetAfterInvariantEstablished``."""
        rolling = (spec_of(sts).get("updateStrategy") or {}).get("rollingUpdate")
        update_min = 0
        max_unavailable = 1
        if isinstance(rolling, Mapping):
            update_min = int(rolling.get("partition") or 0)
            max_unavailable = get_stateful_set_max_unavailable(rolling.get("maxUnavailable"), replicas_of(sts))
        unavailable_pods = sum(1 for p in replicas if unavailable(p))
        if unavailable_pods >= max_unavailable:
            return
        to_delete = max_unavailable - unavailable_pods
        deleted = 0
        target = len(replicas) - 1
        while target >= update_min and deleted < to_delete:
            pod = replicas[target]
            if get_pod_revision(pod) != update_name and not is_being_deleted(pod):
                with contextlib.suppress(NotFoundError):
                    await self.pod_control.delete_stateful_pod(sts, pod)
                deleted += 1
                status["currentReplicas"] = int(status.get("currentReplicas") or 0) - 1
            target -= 1

    # --- status ------------------------------------------------------------------------------------------------

    async def update_stateful_set_status(self, sts: Obj, status: Obj) -> None:
        """Upstream ``updateStatefulSetStatus`` + the status updater: complete a finished rolling update, then
        write the status if anything changed, retrying conflicts on a fresh copy. Upstream re-reads the lister
        between retries with a backoff; kubeplane reads the API server (the lister may not have seen this
        controller's previous write yet, and there is no sleep between tries)."""
        complete_rolling_update(sts, status)
        if not inconsistent_status(sts, status):
            return
        to_update = copy.deepcopy(sts)
        for attempt in range(_STATUS_RETRIES):
            new_status = dict(to_update.get("status") or {})
            new_status.update(status)
            to_update["status"] = new_status
            try:
                await self.client.update(self.sets, to_update, namespace=namespace_of(sts), subresource="status")
                return
            except ConflictError:
                if attempt == _STATUS_RETRIES - 1:
                    raise
                to_update = await self.client.get(self.sets, name_of(sts), namespace=namespace_of(sts))
                if meta_of(to_update).get("uid") != meta_of(sts).get("uid"):
                    return  # replaced by a namesake: its own sync writes its status


async def _run_for_all(count: int, fn: Callable[[int], Awaitable[bool]], monotonic: bool) -> bool:
    """Upstream ``runForAll``: in order, stopping at the first that asks to (OrderedReady), or all in slow-start
    batches of 1, 2, 4, ... up to :data:`MAX_BATCH_SIZE` (Parallel). True when the caller should stop."""
    if monotonic:
        for i in range(count):
            if await fn(i):
                return True
        return False
    index, remaining, batch = 0, count, min(count, 1)
    while batch > 0:
        results = await asyncio.gather(*(fn(index + k) for k in range(batch)), return_exceptions=True)
        index += batch
        errors = [r for r in results if isinstance(r, BaseException)]
        for r in errors:
            if isinstance(r, asyncio.CancelledError):
                raise r
        if errors:
            raise errors[0] if len(errors) == 1 else AggregateError(errors)
        remaining -= batch
        batch = min(2 * batch, remaining, MAX_BATCH_SIZE)
    return False
