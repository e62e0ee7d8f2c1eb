"""The event recorder against client-go's tools/record (event.go, events_cache.go), on an in-process API server.

Each test names the upstream behaviour it pins. Time is a FakeClock; retries sleep on it, never for real.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from typing import Any

import pytest

from kubeplane.api.meta import format_time
from kubeplane.api.resources import ResourceInfo
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ClientError
from kubeplane.client.events import (
    COMBINED_PREFIX,
    CorrelatorConfig,
    EventCorrelator,
    EventRecorder,
    EventRecorderConfig,
    event_key,
)
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient

pytestmark = pytest.mark.timeout(20)

POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "uid": "uid-p", "resourceVersion": "7"},
}
NODE: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "uid-n"}}


class FlakyClient(LocalClient):
    """A LocalClient whose writes fail with ``error`` while ``should_fail(event)`` says so; counts writes."""

    def __init__(self, registry: Any, *, fail_reasons: set[str], error: Exception) -> None:
        super().__init__(registry, owns_registry=True)
        self.fail_reasons = fail_reasons
        self.error = error
        self.creates: list[str] = []

    async def create(
        self,
        resource: ResourceInfo,
        obj: Obj,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
    ) -> Obj:
        self.creates.append(str(obj.get("reason")))
        if obj.get("reason") in self.fail_reasons:
            raise self.error
        return await super().create(resource, obj, namespace=namespace, subresource=subresource, name=name)


async def flaky_client(*, fail_reasons: set[str], error: Exception | None = None) -> FlakyClient:
    base = await LocalClient.in_memory()
    return FlakyClient(base.registry, fail_reasons=fail_reasons, error=error or ClientError("connection refused"))


async def events(client: LocalClient, namespace: str = "default") -> list[Obj]:
    items: list[Obj] = (await client.list(client.resource("events"), namespace=namespace))["items"]
    return sorted(items, key=lambda e: str(e["metadata"]["name"]))


async def until_sleeping(clock: FakeClock) -> None:
    for _ in range(200):
        if clock.pending:
            return
        await asyncio.sleep(0)
    raise AssertionError("the recorder never slept on the clock")


# --- event.go: makeEvent, recordToSink ---------------------------------------------------------------------


async def test_same_event_twice_is_one_event_with_count_two(client: LocalClient, clock: FakeClock) -> None:
    """EventLogger: a repeat of (object, reason, message, type, source) patches count and lastTimestamp."""
    recorder = EventRecorder(client, component="kubelet", host="node-1", clock=clock)
    first = clock.now()
    await recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container")
    await recorder.flush()
    await clock.advance(5)
    await recorder.event(POD, "Warning", "BackOff", "Back-off restarting failed container")
    await recorder.close()
    [event] = await events(client)
    assert event["metadata"]["name"] == f"p.{int(first * 1e9):x}"
    assert re.fullmatch(r"p\.[0-9a-f]{16}", event["metadata"]["name"])
    assert event["count"] == 2
    assert (event["firstTimestamp"], event["lastTimestamp"]) == (format_time(first), format_time(first + 5))
    assert event["involvedObject"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": "uid-p",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    assert event["source"] == {"component": "kubelet", "host": "node-1"}
    assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", "node-1")
    assert (event["type"], event["reason"]) == ("Warning", "BackOff")


@pytest.mark.parametrize(
    ("second_obj", "second"),
    [
        (POD, ("Normal", "Pulled", "m")),
        (POD, ("Normal", "Started", "other message")),
        (POD, ("Warning", "Started", "m")),
        ({**POD, "metadata": {**POD["metadata"], "name": "q", "uid": "uid-q"}}, ("Normal", "Started", "m")),
    ],
    ids=["other-reason", "other-message", "other-type", "other-object"],
)
async def test_different_events_are_separate(
    client: LocalClient, clock: FakeClock, second_obj: Obj, second: tuple[str, str, str]
) -> None:
    """getEventKey: reason, message, type and involved object all tell events apart."""
    recorder = EventRecorder(client, component="c", clock=clock)
    await recorder.event(POD, "Normal", "Started", "m")
    await recorder.event(second_obj, *second)
    await recorder.close()
    found = await events(client)
    assert [e["count"] for e in found] == [1, 1]
    assert len({e["metadata"]["name"] for e in found}) == 2  # same FakeClock instant, still unique names


async def test_cluster_scoped_object_event_goes_to_default(client: LocalClient, clock: FakeClock) -> None:
    """makeEvent: an object without namespace gets its event in "default"; the reference has no namespace."""
    recorder = EventRecorder(client, component="node-controller", clock=clock, reporting_instance="ctrl-0")
    await recorder.event(NODE, "Normal", "RegisteredNode", "Node node-1 event: Registered Node node-1")
    await recorder.close()
    [event] = await events(client)
    assert "namespace" not in event["involvedObject"]
    assert event["source"] == {"component": "node-controller"}
    assert (event["reportingComponent"], event["reportingInstance"]) == ("node-controller", "ctrl-0")


async def test_repeat_of_a_deleted_event_creates_it_again(client: LocalClient, clock: FakeClock) -> None:
    """recordEvent: a PATCH answered 404 falls back to a POST of the whole event (count kept)."""
    recorder = EventRecorder(client, component="c", clock=clock)
    await recorder.event(POD, "Normal", "Started", "m")
    await recorder.flush()
    [event] = await events(client)
    await client.delete(client.resource("events"), event["metadata"]["name"], namespace="default")
    await recorder.event(POD, "Normal", "Started", "m")
    await recorder.close()
    [again] = await events(client)
    assert (again["metadata"]["name"], again["count"]) == (event["metadata"]["name"], 2)


@pytest.mark.parametrize(
    ("obj", "event_type"),
    [(POD, "Error"), ({"kind": "Pod", "metadata": {}}, "Normal"), ({"metadata": {"name": "p"}}, "Normal")],
    ids=["unsupported-type", "no-name", "no-kind"],
)
async def test_invalid_events_are_logged_not_raised(
    client: LocalClient, clock: FakeClock, caplog: pytest.LogCaptureFixture, obj: Obj, event_type: str
) -> None:
    """generateEvent: an unsupported type or an object without a reference is logged and not reported."""
    recorder = EventRecorder(client, component="c", clock=clock)
    with caplog.at_level(logging.ERROR, logger="kubeplane.client.events"):
        await recorder.event(obj, event_type, "R", "m")
    await recorder.close()
    assert await events(client) == []
    assert caplog.records


# --- retries (recordToSink / recordEvent) ------------------------------------------------------------------


async def test_server_rejection_is_not_retried(client: LocalClient, clock: FakeClock) -> None:
    """recordEvent: a StatusError (here 404, namespace missing) is dropped at once; later events still go."""
    pod = {**POD, "metadata": {**POD["metadata"], "namespace": "missing"}}
    recorder = EventRecorder(client, component="c", clock=clock)
    await recorder.event(pod, "Normal", "Started", "m")
    await recorder.event(POD, "Normal", "Started", "m")
    await recorder.flush()
    assert clock.pending == 0  # no retry sleep
    await recorder.close()
    assert [e["involvedObject"]["namespace"] for e in await events(client)] == ["default"]


async def test_connection_failures_are_retried_on_the_clock(clock: FakeClock) -> None:
    """recordToSink: retry after sleepDuration (first sleep randomised) until the write succeeds."""
    client = await flaky_client(fail_reasons={"Started"})
    recorder = EventRecorder(client, component="c", clock=clock, rng=random.Random(1))
    await recorder.event(POD, "Normal", "Started", "m")
    for _ in range(3):
        await until_sleeping(clock)
        await clock.advance(10)
    client.fail_reasons.clear()
    await until_sleeping(clock)
    await clock.advance(10)
    await recorder.close()
    assert client.creates == ["Started"] * 5
    assert [e["count"] for e in await events(client)] == [1]
    await client.close()


async def test_retry_limit_drops_the_event_and_moves_on(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    """maxTriesPerEvent = 12: then "retry limit exceeded" and the next event is written."""
    client = await flaky_client(fail_reasons={"Bad"})
    recorder = EventRecorder(client, component="c", clock=clock)
    await recorder.event(POD, "Warning", "Bad", "m")
    await recorder.event(POD, "Normal", "Good", "m")
    with caplog.at_level(logging.ERROR, logger="kubeplane.client.events"):
        for _ in range(11):
            await until_sleeping(clock)
            await clock.advance(10)
        await recorder.flush()
    assert client.creates == ["Bad"] * 12 + ["Good"]
    assert "retry limit exceeded" in caplog.text
    await recorder.close()
    assert [e["reason"] for e in await events(client)] == ["Good"]
    await client.close()


async def test_close_cuts_a_retry_sleep_short(clock: FakeClock) -> None:
    """Shutdown cancels a pending retry sleep; close() returns without the clock moving."""
    client = await flaky_client(fail_reasons={"Bad"})
    recorder = EventRecorder(client, component="c", clock=clock)
    await recorder.event(POD, "Warning", "Bad", "m")
    await until_sleeping(clock)
    await asyncio.wait_for(recorder.close(), 1)
    assert client.creates == ["Bad"]  # no further try once closed
    await client.close()


# --- never blocking the caller -----------------------------------------------------------------------------


async def test_event_never_waits_for_the_server_and_the_queue_is_bounded(
    client: LocalClient, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """maxQueuedEvents + DropIfChannelFull: event() returns at once; a full queue drops the newest."""
    recorder = EventRecorder(client, component="c", clock=clock, config=EventRecorderConfig(max_queued=2))
    with caplog.at_level(logging.WARNING, logger="kubeplane.client.events"):
        for reason in ("A", "B", "C"):
            await recorder.event(POD, "Normal", reason, "m")  # the writer has not run yet
    assert "queue full" in caplog.text
    await recorder.close()
    assert sorted(e["reason"] for e in await events(client)) == ["A", "B"]


async def test_close_flushes_and_later_events_are_dropped(client: LocalClient, clock: FakeClock) -> None:
    recorder = EventRecorder(client, component="c", clock=clock)
    await recorder.event(POD, "Normal", "A", "m")
    await recorder.close()
    await recorder.event(POD, "Normal", "B", "m")
    await recorder.close()
    assert [e["reason"] for e in await events(client)] == ["A"]


# --- events_cache.go: aggregation and spam filter ----------------------------------------------------------


async def test_ten_similar_events_are_combined(client: LocalClient, clock: FakeClock) -> None:
    """EventAggregator: the 10th distinct message of one reason in 10 minutes becomes a combined event."""
    recorder = EventRecorder(client, component="c", clock=clock)
    for i in range(11):
        await recorder.event(POD, "Warning", "FailedMount", f"volume {i} not found")
    await recorder.close()
    found = await events(client)
    combined = [e for e in found if e["message"].startswith(COMBINED_PREFIX)]
    assert len(found) == 10  # 9 single events, 1 combined
    assert [(e["message"], e["count"]) for e in combined] == [(COMBINED_PREFIX + "volume 10 not found", 2)]
    assert combined[0]["reason"] == "FailedMount"


@pytest.mark.parametrize(("gap", "combined"), [(600.0, True), (600.5, False)], ids=["within-600s", "after-600s"])
async def test_aggregation_window_is_ten_minutes(clock: FakeClock, gap: float, combined: bool) -> None:
    """EventAggregate: a record whose last event is more than maxIntervalInSeconds (600 s) old starts over."""
    correlator = EventCorrelator(clock=clock)

    def event(i: int) -> Obj:
        return {
            "metadata": {"name": f"p.{i}", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "R",
            "message": f"m{i}",
            "type": "Normal",
            "count": 1,
            "firstTimestamp": "t",
            "lastTimestamp": "t",
        }

    for i in range(9):
        result = correlator.correlate(event(i))
        assert result is not None
        assert result.event["message"] == f"m{i}"
        await clock.advance(60)
    await clock.advance(gap - 60)
    result = correlator.correlate(event(9))
    assert result is not None
    assert result.event["message"] == (COMBINED_PREFIX + "m9" if combined else "m9")


async def test_spam_filter_allows_a_burst_of_25_then_one_per_5_minutes(client: LocalClient, clock: FakeClock) -> None:
    """EventSourceObjectSpamFilter: per source+object token bucket, burst 25, qps 1/300."""
    recorder = EventRecorder(client, component="c", clock=clock)
    for i in range(27):
        await recorder.event(POD, "Normal", f"Reason{i}", "m")
    await recorder.event(NODE, "Normal", "Other", "m")  # another object has its own bucket
    await recorder.flush()
    assert len(await events(client)) == 26
    await clock.advance(300)
    await recorder.event(POD, "Normal", "Late", "m")
    await recorder.event(POD, "Normal", "TooSoon", "m")
    await recorder.close()
    reasons = {e["reason"] for e in await events(client)}
    assert len(reasons) == 27
    assert "Late" in reasons
    assert not {"Reason25", "Reason26", "TooSoon"} & reasons


def test_correlator_patch_is_the_merge_of_count_time_and_message() -> None:
    """eventObserve: the repeat keeps name and firstTimestamp; the patch carries count, lastTimestamp, message."""
    clock = FakeClock()
    correlator = EventCorrelator(clock=clock, config=CorrelatorConfig(spam_burst=100))
    event: Obj = {
        "metadata": {"name": "p.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R",
        "message": "m",
        "type": "Normal",
        "count": 1,
        "firstTimestamp": "T1",
        "lastTimestamp": "T1",
    }
    first = correlator.correlate(event)
    assert first is not None
    assert first.patch is None
    correlator.update_state({**event, "metadata": {**event["metadata"], "resourceVersion": "5"}})
    repeat = {
        **event,
        "metadata": {"name": "p.2", "namespace": "default"},
        "firstTimestamp": "T2",
        "lastTimestamp": "T2",
    }
    second = correlator.correlate(repeat)
    assert second is not None
    assert second.patch == {"count": 2, "lastTimestamp": "T2", "message": "m"}
    assert (second.event["metadata"]["name"], second.event["firstTimestamp"]) == ("p.1", "T1")
    assert event_key(second.event) == event_key(event)
