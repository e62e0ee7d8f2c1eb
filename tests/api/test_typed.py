"""Typed decoding (kubeplane.api.typed) against the messages of Go's encoding/json and apimachinery's converter.

Each case names the upstream behaviour it pins: encoding/json decode.go (UnmarshalTypeError with the innermost
struct and the JSON path from the root; the first error wins; integers reject fractions), the custom unmarshalers
of apimachinery (resource.Quantity, intstr.IntOrString, metav1.Time/MicroTime/Duration), and
runtime/converter.go's fromUnstructured for the strategic-merge-patch path.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import typed
from kubeplane.api.typed import TypedDecodeError

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "labels": {"app": "a"}, "annotations": {"k": "v"}, "finalizers": ["x/y"]},
    "spec": {
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "args": ["a"],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "1Ki"}, "limits": {"cpu": "1500m"}},
                "livenessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 10},
            }
        ],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}],
    },
    "status": {"phase": "Pending", "startTime": "2026-11-28T00:00:00Z"},
}


def decode(obj: dict[str, Any], kind: str = "Pod", group: str = "", *, unstructured: bool = False) -> Any:
    return typed.decode(obj, group=group, version="v1", kind=kind, unstructured=unstructured)


def error(obj: dict[str, Any], kind: str = "Pod", group: str = "", *, unstructured: bool = False) -> str:
    with pytest.raises(TypedDecodeError) as info:
        decode(obj, kind, group, unstructured=unstructured)
    return str(info.value)


def test_a_valid_pod_decodes_to_itself() -> None:
    assert decode(POD) == POD


class _SharedDict(dict[str, Any]):
    """A dict subclass, as the watch cache's read-only objects are (apiserver.watchevent.Decoded)."""


@pytest.mark.parametrize("unstructured", [False, True], ids=["encoding-json", "from-unstructured"])
def test_dict_subclasses_decode_as_objects(unstructured: bool) -> None:
    """A dict subclass is a JSON object to both decoders (Go sees only JSON): a pod built from shared objects
    decodes as the same pod in plain dicts."""
    pod = copy.deepcopy(POD)
    pod["metadata"] = _SharedDict(pod["metadata"])
    pod["spec"]["containers"][0] = _SharedDict(pod["spec"]["containers"][0])
    pod["metadata"]["labels"] = _SharedDict(pod["metadata"]["labels"])
    assert decode(pod, unstructured=unstructured) == POD


