"""VolumeZone: a pod whose bound PersistentVolumes carry zone/region labels goes to nodes in those zones
(upstream ``plugins/volumezone``, v1.37).

PreFilter walks the pod's ``persistentVolumeClaim`` volumes: an empty claim name, a missing claim, volume or class
is UnschedulableAndUnresolvable (``PersistentVolumeClaim had no name``, the lister's NotFound message); an unbound
claim is skipped when its class binds WaitForFirstConsumer (VolumeBinding picks a volume for the node) and
otherwise rejected (``PersistentVolumeClaim had no pv name and storageClass name``, ``VolumeBindingMode not set
for StorageClass "x"``, ``PersistentVolume had no name``). Each bound volume contributes one entry per topology
label it has (the beta and GA zone and region keys), its value split on ``__`` into a set of zones (a label that
does not parse is ignored). No entry: Skip.

Filter: a node with none of the four labels passes (single-zone clusters label nothing); otherwise for every entry
the node's value for that key (or, for a beta key, its GA key) must be in the set, else UnschedulableAndUnresolvable
``node(s) had no available volume zone``. The vectorised Filter reads the same label columns of the node table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.api.volumes import claim_class
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.plugins.volume_util import NotFoundError, StorageLister, claim_volumes

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["ERR_REASON_CONFLICT", "NAME", "TOPOLOGY_LABELS", "PVTopology", "VolumeZone", "new", "pv_topologies"]

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
"""Upstream ``ErrReasonConflict``."""

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"
GA_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION)
"""Upstream ``topologyLabels``, in its order."""
_TO_GA = {BETA_REGION: GA_REGION, BETA_ZONE: GA_ZONE}
_MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a bound volume (upstream ``pvTopology``)."""

    pv_name: str
    key: str
    values: frozenset[str]


def _label_zones_to_set(value: str) -> frozenset[str] | None:
    """Upstream ``volumehelpers.LabelZonesToSet``: ``a__b`` -> {a, b}; None when an element is empty."""
    zones = set()
    for zone in value.split(_MULTI_ZONE_DELIMITER):
        trimmed = zone.strip()
        if not trimmed:
            return None
        zones.add(trimmed)
    return frozenset(zones)


def pv_topologies(pv: Mapping[str, Any]) -> list[PVTopology]:
    """Upstream ``getPVTopologies`` (labels only: node affinity is NodeAffinity's and VolumeBinding's)."""
    meta = pv.get("metadata") or {}
    labels = meta.get("labels") or {}
    out = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            values = _label_zones_to_set(str(labels[key]))
            if values is not None:
                out.append(PVTopology(str(meta.get("name") or ""), key, values))
    return out


@dataclass(frozen=True, slots=True)
class _State:
    topologies: tuple[PVTopology, ...]

    def clone(self) -> _State:
        return self


def _node_fits(labels: Mapping[str, str], topologies: Sequence[PVTopology]) -> bool:
    if not any(key in labels for key in TOPOLOGY_LABELS):
        return True
    for topology in topologies:
        value = labels.get(topology.key)
        if value is None:
            value = labels.get(_TO_GA.get(topology.key, topology.key))
        if value is None or value not in topology.values:
            return False
    return True


