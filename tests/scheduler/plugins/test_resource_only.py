"""The arithmetic SelectVictimsOnNode (:meth:`ResourceOnly.select_victims`) against the generic path (clone, PreFilter
extensions, Filter per reprieve: upstream default_preemption.go ``SelectVictimsOnNode`` and preemption.go
``DryRunPreemption``).

The property test runs ``dry_run_preemption`` both ways on random clusters — node sizes and pod slots, taints the
pod may not tolerate (a pod-independent rejection: the generic path names it), lower and higher priority pods,
extended resources, PodDisruptionBudgets with their allowed disruptions and already-disrupted pods, nominated pods
of every priority, a random offset and number of candidates — and requires the same candidates (victims in
order, PDB violations), the same status for every other node and the same errors. Each test runs with the queue's
kind of nominator too (a real :class:`Nominator` with :class:`NominatedColumns`, the pod's own nomination among
them), so the table paths that read the nominated pods' columns are held to the same reference.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.nominated_columns import NominatedColumns, NominatedColumnsCache
from kubeplane.scheduler.backend.nominator import Nominator
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, NodeToStatus, Status
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.default_preemption import DefaultPreemption
from kubeplane.scheduler.plugins.resource_only import ResourceOnly
from kubeplane.scheduler.profile import build_profiles

GPU = "example.com/gpu"


class _Nominator:
    """The queue's nominator as preemption reads it: pods nominated per node."""

    def __init__(self, by_node: Mapping[str, list[PodInfo]]) -> None:
        self.by_node = {k: v for k, v in by_node.items() if v}

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.by_node.get(node_name, ()))

    def nominated_node_names(self) -> list[str]:
        return list(self.by_node)


class _ColumnsNominator(_Nominator):
    """The scheduling queue's kind: a real Nominator whose columns the table paths read."""

    def __init__(self, by_node: Mapping[str, list[PodInfo]]) -> None:
        super().__init__(by_node)
        self.nominator = Nominator()
        for node, pods in self.by_node.items():
            for p in pods:
                self.nominator.add(p, node)
        self.columns = NominatedColumnsCache(self.nominator, self.nominator.pods_for_node)

    def nominated_columns(self, table: NodeTable, priority: int) -> NominatedColumns:
        return self.columns.columns(table, priority)

    def nominated_node_of(self, uid: str) -> str | None:
        return self.nominator.node_of_uid(uid)


def _node(i: int, cpu: int, pods: int, gpus: int, tainted: bool) -> dict[str, Any]:
    name = f"n{i}"
    allocatable = {"cpu": f"{cpu}m", "memory": "8Gi", "pods": str(pods)}
    if gpus:
        allocatable[GPU] = str(gpus)
    spec: dict[str, Any] = {}
    if tainted:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def _pod(name: str, *, priority: int, cpu: int, memory: int, gpus: int, node: str, app: str, start: int) -> PodInfo:
    requests: dict[str, str] = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    if gpus:
        requests[GPU] = str(gpus)
    body: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": app}},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
        },
        "status": {"startTime": f"2026-01-01T00:{start:02d}:00Z"} if start >= 0 else {},
    }
    if node:
        body["spec"]["nodeName"] = node
    return PodInfo(body)


_pod_args = st.fixed_dictionaries(
    {
        "priority": st.integers(0, 4),
        "cpu": st.sampled_from([0, 100, 300, 500, 900, 1500]),
        "memory": st.sampled_from([0, 256, 1024, 4096]),
        "gpus": st.sampled_from([0, 0, 0, 1, 2]),
        "app": st.sampled_from(["a", "b", "c"]),
        "start": st.integers(-1, 3),
    }
)
_node_args = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([1000, 2000, 4000]),
        "pods": st.integers(1, 6),
        "gpus": st.sampled_from([0, 2, 4]),
        "tainted": st.sampled_from([False, False, False, True]),
        "pods_on": st.lists(_pod_args, max_size=6),
        "nominated": st.lists(_pod_args, max_size=2),
    }
)
_pdb = st.fixed_dictionaries(
    {"app": st.sampled_from(["a", "b", "c"]), "allowed": st.integers(0, 2), "disrupted": st.booleans()}
)


