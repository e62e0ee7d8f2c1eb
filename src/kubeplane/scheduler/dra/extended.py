"""Extended resources backed by DRA (DRAExtendedResource, GA and on in v1.37): which DeviceClass serves an
extended resource, and the special ResourceClaim the scheduler allocates for a pod's extended-resource requests.

Upstream: ``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go`` (the claim, its request
names and the container mappings), ``.../dynamicresources/extended/cache.go`` (the resource -> class mapping) and
``pkg/scheduler/util`` (``IsDRAExtendedResourceName``).

* Mapping (:class:`DeviceClassResolver`): every DeviceClass serves its implicit name
  ``deviceclass.resource.kubernetes.io/<class name>``, and its ``spec.extendedResourceName`` when set. When several
  classes name the same extended resource, the one created last wins, ties going to the name sorted first (the
  KEP's rule, keps/sig-scheduling/5004). The resolver is immutable and built from one listing of the classes, so one
  scheduling cycle sees one consistent mapping.
* A resource is served by DRA on a node only when the node's allocatable for it is 0 or absent: a node whose
  device plugin advertises it keeps it (a node cannot offer one name both ways, per the KEP).
* The special claim: in memory it is named ``<extended-resources>`` (not a valid object name, so it never collides
  with a real claim) with a temporary uid, ``generateName: <pod>-extended-resources-``, the annotation
  ``resource.kubernetes.io/extended-resource-claim: "true"`` and the pod as controller owner. Per node, its spec
  gets one ExactCount request per (container, resource) named ``container-<i>-request-<j>``: ``i`` indexes
  initContainers then containers, ``j`` the resource in the container's requests sorted by name. Non-sidecar init
  containers first reuse the requests of the long-lived containers after them, and only the largest of their own
  remaining requests is kept (the others are mapped to it), as upstream's ``createRequestsAndMappings``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.validation.resources import is_extended_resource_name

__all__ = [
    "ANNOTATION",
    "DEVICE_CLASS_PREFIX",
    "SPECIAL_CLAIM_NAME",
    "DeviceClassResolver",
    "extended_claim_template",
    "find_extended_claim",
    "is_dra_extended_resource_name",
    "is_extended_claim",
    "requests_and_mappings",
]

DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
"""resourceapi.ResourceDeviceClassPrefix: the implicit extended resource name of every DeviceClass."""
ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"
"""resourceapi.ExtendedResourceClaimAnnotation."""
SPECIAL_CLAIM_NAME: Final = "<extended-resources>"
"""Upstream ``specialClaimInMemName``: the claim's name until PreBind creates it through the API."""


def is_dra_extended_resource_name(name: str) -> bool:
    """Upstream ``IsDRAExtendedResourceName``: an extended resource name, or an implicit DeviceClass one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


@dataclass(frozen=True, slots=True)
class DeviceClassResolver:
    """Upstream ``DeviceClassResolver``: extended resource name -> the DeviceClass that serves it."""

    mapping: Mapping[str, Mapping[str, Any]]

    @classmethod
    def from_classes(cls, classes: Iterable[Mapping[str, Any]]) -> DeviceClassResolver:
        mapping: dict[str, Mapping[str, Any]] = {}
        explicit: dict[str, list[Mapping[str, Any]]] = {}
        for c in classes:
            name = str(_meta(c).get("name") or "")
            if not name:
                continue
            mapping[DEVICE_CLASS_PREFIX + name] = c
            extended = (c.get("spec") or {}).get("extendedResourceName")
            if extended:
                explicit.setdefault(str(extended), []).append(c)
        for resource, candidates in explicit.items():
            # Created last wins; equal timestamps (RFC 3339, comparable as text): the name sorted first.
            ordered = sorted(candidates, key=lambda c: str(_meta(c).get("name")))
            mapping[resource] = max(ordered, key=lambda c: str(_meta(c).get("creationTimestamp") or ""))
        return cls(mapping)

    def get(self, resource: str) -> Mapping[str, Any] | None:
        return self.mapping.get(resource)

    def class_name(self, resource: str) -> str | None:
        c = self.mapping.get(resource)
        return None if c is None else str(_meta(c).get("name"))

    def maps_any(self, requests: Mapping[str, int]) -> bool:
        """Upstream ``hasDeviceClassMappedExtendedResource``: a non-zero request the mapping serves."""
        return any(q and is_dra_extended_resource_name(n) and n in self.mapping for n, q in requests.items())


def is_extended_claim(claim: Mapping[str, Any]) -> bool:
    return (_meta(claim).get("annotations") or {}).get(ANNOTATION) == "true"


def find_extended_claim(pod: Mapping[str, Any], claims: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """Upstream ``findExtendedResourceClaim``: the annotated claim whose controller owner is this pod (name and
    uid), e.g. one created by an earlier cycle whose binding failed."""
    name, uid = _meta(pod).get("name"), _meta(pod).get("uid")
    for c in claims:
        if not is_extended_claim(c):
            continue
        for ref in _meta(c).get("ownerReferences") or ():
            if ref.get("name") == name and ref.get("controller") and ref.get("uid") == uid:
                return c
    return None


def extended_claim_template(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The in-memory special claim of upstream ``preFilterExtendedResources`` (no requests yet; a temporary uid
    that keys its in-flight allocation). Upstream draws a random uid; here it is derived from the pod's uid, so
    simulations stay reproducible (a pod has one scheduling cycle at a time, and no real claim has such a uid)."""
    meta = _meta(pod)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": SPECIAL_CLAIM_NAME,
            "namespace": meta.get("namespace"),
            "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, f"extended-resources/{meta.get('uid')}")),
            "generateName": f"{meta.get('name')}-extended-resources-",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                }
            ],
            "annotations": {ANNOTATION: "true"},
        },
        "spec": {},
    }


