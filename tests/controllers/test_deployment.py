"""The deployment controller: pure helpers table-driven after upstream's util tests, then end to end in process.

In the end-to-end tests the test plays the ReplicaSet controller: :meth:`Env.catch_up` sets every ReplicaSet's
status (replicas, ready, available, observedGeneration) to what its spec asks, optionally leaving the new
ReplicaSet's pods unavailable, so each step of a rollout can be checked against maxSurge/maxUnavailable.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import name_of, uid_of
from kubeplane.client.errors import ConflictError
from kubeplane.client.interface import Obj
from kubeplane.controllers import deployment_util as du
from kubeplane.controllers.base import Controller
from kubeplane.controllers.deployment import DeploymentController
from tests.controllers import harness
from tests.controllers.harness import ready_status

NS = "default"

# --- pure helpers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),  # surge rounds up, unavailable rounds down
        ("25%", "25%", 1, (1, 0)),
        ("0%", "25%", 1, (0, 1)),  # both 0 -> unavailable 1
        (0, 0, 5, (0, 1)),
        (2, 1, 5, (2, 1)),
        ("50%", "50%", 3, (2, 1)),
        (None, None, 3, (0, 1)),
    ],
)
def test_resolve_fenceposts(surge: Any, unavailable: Any, desired: int, expected: tuple[int, int]) -> None:
    assert du.resolve_fenceposts(surge, unavailable, desired) == expected


def _rs(name: str, replicas: int, *, created: str = "2026-01-01T00:00:00Z", **annotations: str) -> Obj:
    return {
        "metadata": {"name": name, "uid": name, "creationTimestamp": created, "annotations": dict(annotations)},
        "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": name}}}},
        "status": {},
    }


def _dep(replicas: int, surge: Any = 1, unavailable: Any = 0, *, status_replicas: int = 0) -> Obj:
    return {
        "metadata": {"name": "d", "generation": 1},
        "spec": {
            "replicas": replicas,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
        },
        "status": {"replicas": status_replicas},
    }


@pytest.mark.parametrize(
    ("deployment", "new", "others", "expected"),
    [
        # upstream TestNewRSNewReplicas
        (_dep(1, 1), 0, [0], 1),  # can surge by one
        (_dep(10, "25%"), 0, [10], 3),
        (_dep(10, "25%"), 3, [10], 3),  # already at replicas+surge
        (_dep(10, "25%"), 0, [5, 5], 3),
        (_dep(3, 0, 1), 0, [3], 0),
    ],
)
def test_new_rs_new_replicas(deployment: Obj, new: int, others: list[int], expected: int) -> None:
    new_rs = _rs("new", new)
    all_rss = [new_rs, *(_rs(f"old{i}", n) for i, n in enumerate(others))]
    assert du.new_rs_new_replicas(deployment, all_rss, new_rs) == expected


@pytest.mark.parametrize(
    ("deployment", "rs_size", "max_annotation", "to_add", "added", "expected"),
    [
        # upstream TestGetReplicaSetProportion-style cases
        (_dep(12, 0, 1), 5, "10", 2, 0, 1),  # 5*12/10 = 6 -> +1
        (_dep(12, 0, 1), 5, "10", 2, 2, 0),  # nothing left to add
        (_dep(8, 0, 1), 5, "10", -2, 0, -1),  # 5*8/10 = 4 -> -1
        (_dep(8, 0, 1), 5, "10", -2, -2, 0),
        (_dep(0, 0, 1), 5, "10", -10, 0, -5),  # to zero: the whole size
        (_dep(20, 0, 1), 5, "10", 3, 0, 3),  # capped by what is left
    ],
)
def test_get_proportion(
    deployment: Obj, rs_size: int, max_annotation: str, to_add: int, added: int, expected: int
) -> None:
    rs = _rs("a", rs_size, **{du.MAX_REPLICAS_ANNOTATION: max_annotation})
    assert du.get_proportion(rs, deployment, to_add, added) == expected


def test_find_active_or_latest() -> None:
    older = _rs("older", 0, created="2026-01-01T00:00:00Z")
    newer = _rs("newer", 0, created="2026-01-02T00:00:00Z")
    new = _rs("new", 0, created="2026-01-03T00:00:00Z")
    assert du.find_active_or_latest(None, [older, newer]) is newer  # none active: the newest old one
    assert du.find_active_or_latest(new, [older, newer]) is new
    active = _rs("active", 2)
    assert du.find_active_or_latest(new, [older, active]) is active
    assert du.find_active_or_latest(_rs("n2", 1), [active]) is None  # two active: proportional


def test_sorting_orders() -> None:
    a = _rs("a", 3, created="2026-01-01T00:00:00Z")
    b = _rs("b", 3, created="2026-01-02T00:00:00Z")
    c = _rs("c", 5, created="2026-01-03T00:00:00Z")
    assert [name_of(r) for r in du.by_size_older([b, c, a])] == ["c", "a", "b"]
    assert [name_of(r) for r in du.by_size_newer([a, c, b])] == ["c", "b", "a"]
    r1 = _rs("x", 0, **{du.REVISION_ANNOTATION: "10"})
    r2 = _rs("y", 0, **{du.REVISION_ANNOTATION: "9"})
    assert [name_of(r) for r in du.by_revision([r1, r2])] == ["y", "x"]  # numerically, not as strings


def test_set_new_replica_set_annotations_rollback_history() -> None:
    deployment = _dep(3)
    deployment["metadata"]["annotations"] = {"team": "a", du.REVISION_ANNOTATION: "7"}
    rs = _rs("rs", 0, **{du.REVISION_ANNOTATION: "2"})
    assert du.set_new_replica_set_annotations(deployment, rs, "5", True)
    annotations = rs["metadata"]["annotations"]
    assert annotations[du.REVISION_ANNOTATION] == "5"
    assert annotations[du.REVISION_HISTORY_ANNOTATION] == "2"
    assert annotations["team"] == "a"  # copied from the deployment; the revision is not
    assert du.set_new_replica_set_annotations(deployment, rs, "8", True)
    assert annotations[du.REVISION_HISTORY_ANNOTATION] == "2,5"
    assert not du.set_new_replica_set_annotations(deployment, rs, "8", True)  # idempotent
    # the revision never goes down
    assert not du.set_new_replica_set_annotations(deployment, rs, "3", True)
    assert annotations[du.REVISION_ANNOTATION] == "8"


def test_equal_ignore_hash() -> None:
    t1: Obj = {"metadata": {"labels": {"app": "x", "pod-template-hash": "abc"}}, "spec": {"securityContext": {}}}
    t2 = {"metadata": {"labels": {"app": "x"}}, "spec": {}}
    assert du.equal_ignore_hash(t1, t2)
    t3 = {"metadata": {"labels": {"app": "y"}}, "spec": {}}
    assert not du.equal_ignore_hash(t1, t3)
    assert t1["metadata"]["labels"]["pod-template-hash"] == "abc"  # arguments untouched


def test_set_deployment_condition_keeps_transition_time() -> None:
    status: Obj = {"conditions": []}
    du.set_deployment_condition(status, du.new_deployment_condition("Progressing", "True", "A", "m", 100.0))
    first = status["conditions"][0]["lastTransitionTime"]
    du.set_deployment_condition(status, du.new_deployment_condition("Progressing", "True", "A", "m2", 200.0))
    assert status["conditions"][0]["message"] == "m"  # same status and reason: no change
    du.set_deployment_condition(status, du.new_deployment_condition("Progressing", "True", "B", "m3", 300.0))
    assert status["conditions"][0]["reason"] == "B"
    assert status["conditions"][0]["lastTransitionTime"] == first


# --- end to end ------------------------------------------------------------------------------------------


@dataclass
class Env(harness.Env[DeploymentController]):
    @property
    def deployments(self) -> ResourceInfo:
        return self.res("deployments")

    @property
    def replicasets(self) -> ResourceInfo:
        return self.res("replicasets")

    @property
    def events(self) -> ResourceInfo:
        return self.res("events")

    async def settle(self, rounds: int = 4) -> None:
        """Let informers and workers run until the queue has been idle for a few polls (advancing the fake clock
        a little so rate-limited retries after conflicts fire)."""
        idle = 0
        for _ in range(400):
            await asyncio.sleep(0.005)
            queue = self.controller.queue
            if len(queue) == 0 and not queue._processing:
                idle += 1
                if idle >= rounds:
                    return
            else:
                idle = 0
            await self.clock.advance(0.01)
        raise AssertionError("controller did not settle")

    async def wait_for(self, predicate: Callable[[], Awaitable[bool]], what: str) -> None:
        await self.advance_until(predicate, what, step=0.01)

    async def deployment(self, name: str = "web") -> Obj:
        return await self.client.get(self.deployments, name, namespace=NS)

    async def rss(self) -> list[Obj]:
        items: list[Obj] = (await self.client.list(self.replicasets, namespace=NS))["items"]
        return du.by_creation_timestamp(items)

    async def new_rs(self, name: str = "web") -> Obj | None:
        d = await self.deployment(name)
        return du.find_new_replica_set(d, await self.rss())

    async def catch_up(self, *, available_new: int | None = None, name: str = "web") -> None:
        """Play the ReplicaSet controller: status follows spec (the new RS's available count capped)."""
        new = await self.new_rs(name)
        for rs in await self.rss():
            replicas = du.spec_replicas(rs)
            available = replicas
            if new is not None and uid_of(rs) == uid_of(new) and available_new is not None:
                available = min(replicas, available_new)
            status = {
                "replicas": replicas,
                "readyReplicas": available,
                "availableReplicas": available,
                "fullyLabeledReplicas": replicas,
                "observedGeneration": rs["metadata"].get("generation", 1),
            }
            if rs.get("status") == status:
                continue
            rs["status"] = status
            # on a conflict the controller changed it meanwhile; the next catch_up gets it
            with contextlib.suppress(ConflictError):
                await self.client.update(self.replicasets, rs, namespace=NS, subresource="status")
        await self.settle()

    async def patch(self, patch: Obj, name: str = "web") -> None:
        await self.client.patch(self.deployments, name, patch, namespace=NS)
        await self.settle()

    async def event_messages(self) -> list[str]:
        await self.controller.recorder.flush()
        items = (await self.client.list(self.events, namespace=NS))["items"]
        items.sort(key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"]))
        return [e["message"] for e in items if e.get("reason") == "ScalingReplicaSet"]


def deployment_obj(
    replicas: int = 3, *, image: str = "nginx:1", strategy: Obj | None = None, name: str = "web", **spec: Any
) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
            **({"strategy": strategy} if strategy is not None else {}),
            **spec,
        },
    }


