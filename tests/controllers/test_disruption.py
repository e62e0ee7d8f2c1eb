"""The disruption controller: budget arithmetic (tables after upstream's disruption_test.go) and budgets kept
current end to end over the in-process API server, including evictions through ``pods/eviction``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.client.errors import TooManyRequestsError
from kubeplane.controllers.disruption import (
    DELETION_TIMEOUT,
    DisruptionController,
    build_disrupted_pod_map,
    count_healthy_pods,
    disruptions_allowed,
)
from tests.controllers import harness
from tests.controllers.harness import eventually, ready_status

NS = "default"
LABELS = {"app": "web"}

# --- pure logic --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("healthy", "desired", "expected", "want"),
    [(3, 2, 3, 1), (2, 2, 3, 0), (1, 2, 3, 0), (3, 0, 0, 0), (5, 1, 5, 4)],
)
def test_disruptions_allowed(healthy: int, desired: int, expected: int, want: int) -> None:
    assert disruptions_allowed(healthy, desired, expected) == want


def _pod_obj(name: str, *, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if deleting:
        meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return {"metadata": meta, "status": status}


def test_disrupted_pod_map_keeps_fresh_records_and_drops_stale_ones() -> None:
    now = 1_800_000_000.0
    fresh, stale = apimeta.format_time(now - 10), apimeta.format_time(now - DELETION_TIMEOUT - 1)
    pods = [_pod_obj("a"), _pod_obj("b"), _pod_obj("c", deleting=True), _pod_obj("d")]
    disrupted = {"a": fresh, "b": stale, "c": fresh, "gone": fresh}
    kept, recheck, expired = build_disrupted_pod_map(pods, disrupted, now)
    assert kept == {"a": fresh}  # terminating and vanished pods drop out, stale records expire
    assert recheck == now - 10 + DELETION_TIMEOUT
    assert [p["metadata"]["name"] for p in expired] == ["b"]


def test_count_healthy_pods() -> None:
    now = 1_800_000_000.0
    pods = [_pod_obj("a"), _pod_obj("b", ready=False), _pod_obj("c", deleting=True), _pod_obj("d")]
    assert count_healthy_pods(pods, {}, now) == 2
    assert count_healthy_pods(pods, {"d": apimeta.format_time(now - 5)}, now) == 1
    assert count_healthy_pods(pods, {"d": apimeta.format_time(now - DELETION_TIMEOUT - 5)}, now) == 2


# --- end to end --------------------------------------------------------------------------------------------


Env = harness.Env[DisruptionController]


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with harness.running(DisruptionController) as e:
        yield e


async def make_pod(env: Env, name: str, *, ready: bool, owner: dict[str, Any] | None = None) -> None:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    pod = {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    await env.client.create(env.res("pods"), pod, namespace=NS)
    await set_ready(env, name, ready)


async def set_ready(env: Env, name: str, ready: bool) -> None:
    pod = await env.client.get(env.res("pods"), name, namespace=NS)
    now = apimeta.format_time(env.clock.now())
    pod["status"] = {**pod.get("status", {}), **ready_status(now, ready=ready)}
    await env.client.update(env.res("pods"), pod, namespace=NS, subresource="status")


async def make_pdb(env: Env, name: str = "budget", **spec: Any) -> None:
    body = {"metadata": {"name": name}, "spec": {"selector": {"matchLabels": dict(LABELS)}, **spec}}
    await env.client.create(env.res("poddisruptionbudgets"), body, namespace=NS)


async def pdb_status(env: Env, name: str = "budget") -> dict[str, Any]:
    pdb = await env.client.get(env.res("poddisruptionbudgets"), name, namespace=NS)
    status: dict[str, Any] = pdb.get("status") or {}
    return status


async def wait_status(env: Env, name: str = "budget", **want: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def check() -> bool:
        nonlocal seen
        seen = await pdb_status(env, name)
        return all(seen.get(k) == v for k, v in want.items())

    try:
        await eventually(check)
    except AssertionError:
        raise AssertionError(f"wanted {want}, status is {seen}") from None
    return seen


def _condition(status: dict[str, Any]) -> tuple[str, str]:
    (cond,) = [c for c in status.get("conditions") or [] if c["type"] == "DisruptionAllowed"]
    return cond["status"], cond["reason"]


async def make_owner(
    env: Env, resource: str, name: str, replicas: int, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A workload object (nothing reconciles it here; only its spec.replicas and uid matter)."""
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    body: dict[str, Any] = {
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    if resource == "statefulsets":
        body["spec"]["serviceName"] = "svc"
    created = await env.client.create(env.res(resource), body, namespace=NS)
    info = env.res(resource)
    return {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "name": name,
        "uid": created["metadata"]["uid"],
        "controller": True,
    }


async def test_min_available_int_counts_ready_pods(env: Env) -> None:
    await make_pdb(env, minAvailable=2)
    for i in range(3):
        await make_pod(env, f"p{i}", ready=i < 2)
    status = await wait_status(
        env, expectedPods=3, desiredHealthy=2, currentHealthy=2, disruptionsAllowed=0, observedGeneration=1
    )
    assert _condition(status) == ("False", "InsufficientPods")
    await set_ready(env, "p2", True)
    status = await wait_status(env, currentHealthy=3, disruptionsAllowed=1)
    assert _condition(status) == ("True", "SufficientPods")


async def test_min_available_percent_uses_the_controllers_scale(env: Env) -> None:
    rs = await make_owner(env, "replicasets", "rs", replicas=4)
    await make_pdb(env, minAvailable="50%")
    for i in range(3):
        await make_pod(env, f"p{i}", ready=True, owner=rs)
    await wait_status(env, expectedPods=4, desiredHealthy=2, currentHealthy=3, disruptionsAllowed=1)


async def test_max_unavailable_int_through_deployment(env: Env) -> None:
    deploy = await make_owner(env, "deployments", "web", replicas=5)
    rs = await make_owner(env, "replicasets", "web-abc", replicas=3, owner=deploy)
    await make_pdb(env, maxUnavailable=1)
    for i in range(3):
        await make_pod(env, f"p{i}", ready=True, owner=rs)
    # the Deployment's scale (5), not its ReplicaSet's (3)
    await wait_status(env, expectedPods=5, desiredHealthy=4, currentHealthy=3, disruptionsAllowed=0)


async def test_max_unavailable_percent_rounds_up(env: Env) -> None:
    sts = await make_owner(env, "statefulsets", "db", replicas=3)
    await make_pdb(env, maxUnavailable="34%")
    for i in range(3):
        await make_pod(env, f"db-{i}", ready=True, owner=sts)
    # 34% of 3 = 1.02, rounded up to 2 unavailable: 1 must stay healthy
    await wait_status(env, expectedPods=3, desiredHealthy=1, currentHealthy=3, disruptionsAllowed=2)


async def test_unmanaged_pods_with_a_percentage_do_not_count(env: Env) -> None:
    await make_pdb(env, maxUnavailable="50%")
    await make_pod(env, "stray", ready=True)
    await wait_status(env, expectedPods=0, desiredHealthy=0, currentHealthy=1, disruptionsAllowed=0)


async def test_missing_controller_fails_safe(env: Env) -> None:
    ghost = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost", "uid": "nope", "controller": True}
    await make_pdb(env, maxUnavailable=1)
    await make_pod(env, "orphan", ready=True, owner=ghost)

    async def failed() -> bool:
        status = await pdb_status(env)
        conds = [c for c in status.get("conditions") or [] if c["type"] == "DisruptionAllowed"]
        return bool(conds) and conds[0]["reason"] == "SyncFailed"

    await eventually(failed)
    status = await pdb_status(env)
    assert status["disruptionsAllowed"] == 0
    cond = next(c for c in status["conditions"] if c["type"] == "DisruptionAllowed")
    assert cond["status"] == "False"
    assert cond["message"] == 'found no controllers for pod "orphan"'


async def test_disrupted_pods_expire_on_the_clock(env: Env) -> None:
    await make_pdb(env, minAvailable=1)
    for i in range(3):
        await make_pod(env, f"p{i}", ready=True)
    await wait_status(env, currentHealthy=3, disruptionsAllowed=2)
    # an eviction was recorded for p0, but p0 is never deleted
    pdb = await env.client.get(env.res("poddisruptionbudgets"), "budget", namespace=NS)
    pdb["status"]["disruptedPods"] = {"p0": apimeta.format_time(env.clock.now())}
    pdb["status"]["disruptionsAllowed"] = 1
    await env.client.update(env.res("poddisruptionbudgets"), pdb, namespace=NS, subresource="status")
    status = await wait_status(env, currentHealthy=2, disruptionsAllowed=1)
    assert set(status["disruptedPods"]) == {"p0"}
    await env.clock.advance(DELETION_TIMEOUT - 1)
    await asyncio.sleep(0.05)
    assert (await pdb_status(env))["currentHealthy"] == 2  # not yet expired
    await env.clock.advance(2)
    status = await wait_status(env, currentHealthy=3, disruptionsAllowed=2)
    assert "disruptedPods" not in status


async def test_eviction_is_refused_until_pods_are_ready(env: Env) -> None:
    await make_pdb(env, minAvailable=2)
    for i in range(3):
        await make_pod(env, f"p{i}", ready=False)
    await wait_status(env, expectedPods=3, currentHealthy=0, disruptionsAllowed=0)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p0", "namespace": NS}}
    with pytest.raises(TooManyRequestsError) as refused:
        await env.client.create(env.res("pods"), eviction, namespace=NS, subresource="eviction", name="p0")
    assert refused.value.code == 429
    for i in range(3):
        await set_ready(env, f"p{i}", True)
    await wait_status(env, currentHealthy=3, disruptionsAllowed=1)
    await env.client.create(env.res("pods"), eviction, namespace=NS, subresource="eviction", name="p0")
    # the eviction spent the budget and deleted the (unbound) pod at once; the controller agrees and drops
    # the eviction record of the pod that no longer exists
    status = await wait_status(env, expectedPods=2, currentHealthy=2, disruptionsAllowed=0)
    assert "disruptedPods" not in status
    assert _condition(status) == ("False", "InsufficientPods")
    second = {**eviction, "metadata": {"name": "p1", "namespace": NS}}
    with pytest.raises(TooManyRequestsError):
        await env.client.create(env.res("pods"), second, namespace=NS, subresource="eviction", name="p1")
