"""Taints of the node lifecycle controller: which NoSchedule taints a node's conditions call for, and the taint
writes (upstream ``pkg/controller/nodelifecycle`` with ``controller_utils``' ``SwapNodeControllerTaint``,
``AddOrUpdateTaintOnNode`` and ``RemoveTaintOffNode``).

A taint write reads the node from the API and merge-patches ``spec.taints`` with the node's ``resourceVersion``,
so a concurrent change makes it conflict and retry (upstream's ``UpdateTaintBackoff``, 5 steps); a write whose
result equals the current taints is not sent. Taints match by key and effect; an added taint is stamped
``timeAdded`` with the controller clock's now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, Taint, match_taint
from kubeplane.api.views import NodeView
from kubeplane.client.clock import Clock
from kubeplane.client.errors import ConflictError
from kubeplane.client.interface import Client, Obj

__all__ = [
    "CONDITION_TAINT_KEYS",
    "NODE_CONDITION_TO_TAINT",
    "NOT_READY_TAINT",
    "UNREACHABLE_TAINT",
    "NodeTaintWriter",
    "add_or_update",
    "has_taint",
    "no_schedule_taint_diff",
]

log = logging.getLogger(__name__)

TAINT_UPDATE_RETRIES = 5  # upstream UpdateTaintBackoff steps

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNREACHABLE_TAINT = Taint(TAINT_UNREACHABLE, EFFECT_NO_EXECUTE)
NOT_READY_TAINT = Taint(TAINT_NOT_READY, EFFECT_NO_EXECUTE)

NODE_CONDITION_TO_TAINT: Mapping[str, Mapping[str, str]] = {
    "Ready": {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
"""Upstream ``nodeConditionToTaintKeyStatusMap``: condition type -> status -> NoSchedule taint key."""
CONDITION_TAINT_KEYS = frozenset(k for m in NODE_CONDITION_TO_TAINT.values() for k in m.values())


def node_taints(node: Mapping[str, Any]) -> list[Taint]:
    return [Taint.from_dict(t) for t in NodeView(node).taints]


def has_taint(node: Mapping[str, Any], taint: Taint) -> bool:
    return any(t.key == taint.key and t.effect == taint.effect for t in node_taints(node))


def no_schedule_taint_diff(node: Mapping[str, Any]) -> tuple[list[Taint], list[Taint]]:
    """``(to add, to remove)`` so the node's condition and unschedulable NoSchedule taints match its state
    (upstream ``doNoScheduleTaintingPass`` with ``TaintSetDiff``: matching by key and effect)."""
    view = NodeView(node)
    wanted: list[Taint] = []
    for condition in view.conditions:
        key = NODE_CONDITION_TO_TAINT.get(str(condition.get("type")), {}).get(str(condition.get("status")))
        if key:
            wanted.append(Taint(key, EFFECT_NO_SCHEDULE))
    if view.unschedulable:
        wanted.append(Taint(TAINT_UNSCHEDULABLE, EFFECT_NO_SCHEDULE))
    current = [
        t
        for t in node_taints(node)
        if t.effect == EFFECT_NO_SCHEDULE and (t.key == TAINT_UNSCHEDULABLE or t.key in CONDITION_TAINT_KEYS)
    ]
    add = [w for w in wanted if not any(match_taint(w.to_dict(), c.to_dict()) for c in current)]
    remove = [c for c in current if not any(match_taint(w.to_dict(), c.to_dict()) for w in wanted)]
    return add, remove


class NodeTaintWriter:
    """Writes a node's taints through ``client`` (module docstring)."""

    def __init__(self, client: Client, nodes: ResourceInfo, clock: Clock) -> None:
        self.client = client
        self.nodes_res = nodes
        self.clock = clock

    async def swap(self, name: str, add: Sequence[Taint], remove: Sequence[Taint], node: Obj | None) -> bool:
        """Add ``add`` (stamped ``timeAdded`` now), then remove ``remove``; False (logged) on failure."""
        stamp = format_time(self.clock.now())
        try:
            await self.add_or_update(name, [Taint(t.key, t.effect, t.value, stamp) for t in add])
            await self.remove(name, remove, node)
        except Exception as exc:
            log.error("unable to swap taints of node %s: %s", name, exc)
            return False
        return True

    async def add_or_update(self, name: str, taints: Sequence[Taint]) -> None:
        if not taints:
            return
        await self._patch_taints(name, lambda current: add_or_update(current, taints))

    async def remove(self, name: str, taints: Sequence[Taint], node: Obj | None) -> None:
        if not taints:
            return
        if node is not None and not any(has_taint(node, t) for t in taints):
            return
        await self._patch_taints(
            name,
            lambda current: [c for c in current if not any(c.key == t.key and c.effect == t.effect for t in taints)],
        )

    async def _patch_taints(self, name: str, change: Callable[[list[Taint]], list[Taint]]) -> None:
        for attempt in range(TAINT_UPDATE_RETRIES):
            node = await self.client.get(self.nodes_res, name)
            current = node_taints(node)
            new = change(current)
            if new == current:
                return
            patch = {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "spec": {"taints": [t.to_dict() for t in new] or None},
            }
            try:
                await self.client.patch(self.nodes_res, name, patch)
                return
            except ConflictError:
                if attempt == TAINT_UPDATE_RETRIES - 1:
                    raise


def add_or_update(current: list[Taint], taints: Sequence[Taint]) -> list[Taint]:
    """Upstream ``AddOrUpdateTaint`` applied in turn: a taint with the same key and effect is replaced (unless
    identical, ``timeAdded`` included), else appended."""
    out = list(current)
    for taint in taints:
        for i, existing in enumerate(out):
            if existing.key == taint.key and existing.effect == taint.effect:
                out[i] = taint
                break
        else:
            out.append(taint)
    return out
