"""Rows of the resource.k8s.io/v1 printers (upstream pkg/printers/internalversion/printers.go, v1.37:
printResourceClaim with resourceClaimState, printResourceSlice, the name/age printers of DeviceClass and
ResourceClaimTemplate); the columns are pinned in test_printers.UPSTREAM_COLUMNS."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.printers import row_for

NOW = 1_000_000.0
META = {"name": "x", "creationTimestamp": "1970-01-12T13:46:30Z"}  # 10 s before NOW
G = "resource.k8s.io"
ALLOCATION: dict[str, Any] = {"devices": {"results": []}}


@pytest.mark.parametrize(
    ("deleted", "status", "state"),
    [
        (False, {}, "pending"),
        (True, {}, "deleted"),
        (False, {"allocation": ALLOCATION}, "allocated"),
        (False, {"allocation": ALLOCATION, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
         "allocated,reserved"),
        (True, {"allocation": ALLOCATION, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]},
         "deleted,allocated,reserved"),
        (True, {"allocation": ALLOCATION}, "deleted,allocated"),
    ],
)  # fmt: skip
def test_resource_claim_state(deleted: bool, status: dict[str, Any], state: str) -> None:
    """resourceClaimState: deleted, then pending or allocated(,reserved)."""
    meta: dict[str, Any] = {**META, "deletionTimestamp": "1970-01-12T13:46:35Z"} if deleted else META
    assert row_for((G, "ResourceClaim"), {"metadata": meta, "status": status}, now=NOW) == ["x", state, "10s"]


def test_resource_slice_row() -> None:
    spec: dict[str, Any] = {"driver": "gpu.example.com", "nodeName": "node01", "pool": {"name": "node01"}}
    assert row_for((G, "ResourceSlice"), {"metadata": META, "spec": spec}, now=NOW) == [
        "x", "node01", "gpu.example.com", "node01", "10s",
    ]  # fmt: skip
    spec = {"driver": "gpu.example.com", "allNodes": True, "pool": {"name": "shared"}}
    assert row_for((G, "ResourceSlice"), {"metadata": META, "spec": spec}, now=NOW)[1] == ""


def test_name_age_rows() -> None:
    assert row_for((G, "DeviceClass"), {"metadata": META}, now=NOW) == ["x", "10s"]
    assert row_for((G, "ResourceClaimTemplate"), {"metadata": META}, now=NOW) == ["x", "10s"]
