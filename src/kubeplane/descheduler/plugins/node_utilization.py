"""LowNodeUtilization and HighNodeUtilization (upstream ``nodeutilization``), by requests (not real usage).

A node's usage is the sum of the requests of its non-terminal pods for cpu (millicores), memory, pods (a count)
and every resource the thresholds name, each as a percentage of the node's allocatable. Thresholds are
percentages per resource.

**LowNodeUtilization** (Balance): a node is *underutilized* when every thresholded resource is at or below
``thresholds`` (and the node is schedulable), *overutilized* when any is above ``targetThresholds``; with
``useDeviationThresholds`` both are taken relative to the mean usage (mean − thresholds, mean +
targetThresholds, clamped to [0, 100]). Nothing happens when no node is underutilized, when at most
``numberOfNodes`` are, when all are, or when none is overutilized. Otherwise the overutilized nodes, most used
first, give up pods: removable pods (the profile's Filter) in priority order, lowest first (then QoS:
BestEffort, Burstable, Guaranteed), skipping pods that tolerate no underutilized node's taints, pods of
``evictableNamespaces.exclude`` and pods the PreEvictionFilter refuses; each eviction moves the pod's requests
from the source node's usage and from the room left on the underutilized nodes up to their target
(``targetThresholds`` of allocatable minus usage, summed). A source node stops giving when it is no longer above
its target in any resource or when any resource's room is used up; ``evictionLimits.node`` caps evictions per
node.

**HighNodeUtilization** (Balance, for bin packing): nodes with every thresholded resource at or below
``thresholds`` are the sources (least used first) and every other schedulable node a destination, with room up to
its full allocatable; evictions go on while every resource has room. ``evictionModes: [OnlyThresholdingResources]``
evicts only pods requesting one of the thresholded resources.

Ties in the node sorts keep the view's node order (upstream sorts a Go map's iteration, in no set order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.pods import pod_requests
from kubeplane.api.views import meta_of, name_of, spec_of
from kubeplane.descheduler import podutil
from kubeplane.descheduler.args import ArgsError, Fields, Namespaces
from kubeplane.descheduler.framework import EvictionLimitError, Handle, NodeLimitError, TotalLimitError
from kubeplane.descheduler.nodefit import active_pods_on, allocatable

Obj = Mapping[str, Any]
LOW: Final = "LowNodeUtilization"
HIGH: Final = "HighNodeUtilization"
BASIC: Final = ("cpu", "memory", "pods")
ONLY_THRESHOLDING_RESOURCES: Final = "OnlyThresholdingResources"


@dataclass(frozen=True, slots=True)
class LowArgs:
    thresholds: Mapping[str, float] = field(default_factory=dict)
    target_thresholds: Mapping[str, float] = field(default_factory=dict)
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0
    evictable_namespaces: Namespaces | None = None
    node_eviction_limit: int | None = None


@dataclass(frozen=True, slots=True)
class HighArgs:
    thresholds: Mapping[str, float] = field(default_factory=dict)
    number_of_nodes: int = 0
    eviction_modes: tuple[str, ...] = ()
    evictable_namespaces: Namespaces | None = None


def _thresholds(f: Fields, name: str) -> dict[str, float]:
    raw = f.mapping(name, "api.ResourceThresholds") or {}
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            f.errors.append(
                f"json: cannot unmarshal {type(value).__name__} into Go struct field {f.struct}.{name} "
                "of type api.Percentage"
            )
            continue
        out[str(key)] = float(value)
    return out


def parse_low_args(raw: Any) -> LowArgs:
    f = Fields(raw, "LowNodeUtilizationArgs")
    limits = f.mapping("evictionLimits", "api.EvictionLimits") or {}
    lf = Fields(limits, "EvictionLimits", errors=f.errors, path="evictionLimits.")
    node_limit = lf.uint("node")
    lf.done(raise_errors=False)
    if f.present("metricsUtilization"):
        f.errors.append("metricsUtilization is not supported by kubeplane (requests only)")
    args = LowArgs(
        thresholds=_thresholds(f, "thresholds"),
        target_thresholds=_thresholds(f, "targetThresholds"),
        use_deviation_thresholds=f.boolean("useDeviationThresholds"),
        number_of_nodes=f.integer("numberOfNodes", go_type="int") or 0,
        evictable_namespaces=f.namespaces("evictableNamespaces"),
        node_eviction_limit=node_limit,
    )
    f.done()
    return args


def parse_high_args(raw: Any) -> HighArgs:
    f = Fields(raw, "HighNodeUtilizationArgs")
    args = HighArgs(
        thresholds=_thresholds(f, "thresholds"),
        number_of_nodes=f.integer("numberOfNodes", go_type="int") or 0,
        eviction_modes=f.strings("evictionModes") or (),
        evictable_namespaces=f.namespaces("evictableNamespaces"),
    )
    f.done()
    return args


def _validate_thresholds(thresholds: Mapping[str, float]) -> str | None:
    if not thresholds:
        return "no resource threshold is configured"
    for name, percent in thresholds.items():
        if percent < 0 or percent > 100:
            return f"{name} threshold not in [0, 100] range"
    return None


def validate_low(args: LowArgs) -> list[str]:
    """Upstream ``ValidateLowNodeUtilizationArgs`` (the first error only, as upstream returns)."""
    if args.evictable_namespaces is not None and args.evictable_namespaces.include:
        return ["only Exclude namespaces can be set, inclusion is not supported"]
    err = _validate_thresholds(args.thresholds)
    if err:
        return [f"thresholds config is not valid: {err}"]
    err = _validate_thresholds(args.target_thresholds)
    if err:
        return [f"targetThresholds config is not valid: {err}"]
    if len(args.thresholds) != len(args.target_thresholds):
        return ["thresholds and targetThresholds configured different resources"]
    for name, value in args.thresholds.items():
        if name not in args.target_thresholds:
            return ["thresholds and targetThresholds configured different resources"]
        if value > args.target_thresholds[name] and not args.use_deviation_thresholds:
            return [f"thresholds' {name} percentage is greater than targetThresholds'"]
    return []


def validate_high(args: HighArgs) -> list[str]:
    if args.evictable_namespaces is not None and args.evictable_namespaces.include:
        return ["only Exclude namespaces can be set, inclusion is not supported"]
    err = _validate_thresholds(args.thresholds)
    if err:
        return [err]
    for mode in args.eviction_modes:
        if mode != ONLY_THRESHOLDING_RESOURCES:
            return [f"invalid eviction mode {mode}"]
    return []


@dataclass
class _NodeInfo:
    node: Obj
    usage: dict[str, int]
    pods: list[Obj]
    available: dict[str, int]
    """The node's capacity capped at its upper threshold, per resource."""


