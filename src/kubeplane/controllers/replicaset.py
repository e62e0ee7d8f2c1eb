"""The ReplicaSet controller: keep ``spec.replicas`` active pods matching each ReplicaSet (upstream
``pkg/controller/replicaset``).

One sync of ``namespace/name`` (upstream ``syncReplicaSet``):

1. Read the ReplicaSet from the lister; gone -> forget its expectations, done.
2. Take the pods it controls plus the orphans of its namespace (pod index by controller UID), keep the active
   ones and *claim* them: adopt matching orphans, release owned pods whose labels no longer match.
3. If its expectations are satisfied and it is not being deleted, *manage replicas*: create the missing pods in
   slow-start batches (1, 2, 4, ...; at most ``burst_replicas`` = 500 per sync) or delete the surplus in
   upstream's order (:func:`get_pods_to_delete`), first recording what it expects to observe so a lagging pod
   informer can never make it create or delete twice.
4. Write ``status`` (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas, terminatingReplicas,
   observedGeneration, the ReplicaFailure condition) through the status subresource, only when it changed.
5. With ``minReadySeconds``, come back when the next ready pod becomes available.

Event handlers only queue keys: a pod event queues its controller (resolved by name *and* UID), or every
ReplicaSet whose selector matches an orphan; a pod add or delete also lowers the owner's expectations.

Safe to restart: expectations are the only memory, and a new controller starts without them (it syncs
immediately, which is correct because it reads the informers' current state).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from kubeplane.api import labels as apilabels
from kubeplane.api.meta import format_time
from kubeplane.api.views import controller_ref_of, meta_of, section, spec_of, status_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from kubeplane.controllers.controller_utils import (
    CONTROLLER_UID_INDEX,
    FAILED_CREATE_POD_REASON,
    FAILED_DELETE_POD_REASON,
    NAMESPACE_TERMINATING_CAUSE,
    POD_CONTROLLER_UID_INDEX,
    SLOW_START_INITIAL_BATCH_SIZE,
    PodControl,
    controller_uid_index,
    error_message,
    filter_claimed_pods,
    filter_pods_by_owner,
    has_status_cause,
    new_controller_ref,
    pod_controller_uid_index,
    pod_key,
    slow_start_batch,
    sort_active_pods_with_ranks,
)
from kubeplane.controllers.expectations import UIDTrackingControllerExpectations
from kubeplane.controllers.podutil import (
    filter_active_pods,
    filter_terminating_pods,
    find_min_next_pod_availability_check,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
)

from .base import Controller, ControllerContext, key_of, split_key

__all__ = [
    "BURST_REPLICAS",
    "REPLICA_FAILURE",
    "ReplicaSetController",
    "calculate_status",
    "get_pods_to_delete",
]

log = logging.getLogger("kubeplane.controllers.replicaset")

BURST_REPLICAS = 500
"""Most pods created or deleted by one sync (upstream ``BurstReplicas``)."""
STATUS_UPDATE_RETRIES = 1
AVAILABILITY_MARGIN = 0.001
"""Seconds added to an availability requeue. A pod is available only *strictly* after ready + minReadySeconds
(upstream ``IsPodAvailable``); a timer firing exactly on that instant (always so on a fake clock) would find it
not yet available and, the remaining time being 0, wait for another pod or a whole minReadySeconds."""
REPLICA_FAILURE = "ReplicaFailure"
API_VERSION, KIND = "apps/v1", "ReplicaSet"


def _replicas(rs: Mapping[str, Any]) -> int:
    value = spec_of(rs).get("replicas")
    return 1 if value is None else int(value)  # the API server defaults it to 1


def _min_ready_seconds(rs: Mapping[str, Any]) -> int:
    return int(spec_of(rs).get("minReadySeconds") or 0)


# --- pure logic (upstream replica_set_utils.go and getPodsToDelete) ----------------------------------------


def get_pods_to_delete(
    active_pods: Sequence[Obj], related_pods: Sequence[Obj], diff: int, now: float | None
) -> list[Obj]:
    """The ``diff`` pods to delete first (upstream ``getPodsToDelete``): ranked by how many active related pods
    (pods of ReplicaSets with the same controller) share their node, then :func:`active_pods_with_ranks_less`.
    When every pod goes, no ranking is needed."""
    if diff >= len(active_pods):
        return list(active_pods)[:diff]
    on_node: dict[str, int] = {}
    for pod in related_pods:
        if is_pod_active(pod):
            node = str(spec_of(pod).get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1
    ranks = [on_node.get(str(spec_of(pod).get("nodeName") or ""), 0) for pod in active_pods]
    return sort_active_pods_with_ranks(active_pods, ranks, now)[:diff]


def _get_condition(status: Mapping[str, Any], cond_type: str) -> Mapping[str, Any] | None:
    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == cond_type:
            return cond
    return None


def calculate_status(
    rs: Mapping[str, Any],
    active_pods: Sequence[Obj],
    terminating_pods: Sequence[Obj],
    manage_replicas_error: BaseException | None,
    now: float,
) -> Obj:
    """The status ``rs`` should have (upstream ``calculateStatus``), ``observedGeneration`` left as it was.

    ReplicaFailure is set (reason FailedCreate or FailedDelete, message the error) when managing replicas
    failed and the condition is absent, and removed when it succeeded; an existing condition is kept as is, so
    its lastTransitionTime stays the time of the first failure."""
    status: Obj = dict(rs.get("status") or {})
    template_labels = apilabels.selector_from_set(section(rs, "spec", "template", "metadata").get("labels"))
    min_ready = _min_ready_seconds(rs)
    fully_labeled = ready = available = 0
    for pod in active_pods:
        if template_labels.matches(meta_of(pod).get("labels") or {}):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [dict(c) for c in status.get("conditions") or () if isinstance(c, Mapping)]
    failure = _get_condition(status, REPLICA_FAILURE)
    if manage_replicas_error is not None and failure is None:
        diff = len(active_pods) - _replicas(rs)
        reason = FAILED_CREATE_POD_REASON if diff < 0 else FAILED_DELETE_POD_REASON if diff > 0 else ""
        conditions.append(
            {
                "type": REPLICA_FAILURE,
                "status": "True",
                "lastTransitionTime": format_time(now),
                "reason": reason,
                "message": error_message(manage_replicas_error),
            }
        )
    elif manage_replicas_error is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    status["replicas"] = len(active_pods)
    status["fullyLabeledReplicas"] = fully_labeled
    status["readyReplicas"] = ready
    status["availableReplicas"] = available
    status["terminatingReplicas"] = len(terminating_pods)
    return status


_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def _status_unchanged(rs: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Upstream's steady-state test: same counts and conditions, and the generation already observed."""
    old: Mapping[str, Any] = status_of(rs)
    return (
        all(int(old.get(k) or 0) == int(new.get(k) or 0) for k in _COUNTS)
        and old.get("terminatingReplicas") == new.get("terminatingReplicas")
        and meta_of(rs).get("generation") == old.get("observedGeneration")
        and list(old.get("conditions") or []) == list(new.get("conditions") or [])
    )