def _setup(
    nodes_args: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    *,
    columns: bool = False,
    own: PodInfo | None = None,
) -> tuple[Framework, DefaultPreemption]:
    """The cluster, its PDBs and a framework; ``columns``: the queue's kind of nominator, with ``own`` (the
    incoming pod) nominated to the first node as well."""
    nodes = [_node(i, a["cpu"], a["pods"], a["gpus"], a["tainted"]) for i, a in enumerate(nodes_args)]
    placed: list[PodInfo] = []
    nominated: dict[str, list[PodInfo]] = {}
    for i, a in enumerate(nodes_args):
        placed += [_pod(f"p{i}-{j}", node=f"n{i}", **p) for j, p in enumerate(a["pods_on"])]
        nominated[f"n{i}"] = [_pod(f"nom{i}-{j}", node="", **p) for j, p in enumerate(a["nominated"])]
    budgets = _budgets(pdbs)
    snapshot = Snapshot.from_objects(nodes, [p.pod for p in placed])
    handle = Handle(
        rng=random.Random(0),
        snapshot_lister=snapshot,
        list_objects=lambda resource, _ns: list(budgets) if resource == "poddisruptionbudgets" else [],
    )
    if own is not None:
        nominated["n0"] = [*nominated["n0"], own]
    handle.nominator = _ColumnsNominator(nominated) if columns else _Nominator(nominated)
    fwk = build_profiles(default_config(), handle)["default-scheduler"]
    plugin = next(p for p in fwk.post_filter_plugins if isinstance(p, DefaultPreemption))
    return fwk, plugin


def _budgets(pdbs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"pdb{k}", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": b["app"]}}},
            "status": {"disruptionsAllowed": b["allowed"], "disruptedPods": {"p0-0": "x"} if b["disrupted"] else {}},
        }
        for k, b in enumerate(pdbs)
    ]


def _outcome(plugin: DefaultPreemption, state: CycleState, pod: PodInfo, offset: int, num: int) -> Any:
    nodes = list(plugin.handle.snapshot_lister.list())
    candidates, statuses, errors = plugin.dry_run_preemption(state, pod, nodes, plugin._pdbs(), offset, num)
    return (
        [(c.name, [v.uid for v in c.victims], c.num_pdb_violations) for c in candidates],
        {name: (s.code, s.reasons, s.plugin) for name, s in statuses.items()},
        errors,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    nodes_args=st.lists(_node_args, min_size=1, max_size=6),
    pdbs=st.lists(_pdb, max_size=3),
    incoming=_pod_args,
    offset=st.integers(0, 5),
    num=st.integers(1, 6),
    columns=st.booleans(),
    own=st.booleans(),
    screen_rows=st.booleans(),
)
def test_fast_dry_run_equals_the_generic_one(
    nodes_args: list[dict[str, Any]],
    pdbs: list[dict[str, Any]],
    incoming: dict[str, Any],
    offset: int,
    num: int,
    columns: bool,
    own: bool,
    screen_rows: bool,
) -> None:
    """Upstream DryRunPreemption: the arithmetic paths (node by node, or screened over the table's rows with the
    nominated pods' columns) give the generic path's candidates, statuses and errors."""
    pod = _pod("incoming", node="", **{**incoming, "priority": incoming["priority"] + 1})
    fwk, plugin = _setup(nodes_args, pdbs, columns=columns, own=pod if own else None)
    plugin.screen_rows = screen_rows
    state = CycleState()
    nodes: Sequence[Any] = plugin.handle.snapshot_lister.list()
    _result, status, _rejected = fwk.run_pre_filter_plugins(state, pod, nodes)
    assert status is None
    fast = ResourceOnly.for_pod(fwk, state, pod)
    assert fast is not None, "a plain pod must take the arithmetic path"
    offset %= len(nodes)
    plugin.fast_dry_run = True
    got = _outcome(plugin, state, pod, offset, num)
    plugin.fast_dry_run = False
    want = _outcome(plugin, state, pod, offset, num)
    assert got == want