def _usage(pods: Sequence[Obj], names: Sequence[str]) -> dict[str, int]:
    total = dict.fromkeys(names, 0)
    total["pods"] = len(pods)
    for pod in pods:
        requests = pod_requests(pod)
        for name in names:
            if name != "pods":
                total[name] += requests.get(name, 0)
    return total


def _percentages(usage: Mapping[str, int], capacity: Mapping[str, int]) -> dict[str, float]:
    """Upstream ``ResourceUsageToResourceThreshold``: used / capacity × 100 (0 for a zero capacity); resources
    the node lacks are left out."""
    out = {}
    for name, used in usage.items():
        if name in capacity:
            out[name] = used / capacity[name] * 100 if capacity[name] > 0 else 0.0
    return out


def _capped(node: Obj, thresholds: Mapping[str, float], names: Sequence[str]) -> dict[str, int]:
    capacity = allocatable(node)
    out = {}
    for name in names:
        if name not in capacity:
            out[name] = 0
        elif name not in thresholds:
            out[name] = capacity[name]
        else:
            out[name] = int(thresholds[name] * 0.01 * capacity[name])
    return out


def _below(usage: Mapping[str, float], threshold: Mapping[str, float]) -> bool:
    return all(not threshold[name] < usage.get(name, 0.0) for name in threshold)


