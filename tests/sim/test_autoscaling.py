"""Node groups in simulations (kubeplane.sim.autoscaling): ``cluster.nodeGroups``, the ``scaleNodeGroup`` action,
the per-group time series and the node-hours / cost summary.

Upstream behaviour pinned: a cloud's new node joins NotReady with ``node.kubernetes.io/not-ready:NoSchedule``
(TaintNodesByCondition) so nothing is scheduled on it until it is Ready and the node lifecycle controller lifts the
taint (``doNoScheduleTaintingPass``); a deleted VM's kubelet stops at once and its Node goes after the cloud's delay.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kubeplane.sim import autoscaling
from kubeplane.sim.runner import run
from kubeplane.sim.scenario import Scenario, ScenarioError
from kubeplane.sim.summary import FIELDS


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": "1500m"}}}]},
    }


STORY: dict[str, Any] = {
    "name": "groups",
    "duration": "10m",
    "cluster": {
        "nodeGroups": [
            {"name": "small", "minSize": 1, "maxSize": 3, "pricePerHour": 2.0, "provisioningDelay": "1m",
             "deletionDelay": "30s", "template": {"capacity": {"cpu": "2", "memory": "4Gi"}}},
        ]
    },
    "workload": [{"at": "0s", "manifest": _pod("a")}, {"at": "0s", "manifest": _pod("b")}],
    "actions": [
        {"at": "10s", "scaleNodeGroup": {"group": "small", "delta": 1}},
        {"at": "5m", "scaleNodeGroup": {"group": "small", "delta": -1}},
        {"at": "6m", "scaleNodeGroup": {"group": "small", "delta": -1}},  # below minSize: refused
    ],
}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_autoscaler(monkeypatch: pytest.MonkeyPatch) -> None:
    """These runs drive the groups by actions alone: no autoscaler acts (an inert fake stands in for it)."""
    monkeypatch.setattr(autoscaling, "load_autoscaler", lambda: (_InertAutoscaler, _FakeOptions))


def test_a_scale_up_node_is_usable_only_once_ready_and_node_hours_add_up() -> None:
    result = run(Scenario.parse(STORY))
    pods = {p["name"]: p for p in result.pods}
    first, second = sorted(pods.values(), key=lambda p: p["scheduled"])
    assert first["node"] == "small-0"
    assert first["scheduled"] == 0
    assert second["node"] == "small-1"
    assert second["scheduled"] >= 70  # registered at 10 s, Ready at 70 s: the not-ready taint kept it off
    assert [a["ok"] for a in result.actions] == [True, True, False]
    assert [a["label"] for a in result.actions][:2] == ["scaleNodeGroup small +1", "scaleNodeGroup small -1"]
    sizes = {row["t"]: row["nodes_group_small"] for row in result.timeseries}
    assert (sizes[0], sizes[20], sizes[320], sizes[330], sizes[600]) == (1, 2, 2, 1, 1)
    summary = result.summary
    hours = (600 + (330 - 10)) / 3600  # small-0 the whole run; small-1 from registration to its Node's deletion
    assert (summary["nodes_added"], summary["nodes_removed"]) == (1, 1)
    assert summary["node_hours"] == pytest.approx(hours, abs=1e-6)
    assert summary["cost"] == pytest.approx(2 * hours, abs=1e-6)
    group = summary["node_groups"]["small"]
    assert (group["nodes_at_end"], group["nodes_peak"], group["nodes_added"]) == (1, 2, 1)
    assert set(summary) >= {"nodes_added", "nodes_removed", "node_hours", "cost", "node_groups"}
    assert {"nodes_added", "node_hours", "cost", "node_groups"} <= FIELDS


def test_the_same_seed_gives_the_same_run() -> None:
    first, second = (run(Scenario.parse(STORY), until=120) for _ in range(2))
    assert first.summary["event_log_hash"] == second.summary["event_log_hash"]


def test_runs_without_node_groups_report_nothing_new() -> None:
    result = run(Scenario.parse({"name": "plain", "duration": "30s"}))
    assert not set(result.summary) & {"nodes_added", "node_hours", "cost", "node_groups"}
    assert not any(k.startswith("nodes_group_") for k in result.timeseries[0])


class _FakeOptions:
    @classmethod
    def from_flags(cls, flags: dict[str, Any]) -> dict[str, Any]:
        return {"parsed": dict(flags)}


class _InertAutoscaler:
    """An autoscaler that never scales: these runs' node groups change by actions only."""

    def __init__(self, client: Any, **_: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def run(self) -> None:
        pass

    async def stop(self) -> None:
        pass


class _FakeAutoscaler:
    made: list[_FakeAutoscaler] = []  # noqa: RUF012 - the test's record of instances

    def __init__(self, client: Any, *, provider: Any, options: Any, clock: Any, rng: Any, scheduler_config: Any):
        self.provider, self.options, self.rng, self.scheduler_config = provider, options, rng, scheduler_config
        self.calls: list[str] = []
        _FakeAutoscaler.made.append(self)

    async def start(self) -> None:
        self.calls.append("start")
        self.groups_at_start = {g.name: self.provider.nodes(g.name) for g in self.provider.node_groups()}

    async def run(self) -> None:
        self.calls.append("run")
        await self.provider.increase_size("small", 1)  # what a scale-up does through the provider

    async def stop(self) -> None:
        self.calls.append("stop")


def test_the_autoscaler_gets_the_provider_flags_and_its_own_rng(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autoscaling, "load_autoscaler", lambda: (_FakeAutoscaler, _FakeOptions))
    _FakeAutoscaler.made.clear()
    story = {**STORY, "actions": [], "autoscaler": {"expander": "least-waste", "scale-down-unneeded-time": "10m"}}
    result = run(Scenario.parse(story), until=120)
    (made,) = _FakeAutoscaler.made
    assert made.calls == ["start", "run", "stop"]
    assert made.groups_at_start == {"small": ["small-0"]}  # the initial nodes exist before it starts
    assert made.options == {"parsed": {"expander": "least-waste", "scale-down-unneeded-time": "10m"}}
    assert isinstance(made.rng, random.Random)
    assert made.rng.random() == random.Random("autoscaler-0").random()
    assert result.summary["nodes_added"] == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cluster": {"nodeGroups": [{"name": "g", "minSize": 2, "maxSize": 1}]}},
         "cluster: node group g: maxSize: max size must be greater or equal to min size"),
        ({"actions": [{"at": 1, "scaleNodeGroup": {"group": "nope", "delta": 1}}]},
         "actions: scaleNodeGroup at 1s: no node group nope"),
        ({"actions": [{"at": 1, "scaleNodeGroup": {"group": "small", "delta": 0}}]},
         "actions[0].scaleNodeGroup: needs group and a non-zero integer delta"),
        ({"cluster": {"nodes": [{"name": "small-4"}], "nodeGroups": STORY["cluster"]["nodeGroups"]}},
         "cluster: node small-4 has a name of node group small's nodes"),
        ({"autoscaler": ["expander"]}, "autoscaler: expected a mapping of cluster-autoscaler flags (or false)"),
    ],
    ids=["ca-validate-max-below-min", "unknown-group", "zero-delta", "node-name-clash", "flags-are-a-mapping"],
)  # fmt: skip
def test_bad_node_group_scenarios_are_one_line_errors(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.parse({**STORY, **change})
    assert str(info.value) == message


def test_node_groups_sit_beside_a_preset() -> None:
    scenario = Scenario.parse({**STORY, "cluster": {"preset": "demo", **STORY["cluster"]}})
    assert [n.name for n in scenario.nodes] == ["master", "node01", "node02"]
    assert [g.name for g in scenario.node_groups] == ["small"]


def test_the_report_plots_nodes_per_group() -> None:
    from kubeplane.sim.report import render_html

    from .test_report import IMG, FakeResult

    rows = [{"t": 60.0 * i, "nodes_group_small": n, "nodes_group_big": b} for i, (n, b) in enumerate([(1, 0), (2, 1)])]
    page = render_html([FakeResult(timeseries=rows)])
    assert page.count(IMG) == 1
    assert "<figcaption>Nodes per node group (registered, not yet deleted)</figcaption>" in page
    assert "Other time series" not in page  # the group columns are not left to the catch-all plot


def test_autoscaler_false_keeps_it_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autoscaling, "load_autoscaler", lambda: (_FakeAutoscaler, _FakeOptions))
    _FakeAutoscaler.made.clear()
    scenario = Scenario.parse({**STORY, "autoscaler": False})
    assert (scenario.autoscaler, scenario.autoscaler_enabled) == (None, False)
    run(scenario, until=30)
    assert _FakeAutoscaler.made == []


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "node-groups.yaml"


