"""What several in-tree plugins share (upstream ``pkg/scheduler/framework/plugins/helper``).

* :func:`default_normalize_score` is upstream ``helper.DefaultNormalizeScore``: integer arithmetic with Go's
  truncating division, scores rewritten in place.
* :func:`as_pod_info` / :func:`pod_uid_of` / :func:`node_taints_of` read the objects queueing hints receive
  (wire dicts from the informers, or already-built PodInfo/NodeInfo), so hint functions work with either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, Taint
from kubeplane.api.views import NodeView, meta_of
from kubeplane.scheduler.framework.interface import NodeScore, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import IntArray

__all__ = [
    "as_pod_info",
    "default_normalize_score",
    "do_not_schedule_taint",
    "go_div",
    "go_div_vector",
    "node_taints_of",
    "node_unschedulable_of",
    "pod_uid_of",
]


def go_div(a: int, b: int) -> int:
    """Go's integer division: the quotient truncated toward zero (Python's ``//`` floors).

    The one home of Go's division for the scores (upstream computes every score in int64): this and
    :func:`go_div_vector` must agree, as the vectorised scores are held to the per-node reference.
    """
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_div_vector(a: IntArray, b: IntArray) -> IntArray:
    """:func:`go_div` elementwise; ``b`` must hold no zero."""
    q: IntArray = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def default_normalize_score(max_priority: int, reverse: bool, scores: Sequence[NodeScore]) -> Status | None:
    """Scale scores from ``[0, max(scores)]`` to ``[0, max_priority]`` in place; ``reverse`` flips them.

    As upstream: when every score is 0 (or negative) the scores stay as they are, or all become
    ``max_priority`` when ``reverse``; otherwise ``score = max_priority * score / max`` (truncated), then
    ``max_priority - score`` when ``reverse``. Always returns None (success).
    """
    max_count = 0
    for ns in scores:
        max_count = max(max_count, ns.score)
    if max_count == 0:
        if reverse:
            for ns in scores:
                ns.score = max_priority
        return None
    for ns in scores:
        score = go_div(max_priority * ns.score, max_count)
        ns.score = max_priority - score if reverse else score
    return None


def default_normalize_vector(max_priority: int, reverse: bool, scores: IntArray) -> IntArray:
    """:func:`default_normalize_score` over an int64 array (the vectorised scoring path); returns a new array."""
    max_count = int(scores.max()) if len(scores) else 0
    max_count = max(max_count, 0)
    if max_count == 0:
        return np.full(len(scores), max_priority, np.int64) if reverse else scores.copy()
    product = max_priority * scores
    scaled: IntArray = np.sign(product) * (np.abs(product) // max_count)  # Go's truncating division
    if reverse:
        flipped: IntArray = max_priority - scaled
        return flipped
    return scaled


_DO_NOT_SCHEDULE = frozenset({EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE})


def do_not_schedule_taint(taint: Taint) -> bool:
    """NoSchedule and NoExecute taints: the ones a pod must tolerate (``DoNotScheduleTaintsFilterFunc``)."""
    return taint.effect in _DO_NOT_SCHEDULE


def as_pod_info(obj: Any) -> PodInfo:
    """A PodInfo for a queueing hint's pod object (a PodInfo already, or a pod dict)."""
    return obj if isinstance(obj, PodInfo) else PodInfo(obj)


def pod_uid_of(obj: Any) -> str:
    """The pod's uid as :class:`PodInfo` computes it (``namespace/name`` when the object has none)."""
    if isinstance(obj, PodInfo):
        return obj.uid
    meta = meta_of(obj)
    uid: str = meta.get("uid") or f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
    return uid


def node_taints_of(obj: Any) -> tuple[Taint, ...]:
    """The taints of a node dict or NodeInfo."""
    if isinstance(obj, NodeInfo):
        return obj.taints
    return tuple(Taint.from_dict(t) for t in NodeView(obj).taints)


def node_unschedulable_of(obj: Any) -> bool:
    """``spec.unschedulable`` of a node dict or NodeInfo."""
    if isinstance(obj, NodeInfo):
        return obj.unschedulable
    return NodeView(obj).unschedulable
