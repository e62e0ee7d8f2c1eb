"""DefaultPreemption's victim selection on one node by arithmetic, where only resources can change the verdict.

Upstream ``SelectVictimsOnNode`` (plugins/defaultpreemption, v1.37) clones the NodeInfo and the CycleState,
removes every lower-priority pod through the PreFilter extensions, runs Filter (with nominated pods), then adds
the victims back one by one, most important first (PDB-violating ones before the others), running Filter each
time and keeping a pod when the preemptor still fits. The generic path in :mod:`.default_preemption` does exactly
that; it costs a clone and a Filter run per victim on every examined node (100+ per preemptor).

:class:`ResourceDryRun` gives the same answer without either, for a cycle where nothing but NodeResourcesFit can
change its verdict when pods come and go:

* every PreFilter plugin that was not skipped has no PreFilter extensions (so removing or adding a pod changes no
  cycle state: InterPodAffinity, PodTopologySpread and VolumeRestrictions are skipped for the pod);
* every Filter plugin that was not skipped is NodeResourcesFit or one of :data:`POD_INDEPENDENT` (their verdict
  reads the node object, never its pods).

Then on a node the pod-independent plugins are asked once, on the node as it is (any rejection sends that node to
the generic path, which names the status); NodeResourcesFit's verdict depends only on the node's allocatable, the
sum of its pods' requests and their number (``node_resources_fit.filter_aggregates``), so removing and reprieving
pods is integer arithmetic over the resources Filter checks (``node_resources_fit.checked_resources``), with the
nominated pods of equal or higher priority added for the first of upstream's two passes
(``RunFilterPluginsWithNominatedPods``). Victims, their order, PDB violations and every non-candidate's status
are the generic path's (a hypothesis test holds the two paths equal on random clusters).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from kubeplane.scheduler.framework.interface import Code, CycleState, FilterPlugin, Status
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, Resource
from kubeplane.scheduler.plugins.node_affinity import NodeAffinity
from kubeplane.scheduler.plugins.node_declared_features import NodeDeclaredFeatures
from kubeplane.scheduler.plugins.node_name import NodeName
from kubeplane.scheduler.plugins.node_resources_fit import NAME as FIT
from kubeplane.scheduler.plugins.node_resources_fit import NodeResourcesFit, checked_resources, filter_aggregates
from kubeplane.scheduler.plugins.node_unschedulable import NodeUnschedulable
from kubeplane.scheduler.plugins.taint_toleration import TaintToleration

__all__ = ["POD_INDEPENDENT", "ResourceDryRun", "Selection", "Split"]

POD_INDEPENDENT: tuple[type, ...] = (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodeDeclaredFeatures)
"""Filter plugins whose verdict on a node reads the node object and cluster objects, never the node's pods."""

Selection = tuple[list[PodInfo], int, Status | None]
"""``(victims most important first, how many violate a PDB, status)``, as ``select_victims_on_node`` returns."""

Split = Callable[[list[PodInfo]], tuple[list[PodInfo], list[PodInfo], Callable[[PodInfo], object]]]
"""Sorts the potential victims most important first and splits them into (PDB-violating, others), with the
importance key (the victims are re-sorted by it when both groups gave some)."""

_Amounts = list[int]


