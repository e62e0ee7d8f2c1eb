"""Table printers for pods and the apps workloads, and the building blocks every printer shares.

kube-apiserver answers ``Accept: application/json;as=Table;g=meta.k8s.io;v=v1`` by running the object through
a *printer* registered for its kind (upstream ``pkg/printers/internalversion/printers.go``): a fixed list of
column definitions and a function from one object to the row's cells. This module holds the pieces the
printers share (the column record, ``duration.HumanDuration``, timestamps, container cells) and the printers
of Pod, Deployment, ReplicaSet, DaemonSet and StatefulSet; :mod:`kubeplane.apiserver.printers` holds the rest
and the public entry points. It sits below ``printers`` so the registry there imports it without a cycle.

The server always generates the *wide* row (upstream's ``TableConvertor`` passes ``GenerateOptions{Wide:
true}``): every column is sent and kubectl hides priority-1 columns unless ``-o wide``. So each row function
returns one cell per column definition, in order. Column descriptions are the first sentence of upstream's
SwaggerDoc text: kubectl never shows them, and the full texts would triple the column tables.

Everything here is pure: objects are wire-format dicts (as stored, already defaulted) and the current time is
an argument, never read from a clock, so AGE cells are deterministic in tests and under a virtual clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from kubeplane.api.labels import SelectorError, format_label_selector, label_selector_as_selector, selector_from_set
from kubeplane.api.meta import parse_time
from kubeplane.api.views import TERMINAL_PHASES, int_field, items, mappings, meta_of, name_of, section

Obj = Mapping[str, Any]
RowFunc = Callable[[Obj, float], list[Any]]
ConditionsFunc = Callable[[Obj], list[dict[str, str]]]

_NS_PER_SECOND: Final = 1_000_000_000
_GO_ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Column:
    """One ``metav1.TableColumnDefinition``: ``priority`` 0 is always shown, 1 only with ``-o wide``."""

    name: str
    type: str
    description: str
    priority: int = 0
    format: str = ""

    def to_wire(self) -> dict[str, Any]:
        """Upstream's JSON form; no field is ``omitempty``, so all five are always present."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class Printer:
    """A kind's columns, its row function (one cell per column) and, for pods, the row conditions."""

    columns: tuple[Column, ...]
    row: RowFunc
    conditions: ConditionsFunc | None = None


# --- descriptions: the first sentence of the SwaggerDoc text upstream puts in each column definition ------

NAME_DOC: Final = "Name must be unique within a namespace."
CREATED_DOC: Final = "CreationTimestamp is a timestamp representing the server time when this object was created."
_CONTAINERS_DOC: Final = "Names of each container in the template."
_IMAGES_DOC: Final = "Images referenced by each container in the template."
_SELECTOR_DOC: Final = "A label query over pods that should match the replica count."

NAME_COLUMN: Final = Column("Name", "string", NAME_DOC, format="name")
AGE_COLUMN: Final = Column("Age", "string", CREATED_DOC)
_TEMPLATE_COLUMNS: Final = (
    Column("Containers", "string", _CONTAINERS_DOC, priority=1),
    Column("Images", "string", _IMAGES_DOC, priority=1),
)
_SELECTOR_COLUMN: Final = Column("Selector", "string", _SELECTOR_DOC, priority=1)


# --- shared cell helpers ---------------------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """Upstream ``duration.HumanDuration``: about two significant figures, e.g. ``5s``, ``3m2s``, ``2d3h``.

    Works in whole nanoseconds as Go's ``time.Duration`` does, so boundaries (``119s`` vs ``2m``) fall where
    kubectl users see them. Up to two seconds in the future is clock skew and reads ``0s``; more is
    ``<invalid>``.
    """
    ns = round(seconds * _NS_PER_SECOND)
    whole_seconds = -(-ns // _NS_PER_SECOND) if ns < 0 else ns // _NS_PER_SECOND  # Go's int() truncates
    if whole_seconds < -1:
        return "<invalid>"
    if whole_seconds < 0:
        return "0s"
    if whole_seconds < 60 * 2:
        return f"{whole_seconds}s"
    minutes = ns // (60 * _NS_PER_SECOND)
    if minutes < 10:
        s = whole_seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // (3600 * _NS_PER_SECOND)
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def epoch(value: object) -> float | None:
    """A ``metav1.Time``/``MicroTime`` string as Unix seconds; None for absent, unparsable or Go's zero time.

    None stands for upstream's ``IsZero()``: a printer shows ``<unknown>`` rather than fail the whole list.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = parse_time(value)
    except ValueError:
        return None
    return None if parsed == _GO_ZERO_TIME else parsed.timestamp()


