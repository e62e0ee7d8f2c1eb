"""The events.k8s.io/v1 recorder against client-go's tools/events (recorder.go makeEvent, event_broadcaster.go
recordToSink, finishSeries, refreshExistingEventSeries, recordEvent), on an in-process API server.

Each test names the upstream behaviour it pins. Time is a FakeClock; the periodic passes sleep on it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.api.meta import format_micro_time
from kubeplane.client.clock import FakeClock
from kubeplane.client.event_series import SeriesEventRecorder, _copy_tree, series_key
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient

pytestmark = pytest.mark.timeout(20)

POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default", "uid": "uid-p", "resourceVersion": "7"},
}
PREEMPTOR: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hi", "namespace": "default", "uid": "u-hi"}}
NODE: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "uid": "uid-n"}}


def recorder(client: LocalClient, clock: FakeClock) -> SeriesEventRecorder:
    return SeriesEventRecorder(
        client, reporting_controller="default-scheduler", reporting_instance="default-scheduler-h", clock=clock
    )


async def events(client: LocalClient, resource: str = "events.events.k8s.io") -> list[Obj]:
    items: list[Obj] = (await client.list(client.resource(resource), namespace="default"))["items"]
    return sorted(items, key=lambda e: str(e["metadata"]["name"]))


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


async def started(r: SeriesEventRecorder, clock: FakeClock) -> None:
    """Let the two periodic passes run their first step and go to sleep on the clock (before time moves)."""
    await r.flush()
    for _ in range(200):
        if clock.pending >= 2:
            return
        await asyncio.sleep(0)
    raise AssertionError("the periodic passes never slept on the clock")


async def until_count(client: LocalClient, count: int) -> None:
    """Wait (bounded, real time: the API server may offload a write to a thread) until the one event's series
    count on the server is ``count`` (the Pod's: the only one in these tests)."""
    for _ in range(500):
        found = [e.get("series", {}).get("count") for e in await events(client) if e["regarding"]["kind"] == "Pod"]
        if found == [count]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"series count {found}, expected [{count}]")


