"""DefaultPreemption against upstream's default_preemption_test.go (TestPostFilter, TestDryRunPreemption /
SelectVictimsOnNode, TestSelectBestCandidate, TestPodEligibleToPreemptOthers, TestCalculateNumCandidates) and
preemption_test.go (filterPodsWithPDBViolation), plus the execution step against a recording client.

The evaluation cases run through :func:`kubeplane.scheduler.explain.explain` with the default profile: the real
Filter plugins produce the node statuses preemption starts from, exactly as in a scheduling cycle, and the
``preemption`` section reports the nominated node, every candidate's victims and PDB violations, and the message.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import PatchType
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config, parse_config
from kubeplane.scheduler.explain import explain
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, NodeToStatus, Status
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.default_preemption import (
    Candidate,
    DefaultPreemption,
    ScoreMemo,
    _rows_for_status_code,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
    start_time,
)
from kubeplane.scheduler.profile import build_profiles

T0 = "2026-01-01T00:00:00Z"


def node(name: str, cpu: str = "4", memory: str = "8Gi", **labels: str) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(
    name: str,
    *,
    priority: int = 0,
    cpu: str = "0",
    node_name: str = "",
    labels: Mapping[str, str] | None = None,
    start: str | None = T0,
    **spec: Any,
) -> dict[str, Any]:
    requests = {"cpu": cpu} if cpu != "0" else {}
    body: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": dict(labels or {})},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
            **spec,
        },
        "status": {"startTime": start} if start else {},
    }
    if node_name:
        body["spec"]["nodeName"] = node_name
    return body


def pdb(name: str, labels: Mapping[str, str], allowed: int, disrupted: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": dict(labels)}},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": dict.fromkeys(disrupted, T0)},
    }


def preemption(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], objects: Sequence[Any] = ()
) -> dict[str, Any]:
    out = explain(incoming, nodes=nodes, pods=pods, objects=objects, seed=0)
    assert out["selected"] is None, "the pod must not fit for preemption to run"
    result: dict[str, Any] = out["preemption"]
    result["fitError"] = out["message"]
    # The default profile runs DynamicResources' PostFilter before DefaultPreemption; for a pod without claims it
    # says "no new claims to deallocate" and upstream RunPostFilterPlugins joins every Unschedulable plugin's
    # reasons. Strip that prefix so DefaultPreemption's own (upstream TestPostFilter) messages compare verbatim.
    prefix = "no new claims to deallocate, "
    if result["message"]:
        assert result["message"].startswith(prefix), result["message"]
        result["message"] = result["message"].removeprefix(prefix)
        result["fitError"] = result["fitError"].replace(f". {prefix}", ". ", 1)
    return result


# --- TestPostFilter ------------------------------------------------------------------------------------------


def test_pod_with_higher_priority_can_be_made_schedulable() -> None:
    got = preemption(
        pod("p", priority=10, cpu="2"), [node("node1", cpu="2")], [pod("low", priority=1, cpu="2", node_name="node1")]
    )
    assert got["nominatedNode"] == "node1"
    assert got["candidates"] == {"node1": {"victims": ["default/low"], "pdbViolations": 0}}
    assert got["message"] == ""
    assert got["fitError"] == "0/1 nodes are available: 1 Insufficient cpu."


def test_pod_with_tied_priority_is_still_unschedulable() -> None:
    got = preemption(
        pod("p", priority=1, cpu="2"), [node("node1", cpu="2")], [pod("peer", priority=1, cpu="2", node_name="node1")]
    )
    assert got["nominatedNode"] is None
    assert got["candidates"] == {}
    assert got["message"] == "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    assert got["fitError"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
    )


def test_unresolvable_nodes_are_not_helped_by_preemption() -> None:
    got = preemption(
        pod("p", priority=10, nodeSelector={"disk": "ssd"}),
        [node("node1")],
        [pod("low", priority=1, node_name="node1")],
    )
    assert got["message"] == "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


def test_pod_can_be_made_schedulable_on_one_node_only() -> None:
    got = preemption(
        pod("p", priority=10, cpu="2"),
        [node("node1", cpu="2"), node("node2", cpu="2")],
        [pod("low", priority=1, cpu="2", node_name="node1"), pod("high", priority=20, cpu="2", node_name="node2")],
    )
    assert got["nominatedNode"] == "node1"
    assert list(got["candidates"]) == ["node1"]


def test_no_candidate_when_removing_every_lower_priority_pod_is_not_enough() -> None:
    got = preemption(
        pod("p", priority=10, cpu="3"),
        [node("node1", cpu="4"), node("node2", cpu="4")],
        [
            pod("low1", priority=1, cpu="1", node_name="node1"),
            pod("high1", priority=20, cpu="2", node_name="node1"),
            pod("low2", priority=1, cpu="1", node_name="node2"),
            pod("high2", priority=20, cpu="2", node_name="node2"),
        ],
    )
    assert got["nominatedNode"] is None
    assert got["message"] == "preemption: 0/2 nodes are available: 2 Insufficient cpu."


def test_mixed_reasons_are_counted_per_node() -> None:
    got = preemption(
        pod("p", priority=10, cpu="3"),
        [node("node1", cpu="4"), node("node2", cpu="4"), node("node3", cpu="2"), node("node4", cpu="4")],
        [
            pod("peer", priority=10, cpu="2", node_name="node1"),  # no lower-priority pod: no victims
            pod("low", priority=1, cpu="1", node_name="node2"),
            pod("high", priority=20, cpu="2", node_name="node2"),  # not enough even without `low`
            pod("big", priority=20, cpu="4", node_name="node4"),
        ],
    )
    # node3 (2 CPUs) can never hold 3: UnschedulableAndUnresolvable, not a candidate.
    assert got["message"] == (
        "preemption: 0/4 nodes are available: 1 Insufficient cpu, 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )


# --- SelectVictimsOnNode (TestDryRunPreemption) ----------------------------------------------------------------


def test_victims_are_the_lowest_priority_pods_with_reprieve() -> None:
    got = preemption(
        pod("p", priority=100, cpu="2"),
        [node("node1", cpu="5")],
        [
            pod("small-low", priority=1, cpu="1", node_name="node1"),
            pod("mid", priority=50, cpu="3", node_name="node1"),
            pod("top", priority=200, cpu="1", node_name="node1"),
        ],
    )
    # Without both lower pods: 1 used of 5. Reprieve `mid` first (1+3+2 = 6 > 5: victim), then `small-low` fits.
    assert got["candidates"] == {"node1": {"victims": ["default/mid"], "pdbViolations": 0}}


def test_victims_are_listed_most_important_first() -> None:
    got = preemption(
        pod("p", priority=100, cpu="4"),
        [node("node1", cpu="4")],
        [
            pod("a", priority=5, cpu="1", node_name="node1"),
            pod("b", priority=7, cpu="1", node_name="node1"),
            pod("c", priority=5, cpu="1", node_name="node1", start="2025-06-01T00:00:00Z"),
        ],
    )
    # Equal priority: the pod that started earlier (c) is more important.
    assert got["candidates"]["node1"]["victims"] == ["default/b", "default/c", "default/a"]


def test_pdb_violating_victims_are_reprieved_first_and_counted() -> None:
    got = preemption(
        pod("p", priority=100, cpu="2"),
        [node("node1", cpu="3")],
        [
            pod("guarded", priority=1, cpu="1", node_name="node1", labels={"app": "db"}),
            pod("free", priority=5, cpu="1", node_name="node1"),
            pod("guarded2", priority=1, cpu="1", node_name="node1", labels={"app": "db"}),
        ],
        [pdb("db", {"app": "db"}, allowed=0)],
    )
    # Two of the three must go. The guarded pods violate the PDB: they are reprieved first (one fits back).
    victims = got["candidates"]["node1"]
    assert victims["pdbViolations"] == 1
    assert sorted(victims["victims"]) == ["default/free", "default/guarded2"]


def test_node_without_pdb_violations_is_preferred() -> None:
    got = preemption(
        pod("p", priority=100, cpu="2"),
        [node("node1", cpu="2"), node("node2", cpu="2")],
        [
            pod("guarded", priority=1, cpu="2", node_name="node1", labels={"app": "db"}),
            pod("plain", priority=5, cpu="2", node_name="node2"),
        ],
        [pdb("db", {"app": "db"}, allowed=0)],
    )
    assert got["candidates"]["node1"]["pdbViolations"] == 1
    assert got["nominatedNode"] == "node2"


# --- TestSelectBestCandidate -----------------------------------------------------------------------------------


def _victim(name: str, priority: int, start: str = T0) -> PodInfo:
    return PodInfo(pod(name, priority=priority, start=start))


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        pytest.param(
            [Candidate("n1", [_victim("a", 1)], 1), Candidate("n2", [_victim("b", 9)], 0)], "n2", id="fewest PDB"
        ),
        pytest.param(
            [Candidate("n1", [_victim("a", 9)], 0), Candidate("n2", [_victim("b", 5), _victim("c", 4)], 0)],
            "n2",
            id="lowest highest-priority victim",
        ),
        pytest.param(
            [
                Candidate("n1", [_victim("a", 5), _victim("b", 5)], 0),
                Candidate("n2", [_victim("c", 5), _victim("d", 1)], 0),
            ],
            "n2",
            id="smallest sum of priorities",
        ),
        pytest.param(
            [
                Candidate("n1", [_victim("a", -5), _victim("b", -5)], 0),
                Candidate("n2", [_victim("c", -5)], 0),
            ],
            "n2",
            id="negative priorities: fewer victims win the sum",
        ),
        pytest.param(
            [
                Candidate("n1", [_victim("a", 5, "2025-01-01T00:00:00Z")], 0),
                Candidate("n2", [_victim("b", 5, "2025-03-01T00:00:00Z")], 0),
            ],
            "n2",
            id="latest start time",
        ),
        pytest.param(
            [Candidate("n1", [_victim("a", 5)], 0), Candidate("n2", [_victim("b", 5)], 0)], "n1", id="tie: first"
        ),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], want: str) -> None:
    best = pick_one_node_for_preemption(candidates, now=1e9)
    assert best is not None
    assert best.name == want


# --- filterPodsWithPDBViolation --------------------------------------------------------------------------------


def test_filter_pods_with_pdb_violation_charges_each_budget_in_order() -> None:
    pods = [PodInfo(pod(n, labels={"app": "web"})) for n in ("w1", "w2", "w3")] + [PodInfo(pod("other"))]
    budgets = [pdb("web", {"app": "web"}, allowed=1, disrupted=["w2"])]
    violating, ok = filter_pods_with_pdb_violation(pods, budgets)
    # w1 uses the one allowed disruption; w2 is already being disrupted (not charged); w3 violates.
    assert [p.name for p in violating] == ["w3"]
    assert [p.name for p in ok] == ["w1", "w2", "other"]
    empty = [{**pdb("all", {}, allowed=0), "spec": {"selector": {}}}]
    assert filter_pods_with_pdb_violation(pods, empty)[0] == []  # an empty selector matches nothing


# --- TestPodEligibleToPreemptOthers / TestCalculateNumCandidates -------------------------------------------------


def _plugin(
    pods: Sequence[dict[str, Any]] = (), nodes: Sequence[dict[str, Any]] = (), **args: int
) -> DefaultPreemption:
    snapshot = Snapshot.from_objects(list(nodes), list(pods))
    handle = Handle(rng=random.Random(0), snapshot_lister=snapshot)
    config = default_config()
    if args:
        plugin_config = [{"name": "DefaultPreemption", "args": args}]
        config = parse_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": plugin_config}],
            }
        )
    fwk = build_profiles(config, handle)["default-scheduler"]
    return next(p for p in fwk.post_filter_plugins if isinstance(p, DefaultPreemption))


def test_preemption_policy_never_is_not_eligible() -> None:
    plugin = _plugin()
    eligible = plugin.pod_eligible_to_preempt_others(PodInfo(pod("p", preemptionPolicy="Never")), None)
    assert eligible == (False, "not eligible due to preemptionPolicy=Never.")


def test_terminating_victim_on_the_nominated_node_blocks_a_new_preemption() -> None:
    victim = pod("victim", priority=1, node_name="node1")
    victim["metadata"]["deletionTimestamp"] = T0
    victim["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    plugin = _plugin([victim], [node("node1")])
    preemptor = PodInfo({**pod("p", priority=10), "status": {"nominatedNodeName": "node1"}})
    assert plugin.pod_eligible_to_preempt_others(preemptor, Status(Code.UNSCHEDULABLE)) == (
        False,
        "not eligible due to a terminating pod on the nominated node.",
    )
    # The nominated node is now unresolvable for the pod: it may preempt elsewhere.
    assert plugin.pod_eligible_to_preempt_others(preemptor, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)) == (True, "")
    # A pod terminating for another reason does not block.
    victim["status"]["conditions"] = []
    assert _plugin([victim], [node("node1")]).pod_eligible_to_preempt_others(preemptor, None) == (True, "")


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "want"),
    [
        pytest.param(5, 100, 10, 10, id="no more than the nodes"),
        pytest.param(10, 100, 5000, 500, id="percentage above the absolute minimum"),
        pytest.param(5, 200, 1000, 200, id="absolute minimum above the percentage"),
        pytest.param(50, 1, 7, 3, id="percentage rounds down"),
    ],
)
def test_calculate_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    plugin = _plugin(minCandidateNodesPercentage=pct, minCandidateNodesAbsolute=absolute)
    assert plugin.calculate_num_candidates(nodes) == want


# --- execution (Executor.PreemptPod, clearNominatedNodeName) ---------------------------------------------------------


class _Resource:
    plural = "pods"


class RecordingClient:
    """Just enough of the Client protocol for the preemption executor: records patches and deletes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def resource(self, name: str) -> _Resource:
        return _Resource()

    async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> dict[str, Any]:
        self.calls.append(("patch", name, (body, kw["patch_type"], kw["subresource"])))
        return {}

    async def delete(self, resource: Any, name: str, **kw: Any) -> dict[str, Any]:
        self.calls.append(("delete", name, kw.get("namespace")))
        return {}


