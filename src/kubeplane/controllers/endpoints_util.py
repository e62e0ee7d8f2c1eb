"""What the Endpoints, EndpointSlice and EndpointSlice-mirroring controllers share (upstream
``staging/src/k8s.io/endpointslice/util`` and ``utils.go``, and ``pkg/api/v1/endpoints``).

* Which pods belong in endpoints (:func:`should_pod_be_in_endpoints`: not terminal, with an IP, terminating only
  when asked), which Services select a pod (:func:`services_for_pod`, :func:`services_to_update_on_pod_change`),
  and the container port a Service port targets (:func:`find_port`: a number as is, a name looked up among the
  containers' and sidecars' named ports of the same protocol).
* :class:`TriggerTimeTracker`: the ``endpoints.kubernetes.io/last-change-trigger-time`` annotation, the earliest
  change (a pod's Ready transition, or the Service's creation) not yet reflected in the endpoints.
* Endpoint identity (:func:`endpoint_key`: addresses, hostname and target pod, as upstream's endpoint hash) and
  :func:`endpoints_equal_beyond_hash` (what else may change: node, zone, conditions, target reference).
* :class:`GenerationTracker`: upstream's ``EndpointSliceTracker``. A controller records the generation of every
  slice it wrote; a sync that finds an older generation (or a slice it deleted) in its informer's cache knows the
  cache lags and retries later rather than act on stale state (duplicate slices).

A Service "has a selector" when ``spec.selector`` is a non-empty map: upstream tests the Go map for nil, and an
empty map never survives storage (protobuf drops it), so ``{}`` reads as no selector there too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from kubeplane.api import labels as apilabels
from kubeplane.api.views import (
    PodView,
    is_pod_terminal,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeplane.client.cache import Lister
from kubeplane.controllers.podutil import get_pod_ready_condition, is_pod_ready, parse_timestamp

__all__ = [
    "ANNOTATION_LAST_CHANGE_TRIGGER_TIME",
    "ANNOTATION_OVER_CAPACITY",
    "LABEL_HEADLESS",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "GenerationTracker",
    "TriggerTimeTracker",
    "endpoint_key",
    "endpoints_equal_beyond_hash",
    "find_port",
    "has_selector",
    "is_service_ip_set",
    "pod_ips",
    "services_for_pod",
    "services_to_update_on_pod_change",
    "should_pod_be_in_endpoints",
    "should_set_hostname",
]

LABEL_SERVICE_NAME: Final = "kubernetes.io/service-name"
LABEL_MANAGED_BY: Final = "endpointslice.kubernetes.io/managed-by"
LABEL_SKIP_MIRROR: Final = "endpointslice.kubernetes.io/skip-mirror"
LABEL_HEADLESS: Final = "service.kubernetes.io/headless"
ANNOTATION_LAST_CHANGE_TRIGGER_TIME: Final = "endpoints.kubernetes.io/last-change-trigger-time"
ANNOTATION_OVER_CAPACITY: Final = "endpoints.kubernetes.io/over-capacity"
ANNOTATION_LEADER: Final = "control-plane.alpha.kubernetes.io/leader"
ANNOTATION_LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


# --- Services and pods ---------------------------------------------------------------------------------------


def has_selector(service: Mapping[str, Any]) -> bool:
    selector = spec_of(service).get("selector")
    return isinstance(selector, Mapping) and bool(selector)


def is_service_ip_set(service: Mapping[str, Any]) -> bool:
    """Upstream ``IsServiceIPSet``: a ClusterIP that is neither empty nor ``None``."""
    cluster_ip = spec_of(service).get("clusterIP") or ""
    return cluster_ip not in ("", "None")


def pod_ips(pod: Mapping[str, Any]) -> list[str]:
    """``status.podIPs`` (``status.podIP`` when the list is absent)."""
    status = status_of(pod)
    ips = [str(p.get("ip")) for p in status.get("podIPs") or [] if isinstance(p, Mapping) and p.get("ip")]
    if not ips and status.get("podIP"):
        ips = [str(status["podIP"])]
    return ips


def is_ipv6(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 6
    except ValueError:
        return False


def should_pod_be_in_endpoints(pod: Mapping[str, Any], include_terminating: bool) -> bool:
    """Upstream ``ShouldPodBeInEndpoints``: not terminal, has an IP, and not terminating unless asked."""
    if is_pod_terminal(pod) or not pod_ips(pod):
        return False
    return include_terminating or not meta_of(pod).get("deletionTimestamp")


def should_set_hostname(pod: Mapping[str, Any], service: Mapping[str, Any]) -> bool:
    """Upstream ``ShouldSetHostname``: the pod names a hostname and this Service as its subdomain."""
    spec = spec_of(pod)
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == name_of(service)
        and namespace_of(service) == namespace_of(pod)
    )


def find_port(pod: Mapping[str, Any], service_port: Mapping[str, Any]) -> int | None:
    """Upstream ``FindPort``: a numeric ``targetPort`` as is (``port`` when unset, as defaulting does), a name
    looked up among the containers' (and restartable init containers') ports of the same protocol; None when
    no container offers it."""
    target = service_port.get("targetPort")
    if target is None or target in {0, ""}:
        target = service_port.get("port")
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if not isinstance(target, str):
        return None
    protocol = service_port.get("protocol") or "TCP"
    view = PodView(pod)
    sidecars = [c for c in view.init_containers if c.get("restartPolicy") == "Always"]
    for container in [*view.containers, *sidecars]:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                number = port.get("containerPort")
                return int(number) if isinstance(number, int) else None
    return None


def _selector_matches(service: Mapping[str, Any], pod_labels: Mapping[str, str]) -> bool:
    selector = spec_of(service).get("selector")
    if not isinstance(selector, Mapping) or not selector:
        return False  # a nil selector matches nothing, not everything
    return apilabels.selector_from_set({str(k): str(v) for k, v in selector.items()}).matches(pod_labels)


def services_for_pod(services: Lister, namespace: str, pod_labels: Mapping[str, str]) -> set[str]:
    """Upstream ``getServicesForPod``: keys of the Services in ``namespace`` whose selector matches."""
    return {f"{namespace}/{name_of(svc)}" for svc in services.list(namespace) if _selector_matches(svc, pod_labels)}


def pod_endpoints_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[bool, bool]:
    """Upstream ``podEndpointsChanged``: (the pod changed in a way endpoints show, its labels or
    hostname/subdomain changed)."""
    old_spec, new_spec = spec_of(old), spec_of(new)
    labels_changed = (
        dict(labels_of(old)) != dict(labels_of(new))
        or old_spec.get("hostname") != new_spec.get("hostname")
        or old_spec.get("subdomain") != new_spec.get("subdomain")
    )
    changed = (
        meta_of(old).get("deletionTimestamp") != meta_of(new).get("deletionTimestamp")
        or is_pod_ready(old) != is_pod_ready(new)
        or pod_ips(old) != pod_ips(new)
    )
    return changed, labels_changed


def services_to_update_on_pod_change(services: Lister, old: Mapping[str, Any], new: Mapping[str, Any]) -> set[str]:
    """Upstream ``GetServicesToUpdateOnPodChange``: nothing for a resync; the pod's Services when it changed;
    when only its labels changed, the Services it joined or left; when both, all of them."""
    if meta_of(old).get("resourceVersion") == meta_of(new).get("resourceVersion"):
        return set()
    changed, labels_changed = pod_endpoints_changed(old, new)
    if not changed and not labels_changed:
        return set()
    namespace = namespace_of(new)
    now = services_for_pod(services, namespace, labels_of(new))
    if not labels_changed:
        return now
    before = services_for_pod(services, namespace, labels_of(old))
    return now | before if changed else now ^ before


# --- the trigger time ----------------------------------------------------------------------------------------


def format_rfc3339_nano(t: float) -> str:
    """Go's ``time.RFC3339Nano`` in UTC: fractional seconds only when non-zero, trailing zeros trimmed."""
    dt = datetime.fromtimestamp(t, tz=UTC)
    base = dt.strftime("%Y-%m-%dT%H:%M:%S")
    frac = f"{dt.microsecond:06d}".rstrip("0")
    return f"{base}.{frac}Z" if frac else f"{base}Z"


