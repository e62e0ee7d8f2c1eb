"""RemovePodsViolatingNodeAffinity (upstream ``removepodsviolatingnodeaffinity``): for each
``nodeAffinityType`` in order, ``requiredDuringSchedulingIgnoredDuringExecution`` evicts pods whose node no longer
matches their required node affinity (or node selector) when some node would; and
``preferredDuringSchedulingIgnoredDuringExecution`` evicts pods for which another fitting node scores higher on
their preferred terms. A pod must have that kind of node affinity, pass the profile's Filter (and, through the
pod filter, its PreEvictionFilter) and fit some node (``PodFitsAnyNode``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.views import name_of, spec_of
from kubeplane.descheduler.args import Fields, Namespaces
from kubeplane.descheduler.framework import Handle
from kubeplane.descheduler.nodefit import (
    active_pods_on,
    pod_fits_any_node,
    pod_matches_node_selector,
    preferred_affinity_weight,
)

from .common import StopPass, evict_on_node, pod_filter

Obj = Mapping[str, Any]
NAME: Final = "RemovePodsViolatingNodeAffinity"
REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
log = logging.getLogger("kubeplane.descheduler")


@dataclass(frozen=True, slots=True)
class Args:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None
    node_affinity_type: tuple[str, ...] = ()


def parse_args(raw: Any) -> Args:
    f = Fields(raw, "RemovePodsViolatingNodeAffinityArgs")
    args = Args(f.namespaces(), f.label_selector(), f.strings("nodeAffinityType") or ())
    f.done()
    return args


def validate(args: Args) -> list[str]:
    errs = []
    if not args.node_affinity_type:
        errs.append("nodeAffinityType needs to be set")
    if args.namespaces is not None and args.namespaces.include and args.namespaces.exclude:
        errs.append("only one of Include/Exclude namespaces can be set")
    return errs


def _has_affinity(pod: Obj, kind: str) -> bool:
    """Upstream ``PodHasNodeAffinity``: the pod's node affinity has terms of that kind."""
    affinity = (spec_of(pod).get("affinity") or {}).get("nodeAffinity") or {}
    if kind == REQUIRED:
        return bool((affinity.get(REQUIRED) or {}).get("nodeSelectorTerms"))
    return bool(affinity.get(PREFERRED))


class RemovePodsViolatingNodeAffinity:
    name = NAME

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.filter = pod_filter(handle, namespaces=args.namespaces, label_selector=args.label_selector)

    async def deschedule(self, nodes: Sequence[Obj]) -> None:
        h = self.handle
        for kind in self.args.node_affinity_type:
            check: Callable[[Obj, Obj], bool]
            if kind == REQUIRED:

                def check(pod: Obj, node: Obj) -> bool:
                    return (
                        _has_affinity(pod, REQUIRED)
                        and h.filter(pod)
                        and pod_fits_any_node(pod, nodes, pods_on_node=h.pods_on_node)
                        and not pod_matches_node_selector(pod, node)
                    )

            elif kind == PREFERRED:

                def check(pod: Obj, node: Obj) -> bool:
                    if not (_has_affinity(pod, PREFERRED) and h.filter(pod)):
                        return False
                    if not pod_fits_any_node(pod, nodes, pods_on_node=h.pods_on_node):
                        return False
                    best = max((preferred_affinity_weight(pod, n) for n in nodes), default=0)
                    return best > preferred_affinity_weight(pod, node)

            else:
                log.error("Invalid nodeAffinityType %s", kind)
                continue
            try:
                for node in nodes:
                    pods = active_pods_on(h.pods_on_node, name_of(node))
                    victims = [p for p in pods if self.filter(p) and check(p, node)]
                    await evict_on_node(h, victims, strategy=NAME)
            except StopPass:
                return
