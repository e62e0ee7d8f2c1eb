"""The fleet's cheap lease renewal (kubeplane.kubelet.lease_writer) stores exactly what the full API update stores.

Upstream behaviour pinned: the kubelet's node lease controller (``component-helpers/apimachinery/lease``,
``controller.go`` ``sync``/``retryUpdateLease``) renews ``kube-node-lease/<node>`` by an Update of its last copy
with a new ``spec.renewTime``; on a conflict it re-reads the Lease. The API server's field manager
(``managedfields/internal/managedfieldsupdater.go``) moves the manager's entry ``time`` to now on each such update.
Watchers (the node lifecycle controller, the garbage collector) see one MODIFIED event per renewal.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.api.meta import format_micro_time, format_time, parse_micro_time
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ClientError
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from kubeplane.kubelet.lease_writer import LeaseWriter, Stamps, renew_built, renew_many, renewable
from kubeplane.kubelet.node import NODE_LEASE_NAMESPACE, node_lease
from kubeplane.store.watch import StoreWatch

Obj = dict[str, Any]
NODES = [{"count": 3, "namePattern": "n{index}", "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}]


async def _run_fleet(cheap: bool, seconds: int) -> tuple[list[list[Obj]], list[bytes], int]:
    """Every 10 s for ``seconds``: the three Leases as stored; the store's final bytes of each Lease; how many
    renewals took the cheap path."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, rng=random.Random(7), clock=clock)
    put = client.put_prepared_many
    puts = 0

    async def counting(resource: Any, objs: Sequence[Obj], **kwargs: Any) -> list[Obj]:
        nonlocal puts
        puts += len(objs)
        return await put(resource, objs, **kwargs)

    client.put_prepared_many = counting  # type: ignore[method-assign]
    fleet = Fleet(
        client, parse_node_config(NODES), clock=clock, rng=random.Random(1), options=FleetOptions(cheap_leases=cheap)
    )
    leases = client.resource("leases")
    await fleet.start()
    try:
        seen: list[list[Obj]] = []
        for _ in range(seconds // 10):
            await clock.advance(10.0)
            await asyncio.sleep(0)
            listed = await client.list(leases, namespace=NODE_LEASE_NAMESPACE)
            seen.append(sorted(listed["items"], key=lambda o: o["metadata"]["name"]))
        raw = []
        for name in ("n1", "n2", "n3"):
            kv = await client.registry.store.get(leases.key(name, NODE_LEASE_NAMESPACE))
            assert kv is not None
            raw.append(kv.value)
        return seen, raw, puts
    finally:
        await fleet.stop()
        await client.close()


async def test_cheap_renewals_store_what_the_full_update_stores() -> None:
    """Same seeds, same clock: with and without the cheap path the Leases (renewTime, managedFields time,
    resourceVersion, uid...) are equal at every step and the stored bytes are identical."""
    cheap, cheap_raw, cheap_puts = await _run_fleet(True, 60)
    full, full_raw, full_puts = await _run_fleet(False, 60)
    assert cheap_puts >= 3 * 4  # every renewal after the first (the create, then one full update) was cheap
    assert full_puts == 0
    assert cheap == full
    assert cheap_raw == full_raw
    # and they did renew: renewTime moved every 10 s, managed fields' time with it
    renew = [step[0]["spec"]["renewTime"] for step in cheap]
    assert renew == sorted(set(renew))
    assert len(renew) == 6
    assert cheap[-1][0]["metadata"]["managedFields"][0]["time"] != cheap[0][0]["metadata"]["managedFields"][0]["time"]


async def test_a_lease_watcher_sees_every_renewal() -> None:
    """One MODIFIED event per renewal, renewTime 10 s apart (upstream: renewInterval = 0.25 * 40 s)."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, clock=clock)
    fleet = Fleet(client, parse_node_config(NODES[:1]), clock=clock, rng=random.Random(1))
    leases = client.resource("leases")
    await fleet.start()
    for _ in range(2):  # the first renewals create the Leases
        await clock.advance(10.0)
        await asyncio.sleep(0.01)
    listed = await client.list(leases, namespace=NODE_LEASE_NAMESPACE)
    watch = await client.watch(
        leases,
        namespace=NODE_LEASE_NAMESPACE,
        allow_bookmarks=False,
        resource_version=listed["metadata"]["resourceVersion"],
    )
    types: list[str] = []
    times: dict[str, list[str]] = {}

    async def collect() -> None:
        async for event in watch:
            types.append(event["type"])
            obj = event["object"]
            times.setdefault(obj["metadata"]["name"], []).append(obj["spec"]["renewTime"])

    task = asyncio.ensure_future(collect())
    try:
        for _ in range(5):
            await clock.advance(10.0)
            await asyncio.sleep(0.01)
        assert set(types) == {"MODIFIED"}
        assert sorted(times) == ["n1", "n2", "n3"]
        for name, seen in times.items():
            assert len(seen) == 5, name
            gaps = {round(b - a, 6) for a, b in zip(_parse(seen), _parse(seen)[1:], strict=False)}
            assert gaps == {10.0}, (name, seen)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await watch.close()
        await fleet.stop()
        await client.close()


def _parse(stamps: list[str]) -> list[float]:
    return [parse_micro_time(s).timestamp() for s in stamps]


async def test_a_lease_changed_by_someone_else_is_never_overwritten() -> None:
    """A write by another party since the node's last renewal: the cheap put conflicts, the node re-reads and
    renews through the API (upstream: a conflict makes the kubelet GET the Lease again), keeping the change."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, clock=clock)
    fleet = Fleet(client, parse_node_config(NODES[:1]), clock=clock, rng=random.Random(1))
    leases = client.resource("leases")
    await fleet.start()
    try:
        await clock.advance(20.0)
        lease = await client.get(leases, "n1", namespace=NODE_LEASE_NAMESPACE)
        lease["metadata"]["labels"] = {"edited": "yes"}
        await client.update(leases, lease, namespace=NODE_LEASE_NAMESPACE)
        for _ in range(3):
            await clock.advance(10.0)
        after = await client.get(leases, "n1", namespace=NODE_LEASE_NAMESPACE)
        assert after["metadata"]["labels"] == {"edited": "yes"}
        assert _last(after) >= clock.now() - 10.0  # renewed since the edit, every 10 s as before
        assert _last(after) > _last(lease)
    finally:
        await fleet.stop()
        await client.close()


def _last(lease: Obj) -> float:
    return parse_micro_time(lease["spec"]["renewTime"]).timestamp()


def _lease(entries: list[Obj]) -> Obj:
    return {"metadata": {"name": "n", "resourceVersion": "5", "managedFields": entries}, "spec": {}}


_ENTRY = {"manager": "kubeplane", "operation": "Update", "fieldsV1": {"f:spec": {"f:renewTime": {}}}}


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ([_ENTRY], True),
        ([_ENTRY, {**_ENTRY, "manager": "kubectl-label"}], False),  # a second owner: its time is not ours
        ([{**_ENTRY, "manager": "kubelet"}], False),  # written by another manager (e.g. over HTTP)
        ([{**_ENTRY, "operation": "Apply"}], False),
        ([{**_ENTRY, "subresource": "status"}], False),
        ([{**_ENTRY, "fieldsV1": {"f:spec": {"f:holderIdentity": {}}}}], False),  # renewTime owned by nobody
        ([], False),
    ],
)
def test_renewable_only_when_the_full_update_would_touch_one_entry(entries: list[Obj], expected: bool) -> None:
    assert renewable(_lease(entries)) is expected