def running(*also: type[Controller], **kw: Any) -> AbstractAsyncContextManager[Env]:
    """The deployment controller (and ``also``); the API server keeps wall-clock timestamps here."""
    return harness.running(DeploymentController, *also, env_cls=Env, server_clock=False, **kw)


def condition(d: Obj, cond_type: str) -> Obj | None:
    return du.get_deployment_condition(d.get("status") or {}, cond_type)


async def test_create_makes_new_replica_set_and_reports_complete() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(3), namespace=NS)
        await env.settle()
        rss = await env.rss()
        assert len(rss) == 1
        rs = rss[0]
        pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{pod_hash}"
        assert rs["spec"]["replicas"] == 3
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
        assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == pod_hash
        ref = rs["metadata"]["ownerReferences"][0]
        d = await env.deployment()
        assert ref["uid"] == d["metadata"]["uid"]
        assert ref["controller"] is True
        assert ref["kind"] == "Deployment"
        annotations = rs["metadata"]["annotations"]
        assert annotations[du.REVISION_ANNOTATION] == "1"
        assert annotations[du.DESIRED_REPLICAS_ANNOTATION] == "3"
        assert annotations[du.MAX_REPLICAS_ANNOTATION] == "4"  # 3 + ceil(25% of 3)
        assert d["metadata"]["annotations"][du.REVISION_ANNOTATION] == "1"
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert progressing["reason"] in ("NewReplicaSetCreated", "ReplicaSetUpdated")
        avail = condition(d, "Available")
        assert avail is not None
        assert avail["status"] == "False"
        assert avail["reason"] == "MinimumReplicasUnavailable"

        await env.catch_up()
        d = await env.deployment()
        status = d["status"]
        assert status["observedGeneration"] == d["metadata"]["generation"]
        assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (3, 3, 3)
        assert status["availableReplicas"] == 3
        assert "unavailableReplicas" not in status
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert progressing["status"] == "True"
        assert progressing["reason"] == "NewReplicaSetAvailable"
        assert progressing["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.'
        avail = condition(d, "Available")
        assert avail is not None
        assert avail["reason"] == "MinimumReplicasAvailable"
        assert await env.event_messages() == [f"Scaled up replica set {rs['metadata']['name']} from 0 to 3"]


async def test_scale_up_and_down() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(2), namespace=NS)
        await env.settle()
        await env.catch_up()
        await env.patch({"spec": {"replicas": 5}})
        (rs,) = await env.rss()
        assert rs["spec"]["replicas"] == 5
        assert rs["metadata"]["annotations"][du.DESIRED_REPLICAS_ANNOTATION] == "5"
        await env.catch_up()
        await env.patch({"spec": {"replicas": 1}})
        (rs,) = await env.rss()
        assert rs["spec"]["replicas"] == 1
        name = rs["metadata"]["name"]
        assert (await env.event_messages())[-2:] == [
            f"Scaled up replica set {name} from 2 to 5",
            f"Scaled down replica set {name} from 5 to 1",
        ]


