"""The disruption controller: keeps every PodDisruptionBudget's status current (upstream
``pkg/controller/disruption``).

For a budget it lists the pods its selector picks in its namespace and computes

* ``expectedPods``: with ``maxUnavailable`` or a percentage ``minAvailable``, the sum of the scales of the pods'
  controllers (each controller counted once: ReplicationController, Deployment through its ReplicaSet,
  ReplicaSet without a Deployment, StatefulSet, else any owner through its ``scale`` subresource); a selected
  pod without a controller is reported in an ``UnmanagedPods`` event and ignored. With an integer
  ``minAvailable`` it is simply the number of selected pods (no controllers needed);
* ``desiredHealthy``: ``minAvailable`` (a percentage of ``expectedPods`` rounded *up*), or ``expectedPods``
  minus ``maxUnavailable`` (a percentage rounded *up*), never below 0;
* ``currentHealthy``: selected pods that are Ready, not being deleted and not recently evicted;
* ``disruptedPods``: the API server's eviction records (``pod name -> time``) for pods that still exist and are
  not yet being deleted, dropping any older than :data:`DELETION_TIMEOUT` (the pod was evidently not deleted);
  the budget is looked at again when the oldest kept entry expires;
* ``disruptionsAllowed = max(currentHealthy - desiredHealthy, 0)``, and 0 whenever ``expectedPods`` is 0 (a
  budget matching nothing yet must not let the first eviction through before it has been synced);
* ``observedGeneration`` and the ``DisruptionAllowed`` condition (``SufficientPods`` /``InsufficientPods``).

Agreement with the API server's eviction subresource (:mod:`kubeplane.apiserver.subresources`): eviction
refuses (429) unless ``observedGeneration`` is current and ``disruptionsAllowed > 0``; it then decrements
``disruptionsAllowed`` and records the pod in ``disruptedPods`` in the same write. This controller treats
those recorded pods as unhealthy until they are seen terminating or the entry expires, so it never hands the
spent disruption back early. ``unhealthyPodEvictionPolicy`` is the eviction subresource's business only.

If computing the status fails (no controller found, bad percentage, unknown owner kind) the *fail-safe* write
sets ``disruptionsAllowed`` to 0 with the condition reason ``SyncFailed`` and the error as message, so evictions
stop until the budget can be computed again (upstream "fail closed" on the eviction side).

The controller also resets a stale ``DisruptionTarget=True`` pod condition (added by a disruption that never
led to deletion) to False after :data:`STALE_POD_DISRUPTION_TIMEOUT`; those pods are queued under
``stale-pod:<namespace>/<name>`` keys, which cannot collide with budget keys (namespaces contain no ``:``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import (
    PodView,
    controller_ref_of,
    is_being_deleted,
    is_pod_terminal,
    meta_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import Controller, ControllerContext, key_of, split_key
from kubeplane.controllers.controller_utils import (
    scaled_value_from_int_or_percent,
    set_status_condition,
    with_type_meta,
)
from kubeplane.controllers.podutil import is_pod_ready, parse_timestamp

__all__ = [
    "DELETION_TIMEOUT",
    "STALE_POD_DISRUPTION_TIMEOUT",
    "DisruptionController",
    "build_disrupted_pod_map",
    "count_healthy_pods",
    "disruptions_allowed",
]

log = logging.getLogger("kubeplane.controllers.disruption")

DELETION_TIMEOUT: Final = 120.0
"""Seconds an eviction record in ``disruptedPods`` stays valid without the pod being seen terminating."""
STALE_POD_DISRUPTION_TIMEOUT: Final = 120.0
"""Seconds a non-terminating pod may carry ``DisruptionTarget=True`` before it is reset to False."""

_STALE_POD_PREFIX: Final = "stale-pod:"
_COMPONENT: Final = "controllermanager"  # upstream's event source for this controller


# --- the budget arithmetic -----------------------------------------------------------------------------------


def build_disrupted_pod_map(
    pods: Sequence[Mapping[str, Any]], disrupted: Mapping[str, Any] | None, now: float
) -> tuple[dict[str, str], float | None, list[Mapping[str, Any]]]:
    """Upstream ``buildDisruptedPodMap``: the eviction records still in force, the earliest time one of them
    expires (when to look again), and the pods whose record expired without them being deleted."""
    result: dict[str, str] = {}
    recheck: float | None = None
    expired: list[Mapping[str, Any]] = []
    if not disrupted:
        return result, recheck, expired
    for pod in pods:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            continue  # already being deleted: the record has done its job
        name = str(meta.get("name") or "")
        if name not in disrupted:
            continue
        since = parse_timestamp(disrupted[name])
        expected_deletion = (since if since is not None else 0.0) + DELETION_TIMEOUT
        if expected_deletion < now:
            expired.append(pod)
        else:
            recheck = expected_deletion if recheck is None else min(recheck, expected_deletion)
            result[name] = str(disrupted[name])
    return result, recheck, expired


def count_healthy_pods(pods: Sequence[Mapping[str, Any]], disrupted: Mapping[str, str], now: float) -> int:
    """Upstream ``countHealthyPods``: Ready pods that are neither terminating nor recently evicted."""
    healthy = 0
    for pod in pods:
        meta = meta_of(pod)
        if meta.get("deletionTimestamp"):
            continue
        since = disrupted.get(str(meta.get("name") or ""))
        if since is not None:
            at = parse_timestamp(since)
            if at is not None and at + DELETION_TIMEOUT > now:
                continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def disruptions_allowed(current_healthy: int, desired_healthy: int, expected_count: int) -> int:
    """``currentHealthy - desiredHealthy``, never negative, and 0 while the budget expects no pods."""
    allowed = current_healthy - desired_healthy
    if expected_count <= 0 or allowed <= 0:
        return 0
    return allowed


def _group_of(api_version: str) -> str:
    group, sep, _version = str(api_version).rpartition("/")
    return group if sep else ""


@dataclass(frozen=True, slots=True)
class ExpectedCount:
    expected: int
    desired_healthy: int
    unmanaged: tuple[str, ...]


class DisruptionController(Controller):
    """See the module docstring. One worker, as upstream."""

    name: ClassVar[str] = "disruption"
    workers: ClassVar[int] = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        informers = ctx.informers
        self.pdbs = informers.informer_for("poddisruptionbudgets")
        self.pods = informers.informer_for("pods")
        self.rcs = informers.informer_for("replicationcontrollers")
        self.rss = informers.informer_for("replicasets")
        self.deployments = informers.informer_for("deployments")
        self.statefulsets = informers.informer_for("statefulsets")
        self.pdb_resource = ctx.client.resource("poddisruptionbudgets")
        self.pod_resource = ctx.client.resource("pods")
        self.recorder = ctx.recorder(_COMPONENT)
        self.pdbs.add_event_handler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new), on_delete=self.enqueue
        )
        self.pods.add_event_handler(on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_deleted)

    # --- handlers ------------------------------------------------------------------------------------------

    async def _pod_changed(self, pod: Obj) -> None:
        pdb = await self._pdb_for_pod(pod)
        if pdb is not None:
            self.enqueue(pdb)
        stale, clean_after = self._has_stale_disruption_condition(pod)
        if stale:
            self.enqueue_after(_STALE_POD_PREFIX + key_of(pod), clean_after)

    async def _pod_updated(self, _old: Obj, new: Obj) -> None:
        await self._pod_changed(new)

    async def _pod_deleted(self, pod: Obj) -> None:
        pdb = await self._pdb_for_pod(pod)
        if pdb is not None:
            self.enqueue(pdb)

    async def _pdb_for_pod(self, pod: Mapping[str, Any]) -> Obj | None:
        """Upstream ``getPdbForPod``: the first budget whose selector matches (an empty selector matches every
        pod, as policy/v1's lister); a pod matching several gets a ``MultiplePodDisruptionBudgets`` event."""
        meta = meta_of(pod)
        namespace = str(meta.get("namespace") or "")
        pod_labels = meta.get("labels") or {}
        matching: list[Obj] = []
        for pdb in self.pdbs.lister().list(namespace):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(pdb).get("selector"))
            except ValueError:
                continue
            if selector.matches(pod_labels):
                matching.append(pdb)
        if not matching:
            return None
        if len(matching) > 1:
            chosen = matching[0]["metadata"]["name"]
            msg = (
                f'Pod "{namespace}"/"{meta.get("name")}" matches multiple PodDisruptionBudgets.  '
                f'Chose "{chosen}" arbitrarily.'
            )
            log.info("%s", msg)
            await self.recorder.event(
                with_type_meta(pod, "v1", "Pod"), EVENT_TYPE_WARNING, "MultiplePodDisruptionBudgets", msg
            )
        return matching[0]

    # --- sync ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        if key.startswith(_STALE_POD_PREFIX):
            await self._sync_stale_pod_disruption(key[len(_STALE_POD_PREFIX) :])
            return
        namespace, name = split_key(key)
        pdb = self.pdbs.lister().get(namespace, name)
        if pdb is None:
            return
        try:
            await self._try_sync(pdb)
        except ConflictError:
            raise  # requeued without the fail-safe: the next sync sees the newer budget
        except Exception as exc:  # any failure to compute the budget must fail closed
            log.error("Failed to sync PDB %s: %s", key, exc)
            await self._fail_safe(pdb, exc)

    async def _try_sync(self, pdb: Obj) -> None:
        typed = with_type_meta(pdb, "policy/v1", "PodDisruptionBudget")
        try:
            pods = self._pods_for_pdb(pdb)
        except ValueError as exc:
            await self.recorder.event(typed, EVENT_TYPE_WARNING, "NoPods", f"Failed to get pods: {exc}")
            raise
        if not pods:
            await self.recorder.event(typed, EVENT_TYPE_NORMAL, "NoPods", "No matching pods found")
        try:
            counts = await self.expected_pod_count(pdb, pods)
        except Exception as exc:
            await self.recorder.event(
                typed,
                EVENT_TYPE_WARNING,
                "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {exc}",
            )
            raise
        if counts.unmanaged:
            selector = spec_of(pdb).get("selector")
            await self.recorder.event(
                typed,
                EVENT_TYPE_WARNING,
                "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: {apilabels.format_label_selector(selector)}) "
                "were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
                "which may result in undefined behavior. To account for these pods please set "
                '".spec.minAvailable" field of the PDB to an integer value.',
            )
        now = self.clock.now()
        status = status_of(pdb)
        disrupted, recheck, expired = build_disrupted_pod_map(pods, status.get("disruptedPods"), now)
        for pod in expired:
            # Upstream formats the budget's namespace twice here; kept verbatim.
            ns = meta_of(pdb).get("namespace", "")
            await self.recorder.event(
                with_type_meta(pod, "v1", "Pod"),
                EVENT_TYPE_WARNING,
                "NotDeleted",
                f"Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't",
            )
        healthy = count_healthy_pods(pods, disrupted, now)
        await self._update_status(pdb, healthy, counts.desired_healthy, counts.expected, disrupted)
        if recheck is not None:
            self.enqueue_after(key_of(pdb), recheck - now)

    def _pods_for_pdb(self, pdb: Mapping[str, Any]) -> list[Obj]:
        selector = apilabels.label_selector_as_selector(spec_of(pdb).get("selector"))
        return self.pods.lister().list(namespace_of(pdb), selector)

    async def expected_pod_count(self, pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> ExpectedCount:
        """Upstream ``getExpectedPodCount``: (expectedPods, desiredHealthy, unmanaged pod names)."""
        spec = spec_of(pdb)
        max_unavailable = spec.get("maxUnavailable")
        min_available = spec.get("minAvailable")
        if max_unavailable is not None:
            expected, unmanaged = await self._expected_scale(pdb, pods)
            unavailable = scaled_value_from_int_or_percent(max_unavailable, expected, True)
            return ExpectedCount(expected, max(expected - unavailable, 0), unmanaged)
        if min_available is not None:
            if isinstance(min_available, int):
                return ExpectedCount(len(pods), min_available, ())
            expected, unmanaged = await self._expected_scale(pdb, pods)
            return ExpectedCount(expected, scaled_value_from_int_or_percent(min_available, expected, True), unmanaged)
        return ExpectedCount(0, 0, ())

    async def _expected_scale(
        self, pdb: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
    ) -> tuple[int, tuple[str, ...]]:
        """Upstream ``getExpectedScale``: the sum of the scales of the selected pods' controllers, each once."""
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            meta = meta_of(pod)
            ref = controller_ref_of(pod)
            if ref is None:
                unmanaged.append(str(meta.get("name") or ""))
                continue
            if str(ref.get("uid") or "") in scales:
                continue
            namespace = str(meta.get("namespace") or "")
            found = await self._find_controller(ref, namespace)
            if found is None:
                raise LookupError(f'found no controllers for pod "{meta.get("name")}"')
            scales[found[0]] = found[1]
        return sum(scales.values()), tuple(unmanaged)

    async def _find_controller(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, int] | None:
        """Upstream's finders in order: ReplicationController, Deployment (through its ReplicaSet), ReplicaSet
        (not owned by a Deployment), StatefulSet, then any kind through its scale subresource."""
        kind, group, uid = ref.get("kind"), _group_of(str(ref.get("apiVersion") or "")), ref.get("uid")
        name = str(ref.get("name") or "")
        if kind == "ReplicationController" and group == "":
            rc = self.rcs.lister().get(namespace, name)
            return _scale_if(rc, uid)
        if kind == "ReplicaSet" and group in ("apps", "extensions"):
            rs = self.rss.lister().get(namespace, name)
            if rs is None or meta_of(rs).get("uid") != uid:
                return None
            owner = controller_ref_of(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                if _group_of(str(owner.get("apiVersion") or "")) not in ("apps", "extensions"):
                    return None
                deployment = self.deployments.lister().get(namespace, str(owner.get("name") or ""))
                return _scale_if(deployment, owner.get("uid"))
            return _scale_if(rs, uid)
        if kind == "StatefulSet" and group == "apps":
            sts = self.statefulsets.lister().get(namespace, name)
            return _scale_if(sts, uid)
        return await self._scale_controller(ref, namespace)

    async def _scale_controller(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, int] | None:
        """Upstream ``getScaleController``: any owner kind through the ``scale`` subresource."""
        api_version = str(ref.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        kind = str(ref.get("kind") or "")
        info = self._resource_for(group, version, kind)
        if info is None:
            raise LookupError(f'no matches for kind "{kind}" in version "{api_version}"')
        if not any(sub.name == "scale" for sub in info.subresources):
            gr = f"{info.plural}.{info.group}" if info.group else info.plural
            raise LookupError(f"{gr} does not implement the scale subresource")
        try:
            scale = await self.client.get(info, str(ref.get("name") or ""), namespace=namespace, subresource="scale")
        except NotFoundError:
            return None
        if meta_of(scale).get("uid") != ref.get("uid"):
            return None
        return str(ref.get("uid")), int(spec_of(scale).get("replicas") or 0)

    def _resource_for(self, group: str, version: str, kind: str) -> ResourceInfo | None:
        name = f"{kind}.{version}.{group}" if group else kind
        try:
            info = self.client.resource(name)
        except KeyError:
            return None
        if info.group != group or info.kind != kind:
            return None
        return info

    # --- status writes -------------------------------------------------------------------------------------

    async def _update_status(
        self, pdb: Obj, healthy: int, desired: int, expected: int, disrupted: dict[str, str]
    ) -> None:
        """Upstream ``updatePdbStatus``: write only when something (counts, records, generation or the
        condition) differs, so an unchanged budget costs no write."""
        allowed = disruptions_allowed(healthy, desired, expected)
        status = status_of(pdb)
        generation = int(meta_of(pdb).get("generation") or 0)
        if (
            status.get("currentHealthy", 0) == healthy
            and status.get("desiredHealthy", 0) == desired
            and status.get("expectedPods", 0) == expected
            and status.get("disruptionsAllowed", 0) == allowed
            and dict(status.get("disruptedPods") or {}) == disrupted
            and status.get("observedGeneration", 0) == generation
            and _conditions_up_to_date(pdb)
        ):
            return
        new = copy.deepcopy(pdb)
        conditions: list[Obj] = list(new.get("status", {}).get("conditions") or [])
        new_status: Obj = {
            "observedGeneration": generation,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "disruptionsAllowed": allowed,
        }
        if disrupted:
            new_status["disruptedPods"] = disrupted
        sufficient = allowed > 0
        set_status_condition(
            conditions,
            {
                "type": "DisruptionAllowed",
                "status": "True" if sufficient else "False",
                "reason": "SufficientPods" if sufficient else "InsufficientPods",
                "message": "",
                "observedGeneration": generation,
            },
            self.clock.now(),
        )
        new_status["conditions"] = conditions
        new["status"] = new_status
        await self.client.update(self.pdb_resource, new, namespace=meta_of(new).get("namespace"), subresource="status")

    async def _fail_safe(self, pdb: Obj, err: Exception) -> None:
        """Upstream ``failSafe``: at least stop evictions (``disruptionsAllowed`` 0, reason ``SyncFailed``).
        A successful write ends the sync without a retry, as upstream; a failed one retries."""
        new = copy.deepcopy(pdb)
        status = new.setdefault("status", {})
        status["disruptionsAllowed"] = 0
        conditions: list[Obj] = list(status.get("conditions") or [])
        set_status_condition(
            conditions,
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "SyncFailed",
                "message": str(err),
                "observedGeneration": int(status.get("observedGeneration") or 0),
            },
            self.clock.now(),
        )
        status["conditions"] = conditions
        await self.client.update(self.pdb_resource, new, namespace=meta_of(new).get("namespace"), subresource="status")

    # --- stale DisruptionTarget conditions -------------------------------------------------------------------

    def _has_stale_disruption_condition(self, pod: Mapping[str, Any]) -> tuple[bool, float]:
        """Upstream ``nonTerminatingPodHasStaleDisruptionCondition``: (stale?, seconds until it may be reset)."""
        if is_being_deleted(pod):
            return False, 0.0
        condition = PodView(pod).condition("DisruptionTarget")
        if (
            condition is None
            or condition.get("status") != "True"
            or condition.get("reason") == "TerminationByKubelet"
            or is_pod_terminal(pod)
        ):
            return False, 0.0
        since = parse_timestamp(condition.get("lastTransitionTime")) or 0.0
        return True, max(STALE_POD_DISRUPTION_TIMEOUT - (self.clock.now() - since), 0.0)

    async def _sync_stale_pod_disruption(self, pod_key: str) -> None:
        namespace, name = split_key(pod_key)
        pod = self.pods.lister().get(namespace, name)
        if pod is None:
            return
        stale, clean_after = self._has_stale_disruption_condition(pod)
        if not stale:
            return
        if clean_after > 0:
            self.enqueue_after(_STALE_POD_PREFIX + pod_key, clean_after)
            return
        new = copy.deepcopy(pod)
        conditions = list(status_of(new).get("conditions") or [])
        now = apimeta.format_time(self.clock.now())
        for i, condition in enumerate(conditions):
            if condition.get("type") == "DisruptionTarget":
                # upstream UpdatePodCondition: the condition is replaced whole (reason and message cleared)
                conditions[i] = {"type": "DisruptionTarget", "status": "False", "lastTransitionTime": now}
        new["status"]["conditions"] = conditions
        await self.client.update(self.pod_resource, new, namespace=namespace, subresource="status")
        log.info("Reset stale DisruptionTarget condition to False for pod %s", pod_key)


def _scale_if(obj: Mapping[str, Any] | None, uid: Any) -> tuple[str, int] | None:
    """(uid, spec.replicas) of a controller found by name, if it is the one the reference means."""
    if obj is None or meta_of(obj).get("uid") != uid:
        return None
    replicas = spec_of(obj).get("replicas")
    return str(uid), int(replicas if replicas is not None else 1)


def _conditions_up_to_date(pdb: Mapping[str, Any]) -> bool:
    """Upstream ``pdbhelper.ConditionsAreUpToDate``."""
    status = status_of(pdb)
    condition = next(
        (c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == "DisruptionAllowed"),
        None,
    )
    if condition is None:
        return False
    if status.get("observedGeneration", 0) != int(meta_of(pdb).get("generation") or 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return bool(condition.get("status") == "True" and condition.get("reason") == "SufficientPods")
    return bool(condition.get("status") == "False" and condition.get("reason") == "InsufficientPods")
