"""The garbage collector: graph bookkeeping (tables after upstream's garbagecollector_test.go) and the three
cascade modes, dangling references, UID mismatches and restarts end to end over the in-process API server.
A ReplicaSet owns pods whose ownerReferences the tests write themselves (no ReplicaSet controller runs)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.controllers.garbagecollector import (
    FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN,
    GarbageCollector,
    monitored_resources,
    references_diffs,
    starts_waiting_for_dependents,
)
from tests.controllers import harness

NS = "default"
LABELS = {"app": "web"}
HOLD = "example.com/hold"

# --- pure logic --------------------------------------------------------------------------------------------


def _ref(uid: str, *, block: bool | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"rs-{uid}", "uid": uid}
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


@pytest.mark.parametrize(
    ("old", "new", "added", "removed", "changed"),
    [
        ([], [_ref("1")], ["1"], [], []),
        ([_ref("1")], [], [], ["1"], []),
        ([_ref("1")], [_ref("1")], [], [], []),
        ([_ref("1", block=True)], [_ref("1", block=False)], [], [], ["1"]),
        ([_ref("1"), _ref("2")], [_ref("2"), _ref("3")], ["3"], ["1"], []),
    ],
)
def test_references_diffs(
    old: list[dict[str, Any]], new: list[dict[str, Any]], added: list[str], removed: list[str], changed: list[str]
) -> None:
    a, r, c = references_diffs(old, new)
    assert [x["uid"] for x in a] == added
    assert [x["uid"] for x in r] == removed
    assert [n["uid"] for _, n in c] == changed


def _obj(*, deleting: bool = False, finalizers: tuple[str, ...] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x", "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, _obj(deleting=True, finalizers=(FINALIZER_ORPHAN,)), True),  # first sighting (restart)
        (_obj(), _obj(deleting=True, finalizers=(FINALIZER_ORPHAN,)), True),
        (
            _obj(deleting=True, finalizers=(FINALIZER_ORPHAN,)),
            _obj(deleting=True, finalizers=(FINALIZER_ORPHAN,)),
            False,
        ),
        (_obj(), _obj(finalizers=(FINALIZER_ORPHAN,)), False),  # not deleting
        (_obj(), _obj(deleting=True, finalizers=(FINALIZER_FOREGROUND,)), False),  # another finalizer
    ],
)
def test_starts_waiting_for_dependents_orphaned(old: dict[str, Any] | None, new: dict[str, Any], want: bool) -> None:
    assert starts_waiting_for_dependents(old, new, FINALIZER_ORPHAN) is want


async def test_monitored_resources_leave_out_events() -> None:
    client = await LocalClient.in_memory()
    try:
        plurals = {(r.group, r.plural) for r in monitored_resources(client)}
        assert ("", "pods") in plurals
        assert ("apps", "replicasets") in plurals
        assert ("", "namespaces") in plurals
        assert ("", "events") not in plurals
        assert ("events.k8s.io", "events") not in plurals
        assert [r.plural for r in monitored_resources(client, ["pods", "rs"])] == ["pods", "replicasets"]
    finally:
        await client.close()


# --- end to end --------------------------------------------------------------------------------------------


@dataclass
class Env(harness.Env[GarbageCollector]):
    @property
    def gc(self) -> GarbageCollector:
        return self.controller

    async def eventually(self, check: Callable[[], Awaitable[bool]], what: str = "condition") -> None:
        """Poll ``check`` for a bounded time, moving the fake clock so rate-limited retries come due."""
        await self.advance_until(check, what, step=0.05)

    async def settle(self) -> None:
        for _ in range(30):
            await asyncio.sleep(0.005)
            await self.clock.advance(0.05)

    async def exists(self, resource: str, name: str) -> bool:
        try:
            await self.client.get(self.res(resource), name, namespace=NS)
        except NotFoundError:
            return False
        return True

    async def get(self, resource: str, name: str) -> dict[str, Any]:
        return await self.client.get(self.res(resource), name, namespace=NS)


def running(client: LocalClient | None = None, clock: FakeClock | None = None) -> AbstractAsyncContextManager[Env]:
    return harness.running(GarbageCollector, env_cls=Env, client=client, clock=clock, server_clock=False)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running() as e:
        yield e


async def create_rs(client: LocalClient, name: str = "rs") -> dict[str, Any]:
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    return await client.create(client.resource("replicasets"), body, namespace=NS)


def owner_ref(rs: dict[str, Any], *, block: bool = True, uid: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": rs["metadata"]["name"],
        "uid": uid or rs["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


async def create_pod(
    client: LocalClient, name: str, owners: list[dict[str, Any]], finalizers: tuple[str, ...] = ()
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": LABELS, "ownerReferences": owners}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    body = {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    return await client.create(client.resource("pods"), body, namespace=NS)


async def drop_finalizers(client: LocalClient, name: str) -> None:
    await client.patch(client.resource("pods"), name, {"metadata": {"finalizers": None}}, namespace=NS)


async def test_background_deletion_deletes_dependents(env: Env) -> None:
    rs = await create_rs(env.client)
    for i in range(2):
        await create_pod(env.client, f"p{i}", [owner_ref(rs)])
    await env.settle()
    assert await env.exists("pods", "p0")  # a solid owner keeps them
    await env.client.delete(env.client.resource("replicasets"), "rs", namespace=NS, propagation_policy="Background")

    async def pods_gone() -> bool:
        return not await env.exists("pods", "p0") and not await env.exists("pods", "p1")

    await env.eventually(pods_gone, "dependents deleted")


async def test_foreground_deletion_waits_for_blocking_dependents(env: Env) -> None:
    rs = await create_rs(env.client)
    await create_pod(env.client, "held", [owner_ref(rs)], finalizers=(HOLD,))
    await create_pod(env.client, "free", [owner_ref(rs)])
    await create_pod(env.client, "nonblocking", [owner_ref(rs, block=False)])
    await env.settle()
    await env.client.delete(env.client.resource("replicasets"), "rs", namespace=NS, propagation_policy="Foreground")

    async def others_gone() -> bool:
        return not await env.exists("pods", "free") and not await env.exists("pods", "nonblocking")

    await env.eventually(others_gone, "dependents deleted")
    held = await env.get("pods", "held")
    assert held["metadata"].get("deletionTimestamp")  # deleted, held by its own finalizer
    await env.settle()
    owner = await env.get("replicasets", "rs")  # waits for the blocking dependent
    assert FINALIZER_FOREGROUND in owner["metadata"]["finalizers"]
    assert owner["metadata"].get("deletionTimestamp")

    await drop_finalizers(env.client, "held")

    async def owner_gone() -> bool:
        return not await env.exists("replicasets", "rs")

    await env.eventually(owner_gone, "owner deleted after its dependents")
    assert not await env.exists("pods", "held")


async def test_orphan_deletion_keeps_dependents_without_the_reference(env: Env) -> None:
    rs = await create_rs(env.client)
    other = await create_rs(env.client, "other")
    await create_pod(env.client, "p0", [owner_ref(rs)])
    await create_pod(env.client, "p1", [owner_ref(rs, block=False), owner_ref(other)])
    await env.settle()
    await env.client.delete(env.client.resource("replicasets"), "rs", namespace=NS, propagation_policy="Orphan")

    async def owner_gone() -> bool:
        return not await env.exists("replicasets", "rs")

    await env.eventually(owner_gone, "orphaned owner deleted")
    await env.settle()
    p0, p1 = await env.get("pods", "p0"), await env.get("pods", "p1")
    assert not p0["metadata"].get("ownerReferences")
    assert [r["uid"] for r in p1["metadata"]["ownerReferences"]] == [other["metadata"]["uid"]]


async def test_dangling_owner_reference_is_collected(env: Env) -> None:
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-00000000dead"}}
    await create_pod(env.client, "p0", [owner_ref(ghost)])

    async def gone() -> bool:
        return not await env.exists("pods", "p0")

    await env.eventually(gone, "dependent of a missing owner deleted")
    assert "00000000-0000-0000-0000-00000000dead" not in env.gc.graph  # the virtual node went too


async def test_owner_with_a_different_uid_is_dangling(env: Env) -> None:
    rs = await create_rs(env.client)
    await create_pod(env.client, "p0", [owner_ref(rs, uid="00000000-0000-0000-0000-0000000000aa")])

    async def gone() -> bool:
        return not await env.exists("pods", "p0")

    await env.eventually(gone, "dependent of a UID-mismatched owner deleted")
    assert await env.exists("replicasets", "rs")  # the namesake with another UID is untouched


async def test_dangling_reference_removed_when_another_owner_is_solid(env: Env) -> None:
    rs = await create_rs(env.client)
    ghost = {"metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-00000000beef"}}
    await create_pod(env.client, "p0", [owner_ref(rs), owner_ref(ghost)])

    async def cleaned() -> bool:
        refs = (await env.get("pods", "p0"))["metadata"].get("ownerReferences") or []
        return [r["uid"] for r in refs] == [rs["metadata"]["uid"]]

    await env.eventually(cleaned, "dangling reference removed")
    assert await env.exists("pods", "p0")


async def test_pod_without_owners_is_left_alone(env: Env) -> None:
    await create_pod(env.client, "lonely", [])
    await env.settle()
    assert await env.exists("pods", "lonely")


async def test_restart_finishes_work_started_while_down() -> None:
    client = await LocalClient.in_memory()
    clock = FakeClock()
    rs_api = client.resource("replicasets")
    try:
        async with running(client, clock):
            fg = await create_rs(client, "fg")
            bg = await create_rs(client, "bg")
            orphaner = await create_rs(client, "orphaner")
            await create_pod(client, "fg-pod", [owner_ref(fg)])
            await create_pod(client, "bg-pod", [owner_ref(bg)])
            await create_pod(client, "or-pod", [owner_ref(orphaner)])
            for _ in range(10):
                await asyncio.sleep(0.005)

        # while no collector runs: one owner goes at once, two start cascading deletions
        await client.delete(rs_api, "bg", namespace=NS)
        await client.delete(rs_api, "fg", namespace=NS, propagation_policy="Foreground")
        await client.delete(rs_api, "orphaner", namespace=NS, propagation_policy="Orphan")
        assert (await client.get(rs_api, "fg", namespace=NS))["metadata"]["finalizers"] == [FINALIZER_FOREGROUND]

        async with running(client, clock) as env:

            async def done() -> bool:
                return not any(
                    [
                        await env.exists("pods", "bg-pod"),
                        await env.exists("pods", "fg-pod"),
                        await env.exists("replicasets", "fg"),
                        await env.exists("replicasets", "orphaner"),
                    ]
                )

            await env.eventually(done, "work left by the previous collector finished")
            assert not (await env.get("pods", "or-pod"))["metadata"].get("ownerReferences")
    finally:
        await client.close()
