"""NodeResourcesFit: does the node have room for the pod's requests, and how well does the pod fit there.

Mirrors upstream ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (kube-scheduler v1.37) with the
default feature gates (SidecarContainers, PodLevelResources, InPlacePodVerticalScaling, SchedulerQueueingHints and
DRAExtendedResource on). Behaviour:

* PreFilter stores the pod's effective request (``PodInfo.requests``: containers summed, init containers and
  sidecars by the KEP-753 formula, pod-level requests, overhead) together with the scalar resources Filter must
  check, sorted by name, the ignored ones already removed (ignoring never depends on the node).
* Filter is upstream's ``fitsRequest``: "Too many pods" when the node's pod slots are used up, then cpu, memory,
  ephemeral-storage and each requested scalar resource whose request exceeds allocatable minus requested
  ("Insufficient <name>"). A resource the pod requests more of than the node's whole allocatable is
  *unresolvable* (preemption cannot help), which makes the status UNSCHEDULABLE_AND_UNRESOLVABLE; otherwise it
  is UNSCHEDULABLE. ``ignoredResources`` / ``ignoredResourceGroups`` apply to extended resources only
  (``kubernetes.io/``-prefixed names and hugepages are always checked). Filter without PreFilter state is an
  ERROR, as upstream.
* Extended resources backed by DRA (upstream ``shouldDelegateResourceToDRA``): a requested scalar resource that
  a DeviceClass serves (its ``extendedResourceName`` or the implicit ``deviceclass.resource.kubernetes.io/<class>``)
  is not checked on a node whose allocatable for it is 0 or absent; DynamicResources allocates devices for it
  there. PreFilter lists the DeviceClasses only for a pod requesting such a name. DeviceClass Add/Update events
  queue a pod whose requests a new or changed mapping names (``isSchedulableAfterDeviceClassEvent``).
* PreScore/Score use the configured scoring strategy (LeastAllocated, MostAllocated, RequestedToCapacityRatio)
  on non-zero requests through :mod:`.resource_allocation`; Score without PreScore state recomputes it.
* The scalar resources' reasons come in name order; upstream iterates a Go map there (random order).

Invariants: ``filter_vector`` is True exactly where ``filter`` returns None and ``score_vector`` equals ``score``
per row (property tests pin both). DRA-backed extended resources score by their devices on nodes without them
in allocatable (upstream's ``calculateDRAExtendedResourceAllocatableRequest``, :mod:`.resource_allocation_dra`).
Left out: the alpha InPlacePodVerticalScalingSchedulerPreemption deltas for a pod already bound to the node.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np

from kubeplane.api.pods import pod_requests
from kubeplane.api.views import section, spec_of, status_of, uid_of
from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.backend.row_memo import RowMemo
from kubeplane.scheduler.dra.extended import DEVICE_CLASS_PREFIX, DeviceClassResolver, is_dra_extended_resource_name
from kubeplane.scheduler.dra.features import gate
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, Resource
from kubeplane.scheduler.plugins.resource_allocation import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    AllocationScorePlugin,
    LeastAllocatedStrategy,
    MostAllocatedStrategy,
    RequestedToCapacityRatioStrategy,
    ResourceAllocationScorer,
    ScoringStrategy,
    parse_resource_specs,
)

__all__ = [
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "REASON_PODS",
    "InsufficientResource",
    "NodeResourcesFit",
    "checked_resources",
    "filter_aggregates",
    "fits_request",
    "is_extended_resource_name",
    "new",
]

NAME: Final = "NodeResourcesFit"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

_REASON_PODS: Final = "Too many pods"
REASON_PODS: Final = _REASON_PODS
_REASON_CPU: Final = "Insufficient cpu"
_REASON_MEMORY: Final = "Insufficient memory"
_REASON_EPHEMERAL: Final = "Insufficient ephemeral-storage"

_UNCHECKED = np.iinfo(np.int64).min
"""The need of a resource the pod does not request: every node's free amount passes (even an overcommitted one)."""


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """What does not fit and why (upstream ``InsufficientResource``): the reason string is user-facing.

    ``unresolvable`` means the pod requests more than the node's whole allocatable, so evicting pods cannot help.
    """

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


