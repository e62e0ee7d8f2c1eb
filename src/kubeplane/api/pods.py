"""Pod resource semantics over plain JSON pods: effective requests and limits, non-zero requests, QoS class.

Upstream sources, whose behaviour ``tests/api/test_pods.py`` pins:

* ``k8s.io/component-helpers/resource/helpers.go``: ``PodRequests``, ``PodLimits`` and the sidecar formula
  (KEP-753). Regular containers are summed. Restartable init containers (``restartPolicy: Always``, i.e.
  sidecars) keep running, so they are added to that sum *and* accumulate; every other init container runs
  alone next to the sidecars started before it, so the pod needs ``max(sum, init_i + sidecars before i)``.
  Pod-level ``spec.resources`` (cpu, memory, hugepages-*) replace the container aggregate for the resources
  they name; ``spec.overhead`` is added to requests, and to limits that are set and non-zero.
* ``pkg/scheduler/framework`` (``calculateResource``, ``getNonMissingContainerRequests``) and
  ``pkg/scheduler/util/pod_resources.go``: the non-zero requests used for scoring, where a container that
  does not name cpu or memory counts as 100m / 200Mi (``NonMissingContainerRequests``), applied per
  container, init containers and sidecars included, before the formula above.
* ``pkg/apis/core/v1/helper/qos`` (``ComputePodQOS``): only cpu and memory count; pod-level resources, when
  present, decide alone. Requests are first defaulted as the API server does (``SetDefaults_Pod``): a
  container's missing request defaults to its limit, and pod-level requests to the aggregated container
  requests or else the pod-level limit, so a pod not yet defaulted gets the class it will have once stored.

Invariants: sums, maxima and comparisons are exact (on ``Quantity.nanos``); conversion to the natural unit
happens once, on the result: ``cpu`` in millicores, every other resource in whole units (bytes for memory,
storage and hugepages; counts for pods and extended resources), rounded away from zero like upstream's
``MilliValue``/``Value``. A resource appears in a result iff upstream's ResourceList would hold the key (an
explicit ``"0"`` is kept), because the non-zero defaulting depends on presence, not value.

Left out on purpose: pod-level *status* resources (``InPlacePodLevelResourcesVerticalScaling``, alpha), DRA
node-allocatable claims, and the newest pod-level limit defaulting (``defaultPodLimits``) in QoS.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from kubeplane.api.quantity import NANO, Quantity

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "MEMORY",
    "NON_ZERO_DEFAULTS",
    "QOSClass",
    "get_nonzero_requests",
    "is_pod_level_requests_set",
    "is_pod_level_resources_set",
    "is_restartable_init_container",
    "observed_generation",
    "pod_limits",
    "pod_nonzero_requests",
    "pod_qos_class",
    "pod_requests",
    "with_observed_generation",
]

CPU = "cpu"
MEMORY = "memory"
HUGEPAGES_PREFIX = "hugepages-"

DEFAULT_MILLI_CPU_REQUEST = 100
"""Millicores a container that names no cpu request counts as when scoring (upstream, 0.1 core)."""
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""Bytes a container that names no memory request counts as when scoring (upstream, 200Mi)."""
NON_ZERO_DEFAULTS: Mapping[str, int] = MappingProxyType(
    {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
)
"""The scorer's ``NonMissingContainerRequests`` in natural units, for ``pod_requests(non_missing=...)``."""

_MILLI = NANO // 1000
_DEFAULT_CPU_NANOS = DEFAULT_MILLI_CPU_REQUEST * _MILLI
_DEFAULT_MEMORY_NANOS = DEFAULT_MEMORY_REQUEST * NANO

Pod = Mapping[str, Any]
_Nanos = dict[str, int]
# (container, its status or None, resize infeasible) -> its resource list, None as Go's nil list.
_Getter = Callable[[Mapping[str, Any], Mapping[str, Any] | None, bool], "_Nanos | None"]


class QOSClass(enum.StrEnum):
    """``v1.PodQOSClass``."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


# --- observedGeneration (PodObservedGenerationTracking, GA since v1.35 and locked on) --------------------


def observed_generation(pod: Pod) -> int:
    """What a writer of the pod's status or of one of its conditions records as ``observedGeneration``:
    upstream ``CalculatePodStatusObservedGeneration`` / ``CalculatePodConditionObservedGeneration`` with the
    gate locked on, i.e. the pod's ``metadata.generation`` (0 when the pod has none: the field is then
    omitted, as Go's omitempty does)."""
    generation = (pod.get("metadata") or {}).get("generation")
    return generation if type(generation) is int and generation > 0 else 0


def with_observed_generation(condition: Mapping[str, Any], pod: Pod) -> dict[str, Any]:
    """``condition`` with ``observedGeneration`` = :func:`observed_generation` of ``pod`` after ``type`` (the
    field order of ``v1.PodCondition``), or a plain copy when the pod has no generation."""
    generation = observed_generation(pod)
    if not generation:
        return dict(condition)
    out: dict[str, Any] = {"type": condition.get("type"), "observedGeneration": generation}
    out.update(condition)
    return out


# --- JSON access -------------------------------------------------------------------------------------


def _spec(pod: Pod) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = pod.get("spec") or {}
    return spec


def _containers(pod: Pod, key: str) -> list[Mapping[str, Any]]:
    containers: list[Mapping[str, Any]] = _spec(pod).get(key) or []
    return containers


def _nanos(resources: Mapping[str, Any] | None) -> _Nanos | None:
    """A JSON ResourceList as exact nanos; ``None`` (Go's nil) stays ``None``."""
    if resources is None:
        return None
    return {name: Quantity.parse(value).nanos for name, value in resources.items()}


def _resources(container: Mapping[str, Any], field: str) -> _Nanos | None:
    requirements: Mapping[str, Any] = container.get("resources") or {}
    return _nanos(requirements.get(field))


def _pod_level(pod: Pod, field: str) -> _Nanos | None:
    requirements: Mapping[str, Any] | None = _spec(pod).get("resources")
    return None if requirements is None else _nanos(requirements.get(field))


def _natural(name: str, nanos: int) -> int:
    """Millicores for cpu, whole units otherwise; rounded away from zero as upstream's ScaledValue."""
    divisor = _MILLI if name == CPU else NANO
    magnitude = -(-abs(nanos) // divisor)
    return -magnitude if nanos < 0 else magnitude


def _to_nanos(name: str, natural: int) -> int:
    return natural * (_MILLI if name == CPU else NANO)


def _is_supported_pod_level(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def is_restartable_init_container(container: Mapping[str, Any]) -> bool:
    """A sidecar: an init container with ``restartPolicy: Always``."""
    return container.get("restartPolicy") == "Always"


def is_pod_level_requests_set(pod: Pod) -> bool:
    """Pod-level requests name cpu, memory or a hugepages size (upstream ``IsPodLevelRequestsSet``)."""
    return any(map(_is_supported_pod_level, _pod_level(pod, "requests") or ()))


def is_pod_level_resources_set(pod: Pod) -> bool:
    """Pod-level requests or limits name a supported resource (upstream ``IsPodLevelResourcesSet``)."""
    limits = _pod_level(pod, "limits") or ()
    return is_pod_level_requests_set(pod) or any(map(_is_supported_pod_level, limits))


# --- resource-list arithmetic (Go's addResourceList / maxResourceList) -------------------------------


def _add(into: _Nanos, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        into[name] = into.get(name, 0) + value


def _max(into: _Nanos, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if name not in into or value > into[name]:
            into[name] = value


def _max_of(first: _Nanos, *others: _Nanos) -> _Nanos:
    result = dict(first)
    for other in others:
        _max(result, other)
    return result


def _apply_non_missing(resources: _Nanos | None, non_missing: Mapping[str, int]) -> _Nanos:
    """Upstream ``applyNonMissing``: fill names the container does not list; an explicit 0 is kept."""
    result = dict(resources or {})
    for name, value in non_missing.items():
        result.setdefault(name, value)
    return result


# --- container getters: spec, and the in-place-resize status views ------------------------------------


def _spec_requests(container: Mapping[str, Any], _status: Mapping[str, Any] | None, _inf: bool) -> _Nanos | None:
    return _resources(container, "requests")


def _spec_limits(container: Mapping[str, Any], _status: Mapping[str, Any] | None, _inf: bool) -> _Nanos | None:
    return _resources(container, "limits")


def _defaulted_requests(container: Mapping[str, Any], _status: Mapping[str, Any] | None, _inf: bool) -> _Nanos | None:
    """Requests after ``SetDefaults_Pod``: a limit stands in for a missing request."""
    limits = _resources(container, "limits")
    requests = _resources(container, "requests")
    return requests if limits is None else {**limits, **(requests or {})}


def _allocated_requests(
    container: Mapping[str, Any], status: Mapping[str, Any] | None, infeasible: bool
) -> _Nanos | None:
    if status is not None and status.get("allocatedResources") is not None:
        return _nanos(status["allocatedResources"])
    return None if infeasible else _resources(container, "requests")


def _actuated_requests(
    container: Mapping[str, Any], status: Mapping[str, Any] | None, infeasible: bool
) -> _Nanos | None:
    if status is not None:
        actual: Mapping[str, Any] | None = status.get("resources")
        if actual is not None and actual.get("requests") is not None:
            return _nanos(actual["requests"])
        if status.get("allocatedResources") is not None:
            return _nanos(status["allocatedResources"])
    return None if infeasible else _resources(container, "requests")


def _actuated_limits(container: Mapping[str, Any], status: Mapping[str, Any] | None, infeasible: bool) -> _Nanos | None:
    if status is not None:
        actual: Mapping[str, Any] | None = status.get("resources")
        if actual is not None and actual.get("limits") is not None:
            return _nanos(actual["limits"])
    return None if infeasible else _resources(container, "limits")


def _find_status(pod: Pod, name: str | None) -> Mapping[str, Any] | None:
    status: Mapping[str, Any] = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for container_status in status.get(key) or ():
            if container_status.get("name") == name:
                found: Mapping[str, Any] = container_status
                return found
    return None


def _is_resize_infeasible(pod: Pod) -> bool:
    """The ``PodResizePending`` condition says ``Infeasible`` (upstream ``IsPodResizeInfeasible``)."""
    status: Mapping[str, Any] = pod.get("status") or {}
    for condition in status.get("conditions") or ():
        if condition.get("type") == "PodResizePending":
            return bool(condition.get("reason") == "Infeasible")
    return False


# --- aggregation --------------------------------------------------------------------------------------


def _aggregate(
    pod: Pod, getter: _Getter, *, non_missing: Mapping[str, int] | None = None, use_status: bool = False
) -> _Nanos:
    """Upstream ``aggregateContainerResourcesByFn``: the sidecar-aware container total for one view."""
    infeasible = use_status and _is_resize_infeasible(pod)

    def resources_of(container: Mapping[str, Any]) -> _Nanos:
        status = _find_status(pod, container.get("name")) if use_status else None
        found = getter(container, status, infeasible)
        return _apply_non_missing(found, non_missing) if non_missing else dict(found or {})

    result: _Nanos = {}
    for container in _containers(pod, "containers"):
        _add(result, resources_of(container))
    sidecars: _Nanos = {}  # restartable init containers started so far
    init_peak: _Nanos = {}
    for container in _containers(pod, "initContainers"):
        own = resources_of(container)
        if is_restartable_init_container(container):
            _add(result, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            alongside = dict(own)
            _add(alongside, sidecars)
            _max(init_peak, alongside)
    _max(result, init_peak)
    return result


def _aggregate_requests(pod: Pod, *, non_missing: Mapping[str, int] | None, use_status: bool) -> _Nanos:
    """Upstream ``AggregateContainerRequests``: with status, the max of spec, actuated and allocated."""
    spec = _aggregate(pod, _spec_requests, non_missing=non_missing, use_status=use_status)
    if not use_status:
        return spec
    allocated = _aggregate(pod, _allocated_requests, non_missing=non_missing, use_status=True)
    actuated = _aggregate(pod, _actuated_requests, non_missing=non_missing, use_status=True)
    if _is_resize_infeasible(pod):
        return _max_of(actuated, allocated)
    return _max_of(spec, actuated, allocated)


def _aggregate_limits(pod: Pod, *, use_status: bool) -> _Nanos:
    """Upstream ``AggregateContainerLimits`` (non-missing defaults never apply to limits)."""
    spec = _aggregate(pod, _spec_limits, use_status=use_status)
    if not use_status:
        return spec
    actuated = _aggregate(pod, _actuated_limits, use_status=True)
    return actuated if _is_resize_infeasible(pod) else _max_of(spec, actuated)


def _pod_requests_nanos(
    pod: Pod,
    *,
    non_missing: Mapping[str, int] | None,
    exclude_overhead: bool,
    pod_level_resources: bool,
    use_status_resources: bool,
) -> _Nanos:
    requests = _aggregate_requests(pod, non_missing=non_missing, use_status=use_status_resources)
    if pod_level_resources and is_pod_level_requests_set(pod):
        for name, value in (_pod_level(pod, "requests") or {}).items():
            if _is_supported_pod_level(name):
                requests[name] = value
    if not exclude_overhead:
        _add(requests, _nanos(_spec(pod).get("overhead")) or {})
    return requests


def _in_natural_units(resources: _Nanos) -> dict[str, int]:
    return {name: _natural(name, value) for name, value in resources.items()}


def pod_requests(
    pod: Pod,
    *,
    non_missing: Mapping[str, int] | None = None,
    exclude_overhead: bool = False,
    pod_level_resources: bool = True,
    use_status_resources: bool = False,
) -> dict[str, int]:
    """The pod's effective requests (upstream ``PodRequests``), resource name -> natural units.

    ``non_missing`` (natural units, e.g. :data:`NON_ZERO_DEFAULTS`) fills resources a container does not
    list, per container, before aggregation: the scorer's non-zero requests. ``pod_level_resources`` is the
    ``PodLevelResources`` feature gate; ``use_status_resources`` is ``InPlacePodVerticalScaling`` for pods
    already running (the scheduler's NodeInfo passes True), taking the larger of spec, allocated and
    actuated container resources, or only the latter two when the resize is infeasible.
    """
    converted = None if non_missing is None else {k: _to_nanos(k, v) for k, v in non_missing.items()}
    return _in_natural_units(
        _pod_requests_nanos(
            pod,
            non_missing=converted,
            exclude_overhead=exclude_overhead,
            pod_level_resources=pod_level_resources,
            use_status_resources=use_status_resources,
        )
    )


def pod_limits(
    pod: Pod,
    *,
    exclude_overhead: bool = False,
    pod_level_resources: bool = True,
    use_status_resources: bool = False,
) -> dict[str, int]:
    """The pod's effective limits (upstream ``PodLimits``), resource name -> natural units.

    A resource no container limits is absent (unlimited). Pod-level limits replace the aggregate when
    pod-level requests *or* limits are set; overhead is added only to limits present and non-zero.
    """
    limits = _aggregate_limits(pod, use_status=use_status_resources)
    if pod_level_resources and is_pod_level_resources_set(pod):
        for name, value in (_pod_level(pod, "limits") or {}).items():
            if _is_supported_pod_level(name):
                limits[name] = value
    if not exclude_overhead:
        for name, value in (_nanos(_spec(pod).get("overhead")) or {}).items():
            if limits.get(name, 0) != 0:
                limits[name] += value
    return _in_natural_units(limits)


def pod_nonzero_requests(
    pod: Pod, *, pod_level_resources: bool = True, use_status_resources: bool = False
) -> tuple[int, int]:
    """``(milli_cpu, memory_bytes)`` the scheduler's NodeInfo counts as ``NonZeroRequested`` for the pod.

    Upstream ``calculateResource``: without pod-level requests every container lacking a cpu (memory)
    request counts as 100m (200Mi); with pod-level requests a default applies only to a resource missing
    from the pod's effective requests altogether (neither pod-level, container nor overhead name it).
    """
    options: dict[str, bool] = {
        "exclude_overhead": False,
        "pod_level_resources": pod_level_resources,
        "use_status_resources": use_status_resources,
    }
    requests = _pod_requests_nanos(pod, non_missing=None, **options)
    defaults: _Nanos = {}
    if not (pod_level_resources and is_pod_level_requests_set(pod)):
        defaults = {CPU: _DEFAULT_CPU_NANOS, MEMORY: _DEFAULT_MEMORY_NANOS}
    else:
        if CPU not in requests:
            defaults[CPU] = _DEFAULT_CPU_NANOS
        if MEMORY not in requests:
            defaults[MEMORY] = _DEFAULT_MEMORY_NANOS
    if defaults:
        requests = _pod_requests_nanos(pod, non_missing=defaults, **options)
    return _natural(CPU, requests.get(CPU, 0)), _natural(MEMORY, requests.get(MEMORY, 0))


def get_nonzero_requests(requests: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(milli_cpu, memory_bytes)`` of one ResourceList with the defaults for names it lacks.

    Upstream ``GetNonzeroRequests``: an explicit ``"0"`` stays 0; a nil list (``None``) is ``(0, 0)``.
    """
    if requests is None:
        return 0, 0
    cpu = Quantity.parse(requests[CPU]).milli_value() if CPU in requests else DEFAULT_MILLI_CPU_REQUEST
    memory = Quantity.parse(requests[MEMORY]).value() if MEMORY in requests else DEFAULT_MEMORY_REQUEST
    return cpu, memory


# --- QoS ----------------------------------------------------------------------------------------------


def _resource_qos(requests: Mapping[str, int], limits: Mapping[str, int]) -> QOSClass:
    """Upstream ``resourceQOS`` for one set of requirements (a container's, or the pod-level ones)."""
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    qos: QOSClass | None = None
    for name in (CPU, MEMORY):
        request, limit = requests.get(name, 0), limits.get(name, 0)
        if request != limit:
            return QOSClass.BURSTABLE  # unequal: at least one is set, so neither of the other classes
        best_effort = request == 0
        if qos is None:
            qos = QOSClass.BEST_EFFORT if best_effort else QOSClass.GUARANTEED
        elif best_effort != (qos is QOSClass.BEST_EFFORT):
            return QOSClass.BURSTABLE
    assert qos is not None
    return qos


def _defaulted_pod_level(pod: Pod) -> tuple[_Nanos, _Nanos]:
    """Pod-level requests and limits after ``defaultHugePagePodLimits`` and ``defaultPodRequests``."""
    requests = _pod_level(pod, "requests") or {}
    limits = _pod_level(pod, "limits") or {}
    if requests or limits:
        for name, value in _aggregate(pod, _spec_limits).items():
            if name.startswith(HUGEPAGES_PREFIX) and name not in requests:
                limits.setdefault(name, value)
    if limits:
        for name, value in _aggregate(pod, _defaulted_requests).items():
            if name in (CPU, MEMORY):  # overcommittable pod-level resources
                requests.setdefault(name, value)
        for name, value in limits.items():
            if _is_supported_pod_level(name):
                requests.setdefault(name, value)
    return requests, limits


def pod_qos_class(pod: Pod, *, pod_level_resources: bool = True) -> QOSClass:
    """The pod's QoS class, computed (``status.qosClass`` is ignored), as upstream ``ComputePodQOS``.

    With ``pod_level_resources`` (the feature gate) and ``spec.resources`` present, the pod-level
    requirements decide alone. Otherwise every container and init container is classified on cpu and
    memory: all BestEffort -> BestEffort, all Guaranteed -> Guaranteed, anything else -> Burstable.
    """
    if pod_level_resources and _spec(pod).get("resources") is not None:
        return _resource_qos(*_defaulted_pod_level(pod))
    containers: Iterable[Mapping[str, Any]] = (
        *_containers(pod, "initContainers"),
        *_containers(pod, "containers"),
    )
    qos: QOSClass | None = None
    for container in containers:
        limits = _resources(container, "limits") or {}
        container_qos = _resource_qos(_defaulted_requests(container, None, False) or {}, limits)
        if container_qos is QOSClass.BURSTABLE:
            return container_qos
        if qos is None:
            qos = container_qos
        elif qos is not container_qos:
            return QOSClass.BURSTABLE
    return qos or QOSClass.BEST_EFFORT