class TriggerTimeTracker:
    """Upstream ``TriggerTimeTracker``: per Service, the pods' last Ready transition times and the Service's
    creation time seen at the previous sync. A sync's trigger time is the earliest of those that moved since
    (None when none did); a Service synced for the first time reports its creation time."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[dict[str, float], float | None]] = {}

    def compute(self, namespace: str, service: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> float | None:
        key = f"{namespace}/{name_of(service)}"
        state = self._states.get(key)
        last_pods, last_service = state if state is not None else ({}, None)
        earliest: float | None = None
        pod_times: dict[str, float] = {}
        for pod in pods:
            condition = get_pod_ready_condition(pod)
            when = parse_timestamp(condition.get("lastTransitionTime")) if condition is not None else None
            if when is None:
                continue
            pod_times[name_of(pod)] = when
            if when > last_pods.get(name_of(pod), float("-inf")):
                earliest = when if earliest is None else min(earliest, when)
        service_time = parse_timestamp(meta_of(service).get("creationTimestamp"))
        if service_time is not None and (last_service is None or service_time > last_service):
            earliest = service_time if earliest is None else min(earliest, service_time)
        self._states[key] = (pod_times, service_time)
        if state is None:
            return service_time
        return earliest

    def delete_service(self, namespace: str, name: str) -> None:
        self._states.pop(f"{namespace}/{name}", None)


# --- endpoint identity ---------------------------------------------------------------------------------------


def endpoint_key(endpoint: Mapping[str, Any]) -> tuple[Any, ...]:
    """Upstream ``hashEndpoint``: sorted addresses, hostname, and the target's namespace and name."""
    ref = endpoint.get("targetRef") or {}
    return (
        tuple(sorted(str(a) for a in endpoint.get("addresses") or [])),
        endpoint.get("hostname") or "",
        ref.get("namespace") or "",
        ref.get("name") or "",
    )


