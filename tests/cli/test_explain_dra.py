"""``kubeplane explain`` on cluster files with DRA objects (issue 27's acceptance, offline): ResourceSlices as a
driver publishes them (node01: two "A100", node02: one "T4"), a DeviceClass for the driver and claims selecting
``device.attributes["gpu.example.com"].model == "A100"``. DynamicResources (default profile) shows its upstream
reasons per node (``dynamicresources.go`` Filter: "cannot allocate all claims"); a selector failing at runtime on one
device is reported as that node's reason, not fatal (kubeplane's documented departure, docs/scheduler.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kubeplane.cli.main import app

runner = CliRunner()
DRIVER = "gpu.example.com"
A100 = f'device.attributes["{DRIVER}"].model == "A100"'


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def _gpu(name: str, model: str, **attrs: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"model": {"string": model}, **attrs}}


def _slice(node: str, *devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": list(devices),
        },
    }


CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def _claim(name: str, expression: str = A100, allocated: tuple[str, str] | None = None) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": "gpu",
                            "allocationMode": "ExactCount",
                            "count": 1,
                            "selectors": [{"cel": {"expression": expression}}],
                        },
                    }
                ]
            }
        },
    }
    if allocated is not None:
        node, device = allocated
        claim["status"] = {
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": device}]},
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": f"user-of-{name}", "uid": f"user-of-{name}"}],
        }
    return claim


def _pod(name: str, claim: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": spec}  # fmt: skip


def _cluster(*extra: dict[str, Any], t4: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [
        _node("node01"),
        _node("node02"),
        CLASS,
        _slice("node01", _gpu("gpu-0", "A100", memoryGiB={"int": 80}), _gpu("gpu-1", "A100", memoryGiB={"int": 80})),
        _slice("node02", t4 or _gpu("gpu-0", "T4", memoryGiB={"int": 16})),
        *extra,
    ]


def _explain(tmp_path: Path, items: list[dict[str, Any]], pod: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    (tmp_path / "pod.json").write_text(json.dumps(pod))
    args = ["explain", "--cluster", str(tmp_path / "cluster.json"), "--pod", str(tmp_path / "pod.json"), "-o", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def test_an_a100_claim_fits_node01_only(tmp_path: Path) -> None:
    out = _explain(tmp_path, _cluster(_claim("mine")), _pod("p", "mine"))
    assert out["nodes"]["node01"]["filters"]["DynamicResources"] == {"code": "Success"}
    assert out["nodes"]["node02"]["filters"]["DynamicResources"] == {
        "code": "UnschedulableAndUnresolvable",
        "reasons": ["cannot allocate all claims"],
    }
    assert out["selected"] == "node01"


def test_both_a100s_allocated_to_other_pods_leaves_no_node(tmp_path: Path) -> None:
    taken = [_claim("first", allocated=("node01", "gpu-0")), _claim("second", allocated=("node01", "gpu-1"))]
    users = [_pod("user-of-first", "first", node="node01"), _pod("user-of-second", "second", node="node01")]
    out = _explain(tmp_path, _cluster(*taken, *users, _claim("mine")), _pod("p", "mine"))
    assert out["selected"] is None
    for node in ("node01", "node02"):
        assert out["nodes"][node]["filters"]["DynamicResources"] == {
            "code": "UnschedulableAndUnresolvable",
            "reasons": ["cannot allocate all claims"],
        }
    assert "2 cannot allocate all claims" in out["message"]


def test_a_selector_failing_at_runtime_on_one_device_is_that_nodes_reason(tmp_path: Path) -> None:
    """node02's T4 lacks the memoryGiB attribute: the claim's selector errors there (upstream would abort the
    attempt with Filter Error); node01's A100s evaluate and the pod is placed."""
    expression = f'device.attributes["{DRIVER}"].memoryGiB >= 40'
    out = _explain(tmp_path, _cluster(_claim("mine", expression), t4=_gpu("gpu-0", "T4")), _pod("p", "mine"))
    assert out["selected"] == "node01"
    status = out["nodes"]["node02"]["filters"]["DynamicResources"]
    assert status["code"] == "UnschedulableAndUnresolvable"
    (reason,) = status["reasons"]
    assert reason.startswith(
        f"claim default/mine: selector #0 on device {DRIVER}/node02/gpu-0: CEL runtime error: no such key: memoryGiB"
    )
