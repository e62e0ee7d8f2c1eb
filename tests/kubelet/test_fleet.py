"""The simulated kubelet fleet over the in-process API server on a fake clock: what the API shows is kubelet's.

Upstream behaviour pinned: registration (``kubelet_node_status.go``), Lease renewal every 10 s
(``nodelease``), pod status and conditions (``generateAPIPodStatus``), the container start events and their
order, admission rejection (``predicate.go``), run-to-completion and restart back-off, graceful termination
(``killPod`` then the status manager's final delete), observedGeneration on status and conditions
(PodObservedGenerationTracking, ``CalculatePodStatusObservedGeneration``), the eviction manager's ranking
(``rankMemoryPressure``) and mirror pods (``mirror_client.go``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from tests.kubelet.harness import Env, Obj, running_fleet

NODES = [
    {"name": "n1", "capacity": {"cpu": "4", "memory": "4Gi", "pods": "10"}, "zone": "z1", "region": "r1",
     "images": {"nginx:1.27": "180Mi"}},
    {"name": "n2", "podCIDR": "10.9.0.0/24", "labels": {"disk": "ssd"}, "taints": ["dedicated=infra:NoSchedule"]},
]  # fmt: skip


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running_fleet(NODES, FleetOptions(pull_delay=2.0, status_workers=2)) as started:
        yield started


async def test_registration_as_a_kubelet(env: Env) -> None:
    n1 = await env.client.get(env.nodes, "n1")
    labels = n1["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "n1"
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["topology.kubernetes.io/zone"] == "z1"
    assert labels["topology.kubernetes.io/region"] == "r1"
    status = n1["status"]
    assert [c["type"] for c in status["conditions"]] == ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    ready = status["conditions"][-1]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    )
    assert status["capacity"] == {"cpu": "4", "memory": "4Gi", "pods": "10", "ephemeral-storage": "100Gi"}
    assert status["nodeInfo"]["kubeletVersion"] == "v1.37.0"
    assert status["addresses"][0] == {"type": "InternalIP", "address": "172.18.0.2"}
    assert status["images"] == [{"names": ["nginx:1.27"], "sizeBytes": 180 * 2**20}]
    assert n1["spec"]["podCIDR"] == "10.244.0.0/24"
    n2 = await env.client.get(env.nodes, "n2")
    assert n2["spec"]["podCIDR"] == "10.9.0.0/24"
    assert n2["metadata"]["labels"]["disk"] == "ssd"
    assert n2["spec"]["taints"] == [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]

    leases = env.client.resource("leases")

    async def renew_time() -> str | None:
        try:
            lease = await env.client.get(leases, "n1", namespace="kube-node-lease")
        except NotFoundError:
            return None
        assert lease["spec"]["holderIdentity"] == "n1"
        assert lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
        return str(lease["spec"]["renewTime"])

    await env.clock.advance(10.0)
    first = await renew_time()
    assert first is not None
    await env.clock.advance(10.0)
    second = await renew_time()
    assert second is not None
    assert second > first

    env.fleet.stop_node("n1")  # a dead kubelet renews nothing
    await env.clock.advance(30.0)
    assert await renew_time() == second
    env.fleet.resume_node("n1")
    await env.clock.advance(10.0)
    resumed = await renew_time()
    assert resumed is not None
    assert resumed > second


async def test_pod_runs_through_its_phases_with_kubelet_events(env: Env) -> None:
    await env.create_pod("web", containers=[{"name": "app", "image": "nginx"}, {"name": "side", "image": "nginx:1.27"}])

    async def pending_with_host() -> bool:
        pod = await env.pod("web")
        return bool(pod.get("status", {}).get("hostIP") == "172.18.0.2")

    await env.until(pending_with_host, "pod admitted")
    pod = await env.pod("web")
    assert pod["status"]["phase"] == "Pending"
    waiting = pod["status"]["containerStatuses"][0]["state"]
    assert waiting == {"waiting": {"reason": "ContainerCreating"}}
    await env.until(lambda: _is(env.phase("web"), "Running"), "Running", step=0.5)
    status = (await env.pod("web"))["status"]
    assert status["podIP"] == "10.244.0.2"
    assert status["podIPs"] == [{"ip": "10.244.0.2"}]
    assert status["startTime"]
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodScheduled": "True", "PodReadyToStartContainers": "True", "Initialized": "True",
                          "ContainersReady": "True", "Ready": "True"}  # fmt: skip
    app = status["containerStatuses"][0]
    assert app["ready"]
    assert app["started"]
    assert app["restartCount"] == 0
    assert "running" in app["state"]
    assert app["image"] == "docker.io/library/nginx:latest"
    assert app["containerID"].startswith("containerd://")
    events = [(e["reason"], e["involvedObject"].get("fieldPath"), e["message"]) for e in await env.events("web")]
    assert events == [
        ("Pulling", "spec.containers{app}", 'Pulling image "nginx"'),
        ("Pulled", "spec.containers{app}",
         'Successfully pulled image "nginx" in 2s (2s including waiting). Image size: 104857600 bytes.'),
        ("Created", "spec.containers{app}", "Created container: app"),
        ("Started", "spec.containers{app}", "Started container app"),
        ("Pulled", "spec.containers{side}",
         'Container image "nginx:1.27" already present on machine and can be accessed by the pod'),
        ("Created", "spec.containers{side}", "Created container: side"),
        ("Started", "spec.containers{side}", "Started container side"),
    ]  # fmt: skip
    assert all(e["source"] == {"component": "kubelet", "host": "n1"} for e in await env.events("web"))

    await env.create_pod("second", containers=[{"name": "app", "image": "nginx:1.27"}])
    await env.until(lambda: _is(env.phase("second"), "Running"), "second Running", step=0.5)
    assert (await env.pod("second"))["status"]["podIP"] == "10.244.0.3"


async def _is(value: Awaitable[str], expected: str) -> bool:
    return await value == expected


async def test_admission_rejects_a_pod_without_room(env: Env) -> None:
    big = [{"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "3"}}}]
    await env.create_pod("first", containers=big)
    await env.until(lambda: _is(env.phase("first"), "Running"), "first Running", step=0.5)
    await env.create_pod("second", containers=big)
    await env.until(lambda: _is(env.phase("second"), "Failed"), "second rejected")
    status = (await env.pod("second"))["status"]
    assert status["reason"] == "OutOfcpu"
    assert status["message"] == "Node didn't have enough resource: cpu, requested: 3000, used: 3000, capacity: 4000"
    events = await env.events("second")
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "OutOfcpu")]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]}]}}}  # fmt: skip
    await env.create_pod("picky", node="n2", affinity=affinity)
    await env.until(lambda: _is(env.phase("picky"), "Failed"), "picky rejected")
    assert (await env.pod("picky"))["status"]["reason"] == "NodeAffinity"


async def test_run_to_completion_and_restarts(env: Env) -> None:
    containers = [{"name": "job", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}]
    duration, code = "sim.kubeplane.io/duration", "sim.kubeplane.io/exit-code"
    await env.create_pod("ok", restartPolicy="Never", containers=containers, annotations={duration: "30s"})
    await env.create_pod("bad", restartPolicy="Never", containers=containers, annotations={duration: "30s", code: "3"})
    await env.create_pod(
        "retry", restartPolicy="OnFailure", containers=containers, annotations={duration: "5s", code: "1"}
    )
    await env.until(lambda: _is(env.phase("ok"), "Running"), "ok Running", step=0.5)
    assert await env.phase("bad") == "Running"
    await env.until(lambda: _is(env.phase("ok"), "Succeeded"), "ok Succeeded", step=1.0)
    await env.until(lambda: _is(env.phase("bad"), "Failed"), "bad Failed", step=1.0)
    ok = (await env.pod("ok"))["status"]
    terminated = ok["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert {c["type"]: c.get("reason") for c in ok["conditions"]}["Ready"] == "PodCompleted"
    bad = (await env.pod("bad"))["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (bad["exitCode"], bad["reason"]) == (3, "Error")
    retry = (await env.pod("retry"))["status"]
    assert retry["phase"] == "Running"
    assert retry["containerStatuses"][0]["restartCount"] >= 2
    assert retry["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    assert any(e["reason"] == "BackOff" for e in await env.events("retry"))
    # a finished pod no longer counts against the node: its IP is free for the next pod
    assert all(rt.name not in ("ok", "bad") for rt in env.fleet.pods_on("n1"))


async def test_graceful_termination_waits_for_the_grace_period(env: Env) -> None:
    # "slow" never exits on SIGTERM (a stop time far above its grace period): it is killed after 30 s of grace
    await env.create_pod("slow", annotations={"sim.kubeplane.io/shutdown-duration": "1h"})
    await env.create_pod("quick", annotations={"sim.kubeplane.io/shutdown-duration": "2s"})
    await env.until(lambda: _is(env.phase("slow"), "Running"), "Running", step=0.5)
    await env.until(lambda: _is(env.phase("quick"), "Running"), "Running", step=0.5)
    await env.client.delete(env.pods, "slow", namespace="default")
    await env.client.delete(env.pods, "quick", namespace="default")
    await env.until(lambda: _is(env.phase("quick"), "<gone>"), "quick deleted", step=0.5, tries=10)
    assert await env.phase("slow") == "Running"  # still terminating: 30 s of grace
    assert [e["message"] for e in await env.events("slow") if e["reason"] == "Killing"] == ["Stopping container app"]
    await env.clock.advance(25.0)
    await asyncio.sleep(0.01)
    assert await env.phase("slow") != "<gone>"
    await env.until(lambda: _is(env.phase("slow"), "<gone>"), "slow deleted", step=1.0, tries=20)


async def test_status_and_conditions_carry_the_observed_generation(env: Env) -> None:
    # PodObservedGenerationTracking (GA since v1.35): the kubelet stamps status.observedGeneration and each
    # condition it reports (PodScheduled included) with the pod's generation; graceful deletion bumps the
    # generation and the kubelet's next status follows it
    await env.create_pod("gen", annotations={"sim.kubeplane.io/shutdown-duration": "1h"})
    await env.until(lambda: _is(env.phase("gen"), "Running"), "Running", step=0.5)
    status = (await env.pod("gen"))["status"]
    assert status["observedGeneration"] == 1
    assert {c["type"]: c.get("observedGeneration") for c in status["conditions"]} == {
        "PodScheduled": 1, "PodReadyToStartContainers": 1, "Initialized": 1, "ContainersReady": 1, "Ready": 1,
    }  # fmt: skip
    await env.client.delete(env.pods, "gen", namespace="default")
    assert (await env.pod("gen"))["metadata"]["generation"] == 2

    async def observed_two() -> bool:
        status = (await env.pod("gen"))["status"]
        return bool(status.get("observedGeneration") == 2)

    await env.until(observed_two, "the terminating pod's status at generation 2", step=0.5, tries=20)
    conditions = (await env.pod("gen"))["status"]["conditions"]
    assert {c["type"]: c.get("observedGeneration") for c in conditions}["Ready"] == 2


async def test_eviction_order_under_memory_pressure(env: Env) -> None:
    """BestEffort, then Burstable, then Guaranteed (usage above requests first, then by usage over request)."""

    def container(**resources: Any) -> list[Obj]:
        return [{"name": "app", "image": "nginx:1.27", "resources": resources}]

    guaranteed = {"cpu": "100m", "memory": "4000Mi"}
    await env.create_pod("guaranteed", containers=container(requests=guaranteed, limits=guaranteed))
    await env.create_pod("burstable", containers=container(requests={"memory": "10Mi"}),
                         annotations={"sim.kubeplane.io/usage-memory": "1Gi"})  # fmt: skip
    await env.create_pod("besteffort", containers=container(), annotations={"sim.kubeplane.io/usage-memory": "1Gi"})
    for name in ("guaranteed", "burstable", "besteffort"):
        await env.until(lambda n=name: _is(env.phase(n), "Running"), f"{name} Running", step=0.5)  # type: ignore[misc]
    evicted: list[str] = []

    async def next_eviction() -> bool:
        for name in ("guaranteed", "burstable", "besteffort"):
            if name not in evicted and await env.phase(name) == "Failed":
                evicted.append(name)
                return True
        return False

    for _ in range(3):
        await env.until(next_eviction, f"an eviction after {evicted}", step=2.0, tries=50)
    assert evicted == ["besteffort", "burstable", "guaranteed"]
    status = (await env.pod("besteffort"))["status"]
    assert status["reason"] == "Evicted"
    assert status["message"].startswith("The node was low on resource: memory. Threshold quantity: 100Mi, available: ")
    assert "Container app was using 1Gi, request is 0, has larger consumption of memory. " in status["message"]
    assert any(c["type"] == "DisruptionTarget" and c["reason"] == "TerminationByKubelet" for c in status["conditions"])
    assert [e["reason"] for e in await env.events("besteffort")][-1] == "Evicted"
    node = await env.client.get(env.nodes, "n1")
    pressure = next(c for c in node["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (pressure["status"], pressure["reason"]) == ("True", "KubeletHasInsufficientMemory")
    # BestEffort pods are refused while the node is under memory pressure
    await env.create_pod("late", containers=container())
    await env.until(lambda: _is(env.phase("late"), "Failed"), "late rejected")
    late = (await env.pod("late"))["status"]
    assert (late["reason"], late["message"]) == ("Evicted", "The node had condition: [MemoryPressure]. ")
    # the condition clears after the 5 minute transition period
    await env.clock.advance(310.0)
    await env.until(lambda: _no_pressure(env), "MemoryPressure False", step=5.0, tries=10)


async def _no_pressure(env: Env) -> bool:
    node = await env.client.get(env.nodes, "n1")
    return any(c["type"] == "MemoryPressure" and c["status"] == "False" for c in node["status"]["conditions"])


async def test_static_pods_publish_mirror_pods_that_come_back(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "etcd.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\n"
        "spec:\n  containers:\n  - name: etcd\n    image: registry.k8s.io/etcd:3.5.21-0\n"
    )
    (manifests / ".hidden.yaml").write_text("not: a pod\n")
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    specs = parse_node_config([{"name": "cp", "staticPodPath": str(manifests)}])
    fleet = Fleet(client, specs, clock=clock, rng=random.Random(2), options=FleetOptions(status_workers=1))
    await fleet.start()
    pods = client.resource("pods")
    try:
        env = Env(client, clock, fleet)

        async def mirror() -> Obj | None:
            try:
                return await client.get(pods, "etcd-cp", namespace="kube-system")
            except NotFoundError:
                return None

        async def running() -> bool:
            pod = await mirror()
            return pod is not None and pod.get("status", {}).get("phase") == "Running"

        await env.until(running, "mirror pod Running", step=0.5)
        pod = await mirror()
        assert pod is not None
        annotations = pod["metadata"]["annotations"]
        assert annotations["kubernetes.io/config.mirror"] == annotations["kubernetes.io/config.hash"]
        assert annotations["kubernetes.io/config.source"] == "file"
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Node", "cp", True)
        assert {"operator": "Exists", "effect": "NoExecute"} in pod["spec"]["tolerations"]
        first_uid, first_ip = pod["metadata"]["uid"], pod["status"]["podIP"]

        await client.delete(pods, "etcd-cp", namespace="kube-system")  # the static pod keeps running

        async def recreated() -> bool:
            again = await mirror()
            return (
                again is not None
                and again["metadata"]["uid"] != first_uid
                and again.get("status", {}).get("phase") == "Running"
            )

        await env.until(recreated, "mirror pod re-created", step=0.5)
        again = await mirror()
        assert again is not None
        assert again["status"]["podIP"] == first_ip

        (manifests / "etcd.yaml").unlink()  # removing the manifest removes the pod
        await env.until(lambda: _absent(mirror()), "mirror pod removed", step=5.0)
    finally:
        await fleet.stop()
        await client.close()


async def _absent(value: Awaitable[Obj | None]) -> bool:
    return await value is None


async def test_a_restarted_fleet_adopts_running_pods(env: Env) -> None:
    await env.create_pod("web")
    await env.until(lambda: _is(env.phase("web"), "Running"), "Running", step=0.5)
    before = await env.pod("web")
    events_before = len(await env.events("web"))
    await env.fleet.stop()
    fleet = Fleet(env.client, parse_node_config(NODES), clock=env.clock, rng=random.Random(3))
    await fleet.start()
    env.fleet = fleet
    try:
        await env.clock.advance(1.0)
        await env.create_pod("next")
        await env.until(lambda: _is(env.phase("next"), "Running"), "next Running", step=0.5)
        after = await env.pod("web")
        assert after["status"]["podIP"] == before["status"]["podIP"]
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert (await env.pod("next"))["status"]["podIP"] != before["status"]["podIP"]
        assert len(await env.events("web")) == events_before
    finally:
        await fleet.stop()


async def test_init_containers_run_before_the_containers(env: Env) -> None:
    init = [{"name": "migrate", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent"}]
    await env.create_pod("with-init", initContainers=init)
    await env.until(lambda: _is(env.phase("with-init"), "Running"), "Running", step=0.5)
    status = (await env.pod("with-init"))["status"]
    done = status["initContainerStatuses"][0]
    assert done["state"]["terminated"]["reason"] == "Completed"
    assert done["ready"] is False
    assert {c["type"]: c["status"] for c in status["conditions"]}["Initialized"] == "True"
    reasons = [(e["reason"], e["involvedObject"]["fieldPath"]) for e in await env.events("with-init")]
    assert reasons.index(("Started", "spec.initContainers{migrate}")) < reasons.index(
        ("Created", "spec.containers{app}")
    )


async def test_the_heartbeat_annotation_stops_and_resumes_a_node(env: Env) -> None:
    leases = env.client.resource("leases")
    await env.clock.advance(10.0)
    first = (await env.client.get(leases, "n2", namespace="kube-node-lease"))["spec"]["renewTime"]
    await env.client.patch(env.nodes, "n2", {"metadata": {"annotations": {"sim.kubeplane.io/heartbeat": "false"}}})
    await env.until(lambda: _stopped(env.fleet, "n2"), "n2 stopped")
    await env.create_pod("waits", node="n2", tolerations=[{"operator": "Exists"}])
    await env.clock.advance(30.0)
    assert (await env.client.get(leases, "n2", namespace="kube-node-lease"))["spec"]["renewTime"] == first
    assert await env.phase("waits") == "Pending"  # a dead kubelet runs nothing
    await env.client.patch(env.nodes, "n2", {"metadata": {"annotations": {"sim.kubeplane.io/heartbeat": None}}})
    await env.until(lambda: _is(env.phase("waits"), "Running"), "Running after resume", step=1.0)
    await env.clock.advance(10.0)
    assert (await env.client.get(leases, "n2", namespace="kube-node-lease"))["spec"]["renewTime"] > first


async def _stopped(fleet: Fleet, node: str) -> bool:
    return not fleet.nodes[node].running


async def test_memory_pressure_taints_the_node_through_the_node_lifecycle_controller(env: Env) -> None:
    from kubeplane.controllers.manager import ControllerManager

    manager = ControllerManager(env.client, controllers=["node-lifecycle"], clock=env.clock, rng=random.Random(4))
    await manager.start()
    task = asyncio.create_task(manager.run())
    try:
        await env.create_pod("hog", annotations={"sim.kubeplane.io/usage-memory": "4000Mi"})
        await env.until(lambda: _is(env.phase("hog"), "Failed"), "hog evicted", step=2.0)

        async def tainted() -> bool:
            node = await env.client.get(env.nodes, "n1")
            return any(t["key"] == "node.kubernetes.io/memory-pressure" for t in node["spec"].get("taints", []))

        await env.until(tainted, "memory-pressure taint", step=1.0)
        taint = next(t for t in (await env.client.get(env.nodes, "n1"))["spec"]["taints"])
        assert taint["effect"] == "NoSchedule"
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await manager.stop()


async def test_a_starting_kubelet_reports_node_events(env: Env) -> None:
    await env.fleet.flush_events()
    items = (await env.client.list(env.client.resource("events"), namespace="default"))["items"]
    n1 = [
        (e["reason"], e["message"])
        for e in items
        if e["involvedObject"] == {"kind": "Node", "name": "n1", "uid": "n1", "apiVersion": "v1"}
    ]
    assert n1 == [
        ("Starting", "Starting kubelet."),
        ("NodeHasSufficientMemory", "Node n1 status is now: NodeHasSufficientMemory"),
        ("NodeHasNoDiskPressure", "Node n1 status is now: NodeHasNoDiskPressure"),
        ("NodeHasSufficientPID", "Node n1 status is now: NodeHasSufficientPID"),
        ("NodeAllocatableEnforced", "Updated Node Allocatable limit across pods"),
    ]


async def test_a_node_configured_dead_comes_back_with_the_annotation() -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    fleet = Fleet(client, parse_node_config([{"name": "z", "heartbeat": False}]), clock=clock, rng=random.Random(5))
    await fleet.start()
    try:
        assert not fleet.nodes["z"].running
        nodes = client.resource("nodes")
        await client.patch(nodes, "z", {"metadata": {"annotations": {"sim.kubeplane.io/heartbeat": "true"}}})
        env = Env(client, clock, fleet)
        await env.until(lambda: _running(fleet, "z"), "z running")
    finally:
        await fleet.stop()
        await client.close()


async def _running(fleet: Fleet, node: str) -> bool:
    return fleet.nodes[node].running
