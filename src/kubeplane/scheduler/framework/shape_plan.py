"""Per-shape plans: the PreFilter and PreScore outcomes of pod-pure plugins, kept per pod shape (issue 29).

Why: a scheduling cycle runs about twenty PreFilter and PreScore plugins, each 1-8 µs, and for most of them the
outcome is a function of the pod alone: NodeResourcesFit's requests, NodePorts' host ports, NodeAffinity's
compiled terms, TaintToleration's tolerations, the volume plugins' SKIP for a pod without claims. Pods of one
workload share one shape (upstream v1.35+ signs pods and batches them on the same idea: ``SignPod``), so later pods
of a shape replay what an earlier one's plugins returned and wrote instead of running them.

Invariants:

* **Key.** A shape is the canonical JSON of the pod's namespace, spec and status (:func:`shape_key`); a pod that
  cannot be encoded has no shape and runs every plugin. Nothing else of the pod (name, uid, labels, annotations,
  owner) is in the key, so a plugin whose outcome reads it must not be planned.
* **Who is planned.** A plugin opts in per pod with ``plans_pre_filter(pod)`` / ``plans_pre_score(pod)``: True
  promises that, for this pod, its status, PreFilterResult and the CycleState entries it writes are a function of
  the key and of the plugin's fixed configuration (no cluster state, no other pod field). The answer is itself a
  function of the key, so it is asked once per shape and plugin. Plugins without the method are never planned.
* **What is replayed.** The plugin's returned status and result (frozen records) and the entries it wrote, in
  order. An outcome is recorded only when the plugin returned normally, deleted nothing, and every value it wrote
  is immutable: a frozen dataclass, or a value whose ``clone()`` returns itself (upstream's own declaration that a
  state is not changed by AddPod/RemovePod). Hence replayed entries are never written to in place: a later step
  that changes state (preemption's AddPod/RemovePod, Reserve) works on a clone or writes a new value, and a
  lazily filled cache inside a shared value is derived from that value's own fields, the same for every pod.
* **Results identical.** The framework applies a replayed outcome exactly as a live one (SKIP sets, status
  wrapping, result merging, rejection order), so statuses, messages, plugin order and per-extension-point metrics
  are unchanged. Cycles that sample per-plugin durations or record for explain run every plugin live.
* **Second pod records.** A shape's first pod runs every plugin live and only leaves its key; the second
  records, the third and later replay (unique pods, such as a StatefulSet's with their hostnames in the spec,
  never pay for recording).
* **Bounded.** At most ``limit`` shapes; when full the plans are forgotten at once (a workload's shapes come back
  on their next pod). Plans never go stale: their inputs are the key and fixed configuration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

import orjson

from kubeplane.scheduler.framework.interface import CycleState, PreFilterResult, Status
from kubeplane.scheduler.framework.types import PodInfo

__all__ = ["LIVE", "Outcome", "ShapePlan", "ShapePlans", "record", "shape_key"]

LIVE: Final = "live"
"""A plan slot for a plugin that is not planned for this shape: it runs every cycle."""


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """One plugin's recorded PreFilter or PreScore outcome: what it returned and the entries it wrote."""

    result: PreFilterResult | None
    status: Status | None
    writes: tuple[tuple[str, Any], ...]


class ShapePlan:
    """The slots of one shape: per PreFilter and per PreScore plugin (framework order), an :class:`Outcome`,
    :data:`LIVE`, or None (not yet seen: the next cycle runs it and records it if the plugin opts in)."""

    __slots__ = ("pre_filter", "pre_score")

    def __init__(self, pre_filters: int, pre_scores: int) -> None:
        self.pre_filter: list[Outcome | str | None] = [None] * pre_filters
        self.pre_score: list[Outcome | str | None] = [None] * pre_scores


def shape_key(pod: PodInfo) -> bytes | None:
    """The canonical JSON of the pod's namespace, spec and status; None when not JSON (no plan then)."""
    obj = pod.pod
    try:
        return orjson.dumps([pod.namespace, obj.get("spec"), obj.get("status")], option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


class ShapePlans:
    """The plans of one profile's framework, by shape key."""

    __slots__ = ("_limit", "_plans", "_sizes")

    def __init__(self, pre_filters: int, pre_scores: int, limit: int = 256) -> None:
        self._sizes = (pre_filters, pre_scores)
        self._limit = limit
        self._plans: dict[bytes, ShapePlan | None] = {}

    def __len__(self) -> int:
        return len(self._plans)

    def plan(self, pod: PodInfo) -> ShapePlan | None:
        """The plan of ``pod``'s shape; None when the pod has no shape, or is the first of its shape (a shape
        seen once is only remembered: a workload of unique pods pays a key per pod, not a recording)."""
        key = shape_key(pod)
        if key is None:
            return None
        plans = self._plans
        found = plans.get(key, _ABSENT)
        if found is _ABSENT:
            if len(plans) >= self._limit:
                plans.clear()
            plans[key] = None
            return None
        if found is None:
            found = plans[key] = ShapePlan(*self._sizes)
        return found  # type: ignore[return-value]


def _immutable(value: Any) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    if params is not None and params.frozen:
        return True
    clone = getattr(value, "clone", None)
    return clone is not None and clone() is value


def record(
    before: Mapping[str, Any], state: CycleState, result: PreFilterResult | None, status: Status | None
) -> Outcome | str:
    """The outcome of a plugin call that turned ``before`` (a copy of the state's entries) into ``state``:
    :data:`LIVE` when it cannot be replayed (it deleted an entry, wrote a mutable value, or failed with an
    exception object, which is not a shareable value)."""
    after = state.entries()
    if any(key not in after for key in before):
        return LIVE
    writes = tuple((k, v) for k, v in after.items() if before.get(k, _ABSENT) is not v)
    if any(not _immutable(v) for _, v in writes):
        return LIVE
    if status is not None and status.error is not None:
        return LIVE
    return Outcome(result, status, writes)


_ABSENT: Final = object()
