"""GPU accounting per node: upstream's device manager (``pkg/kubelet/cm/devicemanager``), for the simulated GPUs.

Each node accounts its GPU devices per pod in ``SimNode.gpus`` (uid -> milli per device and the device indices,
:mod:`kubeplane.gpu.model`). Admission allocates from :meth:`DeviceManager.idle` (the pod's recorded devices, or
first fit for a pod bound without them; :func:`~kubeplane.kubelet.admission.allocate_gpus`), and
:meth:`DeviceManager.hold` accounts what it allocated. A pod bound without the ``gpu.kubeplane.io/devices``
annotation gets it written (a merge patch, as the scheduler's GPU plugin would have), so the scheduler and the
kubelet derive the same state. The patch goes to the pod's ``status`` subresource, as the node: a kubelet may not
patch the pod itself (the Node authorizer grants nodes ``pods/status`` only), and the status subresource keeps
annotation changes (NodeRestriction refuses only label changes there). Adopted running pods keep their recorded
devices (first fit when they have none).

Invariants: a uid is in ``SimNode.gpus`` only while its pod holds resources on that node (``SimNode.release``
drops it with the rest); the accounting never waits for the annotation's write, and a failed write is logged, not
retried (the scheduler places an unannotated pod first fit, as the kubelet did).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubeplane.api.views import name_of, namespace_of, uid_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client, PatchType
from kubeplane.gpu.model import (
    GPU_DEVICES_ANNOTATION,
    MILLI_PER_GPU,
    devices_of,
    format_devices,
    gpu_request_or_none,
    node_gpu_count,
)

from . import admission
from .state import NodeClients, Obj, PodTasks, SimNode, shared_client

log = logging.getLogger("kubeplane.kubelet.fleet")


class DeviceManager:
    """Accounts GPU devices to pods on each node and annotates pods with the devices they hold."""

    def __init__(self, client: Client, *, tasks: PodTasks, node_client: NodeClients | None = None) -> None:
        """The annotations are written with ``node_client(node)`` (the node's own identity)."""
        self._node_client = node_client or shared_client(client)
        self._pods_res = client.resource("pods")
        self._tasks = tasks

    @staticmethod
    def idle(sim: SimNode, node: Mapping[str, Any]) -> list[int]:
        """Free milli per GPU device of ``node`` after the pods holding devices on ``sim`` (a device past its
        capacity, e.g. after the node shrank, has negative idle: nothing more fits there)."""
        idle = [MILLI_PER_GPU] * node_gpu_count(node)
        for milli, devices in sim.gpus.values():
            for d in devices:
                if 0 <= d < len(idle):
                    idle[d] -= milli
        return idle

    def adopt(self, sim: SimNode, pod: Obj) -> None:
        """A running pod taken over after a restart keeps its recorded devices (first fit when it has none)."""
        if sim.node is not None:
            self.hold(sim, pod, admission.allocate_gpus(pod, sim.node, self.idle(sim, sim.node)).devices)

    def hold(self, sim: SimNode, pod: Obj, devices: tuple[int, ...] | None) -> None:
        """Account ``devices`` to the pod on ``sim``; annotate the pod with them when it does not say so."""
        if devices is None:
            return
        request = gpu_request_or_none(pod)
        if request is None:
            return
        uid = uid_of(pod)
        sim.gpus[uid] = (request.milli, devices)
        if devices_of(pod) != devices:
            self._tasks.spawn(f"gpu {uid}", self._annotate(sim.name, namespace_of(pod), name_of(pod), devices))

    async def _annotate(self, node: str, namespace: str, name: str, devices: tuple[int, ...]) -> None:
        patch = {"metadata": {"annotations": {GPU_DEVICES_ANNOTATION: format_devices(devices)}}}
        try:
            await self._node_client(node).patch(
                self._pods_res, name, patch, patch_type=PatchType.MERGE, namespace=namespace, subresource="status"
            )
        except NotFoundError:
            return
        except Exception as exc:  # the accounting stands; the scheduler places an unannotated pod first fit
            log.info("kubelet: annotating pod %s/%s with its GPUs failed: %s", namespace, name, exc)
