"""The scheduling cycle's view of the cluster: NodeInfos in node-tree order (upstream ``backend/cache/snapshot.go``).

A :class:`Snapshot` is written only by :meth:`kubeplane.scheduler.backend.cache.Cache.update_snapshot` (between
scheduling cycles) or built once by :meth:`Snapshot.from_objects` (offline explain); during a cycle it is read-only
and plugins see it through the :class:`~kubeplane.scheduler.framework.handle.NodeInfoLister` protocol.

Invariants (after every ``update_snapshot``):

* ``node_info_map`` holds exactly the nodes of the cache's node tree (never a "ghost" NodeInfo without a node);
* ``node_info_list`` holds the same objects in :meth:`NodeTree.list` order; ``node_table`` is a
  :class:`NodeTable` whose row ``i`` describes ``node_info_list[i]`` with up-to-date values;
* ``have_pods_with_affinity_node_info_list`` / ``have_pods_with_required_anti_affinity_node_info_list`` are the
  sub-sequences of ``node_info_list`` whose nodes have at least one such pod;
* ``used_pvcs`` holds ``namespace/claim`` of every PVC referenced by a pod in the cache;
* ``generation`` is the highest NodeInfo generation copied in; a NodeInfo object in the snapshot is updated in
  place (upstream keeps the pointer), so the lists stay valid when only node contents changed.
"""

from __future__ import annotations

import bisect
import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubeplane.api.views import name_of, spec_of, status_of
from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.node_tree import NodeTree
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo

__all__ = ["Snapshot", "node_image_sizes", "pod_pvc_keys"]


def node_image_sizes(node: Mapping[str, Any] | None) -> dict[str, int]:
    """``{image name: sizeBytes}`` over every name of every entry of ``status.images`` (later entries win)."""
    if node is None:
        return {}
    out: dict[str, int] = {}
    for image in status_of(node).get("images") or ():
        size = int(image.get("sizeBytes") or 0)
        for name in image.get("names") or ():
            out[name] = size
    return out


def pod_pvc_keys(pod_info: PodInfo) -> builtins.list[str]:
    """``namespace/claimName`` of each ``persistentVolumeClaim`` volume of the pod (upstream ``PVCRefCounts``)."""
    keys: builtins.list[str] = []
    for volume in pod_info.spec.get("volumes") or ():
        claim = volume.get("persistentVolumeClaim")
        if claim:
            keys.append(f"{pod_info.namespace}/{claim.get('claimName') or ''}")
    return keys


