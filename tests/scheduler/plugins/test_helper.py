"""helper.py (upstream ``plugins/helper``), and what the plugin tests share.

Shared here: the runner of the translated upstream cases in ``tests/scheduler/conformance/upstream`` (NodeInfos built
from nodes and existing pods as the cache builds them, image states included; PreFilter then Filter, or
PreScore, Score, NormalizeScore; a PreFilter Skip means success), and hypothesis strategies for random clusters
and pods that the property tests of the vectorised plugins draw from.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    Code,
    CycleState,
    NodeScore,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
    code_of,
)
from kubeplane.scheduler.framework.types import ImageStateSummary, NodeInfo, PodInfo
from kubeplane.scheduler.plugins.helper import default_normalize_score, go_div

CONFORMANCE_DIR = Path(__file__).resolve().parents[1] / "conformance" / "upstream"
"""The upstream cases, in the repository: a missing file fails collection, never skips."""

Factory = Callable[[Mapping[str, Any], Handle], Any]


# --- default_normalize_score ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reverse", "scores", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (True, [0, 1, 1, 1], [100, 0, 0, 0]),
        (False, [0, 0, 0], [0, 0, 0]),
        (True, [0, 0, 0], [100, 100, 100]),
        (False, [], []),
    ],
    ids=[
        "upstream case_0: scaled by the maximum",
        "upstream case_1: reversed",
        "upstream case_2: integer division truncates",
        "upstream case_3: reversed and truncated",
        "upstream case_4: equal scores all get the maximum",
        "upstream case_5: small scores truncate to 0",
        "upstream case_6: reversed with a zero",
        "all zero stay zero",
        "all zero reversed become the maximum",
        "no nodes",
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    node_scores = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    assert default_normalize_score(100, reverse, node_scores) is None
    assert [ns.score for ns in node_scores] == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, -5, 0)],
    ids=["positive", "negative dividend", "negative divisor", "both negative", "zero"],
)
def test_go_div_truncates_toward_zero(a: int, b: int, expected: int) -> None:
    assert go_div(a, b) == expected


# --- conformance harness ----------------------------------------------------------------------------------


def conformance_cases(file: str, plugin: str) -> list[Any]:
    """``pytest.param(case, id=case_id)`` for ``plugin``'s cases in ``file``. A missing file raises (collection
    fails) and a file without the plugin's cases is an error too: an empty parameter set would only skip."""
    cases = json.loads((CONFORMANCE_DIR / file).read_text(encoding="utf-8"))["cases"]
    params = [pytest.param(c, id=f"{c['id']}: {c['upstream_name']}") for c in cases if c["plugin"] == plugin]
    if not params:
        raise LookupError(f"no {plugin} case in {CONFORMANCE_DIR / file}")
    return params