def since(timestamp: float | None, now: float) -> str:
    """Upstream ``translateTimestampSince``: ``<unknown>`` for a zero time, else the age."""
    return "<unknown>" if timestamp is None else human_duration(now - timestamp)


def age(obj: Obj, now: float) -> str:
    """The AGE cell: time since ``metadata.creationTimestamp``."""
    return since(epoch(meta_of(obj).get("creationTimestamp")), now)


def format_labels(labels: Mapping[str, str] | None) -> str:
    """Upstream ``labels.FormatLabels``: ``k=v`` sorted by key, comma-joined; ``<none>`` when empty."""
    return str(selector_from_set(labels)) or "<none>"


def layout_container_cells(containers: Sequence[Any]) -> tuple[str, str]:
    """Upstream ``layoutContainerCells``: container names and images, each comma-joined."""
    names = ",".join(str(c.get("name") or "") for c in containers if isinstance(c, Mapping))
    images = ",".join(str(c.get("image") or "") for c in containers if isinstance(c, Mapping))
    return names, images


def _template_cells(obj: Obj) -> list[Any]:
    names, images = layout_container_cells(items(section(obj, "spec", "template", "spec"), "containers"))
    return [names, images]


# --- pods -----------------------------------------------------------------------------------------------

POD_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    Column(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this "
        "pod has restarted.",
    ),
    AGE_COLUMN,
    Column("IP", "string", "podIP address allocated to the pod.", priority=1),
    Column("Node", "string", "NodeName indicates in which node this pod is scheduled.", priority=1),
    Column(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled "
        "right away as preemption victims receive their graceful termination periods.",
        priority=1,
    ),
    Column(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness.",
        priority=1,
    ),
)

