"""Simulations with the real components on the virtual clock: determinism, equivalence with real time, and the
node-failure timings of upstream's controllers to the simulated second."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from kubeplane.api.meta import parse_time
from kubeplane.sim.clock import VirtualClock
from kubeplane.sim.runner import run, simulate
from kubeplane.sim.scenario import Scenario, ScenarioError


def _deployment(name: str, replicas: int, cpu: str = "500m") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": cpu}}}]},
            },
        },
    }


def _pod_arrival(at: float, name: str, cpu: str) -> dict[str, Any]:
    """A workload entry: one nginx Pod requesting ``cpu``, created at ``at``."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": {"requests": {"cpu": cpu}}}]},
    }
    return {"at": at, "manifest": pod}


STORY: dict[str, Any] = {
    "name": "story",
    "seed": 3,
    "duration": "20m",
    "sampleInterval": "30s",
    "cluster": {"preset": "demo"},
    "kubelet": {"pullDelay": "1s", "shutdownDelay": "2s"},
    "workload": [
        {"at": 0, "manifest": _deployment("web", 4)},
        {
            "generator": {
                "count": 12,
                "start": "30s",
                "rate": 0.2,
                "namePrefix": "job-",
                "duration": {"min": "1m", "max": "3m"},
                "template": {"spec": {"containers": [{"name": "j", "image": "busybox:1.36",
                                                      "resources": {"requests": {"cpu": "250m"}}}]}},
            }
        },
    ],
    "actions": [
        {"at": "5m", "taint": {"node": "node02", "key": "check", "value": "mycheck", "effect": "NoExecute"}},
        {"at": "8m", "untaint": {"node": "node02", "key": "check"}},
    ],
}  # fmt: skip


def test_the_same_scenario_and_seed_give_the_same_run() -> None:
    scenario = Scenario.parse(STORY)
    first, second = run(scenario), run(scenario)
    assert first.summary["event_log_hash"] == second.summary["event_log_hash"]
    assert first.pods == second.pods
    assert first.timeseries == second.timeseries
    for field in ("bytes_per_node", "bytes_per_pod"):  # resident-set figures (kubeplane.sim.memory): they vary
        assert first.summary[field] is None or isinstance(first.summary[field], int)
    assert first.summary["taint_evictions"] > 0  # the NoExecute taint evicted web pods from node02
    evicted_web = [p for p in first.pods if p["name"].startswith("web-") and p["node"] == "node02" and p["finished"]]
    assert first.summary["pods_created"] == 4 + 12 + len(evicted_web)  # the Deployment replaced its evicted pods
    other = run(scenario, seed=4)
    assert other.summary["event_log_hash"] != first.summary["event_log_hash"]


def test_a_simulated_hour_takes_seconds_and_jobs_finish() -> None:
    scenario = Scenario.parse({**STORY, "actions": [], "duration": "1h"})
    result = run(scenario)
    assert result.summary["sim_seconds"] == 3600.0
    jobs = [p for p in result.pods if p["name"].startswith("job-")]
    assert len(jobs) == 12
    assert all(p["phase"] == "Succeeded" for p in jobs)
    for job in jobs:  # each ran for its sim.kubeplane.io/duration, between 1 and 3 minutes
        assert 60 <= job["finished"] - job["running"] <= 180 + 1
    assert result.timeseries[0]["t"] == 0.0
    assert result.timeseries[-1]["t"] == 3600.0
    assert max(r["cpu_allocation"] for r in result.timeseries) > 0


