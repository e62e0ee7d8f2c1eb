"""Leader election on a Lease, against client-go's ``tools/leaderelection`` semantics.

Candidates run on one FakeClock over one in-memory API server (``LocalClient.in_memory``); a candidate's client
can be made to fail or hang. Every leader-work start checks that no other work is running, and the tests step
the clock in 0.1 s steps, checking after each that at most one candidate says ``is_leader()``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from kubernetes import client as k8s
from kubernetes.leaderelection.leaderelectionrecord import LeaderElectionRecord as K8sRecord
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from kubeplane.api.meta import format_micro_time, parse_micro_time
from kubeplane.api.resources import ResourceInfo
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ClientError
from kubeplane.client.interface import Obj
from kubeplane.client.leaderelection import (
    JITTER_FACTOR,
    LeaderElectionConfig,
    LeaderElector,
    record_from_lease,
)
from kubeplane.client.local import LocalClient

LD, RD, RP = 15.0, 10.0, 2.0
NS, NAME = "kube-system", "kube-scheduler"
STEP = 0.1


class FlakyClient(LocalClient):
    """A second client on the same registry whose requests can fail (``"fail"``) or never answer (``"hang"``)."""

    mode = "ok"
    hung_cancelled = 0
    before_update: Callable[[Obj], None] = staticmethod(lambda obj: None)
    before_get: Callable[[], None] = staticmethod(lambda: None)

    async def _gate(self) -> None:
        if self.mode == "fail":
            raise ClientError("connection refused")
        if self.mode == "hang":
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.hung_cancelled += 1
                raise

    async def get(self, resource: ResourceInfo, name: str, **kwargs: Any) -> Obj:
        await self._gate()
        self.before_get()
        return await super().get(resource, name, **kwargs)

    async def create(self, resource: ResourceInfo, obj: Obj, **kwargs: Any) -> Obj:
        await self._gate()
        return await super().create(resource, obj, **kwargs)

    async def update(self, resource: ResourceInfo, obj: Obj, **kwargs: Any) -> Obj:
        await self._gate()
        self.before_update(obj)
        return await super().update(resource, obj, **kwargs)


class Timeline:
    """Leader work that runs until cancelled and records starts/stops; flags any overlap at a start."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.events: list[tuple[float, str, str]] = []
        self.running: set[str] = set()
        self.overlaps: list[str] = []
        self.stopped_calls: list[str] = []
        self.new_leaders: dict[str, list[str]] = {}

    def work(self, identity: str) -> Callable[[asyncio.Event], Awaitable[None]]:
        async def lead(stopped: asyncio.Event) -> None:
            if self.running:
                self.overlaps.append(f"{identity} started while {sorted(self.running)} running")
            self.running.add(identity)
            self.events.append((self.clock.monotonic(), "start", identity))
            try:
                await asyncio.Event().wait()
            finally:
                assert stopped.is_set()
                self.running.discard(identity)
                self.events.append((self.clock.monotonic(), "stop", identity))

        return lead

    def start_of(self, identity: str) -> float:
        return next(t for t, kind, who in self.events if kind == "start" and who == identity)

    def stop_of(self, identity: str) -> float:
        return next(t for t, kind, who in self.events if kind == "stop" and who == identity)


