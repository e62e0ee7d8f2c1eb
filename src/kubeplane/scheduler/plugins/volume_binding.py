"""VolumeBinding: schedules pods with PersistentVolumeClaims and binds their volumes (upstream
``plugins/volumebinding/volume_binding.go``, v1.37).

* PreFilter: SKIP for a pod without PVCs (``persistentVolumeClaim`` or generic ``ephemeral`` volumes);
  UnschedulableAndUnresolvable with the lister's message when a claim is missing (an ephemeral one: "waiting for
  ephemeral volume controller to create the persistentvolumeclaim ..."), Lost, being deleted or (ephemeral) not
  owned by the pod; "pod has unbound immediate PersistentVolumeClaims" when an Immediate claim is unbound.
  Otherwise the claims (:class:`~.volume_binding_binder.PodVolumeClaims`) go into the cycle state.
* Filter: the binder's FindPodVolumes; any reason is UnschedulableAndUnresolvable; the node's PodVolumes are kept.
* PreScore/Score: with StorageCapacityScoring (beta, on in v1.37) the score is the shape of the utilisation of
  each storage class (static PVs: requested/PV capacity; else dynamic provisions: requested/CSIStorageCapacity
  capacity), averaged over classes; without the gate only pods with static bindings are scored.
* Reserve/Unreserve: assume / revert the PV and PVC updates in the assume caches.
* PreBind: the API updates, then wait until the PV controller bound every claim (``bindTimeoutSeconds``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from kubeplane.api.volumes import pod_claim_names, volume_is_for_pod
from kubeplane.scheduler.config.features import DEFAULT_GATES, STORAGE_CAPACITY_SCORING, FeatureGates
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.plugins.resource_allocation import MAX_CUSTOM_PRIORITY_SCORE, ShapePoint
from kubeplane.scheduler.plugins.volume_binding_binder import BinderError, PodVolumeClaims, PodVolumes, VolumeBinder
from kubeplane.scheduler.plugins.volume_binding_hints import events_to_register
from kubeplane.scheduler.plugins.volume_binding_scorer import (
    ClassResources,
    VolumeCapacityScorer,
    build_scorer_function,
    class_resources_of,
)

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["NAME", "STATE_KEY", "UNBOUND_IMMEDIATE", "StateData", "VolumeBinding", "new"]

NAME: Final = "VolumeBinding"
STATE_KEY: Final = NAME
UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class StateData:
    """Upstream ``stateData``: shared by every copy of the cycle state (``clone`` returns itself), because
    Filter on each node adds that node's PodVolumes and Reserve/PreBind read them."""

    all_bound: bool = False
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    pod_volume_claims: PodVolumeClaims | None = None
    has_static_bindings: bool = False

    def clone(self) -> StateData:
        return self


def _state(state: CycleState) -> StateData | Status:
    data = state.get(STATE_KEY)
    if not isinstance(data, StateData):
        return Status.from_error("not found" if data is None else "unable to convert state into stateData")
    return data


