"""RemovePodsViolatingTopologySpreadConstraint (upstream ``removepodsviolatingtopologyspreadconstraint``, a
Balance plugin): evicts pods so that each namespace's topology spread constraints come back within their
``maxSkew``.

Per namespace, the distinct constraints of its pods whose ``whenUnsatisfiable`` is in ``constraints`` (default
``[DoNotSchedule]``; ``matchLabelKeys`` merged into the selector; ``nodeAffinityPolicy`` default Honor,
``nodeTaintsPolicy`` default Ignore) are checked one by one: domains are the topology values of the nodes the
constraint includes, each holding the non-terminating matching pods on its nodes. An unbalanced constraint is
balanced as upstream's ``balanceDomains``: domains sorted by size, the smallest (i) and the largest above the
ideal average (j) move ``min(ceil(j − avg), ceil(avg − i), ceil((skew − maxSkew)/2))`` pods from the end of j's
list, which is ordered non-evictable first, then pods with a node selector or affinity, then by priority
(highest last), and, within that, pods that fit a node of a domain below average last. With
``topologyBalanceNodeFit`` (default true) a pod that fits no such node is not evicted. The pods chosen are then
evicted through the profile's Filter and PreEvictionFilter; a node at its limit is skipped.

Where upstream iterates Go maps (namespaces, domains), kubeplane uses first-seen order and stable sorts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.labels import Selector, label_selector_as_selector, new_requirement
from kubeplane.api.nodeaffinity import get_required_node_affinity
from kubeplane.api.taints import find_matching_untolerated_taint
from kubeplane.api.views import labels_of, name_of, namespace_of, spec_of
from kubeplane.descheduler import podutil
from kubeplane.descheduler.args import Fields, Namespaces
from kubeplane.descheduler.framework import EvictionLimitError, Handle, NodeLimitError, TotalLimitError
from kubeplane.descheduler.nodefit import active_pods_on, pod_fits_any_other_node

from .common import pod_filter

Obj = Mapping[str, Any]
NAME: Final = "RemovePodsViolatingTopologySpreadConstraint"


@dataclass(frozen=True, slots=True)
class Args:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None
    constraints: tuple[str, ...] = ("DoNotSchedule",)
    topology_balance_node_fit: bool = True


def parse_args(raw: Any) -> Args:
    f = Fields(raw, "RemovePodsViolatingTopologySpreadConstraintArgs")
    node_fit = f._get("topologyBalanceNodeFit")
    if node_fit is not None and not isinstance(node_fit, bool):
        f.errors.append(
            f"json: cannot unmarshal {type(node_fit).__name__} into Go struct field "
            "RemovePodsViolatingTopologySpreadConstraintArgs.topologyBalanceNodeFit of type bool"
        )
        node_fit = None
    args = Args(
        namespaces=f.namespaces(),
        label_selector=f.label_selector(),
        constraints=f.strings("constraints") or ("DoNotSchedule",),  # upstream default when empty
        topology_balance_node_fit=True if node_fit is None else bool(node_fit),
    )
    f.done()
    return args


def validate(args: Args) -> list[str]:
    errs = []
    if args.namespaces is not None and args.namespaces.include and args.namespaces.exclude:
        errs.append("only one of Include/Exclude namespaces can be set")
    for c in args.constraints:
        if c not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(f"constraint {c} is not one of map[DoNotSchedule:{{}} ScheduleAnyway:{{}}]")
    return errs


@dataclass(frozen=True)
class _Constraint:
    max_skew: int
    key: str
    selector: Selector = field(compare=False)
    selector_repr: str
    honor_affinity: bool
    honor_taints: bool
    affinity_repr: str
    tolerations_repr: str
    pod: Obj = field(compare=False)

    def includes(self, node: Obj) -> bool:
        """Upstream ``matchNodeInclusionPolicies``."""
        if self.honor_affinity:
            ok, _ = get_required_node_affinity(self.pod).match(node)
            if not ok:
                return False
        if self.honor_taints:
            taints = spec_of(node).get("taints") or ()
            tolerations = spec_of(self.pod).get("tolerations") or ()
            include = lambda t: t.get("effect") in ("NoSchedule", "NoExecute")  # noqa: E731
            if find_matching_untolerated_taint(taints, tolerations, include=include) is not None:
                return False
        return True


def _constraint(raw: Obj, pod: Obj) -> _Constraint | None:
    try:
        selector = label_selector_as_selector(raw.get("labelSelector"))
        pod_labels = labels_of(pod)
        keys = [k for k in raw.get("matchLabelKeys") or () if k in pod_labels]
        if keys:
            extra = [new_requirement(k, "=", [pod_labels[k]]) for k in keys]
            selector = Selector(tuple(extra)).add(*selector.requirements)
    except ValueError:
        return None
    honor_affinity = (raw.get("nodeAffinityPolicy") or "Honor") == "Honor"
    honor_taints = (raw.get("nodeTaintsPolicy") or "Ignore") == "Honor"
    spec = spec_of(pod)
    return _Constraint(
        max_skew=int(raw.get("maxSkew") or 0),
        key=str(raw.get("topologyKey") or ""),
        selector=selector,
        selector_repr=repr(selector.requirements),
        honor_affinity=honor_affinity,
        honor_taints=honor_taints,
        affinity_repr=repr((spec.get("nodeSelector"), spec.get("affinity"))) if honor_affinity else "",
        tolerations_repr=repr(spec.get("tolerations")) if honor_taints else "",
        pod=pod,
    )


def _sort_key(evictable: bool, pod: Obj) -> tuple[int, int, float]:
    spec = spec_of(pod)
    has_selector = spec.get("nodeSelector") is not None or (spec.get("affinity") or {}).get("nodeAffinity") is not None
    value = podutil.priority(pod)
    return (1 if evictable else 0, 0 if has_selector else 1, -math.inf if value is None else float(value))


class RemovePodsViolatingTopologySpreadConstraint:
    name = NAME

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.filter = pod_filter(
            handle, namespaces=args.namespaces, label_selector=args.label_selector, pre_eviction=False
        )

    async def balance(self, nodes: Sequence[Obj]) -> None:
        h = self.handle
        node_map = {name_of(n): n for n in nodes}
        by_namespace: dict[str, list[Obj]] = {}
        for node in nodes:
            for pod in active_pods_on(h.pods_on_node, name_of(node)):
                if self.filter(pod):
                    by_namespace.setdefault(namespace_of(pod), []).append(pod)
        chosen: list[Obj] = []
        for pods in by_namespace.values():
            constraints: list[_Constraint] = []
            for pod in pods:
                for raw in spec_of(pod).get("topologySpreadConstraints") or ():
                    if raw.get("whenUnsatisfiable") not in self.args.constraints:
                        continue
                    c = _constraint(raw, pod)
                    if c is not None and c not in constraints:
                        constraints.append(c)
            for c in constraints:
                domains: dict[str, list[Obj]] = {}
                for node in nodes:
                    value = labels_of(node).get(c.key)
                    if value is not None and c.includes(node):
                        domains.setdefault(value, [])
                total = 0
                for pod in pods:
                    if podutil.is_terminating(pod) or not c.selector.matches(labels_of(pod)):
                        continue
                    on = node_map.get(str(spec_of(pod).get("nodeName") or ""))
                    domain = None if on is None else labels_of(on).get(c.key)
                    if domain is None:
                        continue
                    domains.setdefault(domain, []).append(pod)
                    total += 1
                sizes = [len(v) for v in domains.values()]
                if not sizes or max(sizes) - min(sizes) <= c.max_skew:
                    continue
                self._balance_domains(chosen, c, domains, total, nodes)
        full: set[str] = set()
        for pod in chosen:
            node_name = str(spec_of(pod).get("nodeName") or "")
            if node_name in full or not self.filter(pod) or not h.pre_eviction_filter(pod):
                continue
            try:
                await h.evict(pod, strategy=NAME)
            except NodeLimitError:
                full.add(node_name)
            except TotalLimitError:
                return
            except EvictionLimitError:
                continue

    def _balance_domains(
        self, chosen: list[Obj], c: _Constraint, domains: dict[str, list[Obj]], total: int, nodes: Sequence[Obj]
    ) -> None:
        h = self.handle
        ideal = total / len(domains)
        ordered = []
        for value, pods in domains.items():
            pods.sort(key=lambda p: _sort_key(h.filter(p), p))
            ordered.append((value, pods))
        ordered.sort(key=lambda d: len(d[1]))
        eligible = [n for n in nodes if c.includes(n)]
        below_values = {value for value, pods in ordered if len(pods) < ideal}
        below = [n for n in eligible if labels_of(n).get(c.key) in below_values]

        def fits(pod: Obj) -> bool:
            return pod_fits_any_other_node(pod, below, pods_on_node=h.pods_on_node)

        i, j = 0, len(ordered) - 1
        while i < j:
            if len(ordered[j][1]) <= ideal:
                j -= 1
            skew = len(ordered[j][1]) - len(ordered[i][1])
            if skew <= c.max_skew:
                i += 1
                continue
            above = math.ceil(len(ordered[j][1]) - ideal)
            under = math.ceil(ideal - len(ordered[i][1]))
            move = int(min(above, under, math.ceil((skew - c.max_skew) / 2)))
            if move <= 0:
                i += 1
                continue
            source = ordered[j][1]
            source.sort(key=fits)  # stable: pods that fit nowhere below average first, so they stay
            moving = source[len(source) - move :]
            for pod in moving:
                if self.args.topology_balance_node_fit and not fits(pod):
                    continue
                if all(p is not pod for p in chosen):
                    chosen.append(pod)
            del source[len(source) - move :]
            ordered[i][1].extend(moving)


__all__ = ["NAME", "Args", "RemovePodsViolatingTopologySpreadConstraint", "parse_args", "validate"]
