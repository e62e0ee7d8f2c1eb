"""The Endpoints controller: one core/v1 Endpoints object per Service with a selector (upstream
``pkg/controller/endpoint/endpoints_controller.go``).

For a Service (not ``ExternalName``, with a selector) it lists the selected pods and, for each pod that belongs in
endpoints (not terminal, with an IP, not terminating), builds one address -- the pod IP of the Service's first IP
family, ``nodeName``, ``targetRef`` to the pod, ``hostname`` when the pod names this Service as its subdomain --
per Service port whose ``targetPort`` the pod offers (:func:`~.endpoints_util.find_port`). Ready pods, or any
pod when ``publishNotReadyAddresses``, go to ``addresses``; the others to ``notReadyAddresses``. A headless
Service without ports gets the addresses without ports. The subsets are then repacked to the canonical form.

The Endpoints object carries the Service's labels (plus ``service.kubernetes.io/headless`` for a Service without
a ClusterIP), the ``endpoints.kubernetes.io/last-change-trigger-time`` annotation (RFC 3339, from
:class:`~.endpoints_util.TriggerTimeTracker`), and ``endpoints.kubernetes.io/over-capacity: truncated`` when more
than 1000 addresses had to be cut. It is written only when the subsets, labels or the capacity annotation differ
(target resourceVersions ignored). A deleted Service's Endpoints object is deleted; at start every existing
Endpoints object is queued once, so orphans left while the controller was down go too (those carrying a
leader-election annotation are left alone).

Staleness: after an update the controller remembers the resourceVersion it replaced; finding that version again
in its cache means the cache lags, and the sync is retried (upstream ``staleEndpointsTracker``).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import annotations_of, labels_of, meta_of, spec_of, uid_of
from kubeplane.client.errors import ForbiddenError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.controllers.controller_utils import with_type_meta
from kubeplane.controllers.endpoints_events import ServicePodEvents
from kubeplane.controllers.endpoints_subsets import MAX_CAPACITY, repack_subsets, total_addresses, truncate
from kubeplane.controllers.endpoints_util import (
    ANNOTATION_LAST_CHANGE_TRIGGER_TIME,
    ANNOTATION_LEADER,
    ANNOTATION_OVER_CAPACITY,
    LABEL_HEADLESS,
    TriggerTimeTracker,
    find_port,
    format_rfc3339_nano,
    has_selector,
    is_ipv6,
    is_service_ip_set,
    pod_ips,
    should_pod_be_in_endpoints,
    should_set_hostname,
)
from kubeplane.controllers.podutil import is_pod_ready

__all__ = ["EndpointsController", "desired_subsets", "endpoint_address_for_service", "namespace_terminating"]

log = logging.getLogger("kubeplane.controllers.endpoints")

_COMPONENT: Final = "endpoint-controller"


def endpoint_address_for_service(service: Mapping[str, Any], pod: Mapping[str, Any]) -> Obj | None:
    """Upstream ``podToEndpointAddressForService``: the pod IP of the Service's IP family (its first
    ``ipFamilies`` entry, else its ClusterIP's family, else -- headless -- the pod IP's own), or None."""
    spec = spec_of(service)
    families = spec.get("ipFamilies") or []
    if families:
        want_v6 = families[0] == "IPv6"
    elif is_service_ip_set(service):
        want_v6 = is_ipv6(str(spec.get("clusterIP")))
    else:
        want_v6 = is_ipv6(str((pod.get("status") or {}).get("podIP") or ""))
    ip = next((ip for ip in pod_ips(pod) if is_ipv6(ip) == want_v6), None)
    if ip is None:
        return None
    meta = meta_of(pod)
    address: Obj = {"ip": ip, "nodeName": str(spec_of(pod).get("nodeName") or "")}
    if should_set_hostname(pod, service):
        address["hostname"] = spec_of(pod)["hostname"]
    address["targetRef"] = {
        "kind": "Pod",
        "namespace": str(meta.get("namespace") or ""),
        "name": str(meta.get("name") or ""),
        "uid": uid_of(pod),
    }
    return address


def desired_subsets(service: Mapping[str, Any], pods: list[Obj]) -> list[Obj]:
    """The repacked subsets for ``service`` over the pods its selector picks."""
    spec = spec_of(service)
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    subsets: list[Obj] = []
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, publish_not_ready):
            continue
        address = endpoint_address_for_service(service, pod)
        if address is None:
            continue
        ready = publish_not_ready or is_pod_ready(pod)
        which = "addresses" if ready else "notReadyAddresses"
        ports = spec.get("ports") or []
        if not ports:
            if spec.get("clusterIP") == "None":  # a headless Service may have no ports
                subsets.append({which: [address]})
            continue
        for service_port in ports:
            number = find_port(pod, service_port)
            if number is None:
                continue
            port: Obj = {"name": service_port.get("name") or "", "port": number}
            port["protocol"] = service_port.get("protocol") or "TCP"
            if service_port.get("appProtocol") is not None:
                port["appProtocol"] = service_port["appProtocol"]
            subsets.append({which: [address], "ports": [port]})
    return repack_subsets(subsets)


def _strip_target_rv(subsets: list[Any]) -> list[Any]:
    """Subsets with every targetRef's resourceVersion dropped and empty port names normalised (Go's zero)."""
    out = copy.deepcopy(subsets)
    for subset in out:
        for key in ("addresses", "notReadyAddresses"):
            for address in subset.get(key) or []:
                if isinstance(address.get("targetRef"), dict):
                    address["targetRef"].pop("resourceVersion", None)
        for port in subset.get("ports") or []:
            port.setdefault("name", "")
        for key in ("addresses", "notReadyAddresses", "ports"):
            if not subset.get(key):
                subset.pop(key, None)
    return out


class EndpointsController(Controller):
    """See the module docstring. Five workers (upstream ``--concurrent-endpoint-syncs``)."""

    name: ClassVar[str] = "endpoint"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.services = ctx.informers.informer_for("services")
        self.pods = ctx.informers.informer_for("pods")
        self.endpoints = ctx.informers.informer_for("endpoints")
        self.endpoints_resource = ctx.client.resource("endpoints")
        self.recorder = ctx.recorder(_COMPONENT)
        self.trigger_times = TriggerTimeTracker()
        self._stale: dict[str, str] = {}  # key -> a resourceVersion already replaced
        self._checked_leftovers = False
        self.services.add_event_handler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new), on_delete=self.enqueue
        )
        ServicePodEvents(self.services, self.enqueue_key).attach(self.pods)
        self.endpoints.add_event_handler(on_delete=self.enqueue)

    async def run(self, workers: int | None = None) -> None:
        if not self._checked_leftovers:  # upstream checkLeftoverEndpoints, once at start
            self._checked_leftovers = True
            for ep in self.endpoints.lister().list():
                if ANNOTATION_LEADER not in annotations_of(ep):
                    self.enqueue(ep)
        await super().run(workers)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.lister().get(namespace, name)
        if service is None:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(self.endpoints_resource, name, namespace=namespace)
            self.trigger_times.delete_service(namespace, name)
            self._stale.pop(key, None)
            return
        spec = spec_of(service)
        if spec.get("type") == "ExternalName" or not has_selector(service):
            return  # no endpoints from this controller: out-of-band Endpoints stay the user's
        selector = apilabels.selector_from_set({str(k): str(v) for k, v in spec["selector"].items()})
        pods = self.pods.lister().list(namespace, selector)
        trigger_time = self.trigger_times.compute(namespace, service, pods)
        subsets = desired_subsets(service, pods)

        current = self.endpoints.lister().get(namespace, name)
        if current is not None and self._stale.get(key) == meta_of(current).get("resourceVersion"):
            raise RuntimeError(
                f"endpoints informer cache is out of date, resource version "
                f"{meta_of(current).get('resourceVersion')} already processed for endpoints {key}"
            )
        create = current is None
        service_labels = dict(labels_of(service))
        if current is not None:
            compare_labels = {k: v for k, v in labels_of(current).items() if k != LABEL_HEADLESS}
            annotations = annotations_of(current)
            capacity_ok = total_addresses(current.get("subsets") or []) <= MAX_CAPACITY and (
                ANNOTATION_OVER_CAPACITY not in annotations
            )
            if (
                _strip_target_rv(current.get("subsets") or []) == _strip_target_rv(subsets)
                and compare_labels == service_labels
                and capacity_ok
            ):
                return
        new: Obj = copy.deepcopy(current) if current is not None else {"metadata": {"name": name}}
        meta: Obj = new["metadata"]
        new["subsets"] = subsets
        annotations_new = dict(meta.get("annotations") or {})
        if trigger_time is not None:
            annotations_new[ANNOTATION_LAST_CHANGE_TRIGGER_TIME] = format_rfc3339_nano(trigger_time)
        else:
            annotations_new.pop(ANNOTATION_LAST_CHANGE_TRIGGER_TIME, None)
        if truncate(subsets):
            annotations_new[ANNOTATION_OVER_CAPACITY] = "truncated"
        else:
            annotations_new.pop(ANNOTATION_OVER_CAPACITY, None)
        meta["annotations"] = annotations_new
        new_labels = dict(service_labels)
        if not is_service_ip_set(service):
            new_labels[LABEL_HEADLESS] = ""
        meta["labels"] = new_labels
        if not new["subsets"]:
            new.pop("subsets")
        try:
            if create:
                await self.client.create(self.endpoints_resource, new, namespace=namespace)
            else:
                updated = await self.client.update(self.endpoints_resource, new, namespace=namespace)
                old_rv = meta_of(current or {}).get("resourceVersion")
                if meta_of(updated).get("resourceVersion") != old_rv:
                    self._stale[key] = str(old_rv)
        except Exception as exc:
            if namespace_terminating(exc):
                return
            typed = with_type_meta(new, "v1", "Endpoints")
            if create:
                msg = f"Failed to create endpoint for service {namespace}/{name}: {exc}"
                await self.recorder.event(typed, EVENT_TYPE_WARNING, "FailedToCreateEndpoint", msg)
            else:
                msg = f"Failed to update endpoint {namespace}/{name}: {exc}"
                await self.recorder.event(typed, EVENT_TYPE_WARNING, "FailedToUpdateEndpoint", msg)
            raise


def namespace_terminating(exc: Exception) -> bool:
    """Upstream drops the key when a create is refused because the namespace is terminating (its
    ``NamespaceTerminatingCause``; kubeplane's Forbidden carries the message, not the cause)."""
    return isinstance(exc, ForbiddenError) and "because it is being terminated" in exc.message