def test_pod_dependent_plugins_take_the_generic_path() -> None:
    """A pod with a host port (NodePorts keeps its Filter) or required pod anti-affinity (InterPodAffinity's
    PreFilter extensions) is not decided by resources alone."""
    fwk, plugin = _setup([{"cpu": 1000, "pods": 4, "gpus": 0, "tainted": False, "pods_on": [], "nominated": []}], [])
    base = _pod("x", priority=1, cpu=100, memory=0, gpus=0, node="", app="a", start=0).pod
    port = {
        **base,
        "spec": {
            **base["spec"],
            "containers": [{**base["spec"]["containers"][0], "ports": [{"containerPort": 80, "hostPort": 80}]}],
        },
    }
    term = {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
    anti = {
        **base,
        "spec": {
            **base["spec"],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        },
    }
    for body in (port, anti):
        pod = PodInfo(body)
        state = CycleState()
        fwk.run_pre_filter_plugins(state, pod, plugin.handle.snapshot_lister.list())
        assert ResourceOnly.for_pod(fwk, state, pod) is None
    plain = PodInfo(base)
    state = CycleState()
    fwk.run_pre_filter_plugins(state, plain, plugin.handle.snapshot_lister.list())
    assert ResourceOnly.for_pod(fwk, state, plain) is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(nodes_args=st.lists(_node_args, min_size=1, max_size=6), incoming=_pod_args)
def test_filter_node_equals_run_filter_plugins_with_nominated_pods(
    nodes_args: list[dict[str, Any]], incoming: dict[str, Any]
) -> None:
    """Upstream RunFilterPluginsWithNominatedPods: both passes, the first one's status when it fails."""
    fwk, plugin = _setup(nodes_args, [])
    pod = _pod("incoming", node="", **incoming)
    state = CycleState()
    nodes: Sequence[Any] = plugin.handle.snapshot_lister.list()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    fast = ResourceOnly.for_pod(fwk, state, pod)
    assert fast is not None
    for node in nodes:
        got = fast.filter_node(node)
        want = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
        assert isinstance(got, Status | None)
        assert _key(got) == _key(want), node.name


def _key(status: Status | None) -> tuple[Any, ...] | None:
    return None if status is None else (status.code, status.reasons, status.plugin)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    nodes_args=st.lists(_node_args, min_size=1, max_size=6),
    incoming=_pod_args,
    columns=st.booleans(),
    own=st.booleans(),
)
def test_rejected_statuses_over_the_table_equal_the_reference(
    nodes_args: list[dict[str, Any]], incoming: dict[str, Any], columns: bool, own: bool
) -> None:
    """The node search's reasons for a pod that fits nowhere: every row NodeResourcesFit rejects (and no
    pod-independent plugin does) gets RunFilterPluginsWithNominatedPods' status (the pod's own nomination not
    counted); the rows left out are the ones that pass or that a pod-independent plugin (here TaintToleration)
    rejects. With the queue's nominator, ``nominated_rows`` covers every row whose first pass adds a pod."""
    pod = _pod("incoming", node="", **incoming)
    fwk, plugin = _setup(nodes_args, [], columns=columns, own=pod if own else None)
    state = CycleState()
    snapshot = plugin.handle.snapshot_lister
    assert isinstance(snapshot, Snapshot)
    nodes: Sequence[Any] = snapshot.list()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    fast = ResourceOnly.for_pod(fwk, state, pod)
    assert fast is not None
    table = snapshot.node_table
    got = fast.rejected_statuses(table, np.arange(table.size, dtype=np.int64))
    assert got is not None
    taints = next(p for p in fwk.filter_plugins if p.name() == "TaintToleration")
    for row, node in enumerate(table.node_infos):
        want = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
        if row in got:
            assert _key(got[row]) == _key(want), node.name
        else:
            assert want is None or taints.filter(state, pod, node) is not None, node.name
    rows = fast.nominated_rows(table)
    assert (rows is not None) == columns
    if rows is not None:
        for row, node in enumerate(table.node_infos):
            others = [
                p for p in fwk.nominated_pods_for_node(node.name) if p.priority >= pod.priority and p.uid != pod.uid
            ]
            assert not others or row in rows.tolist(), node.name


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    nodes_args=st.lists(_node_args, min_size=1, max_size=5),
    first_pdbs=st.lists(_pdb, max_size=2),
    second_pdbs=st.one_of(st.none(), st.lists(_pdb, max_size=2)),
    first=_pod_args,
    second=st.one_of(st.none(), _pod_args),
    nominated=st.sampled_from(["same", "copies", "larger", "none"]),
    advance=st.sampled_from([0.0, 60.0, 3600.0]),
    offset=st.integers(0, 4),
    num=st.integers(1, 5),
    columns=st.booleans(),
    churn=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["remove", "add"])), max_size=2),
)
def test_results_kept_from_an_earlier_preemptor_equal_the_generic_path(
    nodes_args: list[dict[str, Any]],
    first_pdbs: list[dict[str, Any]],
    second_pdbs: list[dict[str, Any]] | None,
    first: dict[str, Any],
    second: dict[str, Any] | None,
    nominated: str,
    advance: float,
    offset: int,
    num: int,
    columns: bool,
    churn: list[tuple[int, str]],
) -> None:
    """DefaultPreemption keeps each node's result for the next preemptor: a second dry run (another or the same
    pod, other or the same PDB objects, the nominated pods kept, copied, larger or gone, the clock moved between victims
    with and without a startTime, pods added to or removed from nodes; the queue's kind of nominator or a plain one)
    still equals the generic path, the screen's per-row keys kept across the runs included."""
    fwk, plugin = _setup(nodes_args, first_pdbs, columns=columns)
    start = 1_767_225_690.0  # 00:01:30, between the pods' start times
    plugin.handle.clock = FakeClock(start=start)
    nodes: Sequence[Any] = plugin.handle.snapshot_lister.list()

    def incoming(args: dict[str, Any]) -> tuple[PodInfo, CycleState]:
        pod = _pod("incoming", node="", **{**args, "priority": args["priority"] + 1})
        state = CycleState()
        fwk.run_pre_filter_plugins(state, pod, nodes)
        return pod, state

    pod, state = incoming(first)
    for _ in range(3):  # fills the cache, and the screen's memo takes the shape in steady use (third ask)
        _outcome(plugin, state, pod, 0, len(nodes))
    pod, state = incoming(second if second is not None else first)  # the next cycle: a new CycleState
    if second_pdbs is not None:
        budgets = _budgets(second_pdbs)
        plugin.handle.list_objects = lambda resource, _ns: list(budgets) if resource == "poddisruptionbudgets" else []
    if nominated != "same":
        assert isinstance(plugin.handle.nominator, _Nominator)
        by_node = plugin.handle.nominator.by_node
        changed = (
            {n: [_resized(p, nominated) for p in pods] for n, pods in by_node.items()} if nominated != "none" else {}
        )
        plugin.handle.nominator = _ColumnsNominator(changed) if columns else _Nominator(changed)
    for k, (at, op) in enumerate(churn):
        node = nodes[at % len(nodes)]
        if op == "add":
            node.add_pod(_pod(f"churn{k}", node=node.name, **{**first, "priority": 0}))
        elif node.pods:
            node.remove_pod(node.pods[0])
    if churn:
        snapshot = plugin.handle.snapshot_lister
        assert isinstance(snapshot, Snapshot)
        snapshot.node_table.sync()
    plugin.handle.clock = FakeClock(start=start + advance)
    offset %= len(nodes)
    got = _outcome(plugin, state, pod, offset, num)
    plugin.fast_dry_run = False
    want = _outcome(plugin, state, pod, offset, num)
    assert got == want


