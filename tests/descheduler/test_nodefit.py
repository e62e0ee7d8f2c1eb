"""NodeFit, translated from upstream's ``TestNodeFit`` and ``TestPodFitsAnyOtherNode``
(pkg/descheduler/node/node_test.go, v0.36)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.framework import ClusterView
from kubeplane.descheduler.nodefit import node_fit, pod_fits_any_other_node
from tests.descheduler.builders import node, pod, taint

ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"foo": "bar"}}, "topologyKey": "region"}]}}  # fmt: skip


CASES = [
    ("fits", pod("p", 100), node("n2"), [], None),
    ("unschedulable", pod("p", 100), node("n2", unschedulable=True), [], "node is not schedulable"),
    ("node-selector-mismatch", pod("p", 100, node_selector={"zone": "a"}), node("n2"), [],
     "pod node selector does not match the node label"),
    ("untolerated-NoExecute", pod("p", 100), node("n2", taints=[taint("k", effect="NoExecute")]), [],
     "pod does not tolerate taints on the node"),
    ("PreferNoSchedule-ignored", pod("p", 100), node("n2", taints=[taint("k", effect="PreferNoSchedule")]), [], None),
    ("insufficient-cpu", pod("p", 1500), node("n2"), [pod("q", 1000, node_name="n2")], "insufficient resources"),
    ("insufficient-pods", pod("p", 100), node("n2", pods=1), [pod("q", 100, node_name="n2")],
     "insufficient resources"),
    ("terminal-pods-free-their-requests", pod("p", 1500), node("n2"), [pod("q", 1000, node_name="n2",
     phase="Succeeded")], None),
    ("anti-affinity-matches-pod-on-node", pod("p", 100, affinity=ANTI), node("n2", labels={"region": "r"}),
     [pod("q", 100, node_name="n2", labels={"foo": "bar"})],
     "pod matches inter-pod anti-affinity rule of other pod on node"),
    ("anti-affinity-topology-key-missing", pod("p", 100, affinity=ANTI), node("n2"),
     [pod("q", 100, node_name="n2", labels={"foo": "bar"})], None),
]  # fmt: skip


@pytest.mark.parametrize(("target", "candidate", "others", "reason"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_node_fit(target: dict[str, Any], candidate: dict[str, Any], others: list[Any], reason: str | None) -> None:
    view = ClusterView(nodes=[candidate], pods=others)
    assert node_fit(target, candidate, pods_on_node=view.pods_on_node) == reason


def test_pod_fits_any_other_node_skips_its_own() -> None:
    target = pod("p", 100, node_name="n1")
    view = ClusterView(nodes=[node("n1")], pods=[target])
    assert not pod_fits_any_other_node(target, [node("n1")], pods_on_node=view.pods_on_node)
    assert pod_fits_any_other_node(target, [node("n1"), node("n2")], pods_on_node=view.pods_on_node)
