"""The simulated kubelet's resource usage model and its eviction manager's decisions, as pure functions.

Usage model (simulation only; a real kubelet reads cAdvisor). A pod uses what its
:data:`USAGE_MEMORY_ANNOTATION` / :data:`USAGE_CPU_ANNOTATION` says (a quantity, for the whole pod), else what it
requests; either way no more than its limit when it has one, because the cgroup would stop it there (memory is
OOM-killed at the limit, cpu throttled). A pod "has a limit" as its pod cgroup does: pod-level
``spec.resources.limits`` name the resource, or every container and sidecar limits it; the cap is then upstream
``PodLimits``. Per-container usage, needed only for the eviction message, splits the pod's usage in proportion
to the containers' own requests (exactly, by cumulative rounding: the shares sum to the pod's usage, and no
container exceeds its request unless the pod exceeds its total), or gives it all to the first container when
no container requests any. ``memory.available`` is the node's memory *capacity* minus the usage of its running
pods, never below 0, as upstream derives it from capacity minus working set.

Decisions follow upstream ``pkg/kubelet/eviction`` (``helpers.go``, ``eviction_manager.go``):

* Thresholds (:func:`parse_thresholds`, upstream ``parseThresholdStatement``): ``signal: "100Mi"`` or
  ``signal: "10%"``; ``0%`` and ``100%`` disable the signal; a quantity must be positive. A threshold is met
  when the signal's available amount is *below* :meth:`Threshold.value` (operator ``LessThan``); a percentage
  is a float32 of capacity, truncated (upstream ``GetThresholdQuantity``).
* Memory-pressure ranking (:func:`rank_for_memory_eviction`, upstream ``rankMemoryPressure``): pods whose usage
  exceeds their memory request first, then lower ``spec.priority`` first, then larger usage above request first.
  Upstream sorts unstably; here ties keep the input order. The eviction manager kills at most one pod per pass,
  the first ranked pod that is not critical (:func:`pick_pod_to_evict`).
* Messages (:func:`eviction_message`, upstream ``evictionMessage``): ``"The node was low on resource: memory. "``,
  ``"Threshold quantity: 100Mi, available: 50Mi. "``, then for pods with pod-level resources
  ``"Pod <name> was using <usage>, request is <request>, has larger consumption of memory. "``, then for each
  container using more than its own request ``"Container <name> was using <usage>, request is <request>, has
  larger consumption of memory. "``. Usage and available print as ``resource.Quantity`` in BinarySI
  (``51201Ki``, ``50Mi``, ``1k`` below 1024, exact digits when not a multiple of 1024); requests print as the
  canonical form of the quantity the user wrote (``100Mi``, ``1G``, ``0`` when absent). The event's
  annotations are :func:`eviction_annotations`.
* Node conditions: MemoryPressure/DiskPressure/PIDPressure reasons and messages of
  ``pkg/kubelet/nodestatus/setters.go`` (:func:`pressure_condition`); a condition stays true for
  :data:`PRESSURE_TRANSITION_PERIOD` seconds after its threshold was last met (:func:`conditions_observed_since`).
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from kubeplane.api.pods import (
    is_pod_level_resources_set,
    is_restartable_init_container,
    pod_limits,
    pod_requests,
)
from kubeplane.api.quantity import Format, Quantity, QuantityError
from kubeplane.api.views import NodeView, PodView, annotations_of, is_pod_terminal, name_of, section, spec_of
from kubeplane.kubelet.admission import EVICTED_REASON, is_critical_pod, pod_priority

__all__ = [
    "ALLOCATABLE_MEMORY_AVAILABLE",
    "DEFAULT_EVICTION_HARD",
    "IMAGEFS_AVAILABLE",
    "IMAGEFS_INODES_FREE",
    "MEMORY_AVAILABLE",
    "NODEFS_AVAILABLE",
    "NODEFS_INODES_FREE",
    "OFFENDING_CONTAINERS_KEY",
    "OFFENDING_CONTAINERS_USAGE_KEY",
    "OFFENDING_POD_KEY",
    "OFFENDING_POD_USAGE_KEY",
    "PID_AVAILABLE",
    "PRESSURE_TRANSITION_PERIOD",
    "REASON",
    "SIGNAL_TO_NODE_CONDITION",
    "SIGNAL_TO_RESOURCE",
    "STARVED_RESOURCE_KEY",
    "USAGE_CPU_ANNOTATION",
    "USAGE_MEMORY_ANNOTATION",
    "PressureCondition",
    "Threshold",
    "conditions_observed_since",
    "container_memory_usage",
    "eviction_annotations",
    "eviction_message",
    "memory_available",
    "node_conditions",
    "parse_thresholds",
    "pick_pod_to_evict",
    "pod_cpu_usage",
    "pod_is_evicted",
    "pod_memory_usage",
    "pressure_condition",
    "rank_for_memory_eviction",
    "threshold_met",
]

Pod = Mapping[str, Any]

REASON: Final = EVICTED_REASON
"""The reason of the Evicted event and of an evicted pod's status (upstream ``eviction.Reason``)."""