def _resized(pod: PodInfo, how: str) -> PodInfo:
    """A new PodInfo of the nominated pod: the same (``copies``) or requesting 600m more cpu (``larger``)."""
    if how == "copies":
        return PodInfo(pod.pod)
    container = pod.pod["spec"]["containers"][0]
    cpu = int(container["resources"]["requests"]["cpu"].removesuffix("m")) + 600
    resources = {"requests": {**container["resources"]["requests"], "cpu": f"{cpu}m"}}
    spec = {**pod.pod["spec"], "containers": [{**container, "resources": resources}]}
    return PodInfo({**pod.pod, "spec": spec})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    nodes_args=st.lists(_node_args, min_size=1, max_size=6),
    pdbs=st.lists(_pdb, max_size=3),
    incoming=_pod_args,
    own=st.booleans(),
)
def test_find_candidates_over_table_rows_equals_the_generic_path(
    nodes_args: list[dict[str, Any]], pdbs: list[dict[str, Any]], incoming: dict[str, Any], own: bool
) -> None:
    """Upstream findCandidates: the nodes whose Filter status is Unschedulable (UnschedulableAndUnresolvable ones
    and the nodes absent from the map are left out), a random offset into them, the dry run. Taken as table rows
    it gives the generic path's candidates and errors from the same random draw; its statuses are those of the
    generic path when there is no candidate (the one case Preempt reads them) and are left out otherwise."""
    pod = _pod("incoming", node="", **{**incoming, "priority": incoming["priority"] + 1})
    fwk, plugin = _setup(nodes_args, pdbs, columns=True, own=pod if own else None)
    state = CycleState()
    nodes: Sequence[Any] = plugin.handle.snapshot_lister.list()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    m = NodeToStatus()
    for node in nodes:
        status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status is not None:
            m[node.name] = status

    def run(fast: bool) -> Any:
        plugin.fast_dry_run = fast
        plugin.handle.rng = random.Random(7)
        candidates, statuses, errors = plugin.find_candidates(state, nodes, pod, m)
        return (
            [(c.name, [v.uid for v in c.victims], c.num_pdb_violations) for c in candidates],
            {name: _key(s) for name, s in statuses.items()},
            errors,
        )

    got, want = run(True), run(False)
    assert got[0] == want[0]
    assert got[2] == want[2]
    assert got[1] == (want[1] if not want[0] else {})


