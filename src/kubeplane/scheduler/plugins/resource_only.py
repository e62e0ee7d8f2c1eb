"""Filter verdicts by arithmetic for a cycle where only NodeResourcesFit depends on a node's pods.

A cycle is *resource-only* when

* every PreFilter plugin that was not skipped has no PreFilter extensions (so adding or removing a pod changes no
  cycle state: InterPodAffinity, PodTopologySpread and VolumeRestrictions are skipped for the pod), and
* every Filter plugin that was not skipped is NodeResourcesFit or one of :data:`POD_INDEPENDENT` (their verdict
  reads the node object, never its pods).

NodeResourcesFit's verdict then depends only on the node's allocatable, the sum of its pods' requests and their
number (``node_resources_fit.filter_aggregates``), so a node with pods added or removed need not be cloned:

* :meth:`ResourceOnly.filter_node` is upstream ``RunFilterPluginsWithNominatedPods`` (the nominated pods of equal
  or higher priority added for the first of its two passes) without the clone; the node search uses it for the
  nodes whose reasons it reports and for nodes with nominated pods.
* :meth:`ResourceOnly.select_victims` is upstream ``SelectVictimsOnNode`` (plugins/defaultpreemption, v1.37):
  remove every lower-priority pod, check the fit, reprieve the PDB-violating then the other victims most
  important first while the pod still fits. The generic path in :mod:`.default_preemption` clones the NodeInfo and
  the CycleState and runs the PreFilter extensions and Filter once per reprieve on every examined node (100+ per
  preemptor); here the pod-independent plugins are asked once on the node as it is (a rejection sends the node to
  the generic path, which names the status) and the rest is integer arithmetic over the resources Filter checks
  (``node_resources_fit.checked_resources``). DefaultPreemption keeps each node's result for the next preemptor
  in a :class:`.victim_cache.VictimCache` until one of its inputs changes.

Statuses, victims, their order and PDB violations are the generic paths' (hypothesis tests hold both entry points
to them on random clusters).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import cast

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.backend.nominated_columns import NominatedColumnsSource
from kubeplane.scheduler.framework.interface import Code, CycleState, FilterPlugin, Status, VectorFilterPlugin
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, Resource
from kubeplane.scheduler.plugins.node_affinity import NodeAffinity
from kubeplane.scheduler.plugins.node_declared_features import NodeDeclaredFeatures
from kubeplane.scheduler.plugins.node_name import NodeName
from kubeplane.scheduler.plugins.node_resources_fit import NAME as FIT
from kubeplane.scheduler.plugins.node_resources_fit import (
    REASON_PODS,
    NodeResourcesFit,
    checked_resources,
    filter_aggregates,
)
from kubeplane.scheduler.plugins.node_unschedulable import NodeUnschedulable
from kubeplane.scheduler.plugins.taint_toleration import TaintToleration
from kubeplane.scheduler.plugins.victim_cache import Checks, Selection, VictimCache

__all__ = ["GENERIC", "POD_INDEPENDENT", "ResourceOnly", "Selection", "Split", "VictimCache"]

POD_INDEPENDENT: tuple[type, ...] = (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeDeclaredFeatures)
"""Filter plugins whose verdict on a node reads the node object and cluster objects, never the node's pods."""

Split = Callable[[list[PodInfo]], tuple[list[PodInfo], list[PodInfo], Callable[[PodInfo], object]]]
"""Sorts the potential victims most important first and splits them into (PDB-violating, others), with the
importance key (the victims are re-sorted by it when both groups gave some)."""

_Amounts = list[int]


class _Generic:
    """:data:`GENERIC`'s type."""

    __slots__ = ()


GENERIC = _Generic()
"""Returned by :meth:`ResourceOnly.filter_node` when a plugin's status is an error: the generic path words it."""


_STATE_KEY = "kubeplane/ResourceOnly"


