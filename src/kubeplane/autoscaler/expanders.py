"""Choosing among the groups that could help (cluster-autoscaler's expander/: random, mostpods, waste, price,
priority).

An :class:`Option` is one group with its estimate. Every expander but ``random`` is a *filter*: it keeps the
best options (ties all kept). :func:`best_option` runs the ``--expander`` chain in order, stopping when one option
remains, and breaks what ties remain at random with the injected ``rng`` (upstream's chain semantics; a single
filter expander also ends in a random choice among its ties).

* ``most-pods``: the options that would schedule the most pods.
* ``least-waste``: the least unused cpu + memory fraction of the new nodes (``(capacity*count - requested) /
  (capacity*count)`` for cpu, the same for memory, summed; capacity from the template node).
* ``price``: lowest ``unfitness * (nodes_price + s) / (pods_price + s)`` (upstream's formula): the nodes' price is
  the group's ``price_per_hour`` times the node count; a pod's price and the stabilisation price ``s`` (a pod of
  0.5 cpu and 0.5 GiB) use GCE's reference per-core and per-GiB hourly prices (upstream's GCE pricing model; a
  group without ``price_per_hour`` is priced by the same linear model on its capacity). ``unfitness`` is
  ``max(cpu/preferred, preferred/cpu)`` against upstream's SimplePreferredNodeProvider's preferred core count
  (1, 2, 4, 8, 16 or 32 cores as the cluster has <= 2, 6, 20, 60, 200 or more nodes), suppressed by
  ``1 - tanh((count-1)/15)`` as upstream, and 1000 for GPU groups.
* ``priority``: the options whose group name matches a regular expression (``re.search``, Go's
  ``MatchString``) listed under the highest priority in the ``priorities`` key of the
  ``cluster-autoscaler-priority-expander`` ConfigMap (YAML ``{priority: [regex, ...]}``); no match or no usable
  ConfigMap keeps every option.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from kubeplane.api import yamlio
from kubeplane.api.pods import pod_requests
from kubeplane.scheduler.framework.types import Resource

__all__ = [
    "PRIORITY_CONFIGMAP",
    "Option",
    "PriorityError",
    "best_option",
    "least_waste",
    "most_pods",
    "parse_priorities",
    "price",
    "priority",
]

Obj = Mapping[str, Any]

PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
CPU_PRICE_PER_HOUR = 0.033174
"""GCE's reference price of one core for an hour (upstream cloudprovider/gce/reserved.go)."""
MEMORY_PRICE_PER_GIB_HOUR = 0.004446
GPU_UNFITNESS = 1000.0
_GIB = 1024**3


@dataclass(frozen=True, slots=True)
class Option:
    """One group that could help: ``node_count`` new nodes holding ``pods``."""

    group: str
    node_count: int
    pods: tuple[Obj, ...]
    template: Obj
    price_per_hour: float = 0.0


class PriorityError(ValueError):
    """The priority ConfigMap's ``priorities`` cannot be used (one line)."""


def _capacity(node: Obj) -> Resource:
    status = node.get("status") or {}
    return Resource.from_resource_list(status.get("capacity") or status.get("allocatable"))


def _requested(pods: Sequence[Obj]) -> tuple[int, int]:
    cpu = memory = 0
    for pod in pods:
        r = pod_requests(pod)
        cpu += r.get("cpu", 0)
        memory += r.get("memory", 0)
    return cpu, memory


def most_pods(options: Sequence[Option]) -> list[Option]:
    best = max((len(o.pods) for o in options), default=0)
    return [o for o in options if len(o.pods) == best]


def _waste(option: Option) -> float:
    capacity = _capacity(option.template)
    cpu, memory = _requested(option.pods)
    score = 0.0
    avail_cpu = capacity.milli_cpu * option.node_count
    avail_mem = capacity.memory * option.node_count
    if avail_cpu > 0:
        score += (avail_cpu - cpu) / avail_cpu
    if avail_mem > 0:
        score += (avail_mem - memory) / avail_mem
    return score


def least_waste(options: Sequence[Option]) -> list[Option]:
    return _lowest(options, _waste)


def _linear_price(milli_cpu: int, memory: int) -> float:
    return milli_cpu / 1000 * CPU_PRICE_PER_HOUR + memory / _GIB * MEMORY_PRICE_PER_GIB_HOUR