async def _check_rollout_step(env: Env, d: Obj, surge: int, unavailable: int) -> None:
    """The invariants after the controller acted (upstream's, which are about what the ReplicaSets are asked
    for): wanted pods within replicas+maxSurge, and available pods that survive the scale-downs at least
    replicas-maxUnavailable."""
    rss = await env.rss()
    replicas = d["spec"]["replicas"]
    total = sum(du.spec_replicas(rs) for rs in rss)
    surviving = sum(min(du.spec_replicas(rs), du.status_int(rs, "availableReplicas")) for rs in rss)
    assert total <= replicas + surge, [(name_of(r), du.spec_replicas(r), r.get("status")) for r in rss]
    assert surviving >= replicas - unavailable, [(name_of(r), du.spec_replicas(r), r.get("status")) for r in rss]


@pytest.mark.parametrize(
    ("replicas", "rolling", "surge", "unavailable"),
    [
        (10, {"maxSurge": "25%", "maxUnavailable": "25%"}, 3, 2),
        (4, {"maxSurge": 1, "maxUnavailable": 0}, 1, 0),
        (4, {"maxSurge": 0, "maxUnavailable": 1}, 0, 1),
        (3, {"maxSurge": "0%", "maxUnavailable": "10%"}, 0, 1),  # both round to 0 -> unavailable 1
    ],
)
async def test_rolling_update_respects_surge_and_unavailable(
    replicas: int, rolling: Obj, surge: int, unavailable: int
) -> None:
    async with running() as env:
        strategy = {"type": "RollingUpdate", "rollingUpdate": rolling}
        await env.client.create(env.deployments, deployment_obj(replicas, strategy=strategy), namespace=NS)
        await env.settle()
        await env.catch_up()
        (first,) = await env.rss()
        await env.patch({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
        d = await env.deployment()
        for step in range(50):  # noqa: B007 - checked after the loop
            await _check_rollout_step(env, d, surge, unavailable)
            d = await env.deployment()
            status = d.get("status") or {}
            progressing = condition(d, "Progressing")
            if (
                status.get("updatedReplicas") == status.get("replicas") == status.get("availableReplicas") == replicas
                and progressing is not None
                and progressing["reason"] == "NewReplicaSetAvailable"
            ):
                break
            # new pods come up one step behind: first they exist unavailable, then become available
            await env.catch_up(available_new=max(du.status_int(await env.new_rs() or {}, "availableReplicas"), 0))
            await _check_rollout_step(env, d, surge, unavailable)
            await env.catch_up()
        else:
            raise AssertionError(f"rollout did not finish: {d.get('status')}")
        assert step > 0
        rss = await env.rss()
        assert len(rss) == 2
        old = next(r for r in rss if uid_of(r) == uid_of(first))
        new = next(r for r in rss if uid_of(r) != uid_of(first))
        assert old["spec"]["replicas"] == 0
        assert new["spec"]["replicas"] == replicas
        assert new["metadata"]["annotations"][du.REVISION_ANNOTATION] == "2"
        assert d["metadata"]["annotations"][du.REVISION_ANNOTATION] == "2"
        assert d["status"]["observedGeneration"] == 2


async def test_recreate_scales_old_down_before_creating_new() -> None:
    async with running() as env:
        obj = deployment_obj(3, strategy={"type": "Recreate"})
        await env.client.create(env.deployments, obj, namespace=NS)
        await env.settle()
        await env.catch_up()
        await env.patch({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
        (old,) = await env.rss()  # no new RS while old replicas exist
        assert old["spec"]["replicas"] == 0
        assert old["status"]["replicas"] == 3
        await env.catch_up()  # old pods gone
        await env.settle()
        rss = await env.rss()
        assert len(rss) == 2
        new = next(r for r in rss if uid_of(r) != uid_of(old))
        assert new["spec"]["replicas"] == 3
        await env.catch_up()
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert progressing["reason"] == "NewReplicaSetAvailable"
        messages = await env.event_messages()
        assert messages[-2:] == [
            f"Scaled down replica set {name_of(old)} from 3 to 0",
            f"Scaled up replica set {name_of(new)} from 0 to 3",
        ]


async def _roll_to(env: Env, image: str) -> None:
    await env.patch({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    for _ in range(30):
        await env.catch_up()
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        if (
            d["status"].get("updatedReplicas") == d["spec"]["replicas"] == d["status"].get("replicas")
            and progressing is not None
            and progressing["reason"] == "NewReplicaSetAvailable"
        ):
            return
    raise AssertionError("rollout did not finish")


async def test_rollback_reuses_old_replica_set_and_bumps_revision() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(2), namespace=NS)
        await env.settle()
        await env.catch_up()
        (first,) = await env.rss()
        await _roll_to(env, "nginx:2")
        await _roll_to(env, "nginx:1")  # what `kubectl rollout undo` does: the old template again
        rss = await env.rss()
        assert len(rss) == 2  # reused, not a third ReplicaSet
        reused = next(r for r in rss if uid_of(r) == uid_of(first))
        assert reused["spec"]["replicas"] == 2
        assert reused["metadata"]["annotations"][du.REVISION_ANNOTATION] == "3"
        assert reused["metadata"]["annotations"][du.REVISION_HISTORY_ANNOTATION] == "1"
        d = await env.deployment()
        assert d["metadata"]["annotations"][du.REVISION_ANNOTATION] == "3"


async def test_revision_history_limit_cleanup() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(1, revisionHistoryLimit=1), namespace=NS)
        await env.settle()
        await env.catch_up()
        for image in ("nginx:2", "nginx:3", "nginx:4"):
            await _roll_to(env, image)
        await env.settle()
        rss = await env.rss()
        revisions = sorted(int(r["metadata"]["annotations"][du.REVISION_ANNOTATION]) for r in rss)
        assert revisions == [3, 4]  # the new one plus one old


async def test_restart_annotation_starts_rollout() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(2), namespace=NS)
        await env.settle()
        await env.catch_up()
        await env.patch(
            {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}}}
        )
        rss = await env.rss()
        assert len(rss) == 2
        new = await env.new_rs()
        assert new is not None
        assert new["spec"]["template"]["metadata"]["annotations"] == {"kubectl.kubernetes.io/restartedAt": "now"}


async def test_paused_deployment_scales_but_does_not_roll_out() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(2), namespace=NS)
        await env.settle()
        await env.catch_up()
        await env.patch({"spec": {"paused": True}})
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")
        await env.patch(
            {"spec": {"replicas": 4, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}
        )
        (rs,) = await env.rss()  # no new ReplicaSet while paused
        assert rs["spec"]["replicas"] == 4  # but scaling happens
        await env.patch({"spec": {"paused": False}})
        assert len(await env.rss()) == 2
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert progressing["reason"] != "DeploymentPaused"


async def test_proportional_scaling_mid_rollout() -> None:
    async with running() as env:
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
        await env.client.create(env.deployments, deployment_obj(10, strategy=strategy), namespace=NS)
        await env.settle()
        await env.catch_up()
        (old,) = await env.rss()
        await env.patch({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
        await env.catch_up(available_new=0)  # new pods never become available: the rollout is stuck
        sizes = {name_of(r): du.spec_replicas(r) for r in await env.rss()}
        new_name = next(n for n in sizes if n != name_of(old))
        assert sizes == {name_of(old): 8, new_name: 5}  # 13 = 10 + surge; old down by maxUnavailable
        await env.patch({"spec": {"replicas": 20}})
        sizes = {name_of(r): du.spec_replicas(r) for r in await env.rss()}
        # 23 allowed (20 + 3): 10 more split 8:5 -> old +6 (8*23/13=14.15 -> 14), new +4 (leftover)
        assert sum(sizes.values()) == 23
        assert sizes[name_of(old)] == 14
        assert sizes[new_name] == 9
        for rs in await env.rss():
            assert rs["metadata"]["annotations"][du.DESIRED_REPLICAS_ANNOTATION] == "20"
            assert rs["metadata"]["annotations"][du.MAX_REPLICAS_ANNOTATION] == "23"


async def test_progress_deadline_exceeded() -> None:
    async with running() as env:
        await env.client.create(env.deployments, deployment_obj(2, progressDeadlineSeconds=30), namespace=NS)
        await env.settle()
        await env.catch_up()
        await env.patch({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "bad"}]}}}})
        await env.catch_up(available_new=0)
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        assert progressing is not None
        assert progressing["status"] == "True"
        await env.clock.advance(40)  # the controller asked to be requeued for the deadline
        await env.settle()
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        new = await env.new_rs()
        assert new is not None
        assert progressing is not None
        assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
        assert progressing["message"] == f'ReplicaSet "{name_of(new)}" has timed out progressing.'


