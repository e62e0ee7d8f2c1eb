"""The kubelet's pod admission, as a pure function over wire-format dicts.

A kubelet runs every pod it is handed through its admit handlers before starting it; the first handler that
says no decides the pod's fate (the pod goes to phase Failed with that reason and message). Two of those
handlers matter for a simulated node, and :func:`admit_pod` runs them in the kubelet's order:

1. The eviction manager's handler (upstream ``pkg/kubelet/eviction/eviction_manager.go``, ``Admit``). With no
   pressure condition it admits everything. Critical pods (:func:`is_critical_pod`) are always admitted. When
   MemoryPressure is the *only* condition, pods that are not BestEffort are admitted, and so are BestEffort pods
   tolerating the ``node.kubernetes.io/memory-pressure:NoSchedule`` taint; any other condition (DiskPressure,
   PIDPressure) rejects every non-critical pod. Rejection: reason ``Evicted``, message
   ``"The node had condition: [MemoryPressure]. "`` (Go's ``%v`` of the condition list).
2. The predicate handler (upstream ``pkg/kubelet/lifecycle/predicate.go``), whose checks run in this order and
   whose *first* failure is reported:

   * the pod's ``kubernetes.io/os`` *label* against the node's OS (``PodOSSelectorNodeLabelDoesNotMatch``),
     then ``spec.os.name`` against it (``PodOSNotSupported``);
   * ``securityContext.supplementalGroupsPolicy: Strict`` on a node whose ``status.features`` does not
     declare support (``SupplementalGroupsPolicyNotSupported``);
   * ``generalFilter``: the scheduler's ``AdmissionCheck`` with every failure kept (resources -> node
     affinity/selector -> node name -> host ports), then the node's ``NoExecute`` taints the pod does not
     tolerate (the kubelet ignores NoSchedule/PreferNoSchedule: the scheduler already honoured those, and a
     taint added since must not kill running work). Static pods skip the taint check.

   Resource failures become reason ``OutOf<resource>`` (``OutOfcpu``, ``OutOfpods``, ``OutOfnvidia.com/gpu``)
   and message ``"Node didn't have enough resource: cpu, requested: 1500, used: 500, capacity: 2000"`` (cpu in
   millicores, everything else in whole units). Predicate failures use the plugin name as the reason and
   ``"Predicate <Name> failed: <reason>"`` as the message.

Resource accounting follows ``noderesources.Fits``: the pod-count check first (``used`` pods + 1 against
``allocatable.pods``), then cpu, memory, ephemeral-storage and the scalar resources (hugepages-*, extended and
``kubernetes.io/``-prefixed), each only when the pod requests more than zero of it. ``used`` is the sum of the
requests of the pods already admitted (non-terminal ones: pods in phase Succeeded or Failed and the pod itself
are dropped from ``admitted``), computed as the scheduler's NodeInfo does (status resources included, for pods
resized in place). As upstream's ``removeMissingExtendedResources``, container requests for an *extended*
resource the node does not list in ``status.allocatable`` at all are ignored (cluster-level resources). With
DRAExtendedResource (GA, on in v1.37) an extended resource name (or ``deviceclass.resource.kubernetes.io/<class>``)
whose allocatable is 0 is not checked either: the kubelet has no DeviceClass mapping, so upstream's
``AdmissionCheck`` calls ``noderesources.Fits`` without a DRA manager and ``shouldDelegateResourceToDRA`` leaves
such a resource to DRA (the scheduler allocated devices for it; the DRA manager prepares the pod's
``status.extendedResourceClaimStatus`` claim). Upstream's version of that check delegates any scalar resource with
allocatable 0; kubeplane limits it to the names DRA can serve (hugepages-* and ``kubernetes.io/`` names stay
checked).

Deviations, none visible to a well-formed pod: upstream iterates the scalar resources in Go map order, here
they are checked in name order; the node's OS is its ``kubernetes.io/os`` label (then
``status.nodeInfo.operatingSystem``, then ``linux``) instead of the kubelet binary's ``runtime.GOOS``; under
several pressures the condition list is in the fixed order MemoryPressure, DiskPressure, PIDPressure (e.g.
``[MemoryPressure DiskPressure]``) where upstream's follows a Go map.

GPU devices (:mod:`kubeplane.gpu.model`): with ``gpu_idle`` given (the fleet always gives it: the free milli-GPU
of each of the node's devices, from its own per-device accounting), the device manager's allocation runs where
upstream's resource-allocation admit handler sits, after the eviction manager's handler and before the predicate
handler. A pod whose ``gpu.kubeplane.io/devices`` annotation names valid devices (as many as it asks, distinct,
on the node) gets exactly those, if each has room; any other GPU pod (bound by hand) gets first fit. Failure:
reason ``UnexpectedAdmissionError``, message ``"Allocate failed due to requested number of devices unavailable
for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected"``, where Available counts the devices with
room among the recorded ones (annotated pods) or on the node (the others). A whole-GPU pod on a node that does
not list ``nvidia.com/gpu`` at all is not a device-plugin resource there and is left alone (as upstream); a
malformed GPU request fails with the same reason. :attr:`AdmitResult.devices` carries the devices allocated.

Left out: the critical-pod admission failure handler that preempts running pods to make room for a critical
pod (its side effects belong to the caller), device-plugin and DRA resource updates, and the kubelet-restart
skip of ignorable checks (``NotEvictPodOnKubeletRestart``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.nodeaffinity import get_required_node_affinity
from kubeplane.api.pods import QOSClass, is_restartable_init_container, pod_qos_class, pod_requests
from kubeplane.api.quantity import Quantity
from kubeplane.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, tolerations_tolerate_taint
from kubeplane.api.validation import names
from kubeplane.api.views import (
    EMPTY,
    NodeView,
    PodView,
    annotations_of,
    is_pod_terminal,
    labels_of,
    name_of,
    namespace_of,
    section,
    spec_of,
    status_of,
    uid_of,
)
from kubeplane.gpu.model import GPU_RESOURCE, GpuError, devices_of, fit_devices, gpu_request, valid_devices

from .static_pods import CONFIG_MIRROR, CONFIG_SOURCE, is_mirror_pod

__all__ = [
    "CONFIG_MIRROR_ANNOTATION",
    "CONFIG_SOURCE_ANNOTATION",
    "EVICTED_REASON",
    "NODE_CONDITION_MESSAGE_FMT",
    "SYSTEM_CRITICAL_PRIORITY",
    "TAINT_NODE_MEMORY_PRESSURE",
    "UNEXPECTED_ADMISSION_ERROR",
    "AdmitResult",
    "admit_pod",
    "allocate_gpus",
    "is_critical_pod",
    "is_mirror_pod",
    "is_static_pod",
    "pod_priority",
]

Pod = Mapping[str, Any]

# --- reasons and messages (predicate.go, eviction helpers.go, scheduler plugin constants) -------------------

EVICTED_REASON: Final = "Evicted"
"""The eviction manager's reason, for admission rejections and evictions alike (upstream ``eviction.Reason``)."""
NODE_CONDITION_MESSAGE_FMT: Final = "The node had condition: {}. "
"""Upstream ``nodeConditionMessageFmt`` (``%v`` of the condition list, trailing space included)."""

