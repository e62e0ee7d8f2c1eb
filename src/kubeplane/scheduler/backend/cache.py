"""The scheduler cache: every node and every bound or assumed pod, aggregated per node (upstream ``cache.go``).

Pods, keyed by UID, move through upstream's state machine::

    Initial --assume_pod--> Assumed --add_pod--> Added --update_pod--> Added --remove_pod--> Deleted
                            Assumed --forget_pod--> Initial
                            Assumed --finish_binding, then ttl passes, cleanup_expired_assumed_pods--> Initial
    Initial --add_pod--> Added          (a pod bound by someone else, or an assumed pod that expired)

* *Assumed*: the scheduler picked a node and counts the pod there before the binding is confirmed, so the next
  cycles see the resources as taken. ``add_pod`` of an assumed pod confirms it (Assumed -> Added) with the informer's
  version of the pod, moving it if the API server put it on a different node than assumed.
* *Expiry*: with ``ttl > 0`` an assumed pod whose binding finished (``finish_binding``) more than ``ttl`` seconds
  ago and that was never confirmed is dropped by :meth:`Cache.cleanup_expired_assumed_pods`. Upstream's default
  (``durationToExpireAssumedPod``) is 0: assumed pods never expire and are only forgotten or confirmed.
* Updating an assumed pod is an error (the informer only sends updates after an add); removing one is not.

Nodes: a NodeInfo exists while the node exists *or* pods still reference it ("ghost" NodeInfo with ``node is
None``: pods seen before their node, or a node deleted before its pods). Ghosts are never in a snapshot.

Incremental snapshots: NodeInfos are kept in an ``OrderedDict`` used as upstream's doubly linked list, most
recently changed last; every change bumps the NodeInfo's ``generation`` (a process-wide counter) and moves it to
that end. :meth:`Cache.update_snapshot` walks from the most recent end and stops at the first NodeInfo not newer
than ``snapshot.generation``, so its cost is the number of nodes changed since the last snapshot; it copies each
changed NodeInfo (``NodeInfo.clone``) *into the snapshot's existing object*, so the snapshot's lists and its
``node_table`` keep pointing at the right objects, and refreshes only those rows of the table. The lists and the
table are rebuilt (O(nodes)) only when nodes were added or removed, or the node tree's order changed.

Image states: per image name the set of nodes having it (``status.images[].names``); a NodeInfo's
``image_states`` maps each of its images to ``ImageStateSummary(size, num_nodes)`` with ``num_nodes`` counted when
the NodeInfo is copied into the snapshot (upstream ``ImageStateSummary.Snapshot``), so an unchanged node's count
can lag behind, as upstream's.

The cache is used from one event loop and no method awaits, so no locking is needed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.views import name_of
from kubeplane.client.clock import Clock
from kubeplane.scheduler.backend.node_tree import NodeTree
from kubeplane.scheduler.backend.snapshot import Snapshot, node_image_sizes, pod_pvc_keys
from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo

__all__ = ["Cache", "CacheDump", "CacheError"]


class CacheError(Exception):
    """An operation that does not fit the pod state machine (upstream's returned errors and fatal exits)."""


@dataclass(slots=True)
class _PodState:
    pod_info: PodInfo
    node_name: str
    binding_finished: bool = False
    deadline: float | None = None


@dataclass
class CacheDump:
    """A debugging copy of the cache (upstream ``Dump``): cloned NodeInfos by name and the assumed pod UIDs."""

    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    assumed_pods: set[str] = field(default_factory=set)


class Cache:
    """Nodes and their bound/assumed pods; see the module docstring for the state machine and invariants.

    ``clock.monotonic()`` times assumed-pod expiry; ``ttl`` is upstream's ``durationToExpireAssumedPod``
    (0 = assumed pods never expire).
    """

    def __init__(self, clock: Clock, ttl: float = 0.0) -> None:
        self._clock = clock
        self._ttl = ttl
        self._nodes: OrderedDict[str, NodeInfo] = OrderedDict()  # most recently changed last
        self._tree = NodeTree()
        self._pod_states: dict[str, _PodState] = {}
        self._assumed: set[str] = set()
        self._image_nodes: dict[str, set[str]] = {}
        self._pvc_refs: dict[str, int] = {}
        self._pvc_dirty: set[str] = set()

    # --- pods ----------------------------------------------------------------------------------------------

    def assume_pod(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Count the pod on ``node_name`` (default ``pod_info.node_name``) before its binding is confirmed.

        The node is passed explicitly because the scheduler assumes the pod it popped, whose ``spec.nodeName`` is
        still empty; the cache remembers the node, so later calls need not carry it. CacheError when the pod is
        already in the cache; ValueError when no node is given.
        """
        node = node_name or pod_info.node_name
        if not node:
            raise ValueError(f"pod {pod_info.key}: no node to assume it on")
        if pod_info.uid in self._pod_states:
            raise CacheError(f"pod {pod_info.key}({pod_info.uid}) is in the cache, so can't be assumed")
        self._add_pod(pod_info, node, assumed=True)

    def finish_binding(self, pod_info: PodInfo) -> None:
        """Start the expiry clock of an assumed pod (no-op for pods not assumed; never expires when ttl is 0)."""
        state = self._pod_states.get(pod_info.uid)
        if state is None or pod_info.uid not in self._assumed:
            return
        state.binding_finished = True
        state.deadline = self._clock.monotonic() + self._ttl if self._ttl > 0 else None

    def forget_pod(self, pod_info: PodInfo) -> None:
        """Undo :meth:`assume_pod` (Assumed -> Initial); a pod no longer in the cache is ignored.

        CacheError when the pod is not assumed, or ``pod_info.node_name`` is set and differs from the assumed node.
        """
        state = self._pod_states.get(pod_info.uid)
        if state is None:
            return
        self._validate_assumed(pod_info, state)
        self._remove_pod(state)

    def add_pod(self, pod_info: PodInfo) -> None:
        """A bound pod from the informer: confirms an assumed pod (moving it when it landed on another node) or
        adds a new one (Initial -> Added). CacheError when it is already Added or has no ``spec.nodeName``."""
        if not pod_info.node_name:
            raise CacheError(f"pod {pod_info.key} has no node")
        state = self._pod_states.get(pod_info.uid)
        if state is None:
            self._add_pod(pod_info, pod_info.node_name, assumed=False)
        elif pod_info.uid in self._assumed:
            if state.node_name == pod_info.node_name and _same_for_scheduling(state.pod_info, pod_info):
                self._confirm_in_place(state, pod_info)
            else:
                self._remove_pod(state)
                self._add_pod(pod_info, pod_info.node_name, assumed=False)
        else:
            raise CacheError(f"pod {pod_info.key}({pod_info.uid}) was already in added state")

    def update_pod(self, old: PodInfo, new: PodInfo) -> None:
        """Replace an Added pod's version. CacheError when the pod is unknown, assumed, or changed node (upstream
        treats the last as a corrupted cache and exits)."""
        state = self._pod_states.get(old.uid)
        if state is None:
            raise CacheError(f"pod {old.key}({old.uid}) is not added to scheduler cache, so cannot be updated")
        if old.uid in self._assumed:
            raise CacheError(f"assumed pod {old.key}({old.uid}) should not be updated")
        if state.node_name != new.node_name:
            raise CacheError(
                f"pod {old.key}({old.uid}) updated on node {new.node_name!r}, was added to {state.node_name!r}"
            )
        self._remove_pod(state)
        self._add_pod(new, new.node_name, assumed=False)

    def remove_pod(self, pod_info: PodInfo) -> None:
        """Added (or Assumed) -> Deleted, removing the cached version. An empty ``pod_info.node_name`` is accepted
        (a missed delete replayed from the informer's last state); another node than the cached one is an error."""
        state = self._pod_states.get(pod_info.uid)
        if state is None:
            raise CacheError(
                f"pod {pod_info.key}({pod_info.uid}) is not found in scheduler cache, so cannot be removed"
            )
        if pod_info.node_name and pod_info.node_name != state.node_name:
            raise CacheError(
                f"pod {pod_info.key}({pod_info.uid}) was added to {state.node_name!r} but removed from "
                f"{pod_info.node_name!r}: scheduler cache is corrupted"
            )
        self._remove_pod(state)

    def is_assumed_pod(self, pod_info: PodInfo) -> bool:
        return pod_info.uid in self._assumed

    def get_pod(self, pod_info: PodInfo) -> PodInfo | None:
        """The cached version of the pod (also when its node was deleted), None when not in the cache."""
        state = self._pod_states.get(pod_info.uid)
        return state.pod_info if state is not None else None

    def assumed_node(self, pod_info: PodInfo) -> str | None:
        """The node the cache counts the pod on, None when not in the cache."""
        state = self._pod_states.get(pod_info.uid)
        return state.node_name if state is not None else None

    def cleanup_expired_assumed_pods(self) -> list[PodInfo]:
        """Forget assumed pods whose binding finished more than ``ttl`` ago; returns them."""
        if self._ttl <= 0:
            return []
        now = self._clock.monotonic()
        expired: list[PodInfo] = []
        for uid in list(self._assumed):
            state = self._pod_states[uid]
            if state.binding_finished and state.deadline is not None and now > state.deadline:
                self._remove_pod(state)
                expired.append(state.pod_info)
        return expired

    async def run(self, period: float = 1.0) -> None:
        """Expire assumed pods every ``period`` seconds of the clock until cancelled (upstream's cleanup loop)."""
        while True:
            await self._clock.sleep(period)
            self.cleanup_expired_assumed_pods()

    def _validate_assumed(self, pod_info: PodInfo, state: _PodState) -> None:
        if pod_info.node_name and pod_info.node_name != state.node_name:
            raise CacheError(
                f"pod {pod_info.key}({pod_info.uid}) was assumed on {state.node_name!r} but assigned to "
                f"{pod_info.node_name!r}"
            )
        if pod_info.uid not in self._assumed:
            raise CacheError(f"pod {pod_info.key}({pod_info.uid}) is not assumed, so it cannot be forgotten")

    def _add_pod(self, pod_info: PodInfo, node_name: str, *, assumed: bool) -> None:
        ni = self._nodes.get(node_name)
        if ni is None:
            ni = self._nodes[node_name] = NodeInfo()
        ni.add_pod(pod_info)
        self._nodes.move_to_end(node_name)
        self._pod_states[pod_info.uid] = _PodState(pod_info, node_name)
        if assumed:
            self._assumed.add(pod_info.uid)
        self._count_pvcs(pod_info, 1)

    def _remove_pod(self, state: _PodState) -> None:
        pod_info = state.pod_info
        ni = self._nodes.get(state.node_name)
        if ni is not None:
            if not ni.remove_pod(pod_info):
                raise CacheError(f"pod {pod_info.key}({pod_info.uid}) not found on node {state.node_name!r}")
            if not ni.pods and ni.node is None:
                del self._nodes[state.node_name]
            else:
                self._nodes.move_to_end(state.node_name)
        del self._pod_states[pod_info.uid]
        self._assumed.discard(pod_info.uid)
        self._count_pvcs(pod_info, -1)

    def _confirm_in_place(self, state: _PodState, pod_info: PodInfo) -> None:
        """Assumed -> Added without touching the node's aggregates or generation.

        The bound version of a pod differs from the assumed copy only in server-set fields (resourceVersion,
        status), so the NodeInfo's sums are already right; swapping the PodInfo object keeps ``generation``
        unchanged, so the next snapshot does not copy the node again (the common case on every binding).
        """
        ni = self._nodes.get(state.node_name)
        if ni is not None:
            for pods in (ni.pods, ni.pods_with_affinity, ni.pods_with_required_anti_affinity):
                for i, existing in enumerate(pods):
                    if existing.uid == pod_info.uid:
                        pods[i] = pod_info
                        break
        self._pod_states[pod_info.uid] = _PodState(pod_info, state.node_name)
        self._assumed.discard(pod_info.uid)

    def _count_pvcs(self, pod_info: PodInfo, sign: int) -> None:
        for key in pod_pvc_keys(pod_info):
            count = self._pvc_refs.get(key, 0) + sign
            if count > 0:
                self._pvc_refs[key] = count
            else:
                self._pvc_refs.pop(key, None)
            self._pvc_dirty.add(key)

    # --- nodes ---------------------------------------------------------------------------------------------

    def add_node(self, node: Mapping[str, Any]) -> NodeInfo:
        """Add (or replace) a node; returns a copy of its NodeInfo."""
        name = name_of(node)
        ni = self._nodes.get(name)
        if ni is None:
            ni = self._nodes[name] = NodeInfo()
        else:
            self._remove_node_images(name, ni.node)
        self._nodes.move_to_end(name)
        if ni.node is None:
            self._tree.add_node(node)
        else:  # a re-add may change the zone; upstream would list the node in both zones
            self._tree.update_node(ni.node, node)
        self._add_node_images(name, node, ni)
        ni.set_node(node)
        return ni.clone()

    def update_node(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> NodeInfo:
        """Replace a node's object (adding it when unknown); returns a copy of its NodeInfo."""
        name = name_of(new)
        ni = self._nodes.get(name)
        if ni is None:
            ni = self._nodes[name] = NodeInfo()
            self._tree.add_node(new)
        else:
            self._remove_node_images(name, ni.node)
        self._nodes.move_to_end(name)
        # The cached object says which zone the tree has the node in; ``old`` only when there is none.
        self._tree.update_node(ni.node if ni.node is not None else old, new)
        self._add_node_images(name, new, ni)
        ni.set_node(new)
        return ni.clone()

    def remove_node(self, node: Mapping[str, Any]) -> None:
        """Delete a node. Its pods stay counted on a ghost NodeInfo until their own deletions arrive.

        CacheError when the node is unknown or already removed."""
        name = name_of(node)
        ni = self._nodes.get(name)
        if ni is None or ni.node is None:
            raise CacheError(f"node {name} is not found")
        cached = ni.node
        try:
            self._tree.remove_node(cached)  # first: a failure leaves the cache unchanged
        except KeyError as e:
            raise CacheError(str(e)) from None
        ni.remove_node()
        if not ni.pods:
            del self._nodes[name]
        else:
            self._nodes.move_to_end(name)
        self._remove_node_images(name, cached)

    def node_count(self) -> int:
        """NodeInfos in the cache, ghosts included (upstream ``NodeCount``)."""
        return len(self._nodes)

    def pod_count(self) -> int:
        """Pods on every NodeInfo, ghosts included (upstream ``PodCount``)."""
        return sum(len(ni.pods) for ni in self._nodes.values())

    def get_node_info(self, name: str) -> NodeInfo | None:
        """A copy of the cached NodeInfo (possibly a ghost), None when absent."""
        ni = self._nodes.get(name)
        return ni.clone() if ni is not None else None

    def dump(self) -> CacheDump:
        return CacheDump({name: ni.clone() for name, ni in self._nodes.items()}, set(self._assumed))

    def _add_node_images(self, name: str, node: Mapping[str, Any], ni: NodeInfo) -> None:
        states: dict[str, ImageStateSummary] = {}
        for image, size in node_image_sizes(node).items():
            nodes = self._image_nodes.setdefault(image, set())
            nodes.add(name)
            states[image] = ImageStateSummary(size, len(nodes))
        ni.image_states = states

    def _remove_node_images(self, name: str, node: Mapping[str, Any] | None) -> None:
        for image in node_image_sizes(node):
            nodes = self._image_nodes.get(image)
            if nodes is not None:
                nodes.discard(name)
                if not nodes:
                    del self._image_nodes[image]

    # --- snapshots -----------------------------------------------------------------------------------------

    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring ``snapshot`` up to date, copying only NodeInfos changed since its ``generation``.

        See the module docstring. Raises CacheError when the result disagrees with the node tree (after
        rebuilding the lists so that the next cycle can recover, as upstream).
        """
        update_all = snapshot.tree_version != self._tree.version
        affinity_changed: list[NodeInfo] = []
        changed: list[NodeInfo] = []
        snapshot_nodes = snapshot.node_info_map
        for name, ni in reversed(self._nodes.items()):
            if ni.generation <= snapshot.generation:
                break
            if ni.node is None:
                continue
            copy = self._copy_for_snapshot(ni)
            existing = snapshot_nodes.get(name)
            if existing is None:
                update_all = True
                snapshot_nodes[name] = copy
                continue
            affinity_change = bool(existing.pods_with_affinity) != bool(copy.pods_with_affinity) or bool(
                existing.pods_with_required_anti_affinity
            ) != bool(copy.pods_with_required_anti_affinity)
            # Keep the object: the snapshot's lists and its node table refer to it.
            existing.__dict__.update(copy.__dict__)
            if affinity_change:
                affinity_changed.append(existing)
            changed.append(existing)
        if self._nodes:
            snapshot.generation = next(reversed(self._nodes.values())).generation

        if update_all or len(snapshot_nodes) > self._tree.num_nodes:
            for name in [n for n in snapshot_nodes if n not in self._tree]:
                del snapshot_nodes[name]
            update_all = True

        if update_all:
            self._rebuild(snapshot)
        else:
            self._apply_pvc_delta(snapshot)
            if affinity_changed:
                snapshot.update_affinity_lists(affinity_changed)
            table = snapshot.node_table
            for ni in changed:
                table.refresh_row(table.index[ni.name])

        if len(snapshot.node_info_list) != self._tree.num_nodes:
            self._rebuild(snapshot)
            raise CacheError(
                f"snapshot state is not consistent, length of NodeInfoList={len(snapshot.node_info_list)} not equal "
                f"to length of nodes in tree={self._tree.num_nodes}, length of NodeInfoMap={len(snapshot_nodes)}, "
                f"length of nodes in cache={len(self._nodes)}, trying to recover"
            )

    def _copy_for_snapshot(self, ni: NodeInfo) -> NodeInfo:
        copy = ni.clone()
        copy.image_states = {
            image: ImageStateSummary(state.size, len(self._image_nodes.get(image, ())))
            for image, state in ni.image_states.items()
        }
        return copy

    def _rebuild(self, snapshot: Snapshot) -> None:
        snapshot.rebuild_lists(self._tree.list())
        snapshot.tree_version = self._tree.version
        snapshot.used_pvcs = set(self._pvc_refs)
        self._pvc_dirty.clear()

    def _apply_pvc_delta(self, snapshot: Snapshot) -> None:
        for key in self._pvc_dirty:
            if key in self._pvc_refs:
                snapshot.used_pvcs.add(key)
            else:
                snapshot.used_pvcs.discard(key)
        self._pvc_dirty.clear()


def _same_for_scheduling(assumed: PodInfo, bound: PodInfo) -> bool:
    """True when the bound pod has the assumed copy's spec and labels (the binding set only spec.nodeName)."""
    return assumed.pod.get("spec") == bound.pod.get("spec") and assumed.labels == bound.labels
