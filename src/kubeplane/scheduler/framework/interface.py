"""The scheduling framework's contract: status codes, CycleState and one Protocol per extension point.

Mirrors ``pkg/scheduler/framework/interface.go`` (kube-scheduler v1.37). Conventions:

* A plugin method returns ``None`` for success (Go's nil ``*Status``); :class:`Status` otherwise.
* ``pod`` arguments are :class:`~kubeplane.scheduler.framework.types.PodInfo` (the pod dict plus values
  computed once per object version), node arguments are ``NodeInfo`` from the cycle's snapshot. Plugins never
  mutate either; they share per-cycle data only through :class:`CycleState`.
* What each :class:`Code` does to the pod in the queue is documented on the code itself.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.recorder import CycleRecorder
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo

__all__ = [
    "FEASIBLE_ROWS_KEY",
    "MAX_NODE_SCORE",
    "MAX_TOTAL_SCORE",
    "MIN_NODE_SCORE",
    "ActionType",
    "BindPlugin",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Code",
    "CycleState",
    "EnqueueExtensions",
    "FeasibleRows",
    "FilterPlugin",
    "NodeScore",
    "NodeToStatus",
    "PassesEveryRowPlugin",
    "PermitPlugin",
    "Plugin",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PostFilterResult",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterExtensions",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueueingHint",
    "ReservePlugin",
    "ScoreExtensions",
    "ScorePlugin",
    "Status",
    "VectorFilterPlugin",
    "VectorScorePlugin",
    "as_status",
    "code_of",
    "is_success",
]

MAX_NODE_SCORE = 100
"""The highest score a Score plugin may return after normalisation (``framework.MaxNodeScore``)."""
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class Code(enum.IntEnum):
    """A plugin's verdict (upstream ``framework.Code``), with its effect on the pod.

    SUCCESS: the plugin ran and the pod may go on. ERROR: an internal error; the pod is retried with backoff
    and the cycle's result does not count as "unschedulable". UNSCHEDULABLE: the node (or the pod, from
    PreFilter) does not fit now; PostFilter (preemption) may help; the pod waits in the unschedulable pool
    until an event the rejecting plugin registered may make it fit. UNSCHEDULABLE_AND_UNRESOLVABLE: as
    UNSCHEDULABLE but preemption cannot help on that node. WAIT: Permit only; the pod waits for allow/reject.
    SKIP: PreFilter/PreScore say the plugin's Filter/Score is irrelevant for this pod; Bind says "not mine".
    PENDING: the pod waits for something outside the scheduler (e.g. PreEnqueue gates); it is not retried
    with backoff and is moved back only by a registered event.
    """

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        """Upstream's ``Code.String()``: ``Success``, ``UnschedulableAndUnresolvable``, ..."""
        return _LABELS[self]


_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


@dataclass(frozen=True, slots=True)
class Status:
    """A non-success result: code, reasons (user-facing strings, verbatim upstream), the plugin that failed.

    ``error`` holds the exception of an ERROR status; its message is the single reason.
    """

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    error: BaseException | None = None

    @classmethod
    def new(cls, code: Code, *reasons: str) -> Status:
        return cls(code, tuple(reasons))

    @classmethod
    def unschedulable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE, tuple(reasons))

    @classmethod
    def unresolvable(cls, *reasons: str) -> Status:
        return cls(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons))

    @classmethod
    def skip(cls) -> Status:
        return _SKIP

    @classmethod
    def from_error(cls, error: BaseException | str) -> Status:
        if isinstance(error, str):
            error = RuntimeError(error)
        return cls(Code.ERROR, (str(error),), error=error)

    def with_plugin(self, plugin: str) -> Status:
        """The same status attributed to ``plugin`` (upstream ``WithPlugin``)."""
        if self.plugin == plugin:
            return self
        return Status(self.code, self.reasons, plugin, self.error)

    def message(self) -> str:
        """Upstream ``Status.Message``: the reasons joined by ``", "``."""
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending (upstream ``IsRejected``)."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def as_error(self) -> BaseException:
        return self.error if self.error is not None else RuntimeError(self.message())


_SKIP = Status(Code.SKIP)


def is_success(status: Status | None) -> bool:
    """True for ``None`` or a SUCCESS status (a nil status is success, as upstream)."""
    return status is None or status.code == Code.SUCCESS


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


def as_status(error: BaseException) -> Status:
    return Status.from_error(error)


