"""Scale-up planning (cluster-autoscaler's core/scaleup/orchestrator, core/podlistprocessor and
processors/nodegroupset).

Pure planning on a :class:`~.simulator.ClusterSimulator`; the loop asks the provider and records the events:

1. :func:`unschedulable_pods`: pods without a node whose ``PodScheduled`` condition is False with reason
   ``Unschedulable``, at least ``new-pod-scale-up-delay`` old, not expendable (priority below
   ``expendable-pods-priority-cutoff``), not being deleted.
2. :func:`filter_out_schedulable`: pods that fit somewhere already -- the scheduler has not caught up, or
   upcoming nodes (template copies in the simulator) will take them -- are dropped, higher priority placed
   first, each placement kept for the next pod (upstream's FilterOutSchedulable).
3. :func:`plan_scale_up`: per group (declaration order) skip it at max size (``max node group size reached``);
   else put each pending pod through the filters on a fresh template node: those that pass form the group's
   binpacking estimate (capped by ``max_size - target``, ``max-nodes-total`` and ``max-nodes-per-scaleup``),
   those that fail keep the filters' reasons for the NotTriggerScaleUp message, recorded only for pods no group
   could take (a pod some group could take but this scale-up does not waits for the next loop, silently).
   The expander chain picks one option; with ``balance-similar-node-groups`` its node count is spread over
   similar groups whose options hold every pod of the chosen one (upstream filterNodeGroupsByPods), smallest
   first (upstream BalanceScaleUpBetweenGroups).

With ``max-nodes-total`` reached nothing is tried and no pod event is recorded (upstream returns a scale-up
error before looking at groups).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.views import find_condition, labels_of, meta_of, spec_of, status_of
from kubeplane.autoscaler.drain import time_of
from kubeplane.autoscaler.estimator import binpacking_estimate, equivalence_key, template_copy
from kubeplane.autoscaler.expanders import Option, best_option
from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import NODE_GROUP_LABEL, CloudProvider
from kubeplane.autoscaler.simulator import ClusterSimulator, pod_key
from kubeplane.scheduler.framework.types import Resource

__all__ = [
    "MAX_LIMIT_REACHED",
    "ScaleUpInfo",
    "ScaleUpPlan",
    "filter_out_schedulable",
    "not_triggered_message",
    "plan_scale_up",
    "similar_groups",
    "template_probe",
    "template_verdict",
    "unschedulable_pods",
]

Obj = Mapping[str, Any]

MAX_LIMIT_REACHED = "max node group size reached"
POD_SCALE_UP_DELAY_ANNOTATION = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay"
_BALANCING_IGNORED_LABELS = frozenset(
    {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "topology.ebs.csi.aws.com/zone",
        NODE_GROUP_LABEL,
    }
)


@dataclass(frozen=True, slots=True)
class ScaleUpInfo:
    group: str
    current: int
    new: int
    max_size: int

    def __str__(self) -> str:
        return f"{{{self.group} {self.current}->{self.new} (max: {self.max_size})}}"


@dataclass
class ScaleUpPlan:
    """What to ask of the provider and what to tell the pods."""

    infos: list[ScaleUpInfo] = field(default_factory=list)
    triggered: list[Obj] = field(default_factory=list)
    """Pods the chosen option schedules: TriggeredScaleUp."""
    remaining: list[Obj] = field(default_factory=list)
    """Pods no group can help (they passed the filters on no template): NotTriggerScaleUp with :attr:`reasons`
    (upstream GetRemainingPods)."""
    awaiting: list[Obj] = field(default_factory=list)
    """Pods some group could take that this scale-up does not: no event, the next loop looks again (upstream
    GetPodsAwaitingEvaluation)."""
    reasons: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """pod key -> group -> reasons the group could not help it."""
    error: str = ""


def unschedulable_pods(pods: Sequence[Obj], *, now: float, options: AutoscalerOptions) -> list[Obj]:
    out = []
    for pod in pods:
        if spec_of(pod).get("nodeName") or meta_of(pod).get("deletionTimestamp"):
            continue
        cond = find_condition(status_of(pod).get("conditions"), "PodScheduled")
        if cond is None or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
            continue
        if int(spec_of(pod).get("priority") or 0) < options.expendable_pods_priority_cutoff:
            continue
        delay = options.new_pod_scale_up_delay
        created = time_of(meta_of(pod).get("creationTimestamp"))
        if delay > 0 and created is not None and now - created < delay:
            continue
        out.append(pod)
    return out


def filter_out_schedulable(sim: ClusterSimulator, pods: Sequence[Obj]) -> list[Obj]:
    """Pods that fit nowhere in ``sim`` (which keeps the placements of those that do); after one pod of an
    equivalence group fits nowhere, the rest of the group is not tried (the cluster only got fuller)."""
    remaining = []
    failed: set[str] = set()
    for pod in sorted(pods, key=lambda p: -int(spec_of(p).get("priority") or 0)):
        key = equivalence_key(pod)
        if key in failed or sim.place(pod) is None:
            failed.add(key)
            remaining.append(pod)
    return remaining


def _comparable(a: Obj, b: Obj, options: AutoscalerOptions) -> bool:
    """Upstream IsCloudProviderNodeInfoSimilar on two empty template nodes: same resource names, equal
    capacity but memory (within memory-difference-ratio), allocatable within max-allocatable-difference-ratio,
    labels equal but the ignored ones (hostname, zone, region, the node-group label)."""
    ca, cb = (status_of(n).get("capacity") or status_of(n).get("allocatable") or {} for n in (a, b))
    if set(ca) != set(cb):
        return False
    ra, rb = (Resource.from_resource_list(c) for c in (ca, cb))
    if ra.milli_cpu != rb.milli_cpu or ra.scalar != rb.scalar:
        return False
    if not _within(ra.memory, rb.memory, options.memory_difference_ratio):
        return False
    aa, ab = (Resource.from_resource_list(status_of(n).get("allocatable")) for n in (a, b))
    ratio = options.max_allocatable_difference_ratio
    if not (_within(aa.milli_cpu, ab.milli_cpu, ratio) and _within(aa.memory, ab.memory, ratio)):
        return False
    la = {k: v for k, v in labels_of(a).items() if k not in _BALANCING_IGNORED_LABELS}
    lb = {k: v for k, v in labels_of(b).items() if k not in _BALANCING_IGNORED_LABELS}
    return la == lb


def _within(x: int, y: int, ratio: float) -> bool:
    low, high = min(x, y), max(x, y)
    return high - low <= low * ratio


def similar_groups(chosen: Option, options: Sequence[Option], settings: AutoscalerOptions) -> list[Option]:
    """Options of other groups whose template is similar to the chosen one's (chosen first)."""
    return [chosen] + [
        o for o in options if o.group != chosen.group and _comparable(chosen.template, o.template, settings)
    ]


