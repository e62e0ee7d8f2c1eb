"""The ReplicaSet controller and the shared controller utilities.

Pure logic first, in tables after upstream's ``controller_utils_test.go`` and ``replica_set_test.go`` (deletion
order, expectations, slow start, availability); then end to end over the in-process API server with a fake
clock: scaling (spec and ``scale`` subresource), deletion order, adoption and release, expectations while the pod
informer lags, status with ready/available pods, ReplicaFailure, and a restart that changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ForbiddenError
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.controllers.controller_utils import (
    DELETION_COST_ANNOTATION,
    active_pods_with_ranks_less,
    get_pod_from_template,
    get_pods_prefix,
    slow_start_batch,
    sort_active_pods_with_ranks,
)
from kubeplane.controllers.expectations import (
    EXPECTATIONS_TIMEOUT,
    ControllerExpectations,
    UIDTrackingControllerExpectations,
)
from kubeplane.controllers.podutil import find_min_next_pod_availability_check, is_pod_active, is_pod_available
from kubeplane.controllers.replicaset import ReplicaSetController, calculate_status, get_pods_to_delete
from tests.controllers import harness
from tests.controllers.harness import eventually, ready_status, settle

NS = "default"
LABELS = {"app": "web"}
NOW = 1_800_000_000.0

# --- deletion order (upstream TestSortingActivePodsWithRanks) ----------------------------------------------

HOUR = 3600.0
MONTH = 30 * 24 * HOUR


def _pod(
    name: str,
    node: str,
    phase: str,
    ready: bool,
    restarts: int,
    ready_since: float | None,
    created: float | None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    meta: Obj = {"name": name, "namespace": NS}
    if created is not None:
        meta["creationTimestamp"] = apimeta.format_time(created)
    if annotations:
        meta["annotations"] = annotations
    cond: Obj = {"type": "Ready", "status": "True" if ready else "False"}
    if ready_since is not None:
        cond["lastTransitionTime"] = apimeta.format_time(ready_since)
    return {
        "metadata": meta,
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": [cond], "containerStatuses": [{"restartCount": restarts}]},
    }


UNSCHEDULED = _pod("unscheduled", "", "Pending", False, 0, None, None)
SCHEDULED_PENDING = _pod("pending", "node", "Pending", False, 0, None, None)
UNKNOWN_PHASE = _pod("unknown-phase", "node", "Unknown", False, 0, None, None)
RUNNING_NOT_READY = _pod("not-ready", "node", "Running", False, 0, None, None)
READY_NO_TRANSITION = _pod("ready-no-last-transition-time", "node", "Running", True, 0, None, None)
READY_NOW = _pod("ready-now", "node", "Running", True, 0, NOW, NOW)
READY_THEN = _pod("ready-then", "node", "Running", True, 0, NOW - MONTH, NOW - MONTH)
READY_HIGH_RESTARTS = _pod("ready-high-restarts", "node", "Running", True, 9001, NOW, NOW)
READY_NOW_CREATED_THEN = _pod("ready-now-created-then", "node", "Running", True, 0, NOW, NOW - MONTH)
LOW_COST = _pod("low-cost", "node", "Running", True, 0, NOW, NOW - MONTH, {DELETION_COST_ANNOTATION: "10"})
HIGH_COST = _pod("high-cost", "node", "Running", True, 0, NOW, NOW - MONTH, {DELETION_COST_ANNOTATION: "100"})
UNSCHEDULED_5H = _pod("unscheduled-5-hours", "", "Pending", False, 0, NOW - 5 * HOUR, NOW - 5 * HOUR)
UNSCHEDULED_8H = _pod("unscheduled-8-hours", "", "Pending", False, 0, NOW - 8 * HOUR, NOW - 8 * HOUR)
READY_2H = _pod("ready-2-hours", "", "Running", True, 0, NOW - 2 * HOUR, NOW - MONTH)
READY_5H = _pod("ready-5-hours", "", "Running", True, 0, NOW - 5 * HOUR, NOW - MONTH)
READY_8H = _pod("ready-8-hours", "", "Running", True, 0, NOW - 8 * HOUR, NOW - MONTH)


@pytest.mark.parametrize(
    ("p1", "p2"),
    [
        (UNSCHEDULED, UNSCHEDULED),
        (SCHEDULED_PENDING, SCHEDULED_PENDING),
        (UNKNOWN_PHASE, UNKNOWN_PHASE),
        (RUNNING_NOT_READY, RUNNING_NOT_READY),
        (READY_NOW_CREATED_THEN, READY_NOW_CREATED_THEN),
        (READY_NOW, READY_NOW),
        (READY_THEN, READY_THEN),
        (READY_HIGH_RESTARTS, READY_HIGH_RESTARTS),
        (UNSCHEDULED_5H, UNSCHEDULED_8H),  # same power-of-two age bucket, no UIDs: equal
        (READY_5H, READY_8H),
    ],
)
def test_active_pods_with_ranks_equal(p1: Obj, p2: Obj) -> None:
    assert not active_pods_with_ranks_less(p1, 1, p2, 1, NOW)
    assert not active_pods_with_ranks_less(p2, 1, p1, 1, NOW)


@pytest.mark.parametrize(
    ("lesser", "lesser_rank", "greater", "greater_rank"),
    [
        (UNSCHEDULED, 1, SCHEDULED_PENDING, 2),  # unassigned < assigned, whatever the rank
        (UNSCHEDULED, 2, SCHEDULED_PENDING, 1),
        (SCHEDULED_PENDING, 1, UNKNOWN_PHASE, 2),  # Pending < Unknown < Running
        (UNKNOWN_PHASE, 1, RUNNING_NOT_READY, 2),
        (RUNNING_NOT_READY, 1, READY_NO_TRANSITION, 1),  # not ready < ready
        (READY_NO_TRANSITION, 1, READY_NOW, 1),  # no ready time < ready for less time
        (READY_NOW, 2, READY_NO_TRANSITION, 1),  # more doubled up < less doubled up
        (READY_NOW, 1, READY_THEN, 1),  # ready for less time < more
        (READY_NOW, 2, READY_THEN, 1),
        (READY_HIGH_RESTARTS, 1, READY_NOW, 1),  # more restarts < fewer
        (READY_NOW, 2, READY_HIGH_RESTARTS, 1),
        (READY_NOW, 1, READY_NOW_CREATED_THEN, 1),  # newer < older
        (READY_NOW_CREATED_THEN, 2, READY_NOW, 1),
        (LOW_COST, 2, HIGH_COST, 1),  # lower deletion cost first, before the rank
        (READY_2H, 1, READY_5H, 1),  # different power-of-two buckets
    ],
)
def test_active_pods_with_ranks_less(lesser: Obj, lesser_rank: int, greater: Obj, greater_rank: int) -> None:
    assert active_pods_with_ranks_less(lesser, lesser_rank, greater, greater_rank, NOW)
    assert not active_pods_with_ranks_less(greater, greater_rank, lesser, lesser_rank, NOW)


def test_sort_active_pods_with_ranks_orders_a_shuffled_list() -> None:
    ordered = [UNSCHEDULED, SCHEDULED_PENDING, UNKNOWN_PHASE, RUNNING_NOT_READY, READY_NO_TRANSITION, READY_NOW,
               READY_NOW_CREATED_THEN, READY_THEN]  # fmt: skip
    for seed in range(5):
        shuffled = list(ordered)
        random.Random(seed).shuffle(shuffled)
        assert sort_active_pods_with_ranks(shuffled, [1] * len(shuffled), NOW) == ordered


def test_sidecar_restarts_break_ties_after_regular_restarts() -> None:
    def with_sidecar(name: str, restarts: int) -> Obj:
        pod = _pod(name, "node", "Running", True, 0, NOW, NOW)
        pod["spec"]["initContainers"] = [{"name": "side", "restartPolicy": "Always"}, {"name": "init"}]
        pod["status"]["initContainerStatuses"] = [
            {"name": "side", "restartCount": restarts},
            {"name": "init", "restartCount": 50},  # a plain init container never counts
        ]
        return pod

    assert active_pods_with_ranks_less(with_sidecar("a", 3), 0, with_sidecar("b", 1), 0, NOW)
    assert not active_pods_with_ranks_less(with_sidecar("a", 1), 0, with_sidecar("b", 1), 0, NOW)


def _ranked(name: str, node: str, *, ready: bool = True) -> Obj:
    return _pod(name, node, "Running", ready, 0, NOW - HOUR, NOW - MONTH)


@pytest.mark.parametrize(
    ("active", "related", "diff", "want"),
    [
        # Deleting all of them (or more): no sorting at all, the input order is kept.
        (["n1", "n2"], [], 2, ["n1", "n2"]),
        (["n1", "n2"], [], 5, ["n1", "n2"]),
        # The pod sharing its node with more related pods goes first (p2 on node-a with 2 related pods).
        (["p1:b", "p2:a"], ["r1:a", "r2:a", "r3:b"], 1, ["p2"]),
        # Related pods that are not active do not count.
        (["p1:b", "p2:a"], ["r1:a", "r2:a!", "r3:b", "r4:b"], 1, ["p1"]),
        # Readiness beats colocation.
        (["p1:b", "p2:a", "p3:b?"], ["r1:a", "r2:a"], 2, ["p3", "p2"]),
    ],
)
def test_get_pods_to_delete(active: list[str], related: list[str], diff: int, want: list[str]) -> None:
    def build(spec: str) -> Obj:
        name, _, node = spec.partition(":")
        terminal = node.endswith("!")
        not_ready = node.endswith("?")
        pod = _ranked(name, node.rstrip("!?") or "node", ready=not not_ready)
        if terminal:
            pod["status"]["phase"] = "Succeeded"
        return pod

    active_pods = [build(s) for s in active]
    related_pods = active_pods + [build(s) for s in related]
    got = get_pods_to_delete(active_pods, related_pods, diff, NOW)
    assert [p["metadata"]["name"] for p in got] == want


# --- predicates, expectations, slow start ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "deleting", "want"),
    [("Running", False, True), ("Pending", False, True), ("Succeeded", False, False), ("Failed", False, False),
     ("Running", True, False)],
)  # fmt: skip
def test_is_pod_active(phase: str, deleting: bool, want: bool) -> None:
    pod = _pod("p", "", phase, False, 0, None, None)
    if deleting:
        pod["metadata"]["deletionTimestamp"] = apimeta.format_time(NOW)
    assert is_pod_active(pod) is want


@pytest.mark.parametrize(
    ("ready", "ready_for", "min_ready", "want"),
    [
        (True, 0.0, 0, True),  # minReadySeconds 0: ready is available
        (False, 100.0, 0, False),
        (True, 10.0, 10, False),  # strictly more than minReadySeconds
        (True, 11.0, 10, True),
        (True, None, 10, False),  # no transition time: never available with minReadySeconds
    ],
)
def test_is_pod_available(ready: bool, ready_for: float | None, min_ready: int, want: bool) -> None:
    since = None if ready_for is None else NOW - ready_for
    pod = _pod("p", "node", "Running", ready, 0, since, NOW - MONTH)
    assert is_pod_available(pod, min_ready, NOW) is want


def test_find_min_next_pod_availability_check() -> None:
    clock = FakeClock(NOW)
    pods = [
        _pod("unready", "n", "Running", False, 0, NOW, NOW),
        _pod("ready-2s", "n", "Running", True, 0, NOW - 2, NOW),
        _pod("ready-4s", "n", "Running", True, 0, NOW - 4, NOW),
        _pod("available", "n", "Running", True, 0, NOW - 60, NOW),
    ]
    assert find_min_next_pod_availability_check(pods, 10, NOW, clock) == 6.0
    assert find_min_next_pod_availability_check(pods[:1] + pods[3:], 10, NOW, clock) is None


async def test_find_min_next_pod_availability_check_measures_from_the_clock() -> None:
    clock = FakeClock(NOW)
    pods = [_pod("ready-4s", "n", "Running", True, 0, NOW - 4, NOW)]
    await clock.advance(2)  # the status write took 2 s: wait 4 more, not 6
    assert find_min_next_pod_availability_check(pods, 10, NOW, clock) == 4.0
    await clock.advance(10)  # already available by now: look at once
    assert find_min_next_pod_availability_check(pods, 10, NOW, clock) == 0.0


async def test_expectations_are_satisfied_when_observed_or_expired() -> None:
    clock = FakeClock(NOW)
    exp = ControllerExpectations(clock)
    assert exp.satisfied_expectations("ns/rs")  # never set: sync
    exp.expect_creations("ns/rs", 2)
    assert not exp.satisfied_expectations("ns/rs")
    exp.creation_observed("ns/rs")
    assert not exp.satisfied_expectations("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.satisfied_expectations("ns/rs")
    exp.expect_deletions("ns/rs", 1)
    await clock.advance(EXPECTATIONS_TIMEOUT)
    assert not exp.satisfied_expectations("ns/rs")  # exactly the timeout is not yet expired
    await clock.advance(1)
    assert exp.satisfied_expectations("ns/rs")
    exp.delete_expectations("ns/rs")
    assert exp.get_expectations("ns/rs") is None


def test_uid_tracking_expectations_count_each_deletion_once() -> None:
    exp = UIDTrackingControllerExpectations(FakeClock(NOW))
    exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    exp.deletion_observed("ns/rs", "ns/a")  # the graceful-delete update ...
    exp.deletion_observed("ns/rs", "ns/a")  # ... and the final delete: counted once
    exp.deletion_observed("ns/rs", "ns/other")  # a pod we did not delete never counts
    assert not exp.satisfied_expectations("ns/rs")
    exp.deletion_observed("ns/rs", "ns/b")
    assert exp.satisfied_expectations("ns/rs")
    assert exp.get_uids("ns/rs") == set()


@pytest.mark.parametrize(
    ("count", "fail_from", "want_calls", "want_successes"),
    [
        (10, None, 10, 10),  # batches 1, 2, 4, 3
        (10, 0, 1, 0),  # the first call fails: nothing more is tried
        (10, 3, 7, 3),  # calls 4..7 (the batch of 4) fail: the batch finishes, nothing after it
        (0, None, 0, 0),
    ],
)
async def test_slow_start_batch(count: int, fail_from: int | None, want_calls: int, want_successes: int) -> None:
    calls = 0

    async def fn() -> None:
        nonlocal calls
        calls += 1
        if fail_from is not None and calls > fail_from:
            raise RuntimeError("quota exceeded")

    successes, error = await slow_start_batch(count, 1, fn)
    assert (calls, successes) == (want_calls, want_successes)
    assert (error is None) is (fail_from is None or count == 0)


def test_pod_from_template_and_prefix() -> None:
    rs = {"metadata": {"name": "web", "namespace": NS, "uid": "u1"}}
    template = {
        "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}, "finalizers": ["f"]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": True,
           "blockOwnerDeletion": True}  # fmt: skip
    pod = get_pod_from_template(template, rs, ref)
    assert pod["metadata"] == {
        "generateName": "web-",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "finalizers": ["f"],
        "ownerReferences": [ref],
    }
    assert pod["spec"] == template["spec"]
    assert pod["spec"] is not template["spec"]
    assert get_pods_prefix("x" * 253) == "x" * 253 + "-"  # generateName validation masks the trailing dash
    assert get_pods_prefix("x" * 254) == "x" * 254  # "<name>-" would be too long


def test_calculate_status_counts_and_failure_condition() -> None:
    rs = {
        "metadata": {"name": "web", "namespace": NS, "generation": 2},
        "spec": {"replicas": 3, "minReadySeconds": 5, "template": {"metadata": {"labels": {"app": "web", "v": "1"}}}},
        "status": {"replicas": 1},
    }
    pods = [
        _pod("a", "n", "Running", True, 0, NOW - 60, NOW),
        _pod("b", "n", "Running", True, 0, NOW - 1, NOW),
    ]
    pods[0]["metadata"]["labels"] = {"app": "web", "v": "1"}
    pods[1]["metadata"]["labels"] = {"app": "web"}
    status = calculate_status(rs, pods, [], RuntimeError("boom"), NOW)
    assert {k: status[k] for k in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")} == {
        "replicas": 2, "fullyLabeledReplicas": 1, "readyReplicas": 2, "availableReplicas": 1,
    }  # fmt: skip
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "ReplicaFailure", "True", "FailedCreate", "boom",
    )  # fmt: skip
    again = calculate_status({**rs, "status": status}, pods, [], RuntimeError("other"), NOW + 10)
    assert again["conditions"] == [cond]  # an existing failure condition is kept as it was
    assert "conditions" not in calculate_status({**rs, "status": status}, pods, [], None, NOW)


# --- end to end --------------------------------------------------------------------------------------------


class FlakyClient(LocalClient):
    """The in-process client, with pod creation refusable (quota-like) and counted."""

    fail_pod_creates: bool = False
    pod_creates: int = 0

    async def create(self, resource: Any, obj: Obj, **kwargs: Any) -> Obj:
        if resource.plural == "pods" and not kwargs.get("subresource"):
            self.pod_creates += 1
            if self.fail_pod_creates:
                raise ForbiddenError(
                    {"code": 403, "reason": "Forbidden", "message": 'pods "web-x" is forbidden: exceeded quota'}
                )
        return await super().create(resource, obj, **kwargs)


@dataclass
class Env:
    """The API server and clock outlive the controllers: tests start, stop and restart ReplicaSet controllers."""

    client: FlakyClient
    clock: FakeClock
    running: list[harness.Env[ReplicaSetController]] = field(default_factory=list)
    _stack: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)

    def res(self, name: str) -> Any:
        return self.client.resource(name)

    async def start(self, *, run: bool = True) -> ReplicaSetController:
        """A new controller with its own informers (``run=False``: synced, but no workers; drive ``sync``)."""
        started = harness.running(ReplicaSetController, client=self.client, clock=self.clock, run=run)
        self.running.append(await self._stack.enter_async_context(started))
        return self.running[-1].controller

    async def stop(self) -> None:
        """Stop every controller started so far, the newest first."""
        await self._stack.aclose()
        self.running.clear()

    async def pods(self, *, active_only: bool = True) -> list[Obj]:
        items: list[Obj] = (await self.client.list(self.res("pods"), namespace=NS))["items"]
        return [p for p in items if is_pod_active(p)] if active_only else items

    async def rs(self, name: str = "web") -> Obj:
        return await self.client.get(self.res("replicasets"), name, namespace=NS)

    async def events(self, reason: str) -> list[str]:
        await asyncio.gather(*(r.ctx.recorder("replicaset-controller").flush() for r in self.running))
        items = (await self.client.list(self.res("events"), namespace=NS))["items"]
        return sorted(e["message"] for e in items if e["reason"] == reason)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = FakeClock(NOW)
    client = await FlakyClient.in_memory(now=clock.now)
    assert isinstance(client, FlakyClient)
    environment = Env(client, clock)
    try:
        yield environment
    finally:
        await environment.stop()
        await client.close()


async def make_rs(env: Env, replicas: int, name: str = "web", **spec: Any) -> Obj:
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            **spec,
        },
    }
    return await env.client.create(env.res("replicasets"), body, namespace=NS)


async def wait_status(env: Env, **want: int) -> Obj:
    found: Obj = {}

    async def check() -> bool:
        nonlocal found
        found = await env.rs()
        status = found.get("status") or {}
        return all(int(status.get(k) or 0) == v for k, v in want.items()) and status.get("observedGeneration") == found[
            "metadata"
        ].get("generation")

    try:
        await eventually(check)
    except AssertionError:
        raise AssertionError(f"status {found.get('status')} never reached {want}") from None
    return found


async def wait_pod_count(env: Env, n: int) -> list[Obj]:
    async def check() -> bool:
        return len(await env.pods()) == n

    await eventually(check)
    return await env.pods()


async def set_pod_status(env: Env, name: str, *, ready: bool, since: float | None = None) -> None:
    status = ready_status(apimeta.format_time(env.clock.now() if since is None else since), ready=ready)
    await env.client.patch(env.res("pods"), name, {"status": status}, namespace=NS, subresource="status")


async def bind(env: Env, name: str, node: str) -> None:
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node},
    }
    await env.client.create(env.res("pods"), binding, namespace=NS, subresource="binding", name=name)


async def test_creates_pods_up_to_replicas_with_owner_and_events(env: Env) -> None:
    await env.start()
    rs = await make_rs(env, 3)
    pods = await wait_pod_count(env, 3)
    for pod in pods:
        assert pod["metadata"]["name"].startswith("web-")
        assert pod["metadata"]["labels"] == LABELS
        assert pod["metadata"]["ownerReferences"] == [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
        ]  # fmt: skip
    status = (await wait_status(env, replicas=3, fullyLabeledReplicas=3, readyReplicas=0))["status"]
    assert status["observedGeneration"] == 1
    assert "conditions" not in status
    assert await env.events("SuccessfulCreate") == sorted(f"Created pod: {p['metadata']['name']}" for p in pods)
    await settle()
    assert env.client.pod_creates == 3


async def test_scale_through_the_scale_subresource_and_the_spec(env: Env) -> None:
    await env.start()
    await make_rs(env, 2)
    await wait_pod_count(env, 2)
    scale = await env.client.get(env.res("replicasets"), "web", namespace=NS, subresource="scale")
    scale["spec"]["replicas"] = 5  # what kubectl scale does
    await env.client.update(env.res("replicasets"), scale, namespace=NS, subresource="scale")
    await wait_pod_count(env, 5)
    await wait_status(env, replicas=5)

    rs = await env.rs()
    rs["spec"]["replicas"] = 1
    await env.client.update(env.res("replicasets"), rs, namespace=NS)
    [survivor] = await wait_pod_count(env, 1)
    final = await wait_status(env, replicas=1)
    assert final["status"]["observedGeneration"] == 3
    deleted = await env.events("SuccessfulDelete")
    assert len(deleted) == 4
    assert f"Deleted pod: {survivor['metadata']['name']}" not in deleted
    assert env.client.pod_creates == 5


async def test_scale_down_deletes_in_upstream_order(env: Env) -> None:
    await env.start()
    await make_rs(env, 4)
    pods = sorted(p["metadata"]["name"] for p in await wait_pod_count(env, 4))
    unassigned, pending, running, ready = pods
    for name in (pending, running, ready):
        await bind(env, name, "node-1")
    await set_pod_status(env, running, ready=False)
    await set_pod_status(env, ready, ready=True)
    await wait_status(env, replicas=4, readyReplicas=1)

    for keep, gone in ((3, unassigned), (2, pending), (1, running)):
        await env.client.patch(env.res("replicasets"), "web", {"spec": {"replicas": keep}}, namespace=NS)
        await wait_pod_count(env, keep)
        names = {p["metadata"]["name"] for p in await env.pods()}
        assert gone not in names, f"expected {gone} to go when scaling to {keep}"
    # Bound pods are deleted gracefully: they wait for a kubelet and count as terminating, not as replicas.
    status = (await wait_status(env, replicas=1, readyReplicas=1))["status"]
    assert status["terminatingReplicas"] == 2
    assert {p["metadata"]["name"] for p in await env.pods()} == {ready}


async def test_replaces_deleted_pods(env: Env) -> None:
    await env.start()
    await make_rs(env, 2)
    first = await wait_pod_count(env, 2)
    await env.client.delete(env.res("pods"), first[0]["metadata"]["name"], namespace=NS)
    await eventually(lambda: _names_differ(env, first))
    assert len(await wait_pod_count(env, 2)) == 2


async def _names_differ(env: Env, before: list[Obj]) -> bool:
    now = {p["metadata"]["name"] for p in await env.pods()}
    return len(now) == 2 and now != {p["metadata"]["name"] for p in before}


async def test_adopts_matching_orphans_and_releases_pods_that_stop_matching(env: Env) -> None:
    pod_body = {
        "metadata": {"name": "orphan", "labels": dict(LABELS)},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    await env.client.create(env.res("pods"), pod_body, namespace=NS)
    other = {"metadata": {"name": "stranger", "labels": {"app": "other"}}, "spec": pod_body["spec"]}
    await env.client.create(env.res("pods"), other, namespace=NS)
    await env.start()
    rs = await make_rs(env, 2)
    await wait_pod_count(env, 3)  # the orphan plus one new pod (the stranger is the third active pod)

    async def owner_of(name: str) -> list[Any]:
        pod = await env.client.get(env.res("pods"), name, namespace=NS)
        return [r["uid"] for r in pod["metadata"].get("ownerReferences") or []]

    assert await owner_of("orphan") == [rs["metadata"]["uid"]]
    assert await owner_of("stranger") == []
    assert env.client.pod_creates == 3  # the two test pods and a single new replica
    await wait_status(env, replicas=2)

    # Relabel the adopted pod: it is released and replaced.
    await env.client.patch(env.res("pods"), "orphan", {"metadata": {"labels": {"app": "retired"}}}, namespace=NS)

    async def released() -> bool:
        return await owner_of("orphan") == []

    await eventually(released)
    await wait_pod_count(env, 4)
    await wait_status(env, replicas=2)

    # A pod owned by another controller is never adopted, even if it matches.
    foreign = {
        "metadata": {"name": "foreign", "labels": dict(LABELS),
                     "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "rc",
                                          "uid": "other-uid", "controller": True}]},
        "spec": pod_body["spec"],
    }  # fmt: skip
    await env.client.create(env.res("pods"), foreign, namespace=NS)
    await settle()
    await wait_status(env, replicas=2)
    assert await owner_of("foreign") == ["other-uid"]


def _pause(informer: SharedInformer) -> Callable[[], None]:
    """Hold back the informer's watch events (a lagging informer); the returned function releases them."""
    held: list[tuple[str, Obj]] = []
    original = informer.apply
    informer.apply = lambda event_type, obj: held.append((event_type, obj))  # type: ignore[method-assign]

    def resume() -> None:
        informer.apply = original  # type: ignore[method-assign]
        for event_type, obj in held:
            original(event_type, obj)

    return resume