def require_case(case: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if case is None:
        pytest.fail(f"no conformance case (data under {CONFORMANCE_DIR})")
    return case


def set_image_states(infos: Sequence[NodeInfo]) -> None:
    """Image states as the cache keeps them: per image name, its size and how many nodes have it."""
    holders: dict[str, set[str]] = defaultdict(set)
    for ni in infos:
        for image in ni.images:
            for name in image.get("names") or ():
                holders[name].add(ni.name)
    for ni in infos:
        for image in ni.images:
            for name in image.get("names") or ():
                ni.image_states[name] = ImageStateSummary(int(image.get("sizeBytes") or 0), len(holders[name]))


def build_node_infos(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = ()) -> list[NodeInfo]:
    by_node: dict[str, list[PodInfo]] = defaultdict(list)
    for pod in pods:
        by_node[(pod.get("spec") or {}).get("nodeName") or ""].append(PodInfo(pod))
    infos = [NodeInfo(node, by_node.get(node["metadata"]["name"], ())) for node in nodes]
    set_image_states(infos)
    return infos


class Lister:
    """A fixed snapshot for ``Handle.snapshot()``."""

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self._infos = list(infos)

    def list(self) -> Sequence[NodeInfo]:
        return self._infos

    def get(self, name: str) -> NodeInfo | None:
        return next((ni for ni in self._infos if ni.name == name), None)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return [ni for ni in self._infos if ni.pods_with_required_anti_affinity]


def encode(status: Status | None) -> dict[str, Any]:
    """A status in the conformance files' form: ``{"code": ..., "reasons": [...]}`` (no reasons on success)."""
    out: dict[str, Any] = {"code": code_of(status).label}
    if status is not None and status.code != Code.SUCCESS and status.reasons:
        out["reasons"] = list(status.reasons)
    return out


def run_conformance_filter(case: Mapping[str, Any], factory: Factory) -> dict[str, dict[str, Any]]:
    """PreFilter then Filter on every node; a vectorised Filter must agree with the verdicts."""
    infos = build_node_infos(case["nodes"], case["existingPods"])
    plugin = factory(case["pluginArgs"] or {}, Handle(snapshot_lister=Lister(infos)))
    pod = PodInfo(case["pod"])
    state = CycleState()
    pre: Status | None = None
    if isinstance(plugin, PreFilterPlugin):
        _, pre = plugin.pre_filter(state, pod, infos)
    got: dict[str, dict[str, Any]] = {}
    for ni in infos:
        if pre is not None and pre.is_skip():
            status: Status | None = None
        elif pre is not None and not pre.is_success():
            status = pre
        else:
            status = plugin.filter(state, pod, ni)
        got[ni.name] = encode(status)
    if isinstance(plugin, VectorFilterPlugin) and (pre is None or pre.is_success()):
        mask = plugin.filter_vector(state, pod, NodeTable(infos), np.arange(len(infos), dtype=np.int64))
        assert mask.tolist() == [got[ni.name]["code"] == "Success" for ni in infos]
    return got


def run_conformance_score(case: Mapping[str, Any], factory: Factory) -> dict[str, int]:
    """PreScore, Score on every node, NormalizeScore; a PreScore Skip scores 0. Checks score_vector too."""
    infos = build_node_infos(case["nodes"], case["existingPods"])
    plugin = factory(case["pluginArgs"] or {}, Handle(snapshot_lister=Lister(infos)))
    assert isinstance(plugin, ScorePlugin)
    pod = PodInfo(case["pod"])
    state = CycleState()
    if isinstance(plugin, PreScorePlugin):
        pre = plugin.pre_score(state, pod, infos)
        if pre is not None and pre.is_skip():
            return {ni.name: 0 for ni in infos}
        assert pre is None
    scores: list[NodeScore] = []
    for ni in infos:
        score, status = plugin.score(state, pod, ni)
        assert status is None
        scores.append(NodeScore(ni.name, score))
    if isinstance(plugin, VectorScorePlugin):
        raw = plugin.score_vector(state, pod, NodeTable(infos), np.arange(len(infos), dtype=np.int64))
        assert raw.tolist() == [ns.score for ns in scores]
    extensions = plugin.score_extensions()
    if extensions is not None:
        assert extensions.normalize_score(state, pod, scores) is None
    return {ns.name: ns.score for ns in scores}


# --- random clusters for the vectorised plugins' property tests -------------------------------------------

LABEL_KEYS = ("zone", "disk", "gpu", "tier", "rank")
LABEL_VALUES = ("a", "b", "", "1", "10", "-3")
TAINT_KEYS = ("dedicated", "gpu", "spot", "node.kubernetes.io/unschedulable")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@st.composite
def random_node(draw: st.DrawFn, index: int) -> dict[str, Any]:
    labels = draw(st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), min_size=1, max_size=5))
    taints: dict[tuple[str, str], dict[str, str]] = {}
    for key, value, effect in draw(
        st.lists(
            st.tuples(st.sampled_from(TAINT_KEYS), st.sampled_from(("", "a", "b")), st.sampled_from(EFFECTS)),
            max_size=3,
        )
    ):
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints[(key, effect)] = taint  # taints are unique by key and effect
    spec: dict[str, Any] = {"unschedulable": draw(st.booleans())}
    if taints:
        spec["taints"] = list(taints.values())
    return {"metadata": {"name": f"node-{index}", "labels": labels}, "spec": spec}


@st.composite
def random_nodes(draw: st.DrawFn, max_size: int = 12) -> list[dict[str, Any]]:
    count = draw(st.integers(0, max_size))
    return [draw(random_node(i)) for i in range(count)]


_node_names = st.sampled_from(("node-0", "node-1", "node-3", "missing", ""))


