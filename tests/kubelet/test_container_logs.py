"""The fleet's kubelet API: container logs and resource metrics of simulated containers, on the fake clock.

Pinned upstream behaviour:

* ``pkg/kubelet/server/server.go`` ``getContainerLogs``: the node is the request's host, 404 ``pod "p" does not
  exist`` / ``container "c" not found in pod "p"``, 400 ``{"message": "Unable to decode query."}``, 422
  ``{"message": "Invalid request."}``, ``tail`` as the old name of ``tailLines``;
* ``pkg/kubelet/kubelet_pods.go`` ``validateContainerLogStatus``: which run is read (``previous`` = the last
  terminated one), its 400 messages (``is waiting to start: ContainerCreating``, ``previous terminated container
  ... not found``);
* ``pkg/kubelet/kuberuntime/logs/logs.go`` ``ReadLogs``: tail, since, ``RFC3339NanoFixed`` timestamps, limitBytes
  cutting mid-line, follow ending when the container stops;
* ``pkg/kubelet/metrics/collectors/resource_metrics.go``: the ``/metrics/resource`` families metrics-server reads,
  with millisecond timestamps; Go's float formatting (``strconv.FormatFloat(v, 'g', -1, 64)``);
* the node advertises the endpoint's port in ``status.daemonEndpoints.kubeletEndpoint.Port``
  (``pkg/kubelet/nodestatus/setters.go``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest

from kubeplane.kubelet import container_logs
from kubeplane.kubelet.fleet import FleetOptions
from kubeplane.kubelet.resource_metrics import go_float
from tests.kubelet.harness import Env, running_fleet

NODES = [{"name": "n1"}, {"name": "n2"}]
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    options = FleetOptions(pull_delay=2.0, status_workers=2, kubelet_api=True)
    async with running_fleet(NODES, options) as started:
        yield started


async def get(env: Env, path: str, *, node: str = "n1", timeout: float = 10) -> tuple[int, str]:
    port = env.fleet.kubelet_server.port
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}", headers={"Host": f"{node}:{port}"}) as response,
    ):
        return response.status, (await asyncio.wait_for(response.read(), timeout)).decode()


async def running(env: Env, name: str, **spec: object) -> None:
    await env.create_pod(name, **spec)  # type: ignore[arg-type]
    await env.until(lambda: env.is_phase(name, "Running"), f"{name} Running", step=0.5)


LOG = {"sim.kubeplane.io/log": "one\ntwo\nthree\n"}


async def test_nodes_advertise_the_fleet_endpoint(env: Env) -> None:
    node = await env.client.get(env.nodes, "n1")
    assert node["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": env.fleet.kubelet_server.port}}
    assert env.fleet.kubelet_server.port != 0


async def test_lifecycle_and_annotation_lines_with_tail_timestamps_and_limit(env: Env) -> None:
    await running(env, "web", annotations=LOG)
    status, text = await get(env, "/containerLogs/default/web/app")
    assert status == 200
    assert text == (
        "kubeplane: started container app (image nginx:1.27); it is simulated and runs no process\none\ntwo\nthree\n"
    )
    assert (await get(env, "/containerLogs/default/web/app?tailLines=2"))[1] == "two\nthree\n"
    assert (await get(env, "/containerLogs/default/web/app?tail=1"))[1] == "three\n"  # the old name
    assert (await get(env, "/containerLogs/default/web/app?tailLines=0"))[1] == ""
    stamped = (await get(env, "/containerLogs/default/web/app?timestamps=true&tailLines=1"))[1]
    assert STAMP.match(stamped)
    assert stamped.endswith(" three\n")
    assert (await get(env, "/containerLogs/default/web/app?limitBytes=5&tailLines=3"))[1] == "one\nt"  # mid-line


async def test_since_seconds_keeps_only_recent_lines(env: Env) -> None:
    await running(env, "web", annotations={**LOG, "sim.kubeplane.io/log-every": "10s"})
    await env.clock.advance(10)
    await asyncio.sleep(0.01)
    _, everything = await get(env, "/containerLogs/default/web/app")
    assert everything.count("one\n") == 2
    _, recent = await get(env, "/containerLogs/default/web/app?sinceSeconds=5")
    assert recent == "one\ntwo\nthree\n"


async def test_previous_reads_the_last_terminated_run(env: Env) -> None:
    annotations = {**LOG, "sim.kubeplane.io/duration": "5s", "sim.kubeplane.io/exit-code": "3"}
    status, text = await get(env, "/containerLogs/default/nope/app")
    assert (status, text) == (404, 'pod "nope" does not exist')
    await running(env, "crash", annotations=annotations)
    status, text = await get(env, "/containerLogs/default/crash/app?previous=true")
    assert (status, text) == (400, 'previous terminated container "app" in pod "crash" not found')
    rt = next(r for r in env.fleet.runtimes.values() if r.name == "crash")
    await env.until(lambda: _restarted(rt.containers[0].restart_count), "a restart", step=0.5)
    status, text = await get(env, "/containerLogs/default/crash/app?previous=true")
    assert status == 200
    assert text.endswith("three\nkubeplane: container app exited with code 3\n")


async def _restarted(count: int) -> bool:
    return count >= 1


async def test_errors_of_the_kubelet(env: Env) -> None:
    await env.create_pod("slow", annotations=LOG)  # pull delay 2 s: the container waits in ContainerCreating
    await env.until(lambda: _known(env, "slow"), "the kubelet knows slow")
    status, text = await get(env, "/containerLogs/default/slow/app")
    assert (status, text) == (400, 'container "app" in pod "slow" is waiting to start: ContainerCreating')
    assert await get(env, "/containerLogs/default/slow/other") == (404, 'container "other" not found in pod "slow"')
    assert await get(env, "/containerLogs/default/slow/app?tailLines=x") == (
        400,
        '{"message": "Unable to decode query."}',
    )
    assert await get(env, "/containerLogs/default/slow/app?tailLines=-1") == (422, '{"message": "Invalid request."}')
    status, _ = await get(env, "/containerLogs/default/slow/app", node="elsewhere")
    assert status == 404
    status, _ = await get(env, "/containerLogs/default/slow/app", node="n2")  # not that node's pod
    assert status == 404


async def _known(env: Env, name: str) -> bool:
    return any(r.name == name for r in env.fleet.runtimes.values())


async def test_follow_streams_new_lines_and_ends_when_the_container_stops(env: Env) -> None:
    await running(env, "web", annotations={**LOG, "sim.kubeplane.io/log-every": "1s"})
    port = env.fleet.kubelet_server.port
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"http://127.0.0.1:{port}/containerLogs/default/web/app?follow=true&tailLines=1",
            headers={"Host": f"n1:{port}"},
        ) as response,
    ):
        assert (await asyncio.wait_for(response.content.readline(), 5)) == b"three\n"
        await env.clock.advance(1)
        assert (await asyncio.wait_for(response.content.readline(), 5)) == b"one\n"
        await env.client.delete(env.pods, "web", namespace="default")
        for _ in range(40):
            await env.clock.advance(0.25)
            await asyncio.sleep(0.002)
        rest = (await asyncio.wait_for(response.read(), 5)).decode()
    assert rest.endswith("kubeplane: container app received SIGTERM\nkubeplane: container app exited with code 0\n")


async def test_resource_metrics_from_requests_and_annotations(env: Env) -> None:
    containers = [
        {"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "300m", "memory": "96Mi"}}},
        {"name": "side", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}}},
    ]
    await running(env, "web", containers=containers)
    await running(env, "hot", annotations={"sim.kubeplane.io/usage-cpu": "2", "sim.kubeplane.io/usage-memory": "1Gi"})
    started = env.clock.now()
    await env.clock.advance(10)
    status, text = await get(env, "/metrics/resource")
    assert status == 200
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    stamp = str(int(env.clock.now() * 1000))
    by_name = {line.rsplit(" ", 2)[0]: line.rsplit(" ", 2)[1:] for line in lines if line.count(" ") == 2}
    app = 'container="app",namespace="default",pod="web"'
    assert by_name[f"container_memory_working_set_bytes{{{app}}}"] == ["1.00663296e+08", stamp]
    assert by_name['container_memory_working_set_bytes{container="side",namespace="default",pod="web"}'][0] == (
        "3.3554432e+07"
    )
    cpu = float(by_name[f"container_cpu_usage_seconds_total{{{app}}}"][0])
    assert cpu == pytest.approx(0.3 * (env.clock.now() - started), abs=0.3 * 2)  # started while "web" came up
    assert by_name['pod_memory_working_set_bytes{namespace="default",pod="hot"}'][0] == "1.073741824e+09"
    assert by_name["node_memory_working_set_bytes"][0] == go_float(float(2**30 + 128 * 2**20))
    assert lines[-1] == "resource_scrape_error 0"
    assert "# TYPE node_cpu_usage_seconds_total counter" in text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "0"), (1.0, "1"), (0.5, "0.5"), (123456.0, "123456"), (1e6, "1e+06"), (10485760.0, "1.048576e+07"),
     (1.5e-5, "1.5e-05"), (0.0001, "0.0001"), (1732776000.123, "1.732776000123e+09")],
)  # fmt: skip
def test_go_float_is_strconv_g_shortest(value: float, text: str) -> None:
    assert go_float(value) == text


def test_timestamps_are_rfc3339nano_fixed() -> None:
    assert container_logs.format_timestamp(1_800_000_000_000_000_000) == "2027-01-15T08:00:00.000000000Z"
    assert container_logs.format_timestamp(1_800_000_000_120_000_000) == "2027-01-15T08:00:00.120000000Z"


async def test_a_follower_that_leaves_is_dropped(env: Env) -> None:
    await running(env, "quiet", annotations=LOG)
    port = env.fleet.kubelet_server.port
    rt = next(r for r in env.fleet.runtimes.values() if r.name == "quiet")
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"http://127.0.0.1:{port}/containerLogs/default/quiet/app?follow=true",
            headers={"Host": f"n1:{port}"},
        ) as response,
    ):
        await asyncio.wait_for(response.content.readline(), 5)
        assert rt.containers[0].log._waiters  # the handler waits for the next line
    for _ in range(100):  # the reader left: aiohttp cancels the handler, its waiter goes
        if not rt.containers[0].log._waiters:
            break
        await asyncio.sleep(0.01)
    assert not rt.containers[0].log._waiters
