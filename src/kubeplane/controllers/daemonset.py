"""The DaemonSet controller: one daemon pod on every eligible node (upstream ``pkg/controller/daemon``).

Placement. A node is *eligible* (``shouldRun``) when the DaemonSet's pod, as it would be created for that node,
fits it: the template's ``nodeName`` (if any) is the node, the pod's ``nodeSelector`` and required node affinity
match (:func:`kubeplane.api.nodeaffinity.get_required_node_affinity`, the scheduler's own matcher), and every
NoSchedule/NoExecute taint is tolerated (:func:`kubeplane.api.taints.find_matching_untolerated_taint`). A pod
already there may *continue running* while only NoSchedule taints are untolerated. Daemon pods get upstream's
extra tolerations (not-ready/unreachable NoExecute forever; disk/memory/pid-pressure and unschedulable
NoSchedule; network-unavailable for hostNetwork pods), so node conditions never evict or block them.

Pods are created *unbound*, with their required node affinity replaced by one term ``matchFields
metadata.name In [node]`` (upstream ``ReplaceDaemonSetPodNodeNameNodeAffinity``), so the scheduler binds them
to exactly that node; the controller finds a pod's node from ``spec.nodeName`` or, before binding, from that
term (``GetTargetNodeName``). Each pod has the DaemonSet as controller owner and the label
``controller-revision-hash``.

Revisions (upstream ``constructHistory``): each template is a ControllerRevision ``<ds>-<hash>`` whose data
is the patch ``kubectl rollout undo`` applies (:mod:`.daemonset_history`); ``hash`` is the Deployment's
:func:`~kubeplane.controllers.controller_utils.compute_hash` of the template and ``status.collisionCount`` (FNV-32a
over the template's canonical JSON, safe-encoded; upstream hashes Go's printed struct, so the values differ),
and the current revision's ``controller-revision-hash`` label is what pods carry: a pod is *updated* when its
label (or the deprecated ``pod-template-generation``) matches it. Old revisions no pod uses are pruned to
``revisionHistoryLimit`` after each manage/rolling-update pass (``cleanupHistory``).

Each sync (upstream ``syncDaemonSet``): skip a selector-everything set (``SelectingAll`` event) or one being
deleted; if earlier creates/deletes are not yet observed by the informer (*expectations*), only refresh the
status; otherwise ``manage`` (create missing pods, delete pods on nodes that no longer want them, failed and
succeeded pods with a per-node backoff, surplus pods, and unbound pods aimed at nodes that no longer exist),
then for RollingUpdate replace old pods within ``maxUnavailable`` / ``maxSurge`` (OnDelete waits for the user
to delete them), then write the status counts and ``observedGeneration``.

This module holds the controller (upstream ``daemon_controller.go``): handlers, sync, manage, status. The pure
parts live beside it as upstream splits them: placement, tolerations and revision checks in
:mod:`.daemonset_util` (upstream ``daemon/util``), the RollingUpdate plan in :mod:`.daemonset_update`
(upstream ``update.go``).
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import (
    controller_ref_of,
    is_being_deleted,
    is_pod_terminal,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)
from kubeplane.client.errors import APIStatusError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import Controller, ControllerContext, key_of, split_key
from kubeplane.controllers.controller_ref_manager import recheck_deletion_timestamp
from kubeplane.controllers.controller_utils import (
    NAMESPACE_TERMINATING_CAUSE,
    SLOW_START_INITIAL_BATCH_SIZE,
    PodControl,
    has_status_cause,
    new_controller_ref,
    slow_start_batch,
    with_type_meta,
)
from kubeplane.controllers.daemonset_history import DaemonSetHistory
from kubeplane.controllers.daemonset_update import rolling_update_plan, updated_desired_node_counts
from kubeplane.controllers.daemonset_util import (
    HASH_LABEL,
    TEMPLATE_GENERATION_LABEL,
    TargetNodeError,
    add_daemon_pod_tolerations,
    allows_surge,
    is_pod_updated,
    node_should_run_daemon_pod,
    pod_sort_key,
    replace_node_name_affinity,
    rolling_update_params,
    target_node_name,
    template_generation,
)
from kubeplane.controllers.expectations import ControllerExpectations
from kubeplane.controllers.podutil import is_pod_available, is_pod_ready

__all__ = ["DaemonSetController"]

log = logging.getLogger("kubeplane.controllers.daemonset")

BURST_REPLICAS: Final = 250
"""At most this many creates (and deletes) per sync (upstream ``BurstReplicas``)."""
FAILED_POD_BACKOFF_INITIAL: Final = 1.0
FAILED_POD_BACKOFF_MAX: Final = 15 * 60.0
STATUS_UPDATE_RETRIES: Final = 1


_COMPONENT: Final = "daemonset-controller"


# --- bookkeeping -----------------------------------------------------------------------------------------------


class Backoff:
    """Upstream ``flowcontrol.Backoff`` (per-id exponential delay) for deleting failed daemon pods."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum = initial, maximum
        self._entries: dict[str, tuple[float, float]] = {}  # id -> (delay, last update)

    def _expired(self, entry: tuple[float, float], now: float) -> bool:
        return now - entry[1] > 2 * self.maximum

    def next(self, id_: str, now: float) -> None:
        entry = self._entries.get(id_)
        delay = self.initial if entry is None or self._expired(entry, now) else min(entry[0] * 2, self.maximum)
        self._entries[id_] = (delay, now)

    def get(self, id_: str) -> float:
        entry = self._entries.get(id_)
        return entry[0] if entry is not None else 0.0

    def in_backoff_since_update(self, id_: str, now: float) -> bool:
        entry = self._entries.get(id_)
        return entry is not None and not self._expired(entry, now) and now - entry[1] < entry[0]