class World:
    def __init__(self, base: LocalClient, clock: FakeClock) -> None:
        self.base, self.clock = base, clock
        self.timeline = Timeline(clock)
        self.electors: dict[str, LeaderElector] = {}
        self.clients: dict[str, FlakyClient] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, identity: str, *, release_on_cancel: bool = False, seed: int = 0) -> LeaderElector:
        tl = self.timeline
        config = LeaderElectionConfig(
            name=NAME,
            namespace=NS,
            identity=identity,
            lease_duration=LD,
            renew_deadline=RD,
            retry_period=RP,
            release_on_cancel=release_on_cancel,
            on_started_leading=tl.work(identity),
            on_stopped_leading=lambda: tl.stopped_calls.append(identity),
            on_new_leader=lambda who: tl.new_leaders.setdefault(identity, []).append(who),
        )
        self.clients[identity] = FlakyClient(self.base.registry)
        elector = LeaderElector(self.clients[identity], config, clock=self.clock, rng=random.Random(seed))
        self.electors[identity] = elector
        self.tasks[identity] = asyncio.create_task(elector.run())
        return elector

    def leaders(self) -> list[str]:
        return [i for i, e in self.electors.items() if e.is_leader()]

    def check(self) -> None:
        assert len(self.leaders()) <= 1, self.leaders()
        assert len(self.timeline.running) <= 1, self.timeline.running
        assert not self.timeline.overlaps, self.timeline.overlaps

    async def run_for(self, seconds: float) -> None:
        for _ in range(round(seconds / STEP)):
            await self.clock.advance(STEP)
            await settle()
            self.check()

    async def lease(self) -> Obj:
        return await self.base.get(self.base.resource("leases"), NAME, namespace=NS)

    def mono(self, wire_time: str) -> float:
        """A MicroTime written from this FakeClock, as its monotonic reading."""
        return parse_micro_time(wire_time).timestamp() - (self.clock.now() - self.clock.monotonic())

    async def stop_all(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


async def settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


@pytest.fixture
async def world() -> AsyncIterator[World]:
    clock = FakeClock()
    base = await LocalClient.in_memory(now=clock.now)
    w = World(base, clock)
    yield w
    await w.stop_all()
    await base.close()


# --- config ------------------------------------------------------------------------------------------------


def _noop_config(**overrides: Any) -> LeaderElectionConfig:
    async def lead(stopped: asyncio.Event) -> None:
        return None

    args: dict[str, Any] = {
        "name": NAME,
        "namespace": NS,
        "identity": "a",
        "on_started_leading": lead,
        "on_stopped_leading": lambda: None,
    }
    return LeaderElectionConfig(**(args | overrides))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"lease_duration": 10.0}, "leaseDuration must be greater than renewDeadline"),
        ({"renew_deadline": 2.4}, "renewDeadline must be greater than retryPeriod*JitterFactor"),
        (
            {"lease_duration": -1.0, "renew_deadline": -2.0, "retry_period": -5.0},
            "leaseDuration must be greater than zero",
        ),
        (
            {"lease_duration": 1.0, "renew_deadline": 0.0, "retry_period": -1.0},
            "renewDeadline must be greater than zero",
        ),
        ({"retry_period": 0.0}, "retryPeriod must be greater than zero"),
        ({"identity": ""}, "Lock identity is empty"),
        ({"name": ""}, "lease name and namespace must not be empty"),
    ],
    ids=[
        "upstream: leaseDuration <= renewDeadline",
        "upstream: renewDeadline <= JitterFactor*retryPeriod (2.4 == 1.2*2)",
        "upstream: leaseDuration < 1",
        "upstream: renewDeadline < 1",
        "upstream: retryPeriod < 1",
        "upstream: empty lock identity",
        "ours: lease name required",
    ],
)
def test_config_validation(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        _noop_config(**overrides)
    assert str(info.value) == message


def test_config_defaults_are_core_clients_defaults() -> None:
    config = _noop_config()
    assert (config.lease_duration, config.renew_deadline, config.retry_period) == (15.0, 10.0, 2.0)
    assert config.release_on_cancel is False


# --- the record ----------------------------------------------------------------------------------------------


async def test_writes_upstream_lease_record_and_renews_keeping_acquire_time(world: World) -> None:
    """LeaderElectionRecordToLeaseSpec: five spec fields, MicroTime; renew keeps acquireTime and the count."""
    t0 = world.clock.now()
    a = world.start("a")
    await settle()
    assert a.is_leader()
    assert a.leader_identity == "a"
    lease = await world.lease()
    stamp = format_micro_time(t0)
    assert lease["spec"] == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": stamp,
        "renewTime": stamp,
        "leaseTransitions": 0,
    }
    await world.run_for(RP + STEP)
    renewed = (await world.lease())["spec"]
    assert renewed["acquireTime"] == stamp
    assert renewed["renewTime"] == format_micro_time(t0 + RP)
    assert renewed["leaseTransitions"] == 0
    assert int(lease["metadata"]["resourceVersion"]) < int((await world.lease())["metadata"]["resourceVersion"])


@pytest.mark.parametrize("age", [-3600.0, 3600.0], ids=["renewTime an hour old", "renewTime an hour ahead"])
async def test_expiry_is_measured_from_our_first_observation_not_lease_timestamps(world: World, age: float) -> None:
    """Upstream observedTime: Lease timestamps are never trusted; a record expires LD after WE first saw it."""
    stamp = format_micro_time(world.clock.now() + age)
    spec = {"holderIdentity": "ghost", "leaseDurationSeconds": 15, "acquireTime": stamp, "renewTime": stamp}
    body = {"metadata": {"name": NAME, "namespace": NS}, "spec": spec | {"leaseTransitions": 4}}
    await world.base.create(world.base.resource("leases"), body, namespace=NS)
    a = world.start("a")
    await world.run_for(LD - STEP)
    assert not a.is_leader()
    assert a.leader_identity == "ghost"
    await world.run_for(RP * (1 + JITTER_FACTOR) + STEP)
    assert a.is_leader()
    spec = (await world.lease())["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseTransitions"] == 5
    assert world.timeline.new_leaders["a"] == ["ghost", "a"]


