"""Framework runtime semantics, pinned to upstream ``framework/runtime/framework_test.go`` behaviours, with fake
plugins so each rule is seen in isolation."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    Code,
    CycleState,
    NodeScore,
    PreFilterResult,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.framework.registry import Registry, extension_points_of
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.score_settle import settle as _settle
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.profile import build_profiles


def _node(name: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "1", "pods": "10"}}})


POD = PodInfo({"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": {"containers": []}})


class FakePreFilter:
    """PreFilter returning a configured result/status per instance (args: code, nodes, reasons)."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._name = str(args["name"])
        self.code = Code(args.get("code", Code.SUCCESS))
        self.nodes = args.get("nodes")
        self.reasons = tuple(args.get("reasons", ()))
        self.calls = 0

    def name(self) -> str:
        return self._name

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        self.calls += 1
        result = PreFilterResult(frozenset(self.nodes)) if self.nodes is not None else None
        return result, None if self.code == Code.SUCCESS else Status(self.code, self.reasons)

    def pre_filter_extensions(self) -> None:
        return None


class FakeFilter:
    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._name = str(args["name"])
        self.reject = dict(args.get("reject", {}))

    def name(self) -> str:
        return self._name

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        code = self.reject.get(node.name)
        return None if code is None else Status(Code(code), (f"{self._name} rejects {node.name}",))


class FakeScore:
    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._name = str(args["name"])
        self.scores = dict(args["scores"])
        self.normalize = bool(args.get("normalize", False))

    def name(self) -> str:
        return self._name

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        return int(self.scores[node.name]), None

    def score_extensions(self) -> ScoreExtensions | None:
        return self if self.normalize else None

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        top = max(s.score for s in scores) or 1
        for s in scores:
            s.score = s.score * 100 // top
        return None


class FakeVectorScore(FakeScore):
    """A Score plugin with a vector path: the same per-node scores read by row."""

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        return np.array([int(self.scores[table.names[r]]) for r in rows.tolist()], np.int64)


class FakePermit:
    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._name = str(args["name"])
        self.timeout = float(args.get("timeout", 10.0))

    def name(self) -> str:
        return self._name

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT), self.timeout


def _framework(points: dict[str, list[tuple[str, int]]], args: dict[str, dict[str, Any]], **kw: Any) -> Framework:
    registry = Registry()
    kinds = {"pf": FakePreFilter, "f": FakeFilter, "s": FakeScore, "vs": FakeVectorScore, "permit": FakePermit}
    for name in args:
        registry.register(name, kinds[name.rstrip("0123456789")])
    return Framework(
        profile_name="p",
        points=points,
        plugin_args={name: {"name": name, **a} for name, a in args.items()},
        registry=registry,
        handle=Handle(clock=kw.get("clock", FakeClock())),
    )


def test_extension_points_are_derived_from_methods() -> None:
    assert extension_points_of(FakePreFilter) == {"preFilter"}
    assert extension_points_of(FakeScore) == {"score"}
    registry = Registry()
    registry.register("X", FakeFilter)
    with pytest.raises(ValueError, match="a plugin named X already exists"):
        registry.register("X", FakeFilter)


@pytest.mark.parametrize(
    ("plugins", "want_code", "want_reasons", "want_nodes", "want_rejected"),
    [
        pytest.param(
            {"pf1": {"code": Code.UNSCHEDULABLE, "reasons": ["a"]}, "pf2": {}},
            Code.UNSCHEDULABLE,
            ("a",),
            None,
            {"pf1"},
            id="Unschedulable keeps running the remaining PreFilters (upstream #119770)",
        ),
        pytest.param(
            {"pf1": {"code": Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "reasons": ["b"]}, "pf2": {}},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("b",),
            None,
            {"pf1"},
            id="UnschedulableAndUnresolvable stops at once",
        ),
        pytest.param(
            {"pf1": {"nodes": ["n1", "n2"]}, "pf2": {"nodes": ["n2", "n3"]}},
            None,
            (),
            frozenset({"n2"}),
            {"pf1", "pf2"},
            id="PreFilterResults intersect",
        ),
        pytest.param(
            {"pf1": {"nodes": ["n1"]}, "pf2": {"nodes": ["n3"]}},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("node(s) didn't satisfy plugin(s) [pf1 pf2] simultaneously",),
            frozenset(),
            {"pf1", "pf2"},
            id="empty intersection names the plugins",
        ),
        pytest.param(
            {"pf1": {"nodes": []}},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("node(s) didn't satisfy plugin pf1",),
            frozenset(),
            {"pf1"},
            id="one plugin with no nodes",
        ),
        pytest.param(
            {"pf1": {"code": Code.ERROR, "reasons": ["boom"]}},
            Code.ERROR,
            ('running PreFilter plugin "pf1": boom',),
            None,
            set(),
            id="an error is wrapped with the plugin name",
        ),
    ],
)
def test_run_pre_filter_plugins(
    plugins: dict[str, dict[str, Any]],
    want_code: Code | None,
    want_reasons: tuple[str, ...],
    want_nodes: frozenset[str] | None,
    want_rejected: set[str],
) -> None:
    fwk = _framework({"preFilter": [(n, 0) for n in plugins]}, plugins)
    result, status, rejected = fwk.run_pre_filter_plugins(CycleState(), POD, [_node("n1")])
    assert (status.code if status else None) == want_code
    if status is not None:
        assert status.reasons == want_reasons
    assert (result.node_names if result else None) == want_nodes
    assert rejected == want_rejected