class _Nominated:
    def __init__(self, pods: list[PodInfo]) -> None:
        self.pods = pods

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.pods) if node_name == "node1" else []

    def nominated_node_names(self) -> list[str]:
        return ["node1"] if self.pods else []


async def test_execution_clears_lower_nominations_marks_and_deletes_victims_and_gates_meanwhile() -> None:
    client = RecordingClient()
    plugin = _plugin()
    plugin.handle.client = client  # type: ignore[assignment]
    plugin.handle.clock = FakeClock(start=1_767_225_600.0)
    lower = PodInfo({**pod("lower", priority=5), "status": {"nominatedNodeName": "node1"}})
    higher = PodInfo({**pod("higher", priority=50), "status": {"nominatedNodeName": "node1"}})
    plugin.handle.nominator = _Nominated([lower, higher])
    preemptor = PodInfo(pod("p", priority=10))
    v2 = pod("v2", priority=1, node_name="node1")
    v2["metadata"]["generation"] = 3  # PodObservedGenerationTracking: the condition records the victim's generation
    victims = [PodInfo(pod("v1", priority=1, node_name="node1")), PodInfo(v2)]
    plugin.prepare_candidate(Candidate("node1", victims, 0), preemptor)
    assert plugin.pre_enqueue(preemptor) == Status.unresolvable(
        "waiting for the preemption for this pod to be finished"
    )
    await plugin.wait()
    assert plugin.pre_enqueue(preemptor) is None
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    assert client.calls == [
        ("patch", "lower", ({"status": {"nominatedNodeName": None}}, PatchType.MERGE, "status")),
        ("patch", "v1", ({"status": {"conditions": [condition]}}, PatchType.STRATEGIC, "status")),
        ("delete", "v1", "default"),
        (
            "patch",
            "v2",
            ({"status": {"conditions": [{**condition, "observedGeneration": 3}]}}, PatchType.STRATEGIC, "status"),
        ),
        ("delete", "v2", "default"),
    ]