async def test_an_event_is_an_events_k8s_io_object_as_make_event_builds_it(
    client: LocalClient, clock: FakeClock
) -> None:
    """recorder.go makeEvent: name <regarding>.<hex nanos>, eventTime now, reporting controller/instance, action,
    reason, regarding, note, type; no series and no deprecated core fields."""
    r = recorder(client, clock)
    r.record(POD, "Normal", "Scheduled", "Successfully assigned default/p to n", action="Binding")
    await r.flush()
    [event] = await events(client)
    assert event["metadata"]["name"] == f"p.{int(clock.now() * 1e9):x}"
    assert event["eventTime"] == format_micro_time(clock.now())
    assert {k: event.get(k) for k in ("reportingController", "reportingInstance", "action", "reason", "type")} == {
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-h",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
    }
    assert event["regarding"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "p",
        "uid": "uid-p",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    assert event["note"] == "Successfully assigned default/p to n"
    assert "series" not in event
    assert "deprecatedCount" not in event
    assert "deprecatedSource" not in event
    # the core/v1 view kubectl describe reads: involvedObject, message, reportingComponent; no source, no count
    [core] = await events(client, "events")
    assert core["involvedObject"]["name"] == "p"
    assert core["message"] == event["note"]
    assert core["reportingComponent"] == "default-scheduler"
    assert not core.get("source")
    assert not core.get("count")
    assert not core.get("lastTimestamp")
    await r.close()


async def test_a_cluster_scoped_object_reports_in_default_and_related_is_kept(
    client: LocalClient, clock: FakeClock
) -> None:
    """makeEvent: namespace "default" when the regarding object has none; Eventf's related reference (the
    preemptor of a Preempted event)."""
    r = recorder(client, clock)
    r.record(NODE, "Warning", "Something", "n", action="Checking")
    r.record(POD, "Normal", "Preempted", "Preempted by pod u-hi on node n", action="Preempting", related=PREEMPTOR)
    await r.flush()
    node_event, pod_event = sorted(await events(client), key=lambda e: str(e["regarding"]["kind"]))
    assert node_event["metadata"]["namespace"] == "default"
    assert node_event["regarding"]["kind"] == "Node"
    assert pod_event["related"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "hi",
        "uid": "u-hi",
        "apiVersion": "v1",
    }
    await r.close()


async def test_an_isomorphic_event_makes_a_series_and_later_ones_only_count(
    client: LocalClient, clock: FakeClock
) -> None:
    """recordToSink: the second isomorphic event sets series {count 2, lastObservedTime} and is patched at once;
    a third only increments the cached count (no write). The note is not part of the key (getKey)."""
    r = recorder(client, clock)
    r.record(POD, "Warning", "FailedScheduling", "0/3 nodes are available", action="Scheduling")
    await r.flush()
    await clock.advance(5)
    r.record(POD, "Warning", "FailedScheduling", "0/4 nodes are available", action="Scheduling")
    await r.flush()
    [event] = await events(client)
    assert event["series"] == {"count": 2, "lastObservedTime": format_micro_time(clock.now())}
    assert event["note"] == "0/3 nodes are available"  # the first note stays
    version = event["metadata"]["resourceVersion"]
    await clock.advance(5)
    r.record(POD, "Warning", "FailedScheduling", "0/3 nodes are available", action="Scheduling")
    await r.flush()
    [event] = await events(client)
    assert event["metadata"]["resourceVersion"] == version  # not written
    [cached] = [e for e in r._cache.values() if e.get("series")]
    assert cached["series"]["count"] == 3
    await r.close()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


@given(JSON)
def test_the_cache_step_copies_as_deep_copy_does(tree: Any) -> None:
    """recordToSink writes a DeepCopy of the cached event: the copy (``_copy_tree``, deepcopy's result for JSON
    trees) equals the event and shares no dict or list with it, so the cache counting on cannot reach a write."""
    copied = _copy_tree(tree)
    assert copied == tree

    def containers(value: Any) -> list[int]:
        if isinstance(value, dict):
            return [id(value), *(i for v in value.values() for i in containers(v))]
        if isinstance(value, list):
            return [id(value), *(i for v in value for i in containers(v))]
        return []

    assert not set(containers(copied)) & set(containers(tree))


def test_the_key_is_type_action_reason_reporter_regarding_and_related() -> None:
    """getKey: eventType, action, reason, reportingController, reportingInstance, regarding, related."""
    base: Obj = {
        "type": "Normal",
        "action": "A",
        "reason": "R",
        "reportingController": "c",
        "reportingInstance": "i",
        "regarding": {"kind": "Pod", "name": "p"},
        "note": "x",
        "eventTime": "t1",
    }
    assert series_key(base) == series_key({**base, "note": "y", "eventTime": "t2"})
    for change in (
        {"type": "Warning"},
        {"action": "B"},
        {"reason": "S"},
        {"reportingController": "d"},
        {"reportingInstance": "j"},
        {"regarding": {"kind": "Pod", "name": "q"}},
        {"related": {"kind": "Pod", "name": "hi"}},
    ):
        changed: dict[str, Any] = {**base, **change}
        assert series_key(changed) != series_key(base), change


async def test_finish_series_writes_the_final_count_and_forgets_it(client: LocalClient, clock: FakeClock) -> None:
    """finishSeries (every 6 min): a series not observed for 6 minutes is written with its count and removed from
    the cache, so the next isomorphic event starts a new Event; a singleton older than 6 minutes is forgotten."""
    r = recorder(client, clock)
    for _ in range(3):
        r.record(POD, "Warning", "FailedScheduling", "m", action="Scheduling")
        await started(r, clock)
        await clock.advance(1)
    r.record(NODE, "Normal", "Once", "m", action="Checking")
    await r.flush()
    for _ in range(13):  # past the pass at 12 min: the series' last observation (t=2 s) is then 6 min old
        await clock.advance(60)
        await settle()
    await until_count(client, 3)  # the pass at 12 minutes wrote the final count
    [event] = [e for e in await events(client) if e["regarding"]["kind"] == "Pod"]
    assert r._cache == {}
    r.record(POD, "Warning", "FailedScheduling", "m", action="Scheduling")
    r.record(NODE, "Normal", "Once", "m", action="Checking")
    await r.flush()
    assert len(await events(client)) == 4  # both started afresh: new objects, no series
    assert all("series" not in e for e in await events(client) if e["metadata"]["name"] != event["metadata"]["name"])
    await r.close()


async def test_refresh_writes_every_series_again(client: LocalClient, clock: FakeClock) -> None:
    """refreshExistingEventSeries (every 30 min): a series still observed (so never finished by the 6-minute
    pass) is written with its current count."""
    r = recorder(client, clock)
    for i in range(6):  # observations at 0, 5, ..., 25 minutes: each within finishTime of the last
        r.record(POD, "Warning", "FailedScheduling", "m", action="Scheduling")
        await started(r, clock)
        for _ in range(5 if i < 5 else 4):
            await clock.advance(60)
            await settle()
    [event] = await events(client)
    assert event["series"]["count"] == 2  # 29 minutes: only the patch that made the series
    await clock.advance(60)  # 30 minutes after the first event: the refresh pass
    await until_count(client, 6)
    assert len(r._cache) == 1  # still open
    await r.close()


async def test_a_series_whose_event_is_gone_is_created_again(client: LocalClient, clock: FakeClock) -> None:
    """recordEvent: a series patch answered NotFound creates the event (series included)."""
    r = recorder(client, clock)
    r.record(POD, "Warning", "FailedScheduling", "m", action="Scheduling")
    await r.flush()
    [first] = await events(client)
    await client.delete(client.resource("events.events.k8s.io"), first["metadata"]["name"], namespace="default")
    r.record(POD, "Warning", "FailedScheduling", "m", action="Scheduling")
    await r.flush()
    [again] = await events(client)
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["series"]["count"] == 2
    await r.close()


async def test_an_unsupported_type_is_not_recorded_and_close_writes_the_queue(
    client: LocalClient, clock: FakeClock
) -> None:
    """eventf: ValidateEventType refuses other types; Shutdown: what was queued is written."""
    r = recorder(client, clock)
    r.record(POD, "Error", "Bad", "m", action="A")
    r.record(POD, "Normal", "Scheduled", "m", action="Binding")
    await r.close()
    assert [e["reason"] for e in await events(client)] == ["Scheduled"]
    r.record(POD, "Normal", "Late", "m", action="Binding")  # closed: dropped
    await settle()
    assert len(await events(client)) == 1
