"""The EndpointSlice reconciler: a Service's desired endpoints against its existing slices (upstream
``staging/src/k8s.io/endpointslice``: ``reconciler.go`` and ``utils.go``).

Per address type the Service supports (its ``ipFamilies``; without them its ClusterIP's family; a headless
Service without them gets both), pods that belong in endpoints (terminating ones included) become endpoints --
the pod's IPs of that family, ``conditions`` (``serving`` = Ready, ``terminating`` = being deleted, ``ready`` =
serving and not terminating, or always with ``publishNotReadyAddresses``), ``nodeName``, the node's zone,
``hostname`` when the pod names the Service as subdomain, ``targetRef`` -- grouped by the ports they resolve to
(:func:`endpoint_ports`). Each group is reconciled as upstream's ``reconcileByPortMapping``:

1. existing slices keep the endpoints still desired (updated in place when node, zone, conditions or target
   changed), are deleted when none is left, and take the Service's labels;
2. slices already being updated are filled up to ``max_endpoints_per_slice`` (100) with new endpoints, fullest
   first;
3. the remaining endpoints go to the unchanged slice that ends closest to full, else to new slices named
   ``<service>-`` + 5 random characters (``generateName``).

Slices of port groups no longer desired and slices not owned by the Service are deleted; a Service without
endpoints keeps one empty placeholder slice; creates are recycled into updates of slices about to be deleted;
nothing is created while the Service is being deleted. Every slice carries ``kubernetes.io/service-name``,
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``, the Service's other labels,
``service.kubernetes.io/headless`` for a Service without ClusterIP, a controller reference to the Service and
the last-change-trigger-time annotation.

Departures: endpoints are placed in the order pods were listed rather than Go's random map order; topology hints
and ``trafficDistribution`` are not computed (no slice written here carries hints).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.validation import names
from kubeplane.api.validation.field import aggregate_text
from kubeplane.api.views import (
    is_being_deleted,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    uid_of,
)
from kubeplane.client.cache import Lister
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client, Obj
from kubeplane.controllers.endpoints import namespace_terminating
from kubeplane.controllers.endpoints_util import (
    ANNOTATION_LAST_CHANGE_TRIGGER_TIME,
    LABEL_HEADLESS,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    GenerationTracker,
    endpoint_key,
    endpoints_equal_beyond_hash,
    find_port,
    format_rfc3339_nano,
    is_ipv6,
    is_service_ip_set,
    pod_ips,
    port_map_key,
    should_pod_be_in_endpoints,
    should_set_hostname,
)
from kubeplane.controllers.podutil import is_pod_ready

__all__ = [
    "CONTROLLER_NAME",
    "MAX_ENDPOINTS_PER_SLICE",
    "Reconciler",
    "address_types_for_service",
    "endpoint_ports",
    "pod_to_endpoint",
]

log = logging.getLogger("kubeplane.controllers.endpointslice")

CONTROLLER_NAME: Final = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE: Final = 100
"""Upstream ``--max-endpoints-per-slice`` default."""
LABEL_ZONE: Final = "topology.kubernetes.io/zone"
_RESERVED_LABELS: Final = frozenset({LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS})


def address_types_for_service(service: Mapping[str, Any]) -> list[str]:
    """Upstream ``getAddressTypesForService``."""
    spec = spec_of(service)
    found = [{"IPv4": "IPv4", "IPv6": "IPv6"}[f] for f in spec.get("ipFamilies") or [] if f in ("IPv4", "IPv6")]
    if found:
        return list(dict.fromkeys(found))
    if is_service_ip_set(service):
        return ["IPv6" if is_ipv6(str(spec.get("clusterIP"))) else "IPv4"]
    return ["IPv4", "IPv6"]  # headless without families: both, until the API server defaults them


def endpoint_ports(service: Mapping[str, Any], pod: Mapping[str, Any]) -> list[Obj]:
    """Upstream ``getEndpointPorts``: each Service port the pod offers, with the pod's port number."""
    spec = spec_of(service)
    out: list[Obj] = []
    for service_port in spec.get("ports") or []:
        number = find_port(pod, service_port)
        if number is None:
            continue
        port: Obj = {"name": service_port.get("name") or "", "protocol": service_port.get("protocol") or "TCP"}
        port["port"] = number
        if service_port.get("appProtocol") is not None:
            port["appProtocol"] = service_port["appProtocol"]
        out.append(port)
    return out


