"""Whether a pod would fit another node: upstream ``pkg/descheduler/node/node.go``'s ``NodeFit``,
``PodFitsAnyOtherNode``, ``PodFitsAnyNode`` and the resource accounting behind them.

The descheduler evicts a pod only where its replacement could run elsewhere (DefaultEvictor's ``nodeFit``, the
node-affinity plugin, topology balancing). ``NodeFit`` is deliberately smaller than the scheduler's Filter
phase, as upstream's: the node is schedulable, the pod's node selector and required node affinity match
(kubeplane's compiled :mod:`kubeplane.api.nodeaffinity`), every NoSchedule/NoExecute taint is tolerated
(:mod:`kubeplane.api.taints`), none of the pod's required anti-affinity terms selects a pod on the node, and
the pod's requests fit what the node's non-terminal pods leave of its allocatable (on another node than its
own). Nodes are checked in order and the first fit answers (upstream
checks them in parallel; the answer is the same boolean).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeplane.api.labels import SelectorError, label_selector_as_selector
from kubeplane.api.nodeaffinity import get_required_node_affinity, new_preferred_scheduling_terms
from kubeplane.api.pods import pod_requests
from kubeplane.api.quantity import QuantityError, parse_quantity
from kubeplane.api.taints import find_matching_untolerated_taint
from kubeplane.api.views import labels_of, meta_of, name_of, spec_of, status_of

from .podutil import phase

Obj = Mapping[str, Any]
PodsOnNode = Callable[[str], Sequence[Obj]]
"""All pods bound to a node (any phase): upstream ``GetPodsAssignedToNodeFunc`` without a filter."""

__all__ = [
    "PodsOnNode",
    "active_pods_on",
    "allocatable",
    "node_fit",
    "pod_fits_any_node",
    "pod_fits_any_other_node",
    "pod_matches_node_selector",
    "preferred_affinity_weight",
    "tolerates_node_taints",
]


def active_pods_on(pods_on_node: PodsOnNode, node: str) -> list[Obj]:
    """Upstream ``ListPodsOnANode`` without a filter: the node's pods that are neither Succeeded nor Failed."""
    return [p for p in pods_on_node(node) if phase(p) not in ("Succeeded", "Failed")]


def allocatable(node: Obj) -> dict[str, int]:
    """The node's allocatable (its capacity when allocatable is empty), cpu in millicores, others in units."""
    status = status_of(node)
    source = status.get("allocatable") or status.get("capacity") or {}
    out: dict[str, int] = {}
    for name, value in source.items():
        try:
            quantity = parse_quantity(str(value))
        except QuantityError:
            continue
        out[str(name)] = quantity.milli_value() if name == "cpu" else quantity.value()
    return out


def pod_matches_node_selector(pod: Obj, node: Obj) -> bool:
    """``spec.nodeSelector`` and required node affinity both match (bad terms never match)."""
    ok, err = get_required_node_affinity(pod).match(node)
    return ok and err is None


def preferred_affinity_weight(pod: Obj, node: Obj) -> int:
    """The sum of the weights of the pod's preferred node-affinity terms the node matches (0 on bad terms):
    upstream ``GetNodeWeightGivenPodPreferredAffinity``."""
    affinity = (spec_of(pod).get("affinity") or {}).get("nodeAffinity") or {}
    terms = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    try:
        return new_preferred_scheduling_terms(terms).score(node)
    except SelectorError:
        return 0


def tolerates_node_taints(pod: Obj, node: Obj, *, effects: tuple[str, ...] = ("NoSchedule", "NoExecute")) -> bool:
    taints = spec_of(node).get("taints") or ()
    tolerations = spec_of(pod).get("tolerations") or ()
    return find_matching_untolerated_taint(taints, tolerations, include=lambda t: t.get("effect") in effects) is None


def _term_namespaces(term: Obj, owner: Obj) -> set[str]:
    """Upstream descheduler ``GetNamespacesFromPodAffinityTerm``: the term's namespaces, else its pod's."""
    names = term.get("namespaces") or []
    return set(names) if names else {str(meta_of(owner).get("namespace") or "")}


def _anti_affinity_terms(pod: Obj) -> list[Obj]:
    affinity = (spec_of(pod).get("affinity") or {}).get("podAntiAffinity") or {}
    return list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ())


def term_matches(term: Obj, owner: Obj, other: Obj) -> bool:
    """Whether ``other`` is selected by ``owner``'s affinity term (namespaces and label selector)."""
    if str(meta_of(other).get("namespace") or "") not in _term_namespaces(term, owner):
        return False
    try:
        selector = label_selector_as_selector(term.get("labelSelector"))
    except SelectorError:
        return False
    if term.get("labelSelector") is None:
        return False
    return selector.matches(labels_of(other))


def anti_affinity_conflict(pod: Obj, node: Obj, *, pods_on_node: PodsOnNode) -> bool:
    """Upstream ``podMatchesInterPodAntiAffinity``: one of the pod's required anti-affinity terms selects a pod
    on ``node`` (another name) and the node carries the term's topology key. Only the pod's own terms count, as
    upstream's (the scheduler would also check the other pods' terms)."""
    terms = _anti_affinity_terms(pod)
    if not terms:
        return False
    name = name_of(pod)
    node_labels = labels_of(node)
    for other in active_pods_on(pods_on_node, name_of(node)):
        if name_of(other) == name:
            continue
        for term in terms:
            if term_matches(term, pod, other) and str(term.get("topologyKey") or "") in node_labels:
                return True
    return False


def _fits_request(pod: Obj, node: Obj, *, pods_on_node: PodsOnNode) -> bool:
    requests = pod_requests(pod)
    on_node = active_pods_on(pods_on_node, name_of(node))
    alloc = allocatable(node)
    used: dict[str, int] = {}
    for other in on_node:
        for name, amount in pod_requests(other).items():
            used[name] = used.get(name, 0) + amount
    for name, amount in requests.items():
        if name not in alloc or amount > alloc[name] - used.get(name, 0):
            return False
    return alloc.get("pods", 0) - len(on_node) > 0


def node_fit(pod: Obj, node: Obj, *, pods_on_node: PodsOnNode) -> str | None:
    """None when ``pod`` fits ``node``, else upstream's reason (``NodeFit``)."""
    if spec_of(node).get("unschedulable"):
        return "node is not schedulable"
    if not pod_matches_node_selector(pod, node):
        return "pod node selector does not match the node label"
    if not tolerates_node_taints(pod, node):
        return "pod does not tolerate taints on the node"
    if anti_affinity_conflict(pod, node, pods_on_node=pods_on_node):
        return "pod matches inter-pod anti-affinity rule of other pod on node"
    if spec_of(pod).get("nodeName") != name_of(node) and not _fits_request(pod, node, pods_on_node=pods_on_node):
        return "insufficient resources"
    return None


def pod_fits_any_other_node(pod: Obj, nodes: Sequence[Obj], *, pods_on_node: PodsOnNode) -> bool:
    own = spec_of(pod).get("nodeName")
    return any(node_fit(pod, n, pods_on_node=pods_on_node) is None for n in nodes if name_of(n) != own)


def pod_fits_any_node(pod: Obj, nodes: Sequence[Obj], *, pods_on_node: PodsOnNode) -> bool:
    return any(node_fit(pod, n, pods_on_node=pods_on_node) is None for n in nodes)
