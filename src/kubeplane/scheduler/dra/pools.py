"""Resource pools visible from one node (upstream ``internal/incubating/pools_incubating.go``).

A pool is ``(driver, pool name)``; its slices of the newest generation seen count. Invariants:

* a slice is relevant when its ``nodeName`` is the node, ``allNodes`` is set, its ``nodeSelector`` matches, or
  (``perDeviceNodeSelection``, partitionable devices) one of its devices selects the node; other slices are ignored
  (with the feature off, ``perDeviceNodeSelection`` slices are skipped);
* a pool is *incomplete* when fewer slices of its generation exist than ``resourceSliceCount`` (counting slices
  not relevant to the node too); a pool whose generation is superseded by a slice elsewhere is dropped;
* a pool is *invalid* when a device name repeats ("duplicate device name X").

Devices of incomplete or invalid pools are never allocated; "All" requests refuse such pools outright.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.nodeaffinity import new_node_selector
from kubeplane.scheduler.dra.features import Features

__all__ = ["Pool", "PoolError", "gather_pools", "node_matches"]


class PoolError(Exception):
    """A slice's node selection could not be evaluated (a fatal allocator error upstream)."""


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    generation: int
    slice_count: int
    slices: list[Mapping[str, Any]] = field(default_factory=list)
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"

    def counter_sets(self) -> list[Mapping[str, Any]]:
        """The pool's sharedCounters, from every slice (partitionable devices)."""
        return [cs for s in self.slices for cs in (_spec(s).get("sharedCounters") or ())]


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def node_matches(
    node: Mapping[str, Any] | None, node_name: str, all_nodes: bool, node_selector: Mapping[str, Any] | None
) -> bool:
    """Upstream ``NodeMatches``; raises :class:`PoolError` for a selector that does not parse."""
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        try:
            selector = new_node_selector(node_selector)
        except ValueError as exc:
            raise PoolError(f"failed to parse node selector {node_selector}: {exc}") from exc
        return node is not None and selector.matches(node)
    return False


def _pool_of(spec: Mapping[str, Any]) -> tuple[str, str, int, int]:
    pool = spec.get("pool") or {}
    return (
        str(spec.get("driver") or ""),
        str(pool.get("name") or ""),
        int(pool.get("generation") or 0),
        int(pool.get("resourceSliceCount") or 0),
    )


def _add(pools: dict[tuple[str, str], Pool], slice_: Mapping[str, Any]) -> None:
    driver, name, generation, count = _pool_of(_spec(slice_))
    pool = pools.get((driver, name))
    if pool is None:
        pools[(driver, name)] = Pool(driver, name, generation, count, [slice_])
        return
    if generation < pool.generation:
        return
    if generation > pool.generation:
        pool.slices, pool.generation, pool.slice_count = [], generation, count
    pool.slices.append(slice_)


def _relevant(slice_: Mapping[str, Any], node: Mapping[str, Any], features: Features) -> bool:
    spec = _spec(slice_)
    if not features.partitionable_devices and spec.get("perDeviceNodeSelection") is not None:
        return False
    node_name, all_nodes, selector = (
        str(spec.get("nodeName") or ""),
        bool(spec.get("allNodes")),
        spec.get("nodeSelector"),
    )
    try:
        if node_name or all_nodes or selector is not None:
            return node_matches(node, node_name, all_nodes, selector)
        if spec.get("perDeviceNodeSelection"):
            return any(
                node_matches(node, str(d.get("nodeName") or ""), bool(d.get("allNodes")), d.get("nodeSelector"))
                for d in spec.get("devices") or ()
            )
    except PoolError as exc:
        raise PoolError(
            f"failed to perform node selection for slice {(slice_.get('metadata') or {}).get('name')}: {exc}"
        ) from exc
    return False  # some future, unknown node selection


def _check_slices(all_slices: Sequence[Mapping[str, Any]], pool: Pool) -> tuple[bool, int]:
    """(obsolete, number of slices with the pool's generation) over every slice (upstream ``checkSlicesInPool``)."""
    count = 0
    for s in all_slices:
        driver, name, generation, _ = _pool_of(_spec(s))
        if driver != pool.driver or name != pool.name:
            continue
        if generation == pool.generation:
            count += 1
        elif generation > pool.generation:
            return True, 0
    return False, count


def _invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for s in pool.slices:
        for device in _spec(s).get("devices") or ():
            name = str(device.get("name") or "")
            if name in seen:
                return True, f"duplicate device name {name}"
            seen.add(name)
    return False, ""


def gather_pools(
    slices: Sequence[Mapping[str, Any]],
    node: Mapping[str, Any],
    features: Features,
    all_slices: Sequence[Mapping[str, Any]],
) -> list[Pool]:
    """Upstream ``GatherPools``: the pools of ``slices`` relevant for ``node``, in first-seen order (Go's map
    order is random; kubeplane keeps the slices' order so results are reproducible), except that pools with a
    device carrying ``bindingConditions`` come after all others, as v1.37's allocator orders them ("pools without
    binding conditions are always evaluated before those with binding conditions, regardless of their names"), so
    a simpler device wins when both fit."""
    pools: dict[tuple[str, str], Pool] = {}
    for s in slices:
        if _relevant(s, node, features):
            _add(pools, s)
    result = []
    for pool in pools.values():
        complete = len(pool.slices) == pool.slice_count
        if not complete:
            obsolete, count = _check_slices(all_slices, pool)
            if obsolete:
                continue
            complete = count == pool.slice_count
        pool.is_incomplete = not complete
        pool.is_invalid, pool.invalid_reason = _invalid(pool)
        result.append(pool)
    return [p for p in result if not _has_binding_conditions(p)] + [p for p in result if _has_binding_conditions(p)]


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.get("bindingConditions") is not None for s in pool.slices for d in _spec(s).get("devices") or ())
