"""GPU sharing and the FGD paper's policies as scheduler plugins, written against the public plugin API only.

These are out-of-tree plugins of kubeplane's own distribution (registered through the entry points of the
project's ``pyproject.toml``): they use nothing but :mod:`kubeplane.scheduler.framework` (the same API an
external plugin package has, docs/scheduler-plugins.md) plus the pure GPU model and policies of this package.
The user-facing page is docs/gpu.md.

* :class:`GpuShare` (PreFilter, Filter, Reserve/Unreserve, PreBind): per-device fitting and the device
  annotation. A node's per-device state is derived from ``NodeInfo.pods`` with
  :func:`kubeplane.gpu.model.assign_devices`: a pod's recorded devices (annotation ``gpu.kubeplane.io/devices``),
  else the devices this scheduler reserved for it (an assumed pod is in the NodeInfo before its annotation is
  written), else first fit in pod order.
* One Score plugin per policy of :mod:`kubeplane.gpu.policies`: :class:`FGD`, :class:`BestFit`,
  :class:`GpuPacking`, :class:`GpuClustering`, :class:`DotProduct`, :class:`RandomFit`; and
  :class:`GpuModelPreference`, a score by a configured ranking of GPU models.

Sharing between the plugins (invariants):

* Per scheduler, one :class:`GpuTracker` lives in ``Handle.extra`` (every profile's handle shares that dict), so
  the reservations of every profile's GpuShare count everywhere. It caches each node's derived state per
  ``(node name, NodeInfo.generation, reservation version of the node)``: a NodeInfo's generation changes on every
  pod added or removed, a reservation made or dropped on the node bumps its version, so a cached state is never
  stale. A reservation lives from Reserve until Unreserve, or until a later cycle's snapshot shows the pod with
  its annotation (the annotation is then authoritative) or without the pod (deleted).
* A policy plugin's device choice for each scored node is in CycleState under :data:`DEVICES_STATE_KEY`
  (a read-only mapping node name -> device indices, computed on first read); GpuShare's Reserve takes it when
  it fits and otherwise best fit (the tightest device for a share, lowest index on ties; whole GPUs the
  lowest-index free ones). With several policy plugins enabled, the last one's PreScore wins.
* The pod's GPU request is parsed once per cycle (:data:`REQUEST_STATE_KEY`).
* DRA GPUs (:mod:`kubeplane.gpu.dra_state`): a node's devices are its ``nvidia.com/gpu`` devices (indices
  ``0..ext-1``) followed by its DRA GPUs from ResourceSlices; a pod asking GPUs through ResourceClaims is filtered
  and allocated by DynamicResources alone (GpuShare skips it) and scored by the policies from the claims' allocated
  devices. The tracker refreshes the DRA view at the start of every cycle (GpuShare's PreFilter, the policies'
  PreScore) and bumps the version of each node whose DRA inputs changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.views import annotations_of
from kubeplane.client.interface import PatchType
from kubeplane.gpu.dra_state import DraState
from kubeplane.gpu.frag import PodType, TargetWorkload, typical_pods
from kubeplane.gpu.model import (
    GPU_DEVICES_ANNOTATION,
    MILLI_PER_GPU,
    GpuError,
    GpuRequest,
    assign_devices,
    devices_fit,
    devices_of,
    fit_devices,
    format_devices,
    gpu_request,
    gpu_request_or_none,
    node_gpu_count,
    node_gpu_model,
)
from kubeplane.gpu.policies import NodeView, PodDemand, Policy, devices_best, make_policy, normalize
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeScore,
    PreFilterResult,
    Status,
)
from kubeplane.scheduler.framework.plugin_args import InvalidArgs
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = [
    "DEVICES_STATE_KEY",
    "DRA_REQUEST_STATE_KEY",
    "FGD",
    "REQUEST_STATE_KEY",
    "TRACKER_KEY",
    "BestFit",
    "DotProduct",
    "FGDArgs",
    "GpuClustering",
    "GpuModelPreference",
    "GpuModelPreferenceArgs",
    "GpuPacking",
    "GpuShare",
    "GpuTracker",
    "NodeGpus",
    "RandomFit",
    "TargetPodTypeArgs",
    "tracker_of",
]

DEVICES_STATE_KEY: Final = GPU_DEVICES_ANNOTATION
"""CycleState key of the scoring policy's device choice: a mapping node name -> device indices."""
REQUEST_STATE_KEY: Final = "gpu.kubeplane.io/request"
"""CycleState key of the pod's parsed :class:`~kubeplane.gpu.model.GpuRequest` (None for a GPU-less pod)."""
TRACKER_KEY: Final = "kubeplane.gpu/tracker"
"""``Handle.extra`` key of the scheduler's :class:`GpuTracker`."""

