"""The descheduler in a simulation (kubeplane.sim.descheduling): the scenario section, and
examples/sim/descheduler.yaml end to end: a NoSchedule taint makes RemovePodsViolatingNodeTaints evict exactly the
web pods on the tainted node (not the DaemonSet's, which the DefaultEvictor protects), and after node04 joins
LowNodeUtilization moves one web pod from each node above its target to it; the scheduler places every
replacement, none on the tainted node."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kubeplane.sim import Scenario, run
from kubeplane.sim.scenario import ScenarioError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "descheduler.yaml"
TAINT_PASS = 180.0  # the first pass after the 2m30s taint
LNU_PASS = 600.0  # the first pass after node04 joins at 9m30s


@pytest.fixture(scope="module")
def result() -> Any:
    return run(EXAMPLE)


def test_evictions_by_plugin(result: Any) -> None:
    assert result.summary["descheduler_evictions"] == 4
    assert result.summary["descheduler_evictions_by_plugin"] == {
        "LowNodeUtilization": 2,
        "RemovePodsViolatingNodeTaints": 2,
    }


def test_exactly_the_taint_violators_are_evicted_and_daemonset_pods_stay(result: Any) -> None:
    evicted = [p for p in result.pods if p["end"] == "evicted"]
    by_reason = Counter((p["reason"], p["node"]) for p in evicted)
    assert by_reason == {
        ("RemovePodsViolatingNodeTaints", "node01"): 2,
        ("LowNodeUtilization", "node02"): 1,
        ("LowNodeUtilization", "node03"): 1,
    }
    assert all(p["name"].startswith("web-") for p in evicted)
    assert all(p["end"] == "running" for p in result.pods if p["name"].startswith("agent-"))
    assert result.summary["pods_evicted"] == 4


def test_replacements_are_placed_off_the_tainted_node_and_onto_the_new_one(result: Any) -> None:
    running = [p for p in result.pods if p["name"].startswith("web-") and p["end"] == "running"]
    assert len(running) == 6
    assert Counter(p["node"] for p in running) == {"node02": 2, "node03": 2, "node04": 2}
    replacements = sorted((p["created"], p["node"]) for p in running if p["created"] > 0)
    assert replacements == [(TAINT_PASS, "node02"), (TAINT_PASS, "node03"), (LNU_PASS, "node04"),
                            (LNU_PASS, "node04")]  # fmt: skip


def test_dry_run_counts_and_evicts_nothing(tmp_path: Path) -> None:
    text = EXAMPLE.read_text().replace("  interval: 1m\n", "  interval: 1m\n  dryRun: true\n")
    path = tmp_path / "dry.yaml"
    path.write_text(text)
    result = run(path)
    assert result.summary["pods_evicted"] == 0
    assert result.summary["descheduler_evictions"] > 0  # what would have been evicted, counted every pass
    assert all(p["end"] == "running" for p in result.pods)


def test_runs_without_a_descheduler_have_no_descheduler_fields() -> None:
    scenario = Scenario.parse({"cluster": {"preset": "uniform", "workers": 2}, "duration": 10})
    assert scenario.descheduler is None
    assert "descheduler_evictions" not in run(scenario).summary


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"interval": "1m"}, "descheduler: needs exactly one of policy, policyFile"),
        ({"policy": {}, "bogus": 1}, "descheduler: unknown field(s) bogus"),
        ({"policy": {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy"}, "interval": 0},
         "descheduler.interval: must be positive"),
        ({"policy": {"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy"}},
         'descheduler: failed decoding descheduler\'s policy config "descheduler.policy": no kind '
         '"DeschedulerPolicy" is registered for version "descheduler/v1alpha1"'),
        ({"policyFile": "missing.yaml"}, 'descheduler: failed to read policy config file'),
    ],
    ids=["no-policy", "unknown-field", "zero-interval", "old-api-version", "missing-policy-file"],
)  # fmt: skip
def test_scenario_section_errors(section: dict[str, Any], message: str, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=None) as info:
        Scenario.parse({"cluster": {"preset": "uniform", "workers": 2}, "descheduler": section}, base=tmp_path)
    assert str(info.value).startswith(message)


def test_same_seed_same_event_log(result: Any) -> None:
    """The descheduler draws from its own seeded source: a second run is bit-identical."""
    assert run(EXAMPLE).summary["event_log_hash"] == result.summary["event_log_hash"]


LABEL_STORY: dict[str, Any] = {
    "name": "label-change",
    "seed": 1,
    "duration": "6m",
    "cluster": {"nodes": [
        {"count": 3, "namePattern": "node{index:02d}", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
         "labels": {"disk": "ssd"}},
    ]},
    "descheduler": {"interval": "1m", "policy": {
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
        "profiles": [{"name": "affinity", "pluginConfig": [
            {"name": "DefaultEvictor", "args": {"nodeFit": True}},
            {"name": "RemovePodsViolatingNodeAffinity",
             "args": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}},
        ], "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeAffinity"]}}}],
    }},
    "workload": [
        {"at": "0s", "manifest": {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}, "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}},
                         "containers": [{"name": "db", "image": "postgres:16",
                                         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}},
        {"at": "0s", "manifest": {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                         "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}},
    ],
    "actions": [{"at": "2m30s", "label": {"node": "node01", "key": "disk", "value": "hdd"}}],
}  # fmt: skip


def test_a_label_change_evicts_exactly_the_pods_whose_required_affinity_it_breaks() -> None:
    """upstream RemovePodsViolatingNodeAffinity (requiredDuringSchedulingIgnoredDuringExecution): after node01's
    `disk` label changes from ssd to hdd, the db pods on node01 no longer match their required term and are
    evicted (nodeFit: another ssd node takes them); the web pods on node01, which ask for nothing, stay."""
    result = run(Scenario.parse(LABEL_STORY))
    evicted = [p for p in result.pods if p["end"] == "evicted"]
    on_node01_before = [p for p in result.pods if p["node"] == "node01" and p["created"] < 150]
    db_on_node01 = [p for p in on_node01_before if p["name"].startswith("db-")]
    assert db_on_node01, "the scenario must start with a db pod on node01"
    assert sorted(p["name"] for p in evicted) == sorted(p["name"] for p in db_on_node01)
    assert result.summary["descheduler_evictions_by_plugin"] == {"RemovePodsViolatingNodeAffinity": len(evicted)}
    replacements = [p for p in result.pods if p["name"].startswith("db-") and p["created"] > 150]
    assert len(replacements) == len(evicted)
    assert all(p["node"] in ("node02", "node03") for p in replacements)
    assert [a["label"] for a in result.actions] == ["label node01 disk=hdd"]


def test_label_actions_need_a_node_and_a_key() -> None:
    with pytest.raises(ScenarioError, match=r"actions\[0\]\.unlabel: needs key"):
        Scenario.parse({"cluster": {"preset": "demo"}, "actions": [{"at": "1m", "unlabel": {"node": "node01"}}]})
