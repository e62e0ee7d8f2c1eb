"""Opportunistic batching inside the scheduling cycle (upstream ``schedule_one.go``: GetNodeHint after PreFilter,
the hint tried as a nominated node is, StoreScheduleResults after selection) on real profiles.

Under v1.37's defaults no pod is signed (NodeResourcesFit and NodeResourcesBalancedAllocation refuse while
DRAExtendedResource is on, PodTopologySpread while it has System default constraints), so decisions are those of a
scheduler without batching, draw for draw. The batchable profile of the other tests is the default one with
``PodTopologySpread`` defaulting ``List`` and DRAExtendedResource off for the signer, on nodes that hold one pod
each (``pods: 1``), which is the "one pod per node" stream KEP-5598 optimises.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.batch import OpportunisticBatch
from kubeplane.scheduler.config import default_config, parse_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.recorder import CycleRecorder
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import FitError, ScheduleResult, SchedulingCycle
from kubeplane.scheduler.signature import PodSigner

LIST_DEFAULTING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        }
    ],
}
NO_DRA_EXTENDED = {"DRAExtendedResource": False}


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "1", **spec: Any) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(i: int, **status: Any) -> PodInfo:
    spec = {"containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}
    return PodInfo({"metadata": {"name": f"p{i}", "namespace": "d", "uid": f"u{i}"}, "spec": spec, "status": status})


class Harness:
    """A cache, its snapshot, one profile and a cycle, scheduling pods one after another as the scheduler does
    (snapshot update, cycle, assume); ``batching`` wires an OpportunisticBatch with the queue's cycle counter."""

    def __init__(
        self, nodes: list[dict[str, Any]], *, config: Any, batching: bool, gates: dict[str, bool] | None = None
    ) -> None:
        self.cache = Cache(FakeClock())
        for n in nodes:
            self.cache.add_node(n)
        self.snapshot = Snapshot()
        self.fwk: Framework = build_profiles(config, Handle(snapshot_lister=self.snapshot))["default-scheduler"]
        self.cycle = SchedulingCycle(rng=random.Random(7))
        self.count = 0
        self.batch: OpportunisticBatch | None = None
        if batching:
            self.batch = OpportunisticBatch(self.fwk, PodSigner(self.fwk, gates), FakeClock())
            self.cycle.enable_batching({"default-scheduler": self.batch}, lambda: self.count)

    def schedule(self, p: PodInfo, *, assume: bool = True) -> ScheduleResult | str:
        self.count += 1
        self.cache.update_snapshot(self.snapshot)
        try:
            result = self.cycle.schedule(self.fwk, CycleState(), p, self.snapshot.list(), self.snapshot.node_table)
        except FitError as exc:
            return str(exc)
        if assume:
            self.cache.assume_pod(p.with_node_name(result.suggested_host))
        return result

    def reference_totals(self, p: PodInfo) -> dict[str, int]:
        """What a full cycle (no batching) scores for ``p`` on the current state: feasible node -> total."""
        self.cache.update_snapshot(self.snapshot)
        recorder = CycleRecorder()
        try:
            SchedulingCycle(rng=random.Random(0)).schedule(
                self.fwk, CycleState(), p, self.snapshot.list(), self.snapshot.node_table, recorder=recorder
            )
        except FitError:
            return {}
        return {n: r.total for n, r in recorder.nodes.items() if r.total is not None and n in recorder.feasible}


def _hosts(h: Harness, n: int) -> list[str]:
    out = []
    for i in range(n):
        r = h.schedule(pod(i))
        out.append(r if isinstance(r, str) else r.suggested_host)
    return out


def test_v1_37_defaults_sign_no_pod_and_decide_exactly_as_without_batching() -> None:
    """fit.go / balanced_allocation.go SignPod ("signature disabled when dra extended resources enabled") and
    podtopologyspread SignPod (System default constraints): no hint ever; same hosts, same tie-break draws."""
    nodes = [node(f"n{i}") for i in range(12)]
    on = Harness(nodes, config=default_config(), batching=True)
    off = Harness(nodes, config=default_config(), batching=False)
    assert _hosts(on, 14) == _hosts(off, 14)
    assert on.batch is not None
    assert on.batch.batched_pods == 0
    assert on.batch.signer.sign(pod(0)) is None


def _graded(count: int) -> list[dict[str, Any]]:
    """Nodes whose totals strictly grow with the index: cpu and memory double together (LeastAllocated grows,
    BalancedAllocation stays equal)."""
    return [node(f"n{i}", cpu=str(2 ** (i + 1)), memory=f"{2 ** (i + 2)}Gi") for i in range(count)]