class VolumeZone:
    """PreFilter, Filter (with its vectorised form) and EnqueueExtensions."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Queueing hints on: upstream's Node action is Add | UpdateNodeLabel (no UpdateNodeTaint for preCheck).
        return (
            ClusterEventWithHint(
                ClusterEvent("StorageClass", ActionType.ADD), self._is_schedulable_after_storage_class_added
            ),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.update()),
                self._is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.update()),
                self._is_schedulable_after_pv_change,
            ),
        )

    def _is_schedulable_after_pvc_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPersistentVolumeClaimChange``: a claim of the pod (same namespace)."""
        if new is None:
            return QueueingHint.QUEUE
        meta = new.get("metadata") or {}
        if (meta.get("namespace") or "") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        return (
            QueueingHint.QUEUE if (meta.get("name") or "") in set(claim_volumes(pod.pod)) else QueueingHint.QUEUE_SKIP
        )

    def _is_schedulable_after_storage_class_added(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterStorageClassAdded``: only a WaitForFirstConsumer class can help."""
        if new is None:
            return QueueingHint.QUEUE
        mode = new.get("volumeBindingMode")
        return QueueingHint.QUEUE if mode == "WaitForFirstConsumer" else QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_pv_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPersistentVolumeChange``: a new volume, or changed topology labels."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if pv_topologies(old) != pv_topologies(new) else QueueingHint.QUEUE_SKIP

    def _pv_topologies_of_pod(self, pod: PodInfo) -> tuple[tuple[PVTopology, ...], Status | None]:
        """Upstream ``getPVbyPod``."""
        out: list[PVTopology] = []
        claims = list(claim_volumes(pod.pod))
        if not claims:
            return (), None
        lister = StorageLister(self._handle)
        try:
            for claim_name in claims:
                if not claim_name:
                    return (), Status.unresolvable("PersistentVolumeClaim had no name")
                pvc = lister.pvc(pod.namespace, claim_name)
                pv_name = str((pvc.get("spec") or {}).get("volumeName") or "")
                if not pv_name:
                    class_name = claim_class(pvc)
                    if not class_name:
                        return (), Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                    mode = lister.storage_class(class_name).get("volumeBindingMode")
                    if mode is None:
                        return (), Status.unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                    if mode == "WaitForFirstConsumer":
                        continue  # unbound: VolumeBinding decides where it can go
                    return (), Status.unresolvable("PersistentVolume had no name")
                out.extend(pv_topologies(lister.pv(pv_name)))
        except NotFoundError as e:
            return (), Status.unresolvable(str(e))
        return tuple(out), None

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): without claim volumes it skips without reading the cluster."""
        return next(claim_volumes(pod.pod), None) is None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        topologies, status = self._pv_topologies_of_pod(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _State(topologies))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def _topologies(self, state: CycleState, pod: PodInfo) -> tuple[tuple[PVTopology, ...], Status | None]:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, _State):
            return s.topologies, None
        return self._pv_topologies_of_pod(pod)  # upstream falls back to computing it here

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        topologies, status = self._topologies(state, pod)
        if status is not None:
            return status
        return None if _node_fits(node.labels, topologies) else Status.unresolvable(ERR_REASON_CONFLICT)

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        """Label columns instead of per-node dict look-ups: a row passes when it has none of the four labels,
        or when each entry's key (or its GA twin where the node lacks the key) holds an allowed value."""
        if not pod.spec.get("volumes"):
            return np.ones(len(rows), np.bool_)
        topologies, status = self._topologies(state, pod)
        if status is not None:
            return np.zeros(len(rows), np.bool_)
        unconstrained = np.ones(len(rows), np.bool_)
        for key in TOPOLOGY_LABELS:
            unconstrained &= table.domains(key).ids[rows] < 0
        fits = np.ones(len(rows), np.bool_)
        for topology in topologies:
            ok, missing = _allowed(table, topology.key, topology.values, rows)
            ga = _TO_GA.get(topology.key)
            if ga is not None:
                ok_ga, _ = _allowed(table, ga, topology.values, rows)
                ok = np.where(missing, ok_ga, ok)
            fits &= ok
        result: BoolArray = unconstrained | fits
        return result


def _allowed(table: NodeTable, key: str, values: frozenset[str], rows: IntArray) -> tuple[BoolArray, BoolArray]:
    """Per row: whether label ``key`` holds one of ``values``, and whether the node lacks ``key``."""
    domains = table.domains(key)
    ids = domains.ids[rows]
    allowed = [domains.id_of[v] for v in values if v in domains.id_of]
    ok: BoolArray = np.isin(ids, np.asarray(allowed, np.int64)) if allowed else np.zeros(len(rows), np.bool_)
    missing: BoolArray = ids < 0
    return ok, missing


def new(args: Mapping[str, Any], handle: Handle) -> VolumeZone:
    """The plugin factory; VolumeZone has no args."""
    return VolumeZone(handle)