def _pick_by_successive_filtering(candidates: list[Candidate], now: float) -> Candidate:
    """Upstream pickOneNodeForPreemption as written there: each score function keeps the best candidates of the
    previous one's, stopping at one; the first of the survivors."""

    def earliest_start_of_most_important(c: Candidate) -> float:
        top = max(p.priority for p in c.victims)
        return min(start_time(p, now) for p in c.victims if p.priority == top)

    scores = (
        lambda c: -c.num_pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(p.priority + 2**31 for p in c.victims),
        lambda c: -len(c.victims),
        earliest_start_of_most_important,
    )
    remaining = list(candidates)
    for score in scores:
        values = [score(c) for c in remaining]
        remaining = [c for c, v in zip(remaining, values, strict=True) if v == max(values)]
        if len(remaining) == 1:
            break
    return remaining[0]


_victim_args = st.tuples(st.integers(-2, 3), st.sampled_from(["", T0, "2025-03-01T00:00:00Z"]))


@settings(max_examples=200, deadline=None)
@given(
    specs=st.lists(st.tuples(st.lists(_victim_args, min_size=1, max_size=4), st.integers(0, 2)), min_size=1, max_size=6)
)
def test_pick_one_node_for_preemption_equals_successive_filtering(specs: list[tuple[list[Any], int]]) -> None:
    """The one lexicographic key per candidate picks what the score functions applied one after the other pick
    (victims most important first, as the dry run lists them; pods not started count as started now), with and
    without scores kept from an earlier cycle."""
    candidates = []
    for i, (victims, violations) in enumerate(specs):
        pods = [_victim(f"v{i}-{j}", prio, start) for j, (prio, start) in enumerate(victims)]
        pods.sort(key=lambda p: (-p.priority, start_time(p, 1e9)))
        candidates.append(Candidate(f"n{i}", pods, violations))
    best = pick_one_node_for_preemption(candidates, now=1e9)
    assert best is _pick_by_successive_filtering(candidates, now=1e9)
    # DefaultPreemption keeps the scores of the VictimCache's victims lists across cycles: a later cycle (the
    # clock moved on, between the victims' start times) picks as if it scored afresh.
    memo: ScoreMemo = {}
    assert pick_one_node_for_preemption(candidates, now=1e9, memo=memo) is best
    later = 1_750_000_000.0  # 2025-06-15: between the two start times the victims may have
    assert pick_one_node_for_preemption(candidates, now=later, memo=memo) is _pick_by_successive_filtering(
        candidates, now=later
    )