class ResourceDryRun:
    """The arithmetic ``SelectVictimsOnNode`` for one preemptor; :meth:`for_pod` says whether it applies."""

    __slots__ = ("_active", "_amounts", "_checks", "_independent", "_nominated_nodes", "fwk", "pod", "split", "state")

    def __init__(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        *,
        checks: Sequence[tuple[str, int, bool]],
        independent: Sequence[FilterPlugin],
        split: Split,
    ) -> None:
        self.fwk = fwk
        self.state = state
        self.pod = pod
        self.split = split
        self._checks = tuple(checks)
        self._independent = tuple(independent)
        self._amounts = _amounts_of(tuple(name for name, _, _ in checks))
        self._nominated_nodes: Collection[str] = frozenset(fwk.handle.nominator.nominated_node_names())

    @classmethod
    def for_pod(cls, fwk: Framework, state: CycleState, pod: PodInfo, *, split: Split) -> ResourceDryRun | None:
        """The fast path for this cycle (``state`` after PreFilter), or None when a plugin that is not skipped
        could change its verdict as pods leave or join a node (or NodeResourcesFit is not there to decide)."""
        skip = state.skip_filter_plugins
        for pre in fwk.pre_filter_plugins:
            if pre.name() not in skip and pre.pre_filter_extensions() is not None:
                return None
        independent: list[FilterPlugin] = []
        has_fit = False
        for plugin in fwk.filter_plugins:
            if plugin.name() in skip:
                continue
            if type(plugin) is NodeResourcesFit:
                has_fit = True
            elif type(plugin) in POD_INDEPENDENT:
                independent.append(plugin)
            else:
                return None
        checks = checked_resources(state) if has_fit else None
        if checks is None:
            return None
        return cls(fwk, state, pod, checks=checks, independent=independent, split=split)

    def select_victims(self, node: NodeInfo) -> Selection | None:
        """``SelectVictimsOnNode`` on ``node`` (left unchanged), or None when a pod-independent plugin rejects
        the node: the generic path then gives its status."""
        pod = self.pod
        priority = pod.priority
        potential = [p for p in node.pods if p.priority < priority]
        if not potential:
            return [], 0, Status.unresolvable("No preemption victims found for incoming pod")
        for plugin in self._independent:
            status = plugin.filter(self.state, pod, node)
            if status is not None and status.code != Code.SUCCESS:
                return None
        amounts = self._amounts
        allocatable = node.allocatable
        capacity = amounts(allocatable)
        # A DRA-backed resource is not checked on a node with no allocatable for it.
        active = [
            (i, quantity, capacity[i])
            for i, (_name, quantity, dra_backed) in enumerate(self._checks)
            if not (dra_backed and capacity[i] == 0)
        ]
        max_pods = allocatable.allowed_pod_number
        used = amounts(node.requested)
        for p in potential:
            _sub(used, amounts(p.requests))
        count = len(node.pods) - len(potential)
        nominated = self._nominated(node.name)
        extra = [0] * len(used)
        for p in nominated:
            _add(extra, amounts(p.requests))

        def fits(used: _Amounts, count: int) -> bool:
            if count + 1 > max_pods:
                return False
            return all(quantity <= cap - used[i] for i, quantity, cap in active)

        def fits_with_nominated(used: _Amounts, count: int) -> bool:
            if nominated and not fits([u + e for u, e in zip(used, extra, strict=True)], count + len(nominated)):
                return False
            return fits(used, count)

        if not fits_with_nominated(used, count):
            return self._rejection(node, potential, nominated)
        violating, non_violating, importance = self.split(potential)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for victim in group:
                need = amounts(victim.requests)
                back = [u + n for u, n in zip(used, need, strict=True)]
                if fits_with_nominated(back, count + 1):
                    used, count = back, count + 1  # reprieved
                    continue
                victims.append(victim)
                num_violating += 1 if counts else 0
        if violating and non_violating:
            victims.sort(key=importance)  # type: ignore[arg-type]
        return victims, num_violating, None

    def _nominated(self, node_name: str) -> list[PodInfo]:
        """The nominated pods upstream's first Filter pass adds: equal or higher priority, not the pod itself."""
        if node_name not in self._nominated_nodes:
            return []
        pod = self.pod
        return [
            p for p in self.fwk.nominated_pods_for_node(node_name) if p.priority >= pod.priority and p.uid != pod.uid
        ]

    def _rejection(self, node: NodeInfo, potential: list[PodInfo], nominated: list[PodInfo]) -> Selection | None:
        """NodeResourcesFit's status with every potential victim gone: the first pass's (nominated pods added)
        when that one fails, else the second's."""
        requested = node.requested.clone()
        for p in potential:
            requested.sub(p.requests)
        count = len(node.pods) - len(potential)
        status: Status | None = None
        if nominated:
            with_nominated = requested.clone()
            for p in nominated:
                with_nominated.add(p.requests)
            status = filter_aggregates(self.state, node.allocatable, with_nominated, count + len(nominated))
        if status is None:
            status = filter_aggregates(self.state, node.allocatable, requested, count)
        if status is None:
            return None  # not what the arithmetic said: let the generic path decide
        return [], 0, status.with_plugin(FIT)


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