async def test_expectations_prevent_over_creation_while_the_informer_lags(env: Env) -> None:
    controller = await env.start(run=False)  # sync by hand: every sync below sees the same stale cache
    rs = await make_rs(env, 3)
    key = f"{NS}/web"
    await eventually(lambda: _cached(controller, rs))
    resume = _pause(controller.pod_informer)

    await controller.sync(key)
    assert len(await env.pods()) == 3
    for _ in range(3):  # the informer has seen none of them: without expectations each sync would create 3 more
        await controller.sync(key)
    assert len(await env.pods()) == 3
    assert env.client.pod_creates == 3
    exp = controller.expectations.get_expectations(key)
    assert exp is not None
    assert exp.add == 3

    resume()
    await settle()
    assert controller.expectations.satisfied_expectations(key)
    await controller.sync(key)
    assert env.client.pod_creates == 3
    assert (await env.rs())["status"]["replicas"] == 3

    # Scale down while the informer lags: each surplus pod is deleted once.
    await env.client.patch(env.res("replicasets"), "web", {"spec": {"replicas": 1}}, namespace=NS)
    await eventually(lambda: _cached_replicas(controller, 1))
    resume = _pause(controller.pod_informer)
    await controller.sync(key)
    await controller.sync(key)
    assert len(await env.pods()) == 1
    assert len(await env.events("SuccessfulDelete")) == 2
    resume()
    await settle()
    assert controller.expectations.satisfied_expectations(key)