# --- the controller -----------------------------------------------------------------------------------------------


def _typed_ds(ds: Mapping[str, Any]) -> Obj:
    return with_type_meta(ds, "apps/v1", "DaemonSet")


class DaemonSetController(Controller):
    """See the module docstring. Two workers (upstream ``--concurrent-daemonset-syncs``)."""

    name: ClassVar[str] = "daemonset"
    workers: ClassVar[int] = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.daemonsets = ctx.informers.informer_for("daemonsets")
        self.pods = ctx.informers.informer_for("pods")
        self.nodes = ctx.informers.informer_for("nodes")
        self.revisions = ctx.informers.informer_for("controllerrevisions")
        self.ds_resource = ctx.client.resource("daemonsets")
        self.pod_resource = ctx.client.resource("pods")
        self.recorder = ctx.recorder(_COMPONENT)
        self.expectations = ControllerExpectations(ctx.clock)
        self.pod_control = PodControl(ctx.client, self.recorder)
        self.failed_pods_backoff = Backoff(FAILED_POD_BACKOFF_INITIAL, FAILED_POD_BACKOFF_MAX)
        self.burst_replicas = BURST_REPLICAS
        self.history = DaemonSetHistory(ctx.client, self.revisions.lister(), self._can_adopt, self._all_daemon_pods)
        self.daemonsets.add_event_handler(
            on_add=self.enqueue, on_update=self._update_daemonset, on_delete=self._delete_daemonset
        )
        self.pods.add_event_handler(on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod)
        self.nodes.add_event_handler(on_add=self._add_node, on_update=self._update_node, on_delete=self._delete_node)
        self.revisions.add_event_handler(
            on_add=self._history_changed,
            on_update=lambda _old, new: self._history_changed(new),
            on_delete=self._history_changed,
        )

    # --- handlers ------------------------------------------------------------------------------------------

    def _update_daemonset(self, old: Obj, new: Obj) -> None:
        if meta_of(old).get("uid") != meta_of(new).get("uid"):
            self._delete_daemonset(old)
        self.enqueue(new)

    def _delete_daemonset(self, ds: Obj) -> None:
        self.expectations.delete_expectations(key_of(ds))
        self.enqueue(ds)

    def _resolve(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        if ref.get("kind") != "DaemonSet":
            return None
        ds = self.daemonsets.lister().get(namespace, str(ref.get("name") or ""))
        if ds is None or meta_of(ds).get("uid") != ref.get("uid"):
            return None
        return ds

    def _history_changed(self, history: Obj) -> None:
        """Upstream ``addHistory`` / ``updateHistory`` / ``deleteHistory``, reduced to their effect: the
        owning set is synced (an orphan's matching sets, which may adopt it)."""
        ref = controller_ref_of(history)
        if ref is not None:
            ds = self._resolve(namespace_of(history), ref)
            if ds is not None:
                self.enqueue(ds)
            return
        for ds in self._daemonsets_for_pod(history):
            self.enqueue(ds)

    def _can_adopt(self, ds: Obj) -> Callable[[], Awaitable[None]]:
        async def fresh() -> Obj:
            got = await self.client.get(self.ds_resource, name_of(ds), namespace=namespace_of(ds))
            if meta_of(got).get("uid") != meta_of(ds).get("uid"):
                raise RuntimeError(
                    f"original DaemonSet {namespace_of(ds)}/{name_of(ds)} is gone: got uid "
                    f"{meta_of(got).get('uid')}, wanted {meta_of(ds).get('uid')}"
                )
            return got

        return recheck_deletion_timestamp(fresh)

    def _all_daemon_pods(self, ds: Obj) -> list[Obj]:
        """The set's pods, deleted terminal ones included (what cleanupHistory and dedup look at)."""
        return [p for pods in self.nodes_to_daemon_pods(ds, include_deleted_terminal=True).values() for p in pods]

    def _daemonsets_for_pod(self, pod: Mapping[str, Any]) -> list[Obj]:
        meta = meta_of(pod)
        pod_labels = meta.get("labels") or {}
        out = []
        for ds in self.daemonsets.lister().list(str(meta.get("namespace") or "")):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(ds).get("selector"))
            except ValueError:
                continue
            if not selector.empty() and selector.matches(pod_labels):
                out.append(ds)
        return out

    def _add_pod(self, pod: Obj) -> None:
        if is_being_deleted(pod):
            self._delete_pod(pod)  # a restart can show a pod already going: not a creation observation
            return
        ref = controller_ref_of(pod)
        if ref is not None:
            ds = self._resolve(namespace_of(pod), ref)
            if ds is not None:
                self.expectations.creation_observed(key_of(ds))
                self.enqueue(ds)
            return
        for ds in self._daemonsets_for_pod(pod):
            self.enqueue(ds)

    def _update_pod(self, old: Obj, new: Obj) -> None:
        if meta_of(old).get("resourceVersion") == meta_of(new).get("resourceVersion"):
            return
        if is_being_deleted(new):
            self._delete_pod(new)
            return
        namespace = namespace_of(new)
        cur_ref, old_ref = controller_ref_of(new), controller_ref_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            old_ds = self._resolve(namespace, old_ref)
            if old_ds is not None:
                self.enqueue(old_ds)
        if cur_ref is not None:
            ds = self._resolve(namespace, cur_ref)
            if ds is None:
                return
            self.enqueue(ds)
            min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
            if not is_pod_ready(old) and is_pod_ready(new) and min_ready > 0:
                self.enqueue_after(ds, min_ready + 1)  # a second of slack against clock skew, as upstream
            return
        if ref_changed or (meta_of(old).get("labels") != meta_of(new).get("labels")):
            for ds in self._daemonsets_for_pod(new):
                self.enqueue(ds)

    def _delete_pod(self, pod: Obj) -> None:
        ref = controller_ref_of(pod)
        if ref is None:
            return
        ds = self._resolve(namespace_of(pod), ref)
        if ds is None:
            return
        self.expectations.deletion_observed(key_of(ds))
        self.enqueue(ds)

    def _add_node(self, node: Obj) -> None:
        for ds in self.daemonsets.lister().list():
            if node_should_run_daemon_pod(node, ds)[0]:
                self.enqueue(ds)

    def _update_node(self, old: Obj, new: Obj) -> None:
        if _should_ignore_node_update(old, new):
            return
        for ds in self.daemonsets.lister().list():
            if node_should_run_daemon_pod(old, ds) != node_should_run_daemon_pod(new, ds):
                self.enqueue(ds)

    def _delete_node(self, node: Obj) -> None:
        # Not in upstream (which waits for PodGC's pod deletions or the scheduler's status updates): without
        # it an unbound pod aimed at a vanished node would wait for an unrelated event to be cleaned up.
        name = name_of(node)
        for pod in self.pods.lister().list():
            ref = controller_ref_of(pod)
            if ref is None or spec_of(pod).get("nodeName"):
                continue
            try:
                if target_node_name(pod) != name:
                    continue
            except TargetNodeError:
                continue
            ds = self._resolve(namespace_of(pod), ref)
            if ds is not None:
                self.enqueue(ds)

    # --- reading the world ----------------------------------------------------------------------------------

    def _daemon_pods(self, ds: Mapping[str, Any]) -> list[Obj]:
        """Pods in the set's namespace that it controls and that still match its selector (upstream's
        ClaimPods without adoption or release: see the report)."""
        selector = apilabels.label_selector_as_selector(spec_of(ds).get("selector"))
        uid = meta_of(ds).get("uid")
        out = []
        for pod in self.pods.lister().list(namespace_of(ds)):
            ref = controller_ref_of(pod)
            if ref is not None and ref.get("uid") == uid and selector.matches(labels_of(pod)):
                out.append(pod)
        return out

    def nodes_to_daemon_pods(
        self, ds: Mapping[str, Any], include_deleted_terminal: bool = False
    ) -> dict[str, list[Obj]]:
        """Upstream ``getNodesToDaemonPods``: the set's pods by target node (bound or not)."""
        by_node: dict[str, list[Obj]] = {}
        for pod in self._daemon_pods(ds):
            if not include_deleted_terminal and is_pod_terminal(pod) and is_being_deleted(pod):
                continue
            try:
                node = target_node_name(pod)
            except TargetNodeError:
                continue
            by_node.setdefault(node, []).append(pod)
        return by_node

    # --- sync ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        ds = self.daemonsets.lister().get(namespace, name)
        if ds is None:
            self.expectations.delete_expectations(key)
            return
        nodes = self.nodes.lister().list()
        selector = spec_of(ds).get("selector")
        if isinstance(selector, Mapping) and not selector.get("matchLabels") and not selector.get("matchExpressions"):
            await self.recorder.event(
                _typed_ds(ds),
                EVENT_TYPE_WARNING,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            )
            return
        if is_being_deleted(ds):
            return
        try:
            cur, old = await self.history.construct_history(ds)
        except Exception as exc:
            raise RuntimeError(f"failed to construct revisions of DaemonSet: {exc}") from exc
        hash_ = str(labels_of(cur).get(HASH_LABEL) or "")
        if not self.expectations.satisfied_expectations(key):
            await self._update_status(ds, nodes, hash_, update_observed_generation=False)
            return
        error: Exception | None = None
        try:
            await self._manage(ds, nodes, hash_)
            if self.expectations.satisfied_expectations(key) and rolling_update_params(ds) is not None:
                await self._rolling_update(ds, nodes, hash_)
            try:
                await self.history.cleanup_history(ds, old)
            except Exception as exc:
                raise RuntimeError(f"failed to clean up revisions of DaemonSet: {exc}") from exc
        except Exception as exc:
            error = exc
        try:
            await self._update_status(ds, nodes, hash_, update_observed_generation=True)
        except Exception as status_error:
            if error is None:
                raise
            log.error("Failed to update status of DaemonSet %s: %s", key, status_error)
        if error is not None:
            raise error

    def _pods_should_be_on_node(
        self, node: Obj, by_node: Mapping[str, list[Obj]], ds: Obj, hash_: str
    ) -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
        """Upstream ``podsShouldBeOnNode``: (nodes needing a pod, pods to delete, events to record)."""
        should_run, should_continue = node_should_run_daemon_pod(node, ds)
        node_name = name_of(node)
        pods = by_node.get(node_name)
        create: list[str] = []
        delete: list[str] = []
        events: list[tuple[str, str, str]] = []
        if should_run and pods is None:
            create.append(node_name)
        elif should_continue:
            running: list[Obj] = []
            for pod in pods or ():
                if is_being_deleted(pod):
                    continue
                phase = status_of(pod).get("phase")
                pod_ref = f"{pod['metadata'].get('namespace', '')}/{name_of(pod)}"
                if phase == "Failed":
                    observed = status_of(ds).get("observedGeneration", 0)
                    backoff_key = f"{ds['metadata'].get('uid')}/{observed}/{node_name}"
                    now = self.clock.monotonic()
                    if self.failed_pods_backoff.in_backoff_since_update(backoff_key, now):
                        self.enqueue_after(ds, self.failed_pods_backoff.get(backoff_key))
                        continue
                    self.failed_pods_backoff.next(backoff_key, now)
                    msg = f"Found failed daemon pod {pod_ref} on node {node_name}, will try to kill it"
                    events.append((EVENT_TYPE_WARNING, "FailedDaemonPod", msg))
                    delete.append(name_of(pod))
                elif phase == "Succeeded":
                    msg = f"Found succeeded daemon pod {pod_ref} on node {node_name}, will try to delete it"
                    events.append((EVENT_TYPE_NORMAL, "SucceededDaemonPod", msg))
                    delete.append(name_of(pod))
                else:
                    running.append(pod)
            running.sort(key=pod_sort_key)
            if not allows_surge(ds):
                delete.extend(name_of(p) for p in running[1:])  # keep only the oldest
            elif not running:
                if should_run:
                    create.append(node_name)  # surging: at least one live pod per node
            elif len(running) > 1:
                oldest_new: Obj | None = None
                oldest_old: Obj | None = None
                for pod in running:
                    if labels_of(pod).get(HASH_LABEL) == hash_:
                        if oldest_new is None:
                            oldest_new = pod
                            continue
                    elif oldest_old is None:
                        oldest_old = pod
                        continue
                    delete.append(name_of(pod))
                if oldest_new is not None and oldest_old is not None:
                    min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
                    if not is_pod_ready(oldest_old) or is_pod_available(oldest_new, min_ready, self.clock.now()):
                        delete.append(name_of(oldest_old))
        elif pods is not None:
            delete.extend(name_of(p) for p in pods if not is_being_deleted(p))
        return create, delete, events

    async def _manage(self, ds: Obj, nodes: Sequence[Obj], hash_: str) -> None:
        by_node = self.nodes_to_daemon_pods(ds)
        create: list[str] = []
        delete: list[str] = []
        for node in nodes:
            node_create, node_delete, events = self._pods_should_be_on_node(node, by_node, ds, hash_)
            create.extend(node_create)
            delete.extend(node_delete)
            for event_type, reason, message in events:
                await self.recorder.event(_typed_ds(ds), event_type, reason, message)
        # Unbound pods aimed at nodes that no longer exist: PodGC never sees them (upstream
        # getUnscheduledPodsWithoutNode).
        existing = {name_of(n) for n in nodes}
        for node_name, pods in by_node.items():
            if node_name not in existing:
                delete.extend(name_of(p) for p in pods if not spec_of(p).get("nodeName"))
        await self._sync_nodes(ds, delete, create, hash_)

    def _pod_template(self, ds: Obj, hash_: str) -> Obj:
        """Upstream ``CreatePodTemplate``: the template with the daemon tolerations and the revision labels."""
        template = copy.deepcopy(spec_of(ds).get("template") or {})
        add_daemon_pod_tolerations(template.setdefault("spec", {}))
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        generation = template_generation(ds)
        if generation is not None:
            labels[TEMPLATE_GENERATION_LABEL] = str(generation)
        if hash_:
            labels[HASH_LABEL] = hash_
        return template

    async def _sync_nodes(self, ds: Obj, to_delete: list[str], nodes_needing: list[str], hash_: str) -> None:
        """Upstream ``syncNodes``: expectations first, then creates in slow-start batches (1, 2, 4, ...: a
        failing batch stops the rest), then deletes; all errors are raised together to retry the set."""
        key = key_of(ds)
        create_diff = min(len(nodes_needing), self.burst_replicas)
        delete_diff = min(len(to_delete), self.burst_replicas)
        self.expectations.set_expectations(key, create_diff, delete_diff)
        errors: list[Exception] = []
        template = self._pod_template(ds, hash_)
        pending = iter(nodes_needing[:create_diff])

        async def create_on(node_name: str) -> None:
            try:
                await self._create_pod(ds, template, node_name)
            except Exception as exc:
                errors.append(exc)  # upstream aggregates every failure of the batch, not just the first
                raise

        def create_next() -> Awaitable[None]:
            return create_on(next(pending))  # called in order, once per create, by slow_start_batch

        successes, _ = await slow_start_batch(create_diff, SLOW_START_INITIAL_BATCH_SIZE, create_next)
        for _ in range(create_diff - successes):
            # Failed creates and those skipped after a failing batch will never be observed (retried next sync).
            self.expectations.creation_observed(key)
        results = await asyncio.gather(
            *(self._delete_pod_named(ds, name) for name in to_delete[:delete_diff]), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                self.expectations.deletion_observed(key)
                if not isinstance(result, NotFoundError) and isinstance(result, Exception):
                    errors.append(result)
        if errors:
            raise ExceptionGroup(f"syncing pods of DaemonSet {key}", errors)

    async def _create_pod(self, ds: Obj, template: Obj, node_name: str) -> None:
        """One daemon pod for ``node_name``: the template with the node-name affinity, created through
        :class:`PodControl` (its events). A namespace being torn down is not an error: every later create
        fails the same way, and upstream neither reports it nor lowers the expectations for it."""
        spec = dict(template.get("spec") or {})
        spec["affinity"] = replace_node_name_affinity(spec.get("affinity"), node_name)
        try:
            await self.pod_control.create_pods(
                namespace_of(ds),
                {**template, "spec": spec},
                _typed_ds(ds),
                new_controller_ref(ds, api_version="apps/v1", kind="DaemonSet"),
            )
        except APIStatusError as exc:
            if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                return
            raise

    async def _delete_pod_named(self, ds: Obj, name: str) -> None:
        """Delete one daemon pod through :class:`PodControl` (its events); NotFound is raised for the caller."""
        await self.pod_control.delete_pod(namespace_of(ds), name, _typed_ds(ds))

    # --- rolling update ------------------------------------------------------------------------------------

    async def _rolling_update(self, ds: Obj, nodes: Sequence[Obj], hash_: str) -> None:
        """Upstream ``rollingUpdate``: the plan of :func:`~.daemonset_update.rolling_update_plan`, carried out by
        ``syncNodes`` (deletions, then creations on the nodes the plan names)."""
        by_node = self.nodes_to_daemon_pods(ds)
        counts = updated_desired_node_counts(ds, nodes, by_node)
        to_delete, to_create = rolling_update_plan(
            ds, by_node, counts, hash_=hash_, now=self.clock.now(), get_node=self._node_named
        )
        await self._sync_nodes(ds, to_delete, to_create, hash_)

    def _node_named(self, name: str) -> Obj | None:
        return self.nodes.lister().get(None, name)

    # --- status --------------------------------------------------------------------------------------------

    async def _update_status(
        self, ds: Obj, nodes: Sequence[Obj], hash_: str, *, update_observed_generation: bool
    ) -> None:
        """Upstream ``updateDaemonSetStatus`` + ``storeDaemonSetStatus``: counts over eligible nodes (each
        judged by its oldest pod), written only when they or the generation changed, with one retry on a
        fresh copy; requeued after minReadySeconds while ready pods are not yet available."""
        by_node = self.nodes_to_daemon_pods(ds)
        min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
        now = self.clock.now()
        generation = template_generation(ds)
        desired = current = misscheduled = ready = updated = available = 0
        for node in nodes:
            should_run = node_should_run_daemon_pod(node, ds)[0]
            pods = by_node.get(name_of(node)) or []
            if should_run:
                desired += 1
                if not pods:
                    continue
                current += 1
                pod = min(pods, key=pod_sort_key)
                if is_pod_ready(pod):
                    ready += 1
                    if is_pod_available(pod, min_ready, now):
                        available += 1
                if is_pod_updated(pod, hash_, generation):
                    updated += 1
            elif pods:
                misscheduled += 1
        counts = {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
        }
        status = status_of(ds)
        ds_generation = int(meta_of(ds).get("generation") or 0)
        unchanged = all(int(status.get(k) or 0) == v for k, v in counts.items())
        if not (unchanged and int(status.get("observedGeneration") or 0) >= ds_generation):
            await self._store_status(ds, counts, ds_generation if update_observed_generation else None)
        if min_ready > 0 and ready != available:
            self.enqueue_after(ds, min_ready)

    async def _store_status(self, ds: Obj, counts: Mapping[str, int], observed_generation: int | None) -> None:
        to_update = copy.deepcopy(ds)
        namespace = meta_of(ds).get("namespace")
        attempt = 0
        while True:
            status = to_update.setdefault("status", {})
            if observed_generation is not None:
                status["observedGeneration"] = observed_generation
            status.update(counts)
            try:
                await self.client.update(self.ds_resource, to_update, namespace=namespace, subresource="status")
                return
            except APIStatusError:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
            attempt += 1
            to_update = await self.client.get(self.ds_resource, name_of(ds), namespace=namespace)


def _should_ignore_node_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Upstream ``shouldIgnoreNodeUpdate``: the set of True conditions is the same and nothing but the
    resourceVersion and the conditions' other details changed."""

    def true_conditions(node: Mapping[str, Any]) -> set[str]:
        return {
            str(c.get("type"))
            for c in status_of(node).get("conditions") or ()
            if isinstance(c, Mapping) and c.get("status") == "True"
        }

    if true_conditions(old) != true_conditions(new):
        return False

    def rest(node: Mapping[str, Any]) -> tuple[Obj, Obj, Obj]:
        """The node without resourceVersion and conditions, as three views compared by value (no copy: a
        thousand nodes report their status, images included, every 5 minutes)."""
        top = {k: v for k, v in node.items() if k not in ("metadata", "status")}
        meta = {k: v for k, v in (node.get("metadata") or {}).items() if k != "resourceVersion"}
        status = {k: v for k, v in (node.get("status") or {}).items() if k != "conditions"}
        return top, meta, status

    return rest(old) == rest(new)