# --- extended resource names (pkg/apis/core/v1/helper) ----------------------------------------------------

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def _is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    else:
        return False
    return 0 < len(name) <= 63 and _QUALIFIED_NAME_PART.fullmatch(name) is not None


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io/`` that is a valid
    qualified name once prefixed with ``requests.`` (so it can be quota-ed)."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return _is_qualified_name("requests." + name)


def _is_ignored(name: str, ignored_resources: Collection[str], ignored_groups: Collection[str]) -> bool:
    if not is_extended_resource_name(name):
        return False
    return name in ignored_resources or (bool(ignored_groups) and name.split("/", 1)[0] in ignored_groups)


# --- fitsRequest --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    """The pod's request as Filter checks it; immutable, so ``clone`` returns itself."""

    request: Resource
    milli_cpu: int
    memory: int
    ephemeral_storage: int
    scalars: tuple[tuple[str, int, str], ...]  # (name, request > 0, reason), not ignored, sorted by name
    dra_backed: frozenset[str] = frozenset()
    """Scalars a DeviceClass serves: skipped on nodes with no allocatable for them (left to DRA there)."""

    def clone(self) -> _PreFilterState:
        return self


def _pre_filter_state(
    request: Resource,
    ignored_resources: Collection[str],
    ignored_groups: Collection[str],
    dra_backed: frozenset[str] = frozenset(),
) -> _PreFilterState:
    scalars = tuple(
        (name, quantity, f"Insufficient {name}")
        for name, quantity in sorted(request.scalar.items())
        if quantity > 0 and not _is_ignored(name, ignored_resources, ignored_groups)
    )
    backed = frozenset(name for name, _, _ in scalars if name in dra_backed)
    return _PreFilterState(request, request.milli_cpu, request.memory, request.ephemeral_storage, scalars, backed)


def _insufficient(
    state: _PreFilterState, allocatable: Resource, used: Resource, pods: int
) -> list[InsufficientResource]:
    """Upstream ``fitsRequest`` on a precomputed request, for a node with this allocatable, these requests of its
    pods and this many pods. Requests of 0 are never checked, so upstream's early return for an all-zero request
    changes nothing and is not needed."""
    out: list[InsufficientResource] = []
    if pods + 1 > allocatable.allowed_pod_number:
        out.append(InsufficientResource("pods", _REASON_PODS, 1, pods, allocatable.allowed_pod_number))
    cpu = state.milli_cpu
    if cpu > 0 and cpu > allocatable.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(
                "cpu", _REASON_CPU, cpu, used.milli_cpu, allocatable.milli_cpu, cpu > allocatable.milli_cpu
            )
        )
    memory = state.memory
    if memory > 0 and memory > allocatable.memory - used.memory:
        out.append(
            InsufficientResource(
                "memory", _REASON_MEMORY, memory, used.memory, allocatable.memory, memory > allocatable.memory
            )
        )
    storage = state.ephemeral_storage
    if storage > 0 and storage > allocatable.ephemeral_storage - used.ephemeral_storage:
        out.append(
            InsufficientResource(
                "ephemeral-storage",
                _REASON_EPHEMERAL,
                storage,
                used.ephemeral_storage,
                allocatable.ephemeral_storage,
                storage > allocatable.ephemeral_storage,
            )
        )
    if state.scalars:
        node_scalar = allocatable.scalar
        used_scalar = used.scalar
        for name, quantity, reason in state.scalars:
            capacity = node_scalar.get(name, 0)
            if capacity == 0 and name in state.dra_backed:
                continue
            in_use = used_scalar.get(name, 0)
            if quantity > capacity - in_use:
                out.append(InsufficientResource(name, reason, quantity, in_use, capacity, quantity > capacity))
    return out