def test_node_failure_timings_are_upstreams_to_the_second() -> None:
    """The node goes Unknown once its Lease is older than the 50 s grace period (checked every 5 s); its pods'
    300 s toleration of the unreachable taint then runs out to the second (taint timeAdded + 300 s)."""
    scenario = Scenario.parse(
        {
            "name": "failure",
            "seed": 1,
            "duration": "15m",
            "cluster": {"preset": "demo"},
            "workload": [{"at": 0, "manifest": _deployment("web", 2)}],
            "actions": [{"at": "2m", "nodeFailure": {"node": "node01"}}],
        }
    )
    observed: dict[str, Any] = {}

    async def main() -> None:
        from kubeplane.sim import observer as runner  # the observer moved out of the runner

        original = runner.Observer.pod

        def watch_pod(self: Any, old: Any, pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and "deleted" not in observed:
                observed["deleted"] = (pod["spec"].get("nodeName"), parse_time(meta["deletionTimestamp"]).timestamp())
                observed["deleted_at"] = self.clock.now()
            original(self, old, pod)

        original_node = runner.Observer.node

        def watch_node(self: Any, old: Any, node: dict[str, Any]) -> None:
            for taint in (node.get("spec") or {}).get("taints") or []:
                if taint["key"] == "node.kubernetes.io/unreachable" and taint["effect"] == "NoExecute":
                    observed.setdefault("tainted", parse_time(taint["timeAdded"]).timestamp())
                    observed.setdefault("tainted_at", self.clock.now())
            ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
            if ready["status"] == "Unknown":
                observed.setdefault("unknown_at", self.clock.monotonic())
            original_node(self, old, node)

        runner.Observer.pod = watch_pod  # type: ignore[method-assign,assignment]
        runner.Observer.node = watch_node  # type: ignore[method-assign,assignment]
        try:
            await simulate(scenario)
        finally:
            runner.Observer.pod = original  # type: ignore[method-assign]
            runner.Observer.node = original_node  # type: ignore[method-assign]

    asyncio.run(main())
    # the last renewal was in the 10 s before the failure; then the 50 s grace period and a 5 s monitor period
    assert 120 - 10 + 50 < observed["unknown_at"] <= 120 + 50 + 5
    node, deleted = observed["deleted"]
    assert node == "node01"
    assert observed["deleted_at"] == observed["tainted_at"] + 300  # tolerationSeconds, to the simulated instant
    assert deleted == int(observed["deleted_at"]) + 30  # deletionTimestamp: now + the 30 s grace period
    assert observed["tainted"] == int(observed["tainted_at"])  # timeAdded: the taint's time, whole seconds


def test_simulated_and_real_time_runs_reach_the_same_placements() -> None:
    """Pods arriving one by one, each placed before the next comes: the same nodes in both runs."""
    pods = [_pod_arrival(0.5 * i, f"p{i}", "300m") for i in range(8)]
    scenario = Scenario.parse(
        {
            "name": "equal",
            "seed": 9,
            "duration": "6s",
            "cluster": {"preset": "uniform", "workers": 3},
            "kubelet": {"pullDelay": 0},
            "workload": pods,
        }
    )
    simulated = run(scenario)
    real = asyncio.run(simulate(scenario, realtime=True))
    placed = {p["name"]: p["node"] for p in simulated.pods}
    assert all(placed.values())
    assert placed == {p["name"]: p["node"] for p in real.pods}


def test_scenario_errors_are_one_line(tmp_path: Path) -> None:
    cases = {
        "workload: 3\n": "workload: expected a list",
        "actions: [{at: 1m, explode: {node: a}}]\n": "actions[0]: expected `at` and one of taint, untaint",
        "duration: soon\n": 'duration: time: invalid duration "soon"',
        "cluster: {preset: huge}\n": "cluster.preset: unknown preset 'huge' (demo or uniform)",
        "workload: [{generator: {count: 2, template: {spec: {containers: [{name: c}]}}}}]\n":
            "workload[0].generator: give exactly one of rate (pods per second) or interval",
        "bogus: 1\n": "scenario: unknown field(s) bogus",
    }  # fmt: skip
    for text, message in cases.items():
        path = tmp_path / "s.yaml"
        path.write_text(text)
        with pytest.raises(ScenarioError) as caught:
            Scenario.load(path)
        assert str(caught.value).startswith(message), (text, str(caught.value))
        assert "\n" not in str(caught.value)


async def test_the_clock_jumps_only_when_the_loop_is_idle() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []

    async def worker(name: str, delay: float, busy_steps: int) -> None:
        await clock.sleep(delay)
        for _ in range(busy_steps):  # work that takes several loop iterations but no time
            await asyncio.sleep(0)
        seen.append((name, clock.monotonic()))
        await clock.sleep(delay)
        seen.append((name, clock.monotonic()))

    tasks = [asyncio.create_task(worker("a", 10, 50)), asyncio.create_task(worker("b", 10, 0))]
    await clock.run(until=100)
    await asyncio.gather(*tasks)
    assert seen == [("b", 10), ("a", 10), ("b", 20), ("a", 20)]
    assert clock.monotonic() == 100
    assert clock.now() == 1_800_000_100.0


def test_the_scheduler_configuration_can_change_mid_run() -> None:
    """kube-scheduler restarted at 2m with MostAllocated instead of the default LeastAllocated: the pods before
    spread over the workers, the pods after pack onto the fewest nodes."""

    def fit(strategy: str) -> dict[str, Any]:
        return {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{"name": "NodeResourcesFit", "args": {
                "scoringStrategy": {"type": strategy, "resources": [{"name": "cpu", "weight": 1}]}}}]}],
        }  # fmt: skip

    pods = [_pod_arrival(10 * i + (60 if i >= 6 else 0), f"p{i:02d}", "500m") for i in range(12)]
    scenario = Scenario.parse(
        {
            "name": "switch",
            "seed": 2,
            "duration": "5m",
            "cluster": {"preset": "uniform", "workers": 6},
            "scheduler": {"config": fit("LeastAllocated")},
            "workload": pods,
            "actions": [{"at": "2m", "schedulerConfig": {"config": fit("MostAllocated")}}],
        }
    )
    result = run(scenario)
    placed = {p["name"]: p["node"] for p in result.pods}
    before = {placed[f"p{i:02d}"] for i in range(6)}
    after = {placed[f"p{i:02d}"] for i in range(6, 12)}
    assert len(before) == 6  # LeastAllocated: one per worker
    assert len(after) == 1  # MostAllocated: all onto the most allocated node
    assert result.summary["scheduling_attempts"] == 12  # counted across both scheduler incarnations


