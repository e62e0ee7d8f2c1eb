"""VolumeBinding's capacity scorer (upstream ``volumebinding/scorer.go`` and ``Score``'s grouping by class).

A node's score is, per storage class, the shape (``helper.BuildBrokenLinearFunction``) at the utilisation
``requested * 100 / capacity`` (Go integer division; 100 when the capacity is 0 or smaller than the request),
averaged over the classes with Go's ``math.Round``. All classes weigh the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubeplane.api.quantity import parse_value
from kubeplane.api.volumes import claim_class
from kubeplane.scheduler.plugins.resource_allocation import ShapePoint, build_broken_linear_function, go_round
from kubeplane.scheduler.plugins.volume_binding_binder import PodVolumes
from kubeplane.scheduler.plugins.volume_binding_helpers import claim_storage_request

__all__ = ["MAX_UTILIZATION", "ClassResources", "StorageResource", "VolumeCapacityScorer", "build_scorer_function"]

MAX_UTILIZATION = 100


@dataclass(slots=True)
class StorageResource:
    """Requested and available bytes of one storage class on a node (upstream ``StorageResource``)."""

    requested: int = 0
    capacity: int = 0


ClassResources = dict[str, StorageResource]
VolumeCapacityScorer = Callable[[ClassResources], int]


def build_scorer_function(shape: Sequence[ShapePoint]) -> VolumeCapacityScorer:
    """Upstream ``buildScorerFunction`` for a shape already scaled to 0..100."""
    raw = build_broken_linear_function(shape)

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)

    def scorer(resources: ClassResources) -> int:
        if not resources:
            return 0
        total = sum(class_score(r.requested, r.capacity) for r in resources.values())
        return go_round(total / len(resources))

    return scorer


def class_resources_of(volumes: PodVolumes, capacity_scoring: bool) -> ClassResources:
    """Upstream ``Score``'s grouping: static bindings (requests and PV capacities summed per PV class) when
    there are any or StorageCapacityScoring is off; otherwise dynamic provisions that were admitted by a
    CSIStorageCapacity (requests summed per claim class, the capacity set - not added - from that object)."""
    resources: ClassResources = {}
    if volumes.static_bindings or not capacity_scoring:
        for binding in volumes.static_bindings:
            r = resources.setdefault(binding.storage_class_name(), StorageResource())
            requested, capacity = binding.storage_resource()
            r.requested += requested
            r.capacity += capacity
        return resources
    for provision in volumes.dynamic_provisions:
        if provision.node_capacity is None:
            continue
        r = resources.setdefault(claim_class(provision.pvc), StorageResource())
        raw = provision.node_capacity.get("capacity")
        r.capacity = 0 if raw is None else parse_value(raw)
        r.requested += claim_storage_request(provision.pvc) or 0
    return resources