# --- signals (pkg/kubelet/eviction/api) --------------------------------------------------------------------------

MEMORY_AVAILABLE: Final = "memory.available"
ALLOCATABLE_MEMORY_AVAILABLE: Final = "allocatableMemory.available"
NODEFS_AVAILABLE: Final = "nodefs.available"
NODEFS_INODES_FREE: Final = "nodefs.inodesFree"
IMAGEFS_AVAILABLE: Final = "imagefs.available"
IMAGEFS_INODES_FREE: Final = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE: Final = "containerfs.available"
CONTAINERFS_INODES_FREE: Final = "containerfs.inodesFree"
PID_AVAILABLE: Final = "pid.available"

SIGNAL_TO_RESOURCE: Final[Mapping[str, str]] = MappingProxyType(
    {
        MEMORY_AVAILABLE: "memory",
        ALLOCATABLE_MEMORY_AVAILABLE: "memory",
        IMAGEFS_AVAILABLE: "ephemeral-storage",
        IMAGEFS_INODES_FREE: "inodes",
        CONTAINERFS_AVAILABLE: "ephemeral-storage",
        CONTAINERFS_INODES_FREE: "inodes",
        NODEFS_AVAILABLE: "ephemeral-storage",
        NODEFS_INODES_FREE: "inodes",
        PID_AVAILABLE: "pids",
    }
)
"""The supported signals and the resource each reclaims (upstream ``signalToResource``)."""

SIGNAL_TO_NODE_CONDITION: Final[Mapping[str, str]] = MappingProxyType(
    {
        MEMORY_AVAILABLE: "MemoryPressure",
        ALLOCATABLE_MEMORY_AVAILABLE: "MemoryPressure",
        IMAGEFS_AVAILABLE: "DiskPressure",
        CONTAINERFS_AVAILABLE: "DiskPressure",
        NODEFS_AVAILABLE: "DiskPressure",
        IMAGEFS_INODES_FREE: "DiskPressure",
        NODEFS_INODES_FREE: "DiskPressure",
        CONTAINERFS_INODES_FREE: "DiskPressure",
        PID_AVAILABLE: "PIDPressure",
    }
)
"""The node condition a met threshold sets (upstream ``signalToNodeCondition``)."""

DEFAULT_EVICTION_HARD: Final[Mapping[str, str]] = MappingProxyType(
    {
        MEMORY_AVAILABLE: "100Mi",
        NODEFS_AVAILABLE: "10%",
        NODEFS_INODES_FREE: "5%",
        IMAGEFS_AVAILABLE: "15%",
        IMAGEFS_INODES_FREE: "5%",
    }
)
"""The Linux kubelet's ``evictionHard`` default (``imagefs.inodesFree`` joined in v1.30, kubernetes#121834)."""

PRESSURE_TRANSITION_PERIOD: Final = 300.0
"""Seconds a pressure condition stays true after its threshold was last met (``evictionPressureTransitionPeriod``
default, 5m): keeps the condition from flapping while usage hovers around the threshold."""

USAGE_CPU_ANNOTATION: Final = "sim.kubeplane.io/usage-cpu"
USAGE_MEMORY_ANNOTATION: Final = "sim.kubeplane.io/usage-memory"

# --- event annotation keys (helpers.go) -----------------------------------------------------------------------

OFFENDING_CONTAINERS_KEY: Final = "offending_containers"
OFFENDING_CONTAINERS_USAGE_KEY: Final = "offending_containers_usage"
OFFENDING_POD_KEY: Final = "offending_pod"
OFFENDING_POD_USAGE_KEY: Final = "offending_pod_usage"
STARVED_RESOURCE_KEY: Final = "starved_resource"

_NODE_LOW_MESSAGE_FMT: Final = "The node was low on resource: {}. "
_THRESHOLD_MET_MESSAGE_FMT: Final = "Threshold quantity: {}, available: {}. "
_CONTAINER_MESSAGE_FMT: Final = "Container {} was using {}, request is {}, has larger consumption of {}. "
_POD_MESSAGE_FMT: Final = "Pod {} was using {}, request is {}, has larger consumption of {}. "


