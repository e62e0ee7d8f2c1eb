"""DRAAdminAccess's namespace rule (GA in v1.36), as upstream's ``pkg/registry/resource/utils.go``
(``AuthorizedForAdmin``, ``AuthorizedForAdminStatus``) and the ResourceClaim / ResourceClaimTemplate strategies
call it.

A request for ``adminAccess: true`` grants access to devices already in use by others, so the API server admits it
only in a namespace an administrator labelled ``resource.kubernetes.io/admin-access: "true"``:

* **create** of a ResourceClaim (``spec.devices.requests``) or a ResourceClaimTemplate (``spec.spec.devices.
  requests``): the first request whose ``exactly.adminAccess`` is true (a subrequest cannot set it) is looked up
  against the namespace's labels; the error path is ``spec.devices.requests[i].adminAccess`` for both kinds
  (upstream passes the template's inner requests to the same helper);
* **update** of the main resource: not checked -- the spec is immutable, so it was checked on create;
* ``/status`` of a ResourceClaim: an allocation result with ``adminAccess: true`` is checked
  (``status.allocation.devices.results[i].adminAccess``) unless the stored status already had one (an allocation
  is immutable once set, so a granted one stays valid after the label goes).

A namespace without the label is ``Forbidden: admin access to devices requires the `resource.kubernetes.io/
admin-access: true` label on the containing namespace``; one that cannot be read is ``Internal error: could not
retrieve namespace to verify admin access: ...``. Upstream's strategy returns these errors first and the
kind's validation errors after them, in one 422 Invalid.

Departure: on ``/status`` kubeplane's registry validates before this check runs, so a status both invalid and
unauthorised reports the validation errors alone (upstream would list both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kubeplane.api.validation import field
from kubeplane.api.validation.field import ErrorList, Path, new_path

from . import errors

if TYPE_CHECKING:
    from kubeplane.api.resources import ResourceInfo

    from .registry import Registry

__all__ = ["ADMIN_NAMESPACE_LABEL", "admin_errors", "admin_status_errors", "admit_status_update"]

ADMIN_NAMESPACE_LABEL: Final = "resource.kubernetes.io/admin-access"
"""``resource.DRAAdminNamespaceLabelKey`` (v1.37; ``resource.k8s.io/admin-access`` before the rename)."""
GROUP: Final = "resource.k8s.io"
_FORBIDDEN: Final = (
    f"admin access to devices requires the `{ADMIN_NAMESPACE_LABEL}: true` label on the containing namespace"
)


def _first_admin_request(requests: object) -> int | None:
    """The index of the first request whose ``exactly.adminAccess`` is true (upstream breaks on it)."""
    if not isinstance(requests, list):
        return None
    for i, request in enumerate(requests):
        exactly = request.get("exactly") if isinstance(request, Mapping) else None
        if isinstance(exactly, Mapping) and exactly.get("adminAccess") is True:
            return i
    return None


def _first_admin_result(status: object) -> int | None:
    """The index of the first allocation result with ``adminAccess: true`` (upstream ``adminRequested``)."""
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    devices = allocation.get("devices") if isinstance(allocation, Mapping) else None
    results = devices.get("results") if isinstance(devices, Mapping) else None
    if not isinstance(results, list):
        return None
    for i, result in enumerate(results):
        if isinstance(result, Mapping) and result.get("adminAccess") is True:
            return i
    return None


async def _namespace_errors(registry: Registry, namespace: str, path: Path) -> ErrorList:
    namespaces = registry.resource("", "namespaces")
    ns = registry.get_cached(namespaces, None, namespace)
    if ns is None:  # a namespace newer than the watch cache is not missing: read the store, as admission does
        ns = await registry.get_live(namespaces, None, namespace)
    if ns is None:
        cause = f'namespaces "{namespace}" not found'
        return [field.internal_error(path, f"could not retrieve namespace to verify admin access: {cause}")]
    labels = ns.get("metadata", {}).get("labels") or {}
    if labels.get(ADMIN_NAMESPACE_LABEL) != "true":
        return [field.forbidden(path, _FORBIDDEN)]
    return []


async def admin_errors(registry: Registry, requests: object, namespace: str) -> ErrorList:
    """``AuthorizedForAdmin``: the errors of creating ``requests`` (a claim spec's ``devices.requests``) in
    ``namespace``; none when no request asks for admin access (the namespace is then not read)."""
    index = _first_admin_request(requests)
    if index is None:
        return []
    path = new_path("spec", "devices", "requests").index(index).child("adminAccess")
    return await _namespace_errors(registry, namespace, path)


async def admin_status_errors(registry: Registry, new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """``AuthorizedForAdminStatus`` of a ResourceClaim ``/status`` write from ``old`` to ``new``."""
    if _first_admin_result(old.get("status")) is not None:
        return []  # granted before: status.allocation is immutable
    index = _first_admin_result(new.get("status"))
    if index is None:
        return []
    path = new_path("status", "allocation", "devices", "results").index(index).child("adminAccess")
    return await _namespace_errors(registry, str(new["metadata"].get("namespace") or ""), path)


async def admit_status_update(
    registry: Registry, info: ResourceInfo, new: dict[str, Any], old: dict[str, Any], subresource: str | None
) -> None:
    """Refuse a ResourceClaim ``/status`` write granting admin access outside an admin namespace (422)."""
    if subresource != "status" or (info.group, info.kind) != (GROUP, "ResourceClaim"):
        return
    errs = await admin_status_errors(registry, new, old)
    if errs:
        raise errors.invalid(GROUP, info.kind, str(new["metadata"].get("name") or ""), errs)


def requests_of(obj: Mapping[str, Any], *, template: bool) -> Sequence[Any] | None:
    """A claim's (``spec.devices.requests``) or a template's (``spec.spec.devices.requests``) requests."""
    spec = obj.get("spec")
    if template:
        spec = spec.get("spec") if isinstance(spec, Mapping) else None
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    return requests if isinstance(requests, list) else None
