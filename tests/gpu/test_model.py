"""The GPU model shared by the scheduler plugins, the kubelet and the simulation (kubeplane.gpu.model)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.gpu.model import (
    GpuError,
    GpuRequest,
    assign_devices,
    devices_fit,
    devices_of,
    fit_devices,
    gpu_request,
    gpu_request_or_none,
    node_gpu_count,
    node_gpu_model,
    valid_devices,
)


def pod(
    *, milli: str | None = None, requests: str | None = None, limits: str | None = None, devices: str | None = None
) -> dict[str, Any]:
    annotations = {}
    if milli is not None:
        annotations["gpu.kubeplane.io/milli"] = milli
    if devices is not None:
        annotations["gpu.kubeplane.io/devices"] = devices
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = {"nvidia.com/gpu": requests}
    if limits is not None:
        resources["limits"] = {"nvidia.com/gpu": limits}
    return {
        "metadata": {"name": "p", "annotations": annotations},
        "spec": {"containers": [{"name": "c", "resources": resources}]},
    }


def test_gpu_request_whole_share_models_and_errors() -> None:
    assert gpu_request(pod()) is None
    assert gpu_request(pod(requests="2", limits="2")) == GpuRequest(2, 1000)
    assert gpu_request(pod(limits="1")) == GpuRequest(1, 1000)  # not defaulted yet: limits stand for requests
    assert gpu_request(pod(milli="460")) == GpuRequest(1, 460)
    typed = pod(milli="300")
    term = {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["T4", "A10"]}]}
    typed["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    assert gpu_request(typed) == GpuRequest(1, 300, frozenset({"T4", "A10"}))
    with pytest.raises(GpuError, match="must be between 1 and 999"):
        gpu_request(pod(milli="1000"))
    with pytest.raises(GpuError, match="is not an integer"):
        gpu_request(pod(milli="half"))
    with pytest.raises(GpuError, match=r"also requests nvidia\.com/gpu"):
        gpu_request(pod(milli="500", limits="1"))
    assert gpu_request_or_none(pod(milli="half")) is None
    assert gpu_request_or_none(pod(milli="10")) == GpuRequest(1, 10)


def test_devices_annotation_and_node_gpus() -> None:
    assert devices_of(pod(devices="0,3")) == (0, 3)
    assert devices_of(pod(devices="x")) is None
    assert devices_of(pod()) is None
    node = {
        "metadata": {"labels": {"nvidia.com/gpu.product": "A100"}},
        "status": {"allocatable": {"nvidia.com/gpu": "4"}},
    }
    assert (node_gpu_count(node), node_gpu_model(node)) == (4, "A100")
    assert node_gpu_count({"status": {"capacity": {"nvidia.com/gpu": "2"}}}) == 2
    assert node_gpu_count({}) == 0


def test_valid_devices_and_fit() -> None:
    two = GpuRequest(2, 1000)
    assert valid_devices((0, 1), two, 2)
    assert not valid_devices((0, 0), two, 2)  # not distinct
    assert not valid_devices((0, 2), two, 2)  # not on the node
    assert not valid_devices((0,), two, 2)  # fewer than asked
    share = GpuRequest(1, 600)
    assert devices_fit([1000, 500], share, (0,))
    assert not devices_fit([1000, 500], share, (1,))
    assert fit_devices([500, 700, 1000], share) == (1,)
    assert fit_devices([500, 500], share) is None


def test_assign_devices_uses_valid_recorded_devices_and_first_fit_otherwise() -> None:
    share, whole2 = GpuRequest(1, 600), GpuRequest(2, 1000)
    idle, placed = assign_devices(3, [(share, (2,)), (share, None), (whole2, None)])
    assert placed == [(2,), (0,), None]  # whole2 needs two fully free devices: only device 1 is
    assert idle == [400, 1000, 400]
    # A recorded "0,0" is not valid (the kubelet would not honour it either): first fit instead.
    idle, placed = assign_devices(2, [(whole2, (0, 0))])
    assert (idle, placed) == ([0, 0], [(0, 1)])
    # Recorded devices are the state even past capacity.
    idle, _ = assign_devices(1, [(share, (0,)), (share, (0,))])
    assert idle == [-200]