def pod_to_endpoint(
    pod: Mapping[str, Any], node: Mapping[str, Any] | None, service: Mapping[str, Any], address_type: str
) -> Obj:
    """Upstream ``podToEndpoint``."""
    serving = is_pod_ready(pod)
    terminating = bool(meta_of(pod).get("deletionTimestamp"))
    ready = bool(spec_of(service).get("publishNotReadyAddresses")) or (serving and not terminating)
    addresses = [ip for ip in pod_ips(pod) if is_ipv6(ip) == (address_type == "IPv6")]
    endpoint: Obj = {
        "addresses": addresses,
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
    }
    if should_set_hostname(pod, service):
        endpoint["hostname"] = spec_of(pod)["hostname"]
    endpoint["targetRef"] = {
        "kind": "Pod",
        "namespace": namespace_of(pod),
        "name": name_of(pod),
        "uid": uid_of(pod),
    }
    node_name = spec_of(pod).get("nodeName")
    if node_name:
        endpoint["nodeName"] = node_name
    zone = labels_of(node).get(LABEL_ZONE) if node is not None else None
    if zone:
        endpoint["zone"] = zone
    return endpoint


def slice_prefix(name: str) -> str:
    """Upstream ``getEndpointSlicePrefix``: ``<name>-`` unless that is not a valid generateName prefix."""
    prefix = f"{name}-"
    masked = prefix[:-1] + "a"  # apimachinery's maskTrailingDash: a prefix may end in a dash
    return name if names.is_dns1123_subdomain(masked) else prefix


def set_slice_labels(slice_: Mapping[str, Any], service: Mapping[str, Any], controller: str) -> tuple[Obj, bool]:
    """Upstream ``setEndpointSliceLabels``: the Service's labels (reserved keys excepted) plus the reserved ones;
    True when the non-reserved labels differ from the slice's."""
    current = {k: v for k, v in labels_of(slice_).items() if k not in _RESERVED_LABELS}
    wanted = {k: v for k, v in labels_of(service).items() if k not in _RESERVED_LABELS}
    changed = current != wanted
    if not is_service_ip_set(service):
        wanted[LABEL_HEADLESS] = ""
    wanted[LABEL_SERVICE_NAME] = name_of(service)
    wanted[LABEL_MANAGED_BY] = controller
    return wanted, changed


def new_endpoint_slice(service: Mapping[str, Any], ports: list[Obj], address_type: str, controller: str) -> Obj:
    """Upstream ``newEndpointSlice``: named by the API server from ``<service>-``, owned by the Service."""
    owner = {
        "apiVersion": "v1",
        "kind": "Service",
        "name": name_of(service),
        "uid": uid_of(service),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    slice_: Obj = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": slice_prefix(name_of(service)),
            "namespace": namespace_of(service),
            "labels": {},
            "ownerReferences": [owner],
        },
        "addressType": address_type,
        "endpoints": [],
        "ports": ports,
    }
    slice_["metadata"]["labels"], _ = set_slice_labels(slice_, service, controller)
    return slice_


def owned_by(slice_: Mapping[str, Any], service: Mapping[str, Any]) -> bool:
    return any(
        o.get("uid") == uid_of(service) and o.get("kind") == "Service" and o.get("apiVersion") == "v1"
        for o in meta_of(slice_).get("ownerReferences") or []
    )


def _slice_to_fill(slices: Sequence[Obj], wanted: int, maximum: int) -> Obj | None:
    """Upstream ``getSliceToFill``: the slice that ends closest to full after taking ``wanted`` endpoints."""
    closest_diff, closest = maximum, None
    for slice_ in slices:
        diff = maximum - (wanted + len(slice_.get("endpoints") or []))
        if 0 <= diff < closest_diff:
            closest_diff, closest = diff, slice_
            if diff == 0:
                break
    return closest


def _is_placeholder_of(existing: Mapping[str, Any], placeholder: Mapping[str, Any]) -> bool:
    """Upstream ``placeholderSliceCompare``: the same namespace, labels and content (nil and empty alike)."""
    return (
        namespace_of(existing) == namespace_of(placeholder)
        and dict(labels_of(existing)) == dict(labels_of(placeholder))
        and existing.get("addressType") == placeholder.get("addressType")
        and not existing.get("endpoints")
        and not existing.get("ports")
    )


@dataclass
class Changes:
    create: list[Obj] = field(default_factory=list)
    update: list[Obj] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)