POD_OS_SELECTOR_MISMATCH: Final = "PodOSSelectorNodeLabelDoesNotMatch"
POD_OS_SELECTOR_MESSAGE: Final = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
POD_OS_NOT_SUPPORTED: Final = "PodOSNotSupported"
POD_OS_NOT_SUPPORTED_MESSAGE: Final = "Failed to admit pod as the OS field doesn't match node OS"
SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED: Final = "SupplementalGroupsPolicyNotSupported"
SUPPLEMENTAL_GROUPS_POLICY_MESSAGE: Final = "SupplementalGroupsPolicy=Strict is not supported in this node"
INSUFFICIENT_RESOURCE_PREFIX: Final = "OutOf"
INSUFFICIENT_RESOURCE_MESSAGE_FMT: Final = "Node didn't have enough resource: {}, requested: {}, used: {}, capacity: {}"

UNEXPECTED_ADMISSION_ERROR: Final = "UnexpectedAdmissionError"
"""The reason of an allocation failure the scheduler should have prevented (upstream
``lifecycle.UnexpectedAdmissionError``)."""
ALLOCATE_FAILED_MESSAGE_FMT: Final = "Allocate failed due to {}, which is unexpected"
DEVICES_UNAVAILABLE_FMT: Final = "requested number of devices unavailable for {}. Requested: {}, Available: {}"
"""The device manager's error (``devicemanager.ManagerImpl.devicesToAllocate``)."""

