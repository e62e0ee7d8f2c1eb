"""How many new nodes of one group the pending pods need (cluster-autoscaler's estimator/binpacking_estimator.go).

First-fit decreasing on copies of the group's template node, through the scheduler's own filters
(:class:`~.simulator.ClusterSimulator`): pods are taken largest first (the sum of their cpu and memory requests
as fractions of the template's allocatable, upstream's ``DecreasingPodOrderer``); each pod goes on a new node
already opened if it fits one (in opening order), else a new node is opened -- unless ``limit`` nodes are open,
which ends the estimate. A pod that does not fit a fresh node is left out, and with it the pods of its
equivalence group (:func:`equivalence_key`; upstream remembers such "permanent" failures per group). Nodes left
without pods are not counted. The simulator is a fork: the caller's cluster is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.pods import pod_requests
from kubeplane.api.views import controller_ref_of, labels_of, meta_of, spec_of
from kubeplane.autoscaler.simulator import ClusterSimulator, pod_key
from kubeplane.scheduler.framework.types import Resource

__all__ = ["Estimate", "binpacking_estimate", "equivalence_key", "template_copy"]

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Estimate:
    node_count: int
    pods: tuple[Obj, ...]
    """The pods the new nodes would hold, in the order they were placed."""


def template_copy(template: Obj, name: str) -> dict[str, Any]:
    """The template node renamed (hostname label too)."""
    meta = dict(meta_of(template))
    labels = dict(meta.get("labels") or {})
    if "kubernetes.io/hostname" in labels:
        labels["kubernetes.io/hostname"] = name
    meta.update(name=name, labels=labels, uid=name)
    return {**template, "metadata": meta}


def _size_score(pod: Obj, allocatable: Resource) -> float:
    requests = pod_requests(pod)
    score = 0.0
    if allocatable.milli_cpu > 0:
        score += requests.get("cpu", 0) / allocatable.milli_cpu
    if allocatable.memory > 0:
        score += requests.get("memory", 0) / allocatable.memory
    return score


def equivalence_key(pod: Obj) -> str:
    """Pods of one controller with the same spec and labels schedule alike (upstream's pod equivalence groups):
    once one fits nowhere, the next would not either."""
    ref = controller_ref_of(pod)
    if ref is None:
        return f"pod:{pod_key(pod)}"
    spec = {k: v for k, v in spec_of(pod).items() if k != "nodeName"}
    body = json.dumps([dict(labels_of(pod)), spec], sort_keys=True, default=_plain)
    return "ctrl:" + str(ref.get("uid") or ref.get("name")) + body


def _plain(value: Any) -> Any:
    """JSON for read-only mappings and sequences (informer caches hand out frozen views)."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)) or hasattr(value, "__iter__"):
        return list(value)
    return str(value)


def binpacking_estimate(
    simulator: ClusterSimulator, pods: Sequence[Obj], template: Obj, *, limit: int, prefix: str
) -> Estimate:
    """The estimate for ``pods`` on copies of ``template`` named ``<prefix>-<i>``, at most ``limit`` nodes."""
    sim = simulator.fork()
    allocatable = Resource.from_resource_list((template.get("status") or {}).get("allocatable"))
    ordered = sorted(pods, key=lambda p: -_size_score(p, allocatable))
    opened: list[str] = []
    used: set[str] = set()
    placed: list[Obj] = []
    failed: set[str] = set()
    for pod in ordered:
        equivalence = equivalence_key(pod)
        if equivalence in failed:
            continue
        on = sim.place(pod, only=opened) if opened else None
        if on is not None:
            placed.append(pod)
            used.add(on)
            continue
        empty = [n for n in opened if n not in used]
        if empty:
            node = empty[0]
        else:
            if len(opened) >= limit:
                break
            node = f"{prefix}-{len(opened)}"
            sim.add_node(template_copy(template, node))
            opened.append(node)
        if sim.place(pod, only=(node,)) is not None:
            placed.append(pod)
            used.add(node)
        else:
            failed.add(equivalence)
    return Estimate(len(used), tuple(placed))