class Reconciler:
    """Upstream ``Reconciler``; writes through ``client`` and records what it wrote in ``tracker``."""

    def __init__(
        self,
        client: Client,
        nodes: Lister,
        tracker: GenerationTracker,
        *,
        max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
        controller_name: str = CONTROLLER_NAME,
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.tracker = tracker
        self.max_per_slice = max_endpoints_per_slice
        self.controller_name = controller_name
        self.resource = client.resource("endpointslices")

    async def reconcile(
        self, service: Obj, pods: Sequence[Obj], existing: Sequence[Obj], trigger_time: float | None
    ) -> None:
        """Make ``existing`` (this controller's slices for ``service``) agree with ``pods``; raises an aggregate
        of the errors met (a pod on a missing node, a failed write) after doing all it could."""
        errors: list[str] = []
        supported = address_types_for_service(service)
        by_type: dict[str, list[Obj]] = {t: [] for t in supported}
        unsupported: list[Obj] = []
        for slice_ in existing:
            (by_type[slice_["addressType"]] if slice_.get("addressType") in by_type else unsupported).append(slice_)
        for address_type in supported:
            try:
                await self._reconcile_by_address_type(
                    service, pods, by_type[address_type], trigger_time, address_type, errors
                )
            except Exception as exc:
                errors.append(str(exc))
        for slice_ in unsupported:
            try:
                await self._delete(service, slice_)
            except Exception as exc:
                errors.append(
                    f"error deleting {name_of(slice_)} EndpointSlice for Service "
                    f"{namespace_of(service)}/{name_of(service)}: {exc}"
                )
        if errors:
            raise RuntimeError(aggregate_text(errors))  # utilerrors.NewAggregate

    async def _delete(self, service: Obj, slice_: Obj) -> None:
        try:
            await self.client.delete(self.resource, name_of(slice_), namespace=namespace_of(service))
        except NotFoundError:
            return
        self.tracker.expect_deletion(slice_)

    async def _reconcile_by_address_type(
        self,
        service: Obj,
        pods: Sequence[Obj],
        existing: list[Obj],
        trigger_time: float | None,
        address_type: str,
        errors: list[str],
    ) -> None:
        changes = Changes()
        existing_by_ports: dict[bytes, list[Obj]] = {}
        for slice_ in existing:
            if owned_by(slice_, service):
                existing_by_ports.setdefault(port_map_key(slice_.get("ports") or []), []).append(slice_)
            else:
                changes.delete.append(slice_)
        desired_ports: dict[bytes, list[Obj]] = {}
        desired: dict[bytes, dict[tuple[Any, ...], Obj]] = {}
        publish_not_ready = bool(spec_of(service).get("publishNotReadyAddresses"))
        for pod in pods:
            if not should_pod_be_in_endpoints(pod, True):
                continue
            ports = endpoint_ports(service, pod)
            key = port_map_key(ports)
            desired_ports.setdefault(key, ports)
            endpoints = desired.setdefault(key, {})
            node_name = str(spec_of(pod).get("nodeName") or "")
            node = self.nodes.get(None, node_name) if node_name else None
            if node is None and not publish_not_ready:
                errors.append(
                    f"skipping Pod {name_of(pod)} for Service {namespace_of(service)}/{name_of(service)}: "
                    f"Node {node_name} Not Found"
                )
                continue
            endpoint = pod_to_endpoint(pod, node, service, address_type)
            if endpoint["addresses"]:
                endpoints[endpoint_key(endpoint)] = endpoint
        for key, wanted in desired.items():
            self._reconcile_by_port_mapping(
                service, existing_by_ports.get(key, []), wanted, desired_ports[key], address_type, changes
            )
        for key, slices in existing_by_ports.items():
            if key not in desired:
                changes.delete.extend(slices)
        if len(existing) == len(changes.delete) and not changes.create:
            placeholder = new_endpoint_slice(service, [], address_type, self.controller_name)
            if len(changes.delete) == 1 and _is_placeholder_of(changes.delete[0], placeholder):
                changes.delete.clear()  # the placeholder is already there
            else:
                changes.create.append(placeholder)
        await self._finalize(service, changes, trigger_time)

    def _reconcile_by_port_mapping(
        self,
        service: Obj,
        existing: list[Obj],
        wanted: dict[tuple[Any, ...], Obj],
        ports: list[Obj],
        address_type: str,
        changes: Changes,
    ) -> None:
        """Upstream ``reconcileByPortMapping`` (steps 1-3 of the module docstring); consumes ``wanted``."""
        by_name: dict[str, Obj] = {}
        unchanged: list[str] = []
        to_update: list[str] = []
        for slice_ in existing:
            name = name_of(slice_)
            by_name[name] = slice_
            kept: list[Obj] = []
            endpoint_updated = False
            for endpoint in slice_.get("endpoints") or []:
                got = wanted.pop(endpoint_key(endpoint), None)
                if got is not None:
                    kept.append(got)
                    endpoint_updated |= not endpoints_equal_beyond_hash(got, endpoint)
            labels, labels_changed = set_slice_labels(slice_, service, self.controller_name)
            if endpoint_updated or len(kept) != len(slice_.get("endpoints") or []):
                if not kept:
                    changes.delete.append(slice_)
                    continue
                copied = copy.deepcopy(slice_)
                copied["endpoints"] = kept
                copied["metadata"]["labels"] = labels
                by_name[name] = copied
                to_update.append(name)
            elif labels_changed:
                copied = copy.deepcopy(slice_)
                copied["endpoints"] = list(slice_.get("endpoints") or [])
                copied["metadata"]["labels"] = labels
                by_name[name] = copied
                to_update.append(name)
            else:
                unchanged.append(name)
        remaining = list(wanted.values())
        if remaining and to_update:
            for name in sorted(to_update, key=lambda n: -len(by_name[n]["endpoints"])):
                slice_ = by_name[name]
                while remaining and len(slice_["endpoints"]) < self.max_per_slice:
                    slice_["endpoints"].append(remaining.pop(0))
        while remaining:
            target: Obj | None = None
            if len(remaining) < self.max_per_slice and unchanged:
                target = _slice_to_fill([by_name[n] for n in unchanged], len(remaining), self.max_per_slice)
            if target is None:
                target = new_endpoint_slice(service, ports, address_type, self.controller_name)
            else:
                target = copy.deepcopy(target)
                target["endpoints"] = list(target.get("endpoints") or [])
                by_name[name_of(target)] = target
            while remaining and len(target["endpoints"]) < self.max_per_slice:
                target["endpoints"].append(remaining.pop(0))
            if name_of(target):
                to_update.append(name_of(target))
                unchanged.remove(name_of(target))
            else:
                changes.create.append(target)
        changes.update.extend(by_name[n] for n in dict.fromkeys(to_update))

    async def _finalize(self, service: Obj, changes: Changes, trigger_time: float | None) -> None:
        """Upstream ``finalize``: recycle deletions into updates, then create, update, delete."""
        i = 0
        while i < len(changes.delete) and changes.create:
            doomed, fresh = changes.delete[i], changes.create[-1]
            if doomed.get("addressType") == fresh.get("addressType") and owned_by(doomed, service):
                fresh["metadata"]["name"] = name_of(doomed)
                fresh["metadata"].pop("generateName", None)
                fresh["metadata"]["resourceVersion"] = meta_of(doomed).get("resourceVersion")
                fresh["metadata"]["uid"] = uid_of(doomed)
                changes.create.pop()
                changes.update.append(fresh)
                changes.delete.pop(i)
            else:
                i += 1
        namespace, name = namespace_of(service), name_of(service)
        if not is_being_deleted(service):
            for slice_ in changes.create:
                _set_trigger_time(slice_, trigger_time)
                try:
                    created = await self.client.create(self.resource, slice_, namespace=namespace)
                except Exception as exc:
                    if namespace_terminating(exc):
                        return
                    raise RuntimeError(f"failed to create EndpointSlice for Service {namespace}/{name}: {exc}") from exc
                self.tracker.update(created)
        for slice_ in changes.update:
            _set_trigger_time(slice_, trigger_time)
            try:
                updated = await self.client.update(self.resource, slice_, namespace=namespace)
            except Exception as exc:
                raise RuntimeError(
                    f"failed to update {name_of(slice_)} EndpointSlice for Service {namespace}/{name}: {exc}"
                ) from exc
            self.tracker.update(updated)
        for slice_ in changes.delete:
            try:
                await self._delete(service, slice_)
            except Exception as exc:
                raise RuntimeError(
                    f"failed to delete {name_of(slice_)} EndpointSlice for Service {namespace}/{name}: {exc}"
                ) from exc


def _set_trigger_time(slice_: Obj, trigger_time: float | None) -> None:
    """Upstream ``addTriggerTimeAnnotation``."""
    annotations = dict(slice_["metadata"].get("annotations") or {})
    if trigger_time is not None:
        annotations[ANNOTATION_LAST_CHANGE_TRIGGER_TIME] = format_rfc3339_nano(trigger_time)
    else:
        annotations.pop(ANNOTATION_LAST_CHANGE_TRIGGER_TIME, None)
    slice_["metadata"]["annotations"] = annotations