NODE_AFFINITY: Final = ("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
NODE_NAME: Final = ("NodeName", "node(s) didn't match the requested node name")
NODE_PORTS: Final = ("NodePorts", "node(s) didn't have free ports for the requested pod ports")
TAINT_TOLERATION: Final = ("TaintToleration", "node(s) had taints that the pod didn't tolerate")
"""``(plugin name, reason)`` of each predicate; the kubelet reports ``tainttoleration.ErrReasonNotMatch``,
not the scheduler Filter's own wording."""

# --- kubelet types (pkg/kubelet/types) ------------------------------------------------------------------------

CONFIG_SOURCE_ANNOTATION: Final = CONFIG_SOURCE
CONFIG_MIRROR_ANNOTATION: Final = CONFIG_MIRROR
API_SERVER_SOURCE: Final = "api"
SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000
"""``scheduling.SystemCriticalPriority`` (twice the highest user-definable priority): the value of the
``system-cluster-critical`` class; ``system-node-critical`` is higher still."""
TAINT_NODE_MEMORY_PRESSURE: Final = "node.kubernetes.io/memory-pressure"
OS_LABEL: Final = "kubernetes.io/os"

_MEMORY_PRESSURE = "MemoryPressure"
_DISK_PRESSURE = "DiskPressure"
_PID_PRESSURE = "PIDPressure"
_WILDCARD_IP: Final = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class AdmitResult:
    """Upstream ``PodAdmitResult``: ``reason``/``message`` are empty exactly when ``admit`` is True.

    ``devices``: the GPU device indices allocated to an admitted GPU pod (None when no allocation ran).
    """

    admit: bool
    reason: str = ""
    message: str = ""
    devices: tuple[int, ...] | None = None


def is_static_pod(pod: Pod) -> bool:
    """A pod from a file or URL source: its config-source annotation is set and is not ``api``
    (upstream ``IsStaticPod``; a pod without the annotation is not static)."""
    source = annotations_of(pod).get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != API_SERVER_SOURCE


def pod_priority(pod: Pod) -> int:
    """``spec.priority``, 0 when unset (upstream ``corev1helpers.PodPriority``)."""
    priority = spec_of(pod).get("priority")
    return int(priority) if priority is not None else 0


def is_critical_pod(pod: Pod) -> bool:
    """Static, mirror, or priority at least :data:`SYSTEM_CRITICAL_PRIORITY` (upstream ``IsCriticalPod``):
    such pods are admitted under pressure and never evicted by the eviction manager."""
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    priority = spec_of(pod).get("priority")
    return priority is not None and int(priority) >= SYSTEM_CRITICAL_PRIORITY


# --- eviction manager admission -------------------------------------------------------------------------------


def _admit_under_pressure(pod: Pod, conditions: Sequence[str]) -> AdmitResult | None:
    """Upstream ``managerImpl.Admit``; None when the pod is admitted."""
    if not conditions or is_critical_pod(pod):
        return None
    if list(conditions) == [_MEMORY_PRESSURE]:
        if pod_qos_class(pod) is not QOSClass.BEST_EFFORT:
            return None
        tolerations = PodView(pod).tolerations
        taint = {"key": TAINT_NODE_MEMORY_PRESSURE, "effect": EFFECT_NO_SCHEDULE}
        if tolerations_tolerate_taint(tolerations, taint):
            return None
    return AdmitResult(False, EVICTED_REASON, NODE_CONDITION_MESSAGE_FMT.format(f"[{' '.join(conditions)}]"))


# --- OS and supplemental groups -------------------------------------------------------------------------------


def _node_os(node: Mapping[str, Any]) -> str:
    labels = labels_of(node)
    if labels.get(OS_LABEL):
        return labels[OS_LABEL]
    node_info: Mapping[str, Any] = status_of(node).get("nodeInfo") or EMPTY
    return str(node_info.get("operatingSystem") or "linux")


def _reject_os_selector(pod: Pod, node_os: str) -> bool:
    """Upstream ``rejectPodAdmissionBasedOnOSSelector``: the pod's *label* (not its nodeSelector)."""
    labels = labels_of(pod)
    return OS_LABEL in labels and labels[OS_LABEL] != node_os


def _reject_os_field(pod: Pod, node_os: str) -> bool:
    os_field: Mapping[str, Any] | None = spec_of(pod).get("os")
    return os_field is not None and os_field.get("name") != node_os


def _reject_supplemental_groups_policy(pod: Pod, node: Mapping[str, Any]) -> bool:
    """Strict policy on a node not declaring ``status.features.supplementalGroupsPolicy: true`` (the feature
    is past alpha, so upstream enforces it)."""
    security: Mapping[str, Any] = spec_of(pod).get("securityContext") or EMPTY
    policy = security.get("supplementalGroupsPolicy")
    if policy is None:
        return False
    features: Mapping[str, Any] = status_of(node).get("features") or EMPTY
    return policy == "Strict" and features.get("supplementalGroupsPolicy") is not True


# --- resources --------------------------------------------------------------------------------------------------


def _is_scalar_resource(name: str) -> bool:
    """Upstream ``IsScalarResourceName``: extended, hugepages-*, attachable-volumes-* or prefixed native."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


DRA_EXTENDED_RESOURCE = True
"""The DRAExtendedResource gate as v1.37 ships it (GA, on)."""
_DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def _delegated_to_dra(name: str, allocatable: Mapping[str, int]) -> bool:
    """Upstream ``shouldDelegateResourceToDRA`` without a DRA manager (the kubelet's case), limited to names DRA
    can serve (upstream ``IsDRAExtendedResourceName``)."""
    if not DRA_EXTENDED_RESOURCE or allocatable.get(name, 0) > 0:
        return False
    return name.startswith(_DEVICE_CLASS_PREFIX) or _is_extended_resource(name)


def _is_extended_resource(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``: domain-prefixed outside ``kubernetes.io/``, quota-able."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def _amounts(resources: Mapping[str, Any] | None) -> dict[str, int]:
    """A wire ResourceList in natural units (millicores for cpu, whole units otherwise)."""
    out: dict[str, int] = {}
    for name, text in (resources or {}).items():
        quantity = Quantity.parse(text)
        out[name] = quantity.milli_value() if name == "cpu" else quantity.value()
    return out


def _without_missing_extended(pod: Pod, allocatable: Mapping[str, Any]) -> Pod:
    """Upstream ``removeMissingExtendedResources``: drop container *requests* for extended resources the node
    does not list at all; limits stay (the fit check never reads them)."""

    def missing(name: str) -> bool:
        return _is_extended_resource(name) and name not in allocatable

    def filtered(containers: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        out: list[Mapping[str, Any]] = []
        for container in containers:
            resources: Mapping[str, Any] = container.get("resources") or EMPTY
            requests: Mapping[str, Any] | None = resources.get("requests")
            if requests and any(missing(n) for n in requests):
                kept = {n: q for n, q in requests.items() if not missing(n)}
                out.append({**container, "resources": {**resources, "requests": kept}})
            else:
                out.append(container)
        return out

    spec = spec_of(pod)
    if not any(missing(n) for n in _requested_names(spec)):
        return pod
    new_spec = dict(spec)
    for key in ("containers", "initContainers"):
        if spec.get(key):
            new_spec[key] = filtered(spec[key])
    return {**pod, "spec": new_spec}


def _requested_names(spec: Mapping[str, Any]) -> set[str]:
    found: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            found.update(section(container, "resources", "requests").keys())
    return found


def _insufficient(
    request: Mapping[str, int], used: Mapping[str, int], allocatable: Mapping[str, int], used_pods: int
) -> list[AdmitResult]:
    """Upstream ``fitsRequest`` with every failure kept, as admission results in upstream order."""
    out: list[AdmitResult] = []

    def fail(name: str, requested: int, in_use: int, capacity: int) -> None:
        message = INSUFFICIENT_RESOURCE_MESSAGE_FMT.format(name, requested, in_use, capacity)
        out.append(AdmitResult(False, INSUFFICIENT_RESOURCE_PREFIX + name, message))

    allowed_pods = allocatable.get("pods", 0)
    if used_pods + 1 > allowed_pods:
        fail("pods", 1, used_pods, allowed_pods)
    scalars = sorted(name for name in request if _is_scalar_resource(name) and not _delegated_to_dra(name, allocatable))
    for name in ("cpu", "memory", "ephemeral-storage", *scalars):
        amount = request.get(name, 0)
        if amount > 0 and amount > allocatable.get(name, 0) - used.get(name, 0):
            fail(name, amount, used.get(name, 0), allocatable.get(name, 0))
    return out


# --- host ports -------------------------------------------------------------------------------------------------


def _host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """``(ip, protocol, port)`` of the host ports of the containers and sidecars; ip defaults to 0.0.0.0,
    protocol to TCP, and ports <= 0 are not host ports."""
    spec = spec_of(pod)
    containers = list(spec.get("containers") or ())
    containers += [c for c in spec.get("initContainers") or () if is_restartable_init_container(c)]
    out: list[tuple[str, str, int]] = []
    for container in containers:
        for port in container.get("ports") or ():
            host_port = int(port.get("hostPort") or 0)
            if host_port > 0:
                out.append((port.get("hostIP") or _WILDCARD_IP, port.get("protocol") or "TCP", host_port))
    return out


def _ports_conflict(wanted: Sequence[tuple[str, str, int]], used: Sequence[tuple[str, str, int]]) -> bool:
    """Upstream ``HostPortInfo.CheckConflict``: 0.0.0.0 clashes with every IP on the same protocol and port."""
    for ip, protocol, port in wanted:
        for used_ip, used_protocol, used_port in used:
            if (protocol, port) != (used_protocol, used_port):
                continue
            if _WILDCARD_IP in (ip, used_ip) or ip == used_ip:
                return True
    return False


# --- GPU devices ------------------------------------------------------------------------------------------------


def _allocate_failed(detail: str) -> AdmitResult:
    return AdmitResult(False, UNEXPECTED_ADMISSION_ERROR, ALLOCATE_FAILED_MESSAGE_FMT.format(detail))


def allocate_gpus(pod: Pod, node: Mapping[str, Any], gpu_idle: Sequence[int]) -> AdmitResult:
    """The device manager's allocation for ``pod`` on ``node`` whose devices have ``gpu_idle`` milli free.

    Admitted: ``devices`` is the allocation (None for a pod without GPUs, or a whole-GPU pod on a node that does
    not list ``nvidia.com/gpu``). Rejected: ``UnexpectedAdmissionError`` (see the module docstring).
    """
    try:
        request = gpu_request(pod)
    except GpuError as exc:
        return _allocate_failed(str(exc))
    if request is None:
        return AdmitResult(True)
    if not gpu_idle and not request.is_share and GPU_RESOURCE not in NodeView(node).allocatable:
        return AdmitResult(True)
    recorded = devices_of(pod)
    if recorded is not None and valid_devices(recorded, request, len(gpu_idle)):
        available = sum(1 for d in recorded if gpu_idle[d] >= request.milli)
        if available >= request.count:
            return AdmitResult(True, devices=tuple(recorded))
    else:
        chosen = fit_devices(gpu_idle, request)
        if chosen is not None:
            return AdmitResult(True, devices=chosen)
        available = sum(1 for free in gpu_idle if free >= request.milli)
    return _allocate_failed(DEVICES_UNAVAILABLE_FMT.format(GPU_RESOURCE, request.count, available))


# --- the handler -------------------------------------------------------------------------------------------------


def _same_pod(a: Pod, b: Pod) -> bool:
    uid_a, uid_b = uid_of(a), uid_of(b)
    if uid_a and uid_b:
        return uid_a == uid_b
    return (namespace_of(a), name_of(a)) == (namespace_of(b), name_of(b))


def _predicate_failure(name_and_reason: tuple[str, str]) -> AdmitResult:
    name, reason = name_and_reason
    return AdmitResult(False, name, f"Predicate {name} failed: {reason}")


def _general_filter(pod: Pod, node: Mapping[str, Any], others: Sequence[Pod]) -> list[AdmitResult]:
    """Upstream ``generalFilter``: AdmissionCheck with all failures, then NoExecute taints."""
    allocatable_list = NodeView(node).allocatable
    allocatable = _amounts(allocatable_list)
    request = pod_requests(_without_missing_extended(pod, allocatable_list))
    used: dict[str, int] = {}
    for other in others:
        for name, amount in pod_requests(other, use_status_resources=True).items():
            used[name] = used.get(name, 0) + amount
    reasons = _insufficient(request, used, allocatable, len(others))

    matches, _ = get_required_node_affinity(pod).match(node)
    if not matches:
        reasons.append(_predicate_failure(NODE_AFFINITY))
    node_name = PodView(pod).node_name
    if node_name and node_name != name_of(node):
        reasons.append(_predicate_failure(NODE_NAME))
    wanted = _host_ports(pod)
    if wanted and _ports_conflict(wanted, [p for other in others for p in _host_ports(other)]):
        reasons.append(_predicate_failure(NODE_PORTS))

    if not is_static_pod(pod):
        tolerations = PodView(pod).tolerations
        for taint in NodeView(node).taints:
            if taint.get("effect") == EFFECT_NO_EXECUTE and not tolerations_tolerate_taint(tolerations, taint):
                reasons.append(_predicate_failure(TAINT_TOLERATION))
                break
    return reasons


def _conditions(memory: bool, disk: bool, pid: bool) -> list[str]:
    flags = ((memory, _MEMORY_PRESSURE), (disk, _DISK_PRESSURE), (pid, _PID_PRESSURE))
    return [condition for on, condition in flags if on]


def admit_pod(
    pod: Pod,
    node: Mapping[str, Any],
    admitted: Sequence[Pod],
    *,
    under_memory_pressure: bool = False,
    under_disk_pressure: bool = False,
    under_pid_pressure: bool = False,
    gpu_idle: Sequence[int] | None = None,
) -> AdmitResult:
    """Whether the kubelet on ``node`` admits ``pod`` given the pods it already admitted.

    ``admitted`` may hold terminal pods and ``pod`` itself; both are ignored. The pressure flags are the
    eviction manager's current node conditions. ``gpu_idle`` (free milli per GPU device of the node) turns on
    the device allocation (:func:`allocate_gpus`); the result then carries the devices. Never raises for a
    well-formed pod; an unparsable quantity raises :class:`~kubeplane.api.quantity.QuantityError` (the API
    server rejects those at creation).
    """
    rejected = _admit_under_pressure(pod, _conditions(under_memory_pressure, under_disk_pressure, under_pid_pressure))
    if rejected is not None:
        return rejected
    devices: tuple[int, ...] | None = None
    if gpu_idle is not None:
        allocated = allocate_gpus(pod, node, gpu_idle)
        if not allocated.admit:
            return allocated
        devices = allocated.devices
    node_os = _node_os(node)
    if _reject_os_selector(pod, node_os):
        return AdmitResult(False, POD_OS_SELECTOR_MISMATCH, POD_OS_SELECTOR_MESSAGE)
    if _reject_os_field(pod, node_os):
        return AdmitResult(False, POD_OS_NOT_SUPPORTED, POD_OS_NOT_SUPPORTED_MESSAGE)
    if _reject_supplemental_groups_policy(pod, node):
        return AdmitResult(False, SUPPLEMENTAL_GROUPS_POLICY_NOT_SUPPORTED, SUPPLEMENTAL_GROUPS_POLICY_MESSAGE)
    others = [other for other in admitted if not is_pod_terminal(other) and not _same_pod(other, pod)]
    reasons = _general_filter(pod, node, others)
    return reasons[0] if reasons else AdmitResult(True, devices=devices)
