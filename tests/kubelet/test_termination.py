"""Containers stop like real processes: a simulated container exits its stop time after SIGTERM, and the grace
period bounds it (upstream ``killPod`` / ``killContainer`` in ``pkg/kubelet/kuberuntime``).

The fleet cases run on the fake clock. Their pods carry a finalizer, so the pod stays visible with its terminal
status after the kubelet's final delete (grace 0) and the test can read the containers' exit codes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from kubeplane.kubelet.config import NodeConfigError, parse_node_config
from kubeplane.kubelet.fleet import FleetOptions
from kubeplane.kubelet.termination import (
    DEFAULT_STOP_TIME,
    ContainerStop,
    container_stop,
    pre_stop_sleep,
    stop_time,
)
from tests.kubelet.harness import Env, Obj, running_fleet

FINALIZER = "kubeplane.io/test-keep"
NODES = [{"name": "n1"}, {"name": "slow-node", "shutdownDelay": "3s"}]
STEP = 0.1


@pytest.mark.parametrize(
    ("grace", "pre_stop", "stop", "expected"),
    [
        (30.0, 0.0, 0.5, ContainerStop(0.5, 0)),
        (30.0, 0.0, 3600.0, ContainerStop(30.0, 137)),
        (30.0, 0.0, 30.0, ContainerStop(30.0, 137)),
        (30.0, 10.0, 0.5, ContainerStop(10.5, 0)),
        (30.0, 29.0, 5.0, ContainerStop(31.0, 137)),
        (30.0, 60.0, 0.5, ContainerStop(30.5, 0)),
        (1.0, 0.0, 1.5, ContainerStop(1.5, 0)),
        (0.0, 5.0, 3600.0, ContainerStop(2.0, 137)),
    ],
    ids=[
        "exits on SIGTERM after its stop time",
        "SIGKILL at the end of the grace period (exit 137)",
        "still running when the grace period ends: killed",
        "preStop sleep runs first, then SIGTERM",
        "preStop time is taken from the grace period, at least 2 s remain",
        "preStop is bounded by the grace period",
        "minimumGracePeriodInSeconds: SIGTERM always gets 2 s",
        "no preStop hook with grace 0, SIGKILL after the 2 s minimum",
    ],
)
def test_container_stop_follows_kill_container(
    grace: float, pre_stop: float, stop: float, expected: ContainerStop
) -> None:
    assert container_stop(grace=grace, pre_stop=pre_stop, stop=stop) == expected


@pytest.mark.parametrize(
    ("pod", "node", "fleet", "expected"),
    [
        (None, None, None, DEFAULT_STOP_TIME),
        (None, None, 4.0, 4.0),
        (None, 2.0, 4.0, 2.0),
        (7.0, 2.0, 4.0, 7.0),
        (0.0, 2.0, None, 0.0),
    ],
    ids=["default", "fleet flag", "node config over the flag", "pod annotation over all", "zero is a setting"],
)
def test_stop_time_most_specific_setting_wins(
    pod: float | None, node: float | None, fleet: float | None, expected: float
) -> None:
    assert stop_time(pod_setting=pod, node_setting=node, fleet_setting=fleet) == expected


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        ({"name": "a"}, 0.0),
        ({"name": "a", "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}, 5.0),
        ({"name": "a", "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}}}, 0.0),
    ],
    ids=["no hook", "sleep action (PodLifecycleSleepAction)", "exec hook: nothing runs, no time"],
)
def test_pre_stop_sleep(container: Obj, expected: float) -> None:
    assert pre_stop_sleep(container) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("500ms", 0.5), ("2s", 2.0), (3, 3.0), (None, None)],
    ids=["Go duration ms", "Go duration s", "plain seconds", "absent"],
)
def test_node_config_shutdown_delay(value: Any, expected: float | None) -> None:
    group: Obj = {"name": "n"} if value is None else {"name": "n", "shutdownDelay": value}
    assert parse_node_config([group])[0].shutdown_delay == expected


@pytest.mark.parametrize("value", ["soon", "-1s", True], ids=["not a duration", "negative", "boolean"])
def test_node_config_rejects_a_bad_shutdown_delay(value: Any) -> None:
    with pytest.raises(NodeConfigError, match="node group n: shutdownDelay"):
        parse_node_config([{"name": "n", "shutdownDelay": value}])


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running_fleet(NODES, FleetOptions(pull_delay=0.0, status_workers=2)) as started:
        yield started


async def _running(env: Env, name: str, *, node: str = "n1", annotations: Obj | None = None, **spec: Any) -> None:
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}, "finalizers": [FINALIZER]},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx:1.27"}], **spec},
    }
    await env.create(body)
    await env.until(lambda: _phase_is(env, name, "Running"), f"{name} Running", step=STEP)


async def _phase_is(env: Env, name: str, phase: str) -> bool:
    return await env.phase(name) == phase


async def _deleted_after(env: Env, name: str, *, limit: float) -> tuple[float, Obj]:
    """Delete ``name`` and advance the clock until its status is terminal: (seconds it took, the pod)."""
    start = env.clock.monotonic()
    await env.client.delete(env.pods, name, namespace="default")

    async def terminal() -> bool:
        return await env.phase(name) in ("Succeeded", "Failed")

    check: Callable[[], Awaitable[bool]] = terminal
    await env.until(check, f"{name} terminal", step=STEP, tries=int(limit / STEP) + 50)
    return env.clock.monotonic() - start, await env.pod(name)


def _exit(pod: Obj, container: str = "app") -> tuple[int, str]:
    status = next(s for s in pod["status"]["containerStatuses"] if s["name"] == container)
    terminated = status["state"]["terminated"]
    return terminated["exitCode"], terminated["reason"]


async def test_a_deleted_pod_stops_in_about_the_default_stop_time_not_its_grace_period(env: Env) -> None:
    """Upstream: the container gets SIGTERM and the kubelet waits only until it exits; a process that handles
    SIGTERM and exits 0 reports 0/Completed; the pod ends Succeeded and is deleted (here: held by a finalizer)."""
    await _running(env, "web")
    took, pod = await _deleted_after(env, "web", limit=5.0)
    assert DEFAULT_STOP_TIME <= took < DEFAULT_STOP_TIME + 0.5  # not the 30 s grace period
    assert pod["status"]["phase"] == "Succeeded"
    assert _exit(pod) == (0, "Completed")
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 0  # the kubelet's final delete came


async def test_the_node_config_sets_the_stop_time(env: Env) -> None:
    """``shutdownDelay: 3s`` in the node config: the node's containers take 3 s to exit after SIGTERM."""
    await _running(env, "db", node="slow-node")
    took, pod = await _deleted_after(env, "db", limit=10.0)
    assert 3.0 <= took < 3.5
    assert _exit(pod) == (0, "Completed")