def fits_request(
    pod_request: Resource,
    node_info: NodeInfo,
    ignored_resources: Collection[str] | None = None,
    ignored_groups: Collection[str] | None = None,
    dra_backed: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """Upstream ``Fits``/``fitsRequest``: what of ``pod_request`` the node cannot hold, in upstream's order (pod
    count, cpu, memory, ephemeral-storage, then scalar resources by name); empty when the pod fits.

    ``ignored_resources`` (exact names) and ``ignored_groups`` (the part before ``/``) skip extended resources;
    ``dra_backed`` names resources a DeviceClass serves, skipped where the node has no allocatable for them.
    """
    state = _pre_filter_state(pod_request, ignored_resources or (), ignored_groups or (), dra_backed)
    return _insufficient(state, node_info.allocatable, node_info.requested, len(node_info.pods))


def checked_resources(state: CycleState) -> tuple[tuple[str, int, bool, str], ...] | None:
    """What Filter checks for the cycle's pod besides the pod count (:data:`REASON_PODS`), in its order:
    ``(resource, request, dra_backed, reason)`` for cpu, memory and ephemeral-storage when requested, then each
    checked scalar resource (``dra_backed``: not checked on a node with no allocatable for it). None without
    PreFilter state (Filter would be an error). Preemption's resource-only paths do their arithmetic over exactly
    these; a failing check gives its reason, and the status is UNSCHEDULABLE_AND_UNRESOLVABLE when a failing
    request exceeds the node's whole allocatable (never for the pod count)."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, _PreFilterState):
        return None
    basic = (
        ("cpu", s.milli_cpu, _REASON_CPU),
        ("memory", s.memory, _REASON_MEMORY),
        ("ephemeral-storage", s.ephemeral_storage, _REASON_EPHEMERAL),
    )
    out = [(name, quantity, False, reason) for name, quantity, reason in basic if quantity > 0]
    out.extend((name, quantity, name in s.dra_backed, reason) for name, quantity, reason in s.scalars)
    return tuple(out)


def filter_aggregates(state: CycleState, allocatable: Resource, requested: Resource, num_pods: int) -> Status | None:
    """Filter's verdict (not attributed to the plugin) on a node with this allocatable, this sum of its pods'
    requests and this many pods: Filter reads nothing else of the node."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if not isinstance(s, _PreFilterState):
        return _missing_state(PRE_FILTER_STATE_KEY, s)
    insufficient = _insufficient(s, allocatable, requested, num_pods)
    return _status_of(insufficient) if insufficient else None


def _status_of(insufficient: Sequence[InsufficientResource]) -> Status:
    code = Code.UNSCHEDULABLE
    for resource in insufficient:
        if resource.unresolvable:
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            break
    return Status(code, tuple(resource.reason for resource in insufficient))


# --- scoring state ------------------------------------------------------------------------------------------


# --- queueing hints helpers ---------------------------------------------------------------------------------


def _object(obj: Any, attribute: str) -> Mapping[str, Any] | None:
    """The wire dict of an event object, which may be the dict itself, a PodInfo (``.pod``) or NodeInfo."""
    if obj is None or isinstance(obj, Mapping):
        return obj
    value = getattr(obj, attribute, None)
    return value if isinstance(value, Mapping) else None


def _max_request(pod: Mapping[str, Any]) -> Resource:
    """``Resource.SetMaxResource(PodRequests(pod, UseStatusResources))`` (negative amounts count as 0)."""
    requests = pod_requests(pod, use_status_resources=True)
    return Resource.from_natural({name: max(0, amount) for name, amount in requests.items()})


def _allocatable(node: Mapping[str, Any]) -> Resource:
    return Resource.from_resource_list(status_of(node).get("allocatable"))


def _any_requested_resource_increased(request: Resource, original: Resource, modified: Resource) -> bool:
    """Upstream ``haveAnyRequestedResourcesIncreased`` on the two nodes' allocatable."""
    if modified.allowed_pod_number > original.allowed_pod_number:
        return True
    if (
        (request.milli_cpu > 0 and modified.milli_cpu > original.milli_cpu)
        or (request.memory > 0 and modified.memory > original.memory)
        or (request.ephemeral_storage > 0 and modified.ephemeral_storage > original.ephemeral_storage)
    ):
        return True
    return any(
        quantity != 0 and modified.scalar.get(name, 0) > original.scalar.get(name, 0)
        for name, quantity in request.scalar.items()
    )


# --- the plugin ---------------------------------------------------------------------------------------------


class NodeResourcesFit(AllocationScorePlugin):
    """PreFilter, Filter (and ``filter_vector``), EnqueueExtensions, PreScore and Score (and ``score_vector``)."""

    score_state_key = PRE_SCORE_STATE_KEY

    def __init__(
        self,
        scorer: ResourceAllocationScorer,
        *,
        ignored_resources: Collection[str] = (),
        ignored_resource_groups: Collection[str] = (),
        handle: Handle | None = None,
    ) -> None:
        self.scorer = scorer
        self.ignored_resources = frozenset(ignored_resources)
        self.ignored_resource_groups = frozenset(ignored_resource_groups)
        self.handle = handle
        gates = handle.extra.get("feature_gates") if handle is not None else None
        self.dra_extended_resource = gate(gates if isinstance(gates, Mapping) else None, "DRAExtendedResource")
        """The DRAExtendedResource gate (v1.37: on)."""
        self._fit_memo = RowMemo()
        """Filter masks of pod shapes in steady use (:mod:`.backend.row_memo`)."""

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None, handle: Handle | None = None) -> NodeResourcesFit:
        """From v1 ``NodeResourcesFitArgs`` (camelCase), applying upstream's defaults to what is missing."""
        args = args or {}
        raw = args.get("scoringStrategy") or {}
        strategy_type = raw.get("type") or LEAST_ALLOCATED
        resources = parse_resource_specs(raw.get("resources"))
        strategy: ScoringStrategy
        if strategy_type == LEAST_ALLOCATED:
            strategy = LeastAllocatedStrategy()
        elif strategy_type == MOST_ALLOCATED:
            strategy = MostAllocatedStrategy()
        elif strategy_type == REQUESTED_TO_CAPACITY_RATIO:
            shape = section(raw, "requestedToCapacityRatio").get("shape")
            if not shape:
                raise ValueError("scoringStrategy.requestedToCapacityRatio.shape: Required value")
            strategy = RequestedToCapacityRatioStrategy.from_v1(shape)
        else:
            raise ValueError(f"scoring strategy {strategy_type} is not supported")
        return cls(
            ResourceAllocationScorer(strategy_type, resources, strategy, use_requested=False),
            ignored_resources=args.get("ignoredResources") or (),
            ignored_resource_groups=args.get("ignoredResourceGroups") or (),
            handle=handle,
        )

    def name(self) -> str:
        return NAME

    # -- PreFilter / Filter -----------------------------------------------------------------------------

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the state is a function of the pod's requests and this
        plugin's configuration, unless a requested extended resource may be DeviceClass-backed (cluster state)."""
        if self.handle is None or not self.dra_extended_resource:
            return True
        return not any(q > 0 and is_dra_extended_resource_name(n) for n, q in pod.requests.scalar.items())

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(
            PRE_FILTER_STATE_KEY,
            _pre_filter_state(
                pod.requests, self.ignored_resources, self.ignored_resource_groups, self._dra_backed(pod.requests)
            ),
        )
        return None, None

    def _resolver(self) -> DeviceClassResolver | None:
        if self.handle is None or not self.dra_extended_resource:
            return None
        return DeviceClassResolver.from_classes(self.handle.list_objects("deviceclasses", ""))

    def _dra_backed(self, request: Resource) -> frozenset[str]:
        """The pod's requested resources a DeviceClass serves (none without the gate or a handle); the classes
        are listed only for a pod requesting an extended-resource name."""
        names = [n for n, q in request.scalar.items() if q > 0 and is_dra_extended_resource_name(n)]
        resolver = self._resolver() if names else None
        if resolver is None:
            return frozenset()
        return frozenset(n for n in names if resolver.get(n) is not None)

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return _missing_state(PRE_FILTER_STATE_KEY, s)
        insufficient = _insufficient(s, node.allocatable, node.requested, len(node.pods))
        return _status_of(insufficient) if insufficient else None

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return np.zeros(rows.shape, np.bool_)  # filter returns an error for every node
        # Elementwise in the row and a function of these numbers only: kept as a column across cycles.
        key = (s.milli_cpu, s.memory, s.ephemeral_storage, s.scalars, s.dra_backed)
        infos = table.node_infos

        def one(r: int) -> bool:
            ni = infos[r]
            return not _insufficient(s, ni.allocatable, ni.requested, len(ni.pods))

        return cast(BoolArray, self._fit_memo.get(table, key, functools.partial(_fits, s, table), rows, one=one))

    # -- EnqueueExtensions ------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Pod deletion or scale-down may free room; a new node or more allocatable may offer it. With queueing
        hints on, upstream registers only Node Add and UpdateNodeAllocatable; with DRAExtendedResource, DeviceClass
        Add and Update too."""
        events = (
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
        )
        if not self.dra_extended_resource:
            return events
        class_event = ClusterEvent("DeviceClass", ActionType.ADD | ActionType.update())
        return (*events, ClusterEventWithHint(class_event, self.is_schedulable_after_device_class_event))

    def is_schedulable_after_device_class_event(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterDeviceClassEvent``: an update that keeps the extended resource name is
        skipped; a new class whose implicit name, or a class whose (new) ``extendedResourceName``, the pod
        requests queues it."""
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        name = str((new.get("metadata") or {}).get("name") or "")
        extended = (new.get("spec") or {}).get("extendedResourceName")
        requests = pod.requests.scalar
        if isinstance(old, Mapping):
            if ((old.get("spec") or {}).get("extendedResourceName") or "") == (extended or ""):
                return QueueingHint.QUEUE_SKIP
        elif DEVICE_CLASS_PREFIX + name in requests:
            return QueueingHint.QUEUE
        if extended and extended in requests:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def is_schedulable_after_pod_event(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodEvent``: a deleted pod that was bound (or nominated) may free room;
        a scaled-down pod helps if it is the target pod or a bound pod whose requests the target also requests
        got smaller."""
        original, modified = _object(old, "pod"), _object(new, "pod")
        if modified is None:
            if original is None:
                return QueueingHint.QUEUE
            spec = spec_of(original)
            status = status_of(original)
            if not spec.get("nodeName") and not status.get("nominatedNodeName"):
                return QueueingHint.QUEUE_SKIP
            return QueueingHint.QUEUE
        if original is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if self._scale_down_helps(pod, original, modified) else QueueingHint.QUEUE_SKIP

    @staticmethod
    def _scale_down_helps(target: PodInfo, original: Mapping[str, Any], modified: Mapping[str, Any]) -> bool:
        if uid_of(modified) == target.uid:
            return True
        if not spec_of(modified).get("nodeName"):
            return False
        before, after = _max_request(original), _max_request(modified)
        wanted = target.requests
        if wanted.milli_cpu and before.milli_cpu > after.milli_cpu:
            return True
        if wanted.memory and before.memory > after.memory:
            return True
        if wanted.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
            return True
        return any(
            quantity and before.scalar.get(name, 0) > after.scalar.get(name, 0)
            for name, quantity in wanted.scalar.items()
        )

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterNodeChange``: skip unless the (new or updated) node could hold the pod on
        its own, and for an update, unless an allocatable the pod needs grew."""
        original, modified = _object(old, "node"), _object(new, "node")
        backed = self._dra_backed(pod.requests)
        if modified is None or fits_request(pod.requests, NodeInfo(modified), dra_backed=backed):
            return QueueingHint.QUEUE_SKIP
        if original is None:
            return QueueingHint.QUEUE
        after = _allocatable(modified)
        if not _any_requested_resource_increased(pod.requests, _allocatable(original), after) and not any(
            after.scalar.get(name, 0) == 0 for name in backed
        ):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    # -- PreScore / Score -------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self._score_state(pod))
        return None


def _missing_state(key: str, found: object) -> Status:
    if found is None:
        return Status.from_error(f'error reading "{key}" from cycleState: not found')
    return Status.from_error(f"{found!r}  convert to NodeResourcesFit.preFilterState error")


def new(args: Mapping[str, Any], handle: Handle) -> NodeResourcesFit:
    """The plugin factory: ``args`` is v1 ``NodeResourcesFitArgs``; ``{}`` gets upstream's defaults
    (LeastAllocated on cpu and memory, weight 1, nothing ignored)."""
    return NodeResourcesFit.from_args(args, handle)


def _fits(s: _PreFilterState, table: NodeTable, rows: IntArray) -> BoolArray:
    """Filter's verdict on ``rows`` (True: the pod fits), elementwise in the row."""
    # One gather of the free pods/cpu/memory/ephemeral-storage (NodeTable.free, FREE_RESOURCES order) against
    # the pod's needs: one more pod always, a resource only when requested (else no bound at all).
    need = np.array([1, *(q if q > 0 else _UNCHECKED for q in (s.milli_cpu, s.memory, s.ephemeral_storage))], np.int64)
    ok = cast(BoolArray, (table.free[:, rows] >= need[:, np.newaxis]).all(axis=0))
    for name, quantity, _ in s.scalars:
        capacity = table.allocatable_of(name)[rows]
        fits = quantity <= capacity - table.requested_of(name)[rows]
        ok &= (fits | (capacity == 0)) if name in s.dra_backed else fits
    return ok
