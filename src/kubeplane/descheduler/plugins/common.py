"""What the plugins share: the pod filter each builds from its ``namespaces``/``labelSelector`` and the
profile's evictor, and the per-node eviction loop with upstream's handling of the limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.descheduler import podutil
from kubeplane.descheduler.args import Namespaces
from kubeplane.descheduler.framework import EvictionLimitError, Handle, NodeLimitError, TotalLimitError

Obj = Mapping[str, Any]

__all__ = ["StopPass", "evict_on_node", "pod_filter"]


class StopPass(Exception):
    """The total limit was reached: the plugin ends its run (upstream returns nil on EvictionTotalLimitError)."""


def pod_filter(
    handle: Handle,
    *,
    namespaces: Namespaces | None = None,
    label_selector: Mapping[str, Any] | None = None,
    pre_eviction: bool = True,
) -> podutil.PodFilter:
    """Upstream ``podutil.NewOptions().WithFilter(Filter, PreEvictionFilter).WithNamespaces(...)...``."""
    filters: list[podutil.PodFilter] = [handle.filter]
    if pre_eviction:
        filters.append(handle.pre_eviction_filter)
    return podutil.build_filter(namespaces=namespaces, label_selector=label_selector, filters=filters)


async def evict_on_node(handle: Handle, pods: Sequence[Obj], *, strategy: str) -> None:
    """Evict ``pods`` (of one node) in order: a node limit ends this node's loop, the total limit the run
    (:class:`StopPass`), any other failure is logged and the loop goes on."""
    for pod in pods:
        try:
            await handle.evict(pod, strategy=strategy)
        except NodeLimitError:
            return
        except TotalLimitError:
            raise StopPass from None
        except EvictionLimitError:  # the namespace limit: upstream logs "eviction failed" and goes on
            continue
