"""Would this pod fit on that node": the scheduler's own PreFilter and Filter plugins on a hypothetical cluster.

Upstream's ``simulator/clustersnapshot`` + ``simulator/scheduling/hinting_simulator.go`` reduced to what the core
needs. A :class:`ClusterSimulator` holds plain node and pod objects; nodes and pods can be added and removed
hypothetically (a template node for scale-up, a node's pods moved elsewhere for scale-down) and
:meth:`ClusterSimulator.fork` gives an independent copy to try something and throw it away (upstream's
``Fork``/``Revert``).

Every check runs the scheduler's :class:`~kubeplane.scheduler.schedule_one.SchedulingCycle` in its exhaustive
mode (every node examined, PreFilter once per pod, then Filter per node), with the profile the scheduler's
configuration gives the pod's ``schedulerName``: the same code the scheduler runs, never a copy. The snapshot is
rebuilt (pod infos memoised) after a change, lazily, so a run of checks without changes shares one snapshot.
A change to a built snapshot derives the next one: only the changed node's NodeInfo is cloned, the others are
shared. The profiles are built once per simulator and its forks (building them costs more than a check): their handle
reads the snapshot through a :class:`_SnapshotProxy` pointed at the checking simulator's snapshot.

Pods are checked as the API holds them: ``spec.priority`` is what the Priority admission set.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.views import meta_of, name_of, namespace_of, spec_of
from kubeplane.scheduler.backend.node_tree import NodeTree
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.backend.snapshot import Snapshot, pod_pvc_keys
from kubeplane.scheduler.config import KubeSchedulerConfiguration, default_config
from kubeplane.scheduler.framework.diagnosis import SchedulingError
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import SchedulingCycle

__all__ = ["ClusterSimulator", "FitResult", "pod_key"]

Obj = Mapping[str, Any]


def pod_key(pod: Obj) -> str:
    return f"{namespace_of(pod) or 'default'}/{name_of(pod)}"


@dataclass(frozen=True, slots=True)
class FitResult:
    """The nodes (in snapshot order) the pod passes every Filter on, and the reasons of those it fails
    (``reasons``: Filter reason -> number of nodes, as the scheduler's FailedScheduling message counts them)."""

    nodes: tuple[str, ...]
    reasons: Mapping[str, int]


_PLURALS = {
    "Namespace": "namespaces",
    "Service": "services",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "ReplicationController": "replicationcontrollers",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
}
"""Kinds a plugin may list through the handle (the objects given carry ``kind``)."""


class _SnapshotProxy:
    """The handle's NodeInfoLister: whichever snapshot is being checked."""

    def __init__(self) -> None:
        self.target = Snapshot()

    def list(self) -> Sequence[NodeInfo]:
        return self.target.list()

    def get(self, name: str) -> NodeInfo | None:
        return self.target.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return self.target.have_pods_with_affinity_list()

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return self.target.have_pods_with_required_anti_affinity_list()

    def num_nodes(self) -> int:
        return self.target.num_nodes()

    def is_pvc_used_by_pods(self, key: str) -> bool:
        return self.target.is_pvc_used_by_pods(key)


class _Profiles:
    """The scheduler's profiles over a :class:`_SnapshotProxy`, built once."""

    def __init__(self, objects: Sequence[Obj], config: KubeSchedulerConfiguration | None, seed: int) -> None:
        by_kind: dict[str, list[Obj]] = {}
        for obj in objects:
            plural = _PLURALS.get(str(obj.get("kind") or ""))
            if plural is not None:
                by_kind.setdefault(plural, []).append(obj)

        def list_objects(resource: str, namespace: str) -> list[Obj]:
            found = by_kind.get(resource, [])
            return [o for o in found if not namespace or namespace_of(o) == namespace]

        self.proxy = _SnapshotProxy()
        handle = Handle(client=None, rng=random.Random(seed), snapshot_lister=self.proxy, list_objects=list_objects)
        self.profiles: Mapping[str, Framework] = build_profiles(config or default_config(), handle, None)
        self.percentage = (config or default_config()).percentage_of_nodes_to_score


class ClusterSimulator:
    """Nodes and the pods bound to them, changed hypothetically; see the module docstring.

    ``objects`` are the other objects plugins read (Namespaces, Services, ReplicaSets, PDBs, ...), as
    :func:`kubeplane.scheduler.explain.prepare` takes them."""

    def __init__(
        self,
        nodes: Iterable[Obj],
        pods: Iterable[Obj],
        *,
        objects: Sequence[Obj] = (),
        config: KubeSchedulerConfiguration | None = None,
        seed: int = 0,
        memo: PodInfoMemo | None = None,
    ) -> None:
        self._nodes: dict[str, Obj] = {name_of(n): n for n in nodes}
        self._pods: dict[str, Obj] = {}
        for pod in pods:
            if spec_of(pod).get("nodeName") in self._nodes:
                self._pods[pod_key(pod)] = pod
        self._objects = list(objects)
        self._config = config
        self._seed = seed
        self._memo = memo if memo is not None else PodInfoMemo()
        self._snapshot: Snapshot | None = None
        self._profiles: _Profiles | None = None

    # --- state ---------------------------------------------------------------------------------------------

    def fork(self) -> ClusterSimulator:
        """An independent copy (objects are shared, never changed)."""
        other = ClusterSimulator((), (), objects=self._objects, config=self._config, seed=self._seed, memo=self._memo)
        other._nodes = dict(self._nodes)
        other._pods = dict(self._pods)
        other._snapshot = self._snapshot
        other._profiles = self._profiles
        return other

    def node_names(self) -> list[str]:
        return list(self._nodes)

    def node(self, name: str) -> Obj | None:
        return self._nodes.get(name)

    def pods_on(self, node_name: str) -> list[Obj]:
        return [p for p in self._pods.values() if spec_of(p).get("nodeName") == node_name]

    def add_node(self, node: Obj) -> None:
        name = name_of(node)
        replaced = name in self._nodes
        self._nodes[name] = node
        self._snapshot = None if replaced else self._derived({name: NodeInfo(node)})

    def remove_node(self, name: str) -> list[Obj]:
        """Remove the node with its pods; returns those pods."""
        removed = self.pods_on(name)
        for pod in removed:
            del self._pods[pod_key(pod)]
        if self._nodes.pop(name, None) is not None:
            self._snapshot = self._derived({name: None})
        return removed

    def add_pod(self, pod: Obj, node_name: str) -> None:
        """Bind ``pod`` to ``node_name`` hypothetically."""
        key = pod_key(pod)
        bound = {**pod, "spec": {**spec_of(pod), "nodeName": node_name}}
        moved = key in self._pods
        self._pods[key] = bound
        base = self._snapshot
        if moved or base is None or node_name not in base.node_info_map:
            self._snapshot = None
            return
        target = base.node_info_map[node_name].clone()
        pod_info = self._memo.pod_info(bound)
        target.add_pod(pod_info)
        derived = self._derived({node_name: target})
        if derived is not None:
            derived.used_pvcs.update(pod_pvc_keys(pod_info))
        self._snapshot = derived

    def remove_pod(self, pod: Obj) -> None:
        if self._pods.pop(pod_key(pod), None) is not None:
            self._snapshot = None

    def _derived(self, changes: Mapping[str, NodeInfo | None]) -> Snapshot | None:
        """The current snapshot with these NodeInfos replaced, added or (None) removed, the others shared (a
        cycle only reads its snapshot, so sharing NodeInfos between snapshots changes no answer); None when there
        is no current snapshot (the next check builds one)."""
        base = self._snapshot
        if base is None:
            return None
        infos = dict(base.node_info_map)
        for name, info in changes.items():
            if info is None:
                infos.pop(name, None)
            else:
                infos[name] = info
        derived = Snapshot()
        derived.node_info_map = infos
        derived.used_pvcs = set(base.used_pvcs)
        derived.generation = max((ni.generation for ni in infos.values()), default=0)
        derived.rebuild_lists(NodeTree([ni.node for ni in infos.values() if ni.node is not None]).list())
        return derived

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = Snapshot.from_objects(
                list(self._nodes.values()), list(self._pods.values()), memo=self._memo
            )
        return self._snapshot

    # --- checks --------------------------------------------------------------------------------------------

    def fits(self, pod: Obj, *, only: Iterable[str] | None = None) -> FitResult:
        """Where ``pod`` passes PreFilter and every Filter; ``only`` limits the answer to these nodes (the
        filters still see the whole cluster: inter-pod affinity and spreading count every node)."""
        snapshot = self.snapshot()
        if self._profiles is None:
            self._profiles = _Profiles(self._objects, self._config, self._seed)
        spec = {k: v for k, v in spec_of(pod).items() if k != "nodeName"}
        unbound = {**pod, "metadata": {"namespace": "default", **meta_of(pod)}, "spec": spec}
        pod_info = PodInfo(unbound)
        fwk = self._profiles.profiles.get(pod_info.scheduler_name)
        node_infos = list(snapshot.list())
        if fwk is None or not node_infos:
            return FitResult((), {})
        self._profiles.proxy.target = snapshot
        cycle = SchedulingCycle(rng=random.Random(self._seed), percentage_of_nodes_to_score=self._profiles.percentage)
        state = CycleState()
        try:
            found, diagnosis = cycle.find_nodes_that_fit_pod(
                fwk, state, pod_info, node_infos, snapshot.node_table, exhaustive=True
            )
        except SchedulingError:
            return FitResult((), {})
        feasible = {ni.name for ni in found.feasible}
        wanted = set(only) if only is not None else None
        names = tuple(ni.name for ni in node_infos if ni.name in feasible and (wanted is None or ni.name in wanted))
        reasons: dict[str, int] = {}
        for ni in node_infos:
            if ni.name in feasible or (wanted is not None and ni.name not in wanted):
                continue
            status = diagnosis.node_to_status.get(ni.name)
            if status is None:
                status = diagnosis.absent_nodes_status
            for reason in status.reasons if status is not None else ():
                reasons[reason] = reasons.get(reason, 0) + 1
        return FitResult(names, reasons)

    def fits_on(self, pod: Obj, node_name: str) -> bool:
        return self.first_fit(pod, [node_name]) is not None

    def first_fit(self, pod: Obj, candidates: Sequence[str]) -> str | None:
        """The first of ``candidates`` (in their order) the pod passes every Filter on, after one PreFilter:
        upstream's SchedulePodOnAnyNodeMatching, which stops at the first fitting node."""
        snapshot = self.snapshot()
        if self._profiles is None:
            self._profiles = _Profiles(self._objects, self._config, self._seed)
        spec = {k: v for k, v in spec_of(pod).items() if k != "nodeName"}
        pod_info = PodInfo({**pod, "metadata": {"namespace": "default", **meta_of(pod)}, "spec": spec})
        fwk = self._profiles.profiles.get(pod_info.scheduler_name)
        node_infos = list(snapshot.list())
        if fwk is None or not node_infos:
            return None
        self._profiles.proxy.target = snapshot
        state = CycleState()
        result, status, _ = fwk.run_pre_filter_plugins(state, pod_info, node_infos)
        if status is not None and not status.is_success():
            return None
        allowed = result.node_names if result is not None else None
        for name in candidates:
            info = snapshot.get(name)
            if info is None or (allowed is not None and name not in allowed):
                continue
            if fwk.run_filter_plugins(state, pod_info, info) is None:
                return name
        return None

    def filter_reasons(self, pod: Obj, node_name: str) -> list[str]:
        """The reasons PreFilter or the first failing Filter plugin give for ``pod`` on ``node_name`` (empty when
        it passes): the reference per-node verdict, for when :meth:`fits` counts a node rejected without its
        reasons (the scheduler's search keeps reasons only when the pod fits nowhere)."""
        snapshot = self.snapshot()
        if self._profiles is None:
            self._profiles = _Profiles(self._objects, self._config, self._seed)
        spec = {k: v for k, v in spec_of(pod).items() if k != "nodeName"}
        pod_info = PodInfo({**pod, "metadata": {"namespace": "default", **meta_of(pod)}, "spec": spec})
        fwk = self._profiles.profiles.get(pod_info.scheduler_name)
        info = snapshot.get(node_name)
        if fwk is None or info is None:
            return []
        self._profiles.proxy.target = snapshot
        state = CycleState()
        result, status, rejected = fwk.run_pre_filter_plugins(state, pod_info, list(snapshot.list()))
        if status is not None and not status.is_success():
            return list(status.reasons)
        if result is not None and result.node_names is not None and node_name not in result.node_names:
            return [f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejected))}]"]  # the cycle's wording
        status = fwk.run_filter_plugins(state, pod_info, info)
        return list(status.reasons) if status is not None else []

    def place(self, pod: Obj, *, only: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> str | None:
        """Bind ``pod`` to the first node (snapshot order) it fits on among ``only`` but not ``exclude``;
        the node's name, or None (nothing changed)."""
        excluded = set(exclude)
        wanted = None if only is None else set(only)
        candidates = [
            ni.name
            for ni in self.snapshot().list()
            if ni.name not in excluded and (wanted is None or ni.name in wanted)
        ]
        if not candidates:
            return None
        node = self.first_fit(pod, candidates)
        if node is not None:
            self.add_pod(pod, node)
        return node