def test_the_node_groups_example_gives_the_figures_of_autoscaler_md() -> None:
    result = run(Scenario.load(EXAMPLE))
    summary = result.summary
    assert summary["headline"] == ["node_hours", "cost"]
    assert (summary["node_hours"], summary["cost"]) == (1.2, 0.12)
    assert summary["node_groups"]["small"] == {
        "nodes_added": 2, "nodes_removed": 2, "node_hours": 1.2, "cost": 0.12, "nodes_at_end": 1, "nodes_peak": 3,
    }  # fmt: skip
    assert summary["scheduling_latency_p50"] == 180.0  # Ready 2 min after the 1 min scale-up
    from kubeplane.cli.sim import _summary_lines

    printed = "\n".join(_summary_lines(result))
    assert "  node groups: 2 node(s) added, 2 removed; 1.2 node-hours, cost 0.12" in printed


def test_the_seam_loads_the_real_autoscaler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unpatched, a run builds cluster-autoscaler's core and its options (the classes the fakes above stand in
    for)."""
    from kubeplane.autoscaler.loop import Autoscaler
    from kubeplane.autoscaler.options import AutoscalerOptions

    monkeypatch.undo()  # the autouse fake
    assert autoscaling.load_autoscaler() == (Autoscaler, AutoscalerOptions)