async def test_the_pod_annotation_overrides_the_node_config(env: Env) -> None:
    await _running(env, "quick", node="slow-node", annotations={"sim.kubeplane.io/shutdown-duration": "1s"})
    took, _ = await _deleted_after(env, "quick", limit=5.0)
    assert 1.0 <= took < 1.5


async def test_a_stop_time_above_the_grace_period_is_cut_by_sigkill(env: Env) -> None:
    """Upstream: after the grace period the runtime sends SIGKILL; the container ends with exit code 137 and
    the pod Failed."""
    await _running(
        env, "stubborn", annotations={"sim.kubeplane.io/shutdown-duration": "2m"}, terminationGracePeriodSeconds=5
    )
    took, pod = await _deleted_after(env, "stubborn", limit=10.0)
    assert 5.0 <= took < 5.5
    assert pod["status"]["phase"] == "Failed"
    assert _exit(pod) == (137, "Error")


async def test_a_pre_stop_sleep_runs_before_sigterm(env: Env) -> None:
    """Upstream ``executePreStopHook`` (sleep action) runs first; the container gets SIGTERM after it."""
    container = {"name": "app", "image": "nginx:1.27", "lifecycle": {"preStop": {"sleep": {"seconds": 2}}}}
    await _running(env, "hooked", containers=[container])
    took, pod = await _deleted_after(env, "hooked", limit=10.0)
    assert 2.0 + DEFAULT_STOP_TIME <= took < 2.0 + DEFAULT_STOP_TIME + 0.5
    assert _exit(pod) == (0, "Completed")


async def test_the_fleet_option_sets_the_stop_time_of_nodes_without_their_own() -> None:
    async with running_fleet(NODES, FleetOptions(pull_delay=0.0, shutdown_delay=2.0)) as env:
        await _running(env, "a")
        await _running(env, "b", node="slow-node")
        took_a, _ = await _deleted_after(env, "a", limit=5.0)
        took_b, _ = await _deleted_after(env, "b", limit=10.0)
        assert 2.0 <= took_a < 2.5  # the fleet's --shutdown-delay
        assert 3.0 <= took_b < 3.5  # the node config's own shutdownDelay wins
