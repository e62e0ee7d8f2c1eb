"""Field selectors against upstream apimachinery ``pkg/fields`` (selector_test.go), and selectable fields per kind
against the registry strategies (``ToSelectableFields``) and field-label conversions (``pkg/apis/core/v1``).

Case ids name the upstream test or code path each case pins; error strings are upstream's verbatim.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubeplane.api import fields
from kubeplane.api.fields import FieldSelectorError, Requirement

# --- syntax ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("a=avalue", [("a", "avalue", True)]),
        ("a=avalue,b=bvalue", [("a", "avalue", True), ("b", "bvalue", True)]),
        ("a=avalue,b==bvalue,c!=cvalue", [("a", "avalue", True), ("b", "bvalue", True), ("c", "cvalue", False)]),
        ("", []),
        ("a=a,", [("a", "a", True)]),
        (",a=a", [("a", "a", True)]),
        (r"k=\,,k2=v2", [("k2", "v2", True), ("k", ",", True)]),
        (r"k=\\,k2=v2", [("k2", "v2", True), ("k", "\\", True)]),
        (r"k=\\\,,k2=v2", [("k2", "v2", True), ("k", "\\,", True)]),
        ("함=수,목=록", [("목", "록", True), ("함", "수", True)]),
        (r"x=a||y\=b", [("x", "a||y=b", True)]),
        (r"x=a\=\=b", [("x", "a==b", True)]),
        ("c!=value", [("c", "value", False)]),
        ("b==value", [("b", "value", True)]),
        ("a==", [("a", "", True)]),
        ("=", []),
        ("=,a=b", [("a", "b", True)]),
        ("x=a,a=x", [("a", "x", True), ("x", "a", True)]),
    ],
    ids=[
        "TestSplitTerms-simple",
        "TestSplitTerms-two",
        "TestSplitTerm-all-operators",
        "TestSplitTerms-empty",
        "TestSplitTerms-trailing-comma",
        "TestSplitTerms-leading-comma",
        "TestSplitTerms-escaped-comma-in-value",
        "TestSplitTerms-escaped-backslash-unescaped-comma",
        "TestSplitTerms-escaped-backslash-and-comma",
        "TestSplitTerms-multi-byte",
        "TestSelectorParse-escaped-equals",
        "TestSelectorParse-two-escaped-equals",
        "TestSplitTerm-not-equals",
        "TestSplitTerm-double-equals-no-leading-equals-in-value",
        "splitTerm-empty-value",
        "Transform-empty-term-selects-everything",
        "Transform-empty-term-dropped",
        "TestDeterministicParse",
    ],
)
def test_parse_selector_terms(text: str, terms: list[tuple[str, str, bool]]) -> None:
    selector = fields.parse_selector(text)
    assert [(t.field, t.value, t.equal) for t in selector.requirements] == terms


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", r"x=a||y\=b", r"x=a\=\=b"],
    ids=lambda s: f"TestSelectorParse-good[{s}]",
)
def test_parse_round_trips(text: str) -> None:
    assert str(fields.parse_selector(text)) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a||y=b", "invalid field selector: unescaped character in value: 61"),
        ("x==a==b", "invalid field selector: unescaped character in value: 61"),
        ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ("x in (a)", "invalid selector: 'x in (a)'; can't understand 'x in (a)'"),
        ("x in (a,b,c)", "invalid selector: 'x in (a,b,c)'; can't understand 'b'"),
        ("x", "invalid selector: 'x'; can't understand 'x'"),
        ("k=\\", "invalid field selector: invalid escape sequence: \\"),
        ("k=\\\\\\", "invalid field selector: invalid escape sequence: \\"),
        ("k=\\a", "invalid field selector: invalid escape sequence: \\a"),
    ],
    ids=[
        "TestSelectorParse-bad-unescaped-equals",
        "TestSelectorParse-bad-double-operator",
        "TestSelectorParse-bad-comma-splits-value",
        "TestSelectorParse-bad-set-syntax",
        "TestSelectorParse-bad-set-syntax-sorted-terms",
        "TestSelectorParse-bad-no-operator",
        "TestEscapeValue-orphan-slash",
        "TestEscapeValue-escaped-slash-then-orphan",
        "TestEscapeValue-unrecognized-escape",
    ],
)
def test_parse_selector_errors(text: str, message: str) -> None:
    with pytest.raises(FieldSelectorError) as exc:
        fields.parse_selector(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [("", ""), ("a", "a"), ("=", r"\="), (",", r"\,"), ("\\", "\\\\"), (r"\=\,\ ", r"\\\=\\\,\\ ")],
    ids=[
        "TestEscapeValue-empty",
        "TestEscapeValue-plain",
        "TestEscapeValue-equals",
        "TestEscapeValue-comma",
        "TestEscapeValue-backslash",
        "TestEscapeValue-mixed",
    ],
)
def test_escape_round_trip(raw: str, escaped: str) -> None:
    assert fields.escape_value(raw) == escaped
    assert fields.unescape_value(escaped) == raw


def test_unescaped_comma_reports_code_point() -> None:
    """Upstream prints the rune with %v, i.e. its code point."""
    with pytest.raises(FieldSelectorError, match=r"^invalid field selector: unescaped character in value: 44$"):
        fields.unescape_value("a,b")


# --- matching ----------------------------------------------------------------------------------------------

FIELDSET = {"foo": "bar", "baz": "blah", "complex": "=value\\,\\"}


@pytest.mark.parametrize(
    ("text", "field_set", "want"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("foo=bar,baz=blah", FIELDSET, True),
        (r"foo=bar,baz=blah,complex=\=value\\\,\\", FIELDSET, True),
        ("foo=blah", FIELDSET, False),
        ("foo=bar,foobar=bar,baz=blah", FIELDSET, False),
        ("spec.nodeName=", {}, True),
        ("spec.nodeName!=", {}, False),
        ("spec.nodeName!=", {"spec.nodeName": "n1"}, True),
    ],
    ids=[
        "TestSelectorMatches-empty",
        "TestSelectorMatches-equals",
        "TestSelectorMatches-two-equals",
        "TestSelectorMatches-two-not-equals",
        "TestSelectorMatches-keywords-are-plain-text",
        "TestSelectorMatches-other-value",
        "TestSelectorMatches-one-of-two-fails",
        "TestSelectorMatches-not-equals-hit",
        "TestSelectorMatches-fieldset",
        "TestSelectorMatches-escaped-complex-value",
        "TestSelectorMatches-wrong-value",
        "TestSelectorMatches-extra-term",
        "Set.Get-missing-field-reads-empty",
        "Set.Get-missing-field-not-equals-empty",
        "Set.Get-present-field-not-equals-empty",
    ],
)
def test_selector_matches(text: str, field_set: dict[str, str], want: bool) -> None:
    selector = fields.parse_selector(text)
    assert selector.matches(field_set) is want
    assert all(t.matches(field_set) for t in selector.requirements) is want


def test_one_term_and_set_selectors() -> None:
    """Upstream TestOneTermEqualSelector, TestSetMatches, TestNilMapIsValid, TestSetIsEmpty."""
    assert fields.one_term_equal_selector("x", "y").matches({"x": "y"})
    assert not fields.one_term_equal_selector("x", "y").matches({"x": "z"})
    assert fields.one_term_not_equal_selector("x", "y").matches({"x": "z"})
    assert fields.selector_from_set(None).empty()
    assert fields.selector_from_set({}).empty()
    assert fields.everything().empty()
    assert fields.and_selectors(fields.everything(), fields.everything()).empty()
    assert not fields.one_term_equal_selector("", "").empty()
    labelset = {"foo": "bar", "baz": "blah"}
    assert fields.selector_from_set({"foo": "bar", "baz": "blah"}).matches(labelset)
    assert not fields.selector_from_set({"foo": "=blah"}).matches(labelset)
    assert str(fields.selector_from_set({"foo": "=b", "a": "c"})) == r"a=c,foo=\=b"
    both = fields.and_selectors(fields.one_term_equal_selector("a", "1"), fields.one_term_not_equal_selector("b", "2"))
    assert str(both) == "a=1,b!=2"


@pytest.mark.parametrize(
    ("selector", "field_name", "want"),
    [
        (fields.selector_from_set({}), "test", None),
        (fields.one_term_equal_selector("", ""), "test", None),
        (fields.one_term_equal_selector("a", "b"), "test", None),
        (fields.one_term_equal_selector("test", "b"), "test", "b"),
        (fields.one_term_equal_selector("test", ""), "test", ""),
        (fields.one_term_not_equal_selector("test", "b"), "test", None),
        (fields.one_term_not_equal_selector("test", ""), "test", None),
        (
            fields.and_selectors(fields.one_term_equal_selector("", ""), fields.one_term_equal_selector("test", "b")),
            "test",
            "b",
        ),
        (fields.parse_selector("spec.nodeName!=a,spec.nodeName=b"), "spec.nodeName", "b"),
    ],
    ids=[
        "TestRequiresExactMatch-empty-set",
        "TestRequiresExactMatch-empty-hasTerm",
        "TestRequiresExactMatch-skipped-hasTerm",
        "TestRequiresExactMatch-valid-hasTerm",
        "TestRequiresExactMatch-valid-hasTerm-no-value",
        "TestRequiresExactMatch-valid-notHasTerm",
        "TestRequiresExactMatch-valid-notHasTerm-no-value",
        "TestRequiresExactMatch-andTerm-with-non-match",
        "RequiresExactMatch-first-equal-term-wins-over-not-equal",
    ],
)
def test_requires_exact_match(selector: fields.Selector, field_name: str, want: str | None) -> None:
    assert selector.requires_exact_match(field_name) == want


def test_selector_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        fields.everything().requirements = (Requirement("a", "b"),)  # type: ignore[misc]


# --- selectable fields per kind ----------------------------------------------------------------------------

POD: dict[str, Any] = {
    "metadata": {"name": "web-0", "namespace": "prod"},
    "spec": {
        "nodeName": "node-1",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "serviceAccountName": "default",
        "hostNetwork": True,
    },
    "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}, {"ip": "fd00::7"}], "nominatedNodeName": "node-2"},
}


@pytest.mark.parametrize(
    ("kind", "obj", "want"),
    [
        (
            "Pod",
            POD,
            {
                "metadata.name": "web-0",
                "metadata.namespace": "prod",
                "spec.nodeName": "node-1",
                "spec.restartPolicy": "Always",
                "spec.schedulerName": "default-scheduler",
                "spec.serviceAccountName": "default",
                "spec.hostNetwork": "true",
                "status.phase": "Running",
                "status.podIP": "10.0.0.7",
                "status.nominatedNodeName": "node-2",
            },
        ),
        (
            "Pod",
            {"metadata": {"name": "p"}},
            {
                "metadata.name": "p",
                "metadata.namespace": "",
                "spec.nodeName": "",
                "spec.restartPolicy": "",
                "spec.schedulerName": "",
                "spec.serviceAccountName": "",
                "spec.hostNetwork": "false",
                "status.phase": "",
                "status.podIP": "",
                "status.nominatedNodeName": "",
            },
        ),
        (
            "Node",
            {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}},
            {"metadata.name": "n1", "spec.unschedulable": "true"},
        ),
        ("Node", {"metadata": {"name": "n1"}}, {"metadata.name": "n1", "spec.unschedulable": "false"}),
        (
            "Event",
            {
                "metadata": {"name": "e1", "namespace": "prod"},
                "involvedObject": {
                    "kind": "Pod",
                    "namespace": "prod",
                    "name": "web-0",
                    "uid": "u-1",
                    "apiVersion": "v1",
                    "resourceVersion": "42",
                    "fieldPath": "spec.containers{web}",
                },
                "reason": "Scheduled",
                "reportingComponent": "default-scheduler",
                "source": {},
                "type": "Normal",
            },
            {
                "metadata.name": "e1",
                "metadata.namespace": "prod",
                "involvedObject.kind": "Pod",
                "involvedObject.namespace": "prod",
                "involvedObject.name": "web-0",
                "involvedObject.uid": "u-1",
                "involvedObject.apiVersion": "v1",
                "involvedObject.resourceVersion": "42",
                "involvedObject.fieldPath": "spec.containers{web}",
                "reason": "Scheduled",
                "reportingComponent": "default-scheduler",
                "source": "default-scheduler",
                "type": "Normal",
            },
        ),
        (
            "Namespace",
            {"metadata": {"name": "prod"}, "status": {"phase": "Active"}},
            {"metadata.name": "prod", "status.phase": "Active", "name": "prod"},
        ),
        (
            "Secret",
            {"metadata": {"name": "s", "namespace": "a"}, "type": "Opaque"},
            {"metadata.name": "s", "metadata.namespace": "a", "type": "Opaque"},
        ),
        (
            "Service",
            {"metadata": {"name": "s", "namespace": "a"}, "spec": {"clusterIP": "10.96.0.1", "type": "ClusterIP"}},
            {"metadata.name": "s", "metadata.namespace": "a", "spec.clusterIP": "10.96.0.1", "spec.type": "ClusterIP"},
        ),
        (
            "ReplicaSet",
            {"metadata": {"name": "r", "namespace": "a"}, "status": {"replicas": 3}},
            {"metadata.name": "r", "metadata.namespace": "a", "status.replicas": "3"},
        ),
        (
            "ReplicaSet",
            {"metadata": {"name": "r", "namespace": "a"}},
            {"metadata.name": "r", "metadata.namespace": "a", "status.replicas": "0"},
        ),
        (
            "ReplicationController",
            {"metadata": {"name": "r", "namespace": "a"}, "status": {"replicas": 2}},
            {"metadata.name": "r", "metadata.namespace": "a", "status.replicas": "2"},
        ),
        (
            "Job",
            {"metadata": {"name": "j", "namespace": "a"}, "status": {"succeeded": 1}},
            {"metadata.name": "j", "metadata.namespace": "a", "status.successful": "1"},
        ),
        ("ConfigMap", {"metadata": {"name": "c", "namespace": "a"}}, {"metadata.name": "c", "metadata.namespace": "a"}),
        ("PersistentVolume", {"metadata": {"name": "pv"}}, {"metadata.name": "pv"}),
    ],
    ids=[
        "PodToSelectableFields",
        "PodToSelectableFields-defaults-hostNetwork-false",
        "NodeToSelectableFields",
        "NodeToSelectableFields-schedulable",
        "EventToSelectableFields-source-falls-back-to-reportingComponent",
        "NamespaceToSelectableFields-with-legacy-name",
        "SecretToSelectableFields",
        "ServiceToSelectableFields",
        "ReplicaSetToSelectableFields",
        "ReplicaSetToSelectableFields-zero",
        "ControllerToSelectableFields",
        "JobToSelectableFields",
        "DefaultNamespaceScopedAttr",
        "DefaultClusterScopedAttr",
    ],
)
def test_selectable_fields(kind: str, obj: dict[str, Any], want: dict[str, str]) -> None:
    assert fields.selectable_fields(kind, obj) == want


@pytest.mark.parametrize(
    ("status", "want"),
    [
        ({"podIP": "10.0.0.9"}, "10.0.0.9"),
        ({"podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}]}, "10.0.0.9"),
        ({"podIPs": [{"ip": "fd00::1"}, {"ip": "10.0.0.1"}]}, "fd00::1"),
        ({"podIPs": []}, ""),
    ],
    ids=[
        "Convert_v1_PodStatus-podIP-only",
        "Convert_v1_PodStatus-podIP-authoritative",
        "PodToSelectableFields-first-podIPs-entry",
        "PodToSelectableFields-no-ips",
    ],
)
def test_pod_ip_field(status: dict[str, Any], want: str) -> None:
    assert fields.selectable_fields("Pod", {"status": status})["status.podIP"] == want


def test_event_source_component_wins() -> None:
    event = {"source": {"component": "kubelet"}, "reportingComponent": "other"}
    assert fields.selectable_fields("Event", event)["source"] == "kubelet"


def test_namespaced_override_for_unknown_kind() -> None:
    obj = {"metadata": {"name": "w", "namespace": "a"}}
    assert fields.selectable_fields("Widget", obj, namespaced=False) == {"metadata.name": "w"}
    assert fields.selectable_fields("Widget", obj) == {"metadata.name": "w", "metadata.namespace": "a"}


@pytest.mark.parametrize(
    ("kind", "selector", "message"),
    [
        ("Pod", "spec.nodeName=n1,status.phase!=Failed", None),
        ("Pod", "status.podIPs=10.0.0.1", None),
        ("Pod", "spec.serviceAccountName=default,spec.hostNetwork=true", None),
        ("Pod", "foo=bar", "field label not supported: foo"),
        ("Pod", "spec.containers=x", "field label not supported: spec.containers"),
        ("Node", "spec.unschedulable=false", None),
        ("Node", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("Event", "involvedObject.name=web-0,reason=Scheduled,reportingComponent=x,source=y,type=Normal", None),
        ("Event", "message=x", "field label not supported: message"),
        ("Namespace", "status.phase=Active", None),
        ("Namespace", "name=prod", "field label not supported: name"),
        ("Secret", "type=Opaque", None),
        ("ReplicaSet", "status.replicas=0", None),
        ("Service", "spec.type=NodePort", None),
        ("Job", "status.successful=1", None),
        ("ConfigMap", "metadata.name=c,metadata.namespace=a", None),
        (
            "Deployment",
            "spec.replicas=1",
            '"spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        ("Pod", "x", "invalid selector: 'x'; can't understand 'x'"),
    ],
    ids=[
        "addConversionFuncs-Pod-nodeName-phase",
        "addConversionFuncs-Pod-podIPs-accepted",
        "addConversionFuncs-Pod-serviceAccountName-hostNetwork",
        "addConversionFuncs-Pod-unknown",
        "addConversionFuncs-Pod-spec-subfield",
        "addConversionFuncs-Node-unschedulable",
        "addConversionFuncs-Node-cluster-scoped-no-namespace",
        "AddFieldLabelConversionsForEvent",
        "AddFieldLabelConversionsForEvent-unknown",
        "AddFieldLabelConversionsForNamespace",
        "AddFieldLabelConversionsForNamespace-legacy-name-not-selectable",
        "AddFieldLabelConversionsForSecret",
        "apps-ReplicaSet-status-replicas",
        "AddFieldLabelConversionsForService",
        "batch-Job-status-successful",
        "DefaultMetaV1FieldSelectorConversion-metadata",
        "DefaultMetaV1FieldSelectorConversion-unknown",
        "syntax-error-before-conversion",
    ],
)
def test_validate_field_selector(kind: str, selector: str, message: str | None) -> None:
    if message is None:
        fields.validate_field_selector(kind, selector)
        fields.validate_field_selector(kind, fields.parse_selector(selector))
        return
    with pytest.raises(FieldSelectorError) as exc:
        fields.validate_field_selector(kind, selector)
    assert str(exc.value) == message


def test_spec_host_is_converted_to_node_name() -> None:
    """Upstream keeps ``spec.host`` for old v1 clients and rewrites it to ``spec.nodeName``."""
    selector = fields.parse_selector_for_kind("Pod", "spec.host=node-1")
    assert str(selector) == "spec.nodeName=node-1"
    assert selector.requires_exact_match("spec.nodeName") == "node-1"
    assert fields.convert_field_label("Pod", "spec.host", "n") == ("spec.nodeName", "n")


def test_selector_over_selectable_fields() -> None:
    """End to end: what the API server does for ``GET /api/v1/pods?fieldSelector=...``."""
    selector = fields.parse_selector_for_kind("Pod", "spec.nodeName=node-1,status.phase!=Failed")
    assert selector.matches(fields.selectable_fields("Pod", POD))
    unscheduled = fields.parse_selector_for_kind("Pod", "spec.nodeName=")
    assert not unscheduled.matches(fields.selectable_fields("Pod", POD))
    assert unscheduled.matches(fields.selectable_fields("Pod", {"metadata": {"name": "p"}}))
    by_ips = fields.parse_selector_for_kind("Pod", "status.podIPs=10.0.0.7")
    assert not by_ips.matches(fields.selectable_fields("Pod", POD))  # accepted, but not in the set: reads ""


def test_transform_errors_propagate() -> None:
    def reject(name: str, value: str) -> tuple[str, str]:
        raise FieldSelectorError(f"nope: {name}")

    with pytest.raises(FieldSelectorError, match=r"^nope: a$"):
        fields.parse_and_transform_selector("a=1", reject)
