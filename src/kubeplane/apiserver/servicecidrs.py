"""The default ServiceCIDR ``kubernetes``, as kube-apiserver v1.37's defaultservicecidr controller keeps it.

Upstream (``pkg/controlplane/controller/defaultservicecidr/default_servicecidr_controller.go``) creates the
cluster-scoped ServiceCIDR ``kubernetes`` from ``--service-cluster-ip-range`` before the API server reports ready,
then sets its ``Ready`` condition (status ``True``, message ``Kubernetes default Service CIDR is ready``, no reason)
through the status subresource as the field manager ``kubernetes-service-cidr-controller``. It never rewrites an
existing one whose CIDRs differ from the flag (an administrator must delete it), except to upgrade a single-stack
one whose CIDR is the flag's first to the flag's dual-stack pair; and it leaves a ``Ready=False`` condition alone.
:func:`ensure_default_service_cidr` is one pass of that ``sync`` at start.

The ClusterIP allocator (:mod:`.ipallocator`) still allocates from the flag's CIDRs: ServiceCIDRs created by
users are stored and served, but not yet allocated from (upstream's MetaAllocator watches them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from kubeplane.api import meta as apimeta

from . import errors

if TYPE_CHECKING:
    from .registry import Registry

__all__ = ["CONTROLLER_NAME", "DEFAULT_SERVICE_CIDR_NAME", "ensure_default_service_cidr"]

DEFAULT_SERVICE_CIDR_NAME: Final = "kubernetes"
CONTROLLER_NAME: Final = "kubernetes-service-cidr-controller"
READY_MESSAGE: Final = "Kubernetes default Service CIDR is ready"

Obj = dict[str, Any]


def _conditions(obj: Obj) -> list[Any]:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return conditions if isinstance(conditions, list) else []


async def ensure_default_service_cidr(registry: Registry) -> Obj:
    """Create (or upgrade to dual stack) the default ServiceCIDR and mark it Ready; the object as stored."""
    info = registry.resource("networking.k8s.io", "servicecidrs")
    cidrs = [str(c) for c in registry.service_allocators.ips.cidrs]
    current = registry.get_cached(info, None, DEFAULT_SERVICE_CIDR_NAME)
    if current is None:
        body = {"metadata": {"name": DEFAULT_SERVICE_CIDR_NAME}, "spec": {"cidrs": cidrs}}
        try:
            current = await registry.create(info, None, body, manager=CONTROLLER_NAME)
        except errors.APIError as exc:
            if exc.reason != "AlreadyExists":
                raise
            current = await registry.get(info, None, DEFAULT_SERVICE_CIDR_NAME)
    else:
        stored = list((current.get("spec") or {}).get("cidrs") or [])
        if len(cidrs) == 2 and len(stored) == 1 and stored[0] == cidrs[0]:  # single to dual stack upgrade

            def upgrade(old: Obj) -> Obj:
                old.setdefault("spec", {})["cidrs"] = cidrs
                return old

            return await registry.guaranteed_update(info, None, DEFAULT_SERVICE_CIDR_NAME, upgrade)
    return await _sync_status(registry, current, cidrs)


async def _sync_status(registry: Registry, current: Obj, cidrs: list[str]) -> Obj:
    """Upstream ``syncStatus``: Ready=True when the CIDRs match the flag and no Ready condition says otherwise."""
    if (current.get("metadata") or {}).get("deletionTimestamp"):
        return current
    if list((current.get("spec") or {}).get("cidrs") or []) != cidrs:
        return current  # inconsistent configuration: reported upstream as an event, never rewritten
    ready = next((c for c in _conditions(current) if isinstance(c, dict) and c.get("type") == "Ready"), None)
    if ready is not None and ready.get("status") in ("True", "False"):
        return current
    info = registry.resource("networking.k8s.io", "servicecidrs")
    condition = {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": apimeta.format_time(registry.now()),
        "reason": "",
        "message": READY_MESSAGE,
    }

    def set_ready(old: Obj) -> Obj:
        kept = [c for c in _conditions(old) if not (isinstance(c, dict) and c.get("type") == "Ready")]
        old["status"] = {**(old.get("status") or {}), "conditions": [*kept, condition]}
        return old

    return await registry.guaranteed_update(
        info,
        None,
        DEFAULT_SERVICE_CIDR_NAME,
        set_ready,
        subresource="status",
        manager=CONTROLLER_NAME,
        track_subresource="status",
    )
