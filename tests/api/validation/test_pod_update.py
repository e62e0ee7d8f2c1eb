"""The pod status update's shortcut (:func:`plainly_valid`) against the full ``ValidatePodStatusUpdate``
(:func:`check_pod_status_update`): it may accept only what the full check finds nothing wrong with, so the answer
of :func:`validate_pod_status_update` is the full check's on every input; and it does accept the kubelet's
ordinary writes (what it is for)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.validation.pod_update import check_pod_status_update, plainly_valid, validate_pod_status_update

Obj = dict[str, Any]

_ODD: st.SearchStrategy[Any] = st.sampled_from([None, 3, True, "x", [], {}])
_IPS = st.sampled_from(["10.0.0.1", "10.0.0.2", "fd00::1", "010.1.1.1", "::ffff:10.0.0.1", "bad", "", 7])
_NAMES = st.sampled_from(["node-1", "node-2", "", "Not_A_Name", None, 4])
_CONDITION_TYPES = st.sampled_from(
    ["Ready", "PodScheduled", "Initialized", "ContainersReady", "DisruptionTarget", "example.com/x", "", "a b", None, 1]
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A member as written, absent, or of a wrong type (what the full check reports or reads as Go's zero)."""
    return st.one_of(strategy, st.just(None), _ODD)


def _ip_list() -> st.SearchStrategy[Any]:
    entry: st.SearchStrategy[Any] = st.one_of(st.fixed_dictionaries({"ip": _IPS}), st.just({}), _ODD)
    return _maybe(st.lists(entry, max_size=3))


def _container_statuses() -> st.SearchStrategy[Any]:
    state: st.SearchStrategy[Any] = st.one_of(
        st.just({"running": {"startedAt": "2024-01-01T00:00:00Z"}}),
        st.fixed_dictionaries({"terminated": st.fixed_dictionaries({"exitCode": st.sampled_from([0, 1])})}),
        st.just({"terminated": {}}),
        st.just({"waiting": {"reason": "ContainerCreating"}}),
        _ODD,
    )
    entry: st.SearchStrategy[Any] = st.one_of(
        st.fixed_dictionaries({"name": st.just("c1"), "state": state}),
        st.fixed_dictionaries({"name": st.just("c2"), "state": state}),
        _ODD,
    )
    return _maybe(st.lists(entry, max_size=2))


def _status() -> st.SearchStrategy[Any]:
    condition = st.one_of(st.fixed_dictionaries({"type": _CONDITION_TYPES, "status": st.just("True")}), _ODD)
    return _maybe(
        st.fixed_dictionaries(
            {},
            optional={
                "conditions": _maybe(st.lists(condition, max_size=3)),
                "nominatedNodeName": _NAMES,
                "qosClass": _maybe(st.sampled_from(["Guaranteed", "BestEffort"])),
                "containerStatuses": _container_statuses(),
                "initContainerStatuses": _container_statuses(),
                "ephemeralContainerStatuses": _container_statuses(),
                "podIPs": _ip_list(),
                "hostIPs": _ip_list(),
                "hostIP": _maybe(_IPS),
            },
        )
    )


def _spec() -> st.SearchStrategy[Any]:
    init = st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["c1", "c2"]), "restartPolicy": st.just("Always")}), max_size=1
    )
    return _maybe(
        st.fixed_dictionaries(
            {},
            optional={
                "nodeName": _NAMES,
                "restartPolicy": _maybe(st.sampled_from(["Always", "Never", "OnFailure"])),
                "initContainers": init,
            },
        )
    )


def _pod() -> st.SearchStrategy[Obj]:
    return st.fixed_dictionaries({}, optional={"spec": _spec(), "status": _status()})


@settings(max_examples=1500, deadline=None)
@given(new=_pod(), old=_pod(), share=st.booleans())
def test_shortcut_accepts_only_what_the_full_check_accepts(new: Obj, old: Obj, share: bool) -> None:
    """ValidatePodStatusUpdate: the answer is the full check's, whatever the shortcut decides."""
    if share and isinstance(new.get("status"), dict) and isinstance(old.get("spec"), dict):
        new = {**new, "spec": old["spec"]}  # the status subresource keeps the stored spec
    full = check_pod_status_update(new, old)
    if plainly_valid(new, old):
        assert full == []
    assert [str(e) for e in validate_pod_status_update(new, old)] == [str(e) for e in full]


def _kubelet_pod(status: Obj) -> Obj:
    policy = "Never" if status is _EXITED else "Always"
    spec = {"nodeName": "node-1", "restartPolicy": policy, "containers": [{"name": "c", "image": "i"}]}
    return {"metadata": {"name": "p"}, "spec": spec, "status": status}


_RUNNING: Obj = {
    "phase": "Running",
    "qosClass": "Guaranteed",
    "hostIP": "10.0.0.1",
    "hostIPs": [{"ip": "10.0.0.1"}],
    "podIP": "10.1.0.2",
    "podIPs": [{"ip": "10.1.0.2"}],
    "conditions": [
        {"type": "PodReadyToStartContainers", "status": "True"},
        {"type": "Initialized", "status": "True"},
        {"type": "Ready", "status": "True"},
        {"type": "ContainersReady", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ],
    "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}],
}

_EXITED: Obj = {**_RUNNING, "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 0}}}]}


@pytest.mark.parametrize(
    ("old_status", "new_status", "plain"),
    [
        ({"phase": "Pending", "qosClass": "Guaranteed"}, _RUNNING, True),
        (_RUNNING, {**_RUNNING, "phase": "Succeeded"}, True),
        (_RUNNING, {**_RUNNING, "qosClass": "BestEffort"}, False),
        (_RUNNING, {**_RUNNING, "podIPs": [{"ip": "10.1.0.2"}, {"ip": "fd00::2"}]}, False),
        (_RUNNING, {**_RUNNING, "hostIPs": [{"ip": "10.0.0.9"}]}, False),
        (_EXITED, _RUNNING, False),
    ],
    ids=[
        "kubelet-first-status-write",
        "kubelet-pod-completes",
        "qosClass-immutable-left-to-full-check",
        "dual-stack-podIPs-left-to-full-check",
        "hostIPs-not-hostIP-left-to-full-check",
        "ValidateContainerStateTransition-left-to-full-check",
    ],
)
def test_kubelet_writes_take_the_shortcut(old_status: Obj, new_status: Obj, plain: bool) -> None:
    old, new = _kubelet_pod(old_status), _kubelet_pod(new_status)
    new["spec"] = old["spec"]
    assert plainly_valid(new, old) is plain
    assert validate_pod_status_update(new, old) == check_pod_status_update(new, old)
