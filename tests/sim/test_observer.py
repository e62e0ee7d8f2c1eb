"""The observer's Event informer keeps digests (:func:`kubeplane.sim.observer.event_digest`): what the observer
reads of an Event must be in the digest, so counting from digests gives what counting from Events gives."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.sim.clock import VirtualClock
from kubeplane.sim.observer import Observer, PodRecord, event_digest


def _event(reason: str, message: str, kind: str = "Pod", name: str = "p") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.1", "namespace": "default", "resourceVersion": "12", "uid": "u",
                     "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:count": {}}}]},
        "involvedObject": {"apiVersion": "v1", "kind": kind, "namespace": "default", "name": name, "uid": "v"},
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": "n1"},
        "count": 1,
        "type": "Normal",
    }  # fmt: skip


EVENTS = [
    _event("Scheduled", "Successfully assigned default/p to n1"),
    _event("TaintManagerEviction", "Marking for deletion Pod default/p"),
    _event("TaintManagerEviction", "Cancelling deletion of Pod default/p"),
    _event("TaintManagerEviction", "Marking for deletion Pod default/done", name="done"),
    _event("TriggeredScaleUp", "pod triggered scale-up: [{pool 1->2 (max: 5)}]"),
    _event("ScaleDown", "node removed by cluster autoscaler", kind="Node", name="n2"),
]


@pytest.mark.parametrize("digest", [False, True], ids=["full-events", "digests"])
def test_counts_and_scaling_records_from_digests_equal_those_from_events(digest: bool) -> None:
    observer = Observer(VirtualClock())
    observer.pods["default/done"] = PodRecord("default", "done", 0.0, phase="Succeeded")
    for event in EVENTS:
        observer.event(None, event_digest(event) if digest else event)
    assert observer.events == {"Scheduled": 1, "TaintManagerEviction": 1, "TriggeredScaleUp": 1, "ScaleDown": 1}
    assert [(s.reason, s.kind, s.name, s.message) for s in observer.scaling] == [
        ("TriggeredScaleUp", "Pod", "p", "pod triggered scale-up: [{pool 1->2 (max: 5)}]"),
        ("ScaleDown", "Node", "n2", "node removed by cluster autoscaler"),
    ]


def test_a_digest_keeps_what_its_informer_needs_and_drops_the_rest() -> None:
    """The message and the involved object only for the reasons the observer reads them of."""
    digest = event_digest(EVENTS[0])
    assert digest == {
        "metadata": {"name": "p.1", "namespace": "default", "resourceVersion": "12"},
        "reason": "Scheduled",
    }
    eviction = event_digest(EVENTS[1])
    assert eviction["involvedObject"] == {"kind": "Pod", "namespace": "default", "name": "p"}
    assert set(eviction) == {"metadata", "reason", "message", "involvedObject"}