def _above(usage: Mapping[str, float], threshold: Mapping[str, float]) -> bool:
    return any(threshold[name] < usage.get(name, 0.0) for name in threshold)


def _sort_by_usage(nodes: list[_NodeInfo], *, ascending: bool) -> None:
    nodes.sort(key=lambda n: sum(n.usage.values()), reverse=not ascending)


def _tolerates_any(pod: Obj, taints_of: Mapping[str, Sequence[Obj]]) -> bool:
    """Upstream ``PodToleratesTaints``: some destination node whose every taint (any effect) the pod
    tolerates, with at least as many tolerations as the node has taints."""
    from kubeplane.api.taints import tolerations_tolerate_taint

    tolerations = spec_of(pod).get("tolerations") or []
    for taints in taints_of.values():
        if len(tolerations) >= len(taints) and all(tolerations_tolerate_taint(tolerations, t) for t in taints):
            return True
    return False


class _Balancer:
    """The shared half: classify, then ``evictPodsFromSourceNodes``."""

    name: str

    def __init__(self, handle: Handle, names: Sequence[str], excluded: Namespaces | None) -> None:
        self.handle = handle
        self.names = list(dict.fromkeys(names))
        self.excluded = set(excluded.exclude) if excluded is not None else set()

    def snapshot(self, nodes: Sequence[Obj]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
        raw = {}
        percent = {}
        for node in nodes:
            pods = active_pods_on(self.handle.pods_on_node, name_of(node))
            raw[name_of(node)] = _usage(pods, self.names)
            percent[name_of(node)] = _percentages(raw[name_of(node)], allocatable(node))
        return raw, percent

    def info(self, node: Obj, usage: dict[str, int], upper: Mapping[str, float]) -> _NodeInfo:
        pods = active_pods_on(self.handle.pods_on_node, name_of(node))
        return _NodeInfo(node, dict(usage), pods, _capped(node, upper, self.names))

    async def evict_from(
        self,
        sources: Sequence[_NodeInfo],
        destinations: Sequence[_NodeInfo],
        *,
        removable: Callable[[Obj], bool],
        keep_going: Callable[[_NodeInfo, Mapping[str, int]], bool],
        node_limit: int | None,
    ) -> None:
        available = dict.fromkeys(self.names, 0)
        for dest in destinations:
            for name in self.names:
                available[name] += dest.available[name] - dest.usage[name]
        taints_of = {name_of(d.node): list(spec_of(d.node).get("taints") or ()) for d in destinations}
        for source in sources:
            pods = [p for p in source.pods if removable(p)]
            if not pods:
                continue
            podutil.sort_by_priority_low_to_high(pods)
            try:
                await self._evict_pods(source, pods, available, taints_of, keep_going, node_limit)
            except TotalLimitError:
                return
            except NodeLimitError:
                continue

    async def _evict_pods(
        self,
        source: _NodeInfo,
        pods: Sequence[Obj],
        available: dict[str, int],
        taints_of: Mapping[str, Sequence[Obj]],
        keep_going: Callable[[_NodeInfo, Mapping[str, int]], bool],
        node_limit: int | None,
    ) -> None:
        if not keep_going(source, available):
            return
        count = 0
        for pod in pods:
            if node_limit is not None and count >= node_limit:
                break
            if not _tolerates_any(pod, taints_of):
                continue
            if self.excluded and str(meta_of(pod).get("namespace") or "") in self.excluded:
                continue
            if not self.handle.pre_eviction_filter(pod):
                continue
            try:
                if not await self.handle.evict(pod, strategy=self.name):
                    continue
            except (NodeLimitError, TotalLimitError):
                raise
            except EvictionLimitError:
                continue
            count += 1
            requests = pod_requests(pod)
            for name in available:
                amount = 1 if name == "pods" else requests.get(name, 0)
                source.usage[name] -= amount
                available[name] -= amount
            if not keep_going(source, available):
                break


class LowNodeUtilization(_Balancer):
    name = LOW

    def __init__(self, args: LowArgs, handle: Handle) -> None:
        super().__init__(handle, [*args.thresholds, *BASIC], args.evictable_namespaces)
        self.args = args

    def _thresholds(self, percent: Mapping[str, Mapping[str, float]]) -> tuple[dict[str, float], dict[str, float]]:
        low, high = dict(self.args.thresholds), dict(self.args.target_thresholds)
        if not self.args.use_deviation_thresholds:
            return low, high
        names = list(self.args.thresholds)
        mean = {n: sum(p.get(n, 0.0) for p in percent.values()) / max(len(percent), 1) for n in names}
        low = {n: min(max(mean[n] - low[n], 0.0), 100.0) for n in names}
        high = {n: min(max(mean[n] + high[n], 0.0), 100.0) for n in names}
        return low, high

    async def balance(self, nodes: Sequence[Obj]) -> None:
        raw, percent = self.snapshot(nodes)
        if self.args.use_deviation_thresholds:  # upstream filters usages to the thresholded resources here
            percent = {n: {k: v for k, v in p.items() if k in self.args.thresholds} for n, p in percent.items()}
        low_t, high_t = self._thresholds(percent)
        lows, highs = [], []
        for node in nodes:
            usage = percent[name_of(node)]
            if not spec_of(node).get("unschedulable") and _below(usage, low_t):
                lows.append(self.info(node, raw[name_of(node)], high_t))
            elif _above(usage, high_t):
                highs.append(self.info(node, raw[name_of(node)], high_t))
        if not lows or len(lows) <= self.args.number_of_nodes or len(lows) == len(nodes) or not highs:
            return

        def keep_going(info: _NodeInfo, available: Mapping[str, int]) -> bool:
            if not any(info.available.get(name, 0) < used for name, used in info.usage.items()):
                return False
            return all(value > 0 for value in available.values())

        _sort_by_usage(highs, ascending=False)
        await self.evict_from(
            highs, lows, removable=self.handle.filter, keep_going=keep_going, node_limit=self.args.node_eviction_limit
        )


class HighNodeUtilization(_Balancer):
    name = HIGH

    def __init__(self, args: HighArgs, handle: Handle) -> None:
        super().__init__(handle, [*args.thresholds, *BASIC], args.evictable_namespaces)
        self.args = args
        names = list(args.thresholds)
        only = ONLY_THRESHOLDING_RESOURCES in args.eviction_modes

        def removable(pod: Obj) -> bool:
            if not handle.filter(pod):
                return False
            return not only or any(pod_requests(pod).get(n, 0) > 0 for n in names)

        self.removable = removable

    async def balance(self, nodes: Sequence[Obj]) -> None:
        raw, percent = self.snapshot(nodes)
        high_t = dict.fromkeys(self.args.thresholds, 100.0)
        lows, schedulable = [], []
        for node in nodes:
            if _below(percent[name_of(node)], self.args.thresholds):
                lows.append(self.info(node, raw[name_of(node)], high_t))
            elif not spec_of(node).get("unschedulable"):
                schedulable.append(self.info(node, raw[name_of(node)], high_t))
        if not lows or len(lows) <= self.args.number_of_nodes or len(lows) == len(nodes) or not schedulable:
            return

        def keep_going(_info: _NodeInfo, available: Mapping[str, int]) -> bool:
            return all(value > 0 for value in available.values())

        _sort_by_usage(lows, ascending=True)
        await self.evict_from(lows, schedulable, removable=self.removable, keep_going=keep_going, node_limit=None)


__all__ = [
    "HIGH",
    "LOW",
    "ArgsError",
    "HighArgs",
    "HighNodeUtilization",
    "LowArgs",
    "LowNodeUtilization",
    "parse_high_args",
    "parse_low_args",
    "validate_high",
    "validate_low",
]