def test_decoding_copies_and_leaves_the_input_alone() -> None:
    before = copy.deepcopy(POD)
    out = decode(POD)
    out["spec"]["containers"][0]["args"].append("b")
    assert before == POD


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        # the causes, each a 500 or a stored invalid object before
        (
            {"spec": {"schedulerName": 5}},
            "json: cannot unmarshal number into Go struct field PodSpec.spec.schedulerName of type string",
        ),
        (
            {"spec": {"containers": [{"name": "c", "args": {"a": 1}}]}},
            "json: cannot unmarshal object into Go struct field Container.spec.containers.args of type []string",
        ),
        (
            {"spec": {"containers": True}},
            "json: cannot unmarshal bool into Go struct field PodSpec.spec.containers of type []v1.Container",
        ),
        (
            {"metadata": {"finalizers": [1]}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers of type string",
        ),
        (
            {"metadata": "x"},
            "json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta",
        ),
        # named types print by name, pointers are indirected, list indices and map keys are not in the path
        (
            {"spec": {"restartPolicy": 5}},
            "json: cannot unmarshal number into Go struct field PodSpec.spec.restartPolicy of type v1.RestartPolicy",
        ),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": []}}]}},
            "json: cannot unmarshal array into Go struct field ResourceRequirements.spec.containers.resources.requests"
            " of type v1.ResourceList",
        ),
        (
            {"metadata": {"labels": {"a": 1}}},
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            {"spec": {"affinity": "x"}},
            "json: cannot unmarshal string into Go struct field PodSpec.spec.affinity of type v1.Affinity",
        ),
        # integers: a fraction or an out-of-range value is "number <text>"
        (
            {"spec": {"terminationGracePeriodSeconds": 1.5}},
            "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.terminationGracePeriodSeconds of "
            "type int64",
        ),
        (
            {"spec": {"priority": 2**31}},
            "json: cannot unmarshal number 2147483648 into Go struct field PodSpec.spec.priority of type int32",
        ),
        (
            {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}},
            "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort "
            "of type int32",
        ),
        # inline-embedded structs (Probe's ProbeHandler) belong to the outer struct
        (
            {"spec": {"containers": [{"name": "c", "livenessProbe": {"exec": []}}]}},
            "json: cannot unmarshal array into Go struct field Probe.spec.containers.livenessProbe.exec of type "
            "v1.ExecAction",
        ),
        # custom unmarshalers answer with their own errors, without the decoder's context
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]}},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": True}}}]}},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1Mk"}}}]}},
            "unable to parse quantity's suffix",
        ),
        (
            {"spec": {"containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": True}}}]}},
            "json: cannot unmarshal bool into Go value of type int32",
        ),
        (
            {"spec": {"containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": 1.5}}}]}},
            "json: cannot unmarshal number 1.5 into Go value of type int32",
        ),
        (
            {"metadata": {"creationTimestamp": 5}},
            "json: cannot unmarshal number into Go value of type string",
        ),
        (
            {"status": {"startTime": "2026-13-01T00:00:00Z"}},
            'parsing time "2026-13-01T00:00:00Z": month out of range',
        ),
    ],
)
def test_a_field_of_the_wrong_type_gets_the_decoders_message(patch: dict[str, Any], message: str) -> None:
    obj = {"metadata": {"name": "p"}, **patch}
    assert error(obj) == message


def test_the_first_type_error_in_document_order_is_reported() -> None:
    """decode.go saveError keeps the first UnmarshalTypeError and goes on decoding."""
    obj = {"spec": {"nodeName": 1, "schedulerName": 2}}
    assert "PodSpec.spec.nodeName" in error(obj)


def test_a_custom_unmarshaler_error_stops_decoding_even_after_a_type_error() -> None:
    """An UnmarshalJSON error is returned at once (literalStore), so it beats a type error saved earlier."""
    obj = {"spec": {"nodeName": 1, "containers": [{"name": "c", "resources": {"limits": {"cpu": "abc"}}}]}}
    assert error(obj).startswith("quantities must match")


def test_unknown_fields_and_nulls_are_dropped_and_null_elements_become_zero() -> None:
    obj = {
        "metadata": {"name": "p", "labels": {"a": None}, "annotations": None, "bogus": 1},
        "spec": {"nodeName": None, "containers": [None, {"name": "c", "args": [None, "x"]}]},
    }
    assert decode(obj) == {
        "metadata": {"name": "p", "labels": {"a": ""}},
        "spec": {"containers": [{"name": ""}, {"name": "c", "args": ["", "x"]}]},
    }


def test_bytes_take_base64_or_an_array_of_bytes() -> None:
    assert decode({"data": {"a": "aGk="}}, "Secret") == {"data": {"a": "aGk="}}
    assert decode({"data": {"a": [104, 105]}}, "Secret") == {"data": {"a": "aGk="}}
    assert error({"data": {"a": "!!"}}, "Secret") == "illegal base64 data at input byte 0"
    assert error({"data": {"a": [300]}}, "Secret") == (
        "json: cannot unmarshal number 300 into Go struct field Secret.data of type uint8"
    )


def test_subresource_and_option_kinds_have_their_types() -> None:
    assert error({"target": {"name": []}}, "Binding") == (
        "json: cannot unmarshal array into Go struct field ObjectReference.target.name of type string"
    )
    assert error({"spec": {"replicas": "3"}}, "Scale", "autoscaling") == (
        "json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
    )
    assert error({"deleteOptions": {"gracePeriodSeconds": "1"}}, "Eviction", "policy") == (
        "json: cannot unmarshal string into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of type "
        "int64"
    )
    # meta/v1 DeleteOptions is served in every group version
    assert error({"preconditions": []}, "DeleteOptions", "apps") == (
        "json: cannot unmarshal array into Go struct field DeleteOptions.preconditions of type v1.Preconditions"
    )


def test_a_kind_without_go_types_is_returned_unchanged() -> None:
    assert typed.decode({"a": 1}, group="example.com", version="v1", kind="Widget") == {"a": 1}
    assert not typed.has_go_type(group="example.com", version="v1", kind="Widget")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"spec": {"schedulerName": 5}}, "cannot convert int64 to string"),
        ({"spec": {"restartPolicy": 5}}, "cannot convert int64 to v1.RestartPolicy"),
        ({"spec": {"schedulerName": True}}, "unrecognized type: string"),
        ({"spec": {"priority": "1"}}, "unrecognized type: int32"),
        ({"spec": {"terminationGracePeriodSeconds": 1.5}}, "cannot convert float64 to int64"),
        ({"spec": {"affinity": "x"}}, "cannot restore struct from: string"),
        ({"spec": {"containers": {}}}, "cannot restore slice from map"),
        ({"spec": {"nodeSelector": []}}, "cannot restore map from slice"),
        ({"data": {"a": "!!"}}, "error decoding from json: illegal base64 data at input byte 0"),
    ],
)
def test_the_strategic_merge_patch_path_has_the_converters_messages(patch: dict[str, Any], message: str) -> None:
    """runtime/converter.go fromUnstructured: no field path, the first problem stops the conversion."""
    kind = "Secret" if "data" in patch else "Pod"
    assert error({"metadata": {"name": "p"}, **patch}, kind, unstructured=True) == message


def test_the_converter_accepts_integral_floats_and_wraps_integers() -> None:
    """FromUnstructured converts float64 to an integer when it is whole, and reflect.Convert truncates widths."""
    out = decode({"spec": {"terminationGracePeriodSeconds": 30.0, "priority": 2**32 + 7}}, unstructured=True)
    assert out == {"spec": {"containers": [], "terminationGracePeriodSeconds": 30, "priority": 7}}


def test_quantities_given_as_numbers_are_stored_as_go_encodes_them() -> None:
    """resource.Quantity always marshals to its canonical string: 1.5 -> "1500m", 1000 -> "1k" (quantity.go)."""
    obj = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 1.5, "memory": 1000}}}]}}
    assert decode(obj)["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "1500m", "memory": "1k"}


def test_fields_go_always_encodes_are_present_at_their_zero_value() -> None:
    """A field with neither omitempty nor a pointer type is encoded even when unset (encoding/json): the
    EndpointPort's port, a Container's name, a CSINode's spec and its drivers. Lists and maps Go would write as
    null are written empty; Time (which encodes null) is left out."""
    out = decode({"subsets": [{"ports": [{"name": "http"}], "addresses": [{}]}]}, "Endpoints")
    assert out["subsets"][0]["ports"] == [{"name": "http", "port": 0}]
    assert out["subsets"][0]["addresses"] == [{"ip": ""}]
    assert decode({"metadata": {"name": "n"}}, "CSINode", "storage.k8s.io") == {
        "metadata": {"name": "n"},
        "spec": {"drivers": []},
    }
    assert decode({"spec": {"containers": [{}]}})["spec"]["containers"] == [{"name": ""}]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_PATHS = [("metadata",), ("spec",), ("spec", "containers"), ("metadata", "labels"), ("spec", "nodeName")]


@settings(max_examples=200, deadline=None)
@given(value=_JSON, where=st.sampled_from(_PATHS))
def test_any_value_anywhere_decodes_or_fails_cleanly_and_decoding_is_idempotent(
    value: Any, where: tuple[str, ...]
) -> None:
    """Whatever JSON sits at a field, decoding either raises TypedDecodeError or returns an object that decodes to
    itself (what is stored always passes typed decoding) and stays JSON-serialisable."""
    obj: dict[str, Any] = copy.deepcopy(POD)
    target = obj
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    try:
        out = decode(obj)
    except TypedDecodeError:
        return
    assert decode(out) == out
    json.dumps(out)