@dataclass(frozen=True, slots=True)
class _Kept:
    """The cycle's :meth:`ResourceOnly.for_pod` answer in the CycleState; it reads the state and never changes
    it, so a clone of the state shares it."""

    pod: PodInfo
    fast: ResourceOnly | None

    def clone(self) -> _Kept:
        return self


class ResourceOnly:
    """One resource-only cycle (see the module docstring); :meth:`for_pod` says whether the cycle is one."""

    __slots__ = (
        "_amounts",
        "_checks",
        "_columns_source",
        "_filters",
        "_independent",
        "_nominated_cache",
        "_nominated_nodes",
        "_statuses",
        "fwk",
        "pod",
        "state",
    )

    def __init__(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        *,
        checks: Sequence[tuple[str, int, bool, str]],
        filters: Sequence[FilterPlugin],
    ) -> None:
        self.fwk = fwk
        self.state = state
        self.pod = pod
        self._checks = tuple(checks)
        self._filters = tuple((p, p.name(), type(p) is NodeResourcesFit) for p in filters)
        """The Filter plugins that run, in order: (plugin, name, is NodeResourcesFit)."""
        self._independent = tuple(p for p in filters if type(p) is not NodeResourcesFit)
        self._amounts = _amounts_of(tuple(name for name, _, _, _ in checks))
        nominator = fwk.handle.nominator
        names = nominator.nominated_node_names()
        # The queue hands a live set view (its nominations do not change during a cycle): no copy of ~1000 names.
        self._nominated_nodes: Collection[str] = names if isinstance(names, AbstractSet) else frozenset(names)
        self._columns_source = nominator if isinstance(nominator, NominatedColumnsSource) else None
        self._nominated_cache: dict[str, list[PodInfo]] = {}
        self._statuses: dict[int, Status] = {}

    @classmethod
    def for_pod(cls, fwk: Framework, state: CycleState, pod: PodInfo) -> ResourceOnly | None:
        """The fast path for this cycle (``state`` after PreFilter), or None when a plugin that is not skipped
        could change its verdict as pods leave or join a node (or NodeResourcesFit is not there to decide).
        Kept in ``state``, so the node search and preemption of one cycle share it (and its nominated pods)."""
        kept = state.get(_STATE_KEY)
        if isinstance(kept, _Kept) and kept.pod is pod:
            return kept.fast
        fast = cls._new(fwk, state, pod)
        state.write(_STATE_KEY, _Kept(pod, fast))
        return fast

    @classmethod
    def _new(cls, fwk: Framework, state: CycleState, pod: PodInfo) -> ResourceOnly | None:
        skip = state.skip_filter_plugins
        for pre in fwk.pre_filter_plugins:
            if pre.name() not in skip and pre.pre_filter_extensions() is not None:
                return None
        filters: list[FilterPlugin] = []
        has_fit = False
        for plugin in fwk.filter_plugins:
            if plugin.name() in skip:
                continue
            if type(plugin) is NodeResourcesFit:
                has_fit = True
            elif type(plugin) not in POD_INDEPENDENT:
                return None
            filters.append(plugin)
        checks = checked_resources(state) if has_fit else None
        if checks is None:
            return None
        return cls(fwk, state, pod, checks=checks, filters=filters)

    def filter_node(self, node: NodeInfo) -> Status | _Generic | None:
        """Upstream ``RunFilterPluginsWithNominatedPods`` on ``node`` with the nominator's pods, or
        :data:`GENERIC` when a plugin errs."""
        nominated = self._nominated(node.name)
        if nominated:
            requested = node.requested.clone()
            for p in nominated:
                requested.add(p.requests)
            status = self._run(node, requested, len(node.pods) + len(nominated))
            if status is not None:
                return status
        return self._run(node, node.requested, len(node.pods))

    def rejected_statuses(self, table: NodeTable, rows: IntArray) -> dict[int, Status] | None:
        """:meth:`filter_node`'s status for each of ``rows`` that every pod-independent plugin passes (by its
        vector path) and NodeResourcesFit rejects, over the NodeTable's columns: which checks fail (with the
        nominated pods for the first pass, alone for the second) determines the reasons and the code. Rows left
        out (a pod-independent plugin rejects them or NodeResourcesFit passes them) are for :meth:`filter_node`.
        None when a pod-independent plugin has no vector path (or there are too many checks for the key)."""
        found = self.rejected_keys(table, rows)
        if found is None:
            return None
        status = self._status
        return {row: status(key) for row, key in zip(*found, strict=True)}

    def rejected_keys(
        self, table: NodeTable, rows: IntArray, *, independent_passed: bool = False
    ) -> tuple[list[int], list[int]] | None:
        """:meth:`rejected_statuses` as ``(rows, keys)`` lists in the order of ``rows`` (a key's status is
        :meth:`status_of_key`): the node search turns a thousand rejections into statuses without a dict.
        ``independent_passed``: the rows passed the pod-independent plugins' masks already."""
        if not independent_passed:
            ok = self.independent_pass(table, rows)
            if ok is None:
                return None
            rows = rows[ok]
        elif len(self._checks) > 30:
            return None
        if len(rows) == 0:
            return [], []
        keys = self.fit_keys(table, rows, table.requested["pods"][rows], self.used_of(table, rows))
        at = np.flatnonzero(keys)
        return rows[at].tolist(), keys[at].tolist()

    @property
    def checks(self) -> Checks:
        """NodeResourcesFit's checks for the pod: (resource, requested quantity, DRA-backed, reason), in key order."""
        return self._checks

    def without_nominated(self, table: NodeTable, rows: IntArray) -> BoolArray:
        """Which ``rows`` have no nominated pod that the first pass of RunFilterPluginsWithNominatedPods adds
        (conservative: the pod's own nomination counts as one when the queue's columns are read)."""
        if not self._nominated_nodes:
            return np.ones(len(rows), np.bool_)
        nominated = self.nominated_rows(table)
        if nominated is None:
            names, listed = table.names, self._nominated_nodes
            return np.fromiter((names[r] not in listed for r in rows.tolist()), np.bool_, len(rows))
        marked = np.zeros(table.size, np.bool_)
        marked[nominated] = True
        return ~marked[rows]

    def checked_names(self) -> list[str]:
        """The resources NodeResourcesFit checks for the pod, in key order."""
        return [name for name, _, _, _ in self._checks]

    def used_of(self, table: NodeTable, rows: IntArray) -> list[IntArray]:
        """The rows' requested amounts of :meth:`checked_names` (fresh arrays)."""
        return [table.requested_of(name)[rows] for name, _, _, _ in self._checks]

    def independent_pass(self, table: NodeTable, rows: IntArray) -> BoolArray | None:
        """Which ``rows`` every pod-independent Filter plugin passes, by their vector paths; None when one has
        none (or there are too many checks for a key)."""
        if len(self._checks) > 30:
            return None
        ok = np.ones(len(rows), np.bool_)
        for plugin, name, is_fit in self._filters:
            if is_fit:
                continue
            if not self.fwk.has_filter_vector.get(name):
                return None
            ok &= cast(VectorFilterPlugin, plugin).filter_vector(self.state, self.pod, table, rows)
        return ok

    def fit_keys(
        self, table: NodeTable, rows: IntArray, pods: IntArray, used: list[IntArray], *, alone: IntArray | None = None
    ) -> IntArray:
        """NodeResourcesFit's :meth:`status_of_key` key per row (0: it passes) as if the rows held ``pods`` pods
        requesting ``used`` (per :meth:`checked_names`): both passes of RunFilterPluginsWithNominatedPods, the
        first one's key when it fails. The first pass is computed only on the rows that have nominated pods (it
        is the second one elsewhere). ``alone``: the second pass's keys when the caller has them (kept across
        cycles, :meth:`fit_keys_alone`); the result is then a new array all the same."""
        allocatable = [table.allocatable_of(name)[rows] for name, _, _, _ in self._checks]
        max_pods = table.allocatable["pods"][rows]
        keys = self._failing(pods, used, allocatable, max_pods) if alone is None else alone.copy()
        nominated = self.nominated_extra(table, rows)
        if nominated is not None:
            extra_pods, extra = nominated
            at = np.flatnonzero(extra_pods)
            if len(at):
                first = self._failing(
                    pods[at] + extra_pods[at],
                    [u[at] + e[at] for u, e in zip(used, extra, strict=True)],
                    [a[at] for a in allocatable],
                    max_pods[at],
                )
                keys[at] = np.where(first != 0, first, keys[at])
        return keys

    def fit_keys_alone(self, table: NodeTable, rows: IntArray, pods: IntArray, used: list[IntArray]) -> IntArray:
        """:meth:`fit_keys` without the nominated pods (the second pass alone): a function of each row's own
        numbers and the pod's checks, so callers may keep it per row across cycles."""
        allocatable = [table.allocatable_of(name)[rows] for name, _, _, _ in self._checks]
        return self._failing(pods, used, allocatable, table.allocatable["pods"][rows])

    def _failing(
        self, pods: IntArray, used: list[IntArray], allocatable: list[IntArray], max_pods: IntArray
    ) -> IntArray:
        """One Filter pass's key per position (0: NodeResourcesFit passes)."""
        k = len(self._checks)
        key = (pods + 1 > max_pods).astype(np.int64)
        for i, (_name, quantity, dra_backed, _reason) in enumerate(self._checks):
            cap = allocatable[i]
            fail = quantity > cap - used[i]
            if dra_backed:
                fail &= cap != 0
            key |= fail.astype(np.int64) << (1 + i)
            key |= (fail & (quantity > cap)).astype(np.int64) << (1 + k + i)
        return key

    def status_of_key(self, key: int) -> Status:
        """The status of a key :meth:`rejected_keys` gave (the same object for the same key)."""
        return self._status(key)

    def nominated_extra(self, table: NodeTable, rows: IntArray) -> tuple[IntArray, list[IntArray]] | None:
        """Per position of ``rows``: how many pods the first pass of RunFilterPluginsWithNominatedPods adds and
        their summed requests per check; None when no row has any. Read from the queue's
        :class:`.nominated_columns.NominatedColumns` when the nominator keeps them (the pod's own nomination
        taken out), else node by node."""
        source = self._columns_source
        if source is None:
            return self._nominated_extra_per_node(table, rows)
        if not self._nominated_nodes:
            return None
        cols = source.nominated_columns(table, self.pod.priority)
        extra_pods = cols.count[rows]
        if not extra_pods.any():
            return None
        extra = [cols.amount(name)[rows] for name, _, _, _ in self._checks]
        own = source.nominated_node_of(self.pod.uid)
        own_row = table.index.get(own, -1) if own is not None else -1
        if own_row >= 0:
            exact = self._nominated(table.names[own_row])
            amounts = [0] * len(self._checks)
            for p in exact:
                _add(amounts, self._amounts(p.requests))
            for j in np.flatnonzero(rows == own_row).tolist():
                extra_pods[j] = len(exact)
                for i, a in enumerate(amounts):
                    extra[i][j] = a
        return extra_pods, extra

    def nominated_rows(self, table: NodeTable) -> IntArray | None:
        """The rows where the first pass of RunFilterPluginsWithNominatedPods may add pods (a superset: the pod's
        own nomination is counted), from the queue's columns; None when the nominator keeps none."""
        source = self._columns_source
        if source is None:
            return None
        if not self._nominated_nodes:
            return np.zeros(0, np.int64)
        return np.flatnonzero(source.nominated_columns(table, self.pod.priority).count)

    def _nominated_extra_per_node(self, table: NodeTable, rows: IntArray) -> tuple[IntArray, list[IntArray]] | None:
        nominated = self._nominated_rows(table, rows)
        if not nominated:
            return None
        k = len(self._checks)
        extra_pods = np.zeros(len(rows), np.int64)
        extra = [np.zeros(len(rows), np.int64) for _ in range(k)]
        for j, others in nominated:
            extra_pods[j] = len(others)
            for p in others:
                for i, amount in enumerate(self._amounts(p.requests)):
                    extra[i][j] += amount
        return extra_pods, extra

    def _nominated_rows(self, table: NodeTable, rows: IntArray) -> list[tuple[int, list[PodInfo]]]:
        """(position in ``rows``, the nominated pods the first pass adds) for the rows that have some."""
        nominated = self._nominated_nodes
        if not nominated:
            return []
        out: list[tuple[int, list[PodInfo]]] = []
        if len(rows) <= len(nominated):
            names = table.names
            for j, r in enumerate(rows.tolist()):
                others = self._nominated(names[r])
                if others:
                    out.append((j, others))
            return out
        where = {r: j for j, r in enumerate(rows.tolist())}
        for name in nominated:
            at = where.get(table.index.get(name, -1))
            if at is not None:
                others = self._nominated(name)
                if others:
                    out.append((at, others))
        return out

    def _status(self, key: int) -> Status:
        """NodeResourcesFit's status for a key (bit 0 the pod count, then one bit per check failing, then one per
        check failing beyond the whole allocatable); the same object for the same key."""
        status = self._statuses.get(key)
        if status is None:
            status = self._statuses[key] = self._new_status(key)
        return status

    def _new_status(self, key: int) -> Status:
        k = len(self._checks)
        reasons = [REASON_PODS] if key & 1 else []
        reasons += [reason for i, (_n, _q, _d, reason) in enumerate(self._checks) if key >> (1 + i) & 1]
        code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if key >> (1 + k) else Code.UNSCHEDULABLE
        return Status(code, tuple(reasons)).with_plugin(FIT)

    def _run(self, node: NodeInfo, requested: Resource, num_pods: int) -> Status | _Generic | None:
        """``RunFilterPlugins`` on ``node`` as if its pods' requests summed to ``requested``, ``num_pods`` of them."""
        state, pod = self.state, self.pod
        for plugin, name, is_fit in self._filters:
            if is_fit:
                status = filter_aggregates(state, node.allocatable, requested, num_pods)
            else:
                status = plugin.filter(state, pod, node)
            if status is not None and status.code != Code.SUCCESS:
                return status.with_plugin(name) if status.is_rejected() else GENERIC
        return None

    def select_victims(
        self,
        node: NodeInfo,
        split: Split,
        *,
        cache: VictimCache | None = None,
        now: float = 0.0,
        screened: bool = False,
    ) -> Selection | None:
        """``SelectVictimsOnNode`` on ``node`` (left unchanged), or None when a pod-independent plugin rejects
        the node: the generic path then gives its status. With ``cache``, a node whose inputs did not change
        since an earlier preemptor's dry run gets that result (``now``: the clock ``split`` orders by).
        ``screened``: the pod-independent plugins' vector paths passed the node already
        (:func:`.preemption_screen.screen`), so they are not asked again."""
        pod = self.pod
        nominated = self._nominated(node.name)
        entry = cache.get(node, pod.priority, self._checks, nominated, now) if cache is not None else None
        if entry is not None and entry.no_victims:
            return [], 0, entry.selection[2]
        if entry is None:
            potential = [p for p in node.pods if p.priority < pod.priority]
            if not potential:
                selection: Selection = ([], 0, Status.unresolvable("No preemption victims found for incoming pod"))
                if cache is not None:
                    cache.put(node, pod.priority, self._checks, nominated, None, selection, no_victims=True)
                return selection
        if not screened:
            for plugin in self._independent:
                status = plugin.filter(self.state, pod, node)
                if status is not None and status.code != Code.SUCCESS:
                    return None
        if entry is not None:
            return entry.selection  # the same victims list each time (read-only; pick_one's memo keys on it)
        selection = self._select(node, split, potential, nominated)
        if cache is not None:
            # The order of victims with and without a startTime depends on the clock (upstream GetPodStartTime).
            clock = len({bool(p.status.get("startTime")) for p in potential}) > 1
            cache.put(node, pod.priority, self._checks, nominated, now if clock else None, selection)
        return selection

    def _select(self, node: NodeInfo, split: Split, potential: list[PodInfo], nominated: list[PodInfo]) -> Selection:
        amounts = self._amounts
        allocatable = node.allocatable
        capacity = amounts(allocatable)
        k = len(capacity)
        # (index, request, capacity, failing bit, unresolvable bit); a DRA-backed resource is not checked on a
        # node with no allocatable for it.
        active = [
            (i, quantity, capacity[i], 1 << (1 + i), (1 << (1 + k + i)) if quantity > capacity[i] else 0)
            for i, (_name, quantity, dra_backed, _reason) in enumerate(self._checks)
            if not (dra_backed and capacity[i] == 0)
        ]
        max_pods = allocatable.allowed_pod_number
        used = amounts(node.requested)
        for p in potential:
            _sub(used, amounts(p.requests))
        count = len(node.pods) - len(potential)
        extra = [0] * k
        for p in nominated:
            _add(extra, amounts(p.requests))
        n_extra = len(nominated)

        def failing(used: _Amounts, count: int) -> int:
            """The :meth:`_status` key of NodeResourcesFit's verdict (0: it passes)."""
            key = 1 if count + 1 > max_pods else 0
            for i, quantity, cap, bit, unresolvable in active:
                if quantity > cap - used[i]:
                    key |= bit | unresolvable
            return key

        def verdict(used: _Amounts, count: int) -> int:
            """Both passes of RunFilterPluginsWithNominatedPods: the first one's key when it fails."""
            if n_extra:
                key = failing([u + e for u, e in zip(used, extra, strict=True)], count + n_extra)
                if key:
                    return key
            return failing(used, count)

        key = verdict(used, count)
        if key:
            return [], 0, self._status(key)
        violating, non_violating, importance = split(potential)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for victim in group:
                need = amounts(victim.requests)
                back = [u + n for u, n in zip(used, need, strict=True)]
                if not verdict(back, count + 1):
                    used, count = back, count + 1  # reprieved
                    continue
                victims.append(victim)
                num_violating += 1 if counts else 0
        if violating and non_violating:
            victims.sort(key=importance)  # type: ignore[arg-type]
        return victims, num_violating, None

    def _nominated(self, node_name: str) -> list[PodInfo]:
        """The nominated pods upstream's first Filter pass adds: equal or higher priority, not the pod itself
        (the nominator does not change during a cycle, so each node's are looked up once)."""
        if node_name not in self._nominated_nodes:
            return []
        found = self._nominated_cache.get(node_name)
        if found is None:
            pod = self.pod
            found = [
                p
                for p in self.fwk.nominated_pods_for_node(node_name)
                if p.priority >= pod.priority and p.uid != pod.uid
            ]
            self._nominated_cache[node_name] = found
        return found


def _amounts_of(names: tuple[str, ...]) -> Callable[[Resource], _Amounts]:
    """A function giving a Resource's amounts of ``names`` (cpu in millicores), in that order."""

    def amounts(r: Resource) -> _Amounts:
        out: _Amounts = []
        for name in names:
            if name == "cpu":
                out.append(r.milli_cpu)
            elif name == "memory":
                out.append(r.memory)
            elif name == "ephemeral-storage":
                out.append(r.ephemeral_storage)
            else:
                out.append(r.scalar.get(name, 0))
        return out

    return amounts


def _add(into: _Amounts, amounts: _Amounts) -> None:
    for i, a in enumerate(amounts):
        into[i] += a


def _sub(into: _Amounts, amounts: _Amounts) -> None:
    for i, a in enumerate(amounts):
        into[i] -= a