# --- requests and mappings (createRequestsAndMappings) -------------------------------------------------------


def _count(text: Any) -> int:
    """``Quantity.AsInt64``: the whole count of a request, 0 when it is not an integer (never requested then)."""
    try:
        q = Quantity.parse(text)
    except (QuantityError, ValueError, TypeError):
        return 0
    value = q.value()
    return value if q.milli_value() == value * 1000 else 0


def _request(
    index: int, container: Mapping[str, Any], resource: str, class_name: str, reusable: Sequence[dict[str, Any] | None]
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """Upstream ``createResourceRequestAndMappings``: the container's own request for ``resource`` (None when the
    reusable requests already cover it) and its mappings."""
    requests = (container.get("resources") or {}).get("requests") or {}
    if resource not in requests:
        return None, []
    wanted = _count(requests[resource])
    if wanted == 0:
        return None, []
    mappings: list[dict[str, str]] = []
    cname = str(container.get("name") or "")
    total = 0
    for r in reusable:
        if r is None:
            continue
        total += int(r["exactly"]["count"])
        mappings.append({"containerName": cname, "resourceName": resource, "requestName": r["name"]})
        if total >= wanted:
            return None, mappings
    name = f"container-{index}-request-{sorted(requests).index(resource)}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - total},
    }
    mappings.append({"containerName": cname, "resourceName": resource, "requestName": name})
    return request, mappings


def requests_and_mappings(
    pod: Mapping[str, Any], resources: Iterable[str], resolver: DeviceClassResolver
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Upstream ``createRequestsAndMappings``: the special claim's device requests (sorted by name) and
    ``pod.status.extendedResourceClaimStatus.requestMappings`` for the resources DRA serves on one node."""
    spec = pod.get("spec") or {}
    inits = list(spec.get("initContainers") or ())
    containers = inits + list(spec.get("containers") or ())
    long_lived = [i for i, c in enumerate(containers) if i >= len(inits) or c.get("restartPolicy") == "Always"]
    short_lived = [i for i in range(len(inits)) if i not in long_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        class_name = resolver.class_name(resource)
        if class_name is None:
            continue
        own: list[dict[str, Any] | None] = [None] * len(containers)
        long_maps: list[dict[str, str]] = []
        for i in long_lived:
            own[i], maps = _request(i, containers[i], resource, class_name, ())
            long_maps += maps
        biggest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_maps: list[dict[str, str]] = []
        for i in short_lived:
            request, maps = _request(i, containers[i], resource, class_name, own[i:])
            if request is not None:
                short_names.add(request["name"])
                if biggest is None or biggest["exactly"]["count"] < request["exactly"]["count"]:
                    biggest = request
            short_maps += maps
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest["name"])
            for m in short_maps:
                if m["requestName"] in short_names:
                    m["requestName"] = biggest["name"]
        if biggest is not None:
            requests.append(biggest)
        requests += [r for r in own if r is not None]
        mappings += long_maps + short_maps
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings
