"""The shape memos (kubeplane.api.shapes) and the two api-layer steps they answer: pod validation and defaulting.

What is pinned: a memoised step gives exactly what the direct step gives -- upstream's ``ValidatePodCreate``
errors (kube-apiserver's pkg/apis/core/validation) and ``SetDefaults_Pod`` + PodSpec defaults
(pkg/apis/core/v1/defaults.go), as the direct paths implement them -- on a cold memo, on a warm one, and for
many shapes kept in one memo at once (each of test_pods.py's ValidatePodCreate cases, and hypothesis' pods);
the key tells apart every pair of JSON values that differ (types included); a caller mutating its answer
cannot change the next one's. Upstream has no memo: these tests hold the shortcut to the semantics.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.api import defaults
from kubeplane.api.defaults_workloads import set_defaults_pod
from kubeplane.api.shapes import MAX_KEY_BYTES, ShapeMemo, shape_key
from kubeplane.api.validation import pods as podval
from tests.api.validation.test_pods import CREATE_CASES, pod

Obj = dict[str, Any]


@pytest.fixture(autouse=True)
def _memos_on() -> Iterator[None]:
    ShapeMemo.enabled = True
    yield
    ShapeMemo.enabled = True


# -- the memo ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"x": 1}, {"x": 1.0}),
        ({"x": 1}, {"x": True}),
        ({"x": 0}, {"x": False}),
        ({"x": "1"}, {"x": 1}),
        ({"x": None}, {}),
        ({"x": []}, {"x": {}}),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # another order is another key (a miss, never a wrong hit)
    ],
)
def test_distinct_json_values_have_distinct_keys(a: Obj, b: Obj) -> None:
    assert shape_key(a) != shape_key(b)


def test_values_orjson_cannot_encode_have_no_key() -> None:
    assert shape_key({1: "non-string key"}) is None
    assert shape_key({"x": 2**70}) is None
    assert shape_key({"x": "a" * MAX_KEY_BYTES}) is None  # too big to keep
    assert shape_key({"x": "a" * (MAX_KEY_BYTES - 8)}) is not None
    memo: ShapeMemo[bool] = ShapeMemo()
    memo.put(None, True)
    assert memo.get(None) is None
    assert len(memo) == 0


def test_memo_is_bounded_and_can_be_switched_off() -> None:
    memo: ShapeMemo[int] = ShapeMemo(capacity=3)
    for i in range(3):
        memo.put(shape_key(i), i)
    assert len(memo) == 3
    assert memo.get(shape_key(2)) == 2
    memo.put(shape_key(3), 3)  # full: starts afresh
    assert len(memo) == 1
    assert memo.get(shape_key(0)) is None
    assert memo.get(shape_key(3)) == 3
    ShapeMemo.enabled = False
    assert memo.get(shape_key(3)) is None
    memo.put(shape_key(4), 4)
    ShapeMemo.enabled = True
    assert memo.get(shape_key(4)) is None


# -- validation and defaulting: memoised == direct ------------------------------------------------------------------


def _check_validation(p: Obj) -> None:
    expected = [str(e) for e in podval.validate_pod(copy.deepcopy(p))]
    assert [str(e) for e in podval.validate_pod_create(copy.deepcopy(p))] == expected  # cold (or warm from before)
    assert [str(e) for e in podval.validate_pod_create(copy.deepcopy(p))] == expected  # warm


def _check_defaults(p: Obj) -> None:
    direct = copy.deepcopy(p)
    set_defaults_pod(direct)
    for _ in range(2):  # cold, then warm
        memoised = copy.deepcopy(p)
        spec = memoised.get("spec")
        defaults.set_defaults_pod_memo(memoised)
        assert orjson.dumps(memoised) == orjson.dumps(direct)  # same values, same key order
        if isinstance(spec, dict):
            assert memoised["spec"] is spec  # updated in place, as the direct path does


@pytest.mark.parametrize("case", CREATE_CASES, ids=[c[0] for c in CREATE_CASES])
def test_every_validate_pod_create_case_through_the_memo(case: Any) -> None:
    """Each ValidatePodCreate case of test_pods.py (valid and invalid), all kept in the one module memo."""
    _, mutate, expected = case
    p = pod()
    mutate(p)
    _check_validation(p)
    assert [str(e) for e in podval.validate_pod_create(p)] == expected
    _check_defaults(p)


def test_validity_is_the_specs_alone() -> None:
    """validate_pod reads ``spec`` only (metadata is validated by the registry): another pod's name, labels or
    status with a spec found valid before is still valid, and an invalid spec never becomes valid."""
    podval.VALID_SPECS.clear()
    first = pod()
    assert podval.validate_pod_create(first) == []
    assert len(podval.VALID_SPECS) == 1
    other = pod()
    other["metadata"] = {"name": "Not_A_Name", "labels": {"bad key!": "x"}}
    other["status"] = {"phase": 3}
    assert podval.validate_pod_create(other) == podval.validate_pod(other) == []
    bad = pod(terminationGracePeriodSeconds="30")
    assert podval.validate_pod_create(bad) == podval.validate_pod(bad) != []
    assert podval.validate_pod_create(bad) != []  # invalid specs are not kept
    assert len(podval.VALID_SPECS) == 1


_NAMES = st.sampled_from(["c", "app", "side-car", "Bad_Name", ""])
_QUANTITIES = st.sampled_from(["100m", "1", "500Mi", "1Gi", "0", "2.5", "-1", "1e3", "abc", 1, 0.5])
_RESOURCES = st.dictionaries(st.sampled_from(["cpu", "memory", "example.com/gpu", "hugepages-2Mi"]), _QUANTITIES)
_SCALARS = st.none() | st.booleans() | st.integers(-3, 70000) | st.sampled_from(["", "x", "Always", "TCP", "80"])


@st.composite
def _containers(draw: st.DrawFn) -> list[Obj]:
    out = []
    for _ in range(draw(st.integers(0, 3))):
        c: Obj = {"name": draw(_NAMES), "image": draw(st.sampled_from(["nginx", "pause:3.10", " nginx", ""]))}
        if draw(st.booleans()):
            c["resources"] = {k: draw(_RESOURCES) for k in draw(st.sets(st.sampled_from(["requests", "limits"])))}
        if draw(st.booleans()):
            c["ports"] = [
                {
                    "containerPort": draw(st.integers(0, 70000)),
                    **draw(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "tcp"]),
                                "hostPort": st.integers(0, 70000),
                                "name": _NAMES,
                            },
                        )
                    ),
                }
                for _ in range(draw(st.integers(1, 2)))
            ]
        if draw(st.booleans()):
            c["imagePullPolicy"] = draw(st.sampled_from(["Always", "IfNotPresent", "Never", "Sometimes"]))
        out.append(c)
    return out


@st.composite
def _pods(draw: st.DrawFn) -> Obj:
    spec: Obj = {"containers": draw(_containers())}
    optional = {
        "initContainers": _containers(),
        "restartPolicy": st.sampled_from(["Always", "OnFailure", "Never", "Sometimes"]),
        "hostNetwork": st.booleans(),
        "nodeSelector": st.dictionaries(st.sampled_from(["zone", "bad key!", "k"]), st.sampled_from(["a", ""])),
        "priorityClassName": st.sampled_from(["high", "High_Priority"]),
        "terminationGracePeriodSeconds": st.integers(-5, 60) | st.just("30"),
        "resources": _RESOURCES.map(lambda r: {"requests": r}),
        "tolerations": st.lists(
            st.fixed_dictionaries(
                {"key": st.sampled_from(["k", ""]), "operator": st.sampled_from(["Exists", "Equal"])}
            ),
            max_size=2,
        ),
        "schedulingGates": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["a", "b", "bad name"])}), max_size=2
        ),
        "nodeName": st.sampled_from(["node-1", ""]),
        "overhead": _RESOURCES,
    }
    for key in draw(st.sets(st.sampled_from(sorted(optional)))):
        spec[key] = draw(optional[key])
    if draw(st.booleans()) and spec["containers"]:  # a wrong JSON type somewhere in the first container
        spec["containers"][0][draw(st.sampled_from(["name", "ports", "resources", "image"]))] = draw(_SCALARS)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": draw(_NAMES)}, "spec": spec}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pods())
def test_memoised_validation_and_defaults_equal_the_direct_path(p: Obj) -> None:
    """Random pod shapes (valid and not), the memos shared across all examples: defaulting as direct, then the
    defaulted pod's validation as direct (the order of the registry's create)."""
    _check_defaults(p)
    defaulted = copy.deepcopy(p)
    set_defaults_pod(defaulted)
    _check_validation(defaulted)
    _check_validation(p)


def test_a_caller_mutating_its_defaulted_spec_cannot_change_the_next() -> None:
    """The memo keeps bytes: the next pod with the same spec gets the defaults, not the first pod's edits."""
    first = pod()
    del first["spec"]["restartPolicy"]
    second = copy.deepcopy(first)
    defaults.set_defaults_pod_memo(first)
    assert first["spec"]["restartPolicy"] == "Always"
    first["spec"]["restartPolicy"] = "Never"
    first["spec"]["containers"][0]["image"] = "changed"
    defaults.set_defaults_pod_memo(second)
    assert second["spec"]["restartPolicy"] == "Always"
    assert second["spec"]["containers"][0]["image"] == "nginx:1.27"
