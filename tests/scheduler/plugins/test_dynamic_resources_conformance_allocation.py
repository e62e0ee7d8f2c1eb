"""DynamicResources' in-memory allocation after Reserve, against upstream ``TestPlugin``'s expectations
(``dynamicresources_test.go``: ``want.reserve``/``inFlightClaims`` compared with device names, shareIDs and
timestamps ignored -- "it does not matter which specific device is allocated").

Each conformance case (tests/scheduler/conformance/upstream/dynamic_resources.json) with ``expect.allocation``
is run through the plugin directly: PreEnqueue, PreFilter, Filter on every node, Reserve on
``expect.allocation.node``; the allocations Reserve put in flight must equal ``expect.allocation.claims``, and an
empty map means nothing new was allocated. tests/scheduler/test_conformance.py replays only the Filter verdicts.
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
EXTENDED_RESOURCE = "DRAExtendedResource (extended resources backed by DRA) is not implemented"


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


def _ids(case: Mapping[str, Any]) -> str:
    return f"{case['id']}:{case['upstream_name']}"


def _params() -> list[Any]:
    out = []
    for case in CASES:
        marks = []
        if case["expect"]["allocation"].get("extendedResourceClaim"):
            marks.append(pytest.mark.xfail(reason=EXTENDED_RESOURCE, strict=True))
        out.append(pytest.param(case, id=_ids(case), marks=marks))
    return out


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
    got = {
        f"{data.claims[i]['metadata'].get('namespace')}/{data.claims[i]['metadata'].get('name')}": _normalised(a)
        for i, a in data.allocations.items()
    }
    assert got == {k: _normalised(v) for k, v in want["claims"].items()}
    assert not want.get("extendedResourceClaim")
