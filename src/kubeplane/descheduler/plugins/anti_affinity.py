"""RemovePodsViolatingInterPodAntiAffinity (upstream ``removepodsviolatinginterpodantiaffinity``): evicts pods
whose required anti-affinity terms select another pod in the same topology domain (the same node always is).

Per node, pods (``namespaces``/``labelSelector``; non-terminal) in priority order, lowest first; a pod in
violation that passes the profile's Filter and PreEvictionFilter is evicted and leaves the set the next pods are
checked against, so of two pods that exclude each other only the lower-priority one goes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.views import labels_of, name_of, namespace_of, spec_of
from kubeplane.descheduler import podutil
from kubeplane.descheduler.args import Fields, Namespaces
from kubeplane.descheduler.framework import EvictionLimitError, Handle, NodeLimitError, TotalLimitError
from kubeplane.descheduler.nodefit import active_pods_on, term_matches

Obj = Mapping[str, Any]
NAME: Final = "RemovePodsViolatingInterPodAntiAffinity"


@dataclass(frozen=True, slots=True)
class Args:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None


def parse_args(raw: Any) -> Args:
    f = Fields(raw, "RemovePodsViolatingInterPodAntiAffinityArgs")
    args = Args(f.namespaces(), f.label_selector())
    f.done()
    return args


def validate(args: Args) -> list[str]:
    if args.namespaces is not None and args.namespaces.include and args.namespaces.exclude:
        return ["only one of Include/Exclude namespaces can be set"]
    return []


def _same_domain(a: Obj, b: Obj, key: str) -> bool:
    """Upstream ``hasSameLabelValue``: the same node, or both nodes carry ``key`` with one value."""
    if name_of(a) == name_of(b):
        return True
    la, lb = labels_of(a), labels_of(b)
    return key in la and key in lb and la[key] == lb[key]


def violates(pod: Obj, others: Sequence[Obj], nodes: Mapping[str, Obj]) -> bool:
    """Upstream ``CheckPodsWithAntiAffinityExist``."""
    own = nodes.get(str(spec_of(pod).get("nodeName") or ""))
    if own is None:
        return False
    anti = (spec_of(pod).get("affinity") or {}).get("podAntiAffinity") or {}
    for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        for other in others:
            if name_of(other) == name_of(pod) or not term_matches(term, pod, other):
                continue
            their = nodes.get(str(spec_of(other).get("nodeName") or ""))
            if their is not None and _same_domain(own, their, str(term.get("topologyKey") or "")):
                return True
    return False


class RemovePodsViolatingInterPodAntiAffinity:
    name = NAME

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.filter = podutil.build_filter(namespaces=args.namespaces, label_selector=args.label_selector)

    async def deschedule(self, nodes: Sequence[Obj]) -> None:
        h = self.handle
        by_node = {name_of(n): [p for p in active_pods_on(h.pods_on_node, name_of(n)) if self.filter(p)] for n in nodes}
        alive = [p for pods in by_node.values() for p in pods]
        node_map = {name_of(n): n for n in nodes}
        for node in nodes:
            pods = list(by_node[name_of(node)])
            podutil.sort_by_priority_low_to_high(pods)
            for pod in pods:
                same_ns = [p for p in alive if namespace_of(p) in _namespaces(pod)]
                if not violates(pod, same_ns, node_map) or not (h.filter(pod) and h.pre_eviction_filter(pod)):
                    continue
                try:
                    if await h.evict(pod, strategy=NAME):
                        alive = [p for p in alive if p is not pod]
                except NodeLimitError:
                    break
                except TotalLimitError:
                    return
                except EvictionLimitError:
                    continue


def _namespaces(pod: Obj) -> set[str]:
    anti = (spec_of(pod).get("affinity") or {}).get("podAntiAffinity") or {}
    out: set[str] = set()
    for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or ():
        out |= set(term.get("namespaces") or [namespace_of(pod)])
    return out
