"""The resource.k8s.io/v1 AllocationResult the allocator returns for each claim (upstream ``Allocate``'s tail and
``createNodeSelector``).

* ``devices.results[]``: request (``parent/sub`` for a subrequest), driver, pool, device; ``adminAccess`` only when
  requested; the request's ``tolerations``; ``shareID`` and ``consumedCapacity`` for a shared device; with binding
  conditions on, the device's ``bindingConditions`` / ``bindingFailureConditions``.
* ``devices.config``: each DeviceClass's config once (source FromClass, naming every request using the class), then
  the claim's own config entries that apply (source FromClaim); a config applying to every request loses its
  ``requests`` list ("empty means all").
* ``nodeSelector``: ``metadata.name In [node]`` as soon as one device is node-local (slice or device nodeName, or
  ``bindsToNode``); else the union of the one-term node selectors of the slices; absent when available everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubeplane.api.quantity import Quantity
from kubeplane.scheduler.dra.features import Features
from kubeplane.scheduler.dra.requests import Request

if TYPE_CHECKING:
    from kubeplane.scheduler.dra.allocated import DeviceID

__all__ = ["DeviceResult", "build_results", "create_node_selector"]


class ResultError(Exception):
    pass


@dataclass(slots=True)
class DeviceResult:
    request: str
    parent: str
    device_id: DeviceID
    device: Mapping[str, Any]
    slice: Mapping[str, Any]
    shared: bool
    consumed: dict[str, Quantity]
    source: Request

    @property
    def request_name(self) -> str:
        return f"{self.parent}/{self.request}" if self.parent else self.request


def _result_dict(r: DeviceResult, features: Features) -> dict[str, Any]:
    out: dict[str, Any] = {
        "request": r.request_name,
        "driver": r.device_id[0],
        "pool": r.device_id[1],
        "device": r.device_id[2],
    }
    if r.source.admin_access:
        out["adminAccess"] = True
    if r.source.tolerations:
        out["tolerations"] = [dict(t) for t in r.source.tolerations]
    if features.device_binding_and_status:
        if r.device.get("bindingConditions"):
            out["bindingConditions"] = list(r.device["bindingConditions"])
        if r.device.get("bindingFailureConditions"):
            out["bindingFailureConditions"] = list(r.device["bindingFailureConditions"])
    if r.shared:
        out["shareID"] = str(uuid.uuid4())
    if r.consumed:
        out["consumedCapacity"] = {n: str(q) for n, q in r.consumed.items()}
    return out


def _contains(reqs: list[dict[str, Any]], req: Mapping[str, Any]) -> bool:
    values = set(req.get("values") or ())
    return any(
        r.get("key") == req.get("key")
        and r.get("operator") == req.get("operator")
        and set(r.get("values") or ()) == values
        for r in reqs
    )


def create_node_selector(results: Sequence[DeviceResult], node_name: str) -> dict[str, Any] | None:
    fields: list[dict[str, Any]] = []
    exprs: list[dict[str, Any]] = []
    for r in results:
        spec = r.slice.get("spec") or {}
        source = r.device if spec.get("perDeviceNodeSelection") else spec
        if source.get("nodeName") or r.device.get("bindsToNode"):
            return {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                ]
            }
        selector = source.get("nodeSelector")
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or ()
            if len(terms) > 1:
                raise ResultError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
            if terms:
                for req in terms[0].get("matchFields") or ():
                    if not _contains(fields, req):
                        fields.append(dict(req))
                for req in terms[0].get("matchExpressions") or ():
                    if not _contains(exprs, req):
                        exprs.append(dict(req))
    if not fields and not exprs:
        return None
    term: dict[str, Any] = {}
    if exprs:
        term["matchExpressions"] = exprs
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _configs(
    claim: Mapping[str, Any], request_data: Mapping[tuple[int, int, int], Any], ci: int
) -> list[dict[str, Any]]:
    devices = (claim.get("spec") or {}).get("devices") or {}
    requests = devices.get("requests") or ()
    config: list[dict[str, Any]] = []
    by_class: dict[str, tuple[int, int]] = {}
    for ri in range(len(requests)):
        data = request_data[(ci, ri, 0)]
        if data.parent is not None:
            data = request_data[(ci, ri, data.selected_sub)]
        device_class = data.device_class
        if device_class is None:
            continue
        name = str((device_class.get("metadata") or {}).get("name"))
        if name in by_class:
            start, end = by_class[name]
            for i in range(start, end):
                config[i]["requests"].append(data.full_name)
            continue
        start = len(config)
        for c in (device_class.get("spec") or {}).get("config") or ():
            config.append(
                {"source": "FromClass", "requests": [data.full_name], **{k: v for k, v in c.items() if k != "requests"}}
            )
        by_class[name] = (start, len(config))
    for c in devices.get("config") or ():
        body = {k: v for k, v in c.items() if k != "requests"}
        names = list(c.get("requests") or ())
        if not names:
            config.append({"source": "FromClaim", **body})
            continue
        for ri, request in enumerate(requests):
            if request.get("name") in names:
                config.append({"source": "FromClaim", "requests": names, **body})
                continue
            data = request_data[(ci, ri, 0)]
            if data.parent is None:
                continue
            sub = (request.get("firstAvailable") or ())[data.selected_sub]
            if f"{request.get('name')}/{sub.get('name')}" in names:
                config.append({"source": "FromClaim", "requests": names, **body})
    for entry in config:
        if len(entry.get("requests") or ()) == len(requests):
            entry.pop("requests", None)
    return config


def build_results(
    claims: Sequence[Mapping[str, Any]],
    results: Sequence[Sequence[DeviceResult]],
    request_data: Mapping[tuple[int, int, int], Any],
    node_name: str,
    features: Features,
) -> list[dict[str, Any]]:
    out = []
    for ci, claim in enumerate(claims):
        devices: dict[str, Any] = {"results": [_result_dict(r, features) for r in results[ci]]}
        config = _configs(claim, request_data, ci)
        if config:
            devices["config"] = config
        allocation: dict[str, Any] = {"devices": devices}
        try:
            selector = create_node_selector(results[ci], node_name)
        except ResultError as exc:
            from kubeplane.scheduler.dra.allocator import AllocationError

            raise AllocationError(
                f"create NodeSelector for claim {(claim.get('metadata') or {}).get('name')}: {exc}"
            ) from exc
        if selector is not None:
            allocation["nodeSelector"] = selector
        out.append(allocation)
    return out