# --- thresholds ---------------------------------------------------------------------------------------------------


def _float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as Go's ``float32(...)``."""
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    return rounded


@dataclass(frozen=True, slots=True)
class Threshold:
    """One hard eviction threshold: ``signal < quantity`` or ``signal < percentage * capacity``.

    Exactly one of ``quantity`` (natural units: bytes, inodes or pids) and ``percentage`` (a fraction of
    capacity, 0.1 for ``10%``, already rounded to float32 as upstream stores it) is set. ``display`` is the
    canonical text of the quantity as written (``"100Mi"``, ``"1G"``) for messages; empty means "print
    ``quantity`` in BinarySI".
    """

    signal: str
    quantity: int | None
    percentage: float | None
    display: str = ""

    def value(self, capacity: int) -> int:
        """The amount the signal must stay at or above (upstream ``GetThresholdQuantity``): the quantity, or
        ``int64(float64(capacity) * float64(percentage))``, truncated toward zero."""
        if self.quantity is not None:
            return self.quantity
        return math.trunc(float(capacity) * (self.percentage or 0.0))

    def quantity_text(self, capacity: int) -> str:
        """:meth:`value` as upstream prints the threshold quantity in messages."""
        if self.quantity is not None and self.display:
            return self.display
        return _binary_si(self.value(capacity))


def _parse_one(signal: str, text: str) -> Threshold | None:
    if signal not in SIGNAL_TO_RESOURCE:
        raise ValueError(f"unsupported eviction signal {signal}")
    if text.endswith("%"):
        if text in ("0%", "100%"):
            return None
        try:
            number = float(text.rstrip("%"))
        except ValueError:
            raise ValueError(f'strconv.ParseFloat: parsing "{text.rstrip("%")}": invalid syntax') from None
        percentage = _float32(_float32(number) / 100)
        if percentage < 0:
            raise ValueError(f"eviction percentage threshold {signal} must be >= 0%: {text}")
        if percentage > 1:
            raise ValueError(f"eviction percentage threshold {signal} must be <= 100%: {text}")
        return Threshold(signal, None, percentage)
    try:
        quantity = Quantity.parse(text)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    if quantity.sign() <= 0:
        raise ValueError(f"eviction threshold {signal} must be positive: {quantity}")
    return Threshold(signal, quantity.value(), None, str(quantity))


def parse_thresholds(spec: Mapping[str, str]) -> list[Threshold]:
    """``evictionHard`` (signal -> ``"100Mi"`` or ``"10%"``) as thresholds, in the mapping's order.

    Raises :class:`ValueError` with a one-line message (upstream's text) on an unknown signal, a percentage
    outside 0-100% or a quantity that is not positive. ``0%`` and ``100%`` disable the signal (no threshold).
    """
    thresholds: list[Threshold] = []
    for signal, text in spec.items():
        threshold = _parse_one(signal, str(text))
        if threshold is not None:
            thresholds.append(threshold)
    return thresholds


def threshold_met(threshold: Threshold, available: int, capacity: int) -> bool:
    """The signal is below the threshold (operator ``LessThan``): ``available < value(capacity)``."""
    return threshold.value(capacity) > available


def node_conditions(thresholds: Iterable[Threshold]) -> list[str]:
    """The node conditions the met ``thresholds`` set, without duplicates, in first-seen order."""
    out: list[str] = []
    for threshold in thresholds:
        condition = SIGNAL_TO_NODE_CONDITION.get(threshold.signal)
        if condition is not None and condition not in out:
            out.append(condition)
    return out


def conditions_observed_since(
    last_observed_at: Mapping[str, float], now: float, period: float = PRESSURE_TRANSITION_PERIOD
) -> list[str]:
    """The conditions last observed less than ``period`` seconds before ``now`` (upstream
    ``nodeConditionsObservedSince``): what the node reports, and what admission sees, as under pressure."""
    return [condition for condition, at in last_observed_at.items() if now - at < period]


# --- usage model --------------------------------------------------------------------------------------------------


def _annotation(pod: Pod, key: str) -> Quantity | None:
    text = annotations_of(pod).get(key)
    if text is None:
        return None
    try:
        return Quantity.parse(text)
    except QuantityError:
        return None  # a malformed simulation annotation means "no override", not a broken node


