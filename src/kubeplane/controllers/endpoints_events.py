"""Informer event handlers the three endpoint controllers share.

Upstream writes them twice: ``onEndpointSliceAdd/Update/Delete`` in both pkg/controller/endpointslice and
pkg/controller/endpointslicemirroring, and ``addPod``/``updatePod`` (``endpointsliceutil.GetPodServiceMemberships``,
``GetServicesToUpdateOnPodChange``) in both the endpoints and the endpointslice controllers. Here each is written
once and parameterised by what differs: the ``endpointslice.kubernetes.io/managed-by`` value a controller owns and
the delay a slice event waits before its Service syncs.

Invariants (upstream's): a slice event queues the Service named by its ``kubernetes.io/service-name`` label, and
only for slices this controller manages, unless the tracker already expects that generation (the controller's own
write coming back); a slice whose service-name label changed queues both Services; a deleted slice queues its
Service only when the tracker did not expect the deletion.
"""

from __future__ import annotations

from collections.abc import Callable

from kubeplane.api.views import labels_of, namespace_of
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Obj
from kubeplane.controllers.endpoints_util import (
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    GenerationTracker,
    services_for_pod,
    services_to_update_on_pod_change,
)

__all__ = ["ManagedSliceEvents", "ServicePodEvents"]


class ManagedSliceEvents:
    """Queues a Service ``delay`` seconds after an event of a slice managed by ``manager``."""

    def __init__(
        self,
        manager: str,
        tracker: GenerationTracker,
        enqueue_after: Callable[[str, float], None],
        delay: float,
    ) -> None:
        self.manager = manager
        self.tracker = tracker
        self._enqueue_after = enqueue_after
        self.delay = delay

    def attach(self, slices: SharedInformer) -> None:
        slices.add_event_handler(on_add=self.added, on_update=self.updated, on_delete=self.deleted)

    def managed(self, slice_: Obj) -> bool:
        return labels_of(slice_).get(LABEL_MANAGED_BY) == self.manager

    def _queue(self, slice_: Obj) -> None:
        service = labels_of(slice_).get(LABEL_SERVICE_NAME)
        if service:
            self._enqueue_after(f"{namespace_of(slice_)}/{service}", self.delay)

    def added(self, slice_: Obj) -> None:
        if self.managed(slice_) and self.tracker.should_sync(slice_):
            self._queue(slice_)

    def updated(self, old: Obj, new: Obj) -> None:
        if labels_of(old).get(LABEL_SERVICE_NAME) != labels_of(new).get(LABEL_SERVICE_NAME):
            self._queue(new)
            self._queue(old)
            return
        if self.managed(old) != self.managed(new) or (self.managed(new) and self.tracker.should_sync(new)):
            self._queue(new)

    def deleted(self, slice_: Obj) -> None:
        if self.managed(slice_) and self.tracker.has(slice_) and not self.tracker.handle_deletion(slice_):
            self._queue(slice_)


class ServicePodEvents:
    """Queues the Services whose selector a pod matches (add, delete) or matched before or after (update)."""

    def __init__(self, services: SharedInformer, enqueue_key: Callable[[str], None]) -> None:
        self.services = services
        self._enqueue_key = enqueue_key

    def attach(self, pods: SharedInformer) -> None:
        pods.add_event_handler(on_add=self.added, on_update=self.updated, on_delete=self.added)

    def added(self, pod: Obj) -> None:
        for key in services_for_pod(self.services.lister(), namespace_of(pod), labels_of(pod)):
            self._enqueue_key(key)

    def updated(self, old: Obj, new: Obj) -> None:
        for key in services_to_update_on_pod_change(self.services.lister(), old, new):
            self._enqueue_key(key)