# --- the controller ----------------------------------------------------------------------------------------


class ReplicaSetController(Controller):
    """See the module docstring. Options (``ctx.options["replicaset"]``): ``burst_replicas`` (default 500)."""

    name: ClassVar[str] = "replicaset"
    workers: ClassVar[int] = 5  # upstream --concurrent-replicaset-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.burst_replicas = int(self.options.get("burst_replicas", BURST_REPLICAS))
        self.expectations = UIDTrackingControllerExpectations(ctx.clock)
        self.rs_resource = ctx.client.resource("replicasets")
        self.rs_informer = ctx.informers.informer_for(
            self.rs_resource, indexers={CONTROLLER_UID_INDEX: controller_uid_index}
        )
        self.pod_informer = ctx.informers.informer_for(
            "pods", indexers={POD_CONTROLLER_UID_INDEX: pod_controller_uid_index}
        )
        self.rs_lister = self.rs_informer.lister()
        self.pod_lister = self.pod_informer.lister()
        self.recorder = ctx.recorder("replicaset-controller")
        self.pod_control = PodControl(ctx.client, self.recorder)
        self.rs_informer.add_event_handler(on_add=self._add_rs, on_update=self._update_rs, on_delete=self._delete_rs)
        self.pod_informer.add_event_handler(
            on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod
        )

    # --- event handlers (upstream addRS/updateRS/deleteRS/addPod/updatePod/deletePod) ----------------------

    def _add_rs(self, rs: Obj) -> None:
        self.enqueue(rs)

    def _update_rs(self, old: Obj, cur: Obj) -> None:
        if meta_of(old).get("uid") != meta_of(cur).get("uid"):
            self._delete_rs(old)  # deleted and recreated under the same name while we were not looking
        self.enqueue(cur)

    def _delete_rs(self, rs: Obj) -> None:
        key = key_of(rs)
        self.expectations.delete_expectations(key)  # a new ReplicaSet of the same name starts clean
        self.enqueue_key(key)

    def _resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        """The ReplicaSet ``ref`` names, if it exists with that UID (a name alone may be a newer object)."""
        if ref.get("kind") != KIND:
            return None
        rs = self.rs_lister.get(namespace, str(ref.get("name") or ""))
        if rs is None or meta_of(rs).get("uid") != ref.get("uid"):
            return None
        return rs

    def _get_pod_replica_sets(self, pod: Obj) -> list[Obj]:
        """ReplicaSets of the pod's namespace whose (non-empty) selector matches its labels."""
        pod_labels = meta_of(pod).get("labels") or {}
        if not pod_labels:
            return []
        found = []
        for rs in self.rs_lister.list(meta_of(pod).get("namespace") or ""):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(rs).get("selector"))
            except apilabels.SelectorError:
                continue
            if selector.empty() or not selector.matches(pod_labels):
                continue
            found.append(rs)
        if len(found) > 1:
            log.warning("user error! more than one %s is selecting pods with labels: %s", KIND, pod_labels)
        return found

    def _add_pod(self, pod: Obj) -> None:
        if meta_of(pod).get("deletionTimestamp"):
            # After a restart a pod may first show up already being deleted: not a creation observation.
            self._delete_pod(pod)
            return
        ref = controller_ref_of(pod)
        if ref is not None:
            rs = self._resolve_controller_ref(str(meta_of(pod).get("namespace") or ""), ref)
            if rs is None:
                return
            key = key_of(rs)
            self.expectations.creation_observed(key)
            self.enqueue_key(key)
            return
        # An orphan: every matching ReplicaSet may want to adopt it. Not a creation anyone waits for.
        for rs in self._get_pod_replica_sets(pod):
            self.enqueue(rs)

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        if meta_of(cur).get("resourceVersion") == meta_of(old).get("resourceVersion"):
            return  # a resync: nothing changed
        label_changed = (meta_of(cur).get("labels") or {}) != (meta_of(old).get("labels") or {})
        namespace = str(meta_of(cur).get("namespace") or "")
        if meta_of(cur).get("deletionTimestamp"):
            # A graceful delete starts: the owner should replace the pod now, not when the kubelet finishes.
            self._delete_pod(cur)
            if label_changed:
                self._delete_pod(old)
            return
        cur_ref, old_ref = controller_ref_of(cur), controller_ref_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            old_rs = self._resolve_controller_ref(namespace, old_ref)
            if old_rs is not None:
                self.enqueue(old_rs)
        if cur_ref is not None:
            rs = self._resolve_controller_ref(namespace, cur_ref)
            if rs is None:
                return
            self.enqueue(rs)
            min_ready = _min_ready_seconds(rs)
            if not is_pod_ready(old) and is_pod_ready(cur) and min_ready > 0:
                # Look again once the pod can have become available (+1 s against clock skew, as upstream).
                self.enqueue_after(rs, min_ready + 1.0)
            return
        if label_changed or ref_changed:
            for rs in self._get_pod_replica_sets(cur):
                self.enqueue(rs)

    def _delete_pod(self, pod: Obj) -> None:
        ref = controller_ref_of(pod)
        if ref is None:
            return  # no controller cares about an orphan going away
        rs = self._resolve_controller_ref(str(meta_of(pod).get("namespace") or ""), ref)
        if rs is None:
            return
        key = key_of(rs)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.enqueue_key(key)

    # --- sync ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        rs = self.rs_lister.get(namespace, name)
        if rs is None:
            self.expectations.delete_expectations(key)
            return
        needs_sync = self.expectations.satisfied_expectations(key)
        try:
            selector = apilabels.label_selector_as_selector(spec_of(rs).get("selector"))
        except apilabels.SelectorError as exc:
            log.error("error converting pod selector to selector for rs %s: %s", key, exc)
            return  # retrying cannot help until the object changes
        all_rs_pods = filter_pods_by_owner(self.pod_informer.indexer, rs, include_orphaned_pods=True)
        active_pods = await self._claim_pods(rs, selector, filter_active_pods(all_rs_pods))
        terminating_pods = filter_claimed_pods(rs, selector, filter_terminating_pods(all_rs_pods))

        manage_error: BaseException | None = None
        if needs_sync and not meta_of(rs).get("deletionTimestamp"):
            try:
                await self._manage_replicas(active_pods, rs)
            except Exception as exc:
                manage_error = exc
        now = self.clock.now()
        new_status = calculate_status(rs, active_pods, terminating_pods, manage_error, now)
        updated = await self._update_status(rs, new_status)
        if manage_error is not None:
            raise manage_error
        # A last line of defence (queue preemption, clock skew): look again when the next pod becomes available.
        status: Mapping[str, Any] = status_of(updated)
        min_ready = _min_ready_seconds(updated)
        if min_ready > 0 and int(status.get("readyReplicas") or 0) != int(status.get("availableReplicas") or 0):
            delay = find_min_next_pod_availability_check(active_pods, min_ready, now, self.clock)
            self.enqueue_after(key, float(min_ready) if delay is None else delay + AVAILABILITY_MARGIN)

    async def _claim_pods(self, rs: Obj, selector: apilabels.Selector, pods: list[Obj]) -> list[Obj]:
        meta = meta_of(rs)

        async def fresh() -> Obj:
            # An uncached read: adopting for a ReplicaSet that is already being deleted would race the GC.
            got = await self.client.get(self.rs_resource, str(meta["name"]), namespace=str(meta["namespace"]))
            if meta_of(got).get("uid") != meta.get("uid"):
                raise RuntimeError(
                    f"original {KIND} {meta['namespace']}/{meta['name']} is gone: got uid "
                    f"{meta_of(got).get('uid')}, wanted {meta.get('uid')}"
                )
            return got

        manager = PodControllerRefManager(
            self.pod_control,
            rs,
            selector,
            api_version=API_VERSION,
            kind=KIND,
            can_adopt=recheck_deletion_timestamp(fresh),
        )
        return await manager.claim_pods(pods)

    async def _manage_replicas(self, active_pods: list[Obj], rs: Obj) -> None:
        """Create or delete pods so ``active_pods`` reaches ``spec.replicas`` (upstream ``manageReplicas``);
        raises the first failure after recording expectations only for what will be observed."""
        key = key_of(rs)
        namespace = str(meta_of(rs).get("namespace") or "")
        diff = len(active_pods) - _replicas(rs)
        if diff < 0:
            count = min(-diff, self.burst_replicas)
            # Expect before creating: the informer may report a new pod before create() returns.
            self.expectations.expect_creations(key, count)
            log.info("too few replicas for %s %s: need %d, creating %d", KIND, key, _replicas(rs), count)
            template: Mapping[str, Any] = spec_of(rs).get("template") or {}
            ref = new_controller_ref(rs, api_version=API_VERSION, kind=KIND)

            async def create() -> None:
                try:
                    await self.pod_control.create_pods(namespace, template, rs, ref)
                except Exception as exc:
                    if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                        return  # every create will fail until the namespace is gone; nothing to report
                    raise

            successes, error = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, create)
            # Pods never created will never be observed: stop waiting for them.
            for _ in range(count - successes):
                self.expectations.creation_observed(key)
            if error is not None:
                raise error
        elif diff > 0:
            count = min(diff, self.burst_replicas)
            log.info("too many replicas for %s %s: need %d, deleting %d", KIND, key, _replicas(rs), count)
            related = self._get_indirectly_related_pods(rs)
            to_delete = get_pods_to_delete(active_pods, related, count, self.clock.now())
            # Remember exactly which pods, so a graceful delete observed twice lowers the count once.
            self.expectations.expect_deletions(key, [pod_key(p) for p in to_delete])

            async def delete(pod: Obj) -> BaseException | None:
                try:
                    await self.pod_control.delete_pod(namespace, str(meta_of(pod).get("name") or ""), rs)
                except Exception as exc:
                    self.expectations.deletion_observed(key, pod_key(pod))  # it will not be observed
                    if isinstance(exc, NotFoundError):
                        return None
                    log.info("failed to delete pod %s of %s %s, decremented expectations", pod_key(pod), KIND, key)
                    return exc
                return None

            errors = [e for e in await asyncio.gather(*(delete(p) for p in to_delete)) if e is not None]
            if errors:
                raise errors[0]

    def _get_indirectly_related_pods(self, rs: Obj) -> list[Obj]:
        """Pods selected by any ReplicaSet with the same controller as ``rs`` (e.g. every ReplicaSet of one
        Deployment), each once. A ReplicaSet without a controller has none, as upstream."""
        ref = controller_ref_of(rs)
        if ref is None:
            log.debug("%s %s has no controller: no related pods", KIND, key_of(rs))
            return []
        seen: set[str] = set()
        related: list[Obj] = []
        for other in self.rs_informer.indexer.by_index(CONTROLLER_UID_INDEX, str(ref.get("uid") or "")):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(other).get("selector"))
            except apilabels.SelectorError:
                continue  # an invalid selector matches no pods
            for pod in self.pod_lister.list(meta_of(other).get("namespace") or "", selector):
                uid = str(meta_of(pod).get("uid") or "")
                if uid in seen:
                    continue
                seen.add(uid)
                related.append(pod)
        return related

    async def _update_status(self, rs: Obj, new_status: Obj) -> Obj:
        """Write ``new_status`` with ``observedGeneration`` = the generation acted on, unless nothing changed
        (upstream ``updateReplicaSetStatus``: one retry after a fresh GET). Returns the ReplicaSet as stored."""
        if _status_unchanged(rs, new_status):
            return rs
        new_status = {**new_status, "observedGeneration": meta_of(rs).get("generation")}
        meta = meta_of(rs)
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        current: Obj = rs
        attempt = 0
        while True:
            body = {**current, "status": new_status}
            try:
                updated: Obj = await self.client.update(
                    self.rs_resource, body, namespace=namespace, subresource="status"
                )
                return updated
            except Exception:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            attempt += 1
            current = await self.client.get(self.rs_resource, name, namespace=namespace)