def _all_containers_limit(pod: Pod, resource: str) -> bool:
    containers = _running_containers(pod)
    if not containers:
        return False
    return all(resource in section(c, "resources", "limits") for c in containers)


def _pod_level_limits(pod: Pod) -> Mapping[str, Any]:
    return section(pod, "spec", "resources", "limits")


def _usage(pod: Pod, resource: str, annotation: str) -> int:
    override = _annotation(pod, annotation)
    if override is not None:
        usage = override.milli_value() if resource == "cpu" else override.value()
    else:
        usage = pod_requests(pod).get(resource, 0)
    if resource in _pod_level_limits(pod) or _all_containers_limit(pod, resource):
        limit = pod_limits(pod).get(resource)
        if limit is not None:
            usage = min(usage, limit)
    return max(usage, 0)


def pod_memory_usage(pod: Pod) -> int:
    """Bytes the pod uses: its memory-usage annotation, else its memory request, capped at its memory limit."""
    return _usage(pod, "memory", USAGE_MEMORY_ANNOTATION)


def pod_cpu_usage(pod: Pod) -> int:
    """Millicores the pod uses: its cpu-usage annotation, else its cpu request, capped at its cpu limit."""
    return _usage(pod, "cpu", USAGE_CPU_ANNOTATION)


def _running_containers(pod: Pod) -> list[Mapping[str, Any]]:
    spec = spec_of(pod)
    containers = list(spec.get("containers") or ())
    return containers + [c for c in spec.get("initContainers") or () if is_restartable_init_container(c)]


def _container_request(container: Mapping[str, Any], resource: str) -> Quantity | None:
    requests = section(container, "resources", "requests")
    return Quantity.parse(requests[resource]) if resource in requests else None


def container_memory_usage(pod: Pod) -> list[tuple[str, int]]:
    """``(container name, bytes)`` for the regular containers and sidecars, summing to
    :func:`pod_memory_usage`: shares in proportion to the containers' memory requests, or all to the first
    container when none requests memory."""
    containers = _running_containers(pod)
    if not containers:
        return []
    usage = pod_memory_usage(pod)
    requests = [(_container_request(c, "memory") or Quantity(0)).value() for c in containers]
    total = sum(requests)
    if total <= 0:
        return [(str(c.get("name") or ""), usage if i == 0 else 0) for i, c in enumerate(containers)]
    out: list[tuple[str, int]] = []
    cumulative = 0
    given = 0
    for container, request in zip(containers, requests, strict=True):
        cumulative += request
        upto = usage * cumulative // total
        out.append((str(container.get("name") or ""), upto - given))
        given = upto
    return out


def node_memory_capacity(node: Mapping[str, Any]) -> int:
    capacity = NodeView(node).capacity
    return _quantity_value(str(capacity["memory"])) if "memory" in capacity else 0


@functools.lru_cache(maxsize=1024)
def _quantity_value(text: str) -> int:
    """A quantity's integer value, memoised: every node's eviction pass reads its capacity every 10 s."""
    return Quantity.parse(text).value()


def memory_available(
    node: Mapping[str, Any], pods: Iterable[Pod], *, usage: Callable[[Pod], int] = pod_memory_usage
) -> int:
    """``memory.available``: the node's memory capacity minus the usage of ``pods`` (terminal ones skipped),
    never below 0. ``usage`` gives a pod's usage (the fleet passes one that remembers it: it never changes)."""
    used = sum(usage(pod) for pod in pods if not is_pod_terminal(pod))
    return max(node_memory_capacity(node) - used, 0)


# --- ranking -------------------------------------------------------------------------------------------------------


def _memory_request(pod: Pod) -> int:
    """Upstream ``GetResourceRequestQuantity(pod, memory)``: the pod's effective memory request."""
    return pod_requests(pod).get("memory", 0)


def rank_for_memory_eviction(pods: Iterable[Pod]) -> list[Pod]:
    """``pods`` in the order the eviction manager evicts them under memory pressure (``rankMemoryPressure``):
    usage above request first, then lower priority, then larger usage above request; stable on ties."""

    def key(pod: Pod) -> tuple[bool, int, int]:
        usage = pod_memory_usage(pod)
        request = _memory_request(pod)
        return (not usage > request, pod_priority(pod), request - usage)

    return sorted(pods, key=key)


def pick_pod_to_evict(ranked: Iterable[Pod]) -> Pod | None:
    """The first ranked pod the eviction manager may evict: critical pods are skipped (upstream ``evictPod``
    refuses them); None when every pod is critical."""
    for pod in ranked:
        if not is_critical_pod(pod):
            return pod
    return None


