"""DefaultBinder: binds a pod by POSTing a v1 Binding to ``pods/<name>/binding`` (upstream
``plugins/defaultbinder``).

The Binding carries the pod's uid, so the API server can refuse it if the pod was deleted and recreated under
the same name meanwhile. Any error (a conflict because the pod is already bound or being deleted, a transport
failure, no client) becomes an ERROR status; the scheduler then forgets the assumed pod and retries it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubeplane.api.views import uid_of
from kubeplane.scheduler.framework.interface import CycleState, Status

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import PodInfo

__all__ = ["NAME", "DefaultBinder", "binding_for", "new"]

NAME = "DefaultBinder"


def binding_for(pod: PodInfo, node_name: str) -> dict[str, Any]:
    """The v1 Binding of ``pod`` to ``node_name``."""
    metadata: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    uid = uid_of(pod.pod)
    if uid:
        metadata["uid"] = uid
    return {"apiVersion": "v1", "kind": "Binding", "metadata": metadata, "target": {"kind": "Node", "name": node_name}}


class DefaultBinder:
    """Bind."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def name(self) -> str:
        return NAME

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        client = self._handle.client
        if client is None:
            return Status.from_error(f"cannot bind pod {pod.key} to node {node_name}: the scheduler has no client")
        try:
            await client.create(
                client.resource("pods"),
                binding_for(pod, node_name),
                namespace=pod.namespace,
                subresource="binding",
                name=pod.name,
            )
        except Exception as exc:  # every failure is reported as the binding cycle's ERROR status
            return Status.from_error(exc)
        return None


def new(args: Mapping[str, Any], handle: Handle) -> DefaultBinder:
    """The plugin factory; DefaultBinder has no args."""
    return DefaultBinder(handle)