def preferred_cpu(cluster_size: int) -> int:
    """Upstream SimplePreferredNodeProvider: the node size doubles each time the cluster triples."""
    for limit, cores in ((2, 1), (6, 2), (20, 4), (60, 8), (200, 16)):
        if cluster_size <= limit:
            return cores
    return 32


def _has_gpu(node: Obj) -> bool:
    return any(
        k.endswith("/gpu") and v not in (0, "0") for k, v in ((node.get("status") or {}).get("capacity") or {}).items()
    )


def price_score(option: Option, *, cluster_size: int) -> float:
    capacity = _capacity(option.template)
    node_price = option.price_per_hour or _linear_price(capacity.milli_cpu, capacity.memory)
    cpu, memory = _requested(option.pods)
    pods_price = _linear_price(cpu, memory)
    stabilization = _linear_price(500, _GIB // 2)
    sub_score = (node_price * option.node_count + stabilization) / (pods_price + stabilization)
    if _has_gpu(option.template):
        suppressed = GPU_UNFITNESS
    else:
        preferred = preferred_cpu(cluster_size) * 1000
        cores = max(capacity.milli_cpu, 1)
        unfitness = max(cores / preferred, preferred / cores)
        suppressed = (unfitness - 1.0) * (1.0 - math.tanh((option.node_count - 1) / 15.0)) + 1.0
    return suppressed * sub_score


def price(options: Sequence[Option], *, cluster_size: int) -> list[Option]:
    return _lowest(options, lambda o: price_score(o, cluster_size=cluster_size))


def parse_priorities(text: str) -> list[tuple[int, list[re.Pattern[str]]]]:
    """The ``priorities`` value: highest priority first."""
    try:
        data = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise PriorityError(f"Can't parse YAML with priorities in the configmap: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise PriorityError("Can't parse YAML with priorities in the configmap: not a mapping")
    out: list[tuple[int, list[re.Pattern[str]]]] = []
    for key, patterns in data.items():
        try:
            prio = int(key)
        except (TypeError, ValueError):
            raise PriorityError(f"Can't parse YAML with priorities in the configmap: bad priority {key!r}") from None
        if not isinstance(patterns, list):
            raise PriorityError(f"Can't parse YAML with priorities in the configmap: {key} is not a list")
        compiled = []
        for p in patterns:
            try:
                compiled.append(re.compile(str(p)))
            except re.error as exc:
                raise PriorityError(f"Can't compile regexp rule for priority {prio} and rule {p}: {exc}") from None
        out.append((prio, compiled))
    out.sort(key=lambda item: -item[0])
    return out


def priority(options: Sequence[Option], priorities: Sequence[tuple[int, Sequence[re.Pattern[str]]]]) -> list[Option]:
    best: list[Option] = []
    best_prio: int | None = None
    for option in options:
        for prio, patterns in priorities:
            if any(p.search(option.group) for p in patterns):
                if best_prio is None or prio > best_prio:
                    best, best_prio = [option], prio
                elif prio == best_prio:
                    best.append(option)
                break
    return best if best else list(options)


def _lowest(options: Sequence[Option], score: Callable[[Option], float]) -> list[Option]:
    scored = [(score(o), o) for o in options]
    low = min((s for s, _ in scored), default=0.0)
    return [o for s, o in scored if math.isclose(s, low, rel_tol=1e-9, abs_tol=1e-12)]


def best_option(
    options: Sequence[Option],
    *,
    expanders: Sequence[str],
    rng: random.Random,
    cluster_size: int = 0,
    priorities: Sequence[tuple[int, Sequence[re.Pattern[str]]]] = (),
) -> Option | None:
    """The chain's choice (module docstring); None without options."""
    remaining = list(options)
    for name in expanders:
        if len(remaining) <= 1:
            break
        if name == "most-pods":
            remaining = most_pods(remaining)
        elif name == "least-waste":
            remaining = least_waste(remaining)
        elif name == "price":
            remaining = price(remaining, cluster_size=cluster_size)
        elif name == "priority":
            remaining = priority(remaining, priorities)
    if not remaining:
        return None
    return remaining[0] if len(remaining) == 1 else rng.choice(remaining)
