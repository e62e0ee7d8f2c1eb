"""The DaemonSet's RollingUpdate strategy (upstream ``pkg/controller/daemon/update.go``): how many nodes may
surge or be unavailable, and which old pods to replace now.

Pure: the controller (:mod:`.daemonset`) lists the daemon pods per node, asks :func:`rolling_update_plan` for the
pods to delete and the nodes to create on, and carries the plan out with ``syncNodes``, so the limits are
tested here without an API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeplane.api.views import name_of, spec_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.daemonset_util import (
    find_updated_pods_on_node,
    node_should_run_daemon_pod,
    surge_count,
    template_generation,
    unavailable_count,
)
from kubeplane.controllers.podutil import is_pod_available

__all__ = ["rolling_update_plan", "updated_desired_node_counts"]


def updated_desired_node_counts(ds: Obj, nodes: Sequence[Obj], by_node: dict[str, list[Obj]]) -> tuple[int, int, int]:
    """Upstream ``updatedDesiredNodeCounts``: (maxSurge, maxUnavailable, desiredNumberScheduled); every
    eligible node without pods gets an empty entry in ``by_node``. Both limits 0 fall back to 1 unavailable."""
    desired = 0
    for node in nodes:
        if not node_should_run_daemon_pod(node, ds)[0]:
            continue
        desired += 1
        by_node.setdefault(name_of(node), [])
    max_unavailable = unavailable_count(ds, desired)
    max_surge = surge_count(ds, desired)
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1
    return max_surge, max_unavailable, desired


def rolling_update_plan(
    ds: Obj,
    by_node: Mapping[str, Sequence[Obj]],
    counts: tuple[int, int, int],
    *,
    hash_: str,
    now: float,
    get_node: Callable[[str], Obj | None],
) -> tuple[list[str], list[str]]:
    """Upstream ``rollingUpdate``'s decisions: ``(pods to delete, nodes to create a pod on)``.

    Without surge, delete old pods (unavailable ones always, available ones while fewer than maxUnavailable
    nodes are unavailable) and let ``manage`` recreate them; with surge, create new pods beside old ones (up to
    maxSurge at a time) and delete each old pod once its replacement is available. ``by_node`` and ``counts``
    come from :func:`updated_desired_node_counts`; ``get_node`` reads a node from the lister (a node that is
    gone raises LookupError, as upstream returns the error and retries the sync).
    """
    max_surge, max_unavailable, desired = counts
    min_ready = int(spec_of(ds).get("minReadySeconds") or 0)
    generation = template_generation(ds)

    def available(pod: Mapping[str, Any]) -> bool:
        return is_pod_available(pod, min_ready, now)

    if max_surge == 0:
        num_unavailable = 0
        replacements: list[str] = []
        candidates: list[str] = []
        for pods in by_node.values():
            new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_, generation)
            if not ok or (old_pod is None) == (new_pod is None):
                num_unavailable += 1  # manage handles these nodes; count them as unavailable
            elif new_pod is not None:
                if not available(new_pod):
                    num_unavailable += 1
            elif old_pod is not None:
                if not available(old_pod):
                    replacements.append(name_of(old_pod))
                    num_unavailable += 1
                elif num_unavailable < max_unavailable:
                    candidates.append(name_of(old_pod))
        remaining = min(max(max_unavailable - num_unavailable, 0), len(candidates))
        return replacements + candidates[:remaining], []

    old_to_delete: list[str] = []
    should_not_run: list[str] = []
    candidate_nodes: list[str] = []
    allowed_nodes: list[str] = []
    num_surge = num_available = 0
    for node_name, pods in by_node.items():
        new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_, generation)
        if not ok:
            num_surge += 1
            continue
        if old_pod is not None:
            num_available += int(available(old_pod))
        elif new_pod is not None:
            num_available += int(available(new_pod))
        if old_pod is None:
            continue
        if new_pod is None:
            node = get_node(node_name)
            if node is None:
                raise LookupError(f'couldn\'t get node for nodeName "{node_name}"')
            should_run = node_should_run_daemon_pod(node, ds)[0]
            if not available(old_pod):
                if not should_run:
                    old_to_delete.append(name_of(old_pod))
                else:
                    allowed_nodes.append(node_name)
            elif not should_run:
                should_not_run.append(name_of(old_pod))
            elif num_surge < max_surge:
                candidate_nodes.append(node_name)
        elif not available(new_pod):
            num_surge += 1
        else:
            old_to_delete.append(name_of(old_pod))
    # With surge the owner expects full availability: pods on nodes that no longer want them go only as
    # pods elsewhere become available.
    deletable = min(num_available - desired, len(should_not_run))
    if deletable > 0:
        old_to_delete.extend(should_not_run[:deletable])
    remaining = min(max(max_surge - num_surge, 0), len(candidate_nodes))
    return old_to_delete, allowed_nodes + candidate_nodes[:remaining]
