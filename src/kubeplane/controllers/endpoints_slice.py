"""The EndpointSlice controller (upstream ``pkg/controller/endpointslice/endpointslice_controller.go``).

Keys are Services. A sync lists the pods the Service selects and the slices labelled with its name and
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`` (dropping those being deleted), and
hands both to the :class:`~.endpoints_slice_reconciler.Reconciler`. A Service that is gone, of type
``ExternalName`` or without a selector gets nothing from this controller (a deleted Service's slices go with it
through the garbage collector: they carry its controller reference).

Events queue a Service: its own changes; a pod's, for every Service selecting it before or after
(:func:`~.endpoints_util.services_to_update_on_pod_change`); a slice's, one second later
(``endpointSliceChangeMinSyncDelay``), when the slice is this controller's and is not a generation it wrote
itself, when its managed-by or service-name label changed, or when it vanished unexpectedly. Before acting, the
sync compares its cache with what it wrote (:class:`~.endpoints_util.GenerationTracker`) and retries while the
cache lags, so it never creates a duplicate slice from a stale view.

Option (``ControllerManager(options={"endpointslice": {...}})``): ``maxEndpointsPerSlice`` (100).
"""

from __future__ import annotations

import logging
from typing import ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import is_being_deleted, spec_of
from kubeplane.client.events import EVENT_TYPE_WARNING
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.controllers.controller_utils import with_type_meta
from kubeplane.controllers.endpoints_events import ManagedSliceEvents, ServicePodEvents
from kubeplane.controllers.endpoints_slice_reconciler import CONTROLLER_NAME, MAX_ENDPOINTS_PER_SLICE, Reconciler
from kubeplane.controllers.endpoints_util import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    GenerationTracker,
    TriggerTimeTracker,
    has_selector,
)

__all__ = ["SLICE_CHANGE_MIN_SYNC_DELAY", "EndpointSliceController"]

log = logging.getLogger("kubeplane.controllers.endpointslice")

SLICE_CHANGE_MIN_SYNC_DELAY: Final = 1.0
"""Upstream ``endpointSliceChangeMinSyncDelay``: a slice event queues its Service this much later."""
_COMPONENT: Final = "endpoint-slice-controller"


class EndpointSliceController(Controller):
    """See the module docstring. Five workers (upstream ``--concurrent-service-endpoint-syncs``)."""

    name: ClassVar[str] = "endpointslice"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        informers = ctx.informers
        self.services = informers.informer_for("services")
        self.pods = informers.informer_for("pods")
        self.nodes = informers.informer_for("nodes")
        self.slices = informers.informer_for("endpointslices")
        self.recorder = ctx.recorder(_COMPONENT)
        self.tracker = GenerationTracker()
        self.trigger_times = TriggerTimeTracker()
        self.reconciler = Reconciler(
            ctx.client,
            self.nodes.lister(),
            self.tracker,
            max_endpoints_per_slice=int(self.options.get("maxEndpointsPerSlice", MAX_ENDPOINTS_PER_SLICE)),
        )
        self.services.add_event_handler(
            on_add=self.enqueue, on_update=lambda _old, new: self.enqueue(new), on_delete=self.enqueue
        )
        ServicePodEvents(self.services, self.enqueue_key).attach(self.pods)
        ManagedSliceEvents(CONTROLLER_NAME, self.tracker, self.enqueue_after, SLICE_CHANGE_MIN_SYNC_DELAY).attach(
            self.slices
        )

    # --- sync ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.lister().get(namespace, name)
        if service is None:
            self.trigger_times.delete_service(namespace, name)
            self.tracker.delete_service(namespace, name)
            return
        spec = spec_of(service)
        if spec.get("type") == "ExternalName" or not has_selector(service):
            return
        selector = apilabels.selector_from_set({str(k): str(v) for k, v in spec["selector"].items()})
        pods = self.pods.lister().list(namespace, selector)
        mine = apilabels.selector_from_set({LABEL_SERVICE_NAME: name, LABEL_MANAGED_BY: CONTROLLER_NAME})
        slices = [s for s in self.slices.lister().list(namespace, mine) if not is_being_deleted(s)]
        if self.tracker.stale(key, slices):
            raise RuntimeError("EndpointSlice informer cache is out of date")
        trigger_time = self.trigger_times.compute(namespace, service, pods)
        try:
            await self.reconciler.reconcile(service, pods, slices, trigger_time)
        except Exception as exc:
            msg = f"Error updating Endpoint Slices for Service {namespace}/{name}: {exc}"
            await self.recorder.event(
                with_type_meta(service, "v1", "Service"), EVENT_TYPE_WARNING, "FailedToUpdateEndpointSlices", msg
            )
            raise