class VolumeBinding:
    """PreFilter, Filter, PreScore, Score, Reserve, PreBind (module docstring)."""

    def __init__(
        self, handle: Handle, binder: VolumeBinder, scorer: VolumeCapacityScorer | None, capacity_scoring: bool
    ):
        self._handle = handle
        self.binder = binder
        self._scorer = scorer
        self._capacity_scoring = capacity_scoring

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return events_to_register()

    # --- PreFilter -------------------------------------------------------------------------------------------

    def _pod_has_pvcs(self, pod: PodInfo) -> bool:
        """Upstream ``podHasPVCs``; raises ValueError with the user-facing reason."""
        has_pvc = False
        pvcs: dict[str, Mapping[str, Any]] | None = None
        for name, is_ephemeral in pod_claim_names(pod.pod):
            has_pvc = True
            if pvcs is None:
                pvcs = {
                    str((o.get("metadata") or {}).get("name")): o
                    for o in self._handle.list_objects("persistentvolumeclaims", pod.namespace)
                }
            pvc = pvcs.get(name)
            if pvc is None:
                if is_ephemeral:
                    raise ValueError(
                        f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                    )
                raise ValueError(f'persistentvolumeclaim "{name}" not found')
            if (pvc.get("status") or {}).get("phase") == "Lost":
                volume_name = (pvc.get("spec") or {}).get("volumeName") or ""
                raise ValueError(
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume_name}"'
                )
            if (pvc.get("metadata") or {}).get("deletionTimestamp") is not None:
                raise ValueError(f'persistentvolumeclaim "{name}" is being deleted')
            if is_ephemeral and (error := volume_is_for_pod(pod.pod, pvc)) is not None:
                raise ValueError(error)
        return has_pvc

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            has_pvc = self._pod_has_pvcs(pod)
        except ValueError as exc:
            return None, Status.unresolvable(str(exc))
        if not has_pvc:
            state.write(STATE_KEY, StateData())
            return None, Status.skip()
        try:
            claims = self.binder.get_pod_volume_claims(pod.pod)
        except BinderError as exc:
            return None, Status.from_error(exc)
        if claims.unbound_claims_immediate:
            return None, Status.unresolvable(UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, StateData(pod_volume_claims=claims))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # --- Filter ----------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = _state(state)
        if isinstance(data, Status):
            return data
        claims = data.pod_volume_claims or PodVolumeClaims()
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod.pod, claims, node.name, node.labels)
        except BinderError as exc:
            return Status.from_error(exc)
        if reasons:
            return Status.unresolvable(*reasons)
        data.pod_volumes_by_node[node.name] = volumes
        data.has_static_bindings = data.has_static_bindings or bool(volumes.static_bindings)
        return None

    # --- PreScore / Score ------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if self._scorer is None:
            return Status.skip()
        data = _state(state)
        if isinstance(data, Status):
            return data
        if data.has_static_bindings or self._capacity_scoring:
            return None
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        if self._scorer is None:
            return 0, None
        data = _state(state)
        if isinstance(data, Status):
            return 0, data
        volumes = data.pod_volumes_by_node.get(node.name)
        if volumes is None:
            return 0, None
        resources: ClassResources = class_resources_of(volumes, self._capacity_scoring)
        return self._scorer(resources), None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`score` for ``rows``: all zeros without a scorer or without PodVolumes (a pod with no claims,
        which PreScore lets through with StorageCapacityScoring on), so such pods cost no per-node call."""
        out: IntArray = np.zeros(len(rows), np.int64)
        data = state.get(STATE_KEY)
        if self._scorer is None or not isinstance(data, StateData) or not data.pod_volumes_by_node:
            return out
        by_node = data.pod_volumes_by_node
        for i, row in enumerate(rows.tolist()):
            volumes = by_node.get(table.names[row])
            if volumes is not None:
                out[i] = self._scorer(class_resources_of(volumes, self._capacity_scoring))
        return out

    def score_extensions(self) -> ScoreExtensions | None:
        return None

    # --- Reserve / Unreserve / PreBind -----------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = _state(state)
        if isinstance(data, Status):
            return data
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            data.all_bound = True  # the pod references no PVC
            return None
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod.pod, node_name, volumes)
        except BinderError as exc:
            return Status.from_error(exc)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = state.get(STATE_KEY)
        if not isinstance(data, StateData):
            return
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``PreBindPreFlight``: SKIP when Reserve found every volume bound (or the pod has no PVC),
        else Success -- PreBind will bind claims or wait for provisioning -- or an Error without the node's
        PodVolumes."""
        data = _state(state)
        if isinstance(data, Status):
            return data
        if data.all_bound:
            return Status.skip()
        if node_name not in data.pod_volumes_by_node:
            return Status.from_error(f'no pod volumes found for node "{node_name}"')
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = _state(state)
        if isinstance(data, Status):
            return data
        if data.all_bound:
            return None
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.from_error(f'no pod volumes found for node "{node_name}"')
        try:
            await self.binder.bind_pod_volumes(pod.pod, node_name, volumes)
        except BinderError as exc:
            return Status.from_error(exc)
        return None


def new(args: Mapping[str, Any], handle: Handle) -> VolumeBinding:
    """The plugin factory (upstream ``New``): ``args`` are the defaulted, validated VolumeBindingArgs.

    The scorer exists only with StorageCapacityScoring (``handle.extra["feature_gates"]`` when set, else v1.37's
    defaults); shape scores 0..10 are scaled to 0..100 as upstream's ``MaxNodeScore / MaxCustomPriorityScore``.
    """
    gates = handle.extra.get("feature_gates")
    if not isinstance(gates, FeatureGates):
        gates = DEFAULT_GATES
    capacity_scoring = gates.enabled(STORAGE_CAPACITY_SCORING)
    scorer: VolumeCapacityScorer | None = None
    if capacity_scoring:
        factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        shape = [ShapePoint(int(p["utilization"]), int(p["score"]) * factor) for p in args.get("shape") or ()]
        scorer = build_scorer_function(shape)
    binder = VolumeBinder(handle, float(args.get("bindTimeoutSeconds", 600)))
    return VolumeBinding(handle, binder, scorer, capacity_scoring)
