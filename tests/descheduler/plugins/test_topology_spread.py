"""RemovePodsViolatingTopologySpreadConstraint, translated from upstream's ``TestTopologySpreadConstraint``
(pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint/topologyspreadconstraint_test.go, v0.36): pods
of namespace ns1 labelled foo=bar, the first carrying the constraint (maxSkew, topologyKey zone)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.plugins.topology_spread import (
    RemovePodsViolatingTopologySpreadConstraint,
    parse_args,
    validate,
)
from tests.descheduler.builders import Harness, node, pod

ZONES = "ABCD"


def _nodes(count: int, *, cpu_m: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    return [node(f"n{i + 1}", cpu_m[i] if cpu_m else 2000, pods=200, labels={"zone": f"zone{ZONES[i]}"})
            for i in range(count)]  # fmt: skip


def _constraint(max_skew: int, when: str = "DoNotSchedule") -> list[dict[str, Any]]:
    return [{"maxSkew": max_skew, "topologyKey": "zone", "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": {"foo": "bar"}}}]  # fmt: skip


def _pods(groups: list[tuple[int, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Upstream ``createTestPods``: (count, node, extra spec) groups, pods named pod-0, pod-1, ..."""
    out, number = [], 0
    for count, node_name, extra in groups:
        for _ in range(count):
            out.append(pod(f"pod-{number}", node_name=node_name, namespace="ns1", labels={"foo": "bar"}, **extra))
            number += 1
    return out


CASES = [
    ("2-domains-[2,1]-maxSkew-1-move-0", 2, [(1, "n1", {"topologySpreadConstraints": _constraint(1)}),
     (1, "n1", {}), (1, "n2", {})], {}, 0),
    ("2-domains-[3,1]-maxSkew-1-move-1", 2, [(1, "n1", {"topologySpreadConstraints": _constraint(1)}),
     (2, "n1", {}), (1, "n2", {})], {}, 1),
    ("soft-constraint-counted-when-listed", 2,
     [(1, "n1", {"topologySpreadConstraints": _constraint(1, "ScheduleAnyway")}), (2, "n1", {}), (1, "n2", {})],
     {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}, 1),
    ("soft-constraint-ignored-by-default", 2,
     [(1, "n1", {"topologySpreadConstraints": _constraint(1, "ScheduleAnyway")}), (2, "n1", {}), (1, "n2", {})],
     {}, 0),
    ("2-domains-[5,2]-maxSkew-1-move-1", 2, [(1, "n1", {"topologySpreadConstraints": _constraint(1)}),
     (4, "n1", {}), (2, "n2", {})], {}, 1),
    ("2-domains-[4,0]-maxSkew-1-move-2", 2, [(1, "n1", {"topologySpreadConstraints": _constraint(1)}),
     (3, "n1", {})], {}, 2),
    ("3-domains-[0,1,100]-move-66", 3, [(1, "n2", {"topologySpreadConstraints": _constraint(1)}),
     (100, "n3", {})], {}, 66),
    ("4-domains-[0,1,3,5]-move-3", 4, [(1, "n2", {"topologySpreadConstraints": _constraint(1)}),
     (3, "n3", {}), (5, "n4", {})], {}, 3),
    ("2-domains-[2,6]-maxSkew-2-move-1", 2, [(1, "n1", {"topologySpreadConstraints": _constraint(2)}),
     (1, "n1", {}), (6, "n2", {})], {}, 1),
    ("namespace-excluded", 2, [(1, "n1", {"topologySpreadConstraints": _constraint(1)}), (2, "n1", {}),
     (1, "n2", {})], {"namespaces": {"exclude": ["ns1"]}}, 0),
]  # fmt: skip


@pytest.mark.parametrize(("zones", "groups", "args", "evicted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_topology_spread(zones: int, groups: list[Any], args: dict[str, Any], evicted: int) -> None:
    harness = Harness(_nodes(zones), _pods(groups))
    assert len(harness.run(RemovePodsViolatingTopologySpreadConstraint, parse_args(args))) == evicted


def test_no_move_when_the_smaller_domain_lacks_cpu() -> None:
    """'2 domains size [2 6], maxSkew=2, can't move any because node1 does not have enough CPU' (nodeFit)."""
    groups = [(1, "n1", {"topologySpreadConstraints": _constraint(2)}), (1, "n1", {}), (6, "n2", {})]
    harness = Harness(_nodes(2, cpu_m=(250, 2000)), _pods(groups))
    assert harness.run(RemovePodsViolatingTopologySpreadConstraint, parse_args({})) == []


def test_defaults_and_validation() -> None:
    args = parse_args({})
    assert (args.constraints, args.topology_balance_node_fit) == (("DoNotSchedule",), True)
    assert validate(parse_args({"constraints": ["Bogus"]})) == [
        "constraint Bogus is not one of map[DoNotSchedule:{} ScheduleAnyway:{}]"
    ]