def test_unchanged_candidates_are_read_from_the_kept_columns() -> None:
    """PreemptionBasic's shape (upstream default_preemption performance-config: four 900m low-priority pods per
    4-cpu node, a 3000m preemptor): after one preemptor's dry run, the next one runs the reprieve only on the node
    that changed and on the node with a nominated pod; the others' results come from the kept columns and equal
    the generic path's."""
    low: dict[str, Any] = {"priority": 0, "cpu": 900, "memory": 0, "gpus": 0, "app": "a", "start": 1}
    node_args = {"cpu": 4000, "pods": 10, "gpus": 0, "tainted": False, "pods_on": [low] * 4, "nominated": []}
    nominee = {**low, "priority": 5, "cpu": 300}
    fwk, plugin = _setup([node_args] * 5, [], columns=True)
    nodes: Sequence[Any] = plugin.handle.snapshot_lister.list()
    pod = _pod("incoming", node="", **{**low, "priority": 5, "cpu": 3000})
    _outcome(plugin, _prefiltered(fwk, pod, nodes), pod, 0, 5)
    nodes[1].remove_pod(nodes[1].pods[0])
    snapshot = plugin.handle.snapshot_lister
    assert isinstance(snapshot, Snapshot)
    snapshot.node_table.sync()
    plugin.handle.nominator = _ColumnsNominator({"n3": [_pod("nominated", node="", **nominee)]})
    asked: list[str] = []
    select = ResourceOnly.select_victims

    def counting(self: ResourceOnly, node: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(node.name)
        return select(self, node, *args, **kwargs)

    ResourceOnly.select_victims = counting  # type: ignore[method-assign]
    try:
        got = _outcome(plugin, _prefiltered(fwk, pod, nodes), pod, 0, 5)
    finally:
        ResourceOnly.select_victims = select  # type: ignore[method-assign]
    assert sorted(asked) == ["n1", "n3"]
    plugin.fast_dry_run = False
    assert got == _outcome(plugin, _prefiltered(fwk, pod, nodes), pod, 0, 5)
    assert [name for name, _victims, _violations in got[0]] == ["n0", "n1", "n2", "n3", "n4"]


def _prefiltered(fwk: Framework, pod: PodInfo, nodes: Sequence[Any]) -> CycleState:
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    return state
