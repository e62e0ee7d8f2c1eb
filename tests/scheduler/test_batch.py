"""The batch state on its own: upstream ``pkg/scheduler/framework/runtime/batch_test.go`` ``TestBatchBasic``
(every case, by upstream's name) and the rules of ``batch.go`` its table does not reach (``maxBatchAge``, the
previous node gone from the snapshot, a used hint keeping the rest of the list).

As upstream's test, a Filter plugin ``batchTest`` lets a node hold one *blocking* pod (uid starting with ``b``)
at most, so blocking pods are "one pod per node" and others are not; the signature is whatever the case says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.batch import MAX_BATCH_AGE, OpportunisticBatch, SortedScoredNodes
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo


class BatchTestPlugin:
    """Upstream's ``BatchTestPlugin``: a blocking pod does not fit a node that holds a blocking pod."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass

    def name(self) -> str:
        return "batchTest"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if pod.uid.startswith("b") and any(p.uid.startswith("b") for p in node.pods):
            return Status.unschedulable("unsched")
        return None


@dataclass
class FixedSigner:
    """Upstream's ``newTestSigFunc``: every pod gets the signature the case sets."""

    signature: str | None = "sig"

    def sign(self, pod: PodInfo) -> str | None:
        return self.signature


def _framework() -> Framework:
    registry = Registry()
    registry.register("batchTest", BatchTestPlugin)
    return Framework(
        profile_name="default-scheduler",
        points={"filter": [("batchTest", 1)]},
        plugin_args={},
        registry=registry,
        handle=Handle(),
    )


def _pod(name: str, uid: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "d", "uid": uid}, "spec": spec}


def _node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {"pods": "110"}}}


def _lister(snapshot: Snapshot) -> Any:
    by_name = {ni.name: ni for ni in snapshot.list()}
    return by_name.get


@dataclass
class Case:
    first_pod_id: str
    first_sig: str | None = "sig"
    first_scheduled: bool = True
    first_chosen: str = "n3"
    first_others: list[str] | None = field(default_factory=lambda: ["n1"])
    skip_pod: bool = False
    second_pod_id: str = ""
    second_sig: str | None = "sig"
    second_chosen: str = "n1"
    expected_hint: str = ""
    expected_state: list[str] | None = None


