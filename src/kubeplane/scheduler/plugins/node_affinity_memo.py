"""NodeAffinity's required affinity compiled once per distinct spec, not once per pod (issue 29).

Why: a workload's pods share one ``spec.nodeSelector`` and one required node affinity, yet each new PodInfo
compiled them again (selectors, requirements: ~100 µs a pod in SchedulingNodeAffinity's cycle). The compiled
:class:`~kubeplane.api.nodeaffinity.RequiredNodeAffinity` depends only on those two fields (upstream
``GetRequiredNodeAffinity`` reads nothing else), and is immutable, so pods with equal fields can share one.

Invariants:

* The key is the canonical JSON (:func:`~.shape_memo.json_key`) of ``[nodeSelector, required]`` (object keys
  sorted; list order kept, which is significant: terms are ORed in order and errors are reported in order).
  Equal keys ⇒ equal inputs ⇒ equal compiled values. A spec that is not JSON-encodable gets no key and is
  compiled per pod as before.
* The key also identifies the Filter verdict of a node for NodeAffinity's per-row column
  (:class:`~kubeplane.scheduler.backend.row_memo.RowMemo`): the verdict depends only on the node's labels and
  name, the compiled affinity and the plugin's own ``addedAffinity``.
* At most :data:`MAX_SPECS` specs are kept (a :class:`~.shape_memo.ShapeMemo`: it forgets all at once when full).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.nodeaffinity import RequiredNodeAffinity, get_required_node_affinity
from kubeplane.scheduler.plugins.shape_memo import ShapeMemo, json_key

__all__ = ["MAX_SPECS", "required_node_affinity"]

MAX_SPECS = 64
"""Distinct (nodeSelector, required affinity) specs kept: the shapes in use at once."""

_COMPILED: ShapeMemo[RequiredNodeAffinity] = ShapeMemo(MAX_SPECS)


def required_node_affinity(
    pod: Mapping[str, Any], spec: Mapping[str, Any], required: Any
) -> tuple[bytes | None, RequiredNodeAffinity]:
    """``(key, compiled)`` for a pod dict whose ``spec`` has nodeSelector and required node affinity ``required``
    (None when absent); ``key`` is None when the spec has no canonical form (then compiled afresh)."""
    key = json_key([spec.get("nodeSelector"), required])
    if key is None:
        return None, get_required_node_affinity(pod)
    return key, _COMPILED.get(key, lambda: get_required_node_affinity(pod))