REASON_NO_GPU: Final = "node(s) had no GPU"


def reason_model(models: frozenset[str]) -> str:
    return f"node(s) had no GPU of model {' or '.join(sorted(models))}"


def reason_share(milli: int) -> str:
    return f"node(s) had no GPU with {milli} milli free"


def reason_whole(count: int) -> str:
    return "node(s) had no free GPU" if count == 1 else f"node(s) had fewer than {count} free GPUs"


def reason_too_few(count: int) -> str:
    return f"node(s) had fewer than {count} GPUs"


# --- per-node device state ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """A node's devices as derived from its pods: free milli per device (index order), model, the
    GpuClustering tags of its GPU pods, and per pod (uid, cpu milli, request, devices): the GPU pods in pod
    order, then the GPU-less ones (request and devices None)."""

    model: str
    idle: tuple[int, ...]
    tags: frozenset[str]
    pods: tuple[tuple[str, int, GpuRequest | None, tuple[int, ...] | None], ...]
    ext: int = -1
    """How many of the devices are ``nvidia.com/gpu`` ones (the first ``ext``); -1: all of them."""

    @property
    def ext_idle(self) -> tuple[int, ...]:
        """The extended-resource devices' idle milli: what GpuShare fits extended-resource pods on."""
        return self.idle if self.ext < 0 else self.idle[: self.ext]

    def view(self, node: NodeInfo) -> NodeView:
        """The policies' view: free CPU milli and memory are allocatable minus the NodeInfo's requests."""
        return NodeView(
            cpu_left=node.allocatable.milli_cpu - node.requested.milli_cpu,
            mem_left=node.allocatable.memory - node.requested.memory,
            idle=self.idle,
            model=self.model,
            tags=self.tags,
        )


@dataclass(slots=True)
class _Reservation:
    node: str
    devices: tuple[int, ...]
    cycle: int


def _request_of(pod: PodInfo) -> GpuRequest | None:
    """The pod's request; a malformed one counts as none (the API server let the pod in; it uses no device)."""
    return gpu_request_or_none(pod.pod)


