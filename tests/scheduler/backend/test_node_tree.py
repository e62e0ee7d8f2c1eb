"""NodeTree against upstream node_tree_test.go (TestNodeTree_AddNode/RemoveNode/UpdateNode/List/MultiOperations)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.views import zone_key
from kubeplane.scheduler.backend.node_tree import NodeTree

REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


ALL_NODES = [
    node("node-0"),
    node("node-1", **{REGION: "region-1"}),
    node("node-2", **{ZONE: "zone-2"}),
    node("node-3", **{REGION: "region-1", ZONE: "zone-2"}),
    node("node-4", **{REGION: "region-1", ZONE: "zone-2"}),
    node("node-5", **{REGION: "region-1", ZONE: "zone-3"}),
    node("node-6", **{REGION: "region-2", ZONE: "zone-2"}),
    node("node-7", **{REGION: "region-2", ZONE: "zone-2"}),
    node("node-8", **{REGION: "region-2", ZONE: "zone-2"}),
    node("node-9", **{REGION: "region-2", ZONE: "zone-2", BETA_REGION: "region-2", BETA_ZONE: "zone-2"}),
    node("node-10", **{BETA_REGION: "region-2", BETA_ZONE: "zone-3"}),
]


def verify(nt: NodeTree, expected: dict[str, list[str]]) -> None:
    assert nt.num_nodes == sum(len(v) for v in expected.values())
    assert nt.tree == expected
    assert sorted(nt.zones) == sorted(expected)


def test_zone_key_prefers_beta_labels() -> None:
    assert zone_key(node("n")) == ""
    assert zone_key(node("n", **{REGION: "r"})) == "r:\x00:"
    assert zone_key(node("n", **{ZONE: "z"})) == ":\x00:z"
    assert zone_key(node("n", **{REGION: "r", ZONE: "z", BETA_ZONE: "bz"})) == "r:\x00:bz"
    assert zone_key({"metadata": {"name": "n"}}) == ""


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param(ALL_NODES[:1], {"": ["node-0"]}, id="single node no labels"),
        pytest.param([ALL_NODES[0], ALL_NODES[0]], {"": ["node-0"]}, id="same node specified twice"),
        pytest.param(
            ALL_NODES[:4],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3"],
            },
            id="mix of nodes with and without proper labels",
        ),
        pytest.param(
            ALL_NODES[:7],
            {
                "": ["node-0"],
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            id="some zones with multiple nodes",
        ),
        pytest.param(
            ALL_NODES[9:],
            {"region-2:\x00:zone-2": ["node-9"], "region-2:\x00:zone-3": ["node-10"]},
            id="nodes also using deprecated zone/region label",
        ),
    ],
)
def test_add_node(nodes: list[dict[str, Any]], expected: dict[str, list[str]]) -> None:
    nt = NodeTree()
    for n in nodes:
        nt.add_node(n)
    verify(nt, expected)


@pytest.mark.parametrize(
    ("existing", "to_remove", "expected", "expect_error"),
    [
        pytest.param(
            ALL_NODES[:7],
            ALL_NODES[:1],
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            False,
            id="remove a single node with no labels",
        ),
        pytest.param(
            ALL_NODES[:7],
            ALL_NODES[1:4],
            {
                "": ["node-0"],
                "region-1:\x00:zone-2": ["node-4"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            False,
            id="remove a few nodes including one from a zone with multiple nodes",
        ),
        pytest.param(ALL_NODES[:7], ALL_NODES[:7], {}, False, id="remove all nodes"),
        pytest.param([], ALL_NODES[:5], {}, True, id="remove non-existing node"),
    ],
)
def test_remove_node(
    existing: list[dict[str, Any]], to_remove: list[dict[str, Any]], expected: dict[str, list[str]], expect_error: bool
) -> None:
    nt = NodeTree(existing)
    for n in to_remove:
        if expect_error:
            with pytest.raises(KeyError):
                nt.remove_node(n)
        else:
            nt.remove_node(n)
    verify(nt, expected)


def test_remove_node_with_wrong_zone_fails() -> None:
    nt = NodeTree(ALL_NODES[3:4])
    with pytest.raises(KeyError):
        nt.remove_node(node("node-3"))
    assert nt.num_nodes == 1


@pytest.mark.parametrize(
    ("existing", "new", "expected"),
    [
        pytest.param(
            ALL_NODES[:7],
            node("node-0", **{REGION: "region-1", ZONE: "zone-2"}),
            {
                "region-1:\x00:": ["node-1"],
                ":\x00:zone-2": ["node-2"],
                "region-1:\x00:zone-2": ["node-3", "node-4", "node-0"],
                "region-1:\x00:zone-3": ["node-5"],
                "region-2:\x00:zone-2": ["node-6"],
            },
            id="update a node without label",
        ),
        pytest.param(
            ALL_NODES[:1],
            node("node-0", **{REGION: "region-1", ZONE: "zone-2"}),
            {"region-1:\x00:zone-2": ["node-0"]},
            id="update the only existing node",
        ),
        pytest.param(
            ALL_NODES[:1],
            node("node-new", **{REGION: "region-1", ZONE: "zone-2"}),
            {"": ["node-0"], "region-1:\x00:zone-2": ["node-new"]},
            id="update non-existing node",
        ),
    ],
)
def test_update_node(existing: list[dict[str, Any]], new: dict[str, Any], expected: dict[str, list[str]]) -> None:
    nt = NodeTree(existing)
    old = next((n for n in ALL_NODES if n["metadata"]["name"] == new["metadata"]["name"]), node("nonexisting-node"))
    version = nt.version
    nt.update_node(old, new)
    verify(nt, expected)
    assert nt.version > version


def test_update_node_same_zone_keeps_order_and_version() -> None:
    nt = NodeTree(ALL_NODES[:7])
    version, order = nt.version, nt.list()
    nt.update_node(ALL_NODES[3], node("node-3", **{REGION: "region-1", ZONE: "zone-2", "x": "y"}))
    assert (nt.version, nt.list()) == (version, order)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param([], [], id="empty tree"),
        pytest.param(ALL_NODES[:1], ["node-0"], id="one node"),
        pytest.param(ALL_NODES[:4], ["node-0", "node-1", "node-2", "node-3"], id="four nodes"),
        pytest.param(
            ALL_NODES[:9],
            ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
            id="all nodes",
        ),
    ],
)
def test_list(nodes: list[dict[str, Any]], expected: list[str]) -> None:
    assert NodeTree(nodes).list() == expected


@pytest.mark.parametrize(
    ("to_add", "to_remove", "operations", "expected"),
    [
        pytest.param(ALL_NODES[2:9], ALL_NODES[2:9], "aaarrr", [], id="add and remove all nodes"),
        pytest.param(ALL_NODES[2:9], ALL_NODES[2:9], "aaar", ["node-3", "node-4"], id="add and remove some nodes"),
        pytest.param(ALL_NODES[2:9], ALL_NODES[2:9], "aaarrra", ["node-5"], id="remove three nodes"),
        pytest.param(
            [*ALL_NODES[4:9], ALL_NODES[3]],
            [],
            "aaaaaa",
            ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
            id="add more nodes to an exhausted zone",
        ),
        pytest.param(
            [*ALL_NODES[3:5], *ALL_NODES[6:8]],
            ALL_NODES[3:5],
            "aaraar",
            ["node-6", "node-7"],
            id="remove zone and add new",
        ),
    ],
)
def test_multi_operations(
    to_add: list[dict[str, Any]], to_remove: list[dict[str, Any]], operations: str, expected: list[str]
) -> None:
    nt = NodeTree()
    adds, removes = iter(to_add), iter(to_remove)
    for op in operations:
        if op == "a":
            nt.add_node(next(adds))
        else:
            nt.remove_node(next(removes))
    assert nt.list() == expected
