"""ImageLocality: prefer nodes that already hold the pod's images (upstream ``plugins/imagelocality``, v1.37).

Score, per node: each image of the pod (init containers, containers, image volumes) present on the node adds
its size scaled by its spread, ``size * nodesHavingIt / allNodes`` (damping the "node heating" a large image
on few nodes would cause); the sum is clamped to ``[23 MiB, 1000 MiB * number of images]`` and mapped linearly
to ``[0, 100]``. No NormalizeScore.

Image names are normalised as upstream (``:latest`` appended when the reference has no tag). Node image states
(size, number of nodes holding the image) come from the scheduler cache through ``NodeInfo.image_states``; the
node count from ``handle.snapshot().list()``. PreScore (not upstream's: a cache of per-cycle work, no effect on
results) normalises the pod's image names and counts the snapshot's nodes once per cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.scheduler.backend.row_memo import RowMemo
from kubeplane.scheduler.framework.interface import MAX_NODE_SCORE, CycleState, ScoreExtensions, Status
from kubeplane.scheduler.plugins.helper import go_div

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MB",
    "MIN_THRESHOLD",
    "NAME",
    "ImageLocality",
    "calculate_priority",
    "new",
    "normalized_image_name",
    "pod_image_names",
    "scaled_image_score",
    "sum_image_scores",
]

NAME = "ImageLocality"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
"""Below this (scaled) total the score is 0."""
MAX_CONTAINER_THRESHOLD = 1000 * MB
"""Per image: a total of ``MAX_CONTAINER_THRESHOLD * images`` or more scores 100."""


def normalized_image_name(name: str) -> str:
    """The CRI-style name: ``:latest`` added when the last ``:`` is not after the last ``/``."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def pod_image_names(pod: PodInfo) -> tuple[str, ...]:
    """The normalised images of init containers, containers and image volumes, in that order."""
    spec = pod.spec
    names = [normalized_image_name(c.get("image") or "") for c in spec.get("initContainers") or ()]
    names += [normalized_image_name(c.get("image") or "") for c in spec.get("containers") or ()]
    for volume in spec.get("volumes") or ():
        image = volume.get("image")
        if image is not None:
            names.append(normalized_image_name(image.get("reference") or ""))
    return tuple(names)


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    """The image's size scaled by its spread over the cluster (float64 arithmetic, truncated, as upstream)."""
    if total_num_nodes <= 0:
        return 0
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def sum_image_scores(node_info: NodeInfo, images: Sequence[str], total_num_nodes: int) -> int:
    """The sum of the scaled scores of the images present on the node."""
    states = node_info.image_states
    total = 0
    for image in images:
        state = states.get(image)
        if state is not None:
            total += scaled_image_score(state, total_num_nodes)
    return total


def calculate_priority(sum_scores: int, num_images: int) -> int:
    """Clamp to ``[MIN_THRESHOLD, MAX_CONTAINER_THRESHOLD * num_images]`` and scale to ``[0, 100]``."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_images
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    images: tuple[str, ...]
    total_num_nodes: int

    def clone(self) -> _PreScoreState:
        return self


class ImageLocality:
    """PreScore (a per-pod cache) and Score."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        self._memo = RowMemo()

    def name(self) -> str:
        return NAME

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        total_num_nodes = len(self._handle.snapshot().list())  # the snapshot is fixed for the cycle
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(pod_image_names(pod), total_num_nodes))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            images, total_num_nodes = s.images, s.total_num_nodes
        else:
            images, total_num_nodes = pod_image_names(pod), len(self._handle.snapshot().list())
        return calculate_priority(sum_image_scores(node, images, total_num_nodes), len(images)), None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`score` for ``rows``, kept across cycles per (images, node count) in a :class:`RowMemo`: a row's
        score depends only on its NodeInfo's image states, which the cache copies (with their ``num_nodes``)
        only into a NodeInfo whose generation changed, so an unchanged row keeps its score."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            images, total_num_nodes = s.images, s.total_num_nodes
        else:
            images, total_num_nodes = pod_image_names(pod), len(self._handle.snapshot().list())
        infos = table.node_infos

        def one(r: int) -> int:
            return calculate_priority(sum_image_scores(infos[r], images, total_num_nodes), len(images))

        return self._memo.get(
            table,
            (images, total_num_nodes),
            lambda at: _scores(table, at, images, total_num_nodes),
            rows,
            one=one,
        )

    def score_extensions(self) -> ScoreExtensions | None:
        return None


def _scores(table: NodeTable, rows: IntArray, images: tuple[str, ...], total_num_nodes: int) -> IntArray:
    """The scores of ``rows``; nodes without any image state score the floor without a lookup, and nodes holding
    the pod's images in the same states score alike (one computation per distinct state)."""
    floor = calculate_priority(0, len(images))
    out: IntArray = np.full(len(rows), floor, np.int64)
    infos = table.node_infos
    hits = np.flatnonzero(table.has_images[rows])
    if len(hits):
        memo: dict[tuple[tuple[int, int] | None, ...], int] = {}
        for j, r in zip(hits.tolist(), rows[hits].tolist(), strict=True):
            node = infos[r]
            states = node.image_states
            if states:
                key = tuple(None if (st := states.get(image)) is None else (st.size, st.num_nodes) for image in images)
                score = memo.get(key)
                if score is None:
                    score = memo[key] = calculate_priority(sum_image_scores(node, images, total_num_nodes), len(images))
                out[j] = score
    return out


def new(args: Mapping[str, Any], handle: Handle) -> ImageLocality:
    """The plugin factory; ImageLocality has no args."""
    return ImageLocality(handle)
