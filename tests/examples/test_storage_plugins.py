"""Seed 002's storage plugins (``examples/scheduler-plugins``): CheckCSIStorageCapacity and LvmVolumeCapacity,
table-driven per node.

CheckCSIStorageCapacity pins upstream VolumeBinding's capacity rule (``volume_binding.go`` ``hasEnoughCapacity``,
``capacitySufficient``: ``maximumVolumeSize`` when set, else ``capacity``; ``nodeHasAccess``: ``nodeTopology``
selector, nil matches nothing) plus this plugin's summing of a class's claims, and VolumeBinding's
``podHasPVCs`` messages for missing or deleting claims. LvmVolumeCapacity pins open-local's
``ProcessLVMPVCPredicate`` (pinned ``vgName`` first, then binpack into the group with the least free space).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.framework.interface import Code, CycleState, Status
from kubeplane.scheduler.framework.plugin_args import decode_args
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane_example_plugins import CheckCSIStorageCapacity, LvmVolumeCapacity, LvmVolumeCapacityArgs
from kubeplane_example_plugins.lvm_volume_groups import InvalidVolumeGroups, parse_volume_groups
from tests.examples.storage_fixtures import (
    capacity,
    claim,
    csi_driver,
    handle_of,
    lvm_class,
    lvm_pv,
    node,
    pod,
    storage_class,
)

DRIVER = "csi.kubeplane.io"
CSI_OBJECTS: list[dict[str, Any]] = [
    storage_class("standard", DRIVER),
    storage_class("untracked", "other.csi.io"),
    csi_driver(DRIVER),
    csi_driver("other.csi.io", storage_capacity=False),
]
TOPO = "topology.csi.kubeplane.io/node"


def _csi(objects: Sequence[Mapping[str, Any]], the_pod: dict[str, Any], nodes: Sequence[dict[str, Any]]) -> Any:
    """``(PreFilter status, {node: Filter status or None})``; Filter only when PreFilter passed."""
    plugin = CheckCSIStorageCapacity({}, handle_of([*CSI_OBJECTS, *objects]))
    state = CycleState()
    infos = [NodeInfo(n) for n in nodes]
    _, status = plugin.pre_filter(state, PodInfo(the_pod), infos)
    if status is not None:
        return status, {}
    return None, {i.name: plugin.filter(state, PodInfo(the_pod), i) for i in infos}


def _reasons(status: Status | None) -> tuple[str, ...] | None:
    return None if status is None else status.reasons


# --- CheckCSIStorageCapacity ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "claims", "expected"),
    [
        # no claims / bound / untracked driver / no class: PreFilter Skip
        ([], [], "Skip"),
        ([claim("c", "1Gi", "standard", volume="pv-1")], ["c"], "Skip"),
        ([claim("c", "1Gi", "untracked")], ["c"], "Skip"),
        ([claim("c", "1Gi", None)], ["c"], "Skip"),
        # upstream VolumeBinding messages, unresolvable
        ([], ["gone"], 'persistentvolumeclaim "gone" not found'),
        ([claim("c", "1Gi", "nosuch")], ["c"], 'storageclass.storage.k8s.io "nosuch" not found'),
    ],
)
def test_csi_pre_filter(objects: list[dict[str, Any]], claims: list[str], expected: str) -> None:
    status, _ = _csi(objects, pod("p", *claims), [node("n1")])
    assert status is not None
    if expected == "Skip":
        assert status.code == Code.SKIP
    else:
        assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (expected,)


def test_csi_pre_filter_claim_being_deleted() -> None:
    deleting = claim("c", "1Gi", "standard")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status, _ = _csi([deleting], pod("p", "c"), [node("n1")])
    assert status is not None
    assert status.reasons == ('persistentvolumeclaim "c" is being deleted',)


def _cap(name: str, node_name: str, cap: str | None, max_size: str | None = None) -> dict[str, Any]:
    return capacity(name, "standard", {TOPO: node_name}, cap, max_size)


NO_ROOM = "node(s) did not have enough CSI storage capacity for claim default/{}"


@pytest.mark.parametrize(
    ("caps", "claims", "expected"),
    [
        # (capacity objects, claims (name, size), {node: reason claim or None})
        ([_cap("a", "n1", "10Gi"), _cap("b", "n2", "1Gi")], [("c", "5Gi")], {"n1": None, "n2": "c"}),
        ([_cap("a", "n1", "5Gi")], [("c", "5Gi")], {"n1": None, "n2": "c"}),  # equal fits; n2 publishes nothing
        # maximumVolumeSize, when set, bounds each volume (upstream volumeLimit)
        ([_cap("a", "n1", "100Gi", "4Gi"), _cap("b", "n2", None, "8Gi")], [("c", "5Gi")], {"n1": "c", "n2": None}),
        ([_cap("a", "n1", None)], [("c", "1")], {"n1": "c", "n2": "c"}),  # no limit known: not enough
        # several claims of one class sum (this plugin's addition); the first that overflows is named
        ([_cap("a", "n1", "10Gi"), _cap("b", "n2", "12Gi")], [("x", "6Gi"), ("y", "6Gi")], {"n1": "y", "n2": None}),
        # one object must hold the whole group; the furthest-reaching object names the claim
        ([_cap("a", "n1", "6Gi"), _cap("b", "n1", "7Gi")], [("x", "6Gi"), ("y", "6Gi")], {"n1": "y", "n2": "x"}),
    ],
)
def test_csi_filter_per_node(
    caps: list[dict[str, Any]], claims: list[tuple[str, str]], expected: dict[str, str | None]
) -> None:
    objects = [*caps, *(claim(n, size, "standard") for n, size in claims)]
    status, results = _csi(objects, pod("p", *(n for n, _ in claims)), [node("n1"), node("n2")])
    assert status is None
    assert {n: _reasons(s) for n, s in results.items()} == {
        n: None if c is None else (NO_ROOM.format(c),) for n, c in expected.items()
    }
    assert all(s is None or s.code == Code.UNSCHEDULABLE for s in results.values())


def test_csi_topology_selector_and_class_must_match() -> None:
    zonal = capacity("z", "standard", {"topology.kubernetes.io/zone": "a"}, "10Gi")
    other_class = capacity("o", "fast", {TOPO: "n2"}, "10Gi")
    no_selector = capacity("none", "standard", None, "10Gi")  # nil nodeTopology matches no node
    nodes = [node("n1", **{"topology.kubernetes.io/zone": "a"}), node("n2"), node("n3")]
    status, results = _csi([zonal, other_class, no_selector, claim("c", "1Gi", "standard")], pod("p", "c"), nodes)
    assert status is None
    assert {n: _reasons(s) for n, s in results.items()} == {
        "n1": None,
        "n2": (NO_ROOM.format("c"),),
        "n3": (NO_ROOM.format("c"),),
    }


# --- LvmVolumeCapacity --------------------------------------------------------------------------------------


def _lvm(
    objects: Sequence[Mapping[str, Any]],
    the_pod: dict[str, Any],
    nodes: Sequence[dict[str, Any]],
    placed: Sequence[dict[str, Any]] = (),
    args: LvmVolumeCapacityArgs | None = None,
) -> dict[str, Status | None]:
    plugin = LvmVolumeCapacity(args or LvmVolumeCapacityArgs(), handle_of(objects))
    state = CycleState()
    infos = [
        NodeInfo(n, [PodInfo(p) for p in placed if p["spec"].get("nodeName") == n["metadata"]["name"]]) for n in nodes
    ]
    return {i.name: plugin.filter(state, PodInfo(the_pod), i) for i in infos}


LVM_FULL = "node(s) did not have enough free LVM volume group space for claim default/{}"
NO_VG = "node(s) had no LVM volume group"


@pytest.mark.parametrize(
    ("vgs", "extra", "claims", "expected"),
    [
        # (n1's groups, extra objects, claims (name, size, class), expected reason on n1 or None)
        ({"vg0": "10Gi"}, [], [("c", "10Gi", "open-local-lvm")], None),
        ({"vg0": "10Gi"}, [], [("c", "11Gi", "open-local-lvm")], LVM_FULL.format("c")),
        (None, [], [("c", "1Gi", "open-local-lvm")], NO_VG),
        ({}, [], [("c", "1Gi", "open-local-lvm")], NO_VG),
        # a bound LVM PV on the node uses its group; one on another node does not
        ({"vg0": "10Gi"}, [lvm_pv("pv1", "n1", "6Gi")], [("c", "5Gi", "open-local-lvm")], LVM_FULL.format("c")),
        ({"vg0": "10Gi"}, [lvm_pv("pv1", "n2", "6Gi")], [("c", "5Gi", "open-local-lvm")], None),
        # any group: the claims are packed one after the other (binpack: least free space that holds it)
        ({"vg0": "10Gi", "vg1": "8Gi"}, [], [("x", "8Gi", "open-local-lvm"), ("y", "9Gi", "open-local-lvm")], None),
        (
            {"vg0": "10Gi", "vg1": "8Gi"},
            [],
            [("x", "6Gi", "open-local-lvm"), ("y", "6Gi", "open-local-lvm"), ("z", "6Gi", "open-local-lvm")],
            LVM_FULL.format("z"),
        ),
        # vgName pins a class to one group; claims pinned there go first (open-local's pvcsWithVG)
        ({"vg0": "10Gi", "vg1": "8Gi"}, [], [("c", "9Gi", "pinned")], LVM_FULL.format("c")),
        ({"vg0": "10Gi"}, [], [("c", "1Gi", "pinned")], 'node(s) had no LVM volume group "vg1" for claim default/c'),
        # non-LVM classes, bound claims and missing claims are not this plugin's business
        ({}, [], [("c", "1Ti", "standard")], None),
        ({"vg0": "1Gi"}, [], [("c", "5Gi", "open-local-lvm")], LVM_FULL.format("c")),
        # the open-local NodeLocalStorage list form
        (
            [{"name": "vg0", "allocatable": 10 * 2**30, "total": 20 * 2**30}],
            [],
            [("c", "10Gi", "open-local-lvm")],
            None,
        ),
    ],
)
def test_lvm_filter(
    vgs: Any, extra: list[dict[str, Any]], claims: list[tuple[str, str, str]], expected: str | None
) -> None:
    objects = [
        lvm_class(),
        lvm_class("pinned", vgName="vg1"),
        storage_class("standard", "csi.kubeplane.io"),
        *extra,
        *(claim(n, size, cls) for n, size, cls in claims),
    ]
    results = _lvm(objects, pod("p", *(n for n, _, _ in claims)), [node("n1", vgs=vgs)])
    assert _reasons(results["n1"]) == (None if expected is None else (expected,))


def test_lvm_bound_and_missing_claims_pass() -> None:
    objects = [lvm_class(), claim("bound", "1Ti", "open-local-lvm", volume="pv-x"), claim("c", "2Gi", "open-local-lvm")]
    nodes = [node("n1", vgs={"vg0": "1Gi"})]
    assert _lvm(objects, pod("p", "bound", "missing"), nodes) == {"n1": None}
    # a missing claim does not hide the others
    assert _reasons(_lvm(objects, pod("p", "missing", "c"), nodes)["n1"]) == (LVM_FULL.format("c"),)


def test_lvm_counts_claims_headed_for_the_node() -> None:
    """Pending claims of pods on (or assumed on) the node, and claims whose selected-node is the node."""
    objects = [
        lvm_class(),
        claim("held", "6Gi", "open-local-lvm"),  # claim of a pod already bound to n1, not provisioned yet
        claim("selected", "6Gi", "open-local-lvm", selected_node="n2"),
        claim("new", "5Gi", "open-local-lvm"),
    ]
    placed = [pod("holder", "held", node_name="n1")]
    nodes = [node(n, vgs={"vg0": "10Gi"}) for n in ("n1", "n2", "n3")]
    results = _lvm(objects, pod("p", "new"), nodes, placed)
    assert {n: _reasons(s) for n, s in results.items()} == {
        "n1": (LVM_FULL.format("new"),),
        "n2": (LVM_FULL.format("new"),),
        "n3": None,
    }


def test_lvm_pv_of_a_pending_claim_is_counted_once() -> None:
    objects = [
        lvm_class(),
        lvm_pv("pv1", "n1", "4Gi", claim_name="selected"),
        claim("selected", "4Gi", "open-local-lvm", selected_node="n1"),  # PV made, binding not done yet
        claim("new", "6Gi", "open-local-lvm"),
    ]
    assert _lvm(objects, pod("p", "new"), [node("n1", vgs={"vg0": "10Gi"})]) == {"n1": None}


def test_lvm_pv_recognised_by_class_without_vg_attribute_is_packed() -> None:
    # a PV of an LVM class made by another driver without a vgName: charged where the packing puts it
    pv = lvm_pv("pv1", "n1", "7Gi", vg=None, class_name="open-local-lvm")
    pv["spec"]["csi"] = {"driver": "csi.kubeplane.io", "volumeHandle": "pv1"}
    objects = [lvm_class(), pv, claim("a", "8Gi", "open-local-lvm")]
    two_groups = {"vg0": "8Gi", "vg1": "8Gi"}  # pv1 goes to vg0 (tie by name), a fits vg1
    assert _lvm(objects, pod("p", "a"), [node("n1", vgs=two_groups)]) == {"n1": None}
    one_group = {"vg0": "14Gi"}
    assert _reasons(_lvm(objects, pod("p", "a"), [node("n1", vgs=one_group)])["n1"]) == (LVM_FULL.format("a"),)


def test_lvm_provisioners_arg_selects_the_lvm_classes() -> None:
    objects = [storage_class("kp-lvm", "csi.kubeplane.io", volumeType="LVM"), claim("c", "5Gi", "kp-lvm")]
    nodes = [node("n1", vgs={"vg0": "1Gi"})]
    assert _lvm(objects, pod("p", "c"), nodes) == {"n1": None}  # default: open-local's driver only
    args = LvmVolumeCapacityArgs(provisioners=["csi.kubeplane.io"])
    assert _reasons(_lvm(objects, pod("p", "c"), nodes, args=args)["n1"]) == (LVM_FULL.format("c"),)


def test_lvm_invalid_annotation_is_unresolvable() -> None:
    objects = [lvm_class(), claim("c", "1Gi", "open-local-lvm")]
    status = _lvm(objects, pod("p", "c"), [node("n1", vgs="{nope")])["n1"]
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons[0].startswith("node(s) had an invalid kubeplane.io/lvm-volume-groups annotation: not JSON")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"vg0": "100Gi", "vg1": 1024}', {"vg0": 100 * 2**30, "vg1": 1024}),
        ('[{"name": "vg0", "total": 5}]', {"vg0": 5}),
        ('{"vg0": "lots"}', "vg0: must be a quantity or a number of bytes"),
        ('{"vg0": true}', "vg0: must be a quantity or a number of bytes"),
        ('{"vg0": "-1"}', "vg0: must not be negative"),
        ('[{"allocatable": 5}]', "[0]: must be an object with a name"),
        ('"vg0"', 'must be an object {"<vg>": "<size>"} or a list of {"name", "allocatable"}'),
    ],
)
def test_volume_group_annotation_forms(text: str, expected: dict[str, int] | str) -> None:
    if isinstance(expected, dict):
        assert parse_volume_groups(text) == expected
    else:
        with pytest.raises(InvalidVolumeGroups, match=f"^{__import__('re').escape(expected)}$"):
            parse_volume_groups(text)


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ({}, []),
        ({"provisioners": ["a", "b"]}, []),
        ({"provisioners": []}, ["args.provisioners: Invalid value: []: must name at least one provisioner"]),
        ({"provisioners": "a"}, ['args.provisioners: Invalid value: "a": must be of type array']),
    ],
)
def test_lvm_args(raw: dict[str, Any], errors: list[str]) -> None:
    assert decode_args(LvmVolumeCapacityArgs, raw, fielderr.new_path("args"))[1] == errors