class StateData(Protocol):
    """A value in :class:`CycleState`; ``clone`` must return a copy safe to mutate (preemption what-ifs)."""

    def clone(self) -> StateData: ...


class CycleState:
    """Per-cycle key/value store shared by the plugins of one scheduling attempt (upstream ``CycleState``).

    Invariant: written during one pod's cycle by the scheduler's single scheduling thread; the binding cycle
    only reads it. ``clone`` copies values that have a ``clone`` method (preemption runs filters on copies).
    """

    __slots__ = (
        "_data",
        "record_metrics",
        "recorder",
        "shape_plan",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()
        self.record_metrics = False
        self.recorder: CycleRecorder | None = None
        """Set for a recorded cycle (explain, what-if): the framework writes each PreFilter and PreScore
        plugin's status into it. Clones (preemption's what-ifs) do not record."""
        self.shape_plan: Any = None
        """The framework's per-shape plan of this cycle's pod (:mod:`.shape_plan`), set at PreFilter and read at
        PreScore; None when the cycle runs every plugin live. Clones do not carry it."""

    def read(self, key: str) -> Any:
        """The value under ``key``; raises ``KeyError`` (upstream ``ErrNotFound``) when absent."""
        return self._data[key]

    def get(self, key: str) -> Any:
        return self._data.get(key)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def entries(self) -> Mapping[str, Any]:
        """The entries, read-only (the framework's per-shape plans diff them around a plugin call)."""
        return self._data

    def clone(self) -> CycleState:
        other = CycleState()
        for key, value in self._data.items():
            cloner = getattr(value, "clone", None)
            other._data[key] = cloner() if cloner is not None else value
        other.skip_filter_plugins = set(self.skip_filter_plugins)
        other.skip_score_plugins = set(self.skip_score_plugins)
        other.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        other.record_metrics = self.record_metrics
        return other


FEASIBLE_ROWS_KEY = "kubeplane.io/feasible-rows"
"""CycleState key of a :class:`FeasibleRows`, written by the cycle before PreScore (not an upstream key)."""


@dataclass(frozen=True, slots=True)
class FeasibleRows:
    """The NodeTable rows of the node list PreScore is given, as the Filter stage found them: a vector PreScore
    maps ``nodes`` to rows without a per-node lookup. Valid only for this very list and table (callers check
    identity: ``rows_for``)."""

    nodes: Sequence[NodeInfo]
    table: NodeTable
    rows: IntArray

    def rows_for(self, table: NodeTable, nodes: Sequence[NodeInfo]) -> IntArray | None:
        return self.rows if nodes is self.nodes and table is self.table else None


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin already knows are the only candidates; ``None`` means all nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        """The intersection of two results (upstream ``PreFilterResult.Merge``)."""
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What a PostFilter plugin (preemption) achieved: the node the pod is nominated to, if any."""

    nominated_node_name: str = ""
    """``""`` clears a nomination (upstream ``ModeOverride``); a plugin that nominates nothing returns None."""


class NodeToStatus(dict[str, "Status"]):
    """Why each examined node rejected the pod, plus the status of the nodes that are absent from the map
    (upstream ``framework.NodeToStatus``): nodes a PreFilterResult excluded, or every node when PreFilter
    rejected the pod. Absent nodes default to UnschedulableAndUnresolvable (preemption cannot help there).
    """

    def __init__(self, statuses: Mapping[str, Status] | None = None, absent_nodes_status: Status | None = None) -> None:
        super().__init__(statuses or {})
        self.absent_nodes_status = (
            absent_nodes_status if absent_nodes_status is not None else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        )

    def status_of(self, node_name: str) -> Status:
        status = self.get(node_name)
        return status if status is not None else self.absent_nodes_status

    def nodes_for_status_code(self, nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        """The nodes of ``nodes`` (in that order) whose status has ``code``, absent nodes included when the
        absent status has it (upstream ``NodesForStatusCode``, in snapshot order instead of map order)."""
        if self.absent_nodes_status.code == code:
            return [ni for ni in nodes if self.status_of(ni.name).code == code]
        return [ni for ni in nodes if (s := self.get(ni.name)) is not None and s.code == code]


@dataclass(slots=True)
class NodeScore:
    """One node's score from one plugin; NormalizeScore rewrites ``score`` in place."""

    name: str
    score: int


class ActionType(enum.IntFlag):
    """What happened to a cluster object (upstream ``framework.ActionType``)."""

    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    UPDATE_NODE_DECLARED_FEATURES = 4096
    UPDATE_OTHER = 8192

    @classmethod
    def update(cls) -> ActionType:
        """Every Update* action."""
        value = cls(0)
        for member in cls:
            if member not in (cls.ADD, cls.DELETE):
                value |= member
        return value

    @classmethod
    def all(cls) -> ActionType:
        return cls.ADD | cls.DELETE | cls.update()


class QueueingHint(enum.IntEnum):
    """A plugin's answer to "may this event make the pod schedulable?" (upstream ``QueueingHint``)."""

    QUEUE_SKIP = 0
    QUEUE = 1


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster change: ``resource`` ("Node", "Pod", "AssignedPod", "UnscheduledPod", "*", ...)."""

    resource: str
    action_type: ActionType
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        """True when this registered event covers ``other`` (wildcards on resource and action)."""
        if self.resource != "*" and other.resource not in ("*", self.resource):
            return False
        return bool(self.action_type & other.action_type)


QueueingHintFn = Callable[["PodInfo", Any, Any], QueueingHint]
"""``(pod, old_object, new_object) -> hint``; old or new is None for add/delete."""


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None


@runtime_checkable
class Plugin(Protocol):
    """Every plugin has a unique name (upstream spelling, e.g. ``NodeResourcesFit``)."""

    def name(self) -> str: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    """Plugins that can reject pods declare which cluster events may make them schedulable again."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    """Runs before a pod enters activeQ; a non-success keeps it gated in the unschedulable pool."""

    def pre_enqueue(self, pod: PodInfo) -> Status | None: ...


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    """Orders activeQ; exactly one per scheduler, shared by every profile."""

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


class PreFilterExtensions(Protocol):
    """Incremental updates to a PreFilter plugin's CycleState when a pod is added/removed on a node
    (nominated pods during filtering, victims during preemption)."""

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    """Computes per-pod state once per cycle; may narrow the node set or reject the pod outright."""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    """Says whether the pod fits one node."""

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    """Runs when no node fits (preemption)."""

    def post_filter(
        self, state: CycleState, pod: PodInfo, filtered_node_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    """Computes per-pod scoring state over the feasible nodes; SKIP disables the plugin's Score."""

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None: ...


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None: ...


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    """Ranks one feasible node; the final score after NormalizeScore must lie in [0, 100]."""

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    """Reserve claims resources for the assumed pod; Unreserve must undo it and be idempotent."""

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    """Allows, rejects or delays (WAIT with a timeout in seconds) the binding of a reserved pod."""

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]: ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    """PreBind, and its PreBindPreFlight (upstream's interface has both, so a plugin without the pre-flight is
    no PreBind plugin): ``pre_bind_pre_flight`` says, before the binding cycle waits or binds, whether
    ``pre_bind`` has work for this pod on this node -- None (Success: it will work, e.g. bind volumes or claims),
    SKIP (nothing to do: PreBind is skipped for this pod) or an Error status. It must not write to the API."""

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None: ...

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Awaitable[Status | None]: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    """Binds the pod; SKIP hands over to the next Bind plugin."""

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Awaitable[Status | None]: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class VectorFilterPlugin(Plugin, Protocol):
    """Optional fast path of a FilterPlugin over many nodes at once (DESIGN decision 6).

    ``rows`` indexes ``table`` (the cycle's NodeTable); the result is a bool mask over ``rows``: True where
    :meth:`FilterPlugin.filter` would return success. It must agree with ``filter`` exactly (property tests
    hold it to that); the scheduler calls ``filter`` on the rejected nodes when it needs reasons.
    Called only after the plugin's PreFilter ran for this cycle (and not when PreFilter returned SKIP).
    """

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray: ...


@runtime_checkable
class PassesEveryRowPlugin(Plugin, Protocol):
    """Optional with :class:`VectorFilterPlugin`: True when the plugin's Filter passes every row of ``table``
    for this pod (e.g. no node is tainted), so the node search leaves its mask out; False says nothing. Must
    imply ``filter_vector`` is all True (the recorded cycle, which checks every mask, does not ask)."""

    def passes_every_row(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool: ...


@runtime_checkable
class VectorScorePlugin(Plugin, Protocol):
    """Optional fast path of a ScorePlugin: raw scores (before NormalizeScore) for ``rows`` of ``table``,
    equal to what :meth:`ScorePlugin.score` returns per node. Called only after PreScore ran for this cycle."""

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray: ...