def _balance(
    groups: Sequence[Option], total: int, provider: CloudProvider, sizes: Mapping[str, tuple[int, int]]
) -> dict[str, int]:
    """Spread ``total`` new nodes over ``groups``: each node to the group with the fewest nodes (current +
    given), ties in the given order, never past max size."""
    given = {o.group: 0 for o in groups}
    for _ in range(total):
        open_groups = [o.group for o in groups if sizes[o.group][0] + given[o.group] < sizes[o.group][1]]
        if not open_groups:
            break
        smallest = min(open_groups, key=lambda g: sizes[g][0] + given[g])
        given[smallest] += 1
    return {g: n for g, n in given.items() if n > 0}


def template_probe(sim: ClusterSimulator, template: Obj, group: str) -> tuple[ClusterSimulator, str]:
    """A fork of ``sim`` with a fresh copy of ``group``'s template node added, and that node's name: where
    scale-up (and ``kubeplane explain``'s autoscaler part) asks whether a pod would fit a new node of the group."""
    probe = sim.fork()
    check = f"template-node-for-{group}-check"
    probe.add_node(template_copy(template, check))
    return probe, check


def template_verdict(probe: ClusterSimulator, pod: Obj, check: str) -> list[str] | None:
    """None when ``pod`` passes PreFilter and every Filter on the template node ``check`` of ``probe``
    (:func:`template_probe`), else the filters' reasons there, sorted (what NotTriggerScaleUp counts)."""
    if probe.first_fit(pod, [check]) is not None:
        return None
    reasons = sorted(probe.fits(pod, only=(check,)).reasons)
    # a pod that fits an existing node (explain asks about any pod) gets its rejected nodes counted without
    # reasons by the scheduler's search: then the reference filters' reasons on the template
    return reasons or sorted(probe.filter_reasons(pod, check))


