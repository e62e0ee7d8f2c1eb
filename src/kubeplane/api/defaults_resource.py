"""resource.k8s.io/v1 defaulting: upstream ``pkg/apis/resource/v1/defaults.go`` and its generated
``zz_generated.defaults.go`` (v1.37).

* ``SetDefaults_ExactDeviceRequest`` and ``SetDefaults_DeviceSubRequest``: ``allocationMode: ExactCount`` when
  empty, then ``count: 1`` when ExactCount and the count is zero - in a ResourceClaim's ``spec.devices.requests``
  and a ResourceClaimTemplate's ``spec.spec.devices.requests``;
* a device toleration's ``operator`` defaults to ``Equal`` (the field's ``+default``);
* ``SetDefaults_DeviceTaint``: a ResourceSlice device taint's ``timeAdded`` is the time of the write, truncated to
  the second.

Same contract as :mod:`kubeplane.api.defaults`: in place, idempotent, never raising on malformed input.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from kubeplane.api.defaults_workloads import JSONObject
from kubeplane.api.meta import format_time

__all__ = ["set_defaults_resource_claim", "set_defaults_resource_claim_template", "set_defaults_resource_slice"]


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, dict))


def _request(request: dict[str, Any]) -> None:
    if not request.get("allocationMode"):
        request["allocationMode"] = "ExactCount"
    if request.get("allocationMode") == "ExactCount" and not request.get("count"):
        request["count"] = 1
    for toleration in _dicts(request.get("tolerations")):
        if not toleration.get("operator"):
            toleration["operator"] = "Equal"


def _claim_spec(spec: Any) -> None:
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, dict):
        return
    for request in _dicts(devices.get("requests")):
        exactly = request.get("exactly")
        if isinstance(exactly, dict):
            _request(exactly)
        for sub in _dicts(request.get("firstAvailable")):
            _request(sub)


def set_defaults_resource_claim(claim: JSONObject) -> None:
    _claim_spec(claim.get("spec"))


def set_defaults_resource_claim_template(template: JSONObject) -> None:
    spec = template.get("spec")
    if isinstance(spec, dict):
        _claim_spec(spec.get("spec"))


def set_defaults_resource_slice(slice_: JSONObject, now: float | None = None) -> None:
    spec = slice_.get("spec")
    if not isinstance(spec, dict):
        return
    stamp = format_time(int(time.time() if now is None else now))
    for device in _dicts(spec.get("devices")):
        for taint in _dicts(device.get("taints")):
            if taint.get("timeAdded") is None:
                taint["timeAdded"] = stamp