_CODES = [Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.ERROR]


@settings(max_examples=200, deadline=None)
@given(
    entries=st.lists(st.one_of(st.none(), st.integers(0, 2), st.integers(3, 40)), max_size=60),
    absent=st.sampled_from(_CODES),
)
def test_potential_rows_equal_nodes_for_status_code(entries: list[int | None], absent: Code) -> None:
    """Upstream findCandidates' ``NodesForStatusCode(Unschedulable)`` as table rows, whether the statuses are
    shared objects (0-2: the node search's one Status per reason set) or one per node (3+, each a new object:
    more distinct statuses than the identity match takes), absent nodes following the absent status's code."""
    shared = [Status(code, ("shared",)) for code in _CODES]
    names = [f"n{i}" for i in range(len(entries))]
    m = NodeToStatus(absent_nodes_status=Status(absent))
    for name, entry in zip(names, entries, strict=True):
        if entry is not None:
            m[name] = shared[entry] if entry < 3 else Status(_CODES[entry % 3], (name,))
    nodes = [type("N", (), {"name": name})() for name in names]
    want = [names.index(n.name) for n in m.nodes_for_status_code(nodes, Code.UNSCHEDULABLE)]
    assert _rows_for_status_code(names, m, Code.UNSCHEDULABLE) == want