async def test_adopts_matching_orphan_replica_set() -> None:
    async with running() as env:
        obj = deployment_obj(2)
        template = copy.deepcopy(obj["spec"]["template"])
        template["metadata"]["labels"]["pod-template-hash"] = "orphan"
        orphan = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": "web-orphan",
                "namespace": NS,
                "labels": {"app": "web", "pod-template-hash": "orphan"},
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web", "pod-template-hash": "orphan"}},
                "template": template,
            },
        }
        await env.client.create(env.replicasets, orphan, namespace=NS)
        await env.client.create(env.deployments, obj, namespace=NS)
        await env.settle()
        rss = await env.rss()
        assert [name_of(r) for r in rss] == ["web-orphan"]  # adopted and used as the new RS
        d = await env.deployment()
        assert rss[0]["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
        assert rss[0]["metadata"]["annotations"][du.REVISION_ANNOTATION] == "1"


async def test_restart_mid_rollout_changes_nothing_correct() -> None:
    """A new controller (fresh informers, no memory) picks up a half-done rollout without undoing anything."""
    async with running() as env:
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
        await env.client.create(env.deployments, deployment_obj(4, strategy=strategy), namespace=NS)
        await env.settle()
        await env.catch_up()
        await env.patch({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
        await env.catch_up()
        before = {name_of(r): (du.spec_replicas(r), r["metadata"]["resourceVersion"]) for r in await env.rss()}
        d_before = await env.deployment()
        events_before = await env.event_messages()

        async with running(client=env.client, clock=env.clock, seed=1) as env2:
            await env2.settle()
            after = {name_of(r): (du.spec_replicas(r), r["metadata"]["resourceVersion"]) for r in await env.rss()}
            assert after == before
            d_after = await env.deployment()
            assert d_after["status"] == d_before["status"]
            assert d_after["metadata"]["resourceVersion"] == d_before["metadata"]["resourceVersion"]
            assert await env.event_messages() == events_before


async def test_rollout_with_the_replicaset_controller() -> None:
    """Both controllers together; the test plays the kubelet (every pod Running and Ready)."""
    from kubeplane.controllers.replicaset import ReplicaSetController

    async with running(ReplicaSetController) as env:
        await _rollout_twice(env)


async def _rollout_twice(env: Env) -> None:
    client = env.client
    pods = client.resource("pods")

    async def kubelet() -> None:
        for pod in (await client.list(pods, namespace=NS))["items"]:
            if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") == "Running":
                continue
            pod["status"] = {**(pod.get("status") or {}), **ready_status("2026-01-01T00:00:00Z")}
            with contextlib.suppress(ConflictError):
                await client.update(pods, pod, namespace=NS, subresource="status")

    async def complete() -> bool:
        await kubelet()
        d = await env.deployment()
        progressing = condition(d, "Progressing")
        status = d.get("status") or {}
        return bool(
            status.get("observedGeneration") == d["metadata"]["generation"]
            and status.get("updatedReplicas") == status.get("availableReplicas") == status.get("replicas") == 3
            and progressing is not None
            and progressing["reason"] == "NewReplicaSetAvailable"
        )

    await client.create(env.deployments, deployment_obj(3), namespace=NS)
    await env.wait_for(complete, "the first rollout")
    await client.patch(
        env.deployments,
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}},
        namespace=NS,
    )
    await env.wait_for(complete, "the second rollout")
    live = [p for p in (await client.list(pods, namespace=NS))["items"] if not p["metadata"].get("deletionTimestamp")]
    images = {p["spec"]["containers"][0]["image"] for p in live}
    assert images == {"nginx:2"}
    assert len(live) == 3