_NODE_UNREACHABLE_POD_REASON: Final = "NodeLost"  # upstream pkg/util/node.NodeUnreachablePodReason
_POD_ROW_CONDITIONS: Final[Mapping[str, dict[str, str]]] = {
    "Succeeded": {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    },
    "Failed": {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."},
}


def _is_restartable(container: object) -> bool:
    return isinstance(container, Mapping) and container.get("restartPolicy") == "Always"


def _condition_status(conditions: Sequence[Any], kind: str) -> str | None:
    """The status of the first condition of ``kind``, None when there is none (upstream stops at the first)."""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return str(condition.get("status") or "")
    return None


def _finished_at(status: Mapping[str, Any]) -> float | None:
    return epoch(section(status, "lastTerminationState", "terminated").get("finishedAt"))


def _later(current: float | None, candidate: float | None) -> float | None:
    """Upstream ``if last.Before(&t) { last = t }`` where None is Go's zero time (before every real time)."""
    if candidate is not None and (current is None or current < candidate):
        return candidate
    return current


def _exit_reason(terminated: Mapping[str, Any], prefix: str) -> str:
    signal = int_field(terminated, "signal")
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{int_field(terminated, 'exitCode')}"


def pod_row(pod: Obj, now: float) -> list[Any]:
    """Upstream ``printPod``: READY, STATUS and RESTARTS as kubectl shows them.

    STATUS starts from ``status.reason`` or the phase (``SchedulingGated`` if the PodScheduled condition says
    so). The first init container that has not succeeded decides it while initialising (``Init:<reason>``,
    ``Init:ExitCode:N``, ``Init:Signal:N`` or ``Init:i/n``); otherwise the containers are read last to first so
    the *first* container's waiting or terminated reason wins. ``Completed`` with a container still running
    becomes ``Running`` (pod Ready) or ``NotReady``. A deleted pod reads ``Unknown`` if its node was lost and
    ``Terminating`` unless its phase is terminal. Started sidecars (restartable init containers) count towards
    READY and their restarts always count; RESTARTS adds ``(<age> ago)`` of the latest termination.
    """
    spec, status, metadata = section(pod, "spec"), section(pod, "status"), meta_of(pod)
    conditions = items(status, "conditions")
    init_specs = items(spec, "initContainers")
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or "") or phase
    for condition in conditions:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("reason") == "SchedulingGated"
        ):
            reason = "SchedulingGated"

    init_by_name: dict[str, Mapping[str, Any]] = {}
    total = len(items(spec, "containers"))
    for container in init_specs:
        if isinstance(container, Mapping):
            init_by_name[str(container.get("name") or "")] = container
        if _is_restartable(container):
            total += 1

    restarts = sidecar_restarts = ready = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None
    initializing = False
    for index, cs in enumerate(mappings(status, "initContainerStatuses")):
        count = int_field(cs, "restartCount")
        restarts += count
        last_restart = _later(last_restart, _finished_at(cs))
        sidecar = _is_restartable(init_by_name.get(str(cs.get("name") or "")))
        if sidecar:
            sidecar_restarts += count
            last_sidecar_restart = _later(last_sidecar_restart, _finished_at(cs))
        state = section(cs, "state")
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, Mapping) and int_field(terminated, "exitCode") == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") is True else 0
            continue
        if isinstance(terminated, Mapping):
            terminated_reason = str(terminated.get("reason") or "")
            reason = "Init:" + terminated_reason if terminated_reason else _exit_reason(terminated, "Init:")
        elif isinstance(waiting, Mapping) and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{index}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_status(conditions, "Initialized") == "True":
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(mappings(status, "containerStatuses")):
            restarts += int_field(cs, "restartCount")
            last_restart = _later(last_restart, _finished_at(cs))
            state = section(cs, "state")
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, Mapping) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(terminated, Mapping):
                reason = str(terminated.get("reason") or "") or _exit_reason(terminated, "")
            elif cs.get("ready") is True and isinstance(state.get("running"), Mapping):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in mappings(status, "conditions")
            )
            reason = "Running" if pod_ready else "NotReady"

    if metadata.get("deletionTimestamp") is not None:
        if status.get("reason") == _NODE_UNREACHABLE_POD_REASON:
            reason = "Unknown"
        elif phase not in TERMINAL_PHASES:
            reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({since(last_restart, now)} ago)"
    return [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        age(pod, now),
        *_pod_wide_cells(spec, status, conditions),
    ]


def _pod_wide_cells(spec: Mapping[str, Any], status: Mapping[str, Any], conditions: Sequence[Any]) -> list[str]:
    """IP (first of ``podIPs``, else ``podIP``), NODE, NOMINATED NODE and READINESS GATES ``true/total``."""
    pod_ips = items(status, "podIPs")
    first_ip = pod_ips[0].get("ip") if pod_ips and isinstance(pod_ips[0], Mapping) else status.get("podIP")
    gates = [g for g in items(spec, "readinessGates") if isinstance(g, Mapping)]
    readiness = "<none>"
    if gates:
        true_count = sum(1 for g in gates if _condition_status(conditions, str(g.get("conditionType"))) == "True")
        readiness = f"{true_count}/{len(gates)}"
    return [
        str(first_ip or "") or "<none>",
        str(spec.get("nodeName") or "") or "<none>",
        str(status.get("nominatedNodeName") or "") or "<none>",
        readiness,
    ]


def pod_row_conditions(pod: Obj) -> list[dict[str, str]]:
    """Upstream's row conditions: a finished pod's row is marked ``Completed`` (kubectl may hide it)."""
    condition = _POD_ROW_CONDITIONS.get(str(section(pod, "status").get("phase") or ""))
    return [dict(condition)] if condition else []


# --- apps printers --------------------------------------------------------------------------------------