class _MidRandom(random.Random):
    def random(self) -> float:
        return 0.5


async def test_acquire_retries_every_jittered_retry_period(world: World) -> None:
    """wait.JitterUntil(retryPeriod, JitterFactor, sliding): a waiting candidate polls, then sleeps
    retryPeriod * (1 + rand * 1.2); with rand = 0.5 that is every 3.2 s."""
    world.start("a")
    await settle()
    polls: list[float] = []
    config = dataclasses.replace(world.electors["a"].config, identity="b")
    flaky = FlakyClient(world.base.registry)
    flaky.before_get = lambda: polls.append(world.clock.monotonic())
    task = asyncio.create_task(LeaderElector(flaky, config, clock=world.clock, rng=_MidRandom()).run())
    await settle()
    await world.run_for(10.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert polls == pytest.approx([0.0, 3.2, 6.4, 9.6])


# --- hand-over -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    ["fail", "hang", "cancel"],
    ids=[
        "leader's requests fail: renew deadline passes",
        "leader's request hangs: attempt timed out at the renew deadline",
        "leader's run cancelled without release: others wait out the lease",
    ],
)
async def test_three_candidates_one_leader_and_safe_hand_over(world: World, how: str) -> None:
    """Exactly one leader in steady state, never two; after the leader stops renewing at S (send time of its last
    good renew) its work stops by S + renewDeadline, the next leader starts no earlier than S + leaseDuration and
    no later than S + leaseDuration + 2 jittered retry periods (first observation lag + poll lag)."""
    for seed, identity in enumerate("abc"):
        world.start(identity, seed=seed)
        await settle()
    for _ in range(2):  # two hand-overs: leaseTransitions counts each
        await world.run_for(3 * RP)
        (old,) = world.leaders()
        transitions = (await world.lease())["spec"]["leaseTransitions"]
        cut = world.clock.monotonic()
        if how == "cancel":
            world.tasks[old].cancel()
        else:
            world.clients[old].mode = how
        await settle()
        last_renew = world.mono((await world.lease())["spec"]["renewTime"])
        await world.run_for(LD + 2 * RP * (1 + JITTER_FACTOR) + STEP)
        (new,) = world.leaders()
        assert new != old
        stop, start = world.timeline.stop_of(old), world.timeline.start_of(new)
        # the watchdog ends leadership exactly renewDeadline after the last good renew was sent
        assert stop == pytest.approx(cut if how == "cancel" else last_renew + RD, abs=1e-5)
        assert start >= last_renew + LD
        assert start <= last_renew + LD + 2 * RP * (1 + JITTER_FACTOR) + 1e-6
        assert world.tasks[old].done()
        assert world.timeline.stopped_calls.count(old) == 1
        assert (await world.lease())["spec"]["leaseTransitions"] == transitions + 1
        del world.electors[old]
    if how == "hang":
        assert sum(c.hung_cancelled for c in world.clients.values()) >= 2


async def test_release_on_cancel_lets_the_next_take_over_at_once(world: World) -> None:
    """Upstream release(): holder "", leaseDurationSeconds 1, times now, transitions kept; a free record is taken
    at the next attempt, not after leaseDuration."""
    a = world.start("a", release_on_cancel=True)
    running_at_release: list[set[str]] = []

    def spy(obj: Obj) -> None:
        if obj["spec"]["holderIdentity"] == "":
            running_at_release.append(set(world.timeline.running))

    world.clients["a"].before_update = spy
    await settle()
    b = world.start("b", release_on_cancel=True, seed=1)
    await world.run_for(3 * RP)
    assert a.is_leader()
    assert not b.is_leader()
    world.tasks["a"].cancel()
    await settle()
    released_at = world.clock.monotonic()
    assert world.timeline.stop_of("a") == released_at
    assert world.tasks["a"].cancelled()
    assert running_at_release == [set()]  # the work had stopped before the lease was given up
    spec = (await world.lease())["spec"]
    assert spec == {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": format_micro_time(world.clock.now()),
        "renewTime": format_micro_time(world.clock.now()),
        "leaseTransitions": 0,
    }
    await world.run_for(RP * (1 + JITTER_FACTOR) + STEP)
    assert b.is_leader()
    assert world.timeline.start_of("b") - released_at <= RP * (1 + JITTER_FACTOR) < LD
    assert (await world.lease())["spec"]["leaseTransitions"] == 1
    assert world.timeline.new_leaders == {"a": ["a", ""], "b": ["a", "b"]}
    assert world.timeline.stopped_calls == ["a"]