# --- messages -------------------------------------------------------------------------------------------------------


def _binary_si(amount: int) -> str:
    return str(Quantity.from_int(amount, Format.BINARY_SI))


def _message_and_annotations(
    resource: str, threshold: Threshold | None, available: int, pod: Pod, capacity: int
) -> tuple[str, dict[str, str]]:
    """Upstream ``evictionMessage`` for the simulated stats (usage is known for every pod)."""
    message = _NODE_LOW_MESSAGE_FMT.format(resource)
    if threshold is not None:
        message += _THRESHOLD_MET_MESSAGE_FMT.format(threshold.quantity_text(capacity), _binary_si(available))
    annotations: dict[str, str] = {}
    name = name_of(pod)
    if resource == "memory" and is_pod_level_resources_set(pod):
        pod_level = section(pod, "spec", "resources", "requests")
        if resource in pod_level:
            usage = _binary_si(pod_memory_usage(pod))
            message += _POD_MESSAGE_FMT.format(name, usage, Quantity.parse(pod_level[resource]), resource)
            annotations[OFFENDING_POD_KEY] = name
            annotations[OFFENDING_POD_USAGE_KEY] = usage
    exceeded: list[str] = []
    usages: list[str] = []
    if resource == "memory":
        containers = {str(c.get("name") or ""): c for c in _running_containers(pod)}
        for container_name, used in container_memory_usage(pod):
            request = _container_request(containers[container_name], resource) or Quantity(0)
            if Quantity.from_int(used) > request:
                usage = _binary_si(used)
                message += _CONTAINER_MESSAGE_FMT.format(container_name, usage, request, resource)
                exceeded.append(container_name)
                usages.append(usage)
    annotations[OFFENDING_CONTAINERS_KEY] = ",".join(exceeded)
    annotations[OFFENDING_CONTAINERS_USAGE_KEY] = ",".join(usages)
    annotations[STARVED_RESOURCE_KEY] = resource
    return message, annotations


def eviction_message(resource: str, threshold: Threshold | None, available: int, pod: Pod, *, capacity: int = 0) -> str:
    """The Evicted event's message and the evicted pod's ``status.message``.

    ``available`` is the signal's current amount and ``capacity`` its capacity (needed only to print a
    percentage threshold); ``threshold`` None leaves out the threshold sentence, as upstream does when no
    observation backs it. Per-container sentences are produced for ``memory`` only (the simulation has no
    disk usage).
    """
    return _message_and_annotations(resource, threshold, available, pod, capacity)[0]


def eviction_annotations(resource: str, pod: Pod) -> dict[str, str]:
    """The Evicted event's annotations: ``offending_containers`` and ``offending_containers_usage``
    (comma-joined, empty when none exceeded), ``starved_resource``, and for pods with pod-level memory
    requests ``offending_pod`` / ``offending_pod_usage``."""
    return _message_and_annotations(resource, None, 0, pod, 0)[1]


def pod_is_evicted(pod: Pod) -> bool:
    """Phase Failed with reason ``Evicted`` (upstream ``PodIsEvicted``)."""
    view = PodView(pod)
    return view.phase == "Failed" and view.reason == REASON


# --- node conditions (pkg/kubelet/nodestatus/setters.go) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PressureCondition:
    """What the kubelet writes for one pressure condition, and the event it records on a transition."""

    type: str
    status: str
    reason: str
    message: str
    event_reason: str


_PRESSURE_TEXT: Final[Mapping[tuple[str, bool], tuple[str, str, str]]] = MappingProxyType(
    {
        ("MemoryPressure", True): (
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
            "NodeHasInsufficientMemory",
        ),
        ("MemoryPressure", False): (
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
            "NodeHasSufficientMemory",
        ),
        ("DiskPressure", True): ("KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"),
        ("DiskPressure", False): ("KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"),
        ("PIDPressure", True): (
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
            "NodeHasInsufficientPID",
        ),
        ("PIDPressure", False): (
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
            "NodeHasSufficientPID",
        ),
    }
)


def pressure_condition(condition_type: str, under_pressure: bool) -> PressureCondition:
    """The ``MemoryPressure``/``DiskPressure``/``PIDPressure`` condition as the kubelet reports it; raises
    :class:`KeyError` for another type."""
    reason, message, event = _PRESSURE_TEXT[(condition_type, under_pressure)]
    return PressureCondition(condition_type, "True" if under_pressure else "False", reason, message, event)
