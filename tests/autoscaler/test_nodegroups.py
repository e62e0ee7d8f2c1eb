"""Node groups from YAML (``kubeplane.autoscaler.nodegroups``).

Upstream behaviour pinned: cluster-autoscaler's node-group spec validation (``config/dynamic/node_group_spec.go``,
``NodeGroupSpec.Validate`` with scale to zero: "min size must be >= 0", "max size must be greater or equal to min
size", "name must not be blank"), and the template as a kubelet node-config group (the same NodeSpec).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeplane.autoscaler.nodegroups import (
    NodeGroupConfigError,
    group_node_spec,
    load_node_groups,
    parse_node_groups,
)
from kubeplane.autoscaler.provider import NODE_GROUP_LABEL
from kubeplane.kubelet.config import default_address, default_pod_cidr, parse_node_config

GROUP: dict[str, Any] = {
    "name": "small",
    "minSize": 1,
    "maxSize": 5,
    "pricePerHour": 0.25,
    "provisioningDelay": "2m",
    "deletionDelay": 30,
    "priority": 10,
    "template": {
        "capacity": {"cpu": "4", "memory": "16Gi"},
        "labels": {"pool": "small", "slot": "{index}"},
        "taints": ["dedicated=batch:NoSchedule"],
        "zone": "zone-a",
    },
}


def test_a_group_parses_with_its_defaults() -> None:
    (group,) = parse_node_groups([GROUP])
    assert (group.name, group.min_size, group.max_size, group.initial_size) == ("small", 1, 5, 1)
    assert (group.price_per_hour, group.provisioning_delay, group.deletion_delay) == (0.25, 120.0, 30.0)
    assert group.extra == {"priority": 10}
    minimal = parse_node_groups({"nodeGroups": [{"name": "g", "minSize": 0, "maxSize": 0}]})[0]
    assert (minimal.initial_size, minimal.provisioning_delay, minimal.price_per_hour) == (0, 0.0, 0.0)
    assert minimal.extra == {}


def test_the_template_gives_the_node_config_groups_node_spec() -> None:
    (group,) = parse_node_groups([GROUP])
    spec = group_node_spec(group, 3, position=7)
    (expected,) = parse_node_config([{**GROUP["template"], "name": "small-3"}])
    assert spec.name == "small-3"
    assert spec.capacity == expected.capacity
    assert spec.allocatable == expected.allocatable
    assert spec.taints == expected.taints
    assert spec.labels == {**expected.labels, "slot": "3", NODE_GROUP_LABEL: "small"}
    assert (spec.pod_cidr, spec.address) == (default_pod_cidr(7), default_address(7))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": ""}, "nodeGroups[0]: name must not be blank"),
        ({"minSize": -1}, "node group small: minSize: min size must be >= 0"),
        ({"maxSize": 0}, "node group small: maxSize: max size must be greater or equal to min size"),
        ({"initialSize": 6}, "node group small: initialSize: must be within [minSize, maxSize]"),
        ({"minSize": "1"}, "node group small: minSize: expected an integer, got '1'"),
        ({"provisioningDelay": "2 minutes"}, 'node group small: provisioningDelay: time: unknown unit " minutes"'),
        ({"deletionDelay": -1}, "node group small: deletionDelay: must not be negative"),
        ({"pricePerHour": "cheap"}, "node group small: pricePerHour: expected a non-negative number"),
        ({"size": 3}, "node group small: unknown field(s) size"),
        ({"name": "Small_1"}, "node group Small_1: name: a lowercase RFC 1123 label must consist of"),
        ({"template": {"count": 2}}, "node group small: template: count is not allowed (nodes are <group>-<n>)"),
        (
            {"template": {"capacity": {"cpu": "lots"}}},
            "node group small: template: capacity.cpu: invalid quantity 'lots'",
        ),
    ],
    ids=[
        "ca-validate-name-not-blank",
        "ca-validate-min-size-scale-to-zero",
        "ca-validate-max-below-min",
        "initial-size-outside-bounds",
        "sizes-are-integers",
        "go-duration-error",
        "negative-delay",
        "price-is-a-number",
        "unknown-field",
        "name-is-a-dns-label-for-node-names",
        "template-may-not-name-nodes",
        "template-errors-are-node-config-errors",
    ],
)
def test_bad_groups_are_one_line_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(NodeGroupConfigError) as info:
        parse_node_groups([{**GROUP, **change}])
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_duplicate_names_and_empty_lists_are_refused() -> None:
    with pytest.raises(NodeGroupConfigError, match="node group small: defined twice"):
        parse_node_groups([GROUP, GROUP])
    with pytest.raises(NodeGroupConfigError, match="expected a non-empty list of node groups"):
        parse_node_groups([])


def test_load_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text("nodeGroups:\n- {name: a, minSize: 0, maxSize: 3, initialSize: 2}\n")
    assert [(g.name, g.initial_size) for g in load_node_groups(path)] == [("a", 2)]
    with pytest.raises(NodeGroupConfigError, match="cannot read node groups"):
        load_node_groups(tmp_path / "missing.yaml")