def plan_scale_up(
    sim: ClusterSimulator,
    pending: Sequence[Obj],
    *,
    provider: CloudProvider,
    options: AutoscalerOptions,
    rng: random.Random,
    total_nodes: int,
    priorities: Sequence[tuple[int, Sequence[re.Pattern[str]]]] = (),
) -> ScaleUpPlan:
    """The plan for ``pending`` (pods :func:`filter_out_schedulable` left); ``total_nodes`` counts registered
    and upcoming nodes (module docstring)."""
    plan = ScaleUpPlan()
    if not pending:
        return plan
    if options.max_nodes_total and total_nodes >= options.max_nodes_total:
        plan.error = "max node total count already reached"
        return plan
    reasons: dict[str, dict[str, list[str]]] = {pod_key(p): {} for p in pending}
    expansion: list[Option] = []
    helpable: set[str] = set()
    sizes: dict[str, tuple[int, int]] = {}
    for spec in provider.node_groups():
        group = spec.name
        target = provider.target_size(group)
        sizes[group] = (target, spec.max_size)
        if target >= spec.max_size:
            for by_group in reasons.values():
                by_group[group] = [MAX_LIMIT_REACHED]
            continue
        template = provider.template_node(group)
        probe, check = template_probe(sim, template, group)
        passing = []
        verdicts: dict[str, list[str] | None] = {}  # equivalence group -> the filters' reasons (None: passes)
        for pod in pending:
            key = equivalence_key(pod)
            if key not in verdicts:
                verdicts[key] = template_verdict(probe, pod, check)
            verdict = verdicts[key]
            if verdict is None:
                passing.append(pod)
                helpable.add(pod_key(pod))
            else:
                reasons[pod_key(pod)][group] = verdict
        if not passing:
            continue
        limit = min(spec.max_size - target, options.max_nodes_per_scaleup)
        if options.max_nodes_total:
            limit = min(limit, options.max_nodes_total - total_nodes)
        estimate = binpacking_estimate(sim, passing, template, limit=limit, prefix=f"template-node-for-{group}")
        if estimate.node_count > 0:
            expansion.append(Option(group, estimate.node_count, estimate.pods, template, spec.price_per_hour))
    chosen = best_option(
        expansion, expanders=options.expanders(), rng=rng, cluster_size=total_nodes, priorities=priorities
    )
    plan.reasons = reasons
    if chosen is None:
        plan.remaining = [p for p in pending if pod_key(p) not in helpable]
        plan.awaiting = [p for p in pending if pod_key(p) in helpable]
        return plan
    if options.balance_similar_node_groups:
        helping = {pod_key(p) for p in chosen.pods}
        similar = [
            o
            for o in similar_groups(chosen, expansion, options)
            if o is chosen or helping <= {pod_key(p) for p in o.pods}
        ]
        deltas = _balance(similar, chosen.node_count, provider, sizes)
    else:
        deltas = {chosen.group: chosen.node_count}
    for spec in provider.node_groups():
        delta = deltas.get(spec.name, 0)
        if delta:
            current = sizes[spec.name][0]
            plan.infos.append(ScaleUpInfo(spec.name, current, current + delta, spec.max_size))
    triggered = {pod_key(p) for p in chosen.pods}
    plan.triggered = [p for p in pending if pod_key(p) in triggered]
    plan.remaining = [p for p in pending if pod_key(p) not in helpable]
    plan.awaiting = [p for p in pending if pod_key(p) in helpable and pod_key(p) not in triggered]
    return plan


def not_triggered_message(group_reasons: Mapping[str, Sequence[str]]) -> str:
    """Upstream ReasonsMessage: each reason counted once per group that gave it, ``"<n> <reason>"`` sorted and
    joined by ``", "``, after ``pod didn't trigger scale-up: ``."""
    counts: dict[str, int] = {}
    for group_list in group_reasons.values():
        for reason in group_list:
            counts[reason] = counts.get(reason, 0) + 1
    return "pod didn't trigger scale-up: " + ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))


def upcoming_node(provider: CloudProvider, group: str, name: str) -> dict[str, Any]:
    """What an upcoming (asked for, not yet Ready) node of ``group`` will look like, named ``name``."""
    return template_copy(provider.template_node(group), name)
