"""The EndpointSlice mirroring controller: EndpointSlices for custom Endpoints (upstream
``pkg/controller/endpointslicemirroring``).

An Endpoints object is mirrored when a Service of the same name exists *without* a selector (with one, the
EndpointSlice controller owns that Service's slices), the Endpoints carries no
``endpointslice.kubernetes.io/skip-mirror: "true"`` label and no leader-election annotation. Otherwise (or once
the Endpoints or the Service is gone) its mirrored slices are deleted.

Mirroring: every subset's addresses (ready ones with ``ready: true``, then not-ready ones with ``ready: false``,
at most ``maxEndpointsPerSubset`` = 1000 per subset) become endpoints of the slice for that subset's ports and the
address's family (IPv4/IPv6; an address that is not an IP is skipped with an ``InvalidIPAddress`` event, and
addresses over the limit with a ``TooManyAddressesToMirror`` event). Each (ports, family) group is one slice:
the first existing slice of the group is rewritten when its endpoints differ, the others deleted; a new one is
named ``<endpoints>-`` + 5 random characters. A slice carries the Endpoints' labels and annotations (except the
last-change-trigger-time and kubectl's last-applied annotations), ``kubernetes.io/service-name: <name>``,
``endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io`` and a controller reference
to the Endpoints object.

Events queue the Endpoints key: Endpoints changes (when mirrorable before or after), a Service appearing,
vanishing or switching between with and without a selector, and changes to this controller's slices that it did
not write itself (:class:`~.endpoints_util.GenerationTracker`), one second later as upstream.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import annotations_of, labels_of, meta_of, name_of, namespace_of, uid_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.events import EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.controllers.controller_utils import with_type_meta
from kubeplane.controllers.endpoints import namespace_terminating
from kubeplane.controllers.endpoints_events import ManagedSliceEvents
from kubeplane.controllers.endpoints_slice_reconciler import slice_prefix
from kubeplane.controllers.endpoints_util import (
    ANNOTATION_LAST_APPLIED,
    ANNOTATION_LAST_CHANGE_TRIGGER_TIME,
    ANNOTATION_LEADER,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    LABEL_SKIP_MIRROR,
    GenerationTracker,
    endpoint_key,
    endpoints_equal_beyond_hash,
    has_selector,
    port_map_key,
)

__all__ = ["MIRRORING_CONTROLLER_NAME", "EndpointSliceMirroringController", "address_to_endpoint", "should_mirror"]

log = logging.getLogger("kubeplane.controllers.endpointslicemirroring")

MIRRORING_CONTROLLER_NAME: Final = "endpointslicemirroring-controller.k8s.io"
MAX_ENDPOINTS_PER_SUBSET: Final = 1000
"""Upstream ``--mirroring-max-endpoints-per-subset`` default."""
_SYNC_DELAY: Final = 1.0
_COMPONENT: Final = "endpoint-slice-mirroring-controller"


def should_mirror(endpoints: Mapping[str, Any] | None) -> bool:
    """Upstream ``shouldMirror`` (the Service check is separate)."""
    if endpoints is None:
        return False
    return labels_of(endpoints).get(LABEL_SKIP_MIRROR) != "true" and ANNOTATION_LEADER not in annotations_of(endpoints)


def address_to_endpoint(address: Mapping[str, Any], ready: bool) -> tuple[Obj, str] | None:
    """Upstream ``addressToEndpoint``: the endpoint (IP re-formatted) and its address type, None for a non-IP."""
    try:
        ip = ipaddress.ip_address(str(address.get("ip") or ""))
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    endpoint: Obj = {"addresses": [str(ip)], "conditions": {"ready": ready}}
    if address.get("hostname"):
        endpoint["hostname"] = address["hostname"]
    if address.get("targetRef") is not None:
        endpoint["targetRef"] = address["targetRef"]
    if address.get("nodeName") is not None:
        endpoint["nodeName"] = address["nodeName"]
    return endpoint, "IPv4" if ip.version == 4 else "IPv6"


def _slice_ports(ports: Sequence[Mapping[str, Any]]) -> list[Obj]:
    """Upstream ``epPortsToEpsPorts``."""
    out: list[Obj] = []
    for port in ports:
        converted: Obj = {"name": port.get("name") or "", "protocol": port.get("protocol") or "TCP"}
        converted["port"] = port.get("port") or 0
        if port.get("appProtocol") is not None:
            converted["appProtocol"] = port["appProtocol"]
        out.append(converted)
    return out


def new_mirrored_slice(endpoints: Obj, ports: list[Obj], address_type: str, name: str) -> Obj:
    """Upstream ``newEndpointSlice`` of the mirroring controller."""
    labels = dict(labels_of(endpoints))
    labels[LABEL_SERVICE_NAME] = name_of(endpoints)
    labels[LABEL_MANAGED_BY] = MIRRORING_CONTROLLER_NAME
    annotations = {
        k: v
        for k, v in annotations_of(endpoints).items()
        if k not in (ANNOTATION_LAST_CHANGE_TRIGGER_TIME, ANNOTATION_LAST_APPLIED)
    }
    meta: Obj = {"namespace": namespace_of(endpoints), "labels": labels, "annotations": annotations}
    meta["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "name": name_of(endpoints),
            "uid": uid_of(endpoints),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = slice_prefix(name_of(endpoints))
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": meta,
        "addressType": address_type,
        "endpoints": [],
        "ports": ports,
    }


@dataclass(frozen=True, slots=True)
class _Desired:
    endpoints: dict[bytes, dict[tuple[Any, ...], Obj]]
    metas: dict[bytes, tuple[list[Obj], str]]
    invalid: int
    skipped: int


class EndpointSliceMirroringController(Controller):
    """See the module docstring. Five workers (upstream ``--mirroring-concurrent-service-endpoint-syncs``)."""

    name: ClassVar[str] = "endpointslicemirroring"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        informers = ctx.informers
        self.services = informers.informer_for("services")
        self.endpoints = informers.informer_for("endpoints")
        self.slices = informers.informer_for("endpointslices")
        self.resource = ctx.client.resource("endpointslices")
        self.recorder = ctx.recorder(_COMPONENT)
        self.tracker = GenerationTracker()
        self.max_per_subset = int(self.options.get("maxEndpointsPerSubset", MAX_ENDPOINTS_PER_SUBSET))
        self.services.add_event_handler(
            on_add=self._service_changed, on_update=self._service_updated, on_delete=self._service_changed
        )
        self.endpoints.add_event_handler(
            on_add=self._endpoints_changed, on_update=self._endpoints_updated, on_delete=self._endpoints_changed
        )
        ManagedSliceEvents(MIRRORING_CONTROLLER_NAME, self.tracker, self.enqueue_after, _SYNC_DELAY).attach(self.slices)

    # --- handlers ------------------------------------------------------------------------------------------

    def _service_changed(self, service: Obj) -> None:
        if not has_selector(service):
            self.enqueue(service)

    def _service_updated(self, old: Obj, new: Obj) -> None:
        if has_selector(old) != has_selector(new):
            self.enqueue(new)

    def _endpoints_changed(self, endpoints: Obj) -> None:
        if should_mirror(endpoints):
            self.enqueue(endpoints)

    def _endpoints_updated(self, old: Obj, new: Obj) -> None:
        if should_mirror(old) or should_mirror(new):
            self.enqueue(new)

    # --- sync ----------------------------------------------------------------------------------------------

    def _mirrored(self, namespace: str, name: str) -> list[Obj]:
        selector = apilabels.selector_from_set({LABEL_SERVICE_NAME: name, LABEL_MANAGED_BY: MIRRORING_CONTROLLER_NAME})
        return self.slices.lister().list(namespace, selector)

    async def _delete_mirrored(self, namespace: str, name: str) -> None:
        """Upstream ``deleteMirroredSlices``."""
        self.tracker.delete_service(namespace, name)
        for slice_ in self._mirrored(namespace, name):
            with contextlib.suppress(NotFoundError):
                await self.client.delete(self.resource, name_of(slice_), namespace=namespace)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        endpoints = self.endpoints.lister().get(namespace, name)
        service = self.services.lister().get(namespace, name)
        if endpoints is None or not should_mirror(endpoints) or service is None or has_selector(service):
            await self._delete_mirrored(namespace, name)
            return
        slices = self._mirrored(namespace, name)
        if self.tracker.stale(key, slices):
            raise RuntimeError("EndpointSlice informer cache is out of date")
        await self._reconcile(endpoints, slices)

    def _desired(self, endpoints: Obj) -> _Desired:
        """Upstream's ``desiredCalc``: endpoints by (address type, ports), and how many addresses were skipped."""
        by_key: dict[bytes, dict[tuple[Any, ...], Obj]] = {}
        meta_by_key: dict[bytes, tuple[list[Obj], str]] = {}
        invalid = skipped = 0
        for subset in endpoints.get("subsets") or []:
            ports = _slice_ports(subset.get("ports") or [])
            addresses = [(a, True) for a in subset.get("addresses") or []]
            addresses += [(a, False) for a in subset.get("notReadyAddresses") or []]
            added = 0
            for address, ready in addresses:
                if added >= self.max_per_subset:
                    break
                converted = address_to_endpoint(address, ready)
                if converted is None:
                    invalid += 1
                    continue
                endpoint, address_type = converted
                key = address_type.encode() + port_map_key(ports)
                meta_by_key.setdefault(key, (ports, address_type))
                by_key.setdefault(key, {}).setdefault(endpoint_key(endpoint), endpoint)
                added += 1
            skipped += len(addresses) - added
        return _Desired(by_key, meta_by_key, invalid, skipped)

    async def _reconcile(self, endpoints: Obj, existing: list[Obj]) -> None:
        """Upstream ``reconciler.reconcile`` and ``reconcileByPortMapping``."""
        calc = self._desired(endpoints)
        desired, metas = calc.endpoints, calc.metas
        typed = with_type_meta(endpoints, "v1", "Endpoints")
        if calc.invalid:
            msg = f"Skipped {calc.invalid} invalid IP addresses when mirroring to EndpointSlices"
            await self.recorder.event(typed, EVENT_TYPE_WARNING, "InvalidIPAddress", msg)
        if calc.skipped > calc.invalid:
            msg = (
                f"A max of {self.max_per_subset} addresses can be mirrored to EndpointSlices per Endpoints "
                f"subset. {calc.skipped} addresses were skipped"
            )
            await self.recorder.event(typed, EVENT_TYPE_WARNING, "TooManyAddressesToMirror", msg)
        existing_by_key: dict[bytes, list[Obj]] = {}
        for slice_ in existing:
            key = str(slice_.get("addressType") or "").encode() + port_map_key(slice_.get("ports") or [])
            existing_by_key.setdefault(key, []).append(slice_)
        create: list[Obj] = []
        update: list[Obj] = []
        delete: list[Obj] = []
        for key, wanted in desired.items():
            slices = existing_by_key.get(key, [])
            if not wanted:
                delete.extend(slices)
                continue
            delete.extend(slices[1:])
            ports, address_type = metas[key]
            fresh = new_mirrored_slice(endpoints, ports, address_type, name_of(slices[0]) if slices else "")
            if slices and _unchanged(slices[0], wanted, fresh):
                continue
            fresh["endpoints"] = list(wanted.values())[: self.max_per_subset]
            if slices:
                fresh["metadata"]["resourceVersion"] = meta_of(slices[0]).get("resourceVersion")
                update.append(fresh)
            else:
                create.append(fresh)
        for key, slices in existing_by_key.items():
            if key not in desired:
                delete.extend(slices)
        await self._finalize(endpoints, create, update, delete)

    async def _finalize(self, endpoints: Obj, create: list[Obj], update: list[Obj], delete: list[Obj]) -> None:
        """Upstream ``finalize`` with ``recycleSlices``: creates become updates of slices about to go."""
        while create and delete:
            doomed, fresh = delete.pop(), create.pop()
            fresh["metadata"].pop("generateName", None)
            fresh["metadata"]["name"] = name_of(doomed)
            fresh["metadata"]["resourceVersion"] = meta_of(doomed).get("resourceVersion")
            update.append(fresh)
        namespace = namespace_of(endpoints)
        where = f"Endpoints {namespace}/{name_of(endpoints)}"
        if not meta_of(endpoints).get("deletionTimestamp"):
            for slice_ in create:
                try:
                    self.tracker.update(await self.client.create(self.resource, slice_, namespace=namespace))
                except Exception as exc:
                    if namespace_terminating(exc):
                        return
                    raise RuntimeError(f"failed to create EndpointSlice for {where}: {exc}") from exc
        for slice_ in update:
            try:
                self.tracker.update(await self.client.update(self.resource, slice_, namespace=namespace))
            except Exception as exc:
                raise RuntimeError(f"failed to update {name_of(slice_)} EndpointSlice for {where}: {exc}") from exc
        for slice_ in delete:
            try:
                await self.client.delete(self.resource, name_of(slice_), namespace=namespace)
            except NotFoundError:
                pass
            except Exception as exc:
                raise RuntimeError(f"failed to delete {name_of(slice_)} EndpointSlice for {where}: {exc}") from exc
            self.tracker.expect_deletion(slice_)


def _unchanged(slice_: Mapping[str, Any], wanted: Mapping[tuple[Any, ...], Obj], fresh: Obj) -> bool:
    """Upstream ``totalChanges`` finding nothing to add, update or remove, and the labels and annotations the
    Endpoints would give a new slice already there."""
    if dict(labels_of(slice_)) != fresh["metadata"]["labels"]:
        return False
    if dict(annotations_of(slice_)) != fresh["metadata"]["annotations"]:
        return False
    have = slice_.get("endpoints") or []
    if len(have) != len(wanted):
        return False
    for endpoint in have:
        got = wanted.get(endpoint_key(endpoint))
        if got is None or not endpoints_equal_beyond_hash(got, endpoint):
            return False
    return True