@st.composite
def match_expression(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly valid requirements; some (In without values, Gt with two) fail to parse, as users can write."""
    op = draw(st.sampled_from(OPERATORS))
    expr: dict[str, Any] = {"key": draw(st.sampled_from(LABEL_KEYS)), "operator": op}
    invalid = draw(st.integers(0, 14)) == 0
    if op in ("In", "NotIn"):
        expr["values"] = [] if invalid else draw(st.lists(st.sampled_from(LABEL_VALUES), min_size=1, max_size=3))
    elif op in ("Gt", "Lt"):
        expr["values"] = ["1", "x"] if invalid else [draw(st.sampled_from(("1", "5", "-4", "x")))]
    elif invalid:
        expr["values"] = ["a"]  # values are not allowed with Exists/DoesNotExist
    return expr


@st.composite
def node_selector_term(draw: st.DrawFn) -> dict[str, Any]:
    term: dict[str, Any] = {}
    exprs = draw(st.lists(match_expression(), max_size=2))
    if exprs:
        term["matchExpressions"] = exprs
    if draw(st.integers(0, 3)) == 0:
        term["matchFields"] = [
            {"key": draw(st.sampled_from(("metadata.name", "metadata.name", "spec.other"))),
             "operator": draw(st.sampled_from(("In", "NotIn"))),
             "values": [draw(_node_names)]}
            for _ in range(draw(st.integers(1, 2)))
        ]  # fmt: skip
    return term


@st.composite
def node_selector(draw: st.DrawFn) -> dict[str, Any]:
    return {"nodeSelectorTerms": draw(st.lists(node_selector_term(), max_size=3))}


@st.composite
def preferred_terms(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        {"weight": draw(st.integers(0, 100)), "preference": draw(node_selector_term())}
        for _ in range(draw(st.integers(0, 3)))
    ]


@st.composite
def toleration(draw: st.DrawFn) -> dict[str, Any]:
    tol: dict[str, Any] = {}
    key = draw(st.sampled_from(("", *TAINT_KEYS)))
    if key:
        tol["key"] = key
    op = draw(st.sampled_from(("", "Equal", "Exists", "Gt")))
    if op:
        tol["operator"] = op
    value = draw(st.sampled_from(("", "a", "b")))
    if value:
        tol["value"] = value
    effect = draw(st.sampled_from(("", *EFFECTS)))
    if effect:
        tol["effect"] = effect
    return tol


@st.composite
def random_pod(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(
            st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=1)
        )
    node_affinity: dict[str, Any] = {}
    if draw(st.booleans()):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = draw(node_selector())
    if draw(st.booleans()):
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = draw(preferred_terms())
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    tolerations = draw(st.lists(toleration(), max_size=3))
    if tolerations:
        spec["tolerations"] = tolerations
    node_name = draw(st.sampled_from(("", "", "node-0", "node-2", "missing")))
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": "p", "namespace": "default", "uid": "p-uid"}, "spec": spec}


def row_orders(size: int) -> st.SearchStrategy[list[int]]:
    """Row selections a caller may pass: any subset of the table's rows, in any order."""
    return st.lists(st.integers(0, max(size - 1, 0)), unique=True, max_size=size) if size else st.just([])


def check_filter_vector(plugin: Any, pod_dict: Mapping[str, Any], infos: Sequence[NodeInfo], rows: list[int]) -> None:
    """PreFilter, then filter_vector over all rows and over ``rows`` must equal Filter's verdicts."""
    pod = PodInfo(pod_dict)
    state = CycleState()
    if isinstance(plugin, PreFilterPlugin):
        _, pre = plugin.pre_filter(state, pod, infos)
        if pre is not None and not pre.is_success():
            return  # Skip, or the pod rejected outright: Filter is not called
    expected = [plugin.filter(state, pod, ni) is None for ni in infos]
    table = NodeTable(infos)
    everything = plugin.filter_vector(state, pod, table, np.arange(len(infos), dtype=np.int64))
    assert everything.dtype == np.bool_
    assert everything.tolist() == expected
    subset = plugin.filter_vector(state, pod, table, np.array(rows, dtype=np.int64))
    assert subset.tolist() == [expected[r] for r in rows]


def check_score_vector(plugin: Any, pod_dict: Mapping[str, Any], infos: Sequence[NodeInfo], rows: list[int]) -> None:
    """PreScore, then score_vector over all rows and over ``rows`` must equal Score's raw scores."""
    pod = PodInfo(pod_dict)
    state = CycleState()
    pre = plugin.pre_score(state, pod, infos)
    if pre is not None and pre.is_skip():
        return
    expected = [plugin.score(state, pod, ni)[0] for ni in infos]
    table = NodeTable(infos)
    everything = plugin.score_vector(state, pod, table, np.arange(len(infos), dtype=np.int64))
    assert everything.dtype == np.int64
    assert everything.tolist() == expected
    subset = plugin.score_vector(state, pod, table, np.array(rows, dtype=np.int64))
    assert subset.tolist() == [expected[r] for r in rows]


def pre_score_and_score(plugin: Any, pod: PodInfo, nodes: Sequence[NodeInfo]) -> dict[str, int]:
    """PreScore (SKIP means 0 for every node), Score per node and NormalizeScore, as the framework runs them."""
    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None and status.is_skip():
        return {ni.name: 0 for ni in nodes}
    assert status is None
    scores = []
    for ni in nodes:
        score, st = plugin.score(state, pod, ni)
        assert st is None
        scores.append(NodeScore(ni.name, score))
    assert plugin.normalize_score(state, pod, scores) is None
    return {ns.name: ns.score for ns in scores}
