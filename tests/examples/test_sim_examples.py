"""The simulation examples (``examples/sim/``, docs/sim.md): every scenario loads, the seeds' story shows its
NoExecute eviction and its node failure at upstream's timings, MostAllocated packs the bin-packing workload onto
fewer nodes than LeastAllocated, and the 5000-node benchmark scenario is the size it claims (it is not run here:
bench/sim_bench.py is where it runs). Also: ``import kubeplane.sim`` offers the Python API and stays light."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

import kubeplane.sim
from kubeplane.kubelet.fleet import DURATION_ANNOTATION
from kubeplane.scheduler.config import parse_config
from kubeplane.sim import Scenario, SimResult
from kubeplane.sim.variants import KINDS as VARIANT_KINDS
from kubeplane.sim.variants import apply_variant, load_variant

SIM = Path(__file__).resolve().parents[2] / "examples" / "sim"
CONFIG_KIND = "KubeSchedulerConfiguration"

TAINT_AT = 600.0  # seeds-story: node02 tainted check=mycheck:NoExecute at 10m
UNTAINT_AT = 1200.0
FAILURE_AT = 1800.0  # node01 stops heartbeating at 30m
LEASE_RENEW = 10.0  # upstream kubelet: Lease renewed every 10 s (a quarter of its 40 s duration)
GRACE = 50.0  # node-monitor-grace-period: Ready=Unknown once the Lease is older than this
MONITOR = 5.0  # node-monitor-period: how often the node lifecycle controller looks
TOLERATION = 300.0  # DefaultTolerationSeconds for not-ready / unreachable


def _kind(path: Path) -> Any:
    doc = yaml.safe_load(path.read_text())
    return doc.get("kind") if isinstance(doc, Mapping) else None


def _variant(path: Path) -> bool:
    """A ``sim compare --autoscaler/--descheduler`` file: one ``autoscaler:`` or ``descheduler:`` section."""
    doc = yaml.safe_load(path.read_text())
    return isinstance(doc, Mapping) and len(doc) == 1 and next(iter(doc)) in VARIANT_KINDS


def _scenarios() -> list[Path]:
    return [p for p in sorted(SIM.glob("*.yaml")) if _kind(p) != CONFIG_KIND and not _variant(p)]


def _variants() -> list[Path]:
    return [p for p in sorted(SIM.glob("*.yaml")) if _variant(p)]


def _configs() -> list[Path]:
    return [p for p in sorted(SIM.glob("*.yaml")) if _kind(p) == CONFIG_KIND]


def test_the_examples_are_there() -> None:
    names = {p.name for p in SIM.glob("*.yaml")}
    assert {"seeds-story.yaml", "bin-packing.yaml", "scale-out.yaml"} <= {p.name for p in _scenarios()}
    assert {"least-allocated.yaml", "most-allocated.yaml", "default.yaml", "fgd.yaml"} <= {p.name for p in _configs()}
    assert {"openb-arrivals.yaml", "openb-fgd.yaml", "batch.yaml"} <= {p.name for p in _scenarios()}
    assert {"expander-least-waste.yaml", "expander-price.yaml"} <= {p.name for p in _variants()}
    assert names == {p.name for p in _scenarios()} | {p.name for p in _configs()} | {p.name for p in _variants()}


@pytest.mark.parametrize("path", _variants(), ids=lambda p: p.name)
def test_every_variant_loads_and_applies_to_autoscaling(path: Path) -> None:
    variant = load_variant(path, next(iter(yaml.safe_load(path.read_text()))))
    assert variant.label == path.stem
    applied = apply_variant(Scenario.load(SIM / "autoscaling.yaml"), variant)
    assert applied.autoscaler == variant.section


@pytest.mark.parametrize("path", _scenarios(), ids=lambda p: p.name)
def test_every_scenario_loads(path: Path) -> None:
    scenario = Scenario.load(path)
    assert scenario.name == path.stem
    assert scenario.nodes
    assert scenario.arrivals or scenario.generators


@pytest.mark.parametrize("path", _configs(), ids=lambda p: p.name)
def test_every_scheduler_configuration_loads_with_its_scoring_strategy(path: Path) -> None:
    config = parse_config(yaml.safe_load(path.read_text()))
    (profile,) = config.profiles
    fit = profile.plugin_config["NodeResourcesFit"]
    expected = {"least-allocated": "LeastAllocated", "most-allocated": "MostAllocated", "default": "LeastAllocated"}
    if path.stem == "fgd-dra":  # GpuShare + FGD only, FGD's target workload derived from the pods (docs/gpu.md)
        assert [p.name for p in profile.plugins.score.enabled] == ["FGD"]
        assert "targetWorkload" not in profile.plugin_config.get("FGD", {})
        return
    if path.stem == "fgd":  # GpuShare + FGD only, with the openb default trace's 35 typical pod types
        assert [p.name for p in profile.plugins.score.enabled] == ["FGD"]
        assert len(profile.plugin_config["FGD"]["targetWorkload"]) == 35
        return
    assert fit["scoringStrategy"]["type"] == expected[path.stem]


# --- the seeds' story --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def story() -> SimResult:
    return kubeplane.sim.run(SIM / "seeds-story.yaml", until=2400)  # to 40m: both evictions are over by then


def _pods(result: SimResult, prefix: str) -> list[dict[str, Any]]:
    return [p for p in result.pods if p["name"].startswith(prefix)]


def test_story_the_noexecute_taint_evicts_node02_and_the_deployments_reschedule(story: SimResult) -> None:
    summary = story.summary
    assert summary["sim_seconds"] == 2400.0
    assert summary["pods_pending_at_end"] == 0
    assert summary["taint_evictions"] > 0
    services = _pods(story, "myapp-deploy-") + _pods(story, "web-")
    on_node02 = [p for p in services if p["node"] == "node02" and p["created"] < TAINT_AT]
    assert on_node02, "the scheduler spread the Deployments over node01 and node02"
    assert all(p["finished"] == pytest.approx(TAINT_AT, abs=5) for p in on_node02)  # evicted at once
    replacements = [p for p in services if p["created"] == pytest.approx(TAINT_AT, abs=5)]
    assert len(replacements) == len(on_node02)
    assert {p["node"] for p in replacements} == {"node01"}  # node02 is tainted, master is control-plane only


def test_story_the_node_failure_evicts_after_the_toleration(story: SimResult) -> None:
    services = _pods(story, "myapp-deploy-") + _pods(story, "web-")
    # 5 myapp-deploy (scaled at 5m) + 4 web running at the failure, all on node01 then
    on_node01 = [p for p in services if p["node"] == "node01" and p["created"] < FAILURE_AT and not p["finished"]]
    assert len(on_node01) == 9
    replaced = [p for p in services if p["created"] > FAILURE_AT]
    assert len(replaced) == 9
    assert {p["node"] for p in replaced} == {"node02"}  # untainted at 20m
    # Ready=Unknown and the unreachable:NoExecute taint come once the last Lease renewal is older than the grace
    # period (seen at the next monitor pass); the pods' 300 s toleration then runs out and they are replaced
    earliest = FAILURE_AT - LEASE_RENEW + GRACE + TOLERATION
    latest = FAILURE_AT + GRACE + MONITOR + TOLERATION + 10
    assert all(earliest < p["created"] <= latest for p in replaced), [p["created"] for p in replaced]
    # the node stays Ready until the grace period is over, then is counted not Ready
    ready = {row["t"]: row["nodes_ready"] for row in story.timeseries}
    assert ready[FAILURE_AT] == 3
    assert ready[FAILURE_AT + GRACE - LEASE_RENEW] == 3
    assert ready[min(t for t in ready if t >= FAILURE_AT + GRACE + MONITOR)] == 2
    assert ready[2400.0] == 2  # recovery comes at 45m
    evictions = [row["evictions"] for row in story.timeseries]
    assert evictions == sorted(evictions)
    assert evictions[-1] > max(r["evictions"] for r in story.timeseries if r["t"] < FAILURE_AT)


def test_story_jobs_run_for_their_durations(story: SimResult) -> None:
    jobs = _pods(story, "job-")
    assert len(jobs) == 20
    finished = [p for p in jobs if p["finished"] and p["finished"] < TAINT_AT]  # not cut short by the taint
    assert finished
    for job in finished:
        assert 120 <= job["finished"] - job["running"] <= 360 + 2  # duration 2m..6m (+ kubelet status delay)


# --- LeastAllocated vs MostAllocated ---------------------------------------------------------------------------


def peak_nodes_in_use(pods: Sequence[Mapping[str, Any]]) -> int:
    """The most distinct nodes that run at least one pod at the same instant (pods.csv records)."""
    starts = sorted({float(p["running"]) for p in pods if p["running"] is not None})
    best = 0
    for t in starts:
        nodes = {
            p["node"]
            for p in pods
            if p["running"] is not None and p["running"] <= t and (p["finished"] is None or p["finished"] > t)
        }
        best = max(best, len(nodes))
    return best


def test_peak_nodes_in_use_counts_overlaps_only() -> None:
    pods: list[dict[str, Any]] = [
        {"node": "a", "running": 0.0, "finished": 10.0},
        {"node": "b", "running": 5.0, "finished": None},
        {"node": "c", "running": 10.0, "finished": 20.0},  # a has finished by then
        {"node": "d", "running": None, "finished": None},  # never ran
    ]
    assert peak_nodes_in_use(pods) == 2


def test_most_allocated_packs_onto_fewer_nodes_than_least_allocated() -> None:
    scenario = Scenario.load(SIM / "bin-packing.yaml")
    assert len(scenario.nodes) == 21
    peaks, headline_peaks = {}, {}
    for name in ("least-allocated", "most-allocated"):
        config = yaml.safe_load((SIM / f"{name}.yaml").read_text())
        # 12m: every pod has arrived (150 at 0.25/s) and the first ones are finishing, past the peak
        result = kubeplane.sim.run(scenario, until=720, scheduler_config=config, label=name)
        assert result.label == name
        assert result.summary["pods_pending_at_end"] == 0
        assert result.summary["pods_created"] == 150
        peaks[name] = peak_nodes_in_use(result.pods)
        # the example's headline: nodes in use, counted from bound (not only Running) pods, so at least as many
        assert result.summary["headline"] == ["nodes_in_use_peak", "nodes_in_use_mean"]
        assert result.summary["nodes_in_use_peak"] >= peaks[name]
        assert result.summary["nodes_in_use_peak"] <= 20  # the master takes no batch pods
        headline_peaks[name] = result.summary["nodes_in_use_peak"]
    assert peaks["least-allocated"] == 20  # spreading puts work on every worker
    assert peaks["most-allocated"] <= peaks["least-allocated"] - 5, peaks
    assert headline_peaks["most-allocated"] < headline_peaks["least-allocated"], headline_peaks


# --- every example names its headline, and the quick ones print it ------------------------------------------


@pytest.mark.parametrize("path", _scenarios(), ids=lambda p: p.name)
def test_every_scenario_names_its_headline(path: Path) -> None:
    assert Scenario.load(path).headline


def test_the_preemption_example_preempts_and_reports_it() -> None:
    """Upstream DefaultPreemption: the high-priority service displaces batch pods to fit; the victims are
    counted as preempted (DisruptionTarget PreemptionByScheduler), apart from the scale-down's deletions."""
    from kubeplane.cli.sim import _summary_lines

    result = kubeplane.sim.run(SIM / "preemption.yaml")
    summary = result.summary
    assert summary["headline"] == ["pods_preempted", "preemptions", "pods_pending_at_end"]
    assert summary["pods_preempted"] == 4
    assert summary["preemptions"] >= 4
    assert summary["pods_deleted"] == 2  # the service scaled from 4 to 2 at 6m
    assert summary["pods_pending_at_end"] == 0  # the batch replacements fit once the service shrank
    victims = [p for p in result.pods if p["end"] == "preempted"]
    assert {p["name"].split("-")[0] for p in victims} == {"batch"}
    printed = "\n".join(_summary_lines(result))
    assert "headline: pods_preempted 4, preemptions" in printed
    assert "preempted 4, deleted 2" in printed