async def test_conflict_on_renew_rereads_and_keeps_leading(world: World) -> None:
    """A write by someone else makes the fast-path update Conflict; the slow path re-reads and renews."""
    a = world.start("a")
    await settle()
    lease = await world.lease()
    lease["metadata"]["labels"] = {"touched": "yes"}
    await world.base.update(world.base.resource("leases"), lease, namespace=NS)
    await world.run_for(3 * RP)
    assert a.is_leader()
    lease = await world.lease()
    assert lease["metadata"]["labels"] == {"touched": "yes"}
    assert world.mono(lease["spec"]["renewTime"]) >= 2 * RP


async def test_another_holder_written_ends_leadership_at_next_renew(world: World) -> None:
    """Ours (stricter than upstream, which keeps polling until renewDeadline): a renew that finds another holder
    stops leading at once."""
    a = world.start("a")
    await settle()
    lease = await world.lease()
    lease["spec"]["holderIdentity"] = "intruder"
    await world.base.update(world.base.resource("leases"), lease, namespace=NS)
    await world.run_for(RP + STEP)
    assert not a.is_leader()
    assert a.leader_identity == "intruder"
    assert world.tasks["a"].done()
    assert world.timeline.stop_of("a") == pytest.approx(RP)
    assert world.timeline.stopped_calls == ["a"]


async def test_leader_work_failure_ends_leadership_and_is_raised(world: World) -> None:
    async def crash(stopped: asyncio.Event) -> None:
        await world.clock.sleep(1.0)
        raise RuntimeError("boom")

    stopped: list[bool] = []
    config = _noop_config(
        on_started_leading=crash, on_stopped_leading=lambda: stopped.append(True), release_on_cancel=True
    )
    elector = LeaderElector(world.base, config, clock=world.clock, rng=random.Random(0))
    task = asyncio.create_task(elector.run())
    await settle()
    assert elector.is_leader()
    await world.clock.advance(1.0)
    await settle()
    with pytest.raises(RuntimeError, match="boom"):
        await task
    assert stopped == [True]
    assert not elector.is_leader()
    assert (await world.lease())["spec"]["holderIdentity"] == ""


# --- compatibility with the official Python client's LeaseLock -------------------------------------------------


def _python_lock() -> LeaseLock:
    with mock.patch.object(k8s, "CoordinationV1Api"):
        return LeaseLock(NAME, NS, "py")


def _to_v1lease(obj: Obj) -> Any:
    return k8s.ApiClient().deserialize(json.dumps(obj), "V1Lease", "application/json")


async def test_python_client_reads_our_lease(world: World) -> None:
    """kubernetes.leaderelection LeaseLock.get_lock_object understands what we write (and a release as free)."""
    world.start("a", release_on_cancel=True)
    await settle()
    ours = await world.lease()
    lock = _python_lock()
    record = lock.get_lock_object(_to_v1lease(ours))
    assert record.holder_identity == "a"
    assert record.lease_duration == "15"
    assert lock.time_str_to_iso(record.renew_time) == parse_micro_time(ours["spec"]["renewTime"])
    assert lock.time_str_to_iso(record.acquire_time) == parse_micro_time(ours["spec"]["acquireTime"])
    world.tasks["a"].cancel()
    await settle()
    released = lock.get_lock_object(_to_v1lease(await world.lease()))
    assert released.holder_identity is None
    assert released.lease_duration == "1"


@pytest.mark.parametrize("micros", [456789, 0], ids=["fractional seconds", "whole second (isoformat drops .000000)"])
def test_we_read_python_client_lease(micros: int) -> None:
    """A Lease as the Python client's LeaseLock serialises it (datetime.isoformat, +00:00) reads as the same
    instants; leaseTransitions absent reads as 0 (upstream zero value)."""
    lock = _python_lock()
    local = datetime(2026, 8, 29, 1, 2, 3, micros, tzinfo=UTC).astimezone().replace(tzinfo=None)
    record = K8sRecord("py", "17", str(local), str(local))
    body = k8s.V1Lease(metadata=k8s.V1ObjectMeta(name=NAME, namespace=NS), spec=lock.get_lease_spec(record))
    wire = k8s.ApiClient().sanitize_for_serialization(body)
    ours = record_from_lease(json.loads(json.dumps(wire)))
    assert ours.holder_identity == "py"
    assert ours.lease_duration_seconds == 17
    assert ours.leader_transitions == 0
    assert ours.acquire_time == ours.renew_time == datetime(2026, 8, 29, 1, 2, 3, micros, tzinfo=UTC)