def _ref_without_rv(ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if ref is None else {k: v for k, v in ref.items() if k != "resourceVersion"}


def endpoints_equal_beyond_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Upstream ``EndpointsEqualBeyondHash``: node, zone, the three conditions and the target reference (its
    resourceVersion ignored) agree."""
    if a.get("nodeName") != b.get("nodeName") or a.get("zone") != b.get("zone"):
        return False
    ca, cb = a.get("conditions") or {}, b.get("conditions") or {}
    if any(ca.get(k) != cb.get(k) for k in ("ready", "serving", "terminating")):
        return False
    return _ref_without_rv(a.get("targetRef")) == _ref_without_rv(b.get("targetRef"))


def port_map_key(ports: Iterable[Mapping[str, Any]]) -> bytes:
    """Upstream ``NewPortMapKey``: one key per set of ports, whatever their order."""
    return b"\n".join(sorted(orjson.dumps(dict(p), option=orjson.OPT_SORT_KEYS) for p in ports))


# --- the slice tracker ---------------------------------------------------------------------------------------

_DELETION_EXPECTED: Final = -1


class GenerationTracker:
    """Upstream ``EndpointSliceTracker``: for each owner key, the generation of every slice (by uid) this
    controller last wrote, or :data:`_DELETION_EXPECTED` for one it deleted."""

    def __init__(self) -> None:
        self._by_owner: dict[str, dict[str, int]] = {}

    @staticmethod
    def _owner(slice_: Mapping[str, Any]) -> str:
        return f"{namespace_of(slice_)}/{labels_of(slice_).get(LABEL_SERVICE_NAME, '')}"

    def has(self, slice_: Mapping[str, Any]) -> bool:
        return uid_of(slice_) in self._by_owner.get(self._owner(slice_), {})

    def should_sync(self, slice_: Mapping[str, Any]) -> bool:
        """True unless this is a generation the controller wrote itself (or older)."""
        known = self._by_owner.get(self._owner(slice_), {}).get(uid_of(slice_))
        return known is None or int(meta_of(slice_).get("generation") or 0) > known

    def stale(self, owner_key: str, slices: Iterable[Mapping[str, Any]]) -> bool:
        """Upstream ``StaleSlices``: the cache holds an older generation or a slice we deleted, or misses one
        we wrote."""
        known = self._by_owner.get(owner_key)
        if not known:
            return False
        seen: set[str] = set()
        for slice_ in slices:
            uid = uid_of(slice_)
            seen.add(uid)
            expected = known.get(uid)
            if expected is not None and (
                expected == _DELETION_EXPECTED or expected > int(meta_of(slice_).get("generation") or 0)
            ):
                return True
        return any(g != _DELETION_EXPECTED and uid not in seen for uid, g in known.items())

    def update(self, slice_: Mapping[str, Any]) -> None:
        self._by_owner.setdefault(self._owner(slice_), {})[uid_of(slice_)] = int(meta_of(slice_).get("generation") or 0)

    def expect_deletion(self, slice_: Mapping[str, Any]) -> None:
        self._by_owner.setdefault(self._owner(slice_), {})[uid_of(slice_)] = _DELETION_EXPECTED

    def handle_deletion(self, slice_: Mapping[str, Any]) -> bool:
        """Forget a deleted slice; True when the deletion was expected."""
        known = self._by_owner.get(self._owner(slice_), {})
        return known.pop(uid_of(slice_), None) == _DELETION_EXPECTED

    def delete_service(self, namespace: str, name: str) -> None:
        self._by_owner.pop(f"{namespace}/{name}", None)
