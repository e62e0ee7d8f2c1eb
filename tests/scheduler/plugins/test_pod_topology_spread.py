"""PodTopologySpread against upstream's filtering_test.go / scoring_test.go (v1.37) and the conformance cases."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    Status,
)
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins import pod_topology_spread
from kubeplane.scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    PodTopologySpread,
    filter_constraints,
)

from .test_helper import conformance_cases, pre_score_and_score, require_case

Obj = dict[str, Any]


# --- builders ---------------------------------------------------------------------------------------------


def node(name: str, labels: Mapping[str, str] | None = None, taints: Sequence[Obj] = ()) -> Obj:
    return {"metadata": {"name": name, "labels": dict(labels or {})}, "spec": {"taints": list(taints)}}


def pod(
    name: str,
    node_name: str = "",
    labels: Mapping[str, str] | None = None,
    *,
    namespace: str = "default",
    constraints: Sequence[Obj] = (),
    spec: Mapping[str, Any] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Obj:
    s: Obj = dict(spec or {})
    if node_name:
        s["nodeName"] = node_name
    if constraints:
        s["topologySpreadConstraints"] = list(constraints)
    m: Obj = {"name": name, "namespace": namespace, "uid": name, "labels": dict(labels or {})}
    m.update(meta or {})
    return {"metadata": m, "spec": s}


def spread(max_skew: int, key: str, when: str = "DoNotSchedule", selector: Obj | None = None, **extra: Any) -> Obj:
    c: Obj = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    c.update(extra)
    return c


FOO_EXISTS: Obj = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR_EXISTS: Obj = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def zone_nodes() -> list[Obj]:
    return [
        node("node-a", {"zone": "zone1", "node": "node-a"}),
        node("node-b", {"zone": "zone1", "node": "node-b"}),
        node("node-x", {"zone": "zone2", "node": "node-x"}),
        node("node-y", {"zone": "zone2", "node": "node-y"}),
    ]


def pods_on(counts: Mapping[str, int], labels: Mapping[str, str] | None = None) -> list[Obj]:
    lab = {"foo": ""} if labels is None else labels
    return [pod(f"p-{n}{i}", n, lab) for n, k in counts.items() for i in range(k)]


def lister(objects: Sequence[Mapping[str, Any]]) -> Any:
    plural = {
        "Service": "services",
        "ReplicaSet": "replicasets",
        "StatefulSet": "statefulsets",
        "ReplicationController": "replicationcontrollers",
    }

    def list_objects(resource: str, namespace: str) -> Sequence[Mapping[str, Any]]:
        return [
            o
            for o in objects
            if plural.get(o.get("kind") or "") == resource
            and ((o.get("metadata") or {}).get("namespace") or "") == namespace
        ]

    return list_objects


def make(
    nodes: Sequence[Obj], pods: Sequence[Obj], args: Mapping[str, Any] | None = None, objects: Sequence[Obj] = ()
) -> tuple[PodTopologySpread, Snapshot]:
    snapshot = Snapshot.from_objects(nodes, pods)
    handle = Handle(snapshot_lister=snapshot, list_objects=lister(objects))
    return pod_topology_spread.new({"defaultingType": "List"} if args is None else args, handle), snapshot


def run_filter(plugin: PodTopologySpread, snapshot: Snapshot, p: Obj) -> dict[str, Status | None]:
    state = CycleState()
    pi = PodInfo(p)
    _, status = plugin.pre_filter(state, pi, snapshot.list())
    if status is not None and status.is_skip():
        return {ni.name: None for ni in snapshot.list()}
    if status is not None:
        return {ni.name: status for ni in snapshot.list()}
    return {ni.name: plugin.filter(state, pi, ni) for ni in snapshot.list()}


def run_score(
    plugin: PodTopologySpread, snapshot: Snapshot, p: Obj, names: Sequence[str] | None = None
) -> dict[str, int]:
    nodes = [ni for ni in snapshot.list() if names is None or ni.name in names]
    return pre_score_and_score(plugin, PodInfo(p), nodes)


def codes(statuses: Mapping[str, Status | None]) -> dict[str, Code]:
    return {n: Code.SUCCESS if s is None else s.code for n, s in statuses.items()}


S, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --- plugin shape -----------------------------------------------------------------------------------------


def test_plugin_implements_extension_points() -> None:
    plugin, _ = make([], [])
    assert plugin.name() == NAME == "PodTopologySpread"
    for proto in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
        assert isinstance(plugin, proto)
    assert plugin.pre_filter_extensions() is plugin
    assert plugin.score_extensions() is plugin


def test_reasons_are_upstreams() -> None:
    assert ERR_REASON_CONSTRAINTS_NOT_MATCH == "node(s) didn't match pod topology spread constraints"
    assert (
        ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_events_to_register() -> None:
    plugin, _ = make([], [])
    events = [e.event for e in plugin.events_to_register()]
    assert any(e.matches(ClusterEvent("Pod", ActionType.ADD)) for e in events)
    assert any(e.matches(ClusterEvent("Pod", ActionType.UPDATE_POD_LABEL)) for e in events)
    assert any(e.matches(ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL)) for e in events)
    assert any(e.matches(ClusterEvent("Node", ActionType.DELETE)) for e in events)


def test_factory_args() -> None:
    handle = Handle()
    assert pod_topology_spread.new({}, handle)._system_defaulted
    assert not pod_topology_spread.new({"defaultingType": "List", "defaultConstraints": []}, handle)._system_defaulted
    with pytest.raises(ValueError, match="must be empty"):
        pod_topology_spread.new({"defaultingType": "System", "defaultConstraints": [spread(1, "zone")]}, handle)
    with pytest.raises(ValueError, match="Unsupported"):
        pod_topology_spread.new({"defaultingType": "Other"}, handle)


# --- PreFilter / Filter -----------------------------------------------------------------------------------


def test_pre_filter_skips_without_hard_constraints() -> None:
    plugin, snapshot = make(zone_nodes(), [])
    p = pod("p", constraints=[spread(1, "zone", "ScheduleAnyway", FOO_EXISTS)])
    _, status = plugin.pre_filter(CycleState(), PodInfo(p), snapshot.list())
    assert status is not None
    assert status.code == Code.SKIP


def test_pre_filter_bad_selector_is_error() -> None:
    plugin, _ = make(zone_nodes(), [])
    bad = {"matchExpressions": [{"key": "foo", "operator": "Bogus"}]}
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod("p", constraints=[spread(1, "zone", selector=bad)])), [])
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message().startswith("get constraints from pod: ")


def test_filter_without_pre_filter_is_error() -> None:
    plugin, snapshot = make(zone_nodes(), [])
    status = plugin.filter(CycleState(), PodInfo(pod("p")), snapshot.list()[0])
    assert status is not None
    assert status.code == Code.ERROR


def test_pre_filter_state_counts_and_critical_paths() -> None:
    """Upstream TestPreFilterState "normal case with two spreadConstraints"-like: counts per value, two minima."""
    nodes = zone_nodes()
    pods = pods_on({"node-a": 1, "node-b": 2, "node-x": 3, "node-y": 1})
    pods.append(pod("other-ns", "node-a", {"foo": ""}, namespace="ns1"))
    pods.append(pod("terminating", "node-a", {"foo": ""}, meta={"deletionTimestamp": "2024-01-01T00:00:00Z"}))
    plugin, snapshot = make(nodes, pods)
    p = pod(
        "p",
        labels={"foo": ""},
        constraints=[spread(1, "zone", selector=FOO_EXISTS), spread(1, "node", selector=FOO_EXISTS)],
    )
    state = CycleState()
    plugin.pre_filter(state, PodInfo(p), snapshot.list())
    s = state.read(PRE_FILTER_STATE_KEY)
    assert s.tp_value_to_match_num == [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 2, "node-x": 3, "node-y": 1}]
    assert s.critical_paths[0].paths == [("zone1", 3), ("zone2", 4)]
    assert s.critical_paths[1].paths[0][1] == 1
    assert s.critical_paths[1].paths[1][1] == 1


FILTER_CASES: list[Any] = [
    pytest.param(
        [*zone_nodes()[:1], node("node-x", {"zone": "zone2"})],
        [],
        pod("p", labels={"foo": ""}, constraints=[spread(1, "rack", selector=FOO_EXISTS)]),
        {"node-a": UU, "node-x": UU},
        id="pod cannot be scheduled as all nodes don't have label 'rack'",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 3, "node-x": 2, "node-y": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS)]),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
        id="pods spread across zones as 3/3, all nodes fit",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 2, "node-b": 1, "node-y": 3}),
        pod("p", labels={"foo": ""}, constraints=[spread(2, "node", selector=FOO_EXISTS)]),
        {"node-a": U, "node-b": S, "node-x": S, "node-y": U},
        id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        [node("node-a", {"node": "node-a"}), node("node-b", {"node": "node-b"}), node("node-c", {"node": "node-c"})],
        pods_on({"node-a": 2, "node-b": 2, "node-c": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(2, "node", selector=FOO_EXISTS, minDomains=4)]),
        {"node-a": U, "node-b": U, "node-c": S},
        id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
        "then the third node fits",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 1, "node-b": 1, "node-x": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS, minDomains=3)]),
        {"node-a": U, "node-b": U, "node-x": U, "node-y": U},
        id="pods spread across zone as 2/1, maxSkew is 1 and the number of domains < minDomains, then no node fits",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS)]),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
        id="pods spread across zones as 1/0, zone2 fits",
    ),
    pytest.param(
        [
            node("node-a", {"zone": "zone1", "node": "node-a"}),
            node("node-b", {"zone": "zone1", "node": "node-b"}),
            node("node-x", {"zone": "zone2", "node": "node-x"}, [{"key": "t", "value": "v", "effect": "NoSchedule"}]),
        ],
        pods_on({"node-a": 1, "node-b": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS, nodeTaintsPolicy="Honor")]),
        # zone2 does not count (tainted), so zone1 is the only domain: global minimum 2.
        {"node-a": S, "node-b": S, "node-x": S},
        id="NodeTaintsPolicy honored",
    ),
    pytest.param(
        [
            node("node-a", {"zone": "zone1", "node": "node-a"}),
            node("node-b", {"zone": "zone1", "node": "node-b"}),
            node("node-x", {"zone": "zone2", "node": "node-x"}, [{"key": "t", "value": "v", "effect": "NoSchedule"}]),
        ],
        pods_on({"node-a": 1, "node-b": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS)]),
        {"node-a": U, "node-b": U, "node-x": S},
        id="NodeTaintsPolicy ignored",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 1}, {"foo": "", "bar": "a"}) + pods_on({"node-x": 1}, {"foo": "", "bar": "b"}),
        pod(
            "p",
            labels={"foo": "", "bar": "a"},
            constraints=[spread(1, "zone", selector=FOO_EXISTS, matchLabelKeys=["bar"])],
        ),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
        id="matchLabelKeys ANDed with LabelSelector",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 1}, {"foo": "", "bar": "a"}),
        pod("p", labels={"foo": "", "bar": "a"}, constraints=[spread(1, "zone", selector={}, matchLabelKeys=["bar"])]),
        {"node-a": U, "node-b": U, "node-x": S, "node-y": S},
        id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
    ),
    pytest.param(
        zone_nodes(),
        pods_on({"node-a": 2, "node-x": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "ScheduleAnyway", FOO_EXISTS)]),
        {"node-a": S, "node-b": S, "node-x": S, "node-y": S},
        id="only ScheduleAnyway constraints: PreFilter skips",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "incoming", "expected"), FILTER_CASES)
def test_filter(nodes: list[Obj], pods: list[Obj], incoming: Obj, expected: dict[str, Code]) -> None:
    plugin, snapshot = make(nodes, pods)
    statuses = run_filter(plugin, snapshot, incoming)
    assert codes(statuses) == expected
    for status in statuses.values():
        if status is not None:
            want = ERR_REASON_NODE_LABEL_NOT_MATCH if status.code == UU else ERR_REASON_CONSTRAINTS_NOT_MATCH
            assert status.reasons == (want,)


# --- AddPod / RemovePod -----------------------------------------------------------------------------------


def _state_of(plugin: PodTopologySpread, snapshot: Snapshot, p: Obj) -> Any:
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(p), snapshot.list())
    assert status is None
    return state


INCOMING = pod(
    "p",
    labels={"foo": ""},
    constraints=[spread(1, "zone", selector=FOO_EXISTS), spread(1, "node", selector=FOO_EXISTS)],
)


@pytest.mark.parametrize(
    ("extra", "target"),
    [
        pytest.param(pod("new", "node-x", {"foo": ""}), "node-x", id="matching pod on node-x"),
        pytest.param(pod("new", "node-a", {"foo": ""}), "node-a", id="matching pod on node-a"),
        pytest.param(pod("new", "node-a", {"bar": ""}), "node-a", id="non-matching pod"),
        pytest.param(pod("new", "node-a", {"foo": ""}, namespace="ns1"), "node-a", id="pod in another namespace"),
        pytest.param(pod("new", "node-c", {"foo": ""}), "node-c", id="node without topology key"),
    ],
)
def test_add_pod_and_remove_pod_match_pre_filter(extra: Obj, target: str) -> None:
    nodes = [*zone_nodes(), node("node-c", {"zone": "zone3"})]
    base = pods_on({"node-a": 1, "node-b": 1, "node-y": 2})
    without_plugin, without = make(nodes, base)
    with_plugin, with_ = make(nodes, [*base, extra])
    state_without = _state_of(without_plugin, without, INCOMING)
    state_with = _state_of(with_plugin, with_, INCOMING)
    node_info = without.get(target)
    assert node_info is not None

    before = [dict(m) for m in state_without.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num]
    added = state_without.clone()
    assert without_plugin.add_pod(added, PodInfo(INCOMING), PodInfo(extra), node_info) is None
    got, want = added.read(PRE_FILTER_STATE_KEY), state_with.read(PRE_FILTER_STATE_KEY)
    assert got.tp_value_to_match_num == want.tp_value_to_match_num
    assert [p.paths[0][1] for p in got.critical_paths] == [p.paths[0][1] for p in want.critical_paths]
    assert state_without.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == before  # the clone is independent

    removed = state_with.clone()
    assert with_plugin.remove_pod(removed, PodInfo(INCOMING), PodInfo(extra), node_info) is None
    got = removed.read(PRE_FILTER_STATE_KEY)
    want = state_without.read(PRE_FILTER_STATE_KEY)
    assert got.tp_value_to_match_num == want.tp_value_to_match_num
    assert [p.paths[0][1] for p in got.critical_paths] == [p.paths[0][1] for p in want.critical_paths]


def test_add_pod_changes_filter_verdict() -> None:
    """Upstream TestPreFilterStateAddPod-like: a nominated pod on node-x makes zone2 full for maxSkew 1."""
    plugin, snapshot = make(zone_nodes(), pods_on({"node-a": 1}))
    pi = PodInfo(pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS)]))
    state = CycleState()
    plugin.pre_filter(state, pi, snapshot.list())
    node_x = snapshot.get("node-x")
    assert node_x is not None
    assert plugin.filter(state, pi, node_x) is None
    plugin.add_pod(state, pi, PodInfo(pod("n", "node-x", {"foo": ""})), node_x)
    plugin.add_pod(state, pi, PodInfo(pod("n2", "node-x", {"foo": ""})), node_x)
    status = plugin.filter(state, pi, node_x)
    assert status is not None
    assert status.code == U
    plugin.remove_pod(state, pi, PodInfo(pod("n2", "node-x", {"foo": ""})), node_x)
    assert plugin.filter(state, pi, node_x) is None


def test_add_pod_without_state_is_error() -> None:
    plugin, snapshot = make(zone_nodes(), [])
    ni = snapshot.list()[0]
    status = plugin.add_pod(CycleState(), PodInfo(INCOMING), PodInfo(pod("x", "node-a")), ni)
    assert status is not None
    assert status.code == Code.ERROR


# --- PreScore / Score / NormalizeScore --------------------------------------------------------------------


def host_nodes(names: Sequence[str], zone: Mapping[str, str] | None = None) -> list[Obj]:
    out = []
    for n in names:
        lab = {"kubernetes.io/hostname": n}
        if zone and n in zone:
            lab["topology.kubernetes.io/zone"] = zone[n]
        out.append(node(n, lab))
    return out


def test_pre_score_skips_without_soft_constraints() -> None:
    plugin, snapshot = make(zone_nodes(), [], {"defaultingType": "System"})
    # no constraints and no Service/controller selects the pod: system defaults have an empty selector
    status = plugin.pre_score(CycleState(), PodInfo(pod("p", labels={"foo": ""})), snapshot.list())
    assert status is not None
    assert status.code == Code.SKIP
    p = pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", selector=FOO_EXISTS)])
    status = plugin.pre_score(CycleState(), PodInfo(p), snapshot.list())
    assert status is not None
    assert status.code == Code.SKIP


def test_pre_score_skips_with_empty_snapshot() -> None:
    plugin, _ = make([], [])
    p = pod("p", labels={"foo": ""}, constraints=[spread(1, "zone", "ScheduleAnyway", FOO_EXISTS)])
    status = plugin.pre_score(CycleState(), PodInfo(p), [])
    assert status is not None
    assert status.code == Code.SKIP


SCORE_CASES: list[Any] = [
    pytest.param(
        host_nodes(["node-a", "node-b", "node-c", "node-d"]),
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "kubernetes.io/hostname", "ScheduleAnyway", FOO_EXISTS)]),
        {"defaultingType": "List"},
        [],
        None,
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        id="one constraint on node, all 4 nodes are candidates",
    ),
    pytest.param(
        [*host_nodes(["node-a", "node-b"]), node("node-x", {}), node("node-y", {})],
        pods_on({"node-a": 1}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "kubernetes.io/hostname", "ScheduleAnyway", FOO_EXISTS)]),
        {"defaultingType": "List"},
        [],
        None,
        {"node-a": 0, "node-b": 100, "node-x": 0, "node-y": 0},
        id="one constraint on node, 2 nodes missing the topology key are ignored",
    ),
    pytest.param(
        host_nodes(["node-a", "node-b", "node-c"]),
        pods_on({"node-a": 2, "node-b": 1}),
        pod("p", labels={"foo": ""}),
        {"defaultingType": "System"},
        [{"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}],
        None,
        # hostname maxSkew 3, weight log(5): a 2*1.609+2=5.22->5, b 3.6->4, c 2; normalized 100*(5+2-s)/5.
        {"node-a": 40, "node-b": 60, "node-c": 100},
        id="system defaulting with a Service, nodes without zone still spread by hostname",
    ),
    pytest.param(
        host_nodes(["node-a", "node-b", "node-c"]),
        pods_on({"node-a": 2, "node-b": 1}),
        pod("p", labels={"foo": ""}),
        {"defaultingType": "System"},
        [{"kind": "Service", "metadata": {"name": "s", "namespace": "ns1"}, "spec": {"selector": {"foo": ""}}}],
        None,
        {"node-a": 0, "node-b": 0, "node-c": 0},
        id="system defaulting, Service in another namespace: skip",
    ),
    pytest.param(
        host_nodes(["node-a", "node-b", "node-c"]),
        pods_on({"node-a": 2, "node-b": 1}),
        pod(
            "p",
            labels={"foo": ""},
            meta={
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}]
            },
        ),
        {"defaultingType": "System"},
        [{"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"}, "spec": {"selector": FOO_EXISTS}}],
        None,
        {"node-a": 40, "node-b": 60, "node-c": 100},
        id="system defaulting with the controlling ReplicaSet",
    ),
    pytest.param(
        host_nodes(["node-a", "node-b", "node-c"], {"node-a": "z1", "node-b": "z1", "node-c": "z2"}),
        pods_on({"node-a": 2, "node-b": 1}),
        pod("p", labels={"foo": ""}),
        {"defaultingType": "List", "defaultConstraints": [spread(1, "topology.kubernetes.io/zone", "ScheduleAnyway")]},
        [{"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}],
        None,
        # zone weight log(4): z1 3*1.386=4.16->4, z2 0; normalized 100*(4+0-s)/4.
        {"node-a": 0, "node-b": 0, "node-c": 100},
        id="List defaulting with defaultConstraints and a Service",
    ),
    pytest.param(
        host_nodes(["node-a", "node-b", "node-c", "node-d"]),
        pods_on({"node-a": 2, "node-b": 1, "node-d": 3}),
        pod("p", labels={"foo": ""}, constraints=[spread(1, "kubernetes.io/hostname", "ScheduleAnyway", FOO_EXISTS)]),
        {"defaultingType": "List"},
        [],
        ["node-a", "node-b"],
        # only two filtered nodes: weight log(4); a 2.77->3, b 1.39->1; normalized 100*(3+1-s)/3.
        {"node-a": 33, "node-b": 100},
        id="one constraint on node, only 2 of 4 nodes are candidates",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "incoming", "args", "objects", "names", "expected"), SCORE_CASES)
def test_score(
    nodes: list[Obj],
    pods: list[Obj],
    incoming: Obj,
    args: Mapping[str, Any],
    objects: list[Obj],
    names: list[str] | None,
    expected: dict[str, int],
) -> None:
    plugin, snapshot = make(nodes, pods, args, objects)
    assert run_score(plugin, snapshot, incoming, names) == expected


def test_score_without_pre_score_is_error() -> None:
    plugin, snapshot = make(zone_nodes(), [])
    _, status = plugin.score(CycleState(), PodInfo(pod("p")), snapshot.list()[0])
    assert status is not None
    assert status.code == Code.ERROR


# --- conformance ------------------------------------------------------------------------------------------


def _case_objects(case: Mapping[str, Any]) -> tuple[PodTopologySpread, Snapshot]:
    pods = [p for p in case.get("existingPods") or () if (p.get("spec") or {}).get("nodeName")]
    return make(case["nodes"], pods, case.get("pluginArgs") or {}, case.get("objects") or ())


@pytest.mark.parametrize("case", conformance_cases("topology_images.json", NAME))
def test_conformance(case: Mapping[str, Any] | None) -> None:
    case = require_case(case)
    plugin, snapshot = _case_objects(case)
    expect = case["expect"]
    if case["kind"] == "filter":
        statuses = run_filter(plugin, snapshot, case["pod"])
        got = {n: (Code.SUCCESS if s is None else s.code).label for n, s in statuses.items() if n in expect["filter"]}
        assert got == {n: e["code"] for n, e in expect["filter"].items()}
        for n, e in expect["filter"].items():
            if "reasons" in e:
                status = statuses[n]
                assert status is not None
                assert list(status.reasons) == e["reasons"]
    else:
        assert run_score(plugin, snapshot, case["pod"], list(expect["scores"])) == expect["scores"]


_SHAPES = st.fixed_dictionaries(
    {
        "max_skew": st.integers(1, 3),
        "key": st.sampled_from(["zone", "node"]),
        "when": st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
        "selector": st.sampled_from([FOO_EXISTS, BAR_EXISTS, {"matchLabels": {"foo": "a"}}]),
        "keys": st.sampled_from([(), ("app",), ("app", "foo")]),
    }
)


@given(
    st.lists(
        st.tuples(
            st.lists(_SHAPES, min_size=1, max_size=2),
            st.dictionaries(st.sampled_from(["app", "foo"]), st.sampled_from(["a", "b"]), max_size=2),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_compiled_constraints_are_kept_per_shape(stream: list[tuple[list[dict[str, Any]], dict[str, str]]]) -> None:
    """A pod's own constraints are compiled once per shape (their JSON, the labels matchLabelKeys names, the
    action) and reused for the next pods of that shape: every pod of a stream gets exactly what
    filterTopologySpreadConstraints compiles for it alone (fails if the key leaves out an input)."""
    plugin, _ = make(zone_nodes(), [])
    for shapes, pod_labels in stream:
        constraints = [
            spread(
                s["max_skew"],
                s["key"],
                s["when"],
                s["selector"],
                **({"matchLabelKeys": list(s["keys"])} if s["keys"] else {}),
            )
            for s in shapes
        ]
        info = PodInfo(pod("p", labels=pod_labels, constraints=constraints))
        for action in ("DoNotSchedule", "ScheduleAnyway"):
            assert plugin._constraints(info, action) == filter_constraints(constraints, pod_labels, action)
