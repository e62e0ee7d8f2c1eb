"""A profile's plugins wired per extension point and run as upstream's ``frameworkImpl`` does.

One :class:`Framework` per profile (schedulerName). Plugin instances are created once per profile and shared
between the extension points they implement, as upstream. Ordering rules, error wrapping and messages follow
``pkg/scheduler/framework/runtime/framework.go``:

* PreFilter: a SKIP disables the plugin's Filter for this cycle; UNSCHEDULABLE_AND_UNRESOLVABLE stops at once;
  UNSCHEDULABLE is remembered while the remaining PreFilters run (so preemption sees every plugin's state);
  anything else is an error ``running PreFilter plugin "X": ...``. PreFilterResults are intersected; an empty
  intersection is UNSCHEDULABLE_AND_UNRESOLVABLE "node(s) didn't satisfy plugin(s) [...] simultaneously".
* Filter stops at the first failing plugin; a non-rejection status becomes an error naming the plugin.
* Score: raw scores per plugin, NormalizeScore, range check [0, 100], then weight; total = sum.
* Permit: each plugin that returns WAIT gets its own timer (capped at 15 minutes); the pod waits in the
  binding cycle until every one of them allowed it (upstream ``waitingPod``); a reject or a timeout ends the wait.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.api.durations import format_duration
from kubeplane.metrics import SchedulerMetrics
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NodeScore,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.score_settle import settle as _settle
from kubeplane.scheduler.framework.shape_plan import LIVE, Outcome, ShapePlan, ShapePlans, record
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo

__all__ = ["Framework", "NodePluginScores", "WaitingPod"]

_perf = time.perf_counter

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import IntArray


def _label(status: Status | None) -> str:
    """The ``status`` label of a metric: upstream's ``Code.String()``, ``Success`` for no status."""
    return "Success" if status is None else status.code.label


@dataclass(slots=True)
class NodePluginScores:
    """One node's weighted scores per plugin and their total (upstream ``NodePluginScores``)."""

    name: str
    scores: dict[str, int] = field(default_factory=dict)
    total: int = 0


class WaitingPod:
    """A pod whose Permit returned WAIT: one pending plugin per WAIT, each with its own deadline."""

    def __init__(self, pod: PodInfo, pending: Mapping[str, float], loop: asyncio.AbstractEventLoop) -> None:
        self.pod = pod
        self.pending = dict(pending)
        self.result: asyncio.Future[Status | None] = loop.create_future()

    def allow(self, plugin: str) -> None:
        self.pending.pop(plugin, None)
        if not self.pending and not self.result.done():
            self.result.set_result(None)

    def reject(self, plugin: str, message: str) -> None:
        if not self.result.done():
            self.result.set_result(Status(Code.UNSCHEDULABLE, (message,), plugin))


def _wrap(point: str, plugin: str, status: Status) -> Status:
    return Status(
        Code.ERROR, (f'running {point} plugin "{plugin}": {status.message()}',), plugin, status.error
    ).with_plugin(plugin)