class GpuTracker:
    """The per-scheduler device bookkeeping shared by the GPU plugins (see the module docstring)."""

    def __init__(self) -> None:
        self.reservations: dict[str, _Reservation] = {}
        self.cycle = 0
        self._versions: dict[str, int] = {}
        self._states: dict[str, tuple[tuple[int, int], NodeGpus]] = {}
        self._workload_nodes: dict[str, tuple[NodeGpus, Counter[PodType]]] = {}
        self._workload_counts: Counter[PodType] | None = None
        self._workload: TargetWorkload = ()
        self.dra = DraState()
        self._dra_cycle = -1

    # --- reservations --------------------------------------------------------------------------------------

    def reserve(self, uid: str, node: str, devices: tuple[int, ...]) -> None:
        old = self.reservations.get(uid)
        if old is not None:
            self._bump(old.node)
        self.reservations[uid] = _Reservation(node, devices, self.cycle)
        self._bump(node)

    def unreserve(self, uid: str) -> None:
        old = self.reservations.pop(uid, None)
        if old is not None:
            self._bump(old.node)

    def reserved(self, uid: str) -> tuple[str, tuple[int, ...]] | None:
        found = self.reservations.get(uid)
        return None if found is None else (found.node, found.devices)

    def _bump(self, node: str) -> None:
        self._versions[node] = self._versions.get(node, 0) + 1

    def refresh_dra(self, handle: Handle) -> None:
        """Re-read the DRA GPUs (once per cycle: GpuShare's PreFilter and a policy's PreScore share it)."""
        if self._dra_cycle == self.cycle and self.cycle > 0:
            return
        self._dra_cycle = self.cycle
        self.dra.refresh(handle, self._bump)

    def next_cycle(self, handle: Handle) -> None:
        """Start a scheduling cycle: drop reservations a fresher snapshot made unnecessary.

        A reservation made in an earlier cycle is dropped when the snapshot's NodeInfo of its node (the cache's
        copy, refreshed at the start of every cycle, so it holds every assumed pod) shows the pod with its device
        annotation, or no longer holds it. A node the snapshot does not know keeps its reservations (offline
        handles have no snapshot).
        """
        self.cycle += 1
        self.refresh_dra(handle)
        if not self.reservations:
            return
        lister = handle.snapshot()
        for uid, res in list(self.reservations.items()):
            if res.cycle >= self.cycle:
                continue
            ni = lister.get(res.node)
            if ni is None:
                continue
            found = next((p for p in ni.pods if p.uid == uid), None)
            if found is None or devices_of(found.pod) is not None:
                del self.reservations[uid]  # no bump: the derived state of the node does not change

    # --- node state ----------------------------------------------------------------------------------------

    def node_state(self, node: NodeInfo) -> NodeGpus:
        key = (node.generation, self._versions.get(node.name, 0))
        cached = self._states.get(node.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        state = self._derive(node)
        self._states[node.name] = (key, state)
        return state

    def _derive(self, node: NodeInfo) -> NodeGpus:
        ext = node_gpu_count(node.node) if node.node is not None else 0
        model = node_gpu_model(node.node) if node.node is not None else ""
        dra = self.dra
        count = ext + dra.index.count(node.name)
        model = model or dra.index.model(node.name)
        # DRA uses first: their devices are recorded (the allocator's); then the extended-resource pods.
        held = dra.held(node.name, {p.uid for p in node.pods}) if dra.index else []
        entries: list[tuple[str, int, GpuRequest]] = [("", 0, req) for req, _ in held]
        recorded: list[tuple[int, ...] | None] = [_offset(devs, ext) for _, devs in held]
        cpu_only: list[tuple[str, int]] = []
        for pod in node.pods:
            request = _request_of(pod)
            uses = dra.pod_entries(pod.uid, pod.pod, node.name)
            if request is None and not uses:
                cpu_only.append((pod.uid, pod.requests.milli_cpu))
                continue
            for dra_request, devs in uses:
                entries.append((pod.uid, pod.requests.milli_cpu, dra_request))
                recorded.append(_offset(devs, ext))
            if request is None:
                continue
            devices = devices_of(pod.pod)
            if devices is None:
                res = self.reservations.get(pod.uid)
                if res is not None and res.node == node.name:
                    devices = res.devices
            entries.append((pod.uid, pod.requests.milli_cpu, request))
            recorded.append(devices)
        idle, placed = assign_devices(count, zip((e[2] for e in entries), recorded, strict=True))
        # the holders of no pod (claims reserved for none) hold devices but are not pods of the workload
        entries, placed = entries[len(held) :], placed[len(held) :]
        tags = frozenset(PodDemand.of(0, 0, e[2]).tag for e in entries)
        pods: list[tuple[str, int, GpuRequest | None, tuple[int, ...] | None]] = [
            (uid, cpu, req, devs) for (uid, cpu, req), devs in zip(entries, placed, strict=True)
        ]
        pods += [(uid, cpu, None, None) for uid, cpu in cpu_only]
        return NodeGpus(model, tuple(idle), tags, tuple(pods), ext if count != ext else -1)

    # --- the derived target workload (FGD without targetWorkload) ---------------------------------------------

    def workload(self, nodes: Sequence[NodeInfo]) -> TargetWorkload:
        """:func:`~kubeplane.gpu.frag.typical_pods` of every pod on ``nodes``, recomputed only when the
        multiset of pod types changed (per-node counts are cached per derived node state)."""
        counts: Counter[PodType] = Counter()
        seen: set[str] = set()
        for ni in nodes:
            state = self.node_state(ni)
            cached = self._workload_nodes.get(ni.name)
            if cached is None or cached[0] is not state:
                types: Counter[PodType] = Counter()
                for _, cpu, request, _ in state.pods:
                    types[PodDemand.of(cpu, 0, request).pod_type()] += 1
                cached = (state, types)
                self._workload_nodes[ni.name] = cached
            seen.add(ni.name)
            counts.update(cached[1])
        for name in [n for n in self._workload_nodes if n not in seen]:
            del self._workload_nodes[name]
        if counts != self._workload_counts:
            self._workload_counts = counts
            self._workload = typical_pods(counts.elements())
        return self._workload


def _offset(devices: tuple[int, ...] | None, ext: int) -> tuple[int, ...] | None:
    """DRA device indices as node device indices (after the ``ext`` extended-resource devices)."""
    return None if devices is None else tuple(d + ext for d in devices)


def tracker_of(handle: Handle) -> GpuTracker:
    """The scheduler's tracker (created on first use); every profile of a scheduler shares ``handle.extra``."""
    tracker = handle.extra.get(TRACKER_KEY)
    if not isinstance(tracker, GpuTracker):
        tracker = GpuTracker()
        handle.extra[TRACKER_KEY] = tracker
    return tracker


def _request(state: CycleState, pod: PodInfo) -> GpuRequest | None:
    """The pod's GPU request for this cycle (parsed once; a malformed one counts as none outside PreFilter)."""
    try:
        found: GpuRequest | None = state.read(REQUEST_STATE_KEY)
        return found
    except KeyError:
        request = _request_of(pod)
        state.write(REQUEST_STATE_KEY, request)
        return request


DRA_REQUEST_STATE_KEY: Final = "gpu.kubeplane.io/dra-request"
"""CycleState key of the pod's GPU demand through ResourceClaims (None without)."""


def _any_request(state: CycleState, pod: PodInfo, tracker: GpuTracker) -> GpuRequest | None:
    """The pod's GPU request: extended resource / annotation, else through its claims (parsed once per cycle)."""
    request = _request(state, pod)
    if request is not None:
        return request
    try:
        found: GpuRequest | None = state.read(DRA_REQUEST_STATE_KEY)
        return found
    except KeyError:
        dra = tracker.dra.request(pod.pod)
        state.write(DRA_REQUEST_STATE_KEY, dra)
        return dra


def _demand(state: CycleState, pod: PodInfo, tracker: GpuTracker) -> PodDemand:
    return PodDemand.of(pod.requests.milli_cpu, pod.requests.memory, _any_request(state, pod, tracker))


# --- GpuShare ------------------------------------------------------------------------------------------------------


class GpuShare:
    """PreFilter/Filter/Reserve/Unreserve/PreBind for GPUs shared per device (see the module docstring).

    PreFilter: a malformed GPU request rejects the pod (UnschedulableAndUnresolvable, the one-line problem);
    a GPU-less pod gets SKIP, so Filter is not called for it. Filter rejects a node without GPUs, of a model the
    pod does not accept, or with fewer devices than the pod asks (all UnschedulableAndUnresolvable: preemption
    cannot help), or without enough free devices (Unschedulable). Reserve picks the devices and remembers them;
    Unreserve forgets them; PreBind writes them to the pod's ``gpu.kubeplane.io/devices`` annotation (a merge
    patch of ``metadata.annotations``) unless it already says so.
    """

    NAME: ClassVar[str] = "GpuShare"

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._handle = handle
        self.tracker = tracker_of(handle)

    def name(self) -> str:
        return self.NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Devices free up when a pod leaves; a node may be added, grow GPUs or change its model label."""
        return (
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE)),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_LABEL)
            ),
        )

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        self.tracker.next_cycle(self._handle)
        try:
            request = gpu_request(pod.pod)
        except GpuError as exc:
            return None, Status.unresolvable(str(exc))
        state.write(REQUEST_STATE_KEY, request)
        if request is None:
            return None, Status.skip()
        return None, None

    def pre_filter_extensions(self) -> None:
        """None: the state is derived from the NodeInfo itself, so added/removed pods need no bookkeeping."""
        return

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        request = _request(state, pod)
        if request is None:
            return None
        gpus = self.tracker.node_state(node)
        idle = gpus.ext_idle
        if not idle:
            return Status.unresolvable(REASON_NO_GPU)
        if not request.accepts(gpus.model):
            assert request.models is not None
            return Status.unresolvable(reason_model(request.models))
        if len(idle) < request.count:
            return Status.unresolvable(reason_too_few(request.count))
        if fit_devices(idle, request) is not None:
            return None
        if request.is_share:
            return Status.unschedulable(reason_share(request.milli))
        return Status.unschedulable(reason_whole(request.count))

    def choose(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[int, ...] | Status | None:
        """The devices Reserve takes on ``node_name``: the policy's choice when it fits, else best fit; None for
        a GPU-less pod; a Status when nothing fits or the node is unknown."""
        request = _request(state, pod)
        if request is None:
            return None
        node = self._handle.snapshot().get(node_name)
        if node is None:
            return Status.from_error(f"node {node_name!r} is not in the scheduler's snapshot")
        idle = self.tracker.node_state(node).ext_idle
        choices = state.get(DEVICES_STATE_KEY)
        if isinstance(choices, Mapping):
            wanted = choices.get(node_name)
            if wanted is not None and devices_fit(idle, request, wanted):
                return tuple(wanted)
        chosen = devices_best(idle, PodDemand.of(0, 0, request))
        if not devices_fit(idle, request, chosen):
            return Status.unschedulable(
                reason_share(request.milli) if request.is_share else reason_whole(request.count)
            )
        return chosen

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        chosen = self.choose(state, pod, node_name)
        if chosen is None or isinstance(chosen, Status):
            return chosen
        self.tracker.reserve(pod.uid, node_name, chosen)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.tracker.unreserve(pod.uid)

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """SKIP unless PreBind has an annotation to write: devices reserved on this node that the pod does not
        carry yet (the scheduler then nominates the pod to the node first, as for any PreBind with work)."""
        found = self.tracker.reserved(pod.uid)
        if found is None or found[0] != node_name:
            return Status.skip()
        if annotations_of(pod.pod).get(GPU_DEVICES_ANNOTATION) == format_devices(found[1]):
            return Status.skip()
        return None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        found = self.tracker.reserved(pod.uid)
        if found is None or found[0] != node_name:
            return None
        text = format_devices(found[1])
        if annotations_of(pod.pod).get(GPU_DEVICES_ANNOTATION) == text:
            return None
        client = self._handle.client
        if client is None:
            return Status.from_error(f"cannot annotate pod {pod.key} with its GPUs: the scheduler has no client")
        try:
            # through pods/status: system:kube-scheduler may patch that, not the pod itself (bootstrap policy)
            await client.patch(
                client.resource("pods"),
                pod.name,
                {"metadata": {"annotations": {GPU_DEVICES_ANNOTATION: text}}},
                patch_type=PatchType.MERGE,
                namespace=pod.namespace,
                subresource="status",
            )
        except Exception as exc:  # any failure fails the binding cycle; Unreserve then forgets the devices
            return Status.from_error(exc)
        return None


# --- the policies as Score plugins --------------------------------------------------------------------------------


class _Choices(Mapping[str, tuple[int, ...]]):
    """The policy's device choice per scored node, computed on first read from the view it scored."""

    def __init__(self, policy: Policy, demand: PodDemand, handle: Handle) -> None:
        self._policy = policy
        self._demand = demand
        self._handle = handle
        self.views: dict[str, NodeView] = {}
        self._chosen: dict[str, tuple[int, ...]] = {}

    def __getitem__(self, name: str) -> tuple[int, ...]:
        found = self._chosen.get(name)
        if found is None:
            found = self._policy.devices(self.views[name], self._demand, self._handle.rng)
            self._chosen[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.views)

    def __len__(self) -> int:
        return len(self.views)


_POLICY_STATE_PREFIX: Final = "PreScore"


@dataclass(slots=True)
class _PolicyCycle:
    demand: PodDemand
    policy: Policy
    index: dict[str, int]
    choices: _Choices

    def clone(self) -> _PolicyCycle:
        return self


class _PolicyPlugin:
    """A policy of :mod:`kubeplane.gpu.policies` as PreScore/Score (+ NormalizeScore for BestFit).

    PreScore builds the pod's demand, lets the policy draw (RandomFit, with the handle's RNG) and publishes the
    device choices under :data:`DEVICES_STATE_KEY`; Score scores one node's view and records it for the choice.
    """

    NAME: ClassVar[str] = ""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._handle = handle
        self.tracker = tracker_of(handle)
        self._normalize = self.NAME != "FGD" and make_policy(self.NAME).normalize

    def name(self) -> str:
        return self.NAME

    def policy(self, nodes: Sequence[NodeInfo]) -> Policy:
        return make_policy(self.NAME)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        self.tracker.refresh_dra(self._handle)
        demand = _demand(state, pod, self.tracker)
        policy = self.policy(nodes)
        policy.pre_score(len(nodes), self._handle.rng)
        choices = _Choices(policy, demand, self._handle)
        index = {ni.name: i for i, ni in enumerate(nodes)}
        state.write(_POLICY_STATE_PREFIX + self.NAME, _PolicyCycle(demand, policy, index, choices))
        if demand.count:
            state.write(DEVICES_STATE_KEY, choices)
        return None

    def _cycle(self, state: CycleState, pod: PodInfo) -> _PolicyCycle:
        found = state.get(_POLICY_STATE_PREFIX + self.NAME)
        if isinstance(found, _PolicyCycle):
            return found
        # Score without PreScore (a caller outside the framework): a policy without a draw.
        demand = _demand(state, pod, self.tracker)
        policy = self.policy(())
        cycle = _PolicyCycle(demand, policy, {}, _Choices(policy, demand, self._handle))
        state.write(_POLICY_STATE_PREFIX + self.NAME, cycle)
        return cycle

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        cycle = self._cycle(state, pod)
        view = self.tracker.node_state(node).view(node)
        cycle.choices.views[node.name] = view
        index = cycle.index.get(node.name, -1)
        return cycle.policy.score_at(index, view, cycle.demand), None

    def score_extensions(self) -> _PolicyPlugin | None:
        """Itself for a normalising policy (BestFit): the artifact's integer min–max over the scored nodes."""
        return self if self._normalize else None

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        for entry, value in zip(scores, normalize([s.score for s in scores]), strict=True):
            entry.score = value
        return None


class BestFit(_PolicyPlugin):
    """Least CPU and GPU left after placement (fixed max-spec normalisers), min–max normalised; tightest device."""

    NAME = "BestFit"


class DotProduct(_PolicyPlugin):
    """The artifact's "Tetris": the smallest dot product of the node's free and the pod's demand; tightest device."""

    NAME = "DotProduct"


class GpuPacking(_PolicyPlugin):
    """Shared devices first, then free devices of used nodes, then idle nodes; GPU-less pods score 0."""

    NAME = "GpuPacking"


class GpuClustering(_PolicyPlugin):
    """Pods of one kind together (share, 1-GPU, 2-GPU, ...); GPU-less pods score 0."""

    NAME = "GpuClustering"


class RandomFit(_PolicyPlugin):
    """One feasible node drawn per pod (the handle's RNG) scores 100, the others 0; a share on a random device."""

    NAME = "RandomFit"


# --- FGD ------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetPodTypeArgs:
    """One pod type of FGD's target workload: CPU request (a quantity), milli-GPU per device, devices, acceptable
    models (absent: any) and its weight (the weights are renormalised to sum to 1)."""

    cpu: str
    weight: float
    gpu_milli: int = 0
    gpu_count: int = 0
    models: list[str] | None = None

    def __post_init__(self) -> None:
        try:
            Quantity.parse(self.cpu)
        except (QuantityError, ValueError):
            raise InvalidArgs("cpu", self.cpu, "must be a quantity") from None
        if not self.weight > 0:
            raise InvalidArgs("weight", self.weight, "must be greater than 0")
        if not 0 <= self.gpu_milli <= MILLI_PER_GPU:
            raise InvalidArgs("gpuMilli", self.gpu_milli, f"must be between 0 and {MILLI_PER_GPU}")
        if self.gpu_count < 0:
            raise InvalidArgs("gpuCount", self.gpu_count, "must be greater than or equal to 0")
        if (self.gpu_count == 0) != (self.gpu_milli == 0):
            raise InvalidArgs("gpuCount", self.gpu_count, "must be 0 exactly when gpuMilli is 0")
        if 0 < self.gpu_milli < MILLI_PER_GPU and self.gpu_count != 1:
            raise InvalidArgs("gpuCount", self.gpu_count, "must be 1 for a share of a GPU (gpuMilli below 1000)")
        if self.models is not None and not self.models:
            raise InvalidArgs("models", self.models, "must not be empty (leave it out for any model)")

    def pod_type(self) -> PodType:
        cpu = Quantity.parse(self.cpu).milli_value()
        models = None if self.models is None else frozenset(self.models)
        return PodType(cpu, self.gpu_milli, self.gpu_count, models)


@dataclass(frozen=True)
class FGDArgs:
    """``targetWorkload``: the pod types M to measure fragmentation against; absent: derived from the pods in the
    scheduler's snapshot (the most popular types covering 95 % of them, as the paper's ``GetTypicalPods``)."""

    target_workload: list[TargetPodTypeArgs] | None = None

    def __post_init__(self) -> None:
        if self.target_workload is not None and not self.target_workload:
            raise InvalidArgs("targetWorkload", [], "must not be empty (leave it out to derive it from the pods)")

    def workload(self) -> TargetWorkload | None:
        if self.target_workload is None:
            return None
        total = sum(t.weight for t in self.target_workload)
        return tuple((t.pod_type(), t.weight / total) for t in self.target_workload)


class FGD(_PolicyPlugin):
    """Fragmentation Gradient Descent: the node (and, for a share, the device) whose use lowers the node's
    fragmentation against the target workload the most; ``int(100 · sigmoid(Δ / 1000))``, not normalised."""

    NAME = "FGD"
    Args = FGDArgs

    def __init__(self, args: FGDArgs, handle: Handle) -> None:
        super().__init__({}, handle)
        self._fixed = args.workload()
        self._policy: Policy | None = make_policy("FGD", self._fixed) if self._fixed is not None else None
        self._derived_from: TargetWorkload | None = None

    def policy(self, nodes: Sequence[NodeInfo]) -> Policy:
        """One Fgd per target workload, so its memo of node states survives across pods."""
        if self._fixed is not None and self._policy is not None:
            return self._policy
        workload = self.tracker.workload(self._handle.snapshot().list())
        if self._policy is None or workload != self._derived_from:
            self._derived_from = workload
            self._policy = make_policy("FGD", workload)
        return self._policy


# --- GpuModelPreference ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuModelPreferenceArgs:
    """``models``: GPU models (values of ``nvidia.com/gpu.product``), strongest first."""

    models: list[str]

    def __post_init__(self) -> None:
        if not self.models:
            raise InvalidArgs("models", self.models, "must name at least one GPU model")
        for i, model in enumerate(self.models):
            if not model:
                raise InvalidArgs(f"models[{i}]", model, "must not be empty")
            if model in self.models[:i]:
                raise InvalidArgs(f"models[{i}]", model, "is listed twice")


class GpuModelPreference:
    """Score by GPU model: the i-th of n listed models scores ``100 · (n − 1 − i) // (n − 1)`` (100 for the
    first, 0 for the last; 100 when only one is listed); a node of an unlisted model or without GPUs scores 0.
    A pod without GPUs is not scored (PreScore SKIP), i.e. 0 on every node."""

    NAME: ClassVar[str] = "GpuModelPreference"
    Args = GpuModelPreferenceArgs

    def __init__(self, args: GpuModelPreferenceArgs, handle: Handle) -> None:
        n = len(args.models)
        self.ranks = {m: 100 if n == 1 else 100 * (n - 1 - i) // (n - 1) for i, m in enumerate(args.models)}
        self._handle = handle
        self.tracker = tracker_of(handle)

    def name(self) -> str:
        return self.NAME

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        self.tracker.refresh_dra(self._handle)
        return Status.skip() if _any_request(state, pod, self.tracker) is None else None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        """The node's model: its ``nvidia.com/gpu.product`` label, else its DRA GPUs' model attribute."""
        if _any_request(state, pod, self.tracker) is None or node.node is None:
            return 0, None
        if node_gpu_count(node.node):
            return self.ranks.get(node_gpu_model(node.node), 0), None
        if not self.tracker.dra.index.count(node.name):
            return 0, None
        return self.ranks.get(node_gpu_model(node.node) or self.tracker.dra.index.model(node.name), 0), None

    def score_extensions(self) -> None:
        return None
