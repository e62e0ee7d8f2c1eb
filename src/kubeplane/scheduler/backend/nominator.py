"""Pods nominated to nodes by preemption, waiting for victims to leave (upstream ``queue/nominator.go``).

The scheduler's own record can run ahead of ``status.nominatedNodeName`` in the API (preemption nominates before
the status patch lands), so the nominator is keyed by pod UID and is the source of truth for filtering: pods
nominated to a node are counted there when a lower-or-equal-priority pod is filtered onto it.

Invariants: a UID is nominated to at most one node; ``_by_node[n]`` holds exactly the UIDs with
``_node_of[uid] == n`` (in nomination order) and is never empty; a nomination to ``""`` is no nomination.
``generation`` counts the changes (every add, update and delete that touched a node's nominated pods, a new
version of a pod included) and :meth:`Nominator.changed_since` names the nodes they touched, so per-node
aggregates kept elsewhere (:mod:`.nominated_columns`) are refreshed for those nodes alone.
"""

from __future__ import annotations

from collections.abc import KeysView

from kubeplane.scheduler.framework.types import PodInfo

__all__ = ["Nominator", "nominated_node_name"]


def nominated_node_name(pod_info: PodInfo) -> str:
    """``status.nominatedNodeName`` of the pod, ``""`` when unset."""
    name: str = pod_info.status.get("nominatedNodeName") or ""
    return name


class Nominator:
    """UID -> nominated node, and node -> nominated pods; see the module docstring."""

    _LOG_LIMIT = 8192
    """Changes remembered for :meth:`changed_since`; an older reader rebuilds everything."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        self.generation = 0
        self._log: list[str] = []
        """The node touched by each change: entry ``i`` is change ``_log_base + i + 1``."""
        self._log_base = 0

    def _changed(self, node: str) -> None:
        self.generation += 1
        log = self._log
        log.append(node)
        if len(log) > self._LOG_LIMIT:
            drop = self._LOG_LIMIT // 2
            del log[:drop]
            self._log_base += drop

    def changed_since(self, generation: int) -> set[str] | None:
        """The nodes whose nominated pods changed after ``generation``; None when that is too long ago to tell."""
        if generation < self._log_base:
            return None
        return set(self._log[generation - self._log_base :])

    def add(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Nominate the pod, replacing any earlier nomination.

        ``node_name`` None is upstream's ``ModeNoop``: use ``status.nominatedNodeName``; a string is
        ``ModeOverride`` (``""`` clears the nomination).
        """
        self.delete(pod_info)
        node = nominated_node_name(pod_info) if node_name is None else node_name
        if not node:
            return
        self._node_of[pod_info.uid] = node
        self._by_node.setdefault(node, {})[pod_info.uid] = pod_info
        self._changed(node)

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """Replace the pod's version (upstream ``UpdateNominatedPod``).

        When neither version carries ``status.nominatedNodeName`` but the scheduler nominated the pod, the
        nomination is kept: an update that merely predates the status patch must not drop the reservation.
        """
        node_name: str | None = None
        if not nominated_node_name(old) and not nominated_node_name(new):
            node_name = self._node_of.get(old.uid)
        self.delete(old)
        self.add(new, node_name)

    def delete(self, pod_info: PodInfo) -> None:
        node = self._node_of.pop(pod_info.uid, None)
        if node is None:
            return
        pods = self._by_node[node]
        pods.pop(pod_info.uid, None)
        if not pods:
            del self._by_node[node]
        self._changed(node)

    def node_of(self, pod_info: PodInfo) -> str | None:
        return self._node_of.get(pod_info.uid)

    def node_of_uid(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        """The pods nominated to ``node_name``, in nomination order (a copy)."""
        return list(self._by_node.get(node_name, {}).values())

    def node_names(self) -> KeysView[str]:
        """The nodes with at least one nominated pod (a live view)."""
        return self._by_node.keys()

    def __len__(self) -> int:
        return len(self._node_of)