def test_identical_pods_take_the_runners_up_of_the_first_cycle() -> None:
    """One full cycle, then each next pod binds to its hint: Filter on that node alone, no Score
    (``EvaluatedNodes: 1``), and the list is consumed best first."""
    nodes = _graded(6)
    h = Harness(nodes, config=parse_config(LIST_DEFAULTING), batching=True, gates=NO_DRA_EXTENDED)
    results = [h.schedule(pod(i)) for i in range(6)]
    assert all(isinstance(r, ScheduleResult) for r in results)
    hosts = [r.suggested_host for r in results if isinstance(r, ScheduleResult)]
    assert hosts == ["n5", "n4", "n3", "n2", "n1", "n0"]
    assert [r.evaluated_nodes for r in results if isinstance(r, ScheduleResult)] == [6, 1, 1, 1, 1, 1]
    assert h.batch is not None
    assert h.batch.batched_pods == 5
    assert isinstance(h.schedule(pod(6)), str)  # every node holds its one pod: FitError, as without batching


def test_a_hint_that_fails_filter_falls_back_to_a_full_cycle() -> None:
    """evaluateNominatedNode on the hint finds it infeasible (the node was cordoned): the full search runs and
    StoreScheduleResults counts the hint as not used and keeps the new list."""
    nodes = _graded(4)
    h = Harness(nodes, config=parse_config(LIST_DEFAULTING), batching=True, gates=NO_DRA_EXTENDED)
    first = h.schedule(pod(0))
    assert isinstance(first, ScheduleResult)
    assert first.suggested_host == "n3"
    cordoned = {**nodes[2], "spec": {"unschedulable": True}}
    h.cache.update_node(nodes[2], cordoned)
    second = h.schedule(pod(1))
    assert isinstance(second, ScheduleResult)
    assert second.suggested_host == "n1"
    assert h.batch is not None
    assert h.batch.attempts["hint_not_used"] == 1
    assert h.batch.state is not None
    assert h.batch.state.sorted_nodes.remaining() == ["n0"]


def test_a_nominated_node_wins_over_the_hint() -> None:
    """schedule_one.go evaluateNominatedNode: ``nnn := pod.Status.NominatedNodeName`` first, the hint only without
    one; the hint was popped, so the cycle stores an empty list (BatchFlushEmptyList)."""
    nodes = _graded(4)
    h = Harness(nodes, config=parse_config(LIST_DEFAULTING), batching=True, gates=NO_DRA_EXTENDED)
    h.schedule(pod(0))
    second = h.schedule(pod(1, nominatedNodeName="n0"))
    assert isinstance(second, ScheduleResult)
    assert second.suggested_host == "n0"
    assert h.batch is not None
    assert h.batch.state is None
    assert h.batch.flushes["empty_list"] == 1


def test_a_pod_that_still_fits_the_previous_node_gets_no_hint() -> None:
    """batch.go BatchFlushNodeNotFull: nodes that hold many pods are not a one-pod-per-node stream; every pod runs
    the full cycle."""
    nodes = [node(f"n{i}", pods="10") for i in range(4)]
    h = Harness(nodes, config=parse_config(LIST_DEFAULTING), batching=True, gates=NO_DRA_EXTENDED)
    _hosts(h, 6)
    assert h.batch is not None
    assert h.batch.batched_pods == 0
    assert h.batch.flushes["node_not_full"] == 5


@st.composite
def one_pod_per_node_clusters(draw: Any) -> tuple[list[dict[str, Any]], int]:
    n = draw(st.integers(2, 40))
    nodes = [
        node(
            f"n{i}",
            cpu=draw(st.sampled_from(["1", "2", "3", "4", "8"])),
            memory=draw(st.sampled_from(["2Gi", "4Gi", "16Gi"])),
        )
        for i in range(n)
    ]
    return nodes, draw(st.integers(1, n + 2))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(one_pod_per_node_clusters())
def test_every_batched_placement_is_a_best_node_of_a_full_cycle(cluster: Any) -> None:
    """KEP-5598's correctness argument, the guarantee upstream makes: for a stream of identical pods that fill a
    node each, on fewer than 100 nodes (a full cycle examines every node) with node-local scores, the hinted node
    has the highest total a full cycle would compute at that moment. Ties may be broken differently (upstream's
    random tie-breakers), so hosts are compared only where the best node is unique; pods fit exactly when they
    fit without batching."""
    nodes, pods = cluster
    h = Harness(nodes, config=parse_config(LIST_DEFAULTING), batching=True, gates=NO_DRA_EXTENDED)
    for i in range(pods):
        p = pod(i)
        reference = h.reference_totals(p)
        result = h.schedule(p)
        if not reference:
            assert isinstance(result, str)
            continue
        assert isinstance(result, ScheduleResult)
        best = max(reference.values())
        assert reference[result.suggested_host] == best
        winners = [n for n, t in reference.items() if t == best]
        if len(winners) == 1:
            assert result.suggested_host == winners[0]
    assert h.batch is not None
    assert h.batch.batched_pods == max(min(pods, len(nodes)) - 1, 0)