def test_the_story_prints_its_headline(story: SimResult) -> None:
    from kubeplane.cli.sim import _summary_lines

    printed = _summary_lines(story)
    assert printed[1] == f"  headline: pods_evicted {story.summary['pods_evicted']}, nodes_in_use_peak 2"
    assert story.summary["pods_evicted"] == story.summary["taint_evictions"] > 0  # no kubelet or API evictions
    assert story.summary["nodes_in_use_peak"] == 2  # node01 and node02; master takes no pods


# --- the benchmark scenario ------------------------------------------------------------------------------------


def test_scale_out_is_5000_nodes_and_50000_pods_with_churn() -> None:
    scenario = Scenario.load(SIM / "scale-out.yaml")
    assert len(scenario.nodes) == 5000
    assert len({n.name for n in scenario.nodes}) == 5000
    assert sum(g.count for g in scenario.generators) == 50_000
    assert all(g.duration is not None and g.duration[1] < scenario.duration for g in scenario.generators)
    assert DURATION_ANNOTATION == "sim.kubeplane.io/duration"


# --- the package's API -----------------------------------------------------------------------------------------


def test_import_kubeplane_sim_is_light_and_offers_the_api() -> None:
    code = (
        "import sys, kubeplane.sim as sim\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] == 'matplotlib' or m.startswith(("
        "'kubeplane.scheduler', 'kubeplane.controllers', 'kubeplane.apiserver', 'kubeplane.sim.runner'))]\n"
        "assert not heavy, heavy\n"
        "names = ['Scenario', 'ScenarioError', 'SimResult', 'run', 'simulate', 'VirtualClock']\n"
        "assert set(names) <= set(sim.__all__) and set(names) <= set(dir(sim))\n"
        "assert sim.Scenario.__module__ == 'kubeplane.sim.scenario'\n"
        "assert 'kubeplane.scheduler' not in sys.modules\n"
        "assert sim.run.__module__ == 'kubeplane.sim.runner'\n"
        "assert 'matplotlib' not in sys.modules\n"
        "try:\n    sim.nothing\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit('no AttributeError')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_the_api_names_are_the_modules_own() -> None:
    from kubeplane.sim import clock, runner, scenario

    assert kubeplane.sim.Scenario is scenario.Scenario
    assert kubeplane.sim.ScenarioError is scenario.ScenarioError
    assert kubeplane.sim.VirtualClock is clock.VirtualClock
    assert kubeplane.sim.SimResult is runner.SimResult
    assert kubeplane.sim.run is runner.run
    assert kubeplane.sim.simulate is runner.simulate


def test_the_storage_example_runs_out_of_node_local_capacity_until_a_node_joins() -> None:
    """examples/sim/storage.yaml: 7 replicas with 40Gi claims on 3 nodes of 100Gi (2 each fit, VolumeBinding's
    capacity check against the driver's CSIStorageCapacity objects): 6 bound at once, two per node, the 7th only
    after node04 (100Gi) joins at 10m; every claim provisioned."""
    result = kubeplane.sim.run(SIM / "storage.yaml")
    pods = sorted(_pods(result, "db-"), key=lambda p: p["name"])
    assert len(pods) == 7
    early = [p for p in pods if p["scheduled"] is not None and p["scheduled"] < 600]
    late = [p for p in pods if p not in early]
    assert len(early) == 6
    assert {p["node"] for p in early} == {"node01", "node02", "node03"}
    assert all(sum(p["node"] == n for p in early) == 2 for n in ("node01", "node02", "node03"))
    (last,) = late
    assert last["node"] == "node04"
    assert last["scheduled"] >= 600
    assert result.summary["volumes_provisioned"] == 7
    assert result.summary["storage_used_bytes"] == 7 * 40 * 2**30
