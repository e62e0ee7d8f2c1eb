"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Mirrors ``k8s.io/client-go/tools/leaderelection`` (``leaderelection.go``) and its ``resourcelock/leaselock.go``:
candidates poll one Lease; the holder renews it every ``retry_period``; a candidate takes it over only after the
record has not changed for the record's ``leaseDurationSeconds``, measured on the candidate's *own* clock from
when it first observed that exact record (upstream's ``observedTime``). Timestamps in the Lease are written for
people and other clients, never trusted for decisions, so clock *skew* between candidates does not matter; only
clock *rates* must roughly agree. Every write carries ``metadata.resourceVersion``, so two candidates racing to
take an expired Lease cannot both win: the loser gets a Conflict and re-reads on its next attempt.

Why two leaders never overlap (the invariant ``run`` keeps). Upstream validates ``leaseDuration > renewDeadline``
but starts each renew round's ``renewDeadline`` a ``retryPeriod`` after the last success, so its leader may act
up to ``retryPeriod + renewDeadline`` after it, which a valid config (15/14/2) lets exceed ``leaseDuration``. We
measure the deadline from the last good renew itself:

* Let ``S`` be the instant (our monotonic clock) at which we *sent* our last write that we know succeeded. The
  server committed it at ``C >= S``, and every other candidate first observes it at ``O >= C``.
* Another candidate can only succeed in writing a new holder if the record it last read is still the newest one
  (optimistic concurrency). That is our record from ``S`` or a later write of ours, which pushes everything later.
  It therefore takes over no earlier than ``O + leaseDurationSeconds >= S + lease_duration``.
* We stop leading at ``S + renew_deadline``: a watchdog timer, independent of any pending request, marks us not
  leader and cancels the leader work at that instant. Each renew attempt is itself timed out at that instant.
* ``renew_deadline < lease_duration`` (validated), so our work is cancelled ``lease_duration - renew_deadline``
  before anyone else can start. That margin absorbs cancellation latency and clock-rate differences. The Lease
  stores whole seconds (upstream truncates too): the argument needs ``int(lease_duration) > renew_deadline``.

This is not fencing (upstream says the same): leader work that ignores cancellation, or a process paused past
the margin, can still overlap. ``release_on_cancel`` writes an empty holder with ``leaseDurationSeconds: 1`` after
the leader work has finished (upstream releases first, then cancels the work), so others take over at their next
attempt instead of waiting a full lease. A renew that finds another holder ends leadership at once (upstream
keeps polling until the deadline).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

from kubeplane.api.meta import format_micro_time, parse_micro_time, parse_time
from kubeplane.api.views import spec_of

from .clock import Clock
from .errors import ClientError, NotFoundError
from .interface import Client, Obj

__all__ = [
    "JITTER_FACTOR",
    "LeaderElectionConfig",
    "LeaderElectionRecord",
    "LeaderElector",
    "lease_spec_from_record",
    "record_from_lease",
    "validate_config",
]

log = logging.getLogger(__name__)

JITTER_FACTOR: Final = 1.2
"""Upstream ``JitterFactor``: acquire retries wait ``retry_period * (1 + U[0, 1) * JitterFactor)``."""

_T = TypeVar("_T")
# failures of one request: the attempt fails and is retried (upstream logs them and returns false)
_REQUEST_FAILURES = (ClientError, OSError)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """Upstream ``LeaderElectionConfig`` for a Lease lock. Durations in seconds; validated on construction.

    ``on_started_leading(stopped)`` runs as a task while we lead; ``stopped`` is set and the task cancelled when
    leadership ends. If it returns, we keep the lease until cancelled (upstream); if it raises, leadership ends and
    ``run`` re-raises. ``on_stopped_leading()`` runs whenever ``run`` ends, even if we never led (upstream's
    deferred call). ``on_new_leader(identity)`` runs when the observed holder changes, ``""`` after a release.
    """

    name: str
    namespace: str
    identity: str
    on_started_leading: Callable[[asyncio.Event], Awaitable[None]]
    on_stopped_leading: Callable[[], None]
    on_new_leader: Callable[[str], None] | None = None
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = False

    def __post_init__(self) -> None:
        problem = validate_config(self)
        if problem:
            raise ValueError(problem)


def validate_config(config: LeaderElectionConfig) -> str:
    """Upstream ``NewLeaderElector``'s checks, in its order and with its messages; ``""`` if valid."""
    if config.lease_duration <= config.renew_deadline:
        return "leaseDuration must be greater than renewDeadline"
    if config.renew_deadline <= JITTER_FACTOR * config.retry_period:
        return "renewDeadline must be greater than retryPeriod*JitterFactor"
    if config.lease_duration <= 0:
        return "leaseDuration must be greater than zero"
    if config.renew_deadline <= 0:
        return "renewDeadline must be greater than zero"
    if config.retry_period <= 0:
        return "retryPeriod must be greater than zero"
    if not config.identity:
        return "Lock identity is empty"
    if not config.name or not config.namespace:  # ours: upstream's LeaseMeta is not checked until the API call
        return "lease name and namespace must not be empty"
    return ""


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """Upstream ``resourcelock.LeaderElectionRecord``: the election state a Lease spec holds."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0


def _parse_lease_time(value: object) -> datetime | None:
    # MicroTime on the wire; be lenient on read (the official Python client drops the fraction when it is zero).
    # The times are informational: an unreadable one must not stop the election.
    if not isinstance(value, str) or not value:
        return None
    for parse in (parse_micro_time, parse_time):
        try:
            return parse(value)
        except ValueError:
            continue
    return None


def record_from_lease(lease: Mapping[str, Any]) -> LeaderElectionRecord:
    """Upstream ``LeaseSpecToLeaderElectionRecord``: absent fields are zero values."""
    spec = spec_of(lease)
    return LeaderElectionRecord(
        holder_identity=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_parse_lease_time(spec.get("acquireTime")),
        renew_time=_parse_lease_time(spec.get("renewTime")),
        leader_transitions=int(spec.get("leaseTransitions") or 0),
    )


def lease_spec_from_record(record: LeaderElectionRecord) -> Obj:
    """Upstream ``LeaderElectionRecordToLeaseSpec``: all five fields, times as MicroTime (null when unset)."""
    return {
        "holderIdentity": record.holder_identity,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "acquireTime": None if record.acquire_time is None else format_micro_time(record.acquire_time),
        "renewTime": None if record.renew_time is None else format_micro_time(record.renew_time),
        "leaseTransitions": record.leader_transitions,
    }


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


class LeaderElector:
    """One candidate. ``run`` acquires, leads, and returns when leadership is lost (or raises when cancelled).

    State: ``_observed`` is the last record read or written and ``_observed_at`` (monotonic) when it was first
    seen; ``_lease`` the newest Lease object we know (its resourceVersion guards our writes); ``_deadline`` is
    ``S + renew_deadline`` (module docstring). We lead iff ``_leading`` and the deadline has not passed.
    """

    def __init__(self, client: Client, config: LeaderElectionConfig, *, clock: Clock, rng: random.Random) -> None:
        self._client = client
        self._config = config
        self._clock = clock
        self._rng = rng
        self._leases = client.resource("leases.coordination.k8s.io")
        self._lease: Obj | None = None
        self._observed = LeaderElectionRecord()
        self._observed_at = 0.0
        self._reported_leader = ""
        self._deadline = float("-inf")
        self._leading = False

    @property
    def config(self) -> LeaderElectionConfig:
        return self._config

    @property
    def leader_identity(self) -> str:
        """Holder of the last observed record, ``""`` if none (upstream ``GetLeader``)."""
        return self._observed.holder_identity

    @property
    def observed_record(self) -> LeaderElectionRecord:
        return self._observed

    def is_leader(self) -> bool:
        """True while our leader work may run: from acquiring until the renew deadline passes or we stop."""
        return self._leading and self._clock.monotonic() < self._deadline

    # --- run -------------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire, lead until renewal fails, then stop the work, release if configured, ``on_stopped_leading``.

        Cancelling the task running ``run`` is the clean shutdown: the work is cancelled and awaited, the lease
        released (``release_on_cancel``), and the cancellation propagates.
        """
        try:
            await self._acquire()
            await self._lead()
        finally:
            self._config.on_stopped_leading()

    async def _acquire(self) -> None:
        """Upstream ``acquire``: ``wait.JitterUntil`` (sliding) around ``tryAcquireOrRenew`` until it succeeds."""
        config = self._config
        while True:
            if await self._attempt(limit=config.renew_deadline) and self._clock.monotonic() < self._deadline:
                log.info("%s: acquired lease %s/%s", config.identity, config.namespace, config.name)
                return
            await self._clock.sleep(config.retry_period * (1.0 + self._rng.random() * JITTER_FACTOR))

    async def _lead(self) -> None:
        """Run the work and the renew loop under a watchdog that ends leadership at ``_deadline``."""
        config = self._config
        stopped = asyncio.Event()
        self._leading = True
        work: asyncio.Future[None] = asyncio.ensure_future(config.on_started_leading(stopped))
        renewer = asyncio.create_task(self._renew_loop(), name=f"leader-renew:{config.identity}")
        failure: BaseException | None = None
        try:
            while (remaining := self._deadline - self._clock.monotonic()) > 0:
                timer = asyncio.ensure_future(self._clock.sleep(remaining))
                waiting: set[asyncio.Future[Any]] = {timer, renewer}
                if not work.done():
                    waiting.add(work)
                try:
                    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    timer.cancel()
                if renewer.done():  # saw another holder, or a bug in the renew path
                    failure = None if renewer.cancelled() else renewer.exception()
                    break
                if work.done() and not work.cancelled() and work.exception() is not None:
                    failure = work.exception()
                    break
            if self._leading and failure is None:
                log.warning("%s: lost lease %s/%s", config.identity, config.namespace, config.name)
        finally:
            # Order matters: not leader, work stopped and awaited, renewing stopped, then release.
            self._leading = False
            stopped.set()
            work.cancel()
            renewer.cancel()
            await asyncio.wait({work, renewer})
            _consume(renewer)
            if failure is None and not work.cancelled() and work.exception() is not None:
                log.error("%s: leader work failed while stopping", config.identity, exc_info=work.exception())
            if config.release_on_cancel:
                await self._release()
        if failure is not None:
            raise failure

    async def _renew_loop(self) -> None:
        """Upstream ``renew``: ``wait.Until(retry_period)`` around polling ``tryAcquireOrRenew`` every
        ``retry_period``. Time-based loss is the watchdog's job; this returns only when another holder is seen."""
        period = self._config.retry_period
        while True:
            await self._clock.sleep(period)
            while not await self._attempt(limit=self._deadline - self._clock.monotonic()):
                if self._observed.holder_identity != self._config.identity:
                    return
                await self._clock.sleep(period)

    async def _attempt(self, *, limit: float) -> bool:
        """One ``tryAcquireOrRenew`` bounded by ``limit`` seconds; on success move the deadline to send time + RD."""
        if limit <= 0:
            return False
        sent = self._clock.monotonic()
        ok = await self._bounded(self._try_acquire_or_renew(now=self._clock.now()), limit)
        if ok:
            self._deadline = max(self._deadline, sent + self._config.renew_deadline)
        self._report_transition()
        return bool(ok)

    async def _bounded(self, coro: Coroutine[Any, Any, _T], limit: float) -> _T | None:
        """Await ``coro`` for at most ``limit`` seconds of the injected clock; None (and cancelled) on timeout."""
        task = asyncio.ensure_future(coro)
        timer = asyncio.ensure_future(self._clock.sleep(limit))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()
                task.add_done_callback(_consume)
                await asyncio.wait({task})
        if task.cancelled():
            return None
        return task.result()

    # --- the record ------------------------------------------------------------------------------------------

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self._observed = record
        self._observed_at = self._clock.monotonic()

    def _observed_valid(self) -> bool:
        """Upstream ``isLeaseValid``: the observed record changed less than its lease duration ago."""
        return self._observed_at + self._observed.lease_duration_seconds > self._clock.monotonic()

    def _holds_observed(self) -> bool:
        return self._observed.holder_identity == self._config.identity

    def _report_transition(self) -> None:
        """Upstream ``maybeReportTransition``."""
        holder = self._observed.holder_identity
        if holder == self._reported_leader:
            return
        self._reported_leader = holder
        if self._config.on_new_leader is not None:
            self._config.on_new_leader(holder)

    async def _write(self, record: LeaderElectionRecord) -> bool:
        """Replace the spec of the newest Lease we know (upstream ``LeaseLock.Update``); Conflict -> False."""
        assert self._lease is not None
        body = {**self._lease, "spec": lease_spec_from_record(record)}
        try:
            updated = await self._client.update(self._leases, body, namespace=self._config.namespace)
        except _REQUEST_FAILURES as exc:
            log.info("%s: failed to update lease: %s", self._config.identity, exc)
            return False
        self._lease = updated
        self._set_observed(record_from_lease(updated))
        return True

    async def _try_acquire_or_renew(self, *, now: float) -> bool:
        """Upstream ``tryAcquireOrRenew``: fast path for the holder, else read, judge expiry, write."""
        config = self._config
        desired = LeaderElectionRecord(
            holder_identity=config.identity,
            lease_duration_seconds=int(config.lease_duration),
            acquire_time=_parse_lease_time(format_micro_time(now)),
            renew_time=_parse_lease_time(format_micro_time(now)),
        )
        # 1. fast path: the holder updates optimistically from the record it wrote last
        if self._lease is not None and self._holds_observed() and self._observed_valid():
            renewal = LeaderElectionRecord(
                holder_identity=desired.holder_identity,
                lease_duration_seconds=desired.lease_duration_seconds,
                acquire_time=self._observed.acquire_time,
                renew_time=desired.renew_time,
                leader_transitions=self._observed.leader_transitions,
            )
            if await self._write(renewal):
                return True
        # 2. obtain or create the record
        try:
            lease = await self._client.get(self._leases, config.name, namespace=config.namespace)
        except NotFoundError:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": config.name, "namespace": config.namespace},
                "spec": lease_spec_from_record(desired),
            }
            try:
                created = await self._client.create(self._leases, body, namespace=config.namespace)
            except _REQUEST_FAILURES as exc:
                log.info("%s: failed to create lease: %s", config.identity, exc)
                return False
            self._lease = created
            self._set_observed(record_from_lease(created))
            return True
        except _REQUEST_FAILURES as exc:
            log.info("%s: failed to read lease: %s", config.identity, exc)
            return False
        # 3. a changed record restarts the expiry clock; a valid lease held by someone else is left alone
        self._lease = lease
        record = record_from_lease(lease)
        if record != self._observed:
            self._set_observed(record)
        if record.holder_identity and self._observed_valid() and not self._holds_observed():
            return False
        # 4. take over (a new transition) or renew (keep acquireTime and the count)
        if self._holds_observed():
            desired = LeaderElectionRecord(
                holder_identity=desired.holder_identity,
                lease_duration_seconds=desired.lease_duration_seconds,
                acquire_time=record.acquire_time,
                renew_time=desired.renew_time,
                leader_transitions=record.leader_transitions,
            )
        else:
            desired = LeaderElectionRecord(
                holder_identity=desired.holder_identity,
                lease_duration_seconds=desired.lease_duration_seconds,
                acquire_time=desired.acquire_time,
                renew_time=desired.renew_time,
                leader_transitions=record.leader_transitions + 1,
            )
        return await self._write(desired)

    async def _release(self) -> None:
        """Upstream ``release``: if we hold the observed record, write an empty holder, duration 1 s, times now."""
        if not self._holds_observed() or self._lease is None:
            return
        stamp = _parse_lease_time(format_micro_time(self._clock.now()))
        record = LeaderElectionRecord(
            lease_duration_seconds=1,
            acquire_time=stamp,
            renew_time=stamp,
            leader_transitions=self._observed.leader_transitions,
        )
        if await self._bounded(self._write(record), self._config.renew_deadline):
            log.info("%s: released lease %s/%s", self._config.identity, self._config.namespace, self._config.name)
        self._report_transition()