async def test_put_prepared_is_for_the_trusted_in_process_caller_only() -> None:
    """A kubelet writing as system:node:<name> goes through authorization and NodeRestriction: never cheap."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, clock=clock)
    try:
        node_client = client.as_user(UserInfo("system:node:n1", groups=("system:nodes",)))
        with pytest.raises(ClientError):
            await node_client.put_prepared(client.resource("leases"), _lease([_ENTRY]), namespace=NODE_LEASE_NAMESPACE)
    finally:
        await client.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False), min_size=1, max_size=20))
def test_stamps_format_as_the_api_does(times: list[float]) -> None:
    """Including the rounding of a fraction to the next second (x.9999996) and repeated seconds (the cache)."""
    stamps = Stamps()
    for t in [*times, *(int(t) + 0.9999996 for t in times), *(int(t) + 0.0000005 for t in times), *times]:
        assert stamps.time(t) == format_time(t)
        assert stamps.micro_time(t) == format_micro_time(t)
        assert stamps.pair(t, t) == (format_time(t), format_micro_time(t))
        assert stamps.pair(t, t + 0.25) == (format_time(t), format_micro_time(t + 0.25))


async def test_renewal_bytes_from_the_template_are_the_encoding() -> None:
    """The bytes a renewal is stored with, spliced from its writer's template, are exactly what encoding the
    renewal gives (the object without its resourceVersion, key order kept): what the API server's own encoding
    would store (kube-apiserver: the codec's JSON of the object, resourceVersion cleared)."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, rng=random.Random(7), clock=clock)
    put = client.put_prepared_many
    spliced = 0

    async def checking(resource: Any, objs: Sequence[Obj], **kwargs: Any) -> list[Obj]:
        nonlocal spliced
        for obj, body in zip(objs, kwargs.get("bodies") or [None] * len(objs), strict=True):
            if body is not None:
                meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
                assert body == orjson.dumps({**obj, "metadata": meta})
                spliced += 1
        return await put(resource, objs, **kwargs)

    client.put_prepared_many = checking  # type: ignore[method-assign]
    fleet = Fleet(client, parse_node_config(NODES), clock=clock, rng=random.Random(1))
    await fleet.start()
    try:
        for _ in range(8):
            await clock.advance(10.0)
            await asyncio.sleep(0)
    finally:
        await fleet.stop()
        await client.close()
    assert spliced >= 3 * 5  # every renewal after a node's first cheap one


async def _renewals(
    columns: bool, *, edit: bool
) -> tuple[list[list[bytes]], list[tuple[str, bytes, int]], list[bytes]]:
    """Four Leases renewed in batches for three rounds, as columns (:func:`renew_built`) or one object at a time
    (:meth:`LeaseWriter.prepare` then :func:`renew_many`, the path before columns): each batch's answers (encoded,
    key order kept), every store write (key, bytes, revision) and every watch event (type and object, encoded).
    Round two repeats a moment (nothing to write); ``edit``: someone labels the third Lease before round three
    (its renewal is refused and those after it are not written)."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, rng=random.Random(7), clock=clock)
    leases = client.resource("leases")
    store = client.registry.store
    try:
        stamps = Stamps()
        kept: list[Obj] = []
        writers: list[LeaseWriter] = []
        for i in range(4):
            created = await client.create(leases, node_lease(f"n{i}", "", clock.now()), namespace=NODE_LEASE_NAMESPACE)
            writer = LeaseWriter(client, stamps=stamps)
            renewed = await writer.renew(created, clock.now() + 0.1)  # the first cheap one builds the template
            assert renewed is not None
            writers.append(writer)
            kept.append(renewed)
        changes = store.watch("/registry/leases/", start_revision=store.revision + 1)
        assert isinstance(changes, StoreWatch)
        watch = await client.watch(leases, namespace=NODE_LEASE_NAMESPACE, allow_bookmarks=False,
                                   resource_version=str(store.revision))  # fmt: skip
        answers: list[list[bytes]] = []
        moments: list[float] = []
        for round_ in range(3):
            if round_ != 1:  # round one renews at the moments of round zero again: nothing changes
                await clock.advance(10.0)
                moments = [clock.now() + 0.25 * i + 1 / 3 for i in range(4)]
            if round_ == 2 and edit:
                lease = await client.get(leases, "n2", namespace=NODE_LEASE_NAMESPACE)
                lease["metadata"]["labels"] = {"edited": "yes"}
                await client.update(leases, lease, namespace=NODE_LEASE_NAMESPACE)
            batch = list(zip(writers, kept, moments, strict=True))
            if columns:
                done = await renew_built(batch)
                assert done is not None
            else:
                prepared = [(w, w.prepare(lease, now, stamped_at=now)) for w, lease, now in batch]
                writes = [(w, new) for (w, new), (_, lease, _) in zip(prepared, batch, strict=True) if new is not lease]
                stored = iter(await renew_many(writes))  # type: ignore[arg-type]
                done = []
                for (_, new), (_, lease, _) in zip(prepared, batch, strict=True):
                    step = new if new is lease else next(stored, None)
                    if step is None:
                        break
                    done.append(step)
            answers.append([orjson.dumps(obj) for obj in done])
            kept[: len(done)] = done
        await asyncio.sleep(0)
        events = [orjson.dumps(event) for event in watch.take_ready()]
        await watch.close()
        writes_seen = [(e.kv.key, e.kv.value, e.kv.mod_revision) for e in changes.take_buffered()]
        return answers, writes_seen, events
    finally:
        await client.close()


@pytest.mark.parametrize("edit", [False, True], ids=["every-lease-renewed", "a-lease-changed-by-someone-else"])
async def test_renewals_as_columns_store_and_deliver_what_renewing_each_lease_does(edit: bool) -> None:
    """The batch as columns (each Lease's bytes from its template, its object built once with its revision) gives
    the same answers, the same store writes at the same revisions and the same watch events as preparing each
    renewal and writing the batch (upstream: one Update per Lease, one MODIFIED event each; an Update of a Lease
    changed since is a conflict and writes nothing)."""
    columns = await _renewals(True, edit=edit)
    objects = await _renewals(False, edit=edit)
    assert columns == objects
    answers, writes, events = columns
    assert [len(a) for a in answers] == ([4, 4, 2] if edit else [4, 4, 4])
    assert answers[1] == answers[0]  # a repeated moment writes nothing
    assert len(writes) == (4 + 1 + 2 if edit else 8)
    assert len(events) == len(writes)