def test_the_store_is_compacted_and_events_expire_on_the_virtual_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """kube-apiserver's housekeeping runs in a simulation on the virtual clock (apiserver.housekeeping): the store
    is compacted every 5 minutes (--etcd-compaction-interval) to the revision of the previous round, so its history
    stays bounded; Events older than an hour (--event-ttl) are deleted. Nothing in a simulation reads a revision
    compaction removed: no Compacted is ever raised, and no watch gets 410."""
    from kubeplane.apiserver import errors
    from kubeplane.apiserver.housekeeping import EventExpiry
    from kubeplane.store import interface
    from kubeplane.store.memory import MemoryStore

    compactions: list[tuple[int, int, int]] = []  # (compacted to, store revision, events left in the log)
    compact, expire = MemoryStore.compact, EventExpiry.run
    expired: list[int] = []
    refused: list[str] = []

    async def recording_compact(self: MemoryStore, revision: int) -> None:
        await compact(self, revision)
        compactions.append((revision, self.revision, len(self._log)))

    async def recording_expire(self: EventExpiry) -> int:
        expired.append(await expire(self))
        return expired[-1]

    class Refused(interface.Compacted):
        def __init__(self, *args: Any) -> None:
            refused.append(repr(args))
            super().__init__(*args)

    monkeypatch.setattr(MemoryStore, "compact", recording_compact)
    monkeypatch.setattr(EventExpiry, "run", recording_expire)
    monkeypatch.setattr("kubeplane.store.base.Compacted", Refused)
    gone = errors.gone

    def recording_gone(message: str) -> errors.APIError:
        refused.append(message)
        return gone(message)

    monkeypatch.setattr(errors, "gone", recording_gone)
    scenario = Scenario.parse({**STORY, "actions": [], "workload": STORY["workload"][:1], "duration": "61m"})
    result = run(scenario)
    assert len(compactions) == 12  # at 5m, 10m, ..., 60m
    for (_, previous_revision, _), (to, _, _) in itertools.pairwise(compactions):
        assert to == previous_revision  # each round compacts to the revision the previous round saw
    assert all(log == revision - to for to, revision, log in compactions)  # history kept: since the compaction
    assert len(expired) == 61  # one pass a simulated minute
    assert sum(expired[:60]) == 0  # no Event is an hour old before the 61st minute
    assert sum(expired[60:]) > 0  # then the first ones expire
    assert refused == []
    assert result.summary["pods_created"] == 4
