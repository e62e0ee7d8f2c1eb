"""resource.k8s.io/v1 defaults (upstream pkg/apis/resource/v1/defaults.go, v1.37): SetDefaults_ExactDeviceRequest,
SetDefaults_DeviceSubRequest, the toleration operator's +default, SetDefaults_DeviceTaint; applied through
kubeplane.api.defaults.apply_defaults like every kind."""

from __future__ import annotations

from typing import Any

from kubeplane.api.defaults import apply_defaults


def claim(*requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": list(requests)}},
    }


def test_exact_request_defaults_to_exact_count_one() -> None:
    obj = claim({"name": "gpu", "exactly": {"deviceClassName": "gpu", "tolerations": [{"key": "k"}]}})
    apply_defaults(obj)
    exactly = obj["spec"]["devices"]["requests"][0]["exactly"]
    assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)
    assert exactly["tolerations"] == [{"key": "k", "operator": "Equal"}]


def test_all_mode_gets_no_count_and_counts_are_kept() -> None:
    obj = claim(
        {"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
        {"name": "b", "exactly": {"deviceClassName": "gpu", "count": 3}},
    )
    apply_defaults(obj)
    a, b = (r["exactly"] for r in obj["spec"]["devices"]["requests"])
    assert a == {"deviceClassName": "gpu", "allocationMode": "All"}
    assert (b["allocationMode"], b["count"]) == ("ExactCount", 3)


def test_first_available_subrequests_and_template() -> None:
    template: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t"},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "g"}]}]}
            }
        },
    }
    apply_defaults(template)
    sub = template["spec"]["spec"]["devices"]["requests"][0]["firstAvailable"][0]
    assert (sub["allocationMode"], sub["count"]) == ("ExactCount", 1)


def test_slice_taint_time_added() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"devices": [{"name": "d", "taints": [{"key": "k", "effect": "NoSchedule"}]}]},
    }
    apply_defaults(obj)
    assert obj["spec"]["devices"][0]["taints"][0]["timeAdded"].endswith("Z")


def test_malformed_input_does_not_raise() -> None:
    specs: tuple[Any, ...] = (None, [], {"devices": None}, {"devices": {"requests": [None, 1, {"exactly": "x"}]}})
    for spec in specs:
        apply_defaults({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "spec": spec})
