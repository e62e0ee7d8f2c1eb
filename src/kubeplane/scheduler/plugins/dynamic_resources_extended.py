"""DynamicResources' part for extended resources backed by DRA (upstream ``extendeddynamicresources.go``, v1.37;
the names, mapping and claim shape are in :mod:`kubeplane.scheduler.dra.extended`).

* PreFilter (:func:`pre_filter_extended`): when a DeviceClass serves one of the pod's non-zero extended-resource
  requests, the pod gets one more claim, appended after its own: the annotated claim a former cycle created for
  it (still in the API, e.g. after a failed bind), else the in-memory template.
* Filter (:func:`filter_extended`): a claim from a former cycle that already has requests is
  "cannot schedule extended resource claim" (PostFilter deletes it and the pod is retried anew); a request neither
  in the node's allocatable nor served by a class is "cannot fit resource"; the resources served by DRA on this
  node (class mapped and allocatable 0) become the node's variant of the claim, with its container mappings.
* PreBind (:func:`create_claim`, :func:`patch_pod_status`): the node's claim is created through the API (the
  server generates the name), then bound like any claim, then ``pod.status.extendedResourceClaimStatus`` names it
  with the request mappings (the kubelet prepares it from there).
* Unreserve/PostFilter (:func:`delete_claim`): a created claim is deleted again after its finalizer is removed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.scheduler.dra.extended import (
    SPECIAL_CLAIM_NAME,
    DeviceClassResolver,
    extended_claim_template,
    find_extended_claim,
    is_dra_extended_resource_name,
    requests_and_mappings,
)
from kubeplane.scheduler.framework.interface import Status

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["FINALIZER", "ExtendedState", "create_claim", "delete_claim", "filter_extended", "patch_pod_status"]

FINALIZER = "resource.kubernetes.io/delete-protection"
REASON_STALE = "cannot schedule extended resource claim"
REASON_CANNOT_FIT = "cannot fit resource"
RETRY_STEPS = 5
"""client-go ``retry.DefaultRetry.Steps``: conflicts tolerated while removing the finalizer."""


class ExtendedState:
    """Upstream ``draExtendedResource`` plus the claim-store bookkeeping for the special claim of one cycle."""

    __slots__ = ("index", "node_claims", "pod_scalar", "reserved", "resolver", "template_uid")

    def __init__(self, resolver: DeviceClassResolver, pod_scalar: Mapping[str, int], template_uid: str) -> None:
        self.resolver = resolver
        self.pod_scalar = dict(pod_scalar)
        self.index = -1
        """The special claim's index in the state's claims (the last one)."""
        self.template_uid = template_uid
        """The uid its in-flight allocation is keyed by (upstream ``getInitialExtendedResourceClaimUID``)."""
        self.node_claims: dict[str, tuple[dict[str, Any], list[dict[str, str]]]] = {}
        """node -> (the node's variant of the claim, container request mappings), set by Filter."""
        self.reserved: dict[str, Any] | None = None
        """The claim Reserve put in flight (finalizer and allocation set), for PreBind and tests."""


def pre_filter_extended(
    handle: Handle, pod: PodInfo, enabled: bool
) -> tuple[ExtendedState | None, Mapping[str, Any] | None]:
    """Upstream ``preFilterExtendedResources``: (state, claim) or (None, None) when DRA serves none of the pod's
    requests. Requests are upstream's ``PodRequests`` (the scheduler's effective pod request)."""
    if not enabled:
        return None, None
    scalar = pod.requests.scalar
    if not any(q and is_dra_extended_resource_name(n) for n, q in scalar.items()):
        return None, None  # the fast path: no DeviceClass listing for pods without extended resources
    resolver = DeviceClassResolver.from_classes(handle.list_objects("deviceclasses", ""))
    if not resolver.maps_any(scalar):
        return None, None
    namespace = str((pod.pod.get("metadata") or {}).get("namespace") or "")
    claim = find_extended_claim(pod.pod, handle.list_objects("resourceclaims", namespace))
    if claim is None:
        claim = extended_claim_template(pod.pod)
    return ExtendedState(resolver, scalar, str((claim.get("metadata") or {}).get("uid") or "")), claim


def has_requests(claim: Mapping[str, Any]) -> bool:
    return ((claim.get("spec") or {}).get("devices") or {}).get("requests") is not None


def filter_extended(
    ext: ExtendedState, claim: Mapping[str, Any], pod: PodInfo, node: NodeInfo
) -> tuple[dict[str, Any] | None, list[dict[str, str]], Status | None]:
    """Upstream ``filterExtendedResources``: (the node's claim or None when DRA serves nothing here, mappings,
    a rejection)."""
    if has_requests(claim):
        return None, [], Status.unresolvable(REASON_STALE)
    allocatable = node.allocatable.scalar
    served: dict[str, int] = {}
    for name, quantity in sorted(ext.pod_scalar.items()):
        if not quantity or not is_dra_extended_resource_name(name):
            continue
        if ext.resolver.get(name) is not None and allocatable.get(name, 0) == 0:
            served[name] = quantity
        elif name not in allocatable:
            return None, [], Status.unresolvable(REASON_CANNOT_FIT)
    if not served or (claim.get("status") or {}).get("allocation"):
        return None, [], None
    node_claim = copy.deepcopy(dict(claim))
    requests, mappings = requests_and_mappings(pod.pod, served, ext.resolver)
    node_claim["spec"] = {**node_claim.get("spec", {}), "devices": {"requests": requests}}
    return node_claim, mappings, None


def is_special(claim: Mapping[str, Any]) -> bool:
    return (claim.get("metadata") or {}).get("name") == SPECIAL_CLAIM_NAME


async def create_claim(client: Any, claim: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream ``createExtendedResourceClaimInAPI``: the node's claim without allocation, name and uid."""
    body = copy.deepcopy(dict(claim))
    body.pop("status", None)
    meta = body.setdefault("metadata", {})
    meta.pop("name", None)
    meta.pop("uid", None)
    namespace = str(meta.get("namespace") or "")
    try:
        created: dict[str, Any] = dict(
            await client.create(client.resource("resourceclaims"), body, namespace=namespace)
        )
    except Exception as exc:
        # upstream formats klog.KObj of the claim after clearing its name: "<namespace>/"
        raise RuntimeError(f"create claim for extended resources {namespace}/: {exc}") from exc
    return created


async def patch_pod_status(
    client: Any, pod: Mapping[str, Any], claim: Mapping[str, Any], mappings: list[dict[str, str]]
) -> None:
    """Upstream ``patchPodExtendedResourceClaimStatus``."""
    meta = pod.get("metadata") or {}
    if not mappings:
        raise RuntimeError(
            f"nil or empty request mappings, no update of pod {meta.get('namespace')}/{meta.get('name')} "
            "ExtendedResourceClaimStatus"
        )
    status = {"requestMappings": mappings, "resourceClaimName": (claim.get("metadata") or {}).get("name")}
    try:
        await client.patch(
            client.resource("pods"),
            str(meta.get("name")),
            {"status": {"extendedResourceClaimStatus": status}},
            namespace=str(meta.get("namespace") or ""),
            subresource="status",
        )
    except Exception as exc:
        raise RuntimeError(
            f"update pod {meta.get('namespace')}/{meta.get('name')} ExtendedResourceClaimStatus: {exc}"
        ) from exc


async def delete_claim(client: Any, claim: Mapping[str, Any]) -> None:
    """Upstream ``deleteClaim``: drop the delete-protection finalizer (a normal update), then delete; a claim
    already gone is fine."""
    resource = client.resource("resourceclaims")
    meta = claim.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name"))
    try:
        for attempt in range(RETRY_STEPS):
            current: dict[str, Any] = dict(await client.get(resource, name, namespace=namespace))
            finalizers = list((current.get("metadata") or {}).get("finalizers") or ())
            if FINALIZER not in finalizers:
                break
            finalizers.remove(FINALIZER)
            body = {**current, "metadata": {**current["metadata"], "finalizers": finalizers}}
            try:
                await client.update(resource, body, namespace=namespace)
                break
            except ConflictError:
                if attempt == RETRY_STEPS - 1:
                    raise
        await client.delete(resource, name, namespace=namespace)
    except NotFoundError:
        return
