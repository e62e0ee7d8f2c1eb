"""ImageLocality against upstream's image_locality_test.go (v1.37) and the translated conformance cases."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import MAX_NODE_SCORE, CycleState, PreScorePlugin, ScorePlugin
from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo
from kubeplane.scheduler.plugins import image_locality
from kubeplane.scheduler.plugins.image_locality import (
    MB,
    NAME,
    ImageLocality,
    calculate_priority,
    normalized_image_name,
    pod_image_names,
    scaled_image_score,
)

from .test_helper import Lister, build_node_infos, conformance_cases, require_case, run_conformance_score


def image_node(name: str, *images: tuple[list[str], int]) -> dict[str, Any]:
    status = {"images": [{"names": names, "sizeBytes": size * MB} for names, size in images]} if images else {}
    return {"metadata": {"name": name}, "status": status}


NODE_40_300_2000 = (
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
NODE_250_10 = ((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))
NODE_4000_30 = ((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))


def pod_with(*images: str, init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": img} for i, img in enumerate(images)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init)]
    if volumes:
        spec["volumes"] = [{"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)]
    return {"metadata": {"name": "p", "namespace": "default", "uid": "p"}, "spec": spec}


def scores(pod: dict[str, Any], nodes: list[dict[str, Any]], *, pre_score: bool = True) -> list[int]:
    infos = build_node_infos(nodes)
    pl = image_locality.new({}, Handle(snapshot_lister=Lister(infos)))
    state = CycleState()
    pod_info = PodInfo(pod)
    if pre_score:
        assert pl.pre_score(state, pod_info, infos) is None
    out = []
    for ni in infos:
        score, status = pl.score(state, pod_info, ni)
        assert status is None
        out.append(score)
    return out


def test_plugin_shape() -> None:
    pl = image_locality.new({}, Handle())
    assert isinstance(pl, ImageLocality)
    assert pl.name() == NAME == "ImageLocality"
    assert isinstance(pl, ScorePlugin)
    assert isinstance(pl, PreScorePlugin)
    assert pl.score_extensions() is None


PRIORITY_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[int]]] = [
    (
        "two images spread on two nodes, prefer the larger image one",
        pod_with("gcr.io/40", "gcr.io/250"),
        [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)],
        [0, 5],  # node2: 100 * (250M/2 - 23M) / (2000M - 23M)
    ),
    (
        "two images on one node, prefer this node",
        pod_with("gcr.io/40", "gcr.io/300"),
        [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)],
        [7, 0],  # node1: 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M)
    ),
    (
        "if exceed limit, use limit",
        pod_with("gcr.io/10", "gcr.io/4000"),
        [image_node("node1", *NODE_4000_30), image_node("node2", *NODE_250_10)],
        [MAX_NODE_SCORE, 0],  # node1: 4000M/2 reaches the maximum 2 * 1000M
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        pod_with("gcr.io/10", "gcr.io/4000"),
        [image_node("node1", *NODE_4000_30), image_node("node2", *NODE_250_10), image_node("node3")],
        [66, 0, 0],  # node1: 100 * (4000M/3 - 23M) / (2000M - 23M)
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        pod_with("gcr.io/30", init=("gcr.io/300",)),
        [
            image_node("node1", *NODE_40_300_2000),
            image_node("node2", (["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)),
        ],
        [6, 0],
    ),
    (
        "a single large image on every node scores 100",
        pod_with("gcr.io/2000"),
        [image_node("node1", (["gcr.io/2000:latest"], 2000)), image_node("node2", (["gcr.io/2000:latest"], 2000))],
        [MAX_NODE_SCORE, MAX_NODE_SCORE],
    ),
    (
        "image volumes count as images",
        pod_with("gcr.io/10", volumes=("gcr.io/300",)),
        [image_node("node1", *NODE_40_300_2000), image_node("node2", *NODE_250_10)],
        [6, 0],  # node1: 100 * (300M/2 - 23M) / (2000M - 23M); 2 images, so the maximum is 2000M
    ),
    ("a pod without images scores 0", pod_with(), [image_node("node1", *NODE_40_300_2000)], [0]),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "expected"), [c[1:] for c in PRIORITY_CASES], ids=[c[0] for c in PRIORITY_CASES]
)
def test_image_locality_priority(pod: dict[str, Any], nodes: list[dict[str, Any]], expected: list[int]) -> None:
    """Upstream TestImageLocalityPriority (scores per node; ImageLocality has no NormalizeScore)."""
    assert scores(pod, nodes) == expected
    assert scores(pod, nodes, pre_score=False) == expected


def fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + fake_digest("root"), "root@" + fake_digest("root")),
    ],
    ids=["add :latest postfix 1", "add :latest postfix 2", "keep it as is 1", "keep it as is 2"],
)
def test_normalized_image_name(name: str, expected: str) -> None:
    """Upstream TestNormalizedImageName."""
    assert normalized_image_name(name) == expected


def test_pod_image_names_order_and_volumes() -> None:
    pod = PodInfo(pod_with("b", init=("a:1",), volumes=("registry/v",)))
    assert pod_image_names(pod) == ("a:1", "b:latest", "registry/v:latest")


@pytest.mark.parametrize(
    ("size", "num_nodes", "total", "expected"),
    [(300 * MB, 1, 2, 150 * MB), (100, 1, 3, 33), (100, 2, 3, 66), (100, 1, 0, 0)],
    ids=["half spread", "truncated", "float64 then truncated", "no nodes scores 0"],
)
def test_scaled_image_score(size: int, num_nodes: int, total: int, expected: int) -> None:
    assert scaled_image_score(ImageStateSummary(size, num_nodes), total) == expected


@pytest.mark.parametrize(
    ("total", "images", "expected"),
    [
        (0, 1, 0),
        (23 * MB, 1, 0),
        (1000 * MB, 1, 100),
        (5000 * MB, 2, 100),
        (511 * MB + MB // 2, 1, 50),
        (511 * MB, 1, 49),
    ],
    ids=["below the minimum", "at the minimum", "at the maximum", "clamped to the maximum", "midway", "truncated"],
)
def test_calculate_priority(total: int, images: int, expected: int) -> None:
    assert calculate_priority(total, images) == expected


def test_node_count_comes_from_the_snapshot() -> None:
    """The spread divides by every node of the snapshot, not only the scored ones."""
    infos = build_node_infos([image_node("node1", (["gcr.io/2000:latest"], 2000))])
    others = [NodeInfo({"metadata": {"name": f"x{i}"}}) for i in range(3)]
    pl = image_locality.new({}, Handle(snapshot_lister=Lister([*infos, *others])))
    score, _ = pl.score(CycleState(), PodInfo(pod_with("gcr.io/2000")), infos[0])
    assert score == calculate_priority(2000 * MB // 4, 1)


@pytest.mark.parametrize("case", conformance_cases("topology_images.json", NAME))
def test_conformance(case: dict[str, Any] | None) -> None:
    case = dict(require_case(case))
    assert run_conformance_score(case, image_locality.new) == case["expect"]["scores"]


IMAGE_POOL = [("gcr.io/a:1", 300), ("gcr.io/b:1", 800), ("gcr.io/c:latest", 50), ("gcr.io/d:2", 2000)]


@st.composite
def image_runs(draw: Any) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    """Nodes holding random images, then steps: score a pod of one of three image sets (repeated, so the kept
    columns are built and then refreshed), assume a pod on a node, or change a node's images."""

    def images() -> list[tuple[list[str], int]]:
        held = draw(st.lists(st.sampled_from(IMAGE_POOL), unique=True, max_size=3))
        return [([name], size + draw(st.sampled_from([0, 0, 7]))) for name, size in held]

    nodes = [image_node(f"n{i}", *images()) for i in range(draw(st.integers(1, 30)))]
    pod_images = [["gcr.io/a:1"], ["gcr.io/b:1", "gcr.io/c"], ["gcr.io/d:2", "gcr.io/a:1"]]
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["score", "score", "score", "assume", "images"]))
        node = draw(st.integers(0, len(nodes) - 1))
        if kind == "score":
            steps.append((kind, draw(st.sampled_from(pod_images))))
        elif kind == "assume":
            steps.append((kind, node))
        else:
            steps.append((kind, image_node(f"n{node}", *images())))
    return nodes, steps


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(image_runs())
def test_scores_kept_across_cycles_equal_the_per_node_score(run: Any) -> None:
    """score_vector's columns (kept per pod images and node count while rows are unchanged) equal Score on every
    node in every cycle, while pods are assumed and nodes' images change in between (a node's image counts lag
    until its NodeInfo changes, upstream's ImageStateSummary.Snapshot: both paths read the same snapshot)."""
    nodes, steps = run
    cache = Cache(FakeClock())
    current = {n["metadata"]["name"]: n for n in nodes}
    for node in nodes:
        cache.add_node(node)
    snapshot = Snapshot()
    plugin = ImageLocality(Handle(snapshot_lister=snapshot))
    for k, (kind, arg) in enumerate(steps):
        if kind == "assume":
            name = nodes[arg]["metadata"]["name"]
            pod = {"metadata": {"name": f"q{k}", "namespace": "d", "uid": f"q{k}"}, "spec": {"containers": []}}
            cache.assume_pod(PodInfo(pod), name)
            continue
        if kind == "images":
            name = arg["metadata"]["name"]
            cache.update_node(current[name], arg)
            current[name] = arg
            continue
        cache.update_snapshot(snapshot)
        containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(arg)]
        pod_info = PodInfo({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": containers}})
        state = CycleState()
        plugin.pre_score(state, pod_info, snapshot.list())
        table = snapshot.node_table
        rows = np.arange(table.size, dtype=np.int64)
        expected = [plugin.score(state, pod_info, table.node_infos[r])[0] for r in rows.tolist()]
        assert plugin.score_vector(state, pod_info, table, rows).tolist() == expected
