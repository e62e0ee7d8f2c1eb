"""DynamicResources' in-memory allocation after Reserve, against upstream ``TestPlugin``'s expectations
(``dynamicresources_test.go``: ``want.reserve``/``inFlightClaims`` compared with device names, shareIDs and
timestamps ignored -- "it does not matter which specific device is allocated").

Each conformance case (tests/scheduler/conformance/upstream/dynamic_resources.json) with ``expect.allocation``
is run through the plugin directly: PreEnqueue, PreFilter, Filter on every node, Reserve on
``expect.allocation.node``; the allocations Reserve put in flight must equal ``expect.allocation.claims``, and an
empty map means nothing new was allocated. ``expect.allocation.extendedResourceClaim`` is the special claim for
extended resources backed by DRA that Reserve puts in flight (upstream's ``inFlightClaims`` entry named
``<extended-resources>``; its temporary uid ignored as upstream's comparison does), or null when there is none.
tests/scheduler/test_conformance.py replays only the Filter verdicts.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import dynamic_resources

TABLE = Path(__file__).parents[1] / "conformance" / "upstream" / "dynamic_resources.json"
CASES = [c for c in json.loads(TABLE.read_text())["cases"] if "allocation" in c["expect"]]
PLURALS = {
    "ResourceClaim": "resourceclaims",
    "ResourceSlice": "resourceslices",
    "DeviceClass": "deviceclasses",
    "ResourceClaimTemplate": "resourceclaimtemplates",
}
IGNORED_RESULT_FIELDS = ("device", "shareID")


def _list_objects(objects: list[Mapping[str, Any]]) -> Any:
    def list_objects(plural: str, namespace: str) -> list[Mapping[str, Any]]:
        return [
            o
            for o in objects
            if PLURALS.get(str(o.get("kind"))) == plural
            and (not namespace or (o.get("metadata") or {}).get("namespace") == namespace)
        ]

    return list_objects


def _normalised(allocation: Mapping[str, Any]) -> dict[str, Any]:
    """An AllocationResult as upstream compares it: without device names, shareIDs and allocationTimestamp."""
    out = copy.deepcopy(dict(allocation))
    out.pop("allocationTimestamp", None)
    for result in (out.get("devices") or {}).get("results") or ():
        for key in IGNORED_RESULT_FIELDS:
            result.pop(key, None)
    return out


def _normalised_claim(claim: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A ResourceClaim as upstream's TestPlugin compares in-flight claims: without the temporary uid, and with its
    allocation normalised as :func:`_normalised` does."""
    if claim is None:
        return None
    out = copy.deepcopy(dict(claim))
    out["metadata"].pop("uid", None)
    if (out.get("status") or {}).get("allocation"):
        out["status"]["allocation"] = _normalised(out["status"]["allocation"])
    return out


def _ids(case: Mapping[str, Any]) -> str:
    return f"{case['id']}:{case['upstream_name']}"


def _params() -> list[Any]:
    return [pytest.param(case, id=_ids(case)) for case in CASES]


@pytest.mark.parametrize("case", _params())
def test_allocation_after_reserve(case: dict[str, Any]) -> None:
    """Upstream TestPlugin: PreFilter/Filter/Reserve, then the in-flight allocations equal ``want``."""
    objects = [copy.deepcopy(o) for o in case.get("objects") or ()]
    handle = Handle(clock=FakeClock(), list_objects=_list_objects(objects))
    plugin = dynamic_resources.new({}, handle)
    pod = PodInfo(copy.deepcopy(case["pod"]))
    nodes = [NodeInfo(copy.deepcopy(n)) for n in case["nodes"]]
    assert plugin.pre_enqueue(pod) is None
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    assert status is None or status.code == Code.SKIP, status
    want = case["expect"]["allocation"]
    for node in nodes:
        verdict = plugin.filter(state, pod, node)
        want_code = case["expect"]["filter"][node.name]["code"]
        assert (verdict is None) == (want_code == "Success"), (node.name, verdict)
    assert plugin.reserve(state, pod, want["node"]) is None
    data = state.get(dynamic_resources.STATE_KEY)
    assert isinstance(data, dynamic_resources.StateData)
    extended = data.extended
    got = {
        f"{data.claims[i]['metadata'].get('namespace')}/{data.claims[i]['metadata'].get('name')}": _normalised(a)
        for i, a in data.allocations.items()
        if extended is None or i != extended.index
    }
    assert got == {k: _normalised(v) for k, v in want["claims"].items()}
    reserved = extended.reserved if extended is not None else None
    assert _normalised_claim(reserved) == _normalised_claim(want.get("extendedResourceClaim"))
    if reserved is not None:  # in flight under its temporary uid, so the next pod's allocator sees its devices
        assert plugin.in_flight.has(str(reserved["metadata"]["uid"]))