async def test_expectations_expire_after_five_minutes(env: Env) -> None:
    controller = await env.start(run=False)
    rs = await make_rs(env, 2)
    await eventually(lambda: _cached(controller, rs))
    _pause(controller.pod_informer)  # the creations are never observed (a dropped watch event)
    await controller.sync(f"{NS}/web")
    await env.clock.advance(EXPECTATIONS_TIMEOUT + 1)
    await controller.sync(f"{NS}/web")  # upstream: expired expectations no longer block, so it acts again
    assert env.client.pod_creates == 4


async def _cached(controller: ReplicaSetController, rs: Obj) -> bool:
    return controller.rs_lister.get(NS, rs["metadata"]["name"]) is not None


async def _cached_replicas(controller: ReplicaSetController, n: int) -> bool:
    cached = controller.rs_lister.get(NS, "web")
    return cached is not None and cached["spec"]["replicas"] == n


async def test_status_counts_ready_and_available_pods_with_min_ready_seconds(env: Env) -> None:
    await env.start()
    await make_rs(env, 3, minReadySeconds=10)
    pods = await wait_pod_count(env, 3)
    for pod in pods[:2]:
        await set_pod_status(env, pod["metadata"]["name"], ready=True)
    await wait_status(env, replicas=3, readyReplicas=2, availableReplicas=0)
    await env.clock.advance(5)
    await set_pod_status(env, pods[2]["metadata"]["name"], ready=True)
    await wait_status(env, readyReplicas=3, availableReplicas=0)
    # No pod event arrives when a pod becomes available: the controller must come back on its own.
    await env.clock.advance(6)  # the first two have been ready for 11 s
    await wait_status(env, readyReplicas=3, availableReplicas=2)
    await env.clock.advance(5)
    await wait_status(env, readyReplicas=3, availableReplicas=3)