class Framework:
    """The plugins of one profile. ``points`` maps each extension point to ``[(name, weight)]`` in order.

    ``metrics`` (set by the scheduler) times each extension point once per cycle (never per node: Filter is
    timed by neither) and, in cycles whose ``CycleState.record_metrics`` is set, each plugin."""

    metrics: SchedulerMetrics | None = None

    def __init__(
        self,
        *,
        profile_name: str,
        points: Mapping[str, Sequence[tuple[str, int]]],
        plugin_args: Mapping[str, Mapping[str, Any]],
        registry: Registry,
        handle: Handle,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        self.profile_name = profile_name
        # Each profile's plugins see a handle naming this framework (shared services stay shared objects).
        self.handle = dataclasses.replace(handle, framework=self)
        handle = self.handle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.plugins: dict[str, Plugin] = {}
        for entries in points.values():
            for name, _ in entries:
                if name not in self.plugins:
                    self.plugins[name] = registry.new(name, plugin_args.get(name) or {}, handle)

        def get(point: str) -> list[Any]:
            return [self.plugins[name] for name, _ in points.get(point, ())]

        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = get("preEnqueue")
        sorts: list[QueueSortPlugin] = get("queueSort")
        self.queue_sort: QueueSortPlugin | None = sorts[0] if sorts else None
        self.pre_filter_plugins: list[PreFilterPlugin] = get("preFilter")
        self.filter_plugins: list[FilterPlugin] = get("filter")
        self.post_filter_plugins: list[PostFilterPlugin] = get("postFilter")
        self.pre_score_plugins: list[PreScorePlugin] = get("preScore")
        self.score_plugins: list[ScorePlugin] = get("score")
        self.score_weights: dict[str, int] = {name: max(int(w or 1), 1) for name, w in points.get("score", ())}
        self.reserve_plugins: list[ReservePlugin] = get("reserve")
        self.permit_plugins: list[PermitPlugin] = get("permit")
        self.pre_bind_plugins: list[PreBindPlugin] = get("preBind")
        self.bind_plugins: list[BindPlugin] = get("bind")
        self.post_bind_plugins: list[PostBindPlugin] = get("postBind")
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.has_filter_vector: dict[str, bool] = {
            p.name(): isinstance(p, VectorFilterPlugin) for p in self.filter_plugins
        }
        # Capabilities resolved once: runtime_checkable isinstance checks are slow in the per-pod path.
        self._vector_score: dict[str, tuple[Any, Any]] = {}
        for plugin in self.score_plugins:
            ext = plugin.score_extensions()
            normalize_vector = getattr(plugin, "normalize_vector", None)
            if isinstance(plugin, VectorScorePlugin) and (ext is None or normalize_vector is not None):
                self._vector_score[plugin.name()] = (plugin.score_vector, normalize_vector)
        self._score_entries: list[tuple[str, ScorePlugin, int, tuple[Any, Any] | None]] = [
            (p.name(), p, self.score_weights.get(p.name(), 1), self._vector_score.get(p.name()))
            for p in self.score_plugins
        ]
        """Per Score plugin, in order: name, plugin, weight, vector path (the per-cycle loop's lookups, once)."""
        self._plans_pre_filter: list[Callable[[PodInfo], bool] | None] = [
            getattr(p, "plans_pre_filter", None) for p in self.pre_filter_plugins
        ]
        self._plans_pre_score: list[Callable[[PodInfo], bool] | None] = [
            getattr(p, "plans_pre_score", None) for p in self.pre_score_plugins
        ]
        planned = any(self._plans_pre_filter) or any(self._plans_pre_score)
        self.shape_plans: ShapePlans | None = (
            ShapePlans(len(self.pre_filter_plugins), len(self.pre_score_plugins)) if planned else None
        )
        """Per-shape PreFilter/PreScore outcomes of the plugins that opt in (:mod:`.shape_plan`); None disables
        them (no plugin opts in, or a test compares with the unplanned path)."""

    # --- metrics -------------------------------------------------------------------------------------

    def _point_done(self, point: str, status: Status | None, start: float) -> None:
        metrics = self.metrics
        if metrics is not None:
            metrics.extension_point(point, _label(status), self.profile_name, _perf() - start)

    def _plugin_done(self, name: str, point: str, status: Status | None, start: float) -> None:
        """One plugin's run in a sampled cycle (callers pass ``start`` 0.0 when the cycle is not sampled)."""
        metrics = self.metrics
        if start and metrics is not None:
            metrics.plugin(name, point, _label(status), _perf() - start)

    def _sampled(self, state: CycleState) -> bool:
        return state.record_metrics and self.metrics is not None

    # --- introspection -------------------------------------------------------------------------------

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> the cluster events that may make a pod it rejected schedulable (EnqueueExtensions).

        Plugins that reject pods but do not declare events get every event, as upstream."""
        from kubeplane.scheduler.framework.interface import ActionType, ClusterEvent

        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, plugin in self.plugins.items():
            if isinstance(plugin, EnqueueExtensions):
                out[name] = list(plugin.events_to_register())
            else:
                out[name] = [ClusterEventWithHint(ClusterEvent("*", ActionType.all()))]
        return out

    # --- PreEnqueue / PreFilter / Filter -------------------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: PodInfo) -> Status | None:
        for plugin in self.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if status is not None and status.code != Code.SUCCESS:
                status = status.with_plugin(plugin.name())
                if not status.is_rejected():
                    return _wrap("PreEnqueue", plugin.name(), status)
                return status
        return None

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        assert self.queue_sort is not None
        return self.queue_sort.less(a, b)

    @property
    def queue_sort_key(self) -> Callable[[QueuedPodInfo], Any] | None:
        """The QueueSort plugin's ``sort_key`` (a key whose ``<`` is its ``less``) when it has one, else None."""
        return getattr(self.queue_sort, "sort_key", None)

    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """Returns the merged PreFilterResult, the status, and the plugins that rejected the pod."""
        start = _perf()
        out = self._run_pre_filter_plugins(state, pod, nodes)
        self._point_done("PreFilter", out[1], start)
        return out

    def _plan(self, state: CycleState, pod: PodInfo, sampled: bool) -> ShapePlan | None:
        """This cycle's per-shape plan, kept on ``state`` for PreScore; None for a cycle that runs every plugin live
        (sampled for per-plugin metrics, recorded for explain, no plans, a pod without a shape)."""
        plans = self.shape_plans
        if plans is None or sampled or state.recorder is not None:
            return None
        plan = state.shape_plan = plans.plan(pod)
        return plan

    def _run_pre_filter_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        sampled = self._sampled(state)
        plan = self._plan(state, pod, sampled)
        slots = plan.pre_filter if plan is not None else None
        result: PreFilterResult | None = None
        plugins_with_nodes: list[str] = []
        returned: Status | None = None
        rejected: set[str] = set()
        for i, plugin in enumerate(self.pre_filter_plugins):
            name = plugin.name()
            slot = slots[i] if slots is not None else LIVE
            if type(slot) is Outcome:  # replayed: what this shape's recording pod got and wrote
                r, status = slot.result, slot.status
                for key, value in slot.writes:
                    state.write(key, value)
            else:
                t0 = _perf() if sampled else 0.0
                try:
                    opts = slot is None and (fn := self._plans_pre_filter[i]) is not None and fn(pod)
                    before = dict(state.entries()) if opts else None
                    r, status = plugin.pre_filter(state, pod, nodes)
                except Exception as exc:  # a plugin bug must not kill the scheduler
                    return None, _wrap("PreFilter", name, Status.from_error(exc)), rejected
                if slots is not None and slot is None:
                    slots[i] = record(before, state, r, status) if before is not None else LIVE
                if t0:
                    self._plugin_done(name, "PreFilter", status, t0)
            if state.recorder is not None:
                state.recorder.pre_filter[name] = status
            if status is not None and status.code == Code.SKIP:
                state.skip_filter_plugins.add(name)
                continue
            if status is not None and status.code != Code.SUCCESS:
                status = status.with_plugin(name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    rejected.add(name)
                    return None, status, rejected
                if status.code == Code.UNSCHEDULABLE:
                    rejected.add(name)
                    returned = status
                    continue
                return None, _wrap("PreFilter", name, status), rejected
            if r is not None and r.node_names is not None:
                plugins_with_nodes.append(name)
                result = r if result is None else result.merge(r)
                if result.node_names is not None and not result.node_names:
                    if len(plugins_with_nodes) == 1:
                        msg = f"node(s) didn't satisfy plugin {plugins_with_nodes[0]}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(plugins_with_nodes)}] simultaneously"
                    rejected.update(plugins_with_nodes)
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,)), rejected
        if returned is not None:
            return result, returned, rejected
        if result is not None and result.node_names is not None:
            rejected.update(plugins_with_nodes)
        return result, None, rejected

    def run_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if skip and plugin.name() in skip:
                continue
            status = plugin.filter(state, pod, node)
            if status is not None and status.code != Code.SUCCESS:
                name = plugin.name()
                if not status.is_rejected():
                    return _wrap("Filter", name, status)
                return status.with_plugin(name)
        return None

    def run_all_filter_plugins(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> dict[str, Status | None]:
        """Every Filter plugin's verdict on one node, not stopping at the first failure (explain). Keyed by plugin,
        so an Error keeps the plugin's own message (upstream's plugin tests compare it; ``run_filter_plugins``
        adds the ``running Filter plugin`` prefix for the cycle's error)."""
        out: dict[str, Status | None] = {}
        for plugin in self.filter_plugins:
            name = plugin.name()
            if name in state.skip_filter_plugins:
                out[name] = Status.skip()
                continue
            try:
                status = plugin.filter(state, pod, node)
            except Exception as exc:
                status = Status.from_error(exc)
            out[name] = None if status is None or status.code == Code.SUCCESS else status.with_plugin(name)
        return out

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Tell every PreFilter plugin with extensions that ``pod_to_add`` joined ``node`` (upstream
        ``RunPreFilterExtensionAddPod``); plugins skipped at PreFilter are left out."""
        return self._run_pre_filter_extension(state, pod, pod_to_add, node, remove=False)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        """Tell every PreFilter plugin with extensions that ``pod_to_remove`` left ``node`` (upstream
        ``RunPreFilterExtensionRemovePod``)."""
        return self._run_pre_filter_extension(state, pod, pod_to_remove, node, remove=True)

    def _run_pre_filter_extension(
        self, state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo, *, remove: bool
    ) -> Status | None:
        point = "RemovePod on PreFilter" if remove else "AddPod on PreFilter"
        for plugin in self.pre_filter_plugins:
            if plugin.name() in state.skip_filter_plugins:
                continue
            ext = plugin.pre_filter_extensions()
            if ext is None:
                continue
            status = (ext.remove_pod if remove else ext.add_pod)(state, pod, other, node)
            if status is not None and status.code != Code.SUCCESS:
                return _wrap(point, plugin.name(), status)
        return None

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.handle.nominator.nominated_pods_for_node(node_name)

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        nominated: Sequence[PodInfo] | None = None,
    ) -> Status | None:
        """Upstream ``RunFilterPluginsWithNominatedPods``: when pods of equal or higher priority are nominated
        to the node, the pod must fit both with them (added through PreFilterExtensions) and without them.
        ``nominated`` defaults to the nominator's pods for the node."""
        if nominated is None:
            nominated = self.nominated_pods_for_node(node.name)
        others = [p for p in nominated if p.priority >= pod.priority and p.uid != pod.uid]
        if others:
            state_with = state.clone()
            node_with = node.clone()
            for other in others:
                node_with.add_pod(other)
                status = self.run_pre_filter_extension_add_pod(state_with, pod, other, node_with)
                if status is not None:
                    return status
            status = self.run_filter_plugins(state_with, pod, node_with)
            if status is not None:
                return status
        return self.run_filter_plugins(state, pod, node)

    def run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        start = _perf()
        out = self._run_post_filter_plugins(state, pod, statuses)
        self._point_done("PostFilter", out[1], start)
        return out

    def _run_post_filter_plugins(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        reasons: list[str] = []
        result: PostFilterResult | None = None
        sampled = self._sampled(state)
        for plugin in self.post_filter_plugins:
            t0 = _perf() if sampled else 0.0
            r, status = plugin.post_filter(state, pod, statuses)
            if t0:
                self._plugin_done(plugin.name(), "PostFilter", status, t0)
            if status is None or status.code == Code.SUCCESS:
                return r, status
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, status.with_plugin(plugin.name())
            if not status.is_rejected():
                return None, _wrap("PostFilter", plugin.name(), status)
            if r is not None:
                result = r
            reasons.extend(status.reasons)
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons))

    # --- Score -------------------------------------------------------------------------------------------

    def run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        start = _perf()
        status = self._run_pre_score_plugins(state, pod, nodes)
        self._point_done("PreScore", status, start)
        return status

    def _run_pre_score_plugins(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        sampled = self._sampled(state)
        plan: ShapePlan | None = state.shape_plan if not sampled and state.recorder is None else None
        slots = plan.pre_score if plan is not None else None
        for i, plugin in enumerate(self.pre_score_plugins):
            slot = slots[i] if slots is not None else LIVE
            if type(slot) is Outcome:  # replayed: what this shape's recording pod got and wrote
                status = slot.status
                for key, value in slot.writes:
                    state.write(key, value)
            else:
                t0 = _perf() if sampled else 0.0
                opts = slot is None and (fn := self._plans_pre_score[i]) is not None and fn(pod)
                before = dict(state.entries()) if opts else None
                status = plugin.pre_score(state, pod, nodes)
                if slots is not None and slot is None:
                    slots[i] = record(before, state, None, status) if before is not None else LIVE
                if t0:
                    self._plugin_done(plugin.name(), "PreScore", status, t0)
            if state.recorder is not None:
                state.recorder.pre_score[plugin.name()] = status
            if status is None or status.code == Code.SUCCESS:
                continue
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(plugin.name())
                continue
            return _wrap("PreScore", plugin.name(), status)
        return None

    def active_score_plugins(self, state: CycleState) -> list[ScorePlugin]:
        return [p for p in self.score_plugins if p.name() not in state.skip_score_plugins]

    def raw_scores(
        self, state: CycleState, pod: PodInfo, plugin: ScorePlugin, nodes: Sequence[NodeInfo]
    ) -> list[NodeScore] | Status:
        scores: list[NodeScore] = []
        for node in nodes:
            value, status = plugin.score(state, pod, node)
            if status is not None and status.code != Code.SUCCESS:
                return _wrap("Score", plugin.name(), status)
            scores.append(NodeScore(node.name, value))
        return scores

    def normalize(self, state: CycleState, pod: PodInfo, plugin: ScorePlugin, scores: list[NodeScore]) -> Status | None:
        ext = plugin.score_extensions()
        if ext is not None:
            status = ext.normalize_score(state, pod, scores)
            if status is not None and status.code != Code.SUCCESS:
                return _wrap("NormalizeScore", plugin.name(), status)
        for s in scores:
            if s.score > MAX_NODE_SCORE or s.score < MIN_NODE_SCORE:
                return Status.from_error(
                    f"plugin {plugin.name()!r} returns an invalid score {s.score}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
        return None

    def run_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status | None]:
        """Weighted scores per node (upstream ``RunScorePlugins``)."""
        start = _perf()
        out = self._run_score_plugins(state, pod, nodes)
        self._point_done("Score", out[1], start)
        return out

    def _run_score_plugins(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status | None]:
        result = [NodePluginScores(n.name) for n in nodes]
        sampled = self._sampled(state)
        for plugin in self.active_score_plugins(state):
            t0 = _perf() if sampled else 0.0
            scores = self.raw_scores(state, pod, plugin, nodes)
            if t0:
                self._plugin_done(plugin.name(), "Score", scores if isinstance(scores, Status) else None, t0)
            if isinstance(scores, Status):
                return [], scores
            status = self.normalize(state, pod, plugin, scores)
            if status is not None:
                return [], status
            weight = self.score_weights.get(plugin.name(), 1)
            name = plugin.name()
            for entry, s in zip(result, scores, strict=True):
                weighted = s.score * weight
                entry.scores[name] = weighted
                entry.total += weighted
        return result, None

    def score_vector_path(self, name: str) -> tuple[Any, Any] | None:
        """The plugin's ``(score_vector, normalize_vector or None)`` when it scores rows of a NodeTable."""
        return self._vector_score.get(name)

    def vector_scores(
        self, state: CycleState, pod: PodInfo, rows: Any, nodes: Sequence[NodeInfo], table: Any
    ) -> tuple[Any, Status | None]:
        """Totals for ``rows`` of ``table`` as an int64 array, using score_vector where a plugin offers it."""
        start = _perf()
        out = self._vector_scores(state, pod, rows, nodes, table)
        self._point_done("Score", out[1], start)
        return out

    def _vector_scores(
        self, state: CycleState, pod: PodInfo, rows: Any, nodes: Sequence[NodeInfo], table: Any
    ) -> tuple[Any, Status | None]:
        total = np.zeros(len(rows), np.int64)
        sampled = self._sampled(state)
        skip = state.skip_score_plugins
        # Vector plugins' normalised scores wait in ``pending`` and are range-checked and summed together (two
        # reductions and one product for all of them, not four array operations each); the first out-of-range
        # one, in plugin order, is the error, and pending scores are settled before any per-node plugin runs,
        # so errors come in upstream's order.
        pending: list[tuple[str, IntArray, int]] = []
        for name, plugin, weight, vector in self._score_entries:
            if name in skip:
                continue
            if vector is not None:
                score_vector, normalize_vector = vector
                t0 = _perf() if sampled else 0.0
                raw = score_vector(state, pod, table, rows)
                if t0:
                    self._plugin_done(name, "Score", None, t0)
                if normalize_vector is not None:
                    raw = normalize_vector(state, pod, raw)
                if not len(raw):
                    total += raw * weight
                    continue
                if raw.dtype == np.int64:
                    pending.append((name, raw, weight))
                    continue
                status = _settle(total, pending)
                if status is not None:
                    return total, status
                status = _settle(total, [(name, raw, weight)])
                if status is not None:
                    return total, status
                continue
            status = _settle(total, pending)
            if status is not None:
                return total, status
            t0 = _perf() if sampled else 0.0
            scores = self.raw_scores(state, pod, plugin, nodes)
            if t0:
                self._plugin_done(name, "Score", scores if isinstance(scores, Status) else None, t0)
            if isinstance(scores, Status):
                return total, scores
            status = self.normalize(state, pod, plugin, scores)
            if status is not None:
                return total, status
            total += np.fromiter((s.score for s in scores), np.int64, len(scores)) * weight
        return total, _settle(total, pending)

    # --- Reserve / Permit / Bind ---------------------------------------------------------------------------

    def run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        status = self._run_reserve_plugins_reserve(state, pod, node_name)
        self._point_done("Reserve", status, start)
        return status

    def _run_reserve_plugins_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        sampled = self._sampled(state)
        for plugin in self.reserve_plugins:
            t0 = _perf() if sampled else 0.0
            status = plugin.reserve(state, pod, node_name)
            if t0:
                self._plugin_done(plugin.name(), "Reserve", status, t0)
            if status is not None and status.code != Code.SUCCESS:
                if status.is_rejected():
                    return status.with_plugin(plugin.name())
                return _wrap("Reserve", plugin.name(), status)
        return None

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """Unreserve in reverse order, as upstream."""
        start = _perf()
        for plugin in reversed(self.reserve_plugins):
            plugin.unreserve(state, pod, node_name)
        self._point_done("Unreserve", None, start)

    def run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        status = self._run_permit_plugins(state, pod, node_name)
        self._point_done("Permit", status, start)
        return status

    def _run_permit_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        pending: dict[str, float] = {}
        sampled = self._sampled(state)
        for plugin in self.permit_plugins:
            t0 = _perf() if sampled else 0.0
            status, timeout = plugin.permit(state, pod, node_name)
            if t0:
                self._plugin_done(plugin.name(), "Permit", status, t0)
            if status is None or status.code == Code.SUCCESS:
                continue
            name = plugin.name()
            if status.is_rejected():
                return status.with_plugin(name)
            if status.code == Code.WAIT:
                pending[name] = min(max(timeout, 0.0), 15 * 60.0)  # upstream maxTimeout
                continue
            return _wrap("Permit", name, status)
        if pending:
            self.waiting_pods[pod.uid] = WaitingPod(pod, pending, asyncio.get_running_loop())
            return Status(Code.WAIT, ("one or more plugins asked to wait and no plugin rejected pod",))
        return None

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    async def wait_on_permit(self, pod: PodInfo) -> Status | None:
        waiting = self.waiting_pods.get(pod.uid)
        if waiting is None:
            return None
        try:
            timers = [
                asyncio.ensure_future(self._permit_timer(waiting, name, timeout))
                for name, timeout in waiting.pending.items()
            ]
            status = await waiting.result
            for t in timers:
                t.cancel()
            return status
        finally:
            self.waiting_pods.pop(pod.uid, None)

    async def _permit_timer(self, waiting: WaitingPod, plugin: str, timeout: float) -> None:
        await self.handle.clock.sleep(timeout)
        waited = format_duration(round(timeout * 1e9))  # Go's %v of a time.Duration (waiting_pods_map.go)
        waiting.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")

    def will_wait_on_permit(self, pod: PodInfo) -> bool:
        """Whether :meth:`wait_on_permit` will block for ``pod`` (upstream ``WillWaitOnPermit``)."""
        return pod.uid in self.waiting_pods

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``RunPreBindPreFlights``: None (Success) when one or more PreBind plugins will work for the
        pod, SKIP when all skip (or there are none), an Error at the first plugin's error or unsupported code.
        Records the skipping plugins in ``state.skip_pre_bind_plugins`` (PreBind then passes them by)."""
        start = _perf()
        status = self._run_pre_bind_pre_flights(state, pod, node_name)
        self._point_done("PreBindPreFlight", status, start)
        return status

    def _run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        sampled = self._sampled(state)
        skipped: set[str] = set()
        result: Status | None = Status.skip()
        for plugin in self.pre_bind_plugins:
            name = plugin.name()
            t0 = _perf() if sampled else 0.0
            status = plugin.pre_bind_pre_flight(state, pod, node_name)
            if t0:
                self._plugin_done(name, "PreBindPreFlight", status, t0)
            if status is None or status.code == Code.SUCCESS:
                result = None
            elif status.code == Code.SKIP:
                skipped.add(name)
            elif status.code == Code.ERROR:
                return Status(
                    Code.ERROR, (f'running PreBindPreFlight "{name}": {status.message()}',), name, status.error
                )
            else:
                return Status.from_error(
                    f'PreBindPreFlight {name} returned "{status.code.label}", which is unsupported. '
                    "It is supposed to return Success, Skip, or Error status"
                )
        state.skip_pre_bind_plugins = skipped
        return result

    async def run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        status = await self._run_pre_bind_plugins(state, pod, node_name)
        self._point_done("PreBind", status, start)
        return status

    async def _run_pre_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        sampled = self._sampled(state)
        for plugin in self.pre_bind_plugins:
            if plugin.name() in state.skip_pre_bind_plugins:
                continue
            t0 = _perf() if sampled else 0.0
            status = await plugin.pre_bind(state, pod, node_name)
            if t0:
                self._plugin_done(plugin.name(), "PreBind", status, t0)
            if status is not None and status.code not in (Code.SUCCESS, Code.SKIP):
                if status.is_rejected():
                    return status.with_plugin(plugin.name())
                return _wrap("PreBind", plugin.name(), status)
        return None

    async def run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        start = _perf()
        status = await self._run_bind_plugins(state, pod, node_name)
        self._point_done("Bind", status, start)
        return status

    async def _run_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if not self.bind_plugins:
            return Status(Code.SKIP)
        status: Status | None = None
        sampled = self._sampled(state)
        for plugin in self.bind_plugins:
            t0 = _perf() if sampled else 0.0
            status = await plugin.bind(state, pod, node_name)
            if t0:
                self._plugin_done(plugin.name(), "Bind", status, t0)
            if status is not None and status.code == Code.SKIP:
                continue
            if status is not None and status.code != Code.SUCCESS:
                if status.is_rejected():
                    return status.with_plugin(plugin.name())
                return _wrap("Bind", plugin.name(), status)
            return None
        return status

    def run_post_bind_plugins(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        start = _perf()
        for plugin in self.post_bind_plugins:
            plugin.post_bind(state, pod, node_name)
        self._point_done("PostBind", None, start)
