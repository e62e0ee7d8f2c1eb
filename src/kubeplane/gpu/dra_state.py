"""The scheduler-side view of DRA GPUs for the GPU plugins: the cluster's :class:`~kubeplane.gpu.dra.DraIndex` and
every allocated claim's GPU devices, refreshed from the scheduler's informers once per scheduling cycle.

Reconciling the GPU policies with DynamicResources (docs/gpu.md, "DRA GPUs"): for a pod asking GPUs through claims,
DynamicResources' allocator decides feasibility and the devices; the policy plugins only **score** nodes, from the
per-device state this module derives from the claims' ``status.allocation`` (the devices the allocator really took).
GpuShare does not filter, reserve or annotate such a pod. For whole GPUs the policy's score is exactly the score of
the allocator's placement (every free device is alike: the idle multiset after placement is the same whichever free
devices are taken). For a share (consumable capacity) the policy scores its preferred device while the allocator
takes the first device with room; the state then follows the allocator.

Invariants: :meth:`DraState.refresh` costs one pass over slices, classes and claims; a node whose DRA inputs (its
devices, model, the allocated entries on it) changed is reported, so the tracker bumps that node's version and its
cached state is never stale; with no DRA GPU in the cluster nothing is listed per pod and states are as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeplane.gpu.dra import DraIndex, claim_name, claim_usage, pod_dra_request, request_of_specs
from kubeplane.gpu.model import GpuRequest
from kubeplane.scheduler.framework.handle import Handle

__all__ = ["DraState", "Entry"]

Entry = tuple[GpuRequest, tuple[int, ...] | None]
"""A GPU use on a node: the request and its devices (DRA device indices, 0-based among the node's DRA GPUs)."""


def _list(handle: Handle, resource: str) -> Sequence[Mapping[str, Any]]:
    try:
        return handle.list_objects(resource, "")
    except KeyError:  # a handle whose lister does not serve it (offline tools): no DRA
        return ()


def _version(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name") or ""), str(meta.get("resourceVersion") or "")


class DraState:
    """The DRA GPUs of the cluster as of the last :meth:`refresh` (module docstring)."""

    def __init__(self) -> None:
        self.index = DraIndex(())
        self._claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.by_node: dict[str, dict[str, list[Entry]]] = {}
        """node -> pod uid ("" for none) -> the GPU entries of the allocated claims first reserved for that pod."""
        self._nodes: dict[str, tuple[Any, ...]] = {}
        self._index_key: tuple[Any, ...] = ()
        self._usage: dict[tuple[str, str], tuple[Any, Any]] = {}
        """(namespace, name) -> (resourceVersion, claim_usage): a claim is parsed again only when it changed."""

    def refresh(self, handle: Handle, changed: Callable[[str], None]) -> None:
        """Re-read slices, classes and claims; call ``changed(node)`` for every node whose DRA inputs changed."""
        slices = _list(handle, "resourceslices")
        classes = _list(handle, "deviceclasses") if slices else ()
        key = (*(_version(o) for o in slices), "|", *(_version(o) for o in classes))
        # the slices or classes changed (or carry no resourceVersion): re-read the devices, re-map every claim
        if key != self._index_key or not all(v[1] for v in key if v != "|"):
            self._index_key = key
            self.index = DraIndex(slices, classes) if slices else DraIndex(())
            self._usage = {}
        index = self.index
        claims = _list(handle, "resourceclaims") if index else ()
        usages: dict[tuple[str, str], tuple[Any, Any]] = {}
        by_node: dict[str, dict[str, list[Entry]]] = {}
        per_node: dict[str, list[Any]] = {n: [index.count(n), index.model(n)] for n in index.nodes}
        self._claims = {}
        for claim in claims:
            meta = claim.get("metadata") or {}
            ident = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            self._claims[ident] = claim
            version = _version(claim)
            cached = self._usage.get(ident)
            if cached is not None and version[1] and cached[0] == version:
                usage = cached[1]
            else:
                usage = claim_usage(claim, index)
            usages[ident] = (version, usage)
            if usage is None:
                continue
            node, entries = usage
            reserved = [str(r.get("uid") or "") for r in (claim.get("status") or {}).get("reservedFor") or ()]
            owner = reserved[0] if reserved else ""
            by_node.setdefault(node, {}).setdefault(owner, []).extend(entries)
            per_node.setdefault(node, []).append((owner, tuple(entries)))
        self.by_node, self._usage = by_node, usages
        fresh = {n: tuple(v) for n, v in per_node.items()}
        for node in fresh.keys() | self._nodes.keys():
            if fresh.get(node) != self._nodes.get(node):
                changed(node)
        self._nodes = fresh

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._claims.get((namespace, name))

    def pod_entries(self, uid: str, pod: Mapping[str, Any], node: str) -> list[Entry]:
        """The pod's DRA GPU entries on ``node``: the devices of the allocated claims first reserved for it, plus
        the demand of its claims not allocated yet (an assumed pod whose allocation is in flight), without devices
        (first fit). A claim shared with a pod that reserved it first counts once, under that pod."""
        if not self.index or not (pod.get("spec") or {}).get("resourceClaims"):
            return []
        out = list(self.by_node.get(node, {}).get(uid, ()))
        pending = [
            c.get("spec") or {}
            for c in self.claims_of(pod)
            if not ((c.get("status") or {}).get("allocation") or {}).get("devices")
        ]
        request = request_of_specs(pending, self.index) if pending else None
        return out if request is None else [*out, (request, None)]

    def claims_of(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The pod's claims that exist (by ``resourceClaimName`` or the generated name in its status)."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        out = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or ():
            name = claim_name(pod, entry)
            found = self.claim(namespace, name) if name else None
            if found is not None:
                out.append(found)
        return out

    def held(self, node: str, uids: set[str]) -> list[Entry]:
        """Entries of allocated claims on ``node`` whose pod is not among ``uids`` (reserved for no pod, or for a
        pod gone from the node): the allocator still counts their devices as taken, so the model does too."""
        return [e for uid, entries in self.by_node.get(node, {}).items() if uid not in uids for e in entries]

    def request(self, pod: Mapping[str, Any]) -> GpuRequest | None:
        """The pod's GPU demand through its claims (None without DRA GPUs in the cluster)."""
        return pod_dra_request(pod, self.index, self.claim) if self.index else None