def test_pre_filter_skip_disables_filter() -> None:
    fwk = _framework({"preFilter": [("pf1", 0)]}, {"pf1": {"code": Code.SKIP}})
    state = CycleState()
    fwk.run_pre_filter_plugins(state, POD, [])
    assert state.skip_filter_plugins == {"pf1"}


def test_filter_stops_at_first_failure_and_names_plugin() -> None:
    fwk = _framework(
        {"filter": [("f1", 0), ("f2", 0)]},
        {"f1": {"reject": {"n1": Code.UNSCHEDULABLE}}, "f2": {"reject": {"n1": Code.UNSCHEDULABLE_AND_UNRESOLVABLE}}},
    )
    status = fwk.run_filter_plugins(CycleState(), POD, _node("n1"))
    assert status is not None
    assert status.plugin == "f1"
    assert status.reasons == ("f1 rejects n1",)
    every = fwk.run_all_filter_plugins(CycleState(), POD, _node("n1"))
    assert {k: v.code if v else None for k, v in every.items()} == {
        "f1": Code.UNSCHEDULABLE,
        "f2": Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    }


def test_filter_error_code_is_wrapped() -> None:
    fwk = _framework({"filter": [("f1", 0)]}, {"f1": {"reject": {"n1": Code.ERROR}}})
    status = fwk.run_filter_plugins(CycleState(), POD, _node("n1"))
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('running Filter plugin "f1": f1 rejects n1',)


def test_scores_are_normalized_then_weighted() -> None:
    fwk = _framework(
        {"score": [("s1", 2), ("s2", 3)]},
        {"s1": {"scores": {"a": 5, "b": 10}, "normalize": True}, "s2": {"scores": {"a": 7, "b": 1}}},
    )
    nodes = [_node("a"), _node("b")]
    result, status = fwk.run_score_plugins(CycleState(), POD, nodes)
    assert status is None
    assert [(r.name, r.scores, r.total) for r in result] == [
        ("a", {"s1": 100, "s2": 21}, 121),
        ("b", {"s1": 200, "s2": 3}, 203),
    ]


def test_score_out_of_range_after_normalize_is_an_error() -> None:
    fwk = _framework({"score": [("s1", 1)]}, {"s1": {"scores": {"a": 101}}})
    _r, status = fwk.run_score_plugins(CycleState(), POD, [_node("a")])
    assert status is not None
    assert status.code == Code.ERROR
    assert "returns an invalid score 101, it should in the range of [0, 100] after normalizing" in status.message()


def _vector_totals(fwk: Framework, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
    table = NodeTable(nodes)
    totals, status = fwk.vector_scores(CycleState(), POD, np.arange(len(nodes), dtype=np.int64), nodes, table)
    return totals.tolist(), status


def test_vector_scores_are_the_weighted_sum_of_every_path() -> None:
    """Vector plugins' scores are summed together, around a per-node plugin: the totals of run_score_plugins."""
    points = {"score": [("vs1", 2), ("s1", 1), ("vs2", 3)]}
    args = {
        "vs1": {"scores": {"a": 5, "b": 10, "c": 0}},
        "s1": {"scores": {"a": 7, "b": 1, "c": 100}},
        "vs2": {"scores": {"a": 0, "b": 100, "c": 50}},
    }
    fwk = _framework(points, args)
    nodes = [_node("a"), _node("b"), _node("c")]
    result, status = fwk.run_score_plugins(CycleState(), POD, nodes)
    assert status is None
    assert _vector_totals(fwk, nodes) == ([r.total for r in result], None) == ([17, 321, 250], None)


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(
            {"vs1": {"a": 1}, "vs2": {"a": 101}, "vs3": {"a": -1}, "s1": {"a": 101}},
            "'vs2' returns an invalid score 101",
            id="vector-plugin-before-a-later-per-node-one",
        ),
        pytest.param(
            {"vs1": {"a": 1}, "vs2": {"a": -3}, "vs3": {"a": 200}, "s1": {"a": 0}},
            "'vs2' returns an invalid score -3",
            id="below-range",
        ),
        pytest.param(
            {"vs1": {"a": 1}, "vs2": {"a": 50}, "vs3": {"a": -1}, "s1": {"a": 101}},
            "'s1' returns an invalid score 101",
            id="per-node-plugin-before-a-later-vector-one",
        ),
    ],
)
def test_vector_scores_out_of_range_in_upstream_order(args: dict[str, dict[str, int]], want: str) -> None:
    """Upstream checks each plugin's normalised scores in plugin order: the first plugin out of [0, 100] is the
    error, whichever path (vector or per node) computed it."""
    points = {"score": [("vs1", 1), ("vs2", 1), ("s1", 1), ("vs3", 1)]}
    fwk = _framework(points, {name: {"scores": scores} for name, scores in args.items()})
    _totals, status = _vector_totals(fwk, [_node("a")])
    assert status is not None
    assert status.code == Code.ERROR
    assert f"plugin {want}, it should in the range of [0, 100] after normalizing" in status.message()