DEPLOYMENT_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Ready", "string", "Number of the pod with ready state"),
    Column(
        "Up-to-date",
        "string",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    Column(
        "Available",
        "string",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE_COLUMN,
    *_TEMPLATE_COLUMNS,
    Column("Selector", "string", "Label selector for pods.", priority=1),
)


def deployment_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printDeployment``: READY is ``ready/desired``; SELECTOR is the bare selector string.

    Unlike the ReplicaSet and DaemonSet printers, an empty selector prints ``""`` (not ``<none>``) and an
    invalid one ``<invalid>`` (not ``<error>``): upstream formats it through ``LabelSelectorAsSelector``.
    """
    spec, status = section(obj, "spec"), section(obj, "status")
    try:
        selector = str(label_selector_as_selector(spec.get("selector")))
    except SelectorError:
        selector = "<invalid>"
    ready = f"{int_field(status, 'readyReplicas')}/{int_field(spec, 'replicas', 1)}"
    return [
        name_of(obj),
        ready,
        int_field(status, "updatedReplicas"),
        int_field(status, "availableReplicas"),
        age(obj, now),
        *_template_cells(obj),
        selector,
    ]


REPLICASET_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Desired", "integer", "Replicas is the number of desired replicas."),
    Column("Current", "integer", "Replicas is the most recently observed number of replicas."),
    Column("Ready", "integer", "The number of ready replicas for this replica set."),
    AGE_COLUMN,
    *_TEMPLATE_COLUMNS,
    _SELECTOR_COLUMN,
)


def replicaset_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printReplicaSet``: desired, current and ready counts as integers."""
    spec, status = section(obj, "spec"), section(obj, "status")
    return [
        name_of(obj),
        int_field(spec, "replicas", 1),
        int_field(status, "replicas"),
        int_field(status, "readyReplicas"),
        age(obj, now),
        *_template_cells(obj),
        format_label_selector(spec.get("selector")),
    ]


DAEMONSET_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Desired", "integer", "The total number of nodes that should be running the daemon pod."),
    Column("Current", "integer", "The number of nodes that are running at least 1 daemon pod."),
    Column(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of it ready.",
    ),
    Column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    Column(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of it available.",
    ),
    Column("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node."),
    AGE_COLUMN,
    *_TEMPLATE_COLUMNS,
    _SELECTOR_COLUMN,
)


def daemonset_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printDaemonSet``: the five status counts, then the template's node selector."""
    status = section(obj, "status")
    node_selector = section(obj, "spec", "template", "spec").get("nodeSelector")
    return [
        name_of(obj),
        int_field(status, "desiredNumberScheduled"),
        int_field(status, "currentNumberScheduled"),
        int_field(status, "numberReady"),
        int_field(status, "updatedNumberScheduled"),
        int_field(status, "numberAvailable"),
        format_labels(node_selector if isinstance(node_selector, Mapping) else None),
        age(obj, now),
        *_template_cells(obj),
        format_label_selector(section(obj, "spec").get("selector")),
    ]


STATEFULSET_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Ready", "string", "Number of the pod with ready state"),
    AGE_COLUMN,
    *_TEMPLATE_COLUMNS,
)


def statefulset_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printStatefulSet``: READY is ``ready/desired``; no selector column."""
    ready = f"{int_field(section(obj, 'status'), 'readyReplicas')}/{int_field(section(obj, 'spec'), 'replicas', 1)}"
    return [name_of(obj), ready, age(obj, now), *_template_cells(obj)]


WORKLOAD_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    ("", "Pod"): Printer(POD_COLUMNS, pod_row, pod_row_conditions),
    ("apps", "Deployment"): Printer(DEPLOYMENT_COLUMNS, deployment_row),
    ("apps", "ReplicaSet"): Printer(REPLICASET_COLUMNS, replicaset_row),
    ("apps", "DaemonSet"): Printer(DAEMONSET_COLUMNS, daemonset_row),
    ("apps", "StatefulSet"): Printer(STATEFULSET_COLUMNS, statefulset_row),
}