CASES = {
    "a second pod with the same signature gets a hint": Case("b-1", second_pod_id="b-2", expected_hint="n1"),
    "a second pod with a different signature doesn't get a hint": Case("a-1", second_pod_id="a-2", second_sig="sig2"),
    "a second pod doesn't get a hint if it's not 1-pod-per-node": Case("a-1", second_pod_id="a-2"),
    "pod doesn't get hint if previous pod didn't scheduled": Case("b-1", first_scheduled=False, second_pod_id="b-2"),
    "empty list": Case("b-1", first_others=[], second_pod_id="b-2", second_chosen="n4"),
    "nil list": Case("b-1", first_others=None, second_pod_id="b-2", second_chosen="n4"),
    "pod doesn't get hint because the previous pod is to a different profile": Case(
        "b-1", skip_pod=True, second_pod_id="b-2"
    ),
    "pod uses batch from preceding pod and leaves remaining batch to next pod": Case(
        "b-1", first_others=["n1", "n2"], second_pod_id="b-2", expected_hint="n1", expected_state=["n2"]
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_batch_basic(case: Case) -> None:
    """Upstream ``TestBatchBasic``: the first pod's results, then the second pod's hint and the state left."""
    signer = FixedSigner(case.first_sig)
    batch = OpportunisticBatch(_framework(), signer, FakeClock())
    first = PodInfo(_pod("pod", case.first_pod_id))
    state = CycleState()
    hint, _ = batch.get_node_hint(state, first, 1, lambda _name: None)
    assert hint == ""
    if case.first_scheduled:
        others = None if case.first_others is None else SortedScoredNodes(list(case.first_others))
        batch.store_schedule_results(case.first_sig, hint, case.first_chosen, others, 1)
    cycle = 3 if case.skip_pod else 2
    # The node chosen for the first pod now holds it (the scheduler assumed it there).
    snapshot = Snapshot.from_objects([_node(case.first_chosen)], [_pod("pod", case.first_pod_id, case.first_chosen)])
    signer.signature = case.second_sig
    second = PodInfo(_pod("pod2", case.second_pod_id))
    hint, _ = batch.get_node_hint(state, second, cycle, _lister(snapshot))
    assert hint == case.expected_hint
    batch.store_schedule_results(case.second_sig, hint, case.second_chosen, None, cycle)
    if case.expected_state is None:
        assert batch.state is None or len(batch.state.sorted_nodes) == 0
    else:
        assert batch.state is not None
        assert batch.state.signature == case.second_sig
        assert batch.state.sorted_nodes.remaining() == case.expected_state


def _primed(clock: FakeClock, others: list[str]) -> tuple[OpportunisticBatch, CycleState]:
    batch = OpportunisticBatch(_framework(), FixedSigner(), clock)
    state = CycleState()
    batch.get_node_hint(state, PodInfo(_pod("pod", "b-1")), 1, lambda _n: None)
    batch.store_schedule_results("sig", "", "n3", SortedScoredNodes(others), 1)
    return batch, state


async def test_a_list_older_than_max_batch_age_gives_no_hint() -> None:
    """batch.go: ``time.Now().After(creationTime + maxBatchAge)`` flushes with reason expired (on the injected
    clock here)."""
    clock = FakeClock()
    batch, state = _primed(clock, ["n1"])
    await clock.advance(MAX_BATCH_AGE + 0.001)
    snapshot = Snapshot.from_objects([_node("n3")], [_pod("pod", "b-1", "n3")])
    hint, _ = batch.get_node_hint(state, PodInfo(_pod("pod2", "b-2")), 2, _lister(snapshot))
    assert hint == ""
    assert batch.flushes["expired"] == 1


async def test_a_list_exactly_max_batch_age_old_still_hints() -> None:
    """``After`` is strict: at exactly 500 ms the state is still usable."""
    clock = FakeClock()
    batch, state = _primed(clock, ["n1"])
    await clock.advance(MAX_BATCH_AGE)
    snapshot = Snapshot.from_objects([_node("n3")], [_pod("pod", "b-1", "n3")])
    hint, _ = batch.get_node_hint(state, PodInfo(_pod("pod2", "b-2")), 2, _lister(snapshot))
    assert hint == "n1"


def test_the_previous_node_gone_from_the_snapshot_gives_no_hint() -> None:
    """batch.go: ``nodeInfos.Get(lastCycle.chosenNode)`` fails -> BatchFlushNodeMissing."""
    batch, state = _primed(FakeClock(), ["n1"])
    hint, _ = batch.get_node_hint(state, PodInfo(_pod("pod2", "b-2")), 2, lambda _n: None)
    assert hint == ""
    assert batch.flushes["node_missing"] == 1


def test_a_used_hint_keeps_the_rest_for_the_following_pods() -> None:
    """StoreScheduleResults with hintedNode == chosenNode leaves the state alone: three pods in a row take n1, n2
    then n4 from one list, each time because the node before is full; batchedPods counts them."""
    batch, state = _primed(FakeClock(), ["n1", "n2", "n4"])
    placed = {"n3": "b-1"}
    for cycle, (uid, want) in enumerate([("b-2", "n1"), ("b-3", "n2"), ("b-4", "n4")], start=2):
        pods = [_pod(f"p{u}", u, n) for n, u in placed.items()]
        snapshot = Snapshot.from_objects([_node(n) for n in placed], pods)
        hint, sig = batch.get_node_hint(state, PodInfo(_pod(f"p{uid}", uid)), cycle, _lister(snapshot))
        assert hint == want
        batch.store_schedule_results(sig, hint, hint, None, cycle)
        placed[hint] = uid
    assert batch.batched_pods == 3
    assert batch.state is None or len(batch.state.sorted_nodes) == 0


def test_a_hint_not_taken_replaces_the_state() -> None:
    """StoreScheduleResults with a hint that was not chosen (it failed Filter, or a nominated node won):
    hint_not_used, and this cycle's list becomes the state."""
    batch, state = _primed(FakeClock(), ["n1", "n2"])
    snapshot = Snapshot.from_objects([_node("n3")], [_pod("pod", "b-1", "n3")])
    hint, sig = batch.get_node_hint(state, PodInfo(_pod("pod2", "b-2")), 2, _lister(snapshot))
    assert hint == "n1"
    batch.store_schedule_results(sig, hint, "n7", SortedScoredNodes(["n8", "n9"]), 2)
    assert batch.attempts["hint_not_used"] == 1
    assert batch.state is not None
    assert batch.state.sorted_nodes.remaining() == ["n8", "n9"]


def test_a_pod_without_signature_drops_the_state() -> None:
    """StoreScheduleResults with a nil signature: BatchFlushPodNotBatchable, state nil."""
    batch, _ = _primed(FakeClock(), ["n1"])
    batch.store_schedule_results(None, "", "n5", SortedScoredNodes.unordered(4), 2)
    assert batch.state is None
    assert batch.flushes["pod_not_batchable"] == 1