_SCORE = st.integers(-3, 103) | st.sampled_from([-(2**63), -(2**62), 2**62, 2**63 - 1])


@given(
    st.integers(1, 4).flatmap(
        lambda n: st.lists(
            st.tuples(st.lists(_SCORE, min_size=n, max_size=n), st.integers(1, 100)), min_size=1, max_size=5
        )
    )
)
def test_settle_is_each_plugins_range_check_then_the_weighted_sum(pending: list[tuple[list[int], int]]) -> None:
    """The fused Score stage (one concatenation, one unsigned reduction for both bounds, one product) answers as
    upstream's per-plugin loop: the first plugin (in order) with a score outside [0, 100] is the error, with the
    first out-of-range value's bound; otherwise the weighted sum."""
    n = len(pending[0][0])
    total = np.zeros(n, np.int64)
    status = _settle(total, [(f"p{i}", np.array(raw, np.int64), w) for i, (raw, w) in enumerate(pending)])
    bad = [(i, raw) for i, (raw, _w) in enumerate(pending) if max(raw) > 100 or min(raw) < 0]
    if not bad:
        assert status is None
        assert total.tolist() == [sum(raw[j] * w for raw, w in pending) for j in range(n)]
        return
    i, raw = bad[0]
    value = max(raw) if max(raw) > 100 else min(raw)
    assert status is not None
    assert status.code == Code.ERROR
    assert f"plugin 'p{i}' returns an invalid score {value}," in status.message()


async def test_permit_wait_allow() -> None:
    fwk = _framework({"permit": [("permit1", 0)]}, {"permit1": {}})
    status = fwk.run_permit_plugins(CycleState(), POD, "n1")
    assert status is not None
    assert status.code == Code.WAIT
    waiter = asyncio.ensure_future(fwk.wait_on_permit(POD))
    await asyncio.sleep(0)
    waiting = fwk.get_waiting_pod(POD.uid)
    assert waiting is not None
    waiting.allow("permit1")
    assert await waiter is None
    assert fwk.get_waiting_pod(POD.uid) is None


async def test_permit_wait_reject_and_timeout() -> None:
    clock = FakeClock()
    fwk = _framework({"permit": [("permit1", 0)]}, {"permit1": {"timeout": 5}}, clock=clock)
    fwk.run_permit_plugins(CycleState(), POD, "n1")
    waiter = asyncio.ensure_future(fwk.wait_on_permit(POD))
    for _ in range(3):
        await asyncio.sleep(0)
    await clock.advance(5.0)
    status = await waiter
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == "permit1"
    assert status.reasons == ("rejected due to timeout after waiting 5s at plugin permit1",)

    fwk.run_permit_plugins(CycleState(), POD, "n1")
    waiter = asyncio.ensure_future(fwk.wait_on_permit(POD))
    await asyncio.sleep(0)
    waiting = fwk.get_waiting_pod(POD.uid)
    assert waiting is not None
    waiting.reject("permit1", "no")
    status = await waiter
    assert status is not None
    assert status.reasons == ("no",)


async def test_bind_without_plugins_is_skip() -> None:
    fwk = _framework({}, {})
    status = await fwk.run_bind_plugins(CycleState(), POD, "n1")
    assert status is not None
    assert status.code == Code.SKIP


class _Nominations:
    def __init__(self, pods: list[PodInfo]) -> None:
        self.pods = pods

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.pods)

    def nominated_node_names(self) -> list[str]:
        return ["n1"] if self.pods else []


def test_filter_with_nominated_pods_reads_the_handles_nominator_by_default() -> None:
    """Upstream's RunFilterPluginsWithNominatedPods takes no pod list: pods nominated to the node (from the
    nominator) count when their priority is at least the incoming pod's, and the pod must also fit without them."""
    capacity = {"cpu": "2", "pods": "10"}
    snapshot = Snapshot.from_objects([{"metadata": {"name": "n1"}, "status": {"allocatable": capacity}}], [])
    fwk = build_profiles(default_config(), Handle(snapshot_lister=snapshot))["default-scheduler"]

    def pod(name: str, priority: int, cpu: str) -> PodInfo:
        container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
        meta = {"name": name, "namespace": "default", "uid": name}
        return PodInfo({"metadata": meta, "spec": {"priority": priority, "containers": [container]}})

    fwk.handle.nominator = _Nominations([pod("nominated", 10, "1500m")])
    node = snapshot.list()[0]
    for incoming, fits in ((pod("low", 0, "1"), False), (pod("high", 20, "1"), True)):
        state = CycleState()
        fwk.run_pre_filter_plugins(state, incoming, snapshot.list())
        status = fwk.run_filter_plugins_with_nominated_pods(state, incoming, node)
        assert (status is None) is fits, status
        if not fits:
            assert status is not None
            assert status.reasons == ("Insufficient cpu",)
