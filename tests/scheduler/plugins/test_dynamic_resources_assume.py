"""The claims PreBind wrote stay assumed until the informer delivers them (upstream's assume cache,
``AssumeClaimAfterAPICall``): otherwise the next pod's cycle, reading the informer's stale unallocated copy in the
instant between the write and its watch event, allocated the same device a second time (two A100 claims both got
gpu-0 in a CI run of tests/cli/test_dra_with_kubectl.py)."""

from __future__ import annotations

from typing import Any

from kubeplane.scheduler.plugins.dynamic_resources_claims import InFlight


def _claim(version: int, *, device: str | None = None) -> dict[str, Any]:
    claim: dict[str, Any] = {"metadata": {"uid": "u1", "name": "c", "resourceVersion": str(version)}, "status": {}}
    if device:
        claim["status"]["allocation"] = {"devices": {"results": [{"device": device}]}}
    return claim


def test_a_written_claim_is_used_over_the_informers_older_copy() -> None:
    flight = InFlight()
    flight.signal("u1", _claim(5, device="gpu-0"))
    flight.assume("u1", _claim(7, device="gpu-0"))
    assert not flight.has("u1")  # no longer "being allocated": the pod's own retry is not refused
    (seen,) = flight.overlay([_claim(5)])
    assert seen["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert "u1" in flight.assumed


def test_the_assumption_ends_once_the_informer_has_the_written_version() -> None:
    flight = InFlight()
    flight.assume("u1", _claim(7, device="gpu-0"))
    informer = _claim(8, device="gpu-0")
    assert flight.overlay([informer]) == [informer]
    assert flight.assumed == {}


def test_a_claim_deleted_since_it_was_written_is_forgotten() -> None:
    flight = InFlight()
    flight.assume("u1", _claim(7, device="gpu-0"))
    assert flight.overlay([]) == []
    assert flight.assumed == {}
