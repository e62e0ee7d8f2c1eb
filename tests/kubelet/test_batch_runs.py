"""Batch pods finish by default and the ``sim.kubeplane.io/fail-*`` annotations fail runs (kubelet/sim_exits.py).

Upstream behaviour pinned: a container that exits 0 ends with reason ``Completed``, non-zero with ``Error``
(kuberuntime ``toKubeContainerState``/``convertToAPIContainerStatuses``); restartPolicy OnFailure restarts a
failed container with back-off and ends Succeeded once it exits 0 (``getPhase``); Never ends Failed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest

from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import FleetOptions
from kubeplane.kubelet.sim_exits import RunPlan, plan_run
from tests.kubelet.harness import Env, running_fleet

NODES = [{"name": "n1", "capacity": {"cpu": "4", "memory": "4Gi", "pods": "10"}}]
BUSYBOX = [{"name": "main", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}]


def _pod(policy: str, **annotations: str) -> dict[str, object]:
    return {"metadata": {"annotations": annotations}, "spec": {"restartPolicy": policy}}


def test_plan_run_defaults_and_failure_knobs() -> None:
    assert plan_run(_pod("Never"), 0, 5.0) == RunPlan(5.0, 0)
    assert plan_run(_pod("OnFailure"), 3, 2.0) == RunPlan(2.0, 0)
    assert plan_run(_pod("Always"), 0, 5.0) is None  # a service runs until deleted
    assert plan_run(_pod("Always", **{"sim.kubeplane.io/duration": "1m"}), 0, 5.0) == RunPlan(60.0, 0)
    failing = {"sim.kubeplane.io/fail-exit-code": "42", "sim.kubeplane.io/fail-after": "3s"}
    assert plan_run(_pod("Never", **failing), 0, 5.0) == RunPlan(3.0, 42)
    twice = {**failing, "sim.kubeplane.io/fail-runs": "2"}
    assert [plan_run(_pod("OnFailure", **twice), run, 5.0) for run in range(3)] == [
        RunPlan(3.0, 42),
        RunPlan(3.0, 42),
        RunPlan(5.0, 0),
    ]
    assert plan_run(_pod("Never", **{"sim.kubeplane.io/fail-exit-code": "x"}), 0, 5.0) == RunPlan(5.0, 0)


def test_batch_run_time_node_config() -> None:
    spec = parse_node_config({"nodes": [{"name": "n", "batchRunTime": "30s"}]})[0]
    assert spec.batch_run_time == 30.0
    assert parse_node_config({"nodes": [{"name": "m"}]})[0].batch_run_time is None


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running_fleet(NODES, FleetOptions(pull_delay=0.0, status_workers=2, batch_run_time=5.0)) as started:
        yield started


async def _is(value: Awaitable[str], expected: str) -> bool:
    return await value == expected


async def test_batch_pods_complete_and_fail_as_annotated(env: Env) -> None:
    await env.create_pod("hello", restartPolicy="Never", containers=BUSYBOX)
    await env.create_pod("web", restartPolicy="Always", containers=BUSYBOX)
    fail = {"sim.kubeplane.io/fail-exit-code": "3", "sim.kubeplane.io/fail-after": "2s"}
    await env.create_pod("broken", restartPolicy="Never", containers=BUSYBOX, annotations=fail)
    flaky = {**fail, "sim.kubeplane.io/fail-runs": "2"}
    await env.create_pod("flaky", restartPolicy="OnFailure", containers=BUSYBOX, annotations=flaky)
    await env.until(lambda: _is(env.phase("hello"), "Succeeded"), "hello Succeeded", step=1.0)
    hello = (await env.pod("hello"))["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (hello["exitCode"], hello["reason"]) == (0, "Completed")
    await env.until(lambda: _is(env.phase("broken"), "Failed"), "broken Failed", step=1.0)
    broken = (await env.pod("broken"))["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (broken["exitCode"], broken["reason"]) == (3, "Error")
    await env.until(lambda: _is(env.phase("flaky"), "Succeeded"), "flaky Succeeded", step=1.0)
    flaky_status = (await env.pod("flaky"))["status"]["containerStatuses"][0]
    assert flaky_status["restartCount"] == 2
    assert flaky_status["lastState"]["terminated"]["exitCode"] == 3
    assert flaky_status["state"]["terminated"]["reason"] == "Completed"
    assert await env.phase("web") == "Running"  # restartPolicy Always without a duration never exits
