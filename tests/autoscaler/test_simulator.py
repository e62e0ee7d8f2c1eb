"""ClusterSimulator: the scheduler's own PreFilter/Filter verdicts on a hypothetical cluster; forks are independent;
a snapshot derived from changes answers as one built from scratch."""

from __future__ import annotations

import random
from typing import Any

from kubeplane.autoscaler.simulator import ClusterSimulator
from tests.autoscaler.fake_provider import node_object
from tests.autoscaler.objects import pod_object


def test_fits_reports_the_filters_verdicts() -> None:
    sim = ClusterSimulator([node_object("a"), node_object("b")], [pod_object("p", cpu="1500m", node="a")])
    assert sim.fits(pod_object("x", cpu="1")).nodes == ("b",)
    too_big = sim.fits(pod_object("y", cpu="3"))
    assert too_big.nodes == ()
    assert too_big.reasons == {"Insufficient cpu": 2}
    selector = sim.fits(pod_object("z", node_selector={"disk": "ssd"}))
    assert selector.reasons == {"node(s) didn't match Pod's node affinity/selector": 2}


def test_taints_and_inter_pod_anti_affinity_are_the_scheduler_s() -> None:
    tainted = node_object("t", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    web = pod_object("web", node="a", labels={"app": "web"})
    sim = ClusterSimulator([node_object("a"), tainted, node_object("b")], [web])
    other = pod_object("w2", labels={"app": "web"})
    other["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    assert sim.fits(other).nodes == ("b",)


def test_fork_is_independent() -> None:
    sim = ClusterSimulator([node_object("a")], [])
    fork = sim.fork()
    fork.add_node(node_object("b"))
    fork.add_pod(pod_object("p", cpu="1500m"), "a")
    assert sim.node_names() == ["a"]
    assert sim.fits(pod_object("x", cpu="1500m")).nodes == ("a",)
    assert fork.fits(pod_object("x", cpu="1500m")).nodes == ("b",)


def _fresh(sim: ClusterSimulator) -> ClusterSimulator:
    nodes = [sim.node(n) for n in sim.node_names()]
    pods = [p for n in sim.node_names() for p in sim.pods_on(n)]
    return ClusterSimulator([n for n in nodes if n is not None], pods)


def test_derived_snapshots_answer_as_fresh_ones() -> None:
    """Random adds and removals: every check on the incrementally derived snapshot equals a rebuilt one's."""
    rng = random.Random(7)
    sim = ClusterSimulator([node_object(f"n{i}", cpu="4") for i in range(6)], [])
    sim.snapshot()
    for step in range(40):
        action = rng.random()
        names = sim.node_names()
        if action < 0.6 and names:
            sim.add_pod(pod_object(f"p{step}", cpu=f"{rng.choice([250, 500, 1000])}m"), rng.choice(names))
        elif action < 0.8:
            sim.add_node(node_object(f"m{step}", cpu="2"))
        elif names:
            sim.remove_node(rng.choice(names))
        probe: dict[str, Any] = pod_object("probe", cpu=f"{rng.choice([500, 1500, 3000])}m")
        assert sim.fits(probe).nodes == _fresh(sim).fits(probe).nodes, step
