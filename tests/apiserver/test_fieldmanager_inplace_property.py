"""The managed-fields update of the entries a write touches, on the wire form (``_updated_in_place``) against the
decoded field sets (``_updated_by_sets``: managedfieldsupdater.go Update over structuredmerge.go's Set algebra).

Random entry lists -- several managers, Apply and Update, subresources, the writer's own entry present or not,
sets that lose everything -- must give the same encoded entries, in the same order, byte for byte; entries the
sets path must read itself (an identity twice, an entry that does not decode) make the wire path decline. Then
a kubelet-shaped status sequence through the registry stores the same managedFields either way.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.smd.fieldpath import Path, PathElement, Set
from kubeplane.apiserver import fieldmanager
from kubeplane.client.interface import PatchType
from kubeplane.client.local import LocalClient

ELEMENTS: list[PathElement] = [
    ("f", "status"),
    ("f", "spec"),
    ("f", "conditions"),
    ("f", "phase"),
    ("k", (("type", "Ready"),)),
    ("k", (("type", "Initialized"),)),
    ("f", "lastTransitionTime"),
]
PATHS = st.lists(st.lists(st.sampled_from(ELEMENTS), min_size=1, max_size=4).map(tuple), max_size=10)
MANAGERS = st.sampled_from(["kubelet", "kube-scheduler", "kubectl", ""])
SUBRESOURCES = st.sampled_from(["", "status"])


def _entry(manager: str, operation: str, subresource: str, paths: list[Path], time: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": "v1"}
    if time:
        entry["time"] = time
    entry["fieldsType"] = "FieldsV1"
    entry["fieldsV1"] = Set.of(*paths).to_fields_v1()
    if subresource:
        entry["subresource"] = subresource
    return entry


ENTRY = st.builds(
    _entry,
    MANAGERS,
    st.sampled_from(["Update", "Apply"]),
    SUBRESOURCES,
    PATHS,
    st.sampled_from([None, "2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(ENTRY, max_size=5), MANAGERS, SUBRESOURCES, PATHS, PATHS)
def test_wire_path_is_the_sets_path(
    touched: list[dict[str, Any]], manager: str, subresource: str, lost_paths: list[Path], mine_paths: list[Path]
) -> None:
    ident = fieldmanager._identifier(manager or "unknown", "Update", "v1", subresource)
    lost = Set.of(*lost_paths).union(Set.of(*mine_paths))  # what a write changes it also takes from others
    mine = Set.of(*mine_paths)
    before = orjson.dumps(touched)
    wire = fieldmanager._updated_in_place(touched, ident, lost, mine, "v1", 1_800_000_000.0)
    sets = fieldmanager._updated_by_sets(touched, ident, lost, mine, "v1", 1_800_000_000.0)
    assert orjson.dumps(touched) == before  # inputs untouched
    idents = [fieldmanager._identifier(e["manager"], e["operation"], "v1", e.get("subresource", "")) for e in touched]
    if len(set(idents)) < len(idents):
        assert wire is None  # decode keeps the last of two entries with one identity: the sets path's to do
        return
    assert wire is not None
    assert orjson.dumps(wire) == orjson.dumps(sets)


@pytest.mark.parametrize(
    "bad",
    [
        {"operation": "Patch"},
        {"apiVersion": ""},
        {"fieldsType": "FieldsV2"},
        {"fieldsV1": ["f:a"]},
        {"fieldsV1": {"f:a": "x"}},
    ],
    ids=["operation", "api-version", "fields-type", "fields-not-object", "fields-value-not-object"],
)
def test_entries_that_do_not_decode_are_the_sets_paths(bad: dict[str, Any]) -> None:
    """DecodeManagedFields' errors stay the sets path's (it raises them)."""
    entry = {**_entry("kubelet", "Update", "status", [(("f", "status"),)], None), **bad}
    ident = fieldmanager._identifier("kubelet", "Update", "v1", "status")
    assert fieldmanager._updated_in_place([entry], ident, Set(), Set(), "v1", 0.0) is None


POD: dict[str, Any] = {
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], "nodeName": "n1"},
}


async def _statuses() -> list[Any]:
    client = await LocalClient.in_memory()
    try:
        pods = client.resource("pods")
        await client.create(pods, POD, namespace="default")
        out = []
        patches = [
            {"status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "X"}]}},
            {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "reason": None}]}},
            {"status": {"podIP": "10.0.0.2", "podIPs": [{"ip": "10.0.0.2"}]}},
            {"status": {"phase": "Succeeded", "podIP": None, "podIPs": None}},
        ]
        for patch in patches:
            done = await client.patch(
                pods, "p", patch, patch_type=PatchType.STRATEGIC, namespace="default", subresource="status"
            )
            out.append([{k: v for k, v in e.items() if k != "time"} for e in done["metadata"]["managedFields"]])
        return out
    finally:
        await client.close()


def test_status_writes_store_the_same_managed_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """A status sequence (fields gained, changed, removed) stores the same managedFields on either path."""
    wire = asyncio.run(_statuses())
    monkeypatch.setattr(fieldmanager, "_updated_in_place", lambda *args: None)
    assert orjson.dumps(asyncio.run(_statuses())) == orjson.dumps(wire)
    assert any("f:podIP" in orjson.dumps(entries).decode() for entries in wire)