class Snapshot:
    """NodeInfo copies for one scheduling cycle; see the module docstring for the invariants."""

    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: builtins.list[NodeInfo] = []
        self.have_pods_with_affinity_node_info_list: builtins.list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity_node_info_list: builtins.list[NodeInfo] = []
        self.used_pvcs: set[str] = set()
        self.generation = 0
        self.node_table = NodeTable(())
        self._affinity_rows: builtins.list[int] = []
        self._anti_affinity_rows: builtins.list[int] = []
        self.tree_version = -1
        """The :attr:`NodeTree.version` ``node_info_list`` was ordered by (-1: never built by a cache)."""

    # --- NodeInfoLister ------------------------------------------------------------------------------------

    def list(self) -> Sequence[NodeInfo]:
        return self.node_info_list

    def get(self, name: str) -> NodeInfo | None:
        ni = self.node_info_map.get(name)
        return ni if ni is not None and ni.node is not None else None

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self.have_pods_with_affinity_node_info_list

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self.have_pods_with_required_anti_affinity_node_info_list

    # --- the rest of upstream's SharedLister ---------------------------------------------------------------

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """``key`` is ``namespace/name`` of a PVC."""
        return key in self.used_pvcs

    # --- building ------------------------------------------------------------------------------------------

    def rebuild_lists(self, order: Iterable[str] | None) -> None:
        """Re-derive the lists from ``node_info_map``.

        With ``order`` (node names in tree order) the node list and ``node_table`` are rebuilt too; without it
        only the two affinity lists are, by a scan of every node (the cache uses :meth:`update_affinity_lists`
        when it knows which nodes changed).
        """
        if order is not None:
            nodes = self.node_info_map
            self.node_info_list = [nodes[name] for name in order if name in nodes]
            self.node_table = NodeTable(self.node_info_list)
        self._affinity_rows = [i for i, ni in enumerate(self.node_info_list) if ni.pods_with_affinity]
        self._anti_affinity_rows = [
            i for i, ni in enumerate(self.node_info_list) if ni.pods_with_required_anti_affinity
        ]
        self._derive_affinity_lists()

    def update_affinity_lists(self, changed: Iterable[NodeInfo]) -> None:
        """Nodes of the current list whose "has pods with (anti-)affinity" status may have changed: update the
        two affinity lists in place of a scan over every node (they keep node-list order, by row index)."""
        index = self.node_table.index
        for ni in changed:
            row = index[ni.name]
            _set_membership(self._affinity_rows, row, bool(ni.pods_with_affinity))
            _set_membership(self._anti_affinity_rows, row, bool(ni.pods_with_required_anti_affinity))
        self._derive_affinity_lists()

    def _derive_affinity_lists(self) -> None:
        infos = self.node_info_list
        self.have_pods_with_affinity_node_info_list = [infos[i] for i in self._affinity_rows]
        self.have_pods_with_required_anti_affinity_node_info_list = [infos[i] for i in self._anti_affinity_rows]

    @classmethod
    def from_objects(
        cls,
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        *,
        memo: PodInfoMemo | None = None,
    ) -> Snapshot:
        """A snapshot of ``nodes`` with every pod whose ``spec.nodeName`` names one of them (upstream
        ``NewSnapshot``), nodes in node-tree order, image states counted over ``nodes``; for offline use.
        ``memo`` reuses the PodInfos of earlier snapshots of the same pods (:mod:`.podinfo_memo`).

        Pods bound to a node not in ``nodes`` are left out of the NodeInfos but their PVCs still count as used.
        """
        tree = NodeTree(nodes)
        image_nodes: dict[str, set[str]] = {}
        infos: dict[str, NodeInfo] = {}
        for node in nodes:
            name = name_of(node)
            infos[name] = NodeInfo(node)
            for image in node_image_sizes(node):
                image_nodes.setdefault(image, set()).add(name)
        for ni in infos.values():
            ni.image_states = {
                image: ImageStateSummary(size, len(image_nodes[image]))
                for image, size in node_image_sizes(ni.node).items()
            }
        snapshot = cls()
        for pod in pods:
            node_name = spec_of(pod).get("nodeName") or ""
            if not node_name:
                continue
            pod_info = PodInfo(pod) if memo is None else memo.pod_info(pod)
            snapshot.used_pvcs.update(pod_pvc_keys(pod_info))
            target = infos.get(node_name)
            if target is not None:
                target.add_pod(pod_info)
        snapshot.node_info_map = infos
        snapshot.generation = max((ni.generation for ni in infos.values()), default=0)
        snapshot.rebuild_lists(tree.list())
        return snapshot

    def with_nodes(self, nodes: Sequence[Mapping[str, Any]]) -> Snapshot | None:
        """What :meth:`from_objects` of ``nodes`` and this snapshot's pods gives, derived without re-adding the
        pods; None (build it from objects) unless ``nodes`` are this snapshot's nodes, some replaced by objects of
        the same name with the same ``status.images`` (a what-if's relabelled or untainted node).

        A node object this snapshot already holds keeps its NodeInfo, shared between the two snapshots: a
        scheduling cycle only reads its snapshot (upstream's cycle does; preemption's dry run works on clones),
        so neither can change the other. A replaced node gets a clone of its NodeInfo with the new object set;
        its image states stay, as the images are the same."""
        if len(nodes) != len(self.node_info_map):
            return None
        infos: dict[str, NodeInfo] = {}
        for node in nodes:
            name = name_of(node)
            existing = self.node_info_map.get(name)
            if existing is None or existing.node is None or name in infos:
                return None
            if existing.node is not node:
                if node_image_sizes(node) != node_image_sizes(existing.node):
                    return None
                existing = existing.clone()
                existing.set_node(node)
            infos[name] = existing
        derived = Snapshot()
        derived.node_info_map = infos
        derived.used_pvcs = set(self.used_pvcs)
        derived.generation = max((ni.generation for ni in infos.values()), default=0)
        derived.rebuild_lists(NodeTree(nodes).list())
        return derived

    def __repr__(self) -> str:
        return f"Snapshot(nodes={len(self.node_info_list)}, generation={self.generation})"


def _set_membership(rows: builtins.list[int], row: int, member: bool) -> None:
    """Insert or remove ``row`` in the sorted list ``rows``."""
    i = bisect.bisect_left(rows, row)
    present = i < len(rows) and rows[i] == row
    if member and not present:
        rows.insert(i, row)
    elif not member and present:
        del rows[i]
