"""Expanders (cluster-autoscaler expander/*/..._test.go): which option each one keeps, and the chain."""

from __future__ import annotations

import random

import pytest

from kubeplane.autoscaler.expanders import (
    Option,
    PriorityError,
    best_option,
    least_waste,
    most_pods,
    parse_priorities,
    price,
    priority,
)
from tests.autoscaler.fake_provider import node_object
from tests.autoscaler.objects import pod_object


def _opt(
    group: str,
    count: int,
    pods: int,
    *,
    cpu: str = "2",
    memory: str = "4Gi",
    price_: float = 0.0,
    pod_cpu: str = "1",
    pod_memory: str = "1Gi",
    gpu: bool = False,
) -> Option:
    extra = {"nvidia.com/gpu": "1"} if gpu else None
    template = node_object(f"t-{group}", cpu=cpu, memory=memory, extra=extra)
    return Option(
        group, count, tuple(pod_object(f"p{i}", cpu=pod_cpu, memory=pod_memory) for i in range(pods)), template, price_
    )


def _groups(options: list[Option]) -> list[str]:
    return [o.group for o in options]


def test_most_pods_keeps_the_options_scheduling_most() -> None:
    assert _groups(most_pods([_opt("a", 1, 2), _opt("b", 2, 4), _opt("c", 3, 4)])) == ["b", "c"]


def test_least_waste_prefers_the_tighter_fit() -> None:
    """waste_test.go: cpu + memory unused fraction; a 2-cpu node for 1.5 cpu beats a 4-cpu node."""
    small = _opt("small", 1, 1, cpu="2", memory="4Gi", pod_cpu="1500m", pod_memory="3Gi")
    big = _opt("big", 1, 1, cpu="4", memory="8Gi", pod_cpu="1500m", pod_memory="3Gi")
    assert _groups(least_waste([big, small])) == ["small"]


def test_least_waste_ties_are_all_kept() -> None:
    assert _groups(least_waste([_opt("a", 1, 1), _opt("b", 1, 1)])) == ["a", "b"]


def test_price_prefers_cheaper_nodes_for_the_same_pods() -> None:
    cheap = _opt("cheap", 1, 1, price_=0.05)
    dear = _opt("dear", 1, 1, price_=0.5)
    assert _groups(price([dear, cheap], cluster_size=1)) == ["cheap"]


def test_price_penalises_gpu_groups_for_plain_pods() -> None:
    """price.go: gpuUnfitnessOverride makes a GPU group unattractive even at the same price."""
    plain = _opt("plain", 1, 1, price_=0.1)
    gpu = _opt("gpu", 1, 1, price_=0.1, gpu=True)
    assert _groups(price([gpu, plain], cluster_size=1)) == ["plain"]


PRIORITIES = """
10:
  - .*-spot
50:
  - ^gpu-.*
  - big
"""


def test_priority_highest_matching_regex_wins() -> None:
    table = parse_priorities(PRIORITIES)
    opts = [_opt("a-spot", 1, 1), _opt("gpu-x", 1, 1), _opt("big", 1, 1), _opt("other", 1, 1)]
    assert _groups(priority(opts, table)) == ["gpu-x", "big"]
    assert _groups(priority([_opt("a-spot", 1, 1), _opt("other", 1, 1)], table)) == ["a-spot"]


def test_priority_without_a_match_keeps_every_option() -> None:
    assert _groups(priority([_opt("x", 1, 1), _opt("y", 1, 1)], parse_priorities("5: [zzz]"))) == ["x", "y"]


@pytest.mark.parametrize(
    "text",
    ["[1, 2]", "a: [x]", "5: nolist", "5: ['(']"],
    ids=["not a mapping", "priority not an integer", "rules not a list", "bad regexp"],
)
def test_bad_priority_configmap_is_refused(text: str) -> None:
    with pytest.raises(PriorityError):
        parse_priorities(text)


def test_chain_runs_in_order_then_random_among_ties() -> None:
    """flags.go: expanders called in succession until one option remains; ties broken randomly."""
    opts = [_opt("a", 1, 3), _opt("b", 1, 3), _opt("c", 1, 1)]
    seen = {best_option(opts, expanders=["most-pods"], rng=random.Random(s)).group for s in range(20)}  # type: ignore[union-attr]
    assert seen == {"a", "b"}
    table = parse_priorities("9: [b]")
    chosen = best_option(opts, expanders=["most-pods", "priority"], rng=random.Random(0), priorities=table)
    assert chosen is not None
    assert chosen.group == "b"


def test_no_options() -> None:
    assert best_option([], expanders=["random"], rng=random.Random(0)) is None