async def test_replica_failure_condition_and_failed_create_events(env: Env) -> None:
    env.client.fail_pod_creates = True
    await env.start()
    await make_rs(env, 3)

    async def failing() -> bool:
        conds = (await env.rs()).get("status", {}).get("conditions") or []
        return any(c["type"] == "ReplicaFailure" for c in conds)

    await eventually(failing)
    [cond] = (await env.rs())["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "FailedCreate", 'pods "web-x" is forbidden: exceeded quota',
    )  # fmt: skip
    await settle()
    # Slow start: each sync tries one create, not three. The first sync's status write queues the ReplicaSet once
    # more (as upstream); that sync fails the same way and writes nothing, so it stops there until the backoff.
    assert env.client.pod_creates == 2
    assert await env.events("FailedCreate") == ['Error creating: pods "web-x" is forbidden: exceeded quota']

    env.client.fail_pod_creates = False
    await env.clock.advance(1)  # past the retry backoff
    await wait_pod_count(env, 3)
    status = (await wait_status(env, replicas=3))["status"]
    assert "conditions" not in status


async def test_restart_midway_changes_nothing_that_was_correct(env: Env) -> None:
    first = await env.start(run=False)
    rs = await make_rs(env, 3)
    await eventually(lambda: _cached(first, rs))
    _pause(first.pod_informer)
    await first.sync(f"{NS}/web")  # created 3 pods, then "crashed" before observing them or writing status
    await env.stop()
    names = {p["metadata"]["name"] for p in await env.pods()}
    assert len(names) == 3

    second = await env.start()  # no expectations: it must trust what it lists, and create nothing
    stable = await wait_status(env, replicas=3)
    await settle()
    assert {p["metadata"]["name"] for p in await env.pods()} == names
    assert env.client.pod_creates == 3
    assert second.expectations.satisfied_expectations(f"{NS}/web")

    # A third controller changes nothing at all, not even the status.
    await env.stop()
    await env.start()
    await settle()
    await env.clock.advance(1)
    await settle()
    after = await env.rs()
    assert after["metadata"]["resourceVersion"] == stable["metadata"]["resourceVersion"]
    assert {p["metadata"]["name"] for p in await env.pods()} == names


async def test_deleted_replicaset_is_forgotten(env: Env) -> None:
    controller = await env.start()
    await make_rs(env, 1)
    await wait_pod_count(env, 1)
    await env.client.delete(env.res("replicasets"), "web", namespace=NS)

    async def forgotten() -> bool:
        gone = controller.rs_lister.get(NS, "web") is None
        return gone and controller.expectations.get_expectations(f"{NS}/web") is None

    await eventually(forgotten)
